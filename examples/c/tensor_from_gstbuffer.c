/* A C consumer of edgefirsttensor's output, as a vendor camera stack would be: appsink → the
 * buffer's GstEdgeFirstTensorMeta → an ef_tensor over the buffer's own fd (no copy) → map →
 * checksum, compared with the checksum of the same bytes read through GStreamer's own map.
 *
 *   gcc tensor_from_gstbuffer.c $(pkg-config --cflags --libs gstreamer-1.0 gstreamer-app-1.0 \
 *       gstreamer-allocators-1.0 edgefirst-tensor) -I<gst-plugin/include>
 */
#include <edgefirst/tensor.h>
#include <gst/allocators/allocators.h>
#include <gst/app/gstappsink.h>
#include <gst/gst.h>
#include <stdio.h>

#include "gstedgefirst/tensor-meta.h"

/* The tensor a buffer carries, as an ef_tensor over the buffer's fd: 0 on success. */
static int tensor_of(GstBuffer *buf, ef_tensor *out) {
    GType api = g_type_from_name(GST_EDGEFIRST_TENSOR_META_API_NAME);
    GstEdgeFirstTensorMeta *m = api ? (GstEdgeFirstTensorMeta *)gst_buffer_get_meta(buf, api) : NULL;
    GstMemory *mem = gst_buffer_peek_memory(buf, 0);
    size_t shape[GST_EDGEFIRST_TENSOR_MAX_DIMS];
    /* A converted tensor starts at the memory's first byte; a passed-through frame at a plane
     * offset is imported with ef_tensor_from_planes instead. */
    if (!m || gst_buffer_n_memory(buf) != 1 || !gst_is_fd_memory(mem) || m->info.offset != 0 || mem->offset != 0)
        return -1;
    for (guint32 i = 0; i < m->info.rank; i++) shape[i] = (size_t)m->info.shape[i];
    /* The meta's dtype codes are the library's (both are the wire codes). */
    return ef_tensor_from_fd(gst_fd_memory_get_fd(mem), shape, m->info.rank, m->info.dtype, EF_ACCESS_READ, out);
}

int main(void) {
    GError *err = NULL;
    int frames = 0, equal = 0;
    gst_init(NULL, NULL);
    GstElement *p = gst_parse_launch("videotestsrc num-buffers=5 ! video/x-raw,format=NV12,width=320,height=240 "
                                     "! edgefirsttensor model-width=160 model-height=160 model-dtype=float32 "
                                     "! appsink name=sink",
                                     &err);
    if (!p) {
        fprintf(stderr, "example: %s\n", err->message);
        return 1;
    }
    GstElement *sink = gst_bin_get_by_name(GST_BIN(p), "sink");
    gst_element_set_state(p, GST_STATE_PLAYING);
    for (GstSample *s; (s = gst_app_sink_pull_sample(GST_APP_SINK(sink))); gst_sample_unref(s)) {
        GstBuffer *buf = gst_sample_get_buffer(s);
        ef_tensor t;
        ef_map map;
        GstMapInfo info;
        uint64_t ours = 0, theirs = 0, size = 0;
        int rc = tensor_of(buf, &t);
        if (rc != 0) {
            fprintf(stderr, "example: no tensor (%d: %s)\n", rc, rc > 0 ? ef_last_error() : "meta or fd missing");
            return 1;
        }
        if (ef_tensor_map(t, EF_ACCESS_READ, &map) != EF_OK) {
            fprintf(stderr, "example: map: %s\n", ef_last_error());
            return 1;
        }
        for (size_t i = 0; i < map.size; i++) ours = ours * 31 + ((const uint8_t *)map.data)[i];
        ef_tensor_size(t, &size);
        ef_tensor_unmap(&map);
        ef_tensor_free(t);
        gst_buffer_map(buf, &info, GST_MAP_READ);
        for (size_t i = 0; i < info.size && i < size; i++) theirs = theirs * 31 + info.data[i];
        gst_buffer_unmap(buf, &info);
        frames++;
        equal += ours == theirs && size == 160 * 160 * 3 * 4;
    }
    gst_element_set_state(p, GST_STATE_NULL);
    gst_object_unref(sink);
    gst_object_unref(p);
    printf("example: %d tensors read through ef_tensor from the buffers' fds, %d equal to GStreamer's map\n",
           frames, equal);
    return frames == 5 && equal == 5 ? 0 : 1;
}
