//! Per-frame cost of turning a camera frame into a 640×640 letterboxed RGB model input:
//! edgefirsttensor (uint8, int8, float32 with mean/std, two threads, the AVX2 level) against the
//! stock GStreamer chains that produce the same picture, libyuv's NV12 chain (NV12Scale +
//! NV12ToRAW, a reference row linked only into this benchmark), a memcpy row and a floor row, all
//! measured in this one process.
//!
//! Inputs:
//! - `hot`: one 1920×1080 frame in system memory pushed over and over (stays in cache, never
//!   mapped) — the old headline, kept as a reference;
//! - `camera xN`: N memfd frames wrapped once as DMA-BUF memories without KEEP_MAPPED, with a
//!   GstVideoMeta, pushed in rotation — what v4l2src and libcamerasrc hand over. With 32 frames
//!   (~100 MB of NV12) every frame comes from DRAM;
//! - the floor of a camera row: read the source rows a bilinear downscale reads and write the
//!   output tensor, over the same rotating frames, mapped once (as the issue defined it); the
//!   picture-only floor, the same reads with only the picture's rows written — all a tensor of
//!   the element's own pool takes once its padding is kept (`allocator::padding`); the every-row
//!   floor, the reads of a filter as wide as the downscale (`area`, `bilinear-antialias` read
//!   every row) and the picture written; and the float32 floor, the floor's reads with the
//!   float32 picture written;
//! - the traffic rows: the reads and writes of the floor, the every-row and the float32 floors
//!   with every line asked for ahead, which beside the floors give the bytes' own time that a
//!   target is checked against in the last table (each camera row's targets, `met`, `open` or
//!   `past traffic`).
//!
//! Each case's figure is its fastest stretch of `FRAMES` consecutive frames over five rounds
//! spread across the whole benchmark. Run with `cargo bench -p gstedgefirst --bench convert`
//! (release build); `BENCH_FORMATS=NV12,YUY2`, `BENCH_INPUTS=camera` and `BENCH_CHAINS=uint8,fast`
//! (parts of the names; `=name` for one row exactly) run a subset. The tables go into docs/benchmarks.md.
//!
//! The resampling rows: edgefirsttensor's `area` and `bilinear-antialias` beside its bilinear, and
//! fast_image_resize 6.1 (a dev-dependency, linked only into this benchmark) on the same frames:
//! `Convolution(Box)` and `Convolution(Bilinear)`, OpenCV's area and PIL's antialiased bilinear
//! filters, on NV12's planes then libyuv's NV12ToRAW, or on RGBA's pixels. Each chain's PSNR
//! against the library it matches (frame 0) is printed in the same run.

use gst::prelude::*;
use gst_allocators::prelude::*;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Instant;

const OUT: usize = 640;
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

#[derive(Clone, Copy, PartialEq)]
enum Input {
    Hot,
    Camera(usize),
}

impl Input {
    fn name(self) -> String {
        match self {
            Input::Hot => "hot".into(),
            Input::Camera(n) => format!("camera x{n}"),
        }
    }
}

/// Frames of one input: memfds mapped once (for the rows that read them directly) and the
/// GStreamer buffers wrapping them.
struct Frames {
    info: gst_video::VideoInfo,
    maps: Vec<&'static [u8]>,
    buffers: Vec<gst::Buffer>,
    /// The hot frame's bytes (the reference rows read them as the camera rows read `maps`).
    hot: Vec<u8>,
}

impl Frames {
    /// The bytes of frame `i` in rotation.
    fn bytes(&self, i: usize) -> &[u8] {
        match self.maps.is_empty() {
            true => &self.hot,
            false => self.maps[i % self.maps.len()],
        }
    }
}

fn frames(format: &str, w: u32, h: u32, input: Input) -> Frames {
    let info = gst_video::VideoInfo::builder(gst_video::VideoFormat::from_string(format), w, h)
        .fps(gst::Fraction::new(30, 1))
        .build()
        .unwrap();
    let size = info.size();
    let n = match input {
        Input::Hot => 1,
        Input::Camera(n) => n,
    };
    let alloc = gst_allocators::DmaBufAllocator::new();
    let (mut maps, mut buffers, mut hot) = (Vec::new(), Vec::new(), Vec::new());
    for k in 0..n {
        let bytes: Vec<u8> = (0..size).map(|i| ((i * 131) ^ (i >> 11) ^ (k * 7919)) as u8).collect();
        if input == Input::Hot {
            hot = bytes.clone();
            buffers.push(gst::Buffer::from_slice(bytes));
            continue;
        }
        let fd = unsafe { OwnedFd::from_raw_fd(libc::memfd_create(c"frame".as_ptr(), libc::MFD_CLOEXEC)) };
        assert_eq!(unsafe { libc::write(fd.as_raw_fd(), bytes.as_ptr().cast(), size) }, size as isize);
        let m = unsafe {
            libc::mmap(std::ptr::null_mut(), size, libc::PROT_READ, libc::MAP_SHARED, fd.as_raw_fd(), 0)
        };
        assert_ne!(m, libc::MAP_FAILED);
        let map = unsafe { std::slice::from_raw_parts(m as *const u8, size) };
        // Populated now, as the element's kept mapping is during the warm-up: no row times a
        // page's first fault.
        std::hint::black_box(map.iter().step_by(4096).fold(0u8, |a, &b| a ^ b));
        maps.push(map);
        let mem = unsafe { alloc.alloc_dmabuf(fd, size) }.unwrap();
        let mut b = gst::Buffer::new();
        {
            let b = b.get_mut().unwrap();
            b.append_memory(mem);
            let n = info.n_planes() as usize;
            gst_video::VideoMeta::add_full(
                b,
                gst_video::VideoFrameFlags::empty(),
                info.format(),
                w,
                h,
                &info.offset()[..n],
                &info.stride()[..n],
            )
            .unwrap();
        }
        buffers.push(b);
    }
    Frames { info, maps, buffers, hot }
}

/// ms per frame of `chain` between an appsrc pushing `frames` in rotation and a fakesink. The
/// sink keeps no last sample: one that holds the previous buffer makes every chain's output pool
/// alternate between two buffers, and a tensor consumer holds none once it has run.
fn measure(frames: &Frames, chain: &str, simd: Option<&str>) -> (f64, f64) {
    match simd {
        Some(level) => std::env::set_var("EDGEFIRST_CONVERT_SIMD", level),
        None => std::env::remove_var("EDGEFIRST_CONVERT_SIMD"),
    }
    let pipeline = gst::parse::launch(&format!(
        "appsrc name=src format=time ! {chain} ! fakesink name=sink sync=false enable-last-sample=false"
    ))
    .unwrap_or_else(|e| panic!("{chain}: {e}"))
    .downcast::<gst::Pipeline>()
    .unwrap();
    let src = pipeline.by_name("src").unwrap().downcast::<gst_app::AppSrc>().unwrap();
    src.set_caps(Some(&frames.info.to_caps().unwrap()));
    // Every frame of the run is queued before it starts. A limited queue blocks the app thread's
    // push at its limit (max-bytes' default, 200 000, is less than one frame), and each pop then
    // wakes it: the streaming thread paid that cross-CPU wake on every frame, 0.034 ms on this
    // VM (measured between the element's src-pad push and its next input), which a v4l2src
    // thread dequeuing its own frames does not. The buffers are references to the frames' memories.
    src.set_max_buffers(0);
    src.set_max_bytes(0);
    src.set_max_time(gst::ClockTime::ZERO);
    // Every camera buffer once before timing: its first use imports and maps it.
    let warmup = WARMUP.max(frames.buffers.len() + 2);
    let ends = std::sync::Arc::new(std::sync::Mutex::new(Vec::with_capacity(warmup + TIMED)));
    // The process's minor faults once the warm-up frames have passed the sink.
    let warm_faults = std::sync::Arc::new(std::sync::atomic::AtomicI64::new(0));
    {
        let (ends, warm_faults) = (ends.clone(), warm_faults.clone());
        pipeline.by_name("sink").unwrap().static_pad("sink").unwrap().add_probe(
            gst::PadProbeType::BUFFER,
            move |_, _| {
                let mut ends = ends.lock().unwrap();
                if ends.len() == warmup - 1 {
                    warm_faults.store(minor_faults(), std::sync::atomic::Ordering::Relaxed);
                }
                ends.push(Instant::now());
                gst::PadProbeReturn::Ok
            },
        );
    }
    pipeline.set_state(gst::State::Paused).unwrap();
    // The same memory again under a new buffer, as a driver's queue recycles it (the hot frame:
    // one system-memory frame, pushed over and over).
    for i in 0..warmup + TIMED {
        let mut b = frames.buffers[i % frames.buffers.len()].copy();
        b.get_mut().unwrap().set_pts(gst::ClockTime::from_mseconds(33 * i as u64));
        src.push_buffer(b).unwrap();
    }
    src.end_of_stream().unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    let msg = pipeline
        .bus()
        .unwrap()
        .timed_pop_filtered(
            gst::ClockTime::from_seconds(300),
            &[gst::MessageType::Eos, gst::MessageType::Error],
        )
        .unwrap();
    if let gst::MessageView::Error(e) = msg.view() {
        panic!("{chain}: {} {:?}", e.error(), e.debug());
    }
    let faults = minor_faults() - warm_faults.load(std::sync::atomic::Ordering::Relaxed);
    pipeline.set_state(gst::State::Null).unwrap();
    std::env::remove_var("EDGEFIRST_CONVERT_SIMD");
    let ends = ends.lock().unwrap();
    assert_eq!(ends.len(), warmup + TIMED, "{chain}: every pushed frame reaches the sink");
    (best_stretch(&ends[warmup - 1..]), faults as f64 / TIMED as f64)
}

/// Minor page faults of the whole process so far (every thread of the pipeline included).
fn minor_faults() -> i64 {
    let mut u = unsafe { std::mem::zeroed::<libc::rusage>() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    u.ru_minflt
}

mod refs;
use refs::*;

struct Row {
    format: String,
    size: (u32, u32),
    input: Input,
    name: String,
    ms: f64,
    /// Minor page faults per timed frame, the whole process (fewest over the rounds).
    faults: Option<f64>,
}

/// The rows measured outside GStreamer, after the chains', in this order.
#[derive(Clone, Copy)]
enum Reference {
    Memcpy,
    Floor,
    PictureFloor,
    Libyuv,
    EveryRow,
    FirBox,
    FirBilinear,
    Float32Floor,
    Traffic,
    Float32Traffic,
    EveryRowTraffic,
}

impl Reference {
    const ALL: [Reference; 11] = [
        Reference::Memcpy,
        Reference::Floor,
        Reference::PictureFloor,
        Reference::Libyuv,
        Reference::EveryRow,
        Reference::FirBox,
        Reference::FirBilinear,
        Reference::Float32Floor,
        Reference::Traffic,
        Reference::Float32Traffic,
        Reference::EveryRowTraffic,
    ];

    /// What a floor or traffic row reads and writes (`refs::Bytes`); `None` for the others.
    fn bytes(self) -> Option<Bytes> {
        let b = |every_row, float32, asked, picture| Some(Bytes { every_row, float32, asked, picture });
        // The rows that judge `past traffic` write the picture alone, as the element does.
        match self {
            Reference::Floor => b(false, false, false, false),
            Reference::PictureFloor => b(false, false, false, true),
            Reference::EveryRow => b(true, false, false, true),
            Reference::Float32Floor => b(false, true, false, true),
            Reference::Traffic => b(false, false, true, false),
            Reference::Float32Traffic => b(false, true, true, true),
            Reference::EveryRowTraffic => b(true, false, true, true),
            Reference::Memcpy | Reference::Libyuv | Reference::FirBox | Reference::FirBilinear => None,
        }
    }

    /// The row's name in the tables (the tables find rows by parts of these).
    fn name(self, nv12: bool) -> String {
        match self {
            Reference::Memcpy => "memcpy of input + output (hot)".into(),
            Reference::Floor => "floor: read the filter's rows + write the output".into(),
            Reference::PictureFloor => {
                "picture-only floor: the filter's rows read + the picture alone written".into()
            }
            Reference::Libyuv => "libyuv NV12Scale + NV12ToRAW".into(),
            Reference::EveryRow => "every-row floor: read every source row + write the picture".into(),
            Reference::FirBox => fir_name(fast_image_resize::FilterType::Box, nv12),
            Reference::FirBilinear => fir_name(fast_image_resize::FilterType::Bilinear, nv12),
            Reference::Float32Floor => "float32 floor: the floor's reads + write the float32 picture".into(),
            Reference::Traffic => {
                "bilinear traffic: the filter's rows read with asks ahead + write the output".into()
            }
            Reference::Float32Traffic => {
                "float32 traffic: the filter's rows read with asks ahead + write the float32 picture".into()
            }
            Reference::EveryRowTraffic => {
                "every-row traffic: every row read with asks ahead + write the picture".into()
            }
        }
    }
}

fn main() {
    gst::init().unwrap();
    gstedgefirst::plugin_register_static().unwrap();
    let ours = |dtype: &str, extra: &str, threads: u32| {
        format!("edgefirsttensor model-width=640 model-height=640 model-dtype={dtype} {extra} n-threads={threads} ! other/tensors")
    };
    let out = "video/x-raw,format=RGB,width=640,height=640";
    let mean_std = "model-mean=0.485,0.456,0.406 model-std=0.229,0.224,0.225";
    let chains: Vec<(&str, String, Option<&str>)> = vec![
        ("videoconvertscale n-threads=1", format!("videoconvertscale add-borders=true n-threads=1 ! {out}"), None),
        (
            "videoscale ! videoconvert n-threads=1",
            format!("videoscale add-borders=true n-threads=1 ! video/x-raw,width=640,height=640 ! videoconvert n-threads=1 ! {out}"),
            None,
        ),
        ("edgefirsttensor uint8", ours("uint8", "", 1), None),
        ("edgefirsttensor int8", ours("int8", "", 1), None),
        ("edgefirsttensor float32 + mean/std", ours("float32", mean_std, 1), None),
        ("edgefirsttensor uint8, n-threads=2", ours("uint8", "", 2), None),
        ("edgefirsttensor uint8, AVX2 level", ours("uint8", "", 1), Some("avx2")),
        ("edgefirsttensor uint8 area", ours("uint8", "interpolation=area", 1), None),
        ("edgefirsttensor uint8 bilinear-antialias", ours("uint8", "interpolation=bilinear-antialias", 1), None),
        ("edgefirsttensor uint8 area, AVX2 level", ours("uint8", "interpolation=area", 1), Some("avx2")),
        (
            "edgefirsttensor uint8 bilinear-antialias, AVX2 level",
            ours("uint8", "interpolation=bilinear-antialias", 1),
            Some("avx2"),
        ),
    ];
    let pick = |var: &str, default: &[&str]| -> Vec<String> {
        match std::env::var(var) {
            Ok(list) => list.split(',').map(str::to_string).collect(),
            Err(_) => default.iter().map(|s| s.to_string()).collect(),
        }
    };
    // Parts of the names, comma-separated: a row runs where its name contains one of them.
    let only_chain: Option<Vec<String>> =
        std::env::var("BENCH_CHAINS").ok().map(|v| v.split(',').map(str::to_string).collect());
    // (`=name` for exactly that row.)
    let chain_wanted = |name: &str| {
        only_chain.as_ref().is_none_or(|o| {
            o.iter().any(|p| p.strip_prefix('=').map_or(name.contains(p.as_str()), |exact| exact == name))
        })
    };
    let only_input = std::env::var("BENCH_INPUTS").ok();
    // 1920×1080 is an exact 3× downscale to 640 wide; 1600×900 (2.5×) is not.
    let mut cases: Vec<(String, (u32, u32), Input)> = Vec::new();
    for format in pick("BENCH_FORMATS", &["NV12", "YUY2", "RGBA"]) {
        for input in [Input::Hot, Input::Camera(8), Input::Camera(32)] {
            cases.push((format.clone(), (1920, 1080), input));
        }
        cases.push((format.clone(), (1600, 900), Input::Camera(8)));
    }
    cases.retain(|(_, _, input)| only_input.as_ref().is_none_or(|o| input.name().contains(o.as_str())));
    let fir_filters = [fast_image_resize::FilterType::Box, fast_image_resize::FilterType::Bilinear];
    // The chains' rows, then the references' (`Reference`).
    let mut best: Vec<Vec<f64>> = vec![vec![f64::MAX; chains.len() + Reference::ALL.len()]; cases.len()];
    let mut psnrs: Vec<Vec<(String, f64, &str)>> = vec![Vec::new(); cases.len()];
    let mut faults: Vec<Vec<f64>> = vec![vec![f64::MAX; chains.len()]; cases.len()];
    // Five rounds over every case, keeping each case's best: this VM's noise comes in bursts, and
    // spreading a case's runs over the whole benchmark keeps one burst from deciding it.
    for _round in 0..5 {
        for (k, (format, (w, h), input)) in cases.iter().enumerate() {
            let fr = frames(format, *w, *h, *input);
            for (c, (name, chain, simd)) in chains.iter().enumerate() {
                if chain_wanted(name) {
                    let (ms, f) = measure(&fr, chain, *simd);
                    best[k][c] = best[k][c].min(ms);
                    faults[k][c] = faults[k][c].min(f);
                }
            }
            let mut keep = |r: Reference, ms: f64| {
                let at = &mut best[k][chains.len() + r as usize];
                *at = at.min(ms);
            };
            match input {
                Input::Hot => keep(Reference::Memcpy, memcpy_floor(fr.info.size(), OUT * OUT * 3)),
                Input::Camera(_) => {
                    for r in Reference::ALL {
                        if let Some(b) = r.bytes() {
                            keep(r, bytes_time(&fr, b));
                        }
                    }
                    if format == "NV12" {
                        keep(Reference::Libyuv, libyuv_nv12(&fr));
                    }
                }
            }
            let referenced = format == "NV12" || format == "RGBA";
            for (r, filter) in [Reference::FirBox, Reference::FirBilinear].into_iter().zip(fir_filters) {
                if referenced && chain_wanted(&fir_name(filter, format == "NV12")) {
                    keep(r, fir(&fr, filter));
                }
            }
            if referenced && psnrs[k].is_empty() {
                psnrs[k] = psnr_rows(&fr.info);
            }
            for m in &fr.maps {
                unsafe { libc::munmap(m.as_ptr() as *mut _, m.len()) };
            }
        }
    }
    let mut rows = Vec::new();
    for (k, (format, size, input)) in cases.iter().enumerate() {
        let names = chains
            .iter()
            .map(|(n, _, _)| n.to_string())
            .chain(Reference::ALL.iter().map(|r| r.name(format == "NV12")));
        for (c, (name, &ms)) in names.zip(&best[k]).enumerate() {
            if ms < f64::MAX {
                let faults = faults[k].get(c).copied().filter(|f| *f < f64::MAX);
                rows.push(Row { format: format.clone(), size: *size, input: *input, name, ms, faults });
            }
        }
    }
    println!("| input | frames | chain | ms/frame | vs videoconvertscale | faults/frame |");
    println!("|---|---|---|---:|---:|---:|");
    let get = |k: usize, part: &str| -> f64 {
        let (format, size, input) = &cases[k];
        rows.iter()
            .find(|r| &r.format == format && r.size == *size && r.input == *input && r.name.contains(part))
            .map_or(f64::MAX, |r| r.ms)
    };
    for (k, (format, (w, h), input)) in cases.iter().enumerate() {
        let vcs = get(k, "videoconvertscale");
        for r in rows.iter().filter(|r| &r.format == format && r.size == (*w, *h) && r.input == *input) {
            let faults = r.faults.map_or("–".to_string(), |f| format!("{f:.1}"));
            println!(
                "| {format} {w}×{h} | {} | {} | {:.3} | {} | {faults} |",
                input.name(),
                r.name,
                r.ms,
                ratio(vcs, r.ms)
            );
        }
    }
    println!();
    // The float32 floor over the uint8 one: what writing four bytes a value instead of one costs
    // a row by itself, the part of float32 / uint8 no kernel can take back on one core.
    println!("| input | frames | uint8 / floor | uint8 / picture-only floor | float32 / uint8 | float32 floor / picture-only floor | 1 thread / 2 threads | libyuv / uint8 | libyuv / uint8 AVX2 | uint8 / memcpy (hot) |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (k, (format, (w, h), input)) in cases.iter().enumerate() {
        let u8_ms = get(k, "edgefirsttensor uint8");
        println!(
            "| {format} {w}×{h} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            input.name(),
            ratio(u8_ms, get(k, "floor: read the filter's")),
            ratio(u8_ms, get(k, "picture-only floor")),
            ratio(get(k, "edgefirsttensor float32"), u8_ms),
            ratio(get(k, "float32 floor"), get(k, "picture-only floor")),
            ratio(u8_ms, get(k, "n-threads=2")),
            ratio(get(k, "libyuv"), u8_ms),
            ratio(get(k, "libyuv"), get(k, "AVX2")),
            ratio(u8_ms, get(k, "memcpy")),
        );
    }
    resampling_tables(&cases, &get, &psnrs);
    targets_table(&cases, &get);
}

/// Each camera row's speed targets (issues 13 and 15) as this run found them: `met` or `open`
/// with the ratio the target is stated in, or `past traffic` where the target leaves the chain
/// less time than the reads and writes it cannot do without took in this run with no arithmetic
/// at all (the faster of the floor row and the traffic row, which asks for its lines ahead):
/// float32 ≤ 1.3× uint8 where 1.3× uint8 is under the float32 floor or traffic; `area` or
/// `bilinear-antialias` ≤ 2× bilinear where twice bilinear is under the every-row floor or
/// traffic; ≥ 3× faster than a fast_image_resize chain where a third of it is. Measured, not
/// proven: a cleverer read may go under both rows, so a `past traffic` close to its target says
/// little. The traffic columns say how far the asks take the same bytes under each floor.
fn targets_table(cases: &[(String, (u32, u32), Input)], get: &dyn Fn(usize, &str) -> f64) {
    let ran = |v: f64| v < f64::MAX;
    // `value` against `target` (`at_most`: value ≤ target, else ≥); `past`: the traffic rules it out.
    let cell = |value: f64, target: f64, at_most: bool, past: bool| {
        if !value.is_finite() || value <= 0.0 {
            return "–".to_string();
        }
        let met = if at_most { value <= target } else { value >= target };
        let word = match (met, past) {
            (true, _) => "met",
            (false, true) => "past traffic",
            (false, false) => "open",
        };
        format!("{word} {value:.2}")
    };
    let by = |a: f64, b: f64| if ran(a) && ran(b) { a / b } else { f64::NAN };
    // `allowed` (the most time the target leaves) under `traffic`.
    let under = |allowed: f64, traffic: f64| ran(traffic) && allowed.is_finite() && allowed < traffic;
    println!();
    println!("| input | frames | uint8 ≤ 1.5× floor | float32 ≤ 1.3× uint8 | 2 threads ≥ 1.6× | libyuv / uint8 ≥ 1 | libyuv / AVX2 level ≥ 1 | area ≤ 2× bilinear | antialias ≤ 2× bilinear | fir Box / area ≥ 3 | fir Bilinear / antialias ≥ 3 | traffic / floor | float32 traffic / uint8 | every-row traffic / every-row floor |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---:|---:|---:|");
    for (k, (format, (w, h), input)) in cases.iter().enumerate() {
        if *input == Input::Hot {
            continue;
        }
        let (u8_ms, floor) = (get(k, "edgefirsttensor uint8"), get(k, "floor: read the filter's"));
        let (area, aa) = (get(k, "uint8 area"), get(k, "uint8 bilinear-antialias"));
        let (fir_box, fir_bilinear) = (get(k, "Convolution(Box)"), get(k, "Convolution(Bilinear)"));
        // The bytes' own time: the faster of the plain and the asked-ahead reads.
        let f32_traffic = get(k, "float32 traffic").min(get(k, "float32 floor"));
        let every = get(k, "every-row traffic").min(get(k, "every-row floor"));
        let u8_ok = ran(u8_ms);
        println!(
            "| {format} {w}×{h} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            input.name(),
            cell(by(u8_ms, floor), 1.5, true, false),
            cell(
                by(get(k, "edgefirsttensor float32"), u8_ms),
                1.3,
                true,
                u8_ok && under(1.3 * u8_ms, f32_traffic)
            ),
            cell(by(u8_ms, get(k, "n-threads=2")), 1.6, false, false),
            cell(by(get(k, "libyuv"), u8_ms), 1.0, false, false),
            cell(by(get(k, "libyuv"), get(k, "AVX2 level")), 1.0, false, false),
            cell(by(area, u8_ms), 2.0, true, u8_ok && under(2.0 * u8_ms, every)),
            cell(by(aa, u8_ms), 2.0, true, u8_ok && under(2.0 * u8_ms, every)),
            cell(by(fir_box, area), 3.0, false, ran(fir_box) && under(fir_box / 3.0, every)),
            cell(by(fir_bilinear, aa), 3.0, false, ran(fir_bilinear) && under(fir_bilinear / 3.0, every)),
            ratio(get(k, "bilinear traffic"), floor),
            ratio(get(k, "float32 traffic"), u8_ms),
            ratio(get(k, "every-row traffic"), get(k, "every-row floor")),
        );
    }
}

/// The resampling presets against bilinear and against the fast_image_resize chains that match
/// the same libraries, and each chain's PSNR against its library (frame 0).
fn resampling_tables(
    cases: &[(String, (u32, u32), Input)],
    get: &dyn Fn(usize, &str) -> f64,
    psnrs: &[Vec<(String, f64, &str)>],
) {
    println!();
    // The every-row floor: what reading every row with plain loads and writing the output costs.
    // Not a bound on 32 rotating frames: RGBA `area`, which reads every row too, takes less
    // (its blocks ask for the next rows' lines; the floor's loads wait on each row's first ones).
    println!("| input | frames | bilinear | area | bilinear-antialias | every-row floor | area / bilinear | antialias / bilinear | every-row floor / bilinear | fir Box / area | fir Bilinear / antialias | fir Box / every-row floor | fir Bilinear / every-row floor |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (k, (format, (w, h), input)) in cases.iter().enumerate() {
        let bilinear = get(k, "edgefirsttensor uint8");
        let (area, aa) = (get(k, "uint8 area"), get(k, "uint8 bilinear-antialias"));
        let every = get(k, "every-row floor");
        let (fir_box, fir_bilinear) = (get(k, "Convolution(Box)"), get(k, "Convolution(Bilinear)"));
        let ms = |v: f64| if v < f64::MAX { format!("{v:.3}") } else { "–".into() };
        println!(
            "| {format} {w}×{h} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            input.name(),
            ms(bilinear),
            ms(area),
            ms(aa),
            ms(every),
            ratio(area, bilinear),
            ratio(aa, bilinear),
            ratio(every, bilinear),
            ratio(fir_box, area),
            ratio(fir_bilinear, aa),
            ratio(fir_box, every),
            ratio(fir_bilinear, every),
        );
    }
    println!();
    println!("| input | chain | PSNR against | dB |");
    println!("|---|---|---|---:|");
    // Frame 0 is the same picture for every input of a format and size: its rows once.
    let mut shown = Vec::new();
    for (k, (format, (w, h), _)) in cases.iter().enumerate() {
        if shown.contains(&(format, w, h)) {
            continue;
        }
        shown.push((format, w, h));
        for (name, db, library) in &psnrs[k] {
            println!("| {format} {w}×{h} | {name} | {library} | {db:.1} |");
        }
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
