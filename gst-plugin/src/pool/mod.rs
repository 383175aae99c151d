//! `GstEdgeFirstBufferPool`: video buffers whose every plane stride is a multiple of 64 bytes,
//! each with a GstVideoMeta giving the real offsets and strides, allocated from the edgefirst
//! DMA-BUF allocator, under an optional byte budget, with released allocations reused by best
//! fit when the pool is reconfigured to a smaller geometry.

mod imp;

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;

glib::wrapper! {
    pub struct BufferPool(ObjectSubclass<imp::BufferPool>) @extends gst::BufferPool, gst::Object;
}

/// What the pool has done, as apps read it (also the pool's read-only properties).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Buffers ever allocated (reuses of a released allocation included).
    pub allocated_buffers: u64,
    /// Bytes of fresh allocations ever made.
    pub allocated_bytes: u64,
    /// Buffers that exist now (in use or waiting in the pool).
    pub live_buffers: u64,
    /// Bytes held now: live buffers plus released allocations kept for reuse.
    pub live_bytes: u64,
    pub peak_bytes: u64,
    /// Buffers served from a released allocation instead of a fresh one.
    pub reuses: u64,
}

impl Default for BufferPool {
    fn default() -> Self {
        Self::new()
    }
}

impl BufferPool {
    pub fn new() -> Self {
        glib::Object::new()
    }

    /// 0 means no budget. Past the budget, acquiring a buffer that needs a fresh allocation fails.
    pub fn set_max_bytes(&self, bytes: u64) {
        self.set_property("max-bytes", bytes);
    }

    pub fn max_bytes(&self) -> u64 {
        self.property("max-bytes")
    }

    pub fn stats(&self) -> PoolStats {
        self.imp().stats()
    }
}
