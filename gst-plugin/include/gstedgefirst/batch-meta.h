/* GstEdgeFirstBatchMeta: per-slot description of a batch tensor from edgefirsttensorbatch.
 *
 *   GType api = g_type_from_name (GST_EDGEFIRST_BATCH_META_API_NAME);
 *   GstEdgeFirstBatchMeta *m = (GstEdgeFirstBatchMeta *) gst_buffer_get_meta (buf, api);
 *
 * The layout mirrors gstedgefirst::batch_meta::BatchInfo (#[repr(C)]); fields are only appended.
 */
#ifndef GST_EDGEFIRST_BATCH_META_H
#define GST_EDGEFIRST_BATCH_META_H

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_EDGEFIRST_BATCH_META_API_NAME "GstEdgeFirstBatchMetaAPI"
#define GST_EDGEFIRST_BATCH_MAX_SLOTS 16
#define GST_EDGEFIRST_SLOT_FILLED (1u << 0)   /* no frame in time: the fill colour */
#define GST_EDGEFIRST_SLOT_REPEATED (1u << 1) /* no frame in time: the source's previous one */

typedef struct {
  guint32 source;   /* sink pad index (sink_%u), or the ROI id */
  guint32 flags;    /* GST_EDGEFIRST_SLOT_* */
  guint64 pts;      /* ns; G_MAXUINT64 when none */
  guint32 content_x, content_y, content_width, content_height; /* picture in the slot, model pixels */
  guint32 source_x, source_y, source_width, source_height;     /* part of the source frame shown */
  gdouble scale_x, scale_y;                                     /* model pixels per source pixel */
} GstEdgeFirstBatchSlot;

typedef struct {
  guint32 n_slots;
  guint32 slot_stride; /* bytes from one slot to the next */
  GstEdgeFirstBatchSlot slots[GST_EDGEFIRST_BATCH_MAX_SLOTS];
} GstEdgeFirstBatchInfo;

typedef struct {
  GstMeta meta;
  GstEdgeFirstBatchInfo info;
} GstEdgeFirstBatchMeta;

G_END_DECLS

#endif
