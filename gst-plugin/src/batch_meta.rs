//! `GstEdgeFirstBatchMeta`: what each slot of a batch tensor holds — which source (pad index, or
//! ROI id), its timestamp, whether the slot was filled for a missing frame, and where the picture
//! sits in the slot and in its own camera frame, so a decoder maps each box back to its camera's
//! pixels. A plain `#[repr(C)]` payload: C reads it through `include/gstedgefirst/batch-meta.h`.

use crate::meta::plain_meta;
use gst::glib;
use gst::glib::translate::{from_glib, IntoGlib};
use gst::prelude::*;
use std::sync::LazyLock;

pub const MAX_SLOTS: usize = 16;

/// The slot holds no frame of its source: filled with the fill colour.
pub const SLOT_FILLED: u32 = 1 << 0;
/// The slot repeats its source's previous frame (the source had none in time).
pub const SLOT_REPEATED: u32 = 1 << 1;

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BatchSlot {
    /// The sink pad's index (`sink_%u`), or the ROI's id in ROI mode.
    pub source: u32,
    /// `SLOT_*` bits; 0 for a frame converted this batch.
    pub flags: u32,
    /// The frame's PTS in ns; u64::MAX when none.
    pub pts: u64,
    /// Where the picture sits in the slot, in model pixels.
    pub content_x: u32,
    pub content_y: u32,
    pub content_width: u32,
    pub content_height: u32,
    /// The part of the source frame it shows, in source pixels.
    pub source_x: u32,
    pub source_y: u32,
    pub source_width: u32,
    pub source_height: u32,
    /// Model pixels per source pixel.
    pub scale_x: f64,
    pub scale_y: f64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BatchInfo {
    pub n_slots: u32,
    /// Bytes from one slot to the next in the tensor.
    pub slot_stride: u32,
    pub slots: [BatchSlot; MAX_SLOTS],
}

impl BatchInfo {
    pub fn slots(&self) -> &[BatchSlot] {
        &self.slots[..(self.n_slots as usize).min(MAX_SLOTS)]
    }
}

plain_meta!(BatchMeta, BatchInfo, "GstEdgeFirstBatchMetaAPI", "GstEdgeFirstBatchMeta", register);
