//! Shared set-up for the plugin's tests.
#![allow(dead_code)] // each test binary uses its own subset

use gst::prelude::*;
use gstedgefirst::BufferPool;
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
    let pool = BufferPool::new();
    let mut config = pool.config();
    config.set_params(Some(caps), 0, min, max);
    config.add_option(gst_video::BUFFER_POOL_OPTION_VIDEO_META);
    pool.set_config(config).unwrap();
    pool.set_active(true).unwrap();
    pool
}

pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}
