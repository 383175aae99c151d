"""A plain PyGObject app on the edgefirst pool: it acquires a buffer, writes its frame through the
fd, pushes it into appsrc ! edgefirsttensor ! appsink while still holding it, keeps every sample,
and only then lets its buffer go. Every kept sample must still hold its own frame after the later
frames were produced: the pool must never hand out a memory a sample still reads."""
import mmap
import sys
import time

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstAllocators", "1.0")
from gi.repository import GObject, Gst, GstAllocators  # noqa: E402

Gst.init(None)
assert Gst.Plugin.load_by_name("edgefirst"), "plugin edgefirst not found"
W, H, FRAMES = 64, 48, 8
caps = Gst.Caps.from_string(f"video/x-raw,format=GRAY8,width={W},height={H},framerate=30/1")
pipeline = Gst.parse_launch(
    f"appsrc name=src format=time caps=\"{caps.to_string()}\" "
    "! edgefirsttensor model-colorspace=gray ! appsink name=sink sync=false"
)
src, sink = pipeline.get_by_name("src"), pipeline.get_by_name("sink")
pool = GObject.new(GObject.type_from_name("GstEdgeFirstBufferPool"))
config = pool.get_config()
Gst.BufferPool.config_set_params(config, caps, 0, 0, 0)
assert pool.set_config(config)
assert pool.set_active(True)
pipeline.set_state(Gst.State.PLAYING)

kept = []
for i in range(FRAMES):
    letter = ord("A") + i
    ok, buf = pool.acquire_buffer(None)
    assert ok == Gst.FlowReturn.OK, ok
    mem = buf.peek_memory(0)
    fd = GstAllocators.dmabuf_memory_get_fd(mem)
    assert fd >= 0, "pool memory has an fd"
    with mmap.mmap(fd, mem.size, mmap.MAP_SHARED, mmap.PROT_WRITE, offset=0) as m:
        m[:] = bytes([letter]) * mem.size
    assert src.emit("push-buffer", buf) == Gst.FlowReturn.OK
    kept.append((letter, sink.emit("pull-sample")))
    del buf, mem  # the app's own reference goes only now
    for _ in range(100):
        if pool.get_property("live-buffers") == 0:
            break
        time.sleep(0.002)
    for want, sample in kept:
        b = sample.get_buffer()
        ok, info = b.map(Gst.MapFlags.READ)
        assert ok
        got = set(info.data)
        b.unmap(info)
        assert got == {want}, f"kept frame {chr(want)} now reads {sorted(chr(x) for x in got)}"

pipeline.set_state(Gst.State.NULL)
pool.set_active(False)
print(f"python: {FRAMES} kept samples unchanged; pool reuses {pool.get_property('reuses')}, allocated {pool.get_property('allocated-buffers')}")
sys.exit(0)
