/* GstEdgeFirstTensorMeta: the per-buffer tensor description edgefirsttensor attaches.
 *
 * Find it by API type name (no link against the plugin is needed):
 *
 *   GType api = g_type_from_name (GST_EDGEFIRST_TENSOR_META_API_NAME);
 *   GstEdgeFirstTensorMeta *m = (GstEdgeFirstTensorMeta *) gst_buffer_get_meta (buf, api);
 *
 * The layout mirrors gstedgefirst::meta::TensorInfo (#[repr(C)]); fields are only ever appended.
 */
#ifndef GST_EDGEFIRST_TENSOR_META_H
#define GST_EDGEFIRST_TENSOR_META_H

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_EDGEFIRST_TENSOR_META_API_NAME "GstEdgeFirstTensorMetaAPI"
#define GST_EDGEFIRST_TENSOR_MAX_DIMS 8
#define GST_EDGEFIRST_TENSOR_MAX_QUANT_CHANNELS 4

typedef enum {
  GST_EDGEFIRST_DTYPE_UINT8 = 0, GST_EDGEFIRST_DTYPE_INT8, GST_EDGEFIRST_DTYPE_UINT16,
  GST_EDGEFIRST_DTYPE_INT16, GST_EDGEFIRST_DTYPE_UINT32, GST_EDGEFIRST_DTYPE_INT32,
  GST_EDGEFIRST_DTYPE_UINT64, GST_EDGEFIRST_DTYPE_INT64, GST_EDGEFIRST_DTYPE_FLOAT16,
  GST_EDGEFIRST_DTYPE_FLOAT32, GST_EDGEFIRST_DTYPE_FLOAT64
} GstEdgeFirstDType;

typedef struct {
  guint32 dtype;                 /* GstEdgeFirstDType */
  guint32 rank;
  guint64 shape[GST_EDGEFIRST_TENSOR_MAX_DIMS];   /* outermost first: [1, H, W, C] for HWC */
  gint64 strides[GST_EDGEFIRST_TENSOR_MAX_DIMS];  /* signed bytes */
  guint64 offset;                /* byte offset of the first element in the buffer */
  guint32 quant_channels;        /* 0 none, 1 per tensor, n per channel (last axis) */
  gint32 quant_zero_points[GST_EDGEFIRST_TENSOR_MAX_QUANT_CHANNELS];
  gfloat quant_scales[GST_EDGEFIRST_TENSOR_MAX_QUANT_CHANNELS];
  guint32 content_x, content_y, content_width, content_height;  /* picture in the tensor, pixels */
  gfloat content_norm[4];        /* the same box normalized: x0, y0, x1, y1 */
  gdouble scale_x, scale_y;      /* tensor pixels per source pixel */
  guint32 source_x, source_y, source_width, source_height;      /* region of the camera frame used */
  guint64 buffer_id;             /* stable id of the physical input buffer (0: not imported) */
} GstEdgeFirstTensorInfo;

typedef struct {
  GstMeta meta;
  GstEdgeFirstTensorInfo info;
} GstEdgeFirstTensorMeta;

G_END_DECLS

#endif
