//! The allocator and the 64-byte-stride pool on this host (memfd memory); the kernel lane runs this
//! same binary, where the memory is a real DMA-BUF.

mod common;

use common::*;
use edgefirst_tensor::import::{fs_magic, DMA_BUF_MAGIC, TMPFS_MAGIC};
use edgefirst_tensor::TensorMemory;
use gst::prelude::*;
use gst_video::prelude::*;
use gst_video::VideoFormat;
use gstedgefirst::video::pixel_format;
use gstedgefirst::{BufferPool, DmaBufAllocator};
use std::os::fd::BorrowedFd;

fn dma_expected() -> bool {
    TensorMemory::DmaBuf.is_available()
}

fn memory_fd(mem: &gst::MemoryRef) -> BorrowedFd<'_> {
    let dmabuf = mem.downcast_memory_ref::<gst_allocators::DmaBufMemory>().expect("a dmabuf memory");
    unsafe { BorrowedFd::borrow_raw(dmabuf.fd()) }
}

#[test]
fn allocator_is_registered_and_serves_fd_memory() {
    init();
    let alloc = gst::Allocator::find(Some("edgefirstdmabuf")).expect("registered by name");
    assert!(alloc.is::<DmaBufAllocator>());
    assert_eq!(alloc.type_().name(), "GstEdgeFirstDmaBufAllocator");
    let params = gst::AllocationParams::new(gst::MemoryFlags::empty(), 0, 16, 32);
    let mem = alloc.alloc(10_000, Some(&params)).unwrap();
    assert_eq!(mem.size(), 10_000);
    assert!(mem.maxsize() >= 10_048, "prefix and padding are allocated too");
    assert!(mem.is_memory_type::<gst_allocators::DmaBufMemory>());
    let magic = fs_magic(memory_fd(&mem)).unwrap();
    if dma_expected() {
        assert_eq!(magic, DMA_BUF_MAGIC);
        assert_eq!(DmaBufAllocator::heap_of(&mem), Some("system"));
        println!("edgefirstdmabuf: memory fd fstatfs = {magic:#010x} (DMA_BUF_MAGIC), heap system");
    } else {
        assert_eq!(magic, TMPFS_MAGIC);
        assert_eq!(DmaBufAllocator::heap_of(&mem), Some("memfd"));
    }
    let mut mem = mem;
    {
        let mut w = mem.get_mut().unwrap().map_writable().unwrap();
        w[9_999] = 0xab;
    }
    assert_eq!(mem.map_readable().unwrap()[9_999], 0xab);
    // Memory from other allocators has no heap.
    let sys = gst::Allocator::find(None::<&str>).unwrap().alloc(16, None).unwrap();
    assert_eq!(DmaBufAllocator::heap_of(&sys), None);
}

#[test]
fn write_declared_allocator_falls_back_like_the_tensor_crate() {
    init();
    let a = DmaBufAllocator::new(gstedgefirst::allocator::CpuAccessMode::Write);
    let mem = a.upcast_ref::<gst::Allocator>().alloc(4096, None).unwrap();
    let heap = DmaBufAllocator::heap_of(&mem).unwrap();
    assert_eq!(heap, if dma_expected() { "system" } else { "memfd" }, "no CMA heap here");
}

#[test]
fn every_plane_stride_is_64_aligned_with_a_correct_video_meta() {
    init();
    let extra =
        [VideoFormat::Gray16Le, VideoFormat::Y444, VideoFormat::Nv24, VideoFormat::Rgb16, VideoFormat::Ayuv];
    let mut checked = 0;
    for format in gstedgefirst::video::FORMATS.iter().chain(&extra).copied() {
        for (w, h) in [(321, 241), (322, 240), (640, 480), (1920, 1080)] {
            let pool = active_pool(&video_caps(format, w, h), 1, 2);
            let buf = pool.acquire_buffer(None).unwrap();
            let meta = buf.meta::<gst_video::VideoMeta>().expect("every buffer has a video meta");
            assert_eq!((meta.format(), meta.width(), meta.height()), (format, w, h));
            let ctx = format!("{format:?} {w}x{h}");
            for (i, &s) in meta.stride().iter().enumerate() {
                assert_eq!(s % 64, 0, "{ctx} plane {i} stride {s}");
            }
            if let Some(pf) = pixel_format(format) {
                // The tensor crate's plane table at the pool's pitch gives the same offsets.
                let rs = meta.stride()[0] as usize;
                let planes = pf.plane_table(w as usize, h as usize, rs);
                let offs: Vec<usize> = planes.iter().map(|p| p.offset).collect();
                assert_eq!(meta.offset(), &offs[..], "{ctx}");
                assert_eq!(rs, pf.row_stride_for(w as usize, 1, true), "{ctx}: the tightest aligned pitch");
                assert_eq!(buf.size(), pf.image_bytes(w as usize, h as usize, rs), "{ctx}");
            }
            // The meta describes memory that is really there: a VideoFrame maps every plane.
            let info = gst_video::VideoInfo::from_caps(&video_caps(format, w, h)).unwrap();
            let frame = gst_video::VideoFrameRef::from_buffer_ref_readable(buf.as_ref(), &info).unwrap();
            assert_eq!(frame.plane_stride()[0], meta.stride()[0]);
            checked += 1;
        }
    }
    assert_eq!(checked, 20 * 4);
}

#[test]
fn config_alignment_is_ored_with_the_64_byte_rule() {
    init();
    let caps = video_caps(VideoFormat::Nv12, 322, 240);
    let pool = BufferPool::new();
    let mut config = pool.config();
    config.set_params(Some(&caps), 0, 1, 1);
    config.add_option(gst_video::BUFFER_POOL_OPTION_VIDEO_ALIGNMENT);
    let mut masks = [0u32; gst_video::VIDEO_MAX_PLANES];
    masks[0] = 255;
    config.set_video_alignment(&gst_video::VideoAlignment::new(0, 0, 0, 0, &masks));
    pool.set_config(config).unwrap();
    pool.set_active(true).unwrap();
    let buf = pool.acquire_buffer(None).unwrap();
    let meta = buf.meta::<gst_video::VideoMeta>().unwrap();
    assert_eq!(meta.stride()[0], 512, "256-aligned luma (the config) and 64-aligned chroma (ours)");
    assert_eq!(meta.stride()[1] % 64, 0);
    pool.set_active(false).unwrap();
    // Padding goes through GStreamer's own alignment, still with every stride 64-aligned.
    let pool = BufferPool::new();
    let mut config = pool.config();
    config.set_params(Some(&caps), 0, 1, 1);
    config.add_option(gst_video::BUFFER_POOL_OPTION_VIDEO_ALIGNMENT);
    config.set_video_alignment(&gst_video::VideoAlignment::new(
        8,
        8,
        16,
        16,
        &[0; gst_video::VIDEO_MAX_PLANES],
    ));
    pool.set_config(config).unwrap();
    pool.set_active(true).unwrap();
    let buf = pool.acquire_buffer(None).unwrap();
    let meta = buf.meta::<gst_video::VideoMeta>().unwrap();
    assert!(meta.stride().iter().all(|s| s % 64 == 0), "{:?}", meta.stride());
    assert!(
        meta.offset()[0] >= 8 * meta.stride()[0] as usize + 16,
        "top/left padding before the first pixel"
    );
}

#[test]
fn byte_budget_refuses_instead_of_allocating() {
    init();
    let caps = video_caps(VideoFormat::Rgba, 640, 480); // 1 228 800 bytes a frame
    let pool = BufferPool::new();
    pool.set_max_bytes(3_000_000);
    let mut config = pool.config();
    config.set_params(Some(&caps), 0, 0, 0);
    pool.set_config(config).unwrap();
    pool.set_active(true).unwrap();
    let a = pool.acquire_buffer(None).unwrap();
    let b = pool.acquire_buffer(None).unwrap();
    assert_eq!(pool.acquire_buffer(None).unwrap_err(), gst::FlowError::Error);
    let s = pool.stats();
    assert_eq!((s.live_buffers, s.live_bytes), (2, 2 * 1_228_800));
    assert_eq!(pool.property::<u64>("live-buffers"), 2);
    drop(a);
    // A released buffer is served again without touching the budget.
    let c = pool.acquire_buffer(None).unwrap();
    drop((b, c));
    assert_eq!(pool.stats().allocated_buffers, 2);
}

#[test]
fn statistics_and_best_fit_reuse_after_shrinking() {
    init();
    let pool = BufferPool::new();
    let configure = |w, h| {
        let mut config = pool.config();
        config.set_params(Some(&video_caps(VideoFormat::Rgba, w, h)), 0, 0, 0);
        pool.set_config(config).unwrap();
        pool.set_active(true).unwrap();
    };
    configure(640, 480);
    let bufs: Vec<_> = (0..3).map(|_| pool.acquire_buffer(None).unwrap()).collect();
    let s = pool.stats();
    assert_eq!((s.allocated_buffers, s.allocated_bytes, s.live_buffers), (3, 3 * 1_228_800, 3));
    drop(bufs);
    pool.set_active(false).unwrap();
    // Smaller frames: every new buffer is a released allocation, chosen by best fit.
    configure(320, 240);
    let small: Vec<_> = (0..3).map(|_| pool.acquire_buffer(None).unwrap()).collect();
    let s = pool.stats();
    assert_eq!(s.reuses, 3);
    assert_eq!(s.allocated_bytes, 3 * 1_228_800, "no fresh allocation");
    assert_eq!(small[0].size(), 320 * 240 * 4, "the reused memory spans the new frame exactly");
    assert!(small[0].peek_memory(0).is_memory_type::<gst_allocators::DmaBufMemory>(), "still our fd memory");
    assert_eq!(s.peak_bytes, 3 * 1_228_800);
    drop(small);
    pool.set_active(false).unwrap();
    // Bigger frames: the old allocations cannot serve, so they are released, not hoarded.
    configure(1280, 720);
    let big = pool.acquire_buffer(None).unwrap();
    let s = pool.stats();
    assert_eq!(s.live_bytes, 1280 * 720 * 4);
    assert_eq!(s.reuses, 3);
    drop(big);
}

#[test]
fn gtype_names_resolve() {
    init();
    assert!(glib::Type::from_name("GstEdgeFirstBufferPool").is_some());
    assert!(glib::Type::from_name("GstEdgeFirstDmaBufAllocator").is_some());
    let pool = glib::Object::with_type(glib::Type::from_name("GstEdgeFirstBufferPool").unwrap());
    assert!(pool.is::<gst::BufferPool>());
}

use gst::glib;

#[test]
fn min_buffers_are_preallocated_and_max_buffers_bound_the_pool() {
    init();
    let pool = active_pool(&video_caps(VideoFormat::Nv12, 64, 48), 2, 3);
    assert_eq!(pool.stats().allocated_buffers, 2, "min-buffers allocated at activation");
    let held: Vec<_> = (0..3).map(|_| pool.acquire_buffer(None).unwrap()).collect();
    let dontwait = gst::BufferPoolAcquireParams::with_flags(gst::BufferPoolAcquireFlags::DONTWAIT);
    assert_eq!(pool.acquire_buffer(Some(&dontwait)).unwrap_err(), gst::FlowError::Eos, "max-buffers reached");
    drop(held);
    assert!(pool.acquire_buffer(Some(&dontwait)).is_ok());
    assert_eq!(pool.stats().allocated_buffers, 3);
}
