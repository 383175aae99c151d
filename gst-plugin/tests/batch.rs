//! edgefirsttensorbatch: sources of different formats and sizes into one batch tensor, every slot
//! bit-exact with edgefirsttensor alone on that source; a stalled live source filled on timeout
//! with the meta saying so; the batch following the linked pads.

mod common;

use common::*;
use gst::prelude::*;
use gstedgefirst::batch_meta::{BatchMeta, SLOT_FILLED};

const MODEL: &str = "model-width=64 model-height=48";

/// Every buffer an appsink named `sink` receives from `launch`, as bytes.
fn collect(launch: &str) -> Vec<gst::Buffer> {
    init();
    let p = gst::parse::launch(launch).unwrap_or_else(|e| panic!("{launch}: {e}"));
    let sink = p
        .downcast_ref::<gst::Bin>()
        .unwrap()
        .by_name("sink")
        .unwrap()
        .downcast::<gst_app::AppSink>()
        .unwrap();
    p.set_state(gst::State::Playing).unwrap();
    let mut out = Vec::new();
    while let Some(s) = sink.try_pull_sample(gst::ClockTime::from_seconds(10)) {
        out.push(s.buffer_owned().unwrap());
    }
    let bus = p.bus().unwrap();
    if let Some(m) = bus.pop_filtered(&[gst::MessageType::Error]) {
        if let gst::MessageView::Error(e) = m.view() {
            panic!("{launch}: {} {:?}", e.error(), e.debug());
        }
    }
    p.set_state(gst::State::Null).unwrap();
    out
}

/// The same source through edgefirsttensor alone: what each slot must hold.
fn alone(source: &str, extra: &str) -> Vec<Vec<u8>> {
    collect(&format!("{source} ! edgefirsttensor {MODEL} {extra} ! appsink name=sink sync=false"))
        .iter()
        .map(|b| b.map_readable().unwrap().to_vec())
        .collect()
}

/// `extra` is given to both elements; `batch_only` to the batch alone.
fn check_slots(sources: &[&str], extra: &str, batch_only: &str) {
    let mut launch =
        format!("edgefirsttensorbatch name=b {MODEL} {extra} {batch_only} ! appsink name=sink sync=false ");
    for (i, s) in sources.iter().enumerate() {
        launch += &format!(" {s} ! b.sink_{i}");
    }
    let batches = collect(&launch);
    assert_eq!(batches.len(), 3, "one batch per frame of the sources");
    let singles: Vec<Vec<Vec<u8>>> = sources.iter().map(|s| alone(s, extra)).collect();
    for (k, b) in batches.iter().enumerate() {
        let meta = *b.meta::<BatchMeta>().expect("a batch meta").info();
        assert_eq!(meta.n_slots as usize, sources.len());
        let slot = meta.slot_stride as usize;
        let m = b.map_readable().unwrap();
        assert_eq!(m.len(), slot * sources.len(), "one buffer for the whole batch");
        for (i, single) in singles.iter().enumerate() {
            assert_eq!(single[k].len(), slot);
            assert!(
                m[i * slot..(i + 1) * slot] == single[k][..],
                "batch {k} slot {i} equals edgefirsttensor alone"
            );
            let s = meta.slots()[i];
            assert_eq!((s.source, s.flags), (i as u32, 0));
            assert!(s.content_width > 0 && s.source_width > 0 && s.pts != u64::MAX);
        }
        let t = *b.meta::<gstedgefirst::TensorMeta>().expect("a tensor meta").info();
        assert_eq!(t.shape()[0], sources.len() as u64, "the batch is the outermost dimension");
    }
}

#[test]
fn two_sources_of_different_formats_and_sizes_are_bit_exact_slots() {
    check_slots(
        &[
            "videotestsrc num-buffers=3 ! video/x-raw,format=NV12,width=320,height=240",
            "videotestsrc num-buffers=3 pattern=ball ! video/x-raw,format=RGB,width=160,height=90",
        ],
        "",
        "",
    );
}

#[test]
fn four_sources_one_live_float32_chw_with_mean_std_on_two_threads() {
    // The live source's pattern is still (its frames do not depend on the clock), and the
    // latency is long enough that no batch leaves without it.
    check_slots(
        &[
            "videotestsrc num-buffers=3 ! video/x-raw,format=YUY2,width=128,height=96",
            "videotestsrc num-buffers=3 pattern=ball ! video/x-raw,format=RGBA,width=100,height=100",
            "videotestsrc num-buffers=3 is-live=true pattern=smpte75 ! video/x-raw,format=I420,width=96,height=64",
            "videotestsrc num-buffers=3 pattern=snow ! video/x-raw,format=NV21,width=64,height=128",
        ],
        "model-dtype=float32 model-layout=chw model-mean=0.485,0.456,0.406 model-std=0.229,0.224,0.225 n-threads=2",
        "latency=2000000000",
    );
}

#[test]
fn the_batch_follows_the_linked_pads_and_batch_size() {
    let one = collect(&format!(
        "edgefirsttensorbatch name=b {MODEL} ! appsink name=sink sync=false \
         videotestsrc num-buffers=2 ! video/x-raw,format=RGB,width=64,height=48 ! b.sink_0"
    ));
    assert_eq!(one[0].meta::<BatchMeta>().unwrap().info().n_slots, 1);
    // batch-size larger than the pads: the slots without a source are filled, and say so.
    let three = collect(&format!(
        "edgefirsttensorbatch name=b {MODEL} batch-size=3 ! appsink name=sink sync=false \
         videotestsrc num-buffers=2 ! video/x-raw,format=RGB,width=64,height=48 ! b.sink_0"
    ));
    let info = *three[0].meta::<BatchMeta>().unwrap().info();
    assert_eq!(info.n_slots, 3);
    assert_eq!(info.slots()[1].flags, SLOT_FILLED);
    let m = three[0].map_readable().unwrap();
    let slot = info.slot_stride as usize;
    assert!(m[slot..2 * slot].iter().all(|&b| b == 0x80), "the default fill colour, 0x808080, as uint8 RGB");
}

#[test]
fn a_stalled_live_source_is_filled_when_the_latency_runs_out() {
    init();
    let p = gst::parse::launch(&format!(
        "edgefirsttensorbatch name=b {MODEL} latency=50000000 ! appsink name=sink sync=false \
         videotestsrc is-live=true num-buffers=6 ! video/x-raw,format=RGB,width=64,height=48,framerate=30/1 ! b.sink_0 \
         appsrc name=stalled is-live=true min-latency=0 format=time caps=video/x-raw,format=RGB,width=32,height=24,framerate=30/1 ! b.sink_1"
    ))
    .unwrap();
    let bin = p.downcast_ref::<gst::Bin>().unwrap();
    let sink = bin.by_name("sink").unwrap().downcast::<gst_app::AppSink>().unwrap();
    p.set_state(gst::State::Playing).unwrap();
    // Under an emulated CPU (the kernel lane) the live source itself can miss the latency now and
    // then: count the batches that show the stalled slot filled beside a live frame, and require
    // that every filled slot holds the fill colour.
    let (mut filled, mut batches) = (0, 0);
    while let Some(s) = sink.try_pull_sample(gst::ClockTime::from_seconds(10)) {
        batches += 1;
        let b = s.buffer().unwrap();
        let info = *b.meta::<BatchMeta>().unwrap().info();
        assert_eq!(info.n_slots, 2);
        assert_ne!(info.slots()[1].flags, 0, "the stalled source never has a frame");
        let slot = info.slot_stride as usize;
        if info.slots()[1].flags == SLOT_FILLED {
            assert!(b.map_readable().unwrap()[slot..].iter().all(|&x| x == 0x80), "the fill colour");
            if info.slots()[0].flags == 0 {
                filled += 1;
            }
        }
        if batches == 6 {
            break;
        }
    }
    p.set_state(gst::State::Null).unwrap();
    assert!(batches >= 3, "batches leave without the stalled source ({batches})");
    assert!(filled >= 2, "the stalled slot is filled on timeout beside a live frame ({filled} of {batches})");
}

/// The element held in PAUSED while the rest of a live pipeline plays (the clock and latency are
/// known, its base time is not): no batch may leave on a deadline counted from a base time of 0.
/// Once it plays, with the only live source stalled and the other source's frames all queued,
/// only its own state change wakes the aggregator's thread: the batches must still leave.
#[test]
fn a_live_deadline_counts_from_playing_and_a_stalled_start_still_leaves() {
    init();
    let p = gst::parse::launch(&format!(
        "edgefirsttensorbatch name=b {MODEL} latency=100000000 ! appsink name=sink sync=false \
         videotestsrc num-buffers=3 ! video/x-raw,format=RGB,width=64,height=48,framerate=30/1 ! b.sink_0 \
         appsrc is-live=true min-latency=0 format=time caps=video/x-raw,format=RGB,width=32,height=24,framerate=30/1 ! b.sink_1"
    ))
    .unwrap();
    let bin = p.downcast_ref::<gst::Bin>().unwrap();
    let sink = bin.by_name("sink").unwrap().downcast::<gst_app::AppSink>().unwrap();
    let b = bin.by_name("b").unwrap();
    b.set_state(gst::State::Paused).unwrap();
    b.set_locked_state(true);
    p.set_state(gst::State::Playing).unwrap();
    let early = sink.try_pull_sample(gst::ClockTime::from_mseconds(500));
    assert!(early.is_none(), "a batch left while the element was PAUSED");
    b.set_base_time(p.base_time().unwrap());
    b.set_locked_state(false);
    b.sync_state_with_parent().unwrap();
    for k in 0..3 {
        let s = sink
            .try_pull_sample(gst::ClockTime::from_seconds(5))
            .unwrap_or_else(|| panic!("batch {k} never left: nothing woke the element once PLAYING"));
        let info = *s.buffer().unwrap().meta::<BatchMeta>().unwrap().info();
        assert_eq!((info.slots()[0].flags, info.slots()[1].flags), (0, SLOT_FILLED), "batch {k}");
    }
    p.set_state(gst::State::Null).unwrap();
}

/// Kernel lane (a DMA heap): the batch is one DMA-BUF from the edgefirst pool. On a host without
/// a heap the pool's memfd stands in, and the same single-memory check holds.
#[test]
fn the_batch_is_one_pool_memory_a_dmabuf_where_a_heap_exists() {
    let batches = collect(&format!(
        "edgefirsttensorbatch name=b {MODEL} ! appsink name=sink sync=false \
         videotestsrc num-buffers=2 ! video/x-raw,format=NV12,width=64,height=48 ! b.sink_0 \
         videotestsrc num-buffers=2 ! video/x-raw,format=RGB,width=32,height=32 ! b.sink_1"
    ));
    for b in &batches {
        assert_eq!(b.n_memory(), 1, "one memory for every slot");
        let mem = b.peek_memory(0);
        let heap = gstedgefirst::DmaBufAllocator::heap_of(mem).expect("from the edgefirst allocator");
        let fd = mem.downcast_memory_ref::<gst_allocators::DmaBufMemory>().expect("an fd memory").fd();
        let magic =
            edgefirst_tensor::import::fs_magic(unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) }).unwrap();
        if edgefirst_tensor::TensorMemory::DmaBuf.is_available() {
            assert_eq!(magic, edgefirst_tensor::import::DMA_BUF_MAGIC, "a real DMA-BUF from {heap}");
            eprintln!("kernel lane: the batch is one DMA-BUF from the {heap} heap");
        } else {
            assert_eq!(heap, "memfd");
        }
    }
}

/// ROI mode: regions of one frame, attached as GstVideoRegionOfInterestMeta (as a detector
/// does; a probe stands in for it here) or fixed by the `rois` property, each in its own slot —
/// bit-exact with edgefirsttensor's `source-region` crop of the same frame — the rest filled.
#[test]
fn roi_mode_crops_each_region_into_its_own_slot() {
    let regions = [(7, (10u32, 20u32, 100u32, 80u32)), (9, (200, 40, 64, 150))];
    let source = "videotestsrc num-buffers=2 pattern=smpte ! video/x-raw,format=NV12,width=320,height=240";
    // Fixed regions and a detector's, on one thread and on a band a slot.
    for (fixed, threads) in [(false, 1), (true, 1), (false, 3)] {
        init();
        let rois = if fixed { "rois=\"10,20,100,80;200,40,64,150\"" } else { "" };
        let p = gst::parse::launch(&format!(
            "edgefirsttensorbatch name=b {MODEL} max-rois=3 {rois} n-threads={threads} ! appsink name=sink sync=false \
             {source} ! identity name=detector ! b.sink_0"
        ))
        .unwrap();
        let bin = p.downcast_ref::<gst::Bin>().unwrap();
        if !fixed {
            bin.by_name("detector").unwrap().static_pad("src").unwrap().add_probe(
                gst::PadProbeType::BUFFER,
                move |_, info| {
                    if let Some(gst::PadProbeData::Buffer(b)) = info.data.as_mut() {
                        let b = b.make_mut();
                        for (id, (x, y, w, h)) in regions {
                            let mut m = gst_video::VideoRegionOfInterestMeta::add(b, "object", (x, y, w, h));
                            m.set_id(id);
                        }
                    }
                    gst::PadProbeReturn::Ok
                },
            );
        }
        let sink = bin.by_name("sink").unwrap().downcast::<gst_app::AppSink>().unwrap();
        p.set_state(gst::State::Playing).unwrap();
        let batch = sink.try_pull_sample(gst::ClockTime::from_seconds(10)).unwrap().buffer_owned().unwrap();
        p.set_state(gst::State::Null).unwrap();
        let info = *batch.meta::<BatchMeta>().unwrap().info();
        assert_eq!(info.n_slots, 3);
        let slot = info.slot_stride as usize;
        let m = batch.map_readable().unwrap();
        for (i, (id, (x, y, w, h))) in regions.iter().enumerate() {
            let want = alone(source, &format!("source-region={x},{y},{w},{h}"));
            assert!(
                m[i * slot..(i + 1) * slot] == want[0][..],
                "slot {i} equals the region through edgefirsttensor"
            );
            let s = info.slots()[i];
            assert_eq!(s.source, if fixed { i as u32 } else { *id as u32 }, "the slot names its ROI");
            assert_eq!((s.source_x, s.source_y, s.source_width, s.source_height), (*x, *y, *w, *h));
        }
        assert_eq!(info.slots()[2].flags, SLOT_FILLED, "slots past the regions are filled");
    }
}

/// A source at EOS does not stall the rest: its slot repeats its last frame (or is filled) and is
/// marked so, until every source has ended.
#[test]
fn eos_on_one_pad_does_not_stall_the_others() {
    for (policy, flag) in [("previous", gstedgefirst::batch_meta::SLOT_REPEATED), ("fill", SLOT_FILLED)] {
        let batches = collect(&format!(
            "edgefirsttensorbatch name=b {MODEL} missing-slot={policy} ! appsink name=sink sync=false \
             videotestsrc num-buffers=2 ! video/x-raw,format=RGB,width=64,height=48 ! b.sink_0 \
             videotestsrc num-buffers=5 pattern=ball ! video/x-raw,format=NV12,width=64,height=48 ! b.sink_1"
        ));
        assert_eq!(batches.len(), 5, "{policy}: the longer source runs to its end");
        let first = batches[1].map_readable().unwrap().to_vec();
        for (k, b) in batches.iter().enumerate() {
            let info = *b.meta::<BatchMeta>().unwrap().info();
            let want = if k < 2 { 0 } else { flag };
            assert_eq!(info.slots()[0].flags, want, "{policy}: batch {k}, slot 0");
            assert_eq!(info.slots()[1].flags, 0, "{policy}: batch {k}, slot 1 has its frame");
            if k >= 2 && policy == "previous" {
                let slot = info.slot_stride as usize;
                assert!(
                    b.map_readable().unwrap()[..slot] == first[..slot],
                    "the source's last frame, repeated"
                );
            }
        }
    }
}

/// Pads requested and released while PLAYING: the batch grows and shrinks with the linked
/// sources (batch-size unset), and the remaining sources keep their slots.
#[test]
fn pads_added_and_removed_while_playing() {
    init();
    let source = |pattern: &str| {
        gst::parse::bin_from_description(
            &format!(
                "videotestsrc is-live=true pattern={pattern} \
                 ! capsfilter caps=\"video/x-raw,format=RGB,width=64,height=48,framerate=30/1\""
            ),
            true,
        )
        .unwrap()
    };
    let p = gst::Pipeline::new();
    let batch = gst::ElementFactory::make("edgefirsttensorbatch")
        .property("model-width", 64u32)
        .property("model-height", 48u32)
        .build()
        .unwrap();
    let sink = gst_app::AppSink::builder().sync(false).build();
    let first = source("smpte");
    p.add_many([&batch, sink.upcast_ref(), first.upcast_ref()]).unwrap();
    batch.link(&sink).unwrap();
    first.static_pad("src").unwrap().link(&batch.request_pad_simple("sink_%u").unwrap()).unwrap();
    p.set_state(gst::State::Playing).unwrap();
    let slots = |n: usize| -> bool {
        // Within 30 s, a batch with n slots arrives (a bound in time, not in batches: the kernel
        // lane's emulated CPUs run the sources at their own pace).
        let end = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while std::time::Instant::now() < end {
            let got = sink.try_pull_sample(gst::ClockTime::from_seconds(5)).and_then(|s| {
                s.buffer().and_then(|b| b.meta::<BatchMeta>().map(|m| m.info().n_slots as usize))
            });
            if got == Some(n) {
                return true;
            }
        }
        false
    };
    assert!(slots(1));
    let second = source("ball");
    p.add(&second).unwrap();
    let pad = batch.request_pad_simple("sink_%u").unwrap();
    second.static_pad("src").unwrap().link(&pad).unwrap();
    second.sync_state_with_parent().unwrap();
    assert!(slots(2), "a pad added while playing is a new slot");
    second.set_state(gst::State::Null).unwrap();
    second.static_pad("src").unwrap().unlink(&pad).unwrap();
    batch.release_request_pad(&pad);
    p.remove(&second).unwrap();
    assert!(slots(1), "a released pad's slot goes");
    p.set_state(gst::State::Null).unwrap();
}
