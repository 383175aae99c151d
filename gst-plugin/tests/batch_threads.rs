//! edgefirsttensorbatch's slot threads: started once for the element and kept from batch to batch
//! (spawned per batch, they cost a share of every batch), and gone when the element stops. Alone
//! in its test binary: it counts the process's threads by name, which another test's pipeline
//! would change.

mod common;

use common::*;
use gst::prelude::*;

/// Threads of this process whose name starts as the conversion workers' does
/// (`edgefirst-convert-N`, cut to the kernel's 15 bytes).
fn workers() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|c| c.starts_with("edgefirst-conve"))
        .count()
}

#[test]
fn slot_threads_start_once_and_stop_with_the_element() {
    init();
    assert_eq!(workers(), 0, "no workers before the pipeline");
    let launch = "edgefirsttensorbatch name=b model-width=64 model-height=48 n-threads=3 ! \
                  appsink name=sink sync=false max-buffers=1 \
                  videotestsrc num-buffers=40 ! video/x-raw,format=NV12,width=320,height=240 ! b.sink_0 \
                  videotestsrc num-buffers=40 pattern=ball ! video/x-raw,format=RGB,width=160,height=120 ! b.sink_1 \
                  videotestsrc num-buffers=40 pattern=snow ! video/x-raw,format=YUY2,width=128,height=96 ! b.sink_2";
    let p = gst::parse::launch(launch).unwrap();
    let sink = p.downcast_ref::<gst::Bin>().unwrap().by_name("sink").unwrap();
    let sink = sink.downcast::<gst_app::AppSink>().unwrap();
    p.set_state(gst::State::Playing).unwrap();
    // Three slots on three bands: the aggregator's thread and two workers, the same two for
    // every batch.
    let mut seen = Vec::new();
    for _ in 0..30 {
        let s = sink.try_pull_sample(gst::ClockTime::from_seconds(10)).expect("a batch");
        assert!(s.buffer().is_some());
        seen.push(workers());
    }
    assert!(seen.iter().all(|&n| n == 2), "two workers for every batch, none spawned per batch: {seen:?}");
    p.set_state(gst::State::Null).unwrap();
    assert_eq!(workers(), 0, "the workers stop with the element");
}
