use super::PoolStats;
use crate::allocator::{CpuAccessMode, DmaBufAllocator};
use crate::video::{frame_layout, no_alignment, FrameLayout};
use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_video::prelude::*;
use std::sync::{LazyLock, Mutex};

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "edgefirstpool",
        gst::DebugColorFlags::empty(),
        Some("EdgeFirst 64-byte-stride buffer pool"),
    )
});

struct Config {
    /// None for non-video caps (other/tensors): plain buffers of the config's size.
    info: Option<gst_video::VideoInfo>,
    layout: FrameLayout,
    allocator: gst::Allocator,
    params: gst::AllocationParams,
}

#[derive(Default)]
struct Inner {
    config: Option<Config>,
    stats: PoolStats,
    /// Allocations of freed buffers, kept for best-fit reuse; counted in live bytes.
    spares: Vec<gst::Memory>,
    max_bytes: u64,
}

impl Inner {
    fn drop_spares(&mut self, keep: impl Fn(&gst::Memory) -> bool) {
        let (kept, dropped): (Vec<_>, Vec<_>) = self.spares.drain(..).partition(|m| keep(m));
        self.spares = kept;
        for m in dropped {
            self.stats.live_bytes -= m.maxsize() as u64;
        }
    }
}

#[derive(Default)]
pub struct BufferPool {
    inner: Mutex<Inner>,
}

impl BufferPool {
    pub(super) fn stats(&self) -> PoolStats {
        self.inner.lock().unwrap().stats
    }

    /// The smallest spare that holds `size` bytes, made to span exactly `size` again.
    fn best_fit(inner: &mut Inner, size: usize) -> Option<gst::Memory> {
        loop {
            let i = inner
                .spares
                .iter()
                .enumerate()
                .filter(|(_, m)| m.maxsize() >= size)
                .min_by_key(|(_, m)| m.maxsize())
                .map(|(i, _)| i)?;
            let mut m = inner.spares.swap_remove(i);
            // Spares are kept only when unshared, so this holds; should it not, the memory is
            // given up rather than written under its other holder.
            if unshared(&m) {
                if let Some(r) = m.get_mut() {
                    r.resize_maxsize(0..size);
                    return Some(m);
                }
            }
            inner.stats.live_bytes -= m.maxsize() as u64;
        }
    }

    /// Why `min` buffers of `size` bytes cannot be made, if they cannot.
    fn impossible(min: u32, size: usize, max_bytes: u64) -> Option<String> {
        let need = (min as u64).checked_mul(size as u64);
        if max_bytes != 0 && need.is_none_or(|n| n > max_bytes) {
            return Some(format!(
                "min-buffers {min} x {size} bytes = {} is beyond max-bytes {max_bytes}",
                need.map_or("more than u64".into(), |n| n.to_string())
            ));
        }
        // Each buffer holds one fd; a pool that cannot open them all would fail part-way.
        let fds = fd_headroom();
        if fds.is_some_and(|free| min as u64 > free) {
            return Some(format!(
                "min-buffers {min} needs {min} fds but the process may open only {} more (RLIMIT_NOFILE)",
                fds.unwrap_or(0)
            ));
        }
        None
    }
}

/// Nothing but the pool holds this memory: no other buffer, no app's `gst_memory_ref`, no
/// sub-memory (which holds its parent). A lock count alone would miss the plain reference.
fn unshared(m: &gst::Memory) -> bool {
    ref_count(m) == 1 && m.is_writable()
}

fn ref_count(m: &gst::Memory) -> i32 {
    unsafe { (*(m.as_ptr() as *const gst::ffi::GstMiniObject)).refcount }
}

/// Fds this process may still open: the soft RLIMIT_NOFILE less those open now.
fn fd_headroom() -> Option<u64> {
    let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 || r.rlim_cur == libc::RLIM_INFINITY {
        return None;
    }
    let open = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count()) as u64;
    Some(r.rlim_cur.saturating_sub(open))
}

#[glib::object_subclass]
impl ObjectSubclass for BufferPool {
    const NAME: &'static str = "GstEdgeFirstBufferPool";
    type Type = super::BufferPool;
    type ParentType = gst::BufferPool;
}

impl ObjectImpl for BufferPool {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let stat = |name: &str, blurb: &str| {
                glib::ParamSpecUInt64::builder(name).nick(name).blurb(blurb).read_only().build()
            };
            vec![
                glib::ParamSpecUInt64::builder("max-bytes")
                    .nick("Byte budget")
                    .blurb("Bytes the pool may hold (0 = no budget); past it, acquire fails instead of allocating")
                    .build(),
                stat("allocated-buffers", "Buffers ever allocated, reuses included"),
                stat("allocated-bytes", "Bytes of fresh allocations ever made"),
                stat("live-buffers", "Buffers that exist now"),
                stat("live-bytes", "Bytes held now, released allocations kept for reuse included"),
                stat("peak-bytes", "Most bytes held at once"),
                stat("reuses", "Buffers served from a released allocation by best fit"),
            ]
        });
        PROPS.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        if pspec.name() == "max-bytes" {
            self.inner.lock().unwrap().max_bytes = value.get().expect("type checked upstream");
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        let inner = self.inner.lock().unwrap();
        let s = inner.stats;
        match pspec.name() {
            "max-bytes" => inner.max_bytes,
            "allocated-buffers" => s.allocated_buffers,
            "allocated-bytes" => s.allocated_bytes,
            "live-buffers" => s.live_buffers,
            "live-bytes" => s.live_bytes,
            "peak-bytes" => s.peak_bytes,
            "reuses" => s.reuses,
            other => unreachable!("no property {other}"),
        }
        .to_value()
    }
}

impl GstObjectImpl for BufferPool {}

impl BufferPoolImpl for BufferPool {
    fn options() -> &'static [&'static str] {
        // The option strings GStreamer defines (GST_BUFFER_POOL_OPTION_VIDEO_META / _ALIGNMENT).
        &["GstBufferPoolOptionVideoMeta", "GstBufferPoolOptionVideoAlignment"]
    }

    fn set_config(&self, config: &mut gst::BufferPoolConfigRef) -> bool {
        let Some((Some(caps), size, min, max)) = config.params() else {
            gst::error!(CAT, imp = self, "config has no caps");
            return false;
        };
        let video = caps.structure(0).is_some_and(|s| s.name() == "video/x-raw");
        let (info, layout) = if video {
            let Ok(info) = gst_video::VideoInfo::from_caps(&caps) else {
                gst::error!(CAT, imp = self, "bad video caps: {caps}");
                return false;
            };
            let align = if config.has_option(gst_video::BUFFER_POOL_OPTION_VIDEO_ALIGNMENT) {
                config.video_alignment().unwrap_or_else(no_alignment)
            } else {
                no_alignment()
            };
            match frame_layout(&info, &align) {
                Ok(l) => (Some(info), l),
                Err(e) => {
                    gst::error!(CAT, imp = self, "{e}");
                    return false;
                }
            }
        } else if size > 0 {
            // Tensors and other non-video media: the caller states the size.
            (None, FrameLayout { offsets: vec![0], strides: vec![0], size: size as usize })
        } else {
            gst::error!(CAT, imp = self, "non-video caps {caps} need a buffer size in the config");
            return false;
        };
        // Honour a named allocator only when it is one of ours; anything else could not give the
        // memory this pool promises (DMA-BUF or memfd with a real fd).
        let (allocator, params) = match config.allocator() {
            Some((Some(a), params)) if a.is::<DmaBufAllocator>() => (a, params),
            Some((_, params)) => (own_allocator(), params),
            None => (own_allocator(), gst::AllocationParams::default()),
        };
        let Ok(size32) = u32::try_from(layout.size) else {
            gst::error!(
                CAT,
                imp = self,
                "{caps} needs {} bytes a buffer; a GStreamer pool holds at most {} bytes a buffer",
                layout.size,
                u32::MAX
            );
            return false;
        };
        if let Some(why) = Self::impossible(min, layout.size, self.inner.lock().unwrap().max_bytes) {
            gst::error!(CAT, imp = self, "{caps}: {why}");
            return false;
        }
        config.set_params(Some(&caps), size32, min, max);
        config.set_allocator(Some(&allocator), Some(&params));
        gst::debug!(
            CAT,
            imp = self,
            "{caps}: strides {:?} offsets {:?} size {}",
            layout.strides,
            layout.offsets,
            layout.size
        );
        {
            let mut inner = self.inner.lock().unwrap();
            // Spares too small for the new frames would only hold budget.
            let size = layout.size;
            inner.drop_spares(|m| m.maxsize() >= size);
            inner.config = Some(Config { info, layout, allocator, params });
        }
        self.parent_set_config(config)
    }

    fn alloc_buffer(
        &self,
        _params: Option<&gst::BufferPoolAcquireParams>,
    ) -> Result<gst::Buffer, gst::FlowError> {
        let mut inner = self.inner.lock().unwrap();
        let Some(cfg) = inner.config.as_ref() else {
            gst::error!(CAT, imp = self, "alloc before set_config");
            return Err(gst::FlowError::NotNegotiated);
        };
        let (size, allocator, params) = (cfg.layout.size, cfg.allocator.clone(), cfg.params);
        let memory = match Self::best_fit(&mut inner, size) {
            Some(m) => {
                inner.stats.reuses += 1;
                m
            }
            None => {
                if inner.max_bytes != 0 && inner.stats.live_bytes + size as u64 > inner.max_bytes {
                    // Released allocations too small to reuse are the first thing to give back.
                    inner.drop_spares(|_| false);
                }
                let (live, max) = (inner.stats.live_bytes, inner.max_bytes);
                if max != 0 && live + size as u64 > max {
                    gst::error!(
                        CAT,
                        imp = self,
                        "byte budget exhausted: {live} bytes held + {size} for a new buffer > max-bytes {max}"
                    );
                    return Err(gst::FlowError::Error);
                }
                let m = allocator.alloc(size, Some(&params)).map_err(|e| {
                    gst::error!(CAT, imp = self, "allocator refused {size} bytes: {e}");
                    gst::FlowError::Error
                })?;
                inner.stats.allocated_bytes += m.maxsize() as u64;
                inner.stats.live_bytes += m.maxsize() as u64;
                m
            }
        };
        let cfg = inner.config.as_ref().expect("checked above");
        let mut buffer = gst::Buffer::new();
        {
            let b = buffer.get_mut().expect("new buffer");
            b.append_memory(memory);
            if let Some(info) = &cfg.info {
                gst_video::VideoMeta::add_full(
                    b,
                    gst_video::VideoFrameFlags::empty(),
                    info.format(),
                    info.width(),
                    info.height(),
                    &cfg.layout.offsets,
                    &cfg.layout.strides,
                )
                .map_err(|e| {
                    gst::error!(CAT, imp = self, "cannot add video meta: {e}");
                    gst::FlowError::Error
                })?;
            }
        }
        let s = &mut inner.stats;
        s.allocated_buffers += 1;
        s.live_buffers += 1;
        s.peak_bytes = s.peak_bytes.max(s.live_bytes);
        Ok(buffer)
    }

    fn free_buffer(&self, buffer: gst::Buffer) {
        let memories: Vec<gst::Memory> = buffer.iter_memories_owned().collect();
        drop(buffer);
        let mut inner = self.inner.lock().unwrap();
        inner.stats.live_buffers -= 1;
        for m in memories {
            // GStreamer frees (rather than requeues) a buffer whose memory is still shared: a
            // tee branch's copy, an app's reference. That memory is not ours to hand out again.
            if unshared(&m) {
                inner.spares.push(m);
            } else {
                inner.stats.live_bytes -= m.maxsize() as u64;
            }
        }
    }

    fn release_buffer(&self, mut buffer: gst::Buffer) {
        // GStreamer requeues a buffer whose memories are locked by it alone, but a plain
        // gst_memory_ref (an app keeping a frame's memory) takes no lock: such a buffer is
        // tagged, so the parent frees it instead and free_buffer drops the held memory.
        if !buffer.iter_memories_owned().all(|m| ref_count(&m) == 2) {
            if let Some(b) = buffer.get_mut() {
                b.set_flags(gst::BufferFlags::TAG_MEMORY);
            }
        }
        self.parent_release_buffer(buffer)
    }

    fn start(&self) -> bool {
        if self.parent_start() {
            return true;
        }
        // GStreamer 1.22 leaves the buffers a failed start made in its queue, where nothing
        // frees them (their fds outlive the pool): stop frees the queue, then the spares go.
        gst::error!(CAT, imp = self, "activation failed; freeing the buffers it made");
        self.parent_stop();
        self.inner.lock().unwrap().drop_spares(|_| false);
        false
    }
}

fn own_allocator() -> gst::Allocator {
    DmaBufAllocator::find()
        .filter(|a| a.is::<DmaBufAllocator>())
        .unwrap_or_else(|| DmaBufAllocator::new(CpuAccessMode::ReadWrite).upcast())
}
