//! Shared set-up for the plugin's tests.
#![allow(dead_code)] // each test binary uses its own subset

pub mod net;
pub mod transport;

use gst::prelude::*;
use gst_allocators::prelude::*;
use gstedgefirst::BufferPool;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::Once;

pub fn init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        gst::init().unwrap();
        gstedgefirst::plugin_register_static().unwrap();
    });
}

pub fn video_caps(format: gst_video::VideoFormat, w: u32, h: u32) -> gst::Caps {
    gst_video::VideoInfo::builder(format, w, h)
        .fps(gst::Fraction::new(30, 1))
        .build()
        .unwrap()
        .to_caps()
        .unwrap()
}

/// An active pool for `caps`, with the video meta option set as a well-behaved caller does.
pub fn active_pool(caps: &gst::Caps, min: u32, max: u32) -> BufferPool {
    let (pool, _) = BufferPool::configured(caps, 0, min, max).unwrap();
    pool.set_active(true).unwrap();
    pool
}

pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// Play `pipeline` until EOS (within `seconds`) and stop it; a bus error comes back as its text.
pub fn run_to_eos(pipeline: &gst::Element, seconds: u64) -> Result<(), String> {
    if let Err(e) = pipeline.set_state(gst::State::Playing) {
        // The element's own error message says why; the state change only says that it failed.
        let msg = pipeline.bus().unwrap().pop_filtered(&[gst::MessageType::Error]);
        pipeline.set_state(gst::State::Null).map_err(|e| e.to_string())?;
        return Err(match msg.as_ref().map(|m| m.view()) {
            Some(gst::MessageView::Error(err)) => format!("{} {:?}", err.error(), err.debug()),
            _ => e.to_string(),
        });
    }
    let msg = pipeline.bus().unwrap().timed_pop_filtered(
        gst::ClockTime::from_seconds(seconds),
        &[gst::MessageType::Eos, gst::MessageType::Error],
    );
    pipeline.set_state(gst::State::Null).map_err(|e| e.to_string())?;
    match msg.as_ref().map(|m| m.view()) {
        Some(gst::MessageView::Error(e)) => Err(format!("{} {:?}", e.error(), e.debug())),
        Some(_) => Ok(()),
        None => Err(format!("no EOS within {seconds} s")),
    }
}

/// An edgefirsttensor harness with `props` set, playing.
pub fn harness(props: &[(&str, &str)]) -> gst_check::Harness {
    init();
    let mut h = gst_check::Harness::new("edgefirsttensor");
    let el = h.element().unwrap();
    for (k, v) in props {
        el.set_property_from_str(k, v);
    }
    h.play();
    h
}

/// A memfd of `len` bytes.
pub fn memfd(len: usize) -> OwnedFd {
    let fd = unsafe { libc::memfd_create(c"frame".as_ptr(), libc::MFD_CLOEXEC) };
    assert!(fd >= 0);
    assert_eq!(unsafe { libc::ftruncate(fd, len as libc::off_t) }, 0);
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// A buffer whose one memory wraps (a dup of) `fd` and claims `size` bytes, as DMA-BUF producers
/// hand them over (no KEEP_MAPPED).
pub fn fd_buffer(fd: &OwnedFd, size: usize) -> gst::Buffer {
    let alloc = gst_allocators::DmaBufAllocator::new();
    let mem = unsafe { alloc.alloc_dmabuf(fd.try_clone().unwrap(), size) }.unwrap();
    let mut b = gst::Buffer::new();
    b.get_mut().unwrap().append_memory(mem);
    b
}
