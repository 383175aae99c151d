//! A bounded fuzz run of edgefirsttensor in real pipelines: random caps, property strings (valid,
//! malformed, extreme), buffers of random sizes in system memory or behind fds whose objects are
//! larger, smaller or not buffers at all, and GstVideoMeta offsets and strides from the plausible
//! to the absurd. Every case must end in frames, a refused start, or an element error; never a
//! panic (counted by a panic hook, since GStreamer's Rust bindings turn a panic inside a vfunc
//! into an error message) and never a crash. `EDGEFIRST_FUZZ_CASES` sets the count (default 2000),
//! `EDGEFIRST_FUZZ_SEED` the seed.

mod common;

use common::*;
use gst::prelude::*;
use gst_allocators::prelude::*;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};

static PANICS: AtomicUsize = AtomicUsize::new(0);

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len() as u64) as usize]
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// A number for a property string: small, edge or absurd.
fn number(r: &mut Rng) -> String {
    match r.below(8) {
        0 => "0".into(),
        1 => u64::MAX.to_string(),
        2 => (u64::MAX - r.below(100)).to_string(),
        3 => (usize::MAX / 2).to_string(),
        4 => "-1".into(),
        5 => "x".into(),
        _ => r.below(80).to_string(),
    }
}

fn float(r: &mut Rng) -> String {
    r.pick(&["0", "1", "0.5", "nan", "inf", "-inf", "1e-45", "1e38", "1e39", "-0", "0.229", "", "1,2", "a"])
        .to_string()
}

fn properties(r: &mut Rng) -> Vec<(&'static str, String)> {
    let mut p = Vec::new();
    for _ in 0..r.below(5) {
        let (name, value) = match r.below(13) {
            0 => ("model-width", r.pick(&["0", "1", "17", "64", "200"]).to_string()),
            1 => ("model-height", r.pick(&["0", "1", "33", "64", "160"]).to_string()),
            2 => (
                "model-dtype",
                r.pick(&["uint8", "int8", "uint16", "float16", "float32", "float64"]).to_string(),
            ),
            3 => ("model-colorspace", r.pick(&["rgb", "bgr", "gray", "rgba"]).to_string()),
            4 => ("model-layout", r.pick(&["hwc", "chw"]).to_string()),
            5 => ("fit", r.pick(&["letterbox", "stretch", "center-crop"]).to_string()),
            6 => ("interpolation", r.pick(&["bilinear", "nearest"]).to_string()),
            7 => ("model-mean", (0..r.below(4) + 1).map(|_| float(r)).collect::<Vec<_>>().join(",")),
            8 => ("model-std", (0..r.below(4) + 1).map(|_| float(r)).collect::<Vec<_>>().join(",")),
            9 => ("source-region", (0..r.below(2) + 3).map(|_| number(r)).collect::<Vec<_>>().join(",")),
            10 => ("model-quant-scale", r.pick(&["0", "1e-300", "0.0078125", "1e300", "2"]).to_string()),
            11 => ("n-threads", r.pick(&["1", "2", "3"]).to_string()),
            _ => ("import-cache-size", r.pick(&["0", "1", "32"]).to_string()),
        };
        p.push((name, value));
    }
    p
}

fn memfd(len: u64) -> OwnedFd {
    let fd = unsafe { libc::memfd_create(c"fuzz".as_ptr(), libc::MFD_CLOEXEC) };
    assert!(fd >= 0);
    assert_eq!(unsafe { libc::ftruncate(fd, len as libc::off_t) }, 0);
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// A frame for `info`: its memory, its size, and perhaps a GstVideoMeta, all of them perhaps lies.
fn buffer(r: &mut Rng, info: &gst_video::VideoInfo) -> gst::Buffer {
    let honest = info.size();
    let claimed = match r.below(5) {
        0 => r.below(honest as u64 + 1) as usize,
        1 => honest + r.below(256) as usize,
        _ => honest,
    }
    .max(1);
    let mut b = match r.below(4) {
        0 | 1 => gst::Buffer::with_size(claimed).unwrap(),
        2 => {
            let object = match r.below(3) {
                0 => r.below(claimed as u64),
                _ => claimed as u64 + r.below(64),
            };
            let fd = memfd(object);
            let mem = unsafe { gst_allocators::DmaBufAllocator::new().alloc_dmabuf(fd, claimed) }.unwrap();
            let mut b = gst::Buffer::new();
            b.get_mut().unwrap().append_memory(mem);
            b
        }
        _ => {
            let mut fds = [0; 2];
            assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
            drop(unsafe { OwnedFd::from_raw_fd(fds[1]) });
            let fd = unsafe { OwnedFd::from_raw_fd(fds[0]) };
            let mem = unsafe { gst_allocators::DmaBufAllocator::new().alloc_dmabuf(fd, claimed) }.unwrap();
            let mut b = gst::Buffer::new();
            b.get_mut().unwrap().append_memory(mem);
            b
        }
    };
    if r.chance(50) {
        let n = info.n_planes() as usize;
        let mut offsets: Vec<usize> = info.offset()[..n].to_vec();
        let mut strides: Vec<i32> = info.stride()[..n].to_vec();
        for i in 0..n {
            if r.chance(30) {
                offsets[i] = *r.pick(&[0, 1, usize::MAX, usize::MAX / 2, claimed, offsets[i] + 64]);
            }
            if r.chance(30) {
                strides[i] = *r.pick(&[0, -64, 1, i32::MAX, i32::MIN, strides[i] + 64, strides[i] / 2]);
            }
        }
        let (w, h) =
            if r.chance(10) { (info.width() + 1, info.height()) } else { (info.width(), info.height()) };
        let _ = gst_video::VideoMeta::add_full(
            b.get_mut().unwrap(),
            gst_video::VideoFrameFlags::empty(),
            info.format(),
            w,
            h,
            &offsets,
            &strides,
        );
    }
    b
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Outcome {
    Frames,
    Refused,
    Error,
}

/// Frames, a refusal or an element error: whichever, within a bounded wait.
fn run_case(r: &mut Rng) -> Outcome {
    let format = *r.pick(&gstedgefirst::video::FORMATS[..]);
    let (w, h) = (r.below(70) as u32 + 1, r.below(70) as u32 + 1);
    let info = gst_video::VideoInfo::builder(format, w, h).fps(gst::Fraction::new(30, 1)).build().unwrap();
    let pipeline = gst::Pipeline::new();
    let src = gst_app::AppSrc::builder().caps(&info.to_caps().unwrap()).format(gst::Format::Time).build();
    let el = gst::ElementFactory::make("edgefirsttensor").build().unwrap();
    let props = properties(r);
    for (name, value) in &props {
        el.set_property_from_str(name, value);
    }
    let sink = gst::ElementFactory::make("fakesink").property("sync", false).build().unwrap();
    pipeline.add_many([src.upcast_ref(), &el, &sink]).unwrap();
    gst::Element::link_many([src.upcast_ref(), &el, &sink]).unwrap();
    let mut outcome = Outcome::Refused;
    if pipeline.set_state(gst::State::Playing).is_ok() {
        for _ in 0..r.below(3) + 1 {
            if src.push_buffer(buffer(r, &info)).is_err() {
                break;
            }
        }
        let _ = src.end_of_stream();
        let bus = pipeline.bus().unwrap();
        let m = bus.timed_pop_filtered(
            gst::ClockTime::from_seconds(5),
            &[gst::MessageType::Eos, gst::MessageType::Error],
        );
        let m =
            m.unwrap_or_else(|| panic!("{format:?} {w}x{h} {props:?}: neither EOS nor an error within 5 s"));
        outcome = if m.type_() == gst::MessageType::Eos { Outcome::Frames } else { Outcome::Error };
    }
    pipeline.set_state(gst::State::Null).unwrap();
    outcome
}

#[test]
fn random_caps_properties_buffers_and_metas_never_panic_or_crash() {
    init();
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |p| {
        PANICS.fetch_add(1, Ordering::SeqCst);
        default_hook(p)
    }));
    let cases: u64 = std::env::var("EDGEFIRST_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2000);
    let seed: u64 =
        std::env::var("EDGEFIRST_FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x5eed_f00d);
    let mut r = Rng(seed | 1);
    let mut seen = std::collections::HashMap::new();
    for case in 0..cases {
        let state = r.0;
        *seen.entry(run_case(&mut r)).or_insert(0) += 1;
        assert_eq!(PANICS.load(Ordering::SeqCst), 0, "case {case} (rng state {state:#x}) panicked");
    }
    println!("{cases} cases: {seen:?}");
    if cases >= 100 {
        assert_eq!(seen.len(), 3, "every outcome is reached: {seen:?}");
    }
}
