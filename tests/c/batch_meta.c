/* Reads GstEdgeFirstBatchMeta from C through the public header and the API type name only. */
#include <gst/app/gstappsink.h>
#include <gst/gst.h>
#include <stdio.h>

#include "gstedgefirst/batch-meta.h"

int main(void) {
    GError *err = NULL;
    gst_init(NULL, NULL);
    GstElement *p = gst_parse_launch(
        "edgefirsttensorbatch name=b model-width=32 model-height=32 batch-size=3 ! appsink name=sink "
        "videotestsrc num-buffers=1 ! video/x-raw,format=NV12,width=64,height=48 ! b.sink_0 "
        "videotestsrc num-buffers=1 ! video/x-raw,format=RGB,width=40,height=40 ! b.sink_1",
        &err);
    if (!p) {
        fprintf(stderr, "c-batch-meta: %s\n", err->message);
        return 1;
    }
    GstElement *sink = gst_bin_get_by_name(GST_BIN(p), "sink");
    gst_element_set_state(p, GST_STATE_PLAYING);
    GstSample *s = gst_app_sink_pull_sample(GST_APP_SINK(sink));
    GType api = g_type_from_name(GST_EDGEFIRST_BATCH_META_API_NAME);
    GstEdgeFirstBatchMeta *m = s && api ? (GstEdgeFirstBatchMeta *)gst_buffer_get_meta(gst_sample_get_buffer(s), api) : NULL;
    if (!m) {
        fprintf(stderr, "c-batch-meta: no GstEdgeFirstBatchMeta\n");
        return 1;
    }
    const GstEdgeFirstBatchInfo *i = &m->info;
    int ok = i->n_slots == 3 && i->slot_stride == 32 * 32 * 3 && i->slots[0].source == 0 && i->slots[0].flags == 0 &&
             i->slots[0].content_width == 32 && i->slots[0].content_height == 24 && i->slots[0].source_width == 64 &&
             i->slots[1].source == 1 && i->slots[1].flags == 0 && i->slots[1].content_height == 32 &&
             i->slots[2].flags == GST_EDGEFIRST_SLOT_FILLED;
    printf("c-batch-meta: %u slots of %u bytes; slot 0 content %ux%u of a %ux%u frame; slot 2 flags %u: %s\n",
           i->n_slots, i->slot_stride, i->slots[0].content_width, i->slots[0].content_height,
           i->slots[0].source_width, i->slots[0].source_height, i->slots[2].flags, ok ? "ok" : "WRONG");
    gst_sample_unref(s);
    gst_element_set_state(p, GST_STATE_NULL);
    gst_object_unref(sink);
    gst_object_unref(p);
    return ok ? 0 : 1;
}
