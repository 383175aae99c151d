/* Reads GstEdgeFirstTensorMeta from C through the public header and the API type name only. */
#include <gst/gst.h>
#include <gst/app/gstappsink.h>
#include <stdio.h>
#include "gstedgefirst/tensor-meta.h"

int main(void) {
  gst_init(NULL, NULL);
  GError *err = NULL;
  GstElement *p = gst_parse_launch(
      "videotestsrc num-buffers=1 ! video/x-raw,format=RGB,width=64,height=48 ! edgefirsttensor "
      "! appsink name=sink", &err);
  if (!p) { fprintf(stderr, "c-meta: %s\n", err->message); return 1; }
  GstElement *sink = gst_bin_get_by_name(GST_BIN(p), "sink");
  gst_element_set_state(p, GST_STATE_PLAYING);
  GstSample *s = gst_app_sink_pull_sample(GST_APP_SINK(sink));
  if (!s) { fprintf(stderr, "c-meta: no sample\n"); return 1; }
  GType api = g_type_from_name(GST_EDGEFIRST_TENSOR_META_API_NAME);
  GstEdgeFirstTensorMeta *m = (GstEdgeFirstTensorMeta *) gst_buffer_get_meta(gst_sample_get_buffer(s), api);
  if (!api || !m) { fprintf(stderr, "c-meta: no GstEdgeFirstTensorMeta\n"); return 1; }
  const GstEdgeFirstTensorInfo *i = &m->info;
  int ok = i->dtype == GST_EDGEFIRST_DTYPE_UINT8 && i->rank == 4 && i->shape[0] == 1 && i->shape[1] == 48 &&
           i->shape[2] == 64 && i->shape[3] == 3 && i->strides[1] == 192 && i->strides[2] == 3 &&
           i->content_width == 64 && i->content_height == 48 && i->content_norm[2] == 1.0f &&
           i->scale_x == 1.0 && i->source_width == 64;
  printf("c-meta: shape [%lu, %lu, %lu, %lu] strides [%ld, %ld, %ld, %ld] content %ux%u: %s\n",
         (unsigned long) i->shape[0], (unsigned long) i->shape[1], (unsigned long) i->shape[2],
         (unsigned long) i->shape[3], (long) i->strides[0], (long) i->strides[1], (long) i->strides[2],
         (long) i->strides[3], i->content_width, i->content_height, ok ? "ok" : "WRONG");
  gst_sample_unref(s);
  gst_element_set_state(p, GST_STATE_NULL);
  gst_object_unref(sink);
  gst_object_unref(p);
  return ok ? 0 : 1;
}
