//! fd accounting in its own test binary: /proc/self/fd is process-wide, so no other test may run
//! beside it.

mod common;

use common::*;
use gst::prelude::*;
use gst_video::VideoFormat;

#[test]
fn no_fd_left_after_a_thousand_cycles_and_teardown() {
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
