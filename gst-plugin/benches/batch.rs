//! Four 1920×1080 NV12 cameras into a 4 × 640×640 RGB uint8 batch: edgefirsttensorbatch on one and
//! two threads against four separate edgefirsttensor chains making the same four tensors, in one
//! process. Each source is an appsrc holding its own system-memory frame `FRAMES` times, queued
//! before the run starts; a run is timed from PLAYING to EOS, best of three. Run with
//! `cargo bench -p gstedgefirst --bench batch`.

use gst::prelude::*;
use std::time::Instant;

const FRAMES: usize = 200;

fn frame(k: usize) -> gst::Buffer {
    let info = gst_video::VideoInfo::builder(gst_video::VideoFormat::Nv12, 1920, 1080).build().unwrap();
    let bytes: Vec<u8> = (0..info.size()).map(|i| ((i * 131) ^ (i >> 11) ^ (k * 7919)) as u8).collect();
    gst::Buffer::from_slice(bytes)
}

/// Seconds for `FRAMES` frames from each of the four appsrcs named src0..src3 through `launch`.
fn run(launch: &str) -> f64 {
    let p = gst::parse::launch(launch).unwrap_or_else(|e| panic!("{launch}: {e}"));
    let bin = p.downcast_ref::<gst::Bin>().unwrap();
    let caps = gst_video::VideoInfo::builder(gst_video::VideoFormat::Nv12, 1920, 1080)
        .fps(gst::Fraction::new(30, 1))
        .build()
        .unwrap()
        .to_caps()
        .unwrap();
    let srcs: Vec<gst_app::AppSrc> = (0..4)
        .map(|k| {
            let s = bin.by_name(&format!("src{k}")).unwrap().downcast::<gst_app::AppSrc>().unwrap();
            s.set_caps(Some(&caps));
            s.set_format(gst::Format::Time);
            // Every frame of the run is queued before it starts (references to one frame's
            // memory): four app threads blocked at a small queue's limit, each woken by every
            // pop, took the two cores from the conversion (n-threads=2 0.707 ms a batch against
            // 0.427 for four chains, measured with a limit of four buffers).
            s.set_max_buffers(0);
            s.set_max_bytes(0);
            s.set_max_time(gst::ClockTime::ZERO);
            s
        })
        .collect();
    let frames: Vec<gst::Buffer> = (0..4).map(frame).collect();
    p.set_state(gst::State::Paused).unwrap();
    for (src, f) in srcs.iter().zip(&frames) {
        for i in 0..FRAMES {
            let mut b = f.copy();
            b.get_mut().unwrap().set_pts(gst::ClockTime::from_mseconds(33 * i as u64));
            src.push_buffer(b).unwrap();
        }
        src.end_of_stream().unwrap();
    }
    p.set_state(gst::State::Playing).unwrap();
    let start = Instant::now();
    let bus = p.bus().unwrap();
    let msg = bus
        .timed_pop_filtered(
            gst::ClockTime::from_seconds(300),
            &[gst::MessageType::Eos, gst::MessageType::Error],
        )
        .unwrap();
    if let gst::MessageView::Error(e) = msg.view() {
        panic!("{launch}: {} {:?}", e.error(), e.debug());
    }
    let secs = start.elapsed().as_secs_f64();
    p.set_state(gst::State::Null).unwrap();
    secs
}

fn main() {
    gst::init().unwrap();
    gstedgefirst::plugin_register_static().unwrap();
    let model = "model-width=640 model-height=640";
    let batch = |threads: u32| {
        let mut l = format!("edgefirsttensorbatch name=b {model} n-threads={threads} ! fakesink sync=false");
        for k in 0..4 {
            l += &format!(" appsrc name=src{k} ! b.sink_{k}");
        }
        l
    };
    let mut separate = String::new();
    for k in 0..4 {
        separate += &format!(" appsrc name=src{k} ! edgefirsttensor {model} ! fakesink sync=false");
    }
    let rows = [
        ("edgefirsttensorbatch, n-threads=1", batch(1)),
        ("edgefirsttensorbatch, n-threads=2", batch(2)),
        ("4 separate edgefirsttensor chains", separate),
    ];
    let best: Vec<f64> = rows.iter().map(|(_, l)| (0..3).map(|_| run(l)).fold(f64::MAX, f64::min)).collect();
    println!("| chain | batches (4 tensors) per second | ms per batch | vs 4 chains |");
    println!("|---|---:|---:|---:|");
    for ((name, _), secs) in rows.iter().zip(&best) {
        println!(
            "| {name} | {:.0} | {:.3} | {:.2}x |",
            FRAMES as f64 / secs,
            secs * 1000.0 / FRAMES as f64,
            best[2] / secs
        );
    }
}
