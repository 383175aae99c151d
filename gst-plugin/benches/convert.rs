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
//!   output tensor, over the same rotating frames, mapped once.
//!
//! Each case's figure is its fastest stretch of `FRAMES` consecutive frames over five rounds
//! spread across the whole benchmark. Run with `cargo bench -p gstedgefirst --bench convert`
//! (release build); `BENCH_FORMATS=NV12,YUY2`, `BENCH_INPUTS=camera` and `BENCH_CHAINS=uint8,fast`
//! (parts of the names) run a subset. The tables go into docs/benchmarks.md.
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
    fds: Vec<OwnedFd>,
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
    let (mut fds, mut maps, mut buffers, mut hot) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
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
        let mem = unsafe { alloc.alloc_dmabuf(fd.try_clone().unwrap(), size) }.unwrap();
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
        fds.push(fd);
        buffers.push(b);
    }
    Frames { info, fds, maps, buffers, hot }
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
    src.set_max_buffers(4);
    src.set_block(true);
    // Every camera buffer once before timing: its first use imports and maps it.
    let warmup = WARMUP.max(frames.buffers.len() + 2);
    let ends = std::sync::Arc::new(std::sync::Mutex::new(Vec::with_capacity(warmup + TIMED)));
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
    let hot = frames.fds.is_empty();
    let mut faults = (0, 0);
    for i in 0..warmup + TIMED {
        if i == warmup {
            faults.0 = minor_faults();
        }
        let f = &frames.buffers[i % frames.buffers.len()];
        // The hot frame is a fresh system-memory copy each time (as before); a camera buffer is
        // the same memory again under a new buffer, as a driver's queue recycles it.
        let mut b = if hot { f.copy_deep().unwrap() } else { f.copy() };
        b.get_mut().unwrap().set_pts(gst::ClockTime::from_mseconds(33 * i as u64));
        src.push_buffer(b).unwrap();
    }
    src.end_of_stream().unwrap();
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
    faults.1 = minor_faults();
    pipeline.set_state(gst::State::Null).unwrap();
    std::env::remove_var("EDGEFIRST_CONVERT_SIMD");
    let ends = ends.lock().unwrap();
    assert_eq!(ends.len(), warmup + TIMED, "{chain}: every pushed frame reaches the sink");
    (best_stretch(&ends[warmup - 1..]), (faults.1 - faults.0) as f64 / TIMED as f64)
}

/// Minor page faults of the whole process so far (every thread of the pipeline included).
fn minor_faults() -> i64 {
    let mut u = unsafe { std::mem::zeroed::<libc::rusage>() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    u.ru_minflt
}

/// Source rows a 2-tap vertical filter reads for the letterboxed content (pixel centres; a tap
/// whose weight is zero reads nothing: at exactly 3× every luma row lands on a sample).
fn rows_read(src_h: usize, dst_h: usize) -> Vec<usize> {
    let mut rows: Vec<usize> = (0..dst_h)
        .flat_map(|y| {
            let s = ((y as f64 + 0.5) * src_h as f64 / dst_h as f64 - 0.5).max(0.0);
            let r = s.floor() as usize;
            if s.fract() == 0.0 {
                vec![r]
            } else {
                vec![r, (r + 1).min(src_h - 1)]
            }
        })
        .collect();
    rows.dedup();
    rows
}

/// The floor of a camera row: per frame, read every row a bilinear letterbox reads (each plane's
/// rows at its own subsampling) and write the 640×640×3 output, over the same rotating frames,
/// mapped once.
fn floor(frames: &Frames) -> f64 {
    let info = &frames.info;
    let (w, h) = (info.width() as usize, info.height() as usize);
    let content_h = OUT * h / w;
    let planes: Vec<(usize, usize, Vec<usize>)> = (0..info.n_planes() as usize)
        .map(|p| {
            let ph = info.comp_height(p as u8) as usize;
            let rows = rows_read(ph, content_h);
            (info.offset()[p], info.stride()[p] as usize, rows)
        })
        .collect();
    let row_bytes: Vec<usize> = (0..info.n_planes() as usize).map(|p| info.stride()[p] as usize).collect();
    let mut out = vec![0u8; OUT * OUT * 3];
    let mut ends = vec![Instant::now()];
    let mut acc = 0u64;
    for i in 0..WARMUP + TIMED {
        let f = frames.maps[i % frames.maps.len()];
        let mut sum = [0u64; 8];
        for ((off, stride, rows), &rb) in planes.iter().zip(&row_bytes) {
            for &r in rows {
                let row = &f[off + r * stride..off + r * stride + rb];
                for c in row.chunks_exact(64) {
                    for (s, q) in sum.iter_mut().zip(c.chunks_exact(8)) {
                        *s = s.wrapping_add(u64::from_ne_bytes(q.try_into().unwrap()));
                    }
                }
            }
        }
        let v = sum.iter().fold(0u64, |a, s| a ^ s) as u8;
        out.fill(v);
        acc = acc.wrapping_add(std::hint::black_box(&out)[i % out.len()] as u64);
        ends.push(Instant::now());
    }
    std::hint::black_box(acc);
    best_stretch(&ends[WARMUP..])
}

/// ms to copy the input frame and the output tensor once, hot (the old floor row).
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

#[link(name = "yuv")]
extern "C" {
    fn NV12Scale(
        src_y: *const u8,
        src_stride_y: i32,
        src_uv: *const u8,
        src_stride_uv: i32,
        src_width: i32,
        src_height: i32,
        dst_y: *mut u8,
        dst_stride_y: i32,
        dst_uv: *mut u8,
        dst_stride_uv: i32,
        dst_width: i32,
        dst_height: i32,
        filtering: i32,
    ) -> i32;
    fn NV12ToRAW(
        src_y: *const u8,
        src_stride_y: i32,
        src_uv: *const u8,
        src_stride_uv: i32,
        dst_raw: *mut u8,
        dst_stride_raw: i32,
        width: i32,
        height: i32,
    ) -> i32;
}

/// libyuv's fastest NV12 → RGB letterbox chain on the same frames: NV12Scale (bilinear) into a
/// small NV12 frame, NV12ToRAW (R, G, B bytes) into the content rows, the padding filled.
fn libyuv_nv12(frames: &Frames) -> f64 {
    let info = &frames.info;
    let (w, h) = (info.width() as i32, info.height() as i32);
    let ch = (OUT as i32 * h / w) & !1;
    let top = (OUT as i32 - ch) / 2;
    let (ys, uvs) = (info.stride()[0], info.stride()[1]);
    let mut small_y = vec![0u8; OUT * ch as usize];
    let mut small_uv = vec![0u8; OUT * ch as usize / 2];
    let mut out = vec![0u8; OUT * OUT * 3];
    let mut ends = vec![Instant::now()];
    for i in 0..WARMUP + TIMED {
        let f = frames.maps[i % frames.maps.len()];
        let (y, uv) = (f.as_ptr(), unsafe { f.as_ptr().add(info.offset()[1]) });
        unsafe {
            NV12Scale(
                y,
                ys,
                uv,
                uvs,
                w,
                h,
                small_y.as_mut_ptr(),
                OUT as i32,
                small_uv.as_mut_ptr(),
                OUT as i32,
                OUT as i32,
                ch,
                2,
            );
            let at = top as usize * OUT * 3;
            NV12ToRAW(
                small_y.as_ptr(),
                OUT as i32,
                small_uv.as_ptr(),
                OUT as i32,
                out.as_mut_ptr().add(at),
                OUT as i32 * 3,
                OUT as i32,
                ch,
            );
        }
        let (pad_top, rest) = out.split_at_mut(top as usize * OUT * 3);
        pad_top.fill(0x80);
        rest[ch as usize * OUT * 3..].fill(0x80);
        std::hint::black_box(&out);
        ends.push(Instant::now());
    }
    best_stretch(&ends[WARMUP..])
}

/// Content rows of the 640×640 letterbox of a 16:9 frame: 360 rows from row 140.
fn content(info: &gst_video::VideoInfo) -> (usize, usize) {
    let ch = (OUT * info.height() as usize / info.width() as usize) & !1;
    (ch, (OUT - ch) / 2)
}

/// fast_image_resize 6.1 (a dev-dependency, for these reference rows only) into the content rows:
/// on an NV12 frame, its planes (Y as U8, UV as U8x2) through `Convolution(filter)` and then
/// libyuv's NV12ToRAW, the chain that reached PIL's antialiased output fastest before; on an RGBA
/// frame, `Convolution(filter)` on the pixels (alpha ignored, as the RGB output drops it) and the
/// RGB bytes picked out. The padding filled.
struct Fir {
    resizer: fast_image_resize::Resizer,
    options: fast_image_resize::ResizeOptions,
    small: [fast_image_resize::images::Image<'static>; 2],
    out: Vec<u8>,
}

impl Fir {
    fn new(info: &gst_video::VideoInfo, filter: fast_image_resize::FilterType) -> Fir {
        use fast_image_resize::{images::Image, PixelType, ResizeAlg, ResizeOptions};
        let (ch, _) = content(info);
        let nv12 = info.format() == gst_video::VideoFormat::Nv12;
        let small = match nv12 {
            true => [
                Image::new(OUT as u32, ch as u32, PixelType::U8),
                Image::new(OUT as u32 / 2, ch as u32 / 2, PixelType::U8x2),
            ],
            false => [Image::new(OUT as u32, ch as u32, PixelType::U8x4), Image::new(1, 1, PixelType::U8)],
        };
        let options = ResizeOptions::new().resize_alg(ResizeAlg::Convolution(filter)).use_alpha(false);
        Fir { resizer: fast_image_resize::Resizer::new(), options, small, out: vec![0u8; OUT * OUT * 3] }
    }

    fn run(&mut self, info: &gst_video::VideoInfo, f: &[u8]) {
        use fast_image_resize::{images::ImageRef, PixelType};
        let (w, h) = (info.width(), info.height());
        let (ch, top) = content(info);
        let at = top * OUT * 3;
        if info.format() == gst_video::VideoFormat::Nv12 {
            let (y, uv) = f.split_at(info.offset()[1]);
            let y = ImageRef::new(w, h, y, PixelType::U8).unwrap();
            let uv = ImageRef::new(w / 2, h / 2, uv, PixelType::U8x2).unwrap();
            self.resizer.resize(&y, &mut self.small[0], &self.options).unwrap();
            self.resizer.resize(&uv, &mut self.small[1], &self.options).unwrap();
            unsafe {
                NV12ToRAW(
                    self.small[0].buffer().as_ptr(),
                    OUT as i32,
                    self.small[1].buffer().as_ptr(),
                    OUT as i32,
                    self.out.as_mut_ptr().add(at),
                    OUT as i32 * 3,
                    OUT as i32,
                    ch as i32,
                )
            };
        } else {
            let rgba = ImageRef::new(w, h, f, PixelType::U8x4).unwrap();
            self.resizer.resize(&rgba, &mut self.small[0], &self.options).unwrap();
            for (o, px) in self.out[at..at + ch * OUT * 3]
                .chunks_exact_mut(3)
                .zip(self.small[0].buffer().chunks_exact(4))
            {
                o.copy_from_slice(&px[..3]);
            }
        }
        let (pad_top, rest) = self.out.split_at_mut(at);
        pad_top.fill(0x80);
        rest[ch * OUT * 3..].fill(0x80);
    }
}

/// ms per frame of a fast_image_resize chain (`Fir`) on the same frames.
fn fir(frames: &Frames, filter: fast_image_resize::FilterType) -> f64 {
    let mut chain = Fir::new(&frames.info, filter);
    let mut ends = vec![Instant::now()];
    for i in 0..WARMUP + TIMED {
        chain.run(&frames.info, frames.bytes(i));
        std::hint::black_box(&chain.out);
        ends.push(Instant::now());
    }
    best_stretch(&ends[WARMUP..])
}

/// The library a chain matches, on frame 0 as an RGB picture: the frame decoded to RGB at its own
/// size (edgefirst's bilinear at 1:1 — every tap on a sample — with the chroma upsampled
/// bilinearly at `site`, by `colorimetry`), then resized by the library's filter into the
/// content rows. edgefirst's `bilinear-antialias` on RGB is PIL's `BILINEAR` to the byte and its
/// `area` OpenCV's `INTER_AREA` within one level (tests/golden), so those stand for the libraries.
fn reference(
    info: &gst_video::VideoInfo,
    f: &[u8],
    interpolation: edgefirst_tensor::preprocess::Interpolation,
    colorimetry: edgefirst_tensor::preprocess::Colorimetry,
    site: edgefirst_tensor::preprocess::ChromaSite,
) -> Vec<u8> {
    use edgefirst_tensor::convert::ConvertSpec;
    use edgefirst_tensor::preprocess::{FitMode, Interpolation};
    let (w, h) = (info.width() as usize, info.height() as usize);
    let decode = ConvertSpec {
        fit: FitMode::Stretch,
        interpolation: Interpolation::Bilinear,
        colorimetry,
        chroma_site: site,
        ..ConvertSpec::default()
    };
    let rgb = convert(info, f, &decode, w, h, None);
    let resize = ConvertSpec { interpolation, fill: [0x80; 4], ..ConvertSpec::default() };
    convert(info, f, &resize, OUT, OUT, Some((&rgb, w * 3)))
}

/// Frame `f` (or `rgb`, an RGB picture at the frame's size and that row stride) through the
/// tensor crate's converter into `dw` × `dh` RGB bytes.
fn convert(
    info: &gst_video::VideoInfo,
    f: &[u8],
    spec: &edgefirst_tensor::convert::ConvertSpec,
    dw: usize,
    dh: usize,
    rgb: Option<(&[u8], usize)>,
) -> Vec<u8> {
    use edgefirst_tensor::convert::{Colorspace, Converter, DstLayout, SrcImage};
    use edgefirst_tensor::{DType, PixelFormat};
    let (w, h) = (info.width() as usize, info.height() as usize);
    let dst = DstLayout::dense(dw, dh, Colorspace::Rgb, false, DType::U8);
    let (format, planes) = match (rgb, info.format()) {
        (Some((bytes, stride)), _) => (PixelFormat::Rgb, [(bytes, stride), (&[][..], 0), (&[][..], 0)]),
        (None, gst_video::VideoFormat::Nv12) => {
            let (y, uv) = f.split_at(info.offset()[1]);
            (
                PixelFormat::Nv12,
                [(y, info.stride()[0] as usize), (uv, info.stride()[1] as usize), (&[][..], 0)],
            )
        }
        (None, gst_video::VideoFormat::Rgba) => {
            (PixelFormat::Rgba, [(f, info.stride()[0] as usize), (&[][..], 0), (&[][..], 0)])
        }
        (None, other) => panic!("no reference for {other:?}"),
    };
    let conv = Converter::new(format, w, h, dst, spec, 1).unwrap();
    let mut out = vec![0u8; dst.bytes()];
    conv.convert(&SrcImage { format, width: w, height: h, planes }, &mut out).unwrap();
    out
}

/// PSNR of `a` against `b` over the content rows, in dB.
fn psnr(info: &gst_video::VideoInfo, a: &[u8], b: &[u8]) -> f64 {
    let (ch, top) = content(info);
    let span = top * OUT * 3..(top + ch) * OUT * 3;
    let se: f64 =
        a[span.clone()].iter().zip(&b[span.clone()]).map(|(&x, &y)| (x as f64 - y as f64).powi(2)).sum();
    let mse = se / span.len() as f64;
    if mse == 0.0 {
        f64::INFINITY
    } else {
        10.0 * (255.0f64 * 255.0 / mse).log10()
    }
}

/// A natural-looking frame for the PSNR rows: smooth gradients, a zone plate's fine rings (up to
/// three quarters of the source's Nyquist, past the output's), in-gamut colour and a little noise.
/// The timed frames' byte patterns saturate YUV far outside RGB's gamut, where decoding before
/// resizing (the libraries) clips what resizing first does not: tens of levels on every pixel.
fn natural(info: &gst_video::VideoInfo) -> Vec<u8> {
    let (w, h) = (info.width() as usize, info.height() as usize);
    let mut f = vec![0u8; info.size()];
    let noise =
        |x: usize, y: usize, k: usize| (((x * 7919 + y * 104729 + k * 31) ^ (x * y)) % 13) as f64 - 6.0;
    let tone = |x: usize, y: usize, k: usize| {
        let (fx, fy) = (x as f64, y as f64);
        let smooth = 70.0 * (fx * 0.004 + k as f64).sin() * (fy * 0.006 + 0.5 * k as f64).cos();
        let rings = 30.0 * (((fx - 960.0).powi(2) + (fy - 540.0).powi(2)) * 2e-4).sin();
        (128.0 + smooth + rings + noise(x, y, k)).clamp(0.0, 255.0) as u8
    };
    match info.format() {
        gst_video::VideoFormat::Nv12 => {
            let (o, st) = (info.offset(), info.stride());
            for y in 0..h {
                for x in 0..w {
                    f[o[0] + y * st[0] as usize + x] = tone(x, y, 0).clamp(30, 220);
                }
            }
            for y in 0..h / 2 {
                for x in 0..w / 2 {
                    for c in 0..2 {
                        let v = 128.0
                            + 30.0 * (x as f64 * 0.01 + 2.0 * c as f64).sin()
                            + noise(x, y, c + 1) / 2.0;
                        f[o[1] + y * st[1] as usize + 2 * x + c] = v as u8;
                    }
                }
            }
        }
        _ => {
            let st = info.stride()[0] as usize;
            for y in 0..h {
                for x in 0..w {
                    for c in 0..3 {
                        f[y * st + 4 * x + c] = tone(x, y, c);
                    }
                    f[y * st + 4 * x + 3] = 255;
                }
            }
        }
    }
    f
}

/// PSNR rows of one case on a `natural` frame: edgefirst's presets (read as the element reads the
/// caps) and the fast_image_resize chains, each against the library it matches.
fn psnr_rows(info: &gst_video::VideoInfo) -> Vec<(String, f64, &'static str)> {
    use edgefirst_tensor::convert::ConvertSpec;
    use edgefirst_tensor::preprocess::{ChromaSite, Colorimetry, Interpolation};
    use fast_image_resize::FilterType;
    let f = natural(info);
    let colorimetry = Colorimetry::from_gst_str(&info.colorimetry().to_string()).unwrap_or_default();
    let site = ChromaSite::from_gst_flags(info.chroma_site().bits());
    let nv12 = info.format() == gst_video::VideoFormat::Nv12;
    let mut rows = Vec::new();
    for (nick, interp, library) in [
        ("area", Interpolation::Area, "OpenCV INTER_AREA"),
        ("bilinear-antialias", Interpolation::BilinearAntialias, "PIL BILINEAR"),
    ] {
        let spec = ConvertSpec {
            interpolation: interp,
            colorimetry,
            chroma_site: site,
            fill: [0x80; 4],
            ..ConvertSpec::default()
        };
        let ours = convert(info, &f, &spec, OUT, OUT, None);
        let want = reference(info, &f, interp, colorimetry, site);
        rows.push((format!("edgefirsttensor uint8 {nick}"), psnr(info, &ours, &want), library));
        let filter = if interp == Interpolation::Area { FilterType::Box } else { FilterType::Bilinear };
        let mut chain = Fir::new(info, filter);
        chain.run(info, &f);
        // libyuv's NV12ToRAW decodes BT.601 limited range (centred chroma, as the reference's).
        let (c, s) =
            if nv12 { (Colorimetry::BT601_LIMITED, ChromaSite::CENTRED) } else { (colorimetry, site) };
        rows.push((
            fir_name(filter, nv12),
            psnr(info, &chain.out, &reference(info, &f, interp, c, s)),
            library,
        ));
    }
    rows
}

fn fir_name(filter: fast_image_resize::FilterType, nv12: bool) -> String {
    let f = if filter == fast_image_resize::FilterType::Box { "Box" } else { "Bilinear" };
    match nv12 {
        true => format!("fast_image_resize Convolution({f}) on the planes + libyuv NV12ToRAW"),
        false => format!("fast_image_resize Convolution({f}) on RGBA + RGB bytes"),
    }
}

struct Row {
    format: String,
    size: (u32, u32),
    input: Input,
    name: String,
    ms: f64,
    /// Minor page faults per timed frame, the whole process (fewest over the rounds).
    faults: Option<f64>,
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
    let chain_wanted =
        |name: &str| only_chain.as_ref().is_none_or(|o| o.iter().any(|p| name.contains(p.as_str())));
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
    // The rows measured outside GStreamer, after the chains: the floors, libyuv, then the
    // fast_image_resize chains (Box, Bilinear) where the format has one.
    const EXTRA: usize = 5;
    let fir_filters = [fast_image_resize::FilterType::Box, fast_image_resize::FilterType::Bilinear];
    let mut best: Vec<Vec<f64>> = vec![vec![f64::MAX; chains.len() + EXTRA]; cases.len()];
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
            let n = chains.len();
            match input {
                Input::Hot => best[k][n] = best[k][n].min(memcpy_floor(fr.info.size(), OUT * OUT * 3)),
                Input::Camera(_) => {
                    best[k][n + 1] = best[k][n + 1].min(floor(&fr));
                    if format == "NV12" {
                        best[k][n + 2] = best[k][n + 2].min(libyuv_nv12(&fr));
                    }
                }
            }
            let referenced = format == "NV12" || format == "RGBA";
            for (j, &filter) in fir_filters.iter().enumerate() {
                if referenced && chain_wanted(&fir_name(filter, format == "NV12")) {
                    best[k][n + 3 + j] = best[k][n + 3 + j].min(fir(&fr, filter));
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
    let extra = [
        "memcpy of input + output (hot)",
        "floor: read the filter's rows + write the output",
        "libyuv NV12Scale + NV12ToRAW",
    ];
    let mut rows = Vec::new();
    for (k, (format, size, input)) in cases.iter().enumerate() {
        let firs = fir_filters.iter().map(|&f| fir_name(f, format == "NV12"));
        let names = chains
            .iter()
            .map(|(n, _, _)| n.to_string())
            .chain(extra.iter().map(|s| s.to_string()))
            .chain(firs);
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
    println!("| input | frames | uint8 / floor | float32 / uint8 | 1 thread / 2 threads | libyuv / uint8 | libyuv / uint8 AVX2 | uint8 / memcpy (hot) |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|");
    for (k, (format, (w, h), input)) in cases.iter().enumerate() {
        let u8_ms = get(k, "edgefirsttensor uint8");
        println!(
            "| {format} {w}×{h} | {} | {} | {} | {} | {} | {} | {} |",
            input.name(),
            ratio(u8_ms, get(k, "floor")),
            ratio(get(k, "float32"), u8_ms),
            ratio(u8_ms, get(k, "n-threads=2")),
            ratio(get(k, "libyuv"), u8_ms),
            ratio(get(k, "libyuv"), get(k, "AVX2")),
            ratio(u8_ms, get(k, "memcpy")),
        );
    }
    resampling_tables(&cases, &get, &psnrs);
}

/// The resampling presets against bilinear and against the fast_image_resize chains that match
/// the same libraries, and each chain's PSNR against its library (frame 0).
fn resampling_tables(
    cases: &[(String, (u32, u32), Input)],
    get: &dyn Fn(usize, &str) -> f64,
    psnrs: &[Vec<(String, f64, &str)>],
) {
    println!();
    println!("| input | frames | bilinear | area | bilinear-antialias | area / bilinear | antialias / bilinear | fir Box / area | fir Bilinear / antialias |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for (k, (format, (w, h), input)) in cases.iter().enumerate() {
        let bilinear = get(k, "edgefirsttensor uint8");
        let (area, aa) = (get(k, "uint8 area"), get(k, "uint8 bilinear-antialias"));
        let ms = |v: f64| if v < f64::MAX { format!("{v:.3}") } else { "–".into() };
        println!(
            "| {format} {w}×{h} | {} | {} | {} | {} | {} | {} | {} | {} |",
            input.name(),
            ms(bilinear),
            ms(area),
            ms(aa),
            ratio(area, bilinear),
            ratio(aa, bilinear),
            ratio(get(k, "Convolution(Box)"), area),
            ratio(get(k, "Convolution(Bilinear)"), aa),
        );
    }
    println!();
    println!("| input | chain | PSNR against | dB |");
    println!("|---|---|---|---:|");
    for (k, (format, (w, h), _)) in cases.iter().enumerate() {
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
