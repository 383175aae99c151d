//! Per-frame cost of turning a 1920×1080 camera frame into a 640×640 letterboxed RGB model input:
//! edgefirsttensor (uint8, int8, float32 with mean/std) against the stock GStreamer chains that
//! produce the same picture, and against a memcpy of the same input + output bytes, all measured
//! in this one process: each case's figure is its fastest stretch of `FRAMES` consecutive frames
//! over five runs spread across the whole benchmark. Run with
//! `cargo bench -p gstedgefirst --bench convert` (release build); the table goes into
//! docs/benchmarks.md.

use gst::prelude::*;
use std::time::Instant;

const W: u32 = 1920;
const H: u32 = 1080;
/// Frames in one timed stretch.
const FRAMES: usize = 120;
/// Frames a run times, of which the fastest `FRAMES` in a row count.
const TIMED: usize = 3 * FRAMES;
const WARMUP: usize = 10;

/// ms per frame of the fastest `FRAMES` consecutive frames, from the instants each one ended.
/// This VM's noise comes in bursts (one case's runs differed by 1.3–1.9× here): a burst that
/// covers part of a run leaves its other stretches alone, where a whole-run mean would carry it.
fn best_stretch(ends: &[Instant]) -> f64 {
    ends.windows(FRAMES + 1).map(|w| (w[FRAMES] - w[0]).as_secs_f64()).fold(f64::MAX, f64::min) * 1000.0
        / FRAMES as f64
}

/// ms per frame of `chain` between an appsrc pushing one prepared frame repeatedly and a fakesink.
/// The sink keeps no last sample: one that holds the previous buffer makes every chain's output
/// pool alternate between two buffers, and a tensor consumer holds none once it has run.
fn measure(format: &str, chain: &str) -> f64 {
    let info = gst_video::VideoInfo::builder(gst_video::VideoFormat::from_string(format), W, H)
        .fps(gst::Fraction::new(30, 1))
        .build()
        .unwrap();
    let pipeline = gst::parse::launch(&format!(
        "appsrc name=src format=time ! {chain} ! fakesink name=sink sync=false enable-last-sample=false"
    ))
    .unwrap_or_else(|e| panic!("{chain}: {e}"))
    .downcast::<gst::Pipeline>()
    .unwrap();
    let src = pipeline.by_name("src").unwrap().downcast::<gst_app::AppSrc>().unwrap();
    src.set_caps(Some(&info.to_caps().unwrap()));
    src.set_max_buffers(4);
    src.set_block(true);
    let mut frame = gst::Buffer::with_size(info.size()).unwrap();
    {
        let mut m = frame.get_mut().unwrap().map_writable().unwrap();
        for (i, b) in m.iter_mut().enumerate() {
            *b = ((i * 131) ^ (i >> 11)) as u8;
        }
    }
    let ends = std::sync::Arc::new(std::sync::Mutex::new(Vec::with_capacity(WARMUP + TIMED)));
    {
        let ends = ends.clone();
        pipeline.by_name("sink").unwrap().static_pad("sink").unwrap().add_probe(
            gst::PadProbeType::BUFFER,
            move |_, _| {
                ends.lock().unwrap().push(Instant::now());
                gst::PadProbeReturn::Ok
            },
        );
    }
    pipeline.set_state(gst::State::Playing).unwrap();
    for i in 0..WARMUP + TIMED {
        let mut b = frame.copy();
        b.get_mut().unwrap().set_pts(gst::ClockTime::from_mseconds(33 * i as u64));
        src.push_buffer(b).unwrap();
    }
    src.end_of_stream().unwrap();
    let bus = pipeline.bus().unwrap();
    let msg = bus
        .timed_pop_filtered(
            gst::ClockTime::from_seconds(300),
            &[gst::MessageType::Eos, gst::MessageType::Error],
        )
        .unwrap();
    if let gst::MessageView::Error(e) = msg.view() {
        panic!("{chain}: {} {:?}", e.error(), e.debug());
    }
    pipeline.set_state(gst::State::Null).unwrap();
    let ends = ends.lock().unwrap();
    assert_eq!(ends.len(), WARMUP + TIMED, "{chain}: every pushed frame reaches the sink");
    // A frame's stretch starts where the frame before it ended.
    best_stretch(&ends[WARMUP - 1..])
}

/// ms to copy the input frame and the output tensor once (the floor any conversion pays to touch
/// its bytes).
fn memcpy_floor(input: usize, output: usize) -> f64 {
    let a = vec![1u8; input];
    let mut b = vec![0u8; input];
    let c = vec![1u8; output];
    let mut d = vec![0u8; output];
    let mut ends = vec![Instant::now()];
    for _ in 0..WARMUP + TIMED {
        b.copy_from_slice(std::hint::black_box(&a));
        d.copy_from_slice(std::hint::black_box(&c));
        ends.push(Instant::now());
    }
    std::hint::black_box((&b, &d));
    best_stretch(&ends[WARMUP..])
}

fn main() {
    gst::init().unwrap();
    gstedgefirst::plugin_register_static().unwrap();
    let ours = |dtype: &str, extra: &str, threads: u32| {
        format!("edgefirsttensor model-width=640 model-height=640 model-dtype={dtype} {extra} n-threads={threads} ! other/tensors")
    };
    let out = "video/x-raw,format=RGB,width=640,height=640";
    let mean_std = "model-mean=0.485,0.456,0.406 model-std=0.229,0.224,0.225";
    let chains: Vec<(&str, String)> = vec![
        ("videoconvertscale n-threads=1", format!("videoconvertscale add-borders=true n-threads=1 ! {out}")),
        (
            "videoscale ! videoconvert n-threads=1",
            format!("videoscale add-borders=true n-threads=1 ! video/x-raw,width=640,height=640 ! videoconvert n-threads=1 ! {out}"),
        ),
        ("videoconvertscale (default threads)", format!("videoconvertscale add-borders=true ! {out}")),
        (
            "videoscale ! videoconvert (default threads)",
            format!("videoscale add-borders=true ! video/x-raw,width=640,height=640 ! videoconvert ! {out}"),
        ),
        ("edgefirsttensor uint8", ours("uint8", "", 1)),
        ("edgefirsttensor int8", ours("int8", "", 1)),
        ("edgefirsttensor float32 + mean/std", ours("float32", mean_std, 1)),
        ("edgefirsttensor uint8, n-threads=2", ours("uint8", "", 2)),
        ("identity (the pipeline alone)", "identity".to_string()),
    ];
    // BENCH_FORMATS=NV12,YUY2 and BENCH_CHAINS=float32 (a part of the row names) run a subset.
    let only = std::env::var("BENCH_CHAINS").ok();
    let formats: Vec<String> = match std::env::var("BENCH_FORMATS") {
        Ok(list) => list.split(',').map(str::to_string).collect(),
        Err(_) => ["NV12", "YUY2", "RGBA"].map(str::to_string).to_vec(),
    };
    // Five rounds over every case, keeping each case's best: this VM's noise comes in bursts, and
    // spreading a case's runs over the whole benchmark keeps one burst from deciding it.
    let mut best = vec![vec![f64::MAX; chains.len() + 1]; formats.len()];
    for _round in 0..5 {
        for (f, format) in formats.iter().enumerate() {
            for (c, (name, chain)) in chains.iter().enumerate() {
                if only.as_ref().is_none_or(|o| name.contains(o.as_str())) {
                    best[f][c] = best[f][c].min(measure(format, chain));
                }
            }
            let in_bytes = gst_video::VideoInfo::builder(gst_video::VideoFormat::from_string(format), W, H)
                .build()
                .unwrap()
                .size();
            best[f][chains.len()] = best[f][chains.len()].min(memcpy_floor(in_bytes, 640 * 640 * 3));
        }
    }
    println!("| input | chain | ms/frame | vs videoconvertscale | vs videoscale ! videoconvert |");
    println!("|---|---|---:|---:|---:|");
    for (f, format) in formats.iter().enumerate() {
        let (vcs, vs) = (best[f][0], best[f][1]);
        let names = chains.iter().map(|(n, _)| *n).chain(std::iter::once("memcpy of input + output"));
        for (name, ms) in names.zip(&best[f]).filter(|(_, ms)| **ms < f64::MAX) {
            println!("| {format} | {name} | {ms:.3} | {} | {} |", ratio(vcs, *ms), ratio(vs, *ms));
        }
    }
    // The other two targets, per input: float32 over uint8, uint8 over the memcpy row.
    let row = |f: usize, part: &str| chains.iter().position(|(n, _)| n.contains(part)).map(|c| best[f][c]);
    println!();
    println!("| input | float32 / uint8 | uint8 / memcpy |");
    println!("|---|---:|---:|");
    for (f, format) in formats.iter().enumerate() {
        let (u8_ms, f32_ms) =
            (row(f, "edgefirsttensor uint8").unwrap_or(f64::MAX), row(f, "float32").unwrap_or(f64::MAX));
        println!("| {format} | {} | {} |", ratio(f32_ms, u8_ms), ratio(u8_ms, best[f][chains.len()]));
    }
}

/// `a / b` as a table cell, or a dash where either row was not run.
fn ratio(a: f64, b: f64) -> String {
    if a < f64::MAX && b < f64::MAX {
        format!("{:.2}x", a / b)
    } else {
        "–".into()
    }
}
