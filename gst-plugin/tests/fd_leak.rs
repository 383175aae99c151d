//! fd accounting in its own test binary: /proc/self/fd is process-wide, so no other test may run
//! beside it.

mod common;

use common::*;
use gst::prelude::*;
use gst_video::VideoFormat;

/// The fd count is process-wide: the tests in this binary take turns.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn no_fd_left_after_a_thousand_cycles_and_teardown() {
    let _serial = SERIAL.lock().unwrap();
    init();
    let before = open_fds();
    {
        let pool = active_pool(&video_caps(VideoFormat::Nv12, 322, 240), 2, 4);
        for i in 0..1000 {
            let b = pool.acquire_buffer(None).unwrap();
            if i % 250 == 249 {
                pool.set_active(false).unwrap();
                drop(b);
                let mut config = pool.config();
                let w = if i % 500 == 499 { 322 } else { 160 };
                config.set_params(Some(&video_caps(VideoFormat::Nv12, w, 120)), 0, 2, 4);
                pool.set_config(config).unwrap();
                pool.set_active(true).unwrap();
            }
        }
        assert!(open_fds() > before, "buffers hold fds while the pool lives");
        pool.set_active(false).unwrap();
    }
    assert_eq!(open_fds(), before, "every fd closed after teardown");
}

#[test]
fn element_state_cycles_leave_no_fd_behind() {
    let _serial = SERIAL.lock().unwrap();
    init();
    let run = || {
        let p = gst::parse::launch(
            "videotestsrc num-buffers=5 ! video/x-raw,format=NV12,width=320,height=240 \
             ! edgefirsttensor model-width=160 model-height=160 model-dtype=float32 n-threads=2 ! fakesink",
        )
        .unwrap();
        run_to_eos(&p, 20).unwrap();
    };
    run(); // first use registers types and opens whatever GStreamer keeps for the process
    let before = open_fds();
    for _ in 0..20 {
        run();
    }
    assert_eq!(open_fds(), before, "pipelines with the element built and torn down 20 times");
}

#[test]
fn impossible_pool_configurations_are_refused_and_a_failed_start_frees_what_it_made() {
    let _serial = SERIAL.lock().unwrap();
    init();
    let caps = video_caps(VideoFormat::Rgba, 640, 480); // 1 228 800 bytes a frame
    let before = open_fds();
    {
        // Known budget: ten buffers cannot fit in 3 MB, so the configuration is refused.
        let pool = gstedgefirst::BufferPool::new();
        pool.set_max_bytes(3_000_000);
        let mut config = pool.config();
        config.set_params(Some(&caps), 0, 10, 0);
        assert!(pool.set_config(config).is_err(), "min-buffers x size beyond max-bytes");
        // More buffers than the process may open fds.
        let limit = unsafe {
            let mut r = std::mem::zeroed::<libc::rlimit>();
            assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut r), 0);
            r.rlim_cur
        };
        let pool = gstedgefirst::BufferPool::new();
        let mut config = pool.config();
        let tiny = video_caps(VideoFormat::Gray8, 16, 16);
        config.set_params(Some(&tiny), 0, u32::try_from(limit).unwrap_or(u32::MAX).saturating_add(1), 0);
        assert!(pool.set_config(config).is_err(), "min-buffers beyond the fd limit");
        // The budget shrinks after the configuration: activation fails part-way and frees the
        // buffers it had already made.
        let pool = gstedgefirst::BufferPool::new();
        let mut config = pool.config();
        config.set_params(Some(&caps), 0, 10, 0);
        pool.set_config(config).unwrap();
        pool.set_max_bytes(3_000_000);
        let with_pool = open_fds(); // a pool holds its own poll fds
        assert!(pool.set_active(true).is_err());
        assert_eq!(open_fds(), with_pool, "the two buffers made before the budget ran out are freed");
        assert_eq!(pool.stats().live_bytes, 0);
    }
    assert_eq!(open_fds(), before);
}
