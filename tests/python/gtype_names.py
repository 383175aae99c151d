"""The plugin's allocator and pool reached from Python (PyGObject) by GType name."""
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstVideo", "1.0")
from gi.repository import GObject, Gst, GstVideo  # noqa: E402

Gst.init(None)
assert Gst.Plugin.load_by_name("edgefirst"), "plugin edgefirst not found"
alloc = Gst.Allocator.find("edgefirstdmabuf")
assert alloc is not None and GObject.type_name(alloc.__gtype__) == "GstEdgeFirstDmaBufAllocator", alloc
pool = GObject.new(GObject.type_from_name("GstEdgeFirstBufferPool"))
config = pool.get_config()
Gst.BufferPool.config_set_params(config, Gst.Caps.from_string("video/x-raw,format=RGBA,width=321,height=10,framerate=30/1"), 0, 1, 2)
assert pool.set_config(config)
assert pool.set_active(True)
ok, buf = pool.acquire_buffer(None)
assert ok == Gst.FlowReturn.OK
meta = GstVideo.buffer_get_video_meta(buf)
assert meta is not None and meta.stride[0] == 1344, meta.stride[0]
assert pool.get_property("allocated-buffers") == 1
pool.set_property("max-bytes", 10_000_000)
assert pool.get_property("max-bytes") == 10_000_000
print(f"python: GstEdgeFirstBufferPool by name: RGBA 321 stride {meta.stride[0]}, allocated-buffers {pool.get_property('allocated-buffers')}")
pool.set_active(False)
sys.exit(0)
