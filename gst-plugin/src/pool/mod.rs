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

    /// A pool configured for `caps` (GstVideoMeta option set): itself and the buffer size it
    /// settled on, which for video is the 64-byte-stride frame size, not the caller's `size`.
    pub fn configured(
        caps: &gst::Caps,
        size: u32,
        min: u32,
        max: u32,
    ) -> Result<(Self, u32), glib::BoolError> {
        let pool = Self::new();
        let mut config = pool.config();
        config.set_params(Some(caps), size, min, max);
        config.add_option(gst_video::BUFFER_POOL_OPTION_VIDEO_META);
        pool.set_config(config)?;
        let size = pool.config().params().map_or(size, |p| p.1);
        Ok((pool, size))
    }
}

/// Answer an allocation query the way every edgefirst element does: announce GstVideoMeta (so
/// producers hand over padded and multi-planar frames instead of copying them tight), and offer an
/// edgefirst pool and allocator when nobody has offered a pool yet.
pub fn propose(query: &mut gst::query::Allocation) {
    if query.find_allocation_meta::<gst_video::VideoMeta>().is_none() {
        query.add_allocation_meta::<gst_video::VideoMeta>(None);
    }
    if query.allocation_pools().len() != 0 {
        return;
    }
    let (Some(caps), _) = query.get() else { return };
    let Ok((pool, size)) = BufferPool::configured(&caps.to_owned(), 0, 2, 0) else { return };
    query.add_allocation_pool(Some(&pool), size, 2, 0);
    query.add_allocation_param(crate::DmaBufAllocator::find().as_ref(), gst::AllocationParams::default());
}
