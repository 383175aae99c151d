//! The rows measured outside GStreamer: the floors (what touching the bytes costs), the memcpy
//! row, libyuv's NV12 chain and the fast_image_resize chains, and the PSNR of each resampling
//! chain against the library it matches.

use super::{best_stretch, Frames, OUT, TIMED, WARMUP};
use std::time::Instant;

/// ms per frame of `frame(i)` over the warm-up and timed frames in turn, by `best_stretch`: the
/// one timing loop every row measured outside GStreamer runs.
fn timed(mut frame: impl FnMut(usize)) -> f64 {
    let mut ends = vec![Instant::now()];
    for i in 0..WARMUP + TIMED {
        frame(i);
        ends.push(Instant::now());
    }
    best_stretch(&ends[WARMUP..])
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

/// What a floor or traffic row reads and writes, over the same rotating frames, mapped once.
#[derive(Clone, Copy)]
pub(crate) struct Bytes {
    /// Every row of every plane, as a filter as wide as a 3× or 2.5× downscale reads them
    /// (`area`, `bilinear-antialias`); else the rows a bilinear letterbox reads (each plane's at
    /// its own subsampling), where bilinear at 3× reads one luma row in three.
    pub every_row: bool,
    /// The float32 tensor written (four bytes a value: what the store of a float32 output adds
    /// to a row, whatever computes it); else the uint8 one.
    pub float32: bool,
    /// Each line asked for (`prefetcht1`) `TRAFFIC_AHEAD` bytes before it is loaded, across the
    /// ends of the rows (the next row's first lines while the last ones of this row are read),
    /// so no load waits for a row's first lines: the traffic rows. Else plain loads: the floors,
    /// as the issue defined them.
    pub asked: bool,
    /// Only the picture's rows of the tensor written (a letterbox's content rows, whole): what a
    /// tensor of the element's pool takes once its padding is kept. Else the whole tensor.
    pub picture: bool,
}

/// How far ahead of its loads a traffic row asks for lines: 1 KiB was the fastest of 1, 4 and
/// 16 KiB for a C loop over a whole RGBA frame, 32 rotating frames, here (fastest single frames
/// 0.47–0.53 ms, 0.52–0.59 with no asks).
const TRAFFIC_AHEAD: usize = 1024;

/// ms a frame to read and write `b`'s bytes with no arithmetic: a floor or traffic row.
pub(crate) fn bytes_time(frames: &Frames, b: Bytes) -> f64 {
    let rows = |ph: usize, content_h: usize| match b.every_row {
        true => (0..ph).collect(),
        false => rows_read(ph, content_h),
    };
    let rows_written = if b.picture { content(&frames.info).0 } else { OUT };
    let out_bytes = rows_written * OUT * 3 * if b.float32 { 4 } else { 1 };
    reads_and_writes(frames, rows, out_bytes, b.asked.then_some(TRAFFIC_AHEAD))
}

/// Per frame, the rows `rows(plane height, content height)` of every plane read whole (two 32-byte
/// loads a line where the CPU has AVX2: one u64 at a time, the loop took 1.8× the bytes' time
/// on a whole RGBA frame here), asking `ahead` bytes before each load where given, and the
/// output tensor filled (`memset`: the fastest of 64-byte stores, streaming stores and
/// `rep movsb` of a row for a 4.9 MB tensor here).
fn reads_and_writes(
    frames: &Frames,
    rows: impl Fn(usize, usize) -> Vec<usize>,
    out_bytes: usize,
    ahead: Option<usize>,
) -> f64 {
    let info = &frames.info;
    let content_h = content(info).0;
    // Every row read, in order, as (start, length) in the frame's bytes.
    let spans: Vec<(usize, usize)> = (0..info.n_planes() as usize)
        .flat_map(|p| {
            let ph = info.comp_height(p as u8) as usize;
            let (off, stride) = (info.offset()[p], info.stride()[p] as usize);
            rows(ph, content_h).into_iter().map(move |r| (off + r * stride, stride))
        })
        .collect();
    let mut out = vec![0u8; out_bytes];
    let mut acc = 0u64;
    let ms = timed(|i| {
        let f = frames.maps[i % frames.maps.len()];
        let v = read_spans(f, &spans, ahead) as u8;
        out.fill(v);
        acc = acc.wrapping_add(std::hint::black_box(&out)[i % out.len()] as u64);
    });
    std::hint::black_box(acc);
    ms
}

/// The lines of `spans` of `f` summed, asking `ahead` bytes before each load where given (the
/// next span's first lines near a span's end).
fn read_spans(f: &[u8], spans: &[(usize, usize)], ahead: Option<usize>) -> u64 {
    assert!(
        spans.iter().all(|&(start, len)| len % 64 == 0 && start + len <= f.len()),
        "whole lines inside the frame"
    );
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is present; every span is whole lines inside `f` (asserted above).
        return unsafe { read_spans_avx2(f, spans, ahead) };
    }
    let mut sum = [0u64; 8];
    for (k, &(start, len)) in spans.iter().enumerate() {
        for at in (0..len).step_by(64) {
            if let Some(d) = ahead {
                ask(ask_at(f, spans, k, at, d));
            }
            for (s, q) in sum.iter_mut().zip(f[start + at..start + at + 64].chunks_exact(8)) {
                *s = s.wrapping_add(u64::from_ne_bytes(q.try_into().unwrap()));
            }
        }
    }
    sum.iter().fold(0u64, |a, s| a ^ s)
}

/// The address asked for while line `at` of span `k` is loaded: `d` bytes further along the rows
/// read (into the next span past this one's end; anywhere past the last, where a prefetch does
/// nothing harmful).
#[inline(always)]
fn ask_at(f: &[u8], spans: &[(usize, usize)], k: usize, at: usize, d: usize) -> *const u8 {
    let (start, len) = spans[k];
    let to = match (at + d < len, spans.get(k + 1)) {
        (true, _) => start + at + d,
        (false, Some(&(next, _))) => next + (at + d - len),
        (false, None) => start + at + d,
    };
    f.as_ptr().wrapping_add(to)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn read_spans_avx2(f: &[u8], spans: &[(usize, usize)], ahead: Option<usize>) -> u64 {
    use std::arch::x86_64::*;
    let (mut a, mut b) = (_mm256_setzero_si256(), _mm256_setzero_si256());
    for (k, &(start, len)) in spans.iter().enumerate() {
        let row = f[start..start + len].as_ptr();
        for at in (0..len).step_by(64) {
            if let Some(d) = ahead {
                ask(ask_at(f, spans, k, at, d));
            }
            // SAFETY: `at + 64 <= len`, the span inside `f`.
            unsafe {
                a = _mm256_add_epi64(a, _mm256_loadu_si256(row.add(at).cast()));
                b = _mm256_add_epi64(b, _mm256_loadu_si256(row.add(at + 32).cast()));
            }
        }
    }
    let mut lanes = [0u64; 4];
    // SAFETY: `lanes` holds 32 bytes.
    unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), _mm256_xor_si256(a, b)) };
    lanes.iter().fold(0, |x, l| x ^ l)
}

/// Ask for the line at `p` into the second-level cache.
#[inline(always)]
fn ask(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing and faults on nothing.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T1 }>(p.cast())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// ms to copy the input frame and the output tensor once, hot (the old floor row).
pub(crate) fn memcpy_floor(input: usize, output: usize) -> f64 {
    let a = vec![1u8; input];
    let mut b = vec![0u8; input];
    let c = vec![1u8; output];
    let mut d = vec![0u8; output];
    let ms = timed(|_| {
        b.copy_from_slice(std::hint::black_box(&a));
        d.copy_from_slice(std::hint::black_box(&c));
    });
    std::hint::black_box((&b, &d));
    ms
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
/// small NV12 frame, NV12ToRAW (R, G, B bytes) into the content rows. The padding is filled once,
/// before the timed frames: the element's pool keeps its tensor's padding (`allocator::padding`),
/// and a chain that reuses its output buffer can keep its own the same way.
pub(crate) fn libyuv_nv12(frames: &Frames) -> f64 {
    let info = &frames.info;
    let (w, h) = (info.width() as i32, info.height() as i32);
    let (ch, top) = content(info);
    // The small NV12 frame takes whole chroma rows.
    assert!(ch % 2 == 0, "an even picture height");
    let (ch, top) = (ch as i32, top as i32);
    let (ys, uvs) = (info.stride()[0], info.stride()[1]);
    let mut small_y = vec![0u8; OUT * ch as usize];
    let mut small_uv = vec![0u8; OUT * ch as usize / 2];
    let mut out = vec![0x80u8; OUT * OUT * 3];
    timed(|i| {
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
        std::hint::black_box(&out);
    })
}

/// The picture's rows in the 640×640 letterbox (how many, and the first), as the element places
/// them (`preprocess::letterbox_rect`, centred): 360 rows from row 140 for a 16:9 frame.
fn content(info: &gst_video::VideoInfo) -> (usize, usize) {
    use edgefirst_tensor::preprocess::{letterbox_rect, FitMode, LetterboxPlacement};
    let (w, h) = (info.width() as usize, info.height() as usize);
    let r = letterbox_rect(w, h, OUT, OUT, FitMode::Letterbox, LetterboxPlacement::Center)
        .expect("a frame and a tensor of non-zero size")
        .rect;
    (r.height, r.y)
}

/// fast_image_resize 6.1 (a dev-dependency, for these reference rows only) into the content rows:
/// on an NV12 frame, its planes (Y as U8, UV as U8x2) through `Convolution(filter)` and then
/// libyuv's NV12ToRAW, the chain that reached PIL's antialiased output fastest before; on an RGBA
/// frame, `Convolution(filter)` on the pixels (alpha ignored, as the RGB output drops it) and the
/// RGB bytes picked out. The padding filled once, as `libyuv_nv12`'s.
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
        Fir { resizer: fast_image_resize::Resizer::new(), options, small, out: vec![0x80u8; OUT * OUT * 3] }
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
    }
}

/// ms per frame of a fast_image_resize chain (`Fir`) on the same frames.
pub(crate) fn fir(frames: &Frames, filter: fast_image_resize::FilterType) -> f64 {
    let mut chain = Fir::new(&frames.info, filter);
    timed(|i| {
        chain.run(&frames.info, frames.bytes(i));
        std::hint::black_box(&chain.out);
    })
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
pub(crate) fn psnr_rows(info: &gst_video::VideoInfo) -> Vec<(String, f64, &'static str)> {
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

pub(crate) fn fir_name(filter: fast_image_resize::FilterType, nv12: bool) -> String {
    let f = if filter == fast_image_resize::FilterType::Box { "Box" } else { "Bilinear" };
    match nv12 {
        true => format!("fast_image_resize Convolution({f}) on the planes + libyuv NV12ToRAW"),
        false => format!("fast_image_resize Convolution({f}) on RGBA + RGB bytes"),
    }
}
