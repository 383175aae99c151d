//! Hostile producers and shared buffers: fd objects smaller than their memories, fds that are not
//! buffers at all, regions and sizes that overflow, bad property strings, pool memories still held
//! elsewhere. Each case is an element error (or a refused configuration), never a crash, a panic
//! or bytes that change under a holder.

mod common;

use common::*;
use gst::prelude::*;
use gst_video::VideoFormat;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// A playing harness with `props`, given `caps`.
fn harness_with(props: &[(&str, &str)], caps: gst::Caps) -> gst_check::Harness {
    let mut h = harness(props);
    h.set_src_caps(caps);
    h
}

const NV12_SIZE: usize = 64 * 72;
/// Passthrough (the frame is its own tensor) and conversion.
const MODES: [&[(&str, &str)]; 2] =
    [&[("model-colorspace", "gray")], &[("model-width", "32"), ("model-height", "32")]];

fn gray() -> gst::Caps {
    init();
    video_caps(VideoFormat::Gray8, 64, 72)
}

#[test]
fn an_fd_object_shorter_than_its_memory_is_an_error_in_both_modes() {
    for props in MODES {
        let mut h = harness_with(props, gray());
        let short = memfd(1000);
        assert_eq!(h.push(fd_buffer(&short, NV12_SIZE)), Err(gst::FlowError::Error), "{props:?}");
    }
}

#[test]
fn a_memfd_truncated_after_its_import_is_an_error_fresh_or_recycled() {
    for props in MODES {
        for recycled in [false, true] {
            let mut h = harness_with(props, gray());
            let fd = memfd(NV12_SIZE);
            let buf = fd_buffer(&fd, NV12_SIZE);
            let first = if recycled { buf.clone() } else { fd_buffer(&fd, NV12_SIZE) };
            h.push_and_pull(first).unwrap();
            assert_eq!(unsafe { libc::ftruncate(fd.as_raw_fd(), 100) }, 0);
            let again = if recycled { buf.clone() } else { fd_buffer(&fd, NV12_SIZE) };
            assert_eq!(h.push(again), Err(gst::FlowError::Error), "{props:?} recycled={recycled}");
        }
    }
}

#[test]
fn an_fd_number_reused_by_a_smaller_object_is_an_error() {
    for props in MODES {
        let mut h = harness_with(props, gray());
        let fd = memfd(NV12_SIZE);
        let buf = fd_buffer(&fd, NV12_SIZE);
        h.push_and_pull(buf.clone()).unwrap();
        // The memory's fd number now names a 100-byte memfd.
        let gfd = buf.peek_memory(0).downcast_memory_ref::<gst_allocators::FdMemory>().unwrap().fd();
        let small = memfd(100);
        assert!(unsafe { libc::dup2(small.as_raw_fd(), gfd) } >= 0);
        assert_eq!(h.push(buf.clone()), Err(gst::FlowError::Error), "{props:?}");
    }
}

#[test]
fn a_pipe_or_eventfd_wrapped_as_a_dmabuf_is_refused_in_both_modes() {
    for props in MODES {
        let mut fds = [0; 2];
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let ev = unsafe { OwnedFd::from_raw_fd(libc::eventfd(0, libc::EFD_CLOEXEC)) };
        for fd in [&r, &w, &ev] {
            let mut h = harness_with(props, gray());
            assert_eq!(h.push(fd_buffer(fd, NV12_SIZE)), Err(gst::FlowError::Error), "{props:?}");
        }
    }
}

fn pipeline_error(launch: &str) -> String {
    init();
    let p = gst::parse::launch(launch).unwrap();
    run_to_eos(&p, 10).expect_err(launch)
}

#[test]
fn a_source_region_that_overflows_is_refused_without_a_panic() {
    for (region, interp) in [
        ("18446744073709551614,0,2,48", "bilinear"),
        ("18446744073709551614,0,2,48", "nearest"),
        ("0,18446744073709551614,2,2", "bilinear"),
        ("0,18446744073709551615,1,1", "nearest"),
        ("1,1,18446744073709551615,1", "bilinear"),
        // No overflow in the sum, but far outside the frame: refused at caps time.
        ("18446744073709551000,0,2,48", "bilinear"),
        ("0,18446744073709551000,2,2", "nearest"),
    ] {
        let launch = format!(
            "videotestsrc num-buffers=2 ! video/x-raw,format=NV12,width=64,height=48 ! edgefirsttensor \
             name=t model-width=32 model-height=32 interpolation={interp} source-region={region} ! fakesink"
        );
        let e = pipeline_error(&launch);
        assert!(!e.contains("anicked"), "{region} {interp}: {e}");
        assert!(e.contains("source-region"), "{region} {interp}: the message names the property: {e}");
    }
    // The same element, back to NULL and given a valid region, works again.
    init();
    let p = gst::parse::launch(
        "videotestsrc num-buffers=2 ! video/x-raw,format=NV12,width=64,height=48 ! edgefirsttensor \
         name=t model-width=32 model-height=32 source-region=18446744073709551614,0,2,48 ! fakesink",
    )
    .unwrap();
    assert!(run_to_eos(&p, 10).is_err());
    let t = p.downcast_ref::<gst::Bin>().unwrap().by_name("t").unwrap();
    t.set_property("source-region", "0,0,32,24");
    run_to_eos(&p, 10).unwrap();
}

#[test]
fn bad_property_values_stop_the_pipeline_with_a_message() {
    for (prop, value) in [
        ("model-mean", "0.1,0.2"),
        ("model-mean", "a,b,c"),
        ("model-mean", "nan"),
        ("model-std", "1,0,1"),
        ("model-std", "1e-45"),
        ("model-std", "inf"),
        ("source-region", "0,0,0,10"),
        ("source-region", "a,b,c,d"),
        ("source-region", "1,2"),
    ] {
        let e = pipeline_error(&format!(
            "videotestsrc num-buffers=1 ! video/x-raw,format=RGB,width=64,height=48 \
             ! edgefirsttensor model-width=32 model-height=32 {prop}=\"{value}\" ! fakesink"
        ));
        assert!(e.contains(prop) && e.contains(value), "{prop}={value}: {e}");
        assert!(!e.contains("anicked"), "{e}");
    }
    // A tiny quantization scale whose reciprocal overflows f32.
    let e = pipeline_error(
        "videotestsrc num-buffers=1 ! video/x-raw,format=RGB,width=64,height=48 \
         ! edgefirsttensor model-dtype=int8 model-quant-scale=1e-300 ! fakesink",
    );
    assert!(e.contains("model-quant-scale"), "{e}");
}

#[test]
fn sizes_past_32_bits_are_refused_at_negotiation_with_the_size() {
    let e = pipeline_error(
        "videotestsrc num-buffers=1 ! video/x-raw,format=GRAY8,width=64,height=48 ! edgefirsttensor \
         model-width=16384 model-height=16384 model-dtype=float64 ! fakesink",
    );
    assert!(e.contains("6442450944"), "{e}");
    assert!(!e.contains("2147483648"), "{e}");
}

/// Every acquired buffer is filled with its own letter; every kept sample must still hold its
/// letter after later frames were produced.
fn check_kept(samples: &[(u8, gst::Sample)]) {
    for (letter, s) in samples {
        let b = s.buffer().unwrap();
        let m = b.map_readable().unwrap();
        assert!(m.iter().all(|x| x == letter), "kept frame {} now reads {}", *letter as char, m[0] as char);
    }
}

/// Feed 8 pool frames, each filled with its own letter, into `launch` (an appsrc named src, an
/// appsink named sink), keeping every sample; `hold` keeps a reference to each pushed buffer until
/// its sample came back (gst_buffer_ref(frame) before the push). Every kept sample must still hold
/// its letter after the later frames.
fn feed_and_keep(launch: &str, hold: bool) {
    init();
    let caps = video_caps(VideoFormat::Gray8, 64, 48);
    let p = gst::parse::launch(&launch.replace("CAPS", &caps.to_string())).unwrap();
    let bin = p.downcast_ref::<gst::Bin>().unwrap();
    let src = bin.by_name("src").unwrap().downcast::<gst_app::AppSrc>().unwrap();
    let sink = bin.by_name("sink").unwrap().downcast::<gst_app::AppSink>().unwrap();
    let pool = active_pool(&caps, 0, 0);
    p.set_state(gst::State::Playing).unwrap();
    let mut kept = Vec::new();
    for i in 0..8u8 {
        let letter = b'A' + i;
        let mut b = pool.acquire_buffer(None).unwrap();
        b.get_mut().unwrap().map_writable().unwrap().fill(letter);
        let held = hold.then(|| b.clone());
        src.push_buffer(b).unwrap();
        kept.push((letter, sink.pull_sample().unwrap()));
        drop(held);
        // Let every other holder drop its reference too, so the buffer goes back to the pool.
        for _ in 0..100 {
            if pool.stats().live_buffers == 0 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        check_kept(&kept);
    }
    p.set_state(gst::State::Null).unwrap();
    pool.set_active(false).unwrap();
}

#[test]
fn kept_samples_keep_their_bytes_through_a_tee_fed_from_the_pool() {
    feed_and_keep(
        "appsrc name=src format=time caps=\"CAPS\" ! tee name=t \
         t. ! queue ! fakesink sync=false \
         t. ! queue ! edgefirsttensor model-colorspace=gray ! appsink name=sink sync=false",
        false,
    );
}

#[test]
fn an_app_that_keeps_its_pushed_buffer_and_samples_sees_no_reuse() {
    feed_and_keep(
        "appsrc name=src format=time caps=\"CAPS\" ! edgefirsttensor model-colorspace=gray ! appsink name=sink sync=false",
        true,
    );
}

#[test]
fn a_shared_memory_released_to_the_pool_is_never_served_again() {
    init();
    let caps = video_caps(VideoFormat::Gray8, 64, 48);
    let pool = active_pool(&caps, 0, 0);
    let mut b = pool.acquire_buffer(None).unwrap();
    b.get_mut().unwrap().map_writable().unwrap().fill(b'X');
    // An app keeps the memory itself (gst_memory_ref), then lets the buffer go.
    let mem = b.memory(0).unwrap();
    drop(b);
    let mut c = pool.acquire_buffer(None).unwrap();
    c.get_mut().unwrap().map_writable().unwrap().fill(b'Y');
    assert!(mem.map_readable().unwrap().iter().all(|&x| x == b'X'), "a held memory was handed out again");
    drop(c);
    pool.set_active(false).unwrap();
}

#[test]
fn our_memfds_are_sealed_against_shrinking() {
    init();
    let pool = active_pool(&video_caps(VideoFormat::Gray8, 64, 48), 1, 0);
    let b = pool.acquire_buffer(None).unwrap();
    let Some(fdmem) = b.peek_memory(0).downcast_memory_ref::<gst_allocators::FdMemory>() else {
        panic!("pool memory has an fd");
    };
    let fd = fdmem.fd();
    let magic =
        edgefirst_tensor::import::fs_magic(unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) }).unwrap();
    if magic == edgefirst_tensor::import::TMPFS_MAGIC {
        assert_eq!(unsafe { libc::ftruncate(fd, 10) }, -1, "a consumer cannot shrink our memfd");
        assert_eq!(std::io::Error::last_os_error().raw_os_error(), Some(libc::EPERM));
    }
    drop(b);
    pool.set_active(false).unwrap();
}

/// A real DMA-BUF (kernel lane: /dev/dma_heap) is sized by the kernel: a memory claiming more than
/// the heap gave is refused, one that fits is served. Skipped where no DMA heap exists.
#[test]
fn a_real_dmabuf_is_sized_by_the_kernel() {
    init();
    let Ok(raw) = edgefirst_tensor::allocate_fd(
        4096,
        edgefirst_tensor::CpuAccess::ReadWrite,
        Some(edgefirst_tensor::TensorMemory::DmaBuf),
    ) else {
        eprintln!("no DMA heap on this kernel: checked in the kernel lane");
        return;
    };
    let fd = raw.fd;
    let magic = edgefirst_tensor::import::fs_magic(std::os::fd::AsFd::as_fd(&fd)).unwrap();
    assert_eq!(magic, edgefirst_tensor::import::DMA_BUF_MAGIC);
    for props in MODES {
        let mut h = harness_with(props, video_caps(VideoFormat::Gray8, 64, 72));
        assert_eq!(h.push(fd_buffer(&fd, 64 * 72)), Err(gst::FlowError::Error), "{props:?}: 4608 > 4096");
        let mut h = harness_with(props, video_caps(VideoFormat::Gray8, 64, 64));
        h.push_and_pull(fd_buffer(&fd, 64 * 64)).unwrap();
    }
}
