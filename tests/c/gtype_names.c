/* The plugin's allocator and pool reached from C by name only, as a C app that never links the
 * plugin would: gst_allocator_find, g_type_from_name, g_object_new, g_object_get. */
#include <gst/gst.h>
#include <gst/video/video.h>
#include <gst/allocators/allocators.h>
#include <stdio.h>
#include <string.h>

#define CHECK(cond, ...) do { if (!(cond)) { fprintf(stderr, "c-api: " __VA_ARGS__); fputc('\n', stderr); return 1; } } while (0)

int main(void) {
  gst_init(NULL, NULL);
  GstPlugin *plugin = gst_plugin_load_by_name("edgefirst");
  CHECK(plugin != NULL, "plugin edgefirst not found on GST_PLUGIN_PATH");
  GstAllocator *alloc = gst_allocator_find("edgefirstdmabuf");
  CHECK(alloc != NULL, "allocator edgefirstdmabuf not registered");
  CHECK(strcmp(G_OBJECT_TYPE_NAME(alloc), "GstEdgeFirstDmaBufAllocator") == 0, "allocator type %s", G_OBJECT_TYPE_NAME(alloc));
  GstMemory *mem = gst_allocator_alloc(alloc, 4096, NULL);
  CHECK(mem != NULL && gst_is_dmabuf_memory(mem), "allocator gave no dmabuf memory");
  gst_memory_unref(mem);

  GType pool_type = g_type_from_name("GstEdgeFirstBufferPool");
  CHECK(pool_type != 0, "GstEdgeFirstBufferPool is not a registered GType");
  GstBufferPool *pool = g_object_new(pool_type, NULL);
  GstCaps *caps = gst_caps_from_string("video/x-raw,format=NV12,width=322,height=240,framerate=30/1");
  GstStructure *config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_set_params(config, caps, 0, 1, 2);
  CHECK(gst_buffer_pool_set_config(pool, config), "set_config refused");
  CHECK(gst_buffer_pool_set_active(pool, TRUE), "set_active refused");
  GstBuffer *buf = NULL;
  CHECK(gst_buffer_pool_acquire_buffer(pool, &buf, NULL) == GST_FLOW_OK, "acquire failed");
  GstVideoMeta *vm = gst_buffer_get_video_meta(buf);
  CHECK(vm != NULL, "no GstVideoMeta");
  CHECK(vm->stride[0] % 64 == 0 && vm->stride[1] % 64 == 0, "strides %d %d", vm->stride[0], vm->stride[1]);
  guint64 allocated = 0, max_bytes = 1;
  g_object_set(pool, "max-bytes", (guint64) 0, NULL);
  g_object_get(pool, "allocated-buffers", &allocated, "max-bytes", &max_bytes, NULL);
  CHECK(allocated >= 1 && max_bytes == 0, "statistics not readable: %" G_GUINT64_FORMAT, allocated);
  printf("c-api: edgefirstdmabuf + GstEdgeFirstBufferPool by name: strides [%d, %d], allocated-buffers %" G_GUINT64_FORMAT "\n",
         vm->stride[0], vm->stride[1], allocated);
  gst_buffer_unref(buf);
  gst_buffer_pool_set_active(pool, FALSE);
  gst_object_unref(pool);
  gst_caps_unref(caps);
  gst_object_unref(alloc);
  return 0;
}
