//! The camera path as v4l2src and libcamerasrc hand it over: fd-backed frames wrapped once as
//! DMA-BUF memories without KEEP_MAPPED, rotating. The element reads them through the import
//! cache's kept mapping: steady state makes no mmap, munmap or page fault per frame, and the bytes
//! equal what the same frames give from system memory. Its own binary: page faults are counted
//! process-wide.

mod common;

use common::*;
use gst_allocators::prelude::*;
use gst_video::VideoFormat;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

fn minor_faults() -> i64 {
    let mut u = unsafe { std::mem::zeroed::<libc::rusage>() };
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) }, 0);
    u.ru_minflt
}

fn memfd_with(bytes: &[u8]) -> OwnedFd {
    let fd = unsafe { OwnedFd::from_raw_fd(libc::memfd_create(c"camera".as_ptr(), libc::MFD_CLOEXEC)) };
    assert_eq!(
        unsafe { libc::write(fd.as_raw_fd(), bytes.as_ptr().cast(), bytes.len()) },
        bytes.len() as isize
    );
    fd
}

/// Faults are counted process-wide: the tests in this binary take turns.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn rotating_fd_frames_are_read_through_the_kept_mapping_without_faults() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    init();
    let (w, rows) = (640usize, 480usize);
    let size = w * rows * 3 / 2;
    let frames: Vec<Vec<u8>> = (0..8u32)
        .map(|k| {
            (0..size)
                .map(|i| ((i as u32).wrapping_mul(2654435761).wrapping_add(k * 977) >> 24) as u8)
                .collect()
        })
        .collect();
    let fds: Vec<OwnedFd> = frames.iter().map(|f| memfd_with(f)).collect();
    // Wrapped once, as a camera driver's buffers are; no KEEP_MAPPED.
    let alloc = gst_allocators::DmaBufAllocator::new();
    let bufs: Vec<gst::Buffer> = fds
        .iter()
        .map(|fd| {
            let mem = unsafe { alloc.alloc_dmabuf(fd.try_clone().unwrap(), size) }.unwrap();
            let mut b = gst::Buffer::new();
            b.get_mut().unwrap().append_memory(mem);
            b
        })
        .collect();
    let mut h_fd = gst_check::Harness::new("edgefirsttensor");
    let mut h_sys = gst_check::Harness::new("edgefirsttensor");
    for h in [&mut h_fd, &mut h_sys] {
        let el = h.element().unwrap();
        el.set_property_from_str("model-width", "320");
        el.set_property_from_str("model-height", "320");
        h.play();
        h.set_src_caps(video_caps(VideoFormat::Nv12, w as u32, rows as u32));
    }
    // The same bytes from system memory, read through GStreamer's map: the reference.
    for (k, f) in frames.iter().enumerate() {
        let got = h_fd.push_and_pull(bufs[k].clone()).unwrap();
        let want = h_sys.push_and_pull(gst::Buffer::from_slice(f.clone())).unwrap();
        assert_eq!(*got.map_readable().unwrap(), *want.map_readable().unwrap(), "frame {k}");
    }
    for _ in 0..2 {
        for b in &bufs {
            drop(h_fd.push_and_pull(b.clone()).unwrap());
        }
    }
    let rounds = 4;
    let before = minor_faults();
    for _ in 0..rounds {
        for b in &bufs {
            drop(h_fd.push_and_pull(b.clone()).unwrap());
        }
    }
    let faults = minor_faults() - before;
    println!("{} frames after warm-up: {faults} minor faults", rounds * bufs.len());
    // Skipped where something else faults pages in: AddressSanitizer its shadow (scripts/asan.sh),
    // qemu-user its translation buffers (the aarch64 lane).
    if std::env::var_os("EDGEFIRST_NO_FAULT_COUNT").is_none() {
        assert_eq!(faults, 0, "no page fault per frame once every frame's mapping is populated");
    }
    let el = h_fd.element().unwrap();
    assert_eq!(el.property::<u64>("import-misses"), 8, "each camera buffer imported once");
}

/// Kernel lane (a real DMA heap): frames read through the kept mapping with the sync ioctls
/// bracketing each read, and a producer that rewrites a buffer between two frames is seen — no
/// stale CPU view. Skipped where no DMA heap exists.
#[test]
fn a_dmabuf_rewritten_between_frames_is_read_fresh() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    init();
    let (w, rows) = (320usize, 240usize);
    let size = w * rows * 3 / 2;
    let Ok(raw) = edgefirst_tensor::allocate_fd(
        size,
        edgefirst_tensor::CpuAccess::ReadWrite,
        Some(edgefirst_tensor::TensorMemory::DmaBuf),
    ) else {
        eprintln!("no DMA heap on this kernel: checked in the kernel lane");
        return;
    };
    // The producer's own view of the buffer, written under its own sync brackets.
    let producer =
        edgefirst_tensor::Tensor::<u8>::from_fd(std::os::fd::AsFd::as_fd(&raw.fd), &[size], None).unwrap();
    let alloc = gst_allocators::DmaBufAllocator::new();
    let mem = unsafe { alloc.alloc_dmabuf(raw.fd.try_clone().unwrap(), size) }.unwrap();
    let mut buf = gst::Buffer::new();
    buf.get_mut().unwrap().append_memory(mem);
    let mut h_fd = gst_check::Harness::new("edgefirsttensor");
    let mut h_sys = gst_check::Harness::new("edgefirsttensor");
    for h in [&mut h_fd, &mut h_sys] {
        let el = h.element().unwrap();
        el.set_property_from_str("model-width", "160");
        el.set_property_from_str("model-height", "160");
        h.play();
        h.set_src_caps(video_caps(VideoFormat::Nv12, w as u32, rows as u32));
    }
    for k in 0..4u8 {
        let frame: Vec<u8> = (0..size).map(|i| (i as u8).wrapping_mul(31).wrapping_add(k * 50)).collect();
        producer.map_write().unwrap().copy_from_slice(&frame);
        let got = h_fd.push_and_pull(buf.clone()).unwrap();
        let want = h_sys.push_and_pull(gst::Buffer::from_slice(frame)).unwrap();
        assert_eq!(*got.map_readable().unwrap(), *want.map_readable().unwrap(), "frame {k} as written");
    }
    assert_eq!(h_fd.element().unwrap().property::<u64>("import-misses"), 1, "one import, read four times");
    eprintln!("kernel lane: a DMA-BUF rewritten between 4 frames was read fresh each time");
}

/// The batch element reads its sources' fd frames as edgefirsttensor does: through each source's
/// import cache, so rotating camera buffers cost no mapping and no page fault per batch, and the
/// slots equal what the same frames give from system memory.
#[test]
fn the_batch_reads_rotating_fd_frames_through_kept_mappings() {
    use gst::prelude::*;
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    init();
    let (w, rows) = (320usize, 240usize);
    let size = w * rows * 3 / 2;
    let frames: Vec<Vec<u8>> = (0..6u32)
        .map(|k| {
            (0..size)
                .map(|i| ((i as u32).wrapping_mul(2654435761).wrapping_add(k * 131) >> 24) as u8)
                .collect()
        })
        .collect();
    let fds: Vec<OwnedFd> = frames.iter().map(|f| memfd_with(f)).collect();
    let alloc = gst_allocators::DmaBufAllocator::new();
    let wrap = |fd: &OwnedFd| {
        let mem = unsafe { alloc.alloc_dmabuf(fd.try_clone().unwrap(), size) }.unwrap();
        let mut b = gst::Buffer::new();
        b.get_mut().unwrap().append_memory(mem);
        b
    };
    let bufs: Vec<gst::Buffer> = fds.iter().map(wrap).collect();
    let caps = video_caps(VideoFormat::Nv12, w as u32, rows as u32);
    let run = |sys: bool, rounds: usize, count_from: usize| -> (Vec<Vec<u8>>, i64) {
        let p = gst::parse::launch(&format!(
            "edgefirsttensorbatch name=b model-width=160 model-height=160 ! appsink name=out sync=false \
             appsrc name=s0 format=time caps=\"{caps}\" ! b.sink_0 \
             appsrc name=s1 format=time caps=\"{caps}\" ! b.sink_1"
        ))
        .unwrap();
        let bin = p.downcast_ref::<gst::Bin>().unwrap();
        let out = bin.by_name("out").unwrap().downcast::<gst_app::AppSink>().unwrap();
        let srcs: Vec<gst_app::AppSrc> = (0..2)
            .map(|k| bin.by_name(&format!("s{k}")).unwrap().downcast::<gst_app::AppSrc>().unwrap())
            .collect();
        p.set_state(gst::State::Playing).unwrap();
        let mut got = Vec::new();
        let mut before = 0;
        for r in 0..rounds {
            if r == count_from {
                before = minor_faults();
            }
            for (k, s) in srcs.iter().enumerate() {
                let i = (r * 2 + k) % bufs.len();
                let mut b = if sys { gst::Buffer::from_slice(frames[i].clone()) } else { bufs[i].clone() };
                b.make_mut().set_pts(gst::ClockTime::from_mseconds(33 * r as u64));
                s.push_buffer(b).unwrap();
            }
            let sample = out.try_pull_sample(gst::ClockTime::from_seconds(10)).expect("a batch");
            if r < bufs.len() {
                got.push(sample.buffer().unwrap().map_readable().unwrap().to_vec());
            }
        }
        let faults = minor_faults() - before;
        p.set_state(gst::State::Null).unwrap();
        (got, faults)
    };
    let (want, _) = run(true, bufs.len(), usize::MAX);
    let (got, faults) = run(false, 40, 20);
    assert_eq!(got, want, "slots from fd frames equal slots from the same bytes in system memory");
    println!("20 batches of 2 rotating fd frames after warm-up: {faults} minor faults");
    if std::env::var_os("EDGEFIRST_NO_FAULT_COUNT").is_none() {
        assert!(faults <= 2, "{faults} page faults in 20 batches: frames are read through kept mappings");
    }
}
