//! The conversion engine against a plain f64 reference written from the definitions, over every
//! input format × colourspace × layout × fit on random images of odd sizes, every dtype,
//! normalization, quantization, colorimetry, nearest sampling, a source region, padded
//! destinations and threads.

use edgefirst_tensor::convert::{Colorspace, ConvertSpec, Converter, DstLayout, Simd, SrcImage};
use edgefirst_tensor::preprocess::{
    letterbox_rect, Colorimetry, FitMode, Interpolation, LetterboxPlacement, Region,
};
use edgefirst_tensor::{f16, DType, PixelFormat};

/// Every format with pixels (bitstreams have none to convert).
fn formats() -> impl Iterator<Item = PixelFormat> {
    PixelFormat::ALL.iter().copied().filter(|f| f.layout() != edgefirst_tensor::PixelLayout::Bitstream)
}
const COLORSPACES: [Colorspace; 4] = [Colorspace::Rgb, Colorspace::Bgr, Colorspace::Gray, Colorspace::Rgba];
const FITS: [FitMode; 3] = [FitMode::Stretch, FitMode::Letterbox, FitMode::CenterCrop];
/// The multi-tap filters (docs/resampling.md).
const MULTI_TAP: [Interpolation; 4] = [
    Interpolation::Area,
    Interpolation::BilinearAntialias,
    Interpolation::Bicubic,
    Interpolation::BicubicOpencv,
];

struct Frame {
    format: PixelFormat,
    w: usize,
    h: usize,
    bytes: Vec<u8>,
    planes: Vec<(usize, usize)>, // offset, stride
}

impl Frame {
    fn random(format: PixelFormat, w: usize, h: usize, seed: u64) -> Frame {
        // A padded pitch (even, for the half-pitch chroma of I420/YV12) so strides are exercised.
        let rs = format.row_stride_for(w, 1, false) + 6;
        let table = format.plane_table(w, h, rs);
        let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let bytes = (0..format.image_bytes(w, h, rs))
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (state >> 33) as u8
            })
            .collect();
        Frame { format, w, h, bytes, planes: table.iter().map(|p| (p.offset, p.stride as usize)).collect() }
    }

    /// Every component of every pixel set: `luma` (Y, or R, G and B) and `chroma` (U and V),
    /// alpha opaque.
    fn flat(format: PixelFormat, w: usize, h: usize, luma: u8, chroma: u8) -> Frame {
        let mut frame = Frame::random(format, w, h, 0);
        for (k, &(plane, off, step, hd, vd)) in comps(format).iter().enumerate() {
            let v = match k {
                1 | 2 if format.is_yuv() => chroma,
                3 => 255,
                _ => luma,
            };
            let (start, stride) = frame.planes[plane];
            for r in 0..h.div_ceil(vd) {
                for c in 0..w.div_ceil(hd) {
                    frame.bytes[start + r * stride + off + step * c] = v;
                }
            }
        }
        frame
    }

    fn image(&self) -> SrcImage<'_> {
        let mut planes: [(&[u8], usize); 3] = [(&[], 0); 3];
        for (i, &(off, stride)) in self.planes.iter().enumerate() {
            planes[i] = (&self.bytes[off..], stride);
        }
        SrcImage { format: self.format, width: self.w, height: self.h, planes }
    }

    /// Each plane cut to the bytes its rows hold, nothing after the last row's last pixel (a
    /// frame at the very end of a buffer).
    fn image_exact(&self) -> SrcImage<'_> {
        let mut img = self.image();
        for (p, plane) in img.planes.iter_mut().enumerate().take(self.planes.len()) {
            let s = self.format.plane_sampling(p, 1);
            plane.0 = &plane.0[..(s.rows(self.h) - 1) * plane.1 + s.row_bytes(self.w)];
        }
        img
    }

    fn byte(&self, plane: usize, row: usize, col_byte: usize) -> f64 {
        let (off, stride) = self.planes[plane];
        self.bytes[off + row * stride + col_byte] as f64
    }
}

/// (plane, byte offset in granule, step, horizontal div, vertical div) of Y,U,V or R,G,B(,A).
fn comps(f: PixelFormat) -> Vec<(usize, usize, usize, usize, usize)> {
    use PixelFormat as P;
    match f {
        P::Rgb => vec![(0, 0, 3, 1, 1), (0, 1, 3, 1, 1), (0, 2, 3, 1, 1)],
        P::Bgr => vec![(0, 2, 3, 1, 1), (0, 1, 3, 1, 1), (0, 0, 3, 1, 1)],
        P::Rgba => vec![(0, 0, 4, 1, 1), (0, 1, 4, 1, 1), (0, 2, 4, 1, 1), (0, 3, 4, 1, 1)],
        P::Bgra => vec![(0, 2, 4, 1, 1), (0, 1, 4, 1, 1), (0, 0, 4, 1, 1), (0, 3, 4, 1, 1)],
        P::Rgbx => vec![(0, 0, 4, 1, 1), (0, 1, 4, 1, 1), (0, 2, 4, 1, 1)],
        P::Bgrx => vec![(0, 2, 4, 1, 1), (0, 1, 4, 1, 1), (0, 0, 4, 1, 1)],
        P::Gray8 => vec![(0, 0, 1, 1, 1)],
        P::PlanarRgb => vec![(0, 0, 1, 1, 1), (1, 0, 1, 1, 1), (2, 0, 1, 1, 1)],
        P::Nv12 => vec![(0, 0, 1, 1, 1), (1, 0, 2, 2, 2), (1, 1, 2, 2, 2)],
        P::Nv21 => vec![(0, 0, 1, 1, 1), (1, 1, 2, 2, 2), (1, 0, 2, 2, 2)],
        P::Nv16 => vec![(0, 0, 1, 1, 1), (1, 0, 2, 2, 1), (1, 1, 2, 2, 1)],
        P::I420 => vec![(0, 0, 1, 1, 1), (1, 0, 1, 2, 2), (2, 0, 1, 2, 2)],
        P::Yv12 => vec![(0, 0, 1, 1, 1), (2, 0, 1, 2, 2), (1, 0, 1, 2, 2)],
        P::Yuy2 => vec![(0, 0, 2, 1, 1), (0, 1, 4, 2, 1), (0, 3, 4, 2, 1)],
        P::Uyvy => vec![(0, 1, 2, 1, 1), (0, 0, 4, 2, 1), (0, 2, 4, 2, 1)],
        _ => unreachable!(),
    }
}

/// Taps and weight for output index `i` of `n` over source pixels `[start, start+len)`, on a grid of
/// samples covering `div` pixels each, limited to the samples the region touches.
fn taps(
    i: usize,
    n: usize,
    start: usize,
    len: usize,
    div: usize,
    interp: Interpolation,
) -> (usize, usize, f64) {
    let (lo, hi) = (start / div, (start + len).div_ceil(div) - 1);
    let pos = start as f64 + (i as f64 + 0.5) * len as f64 / n as f64;
    if interp == Interpolation::Nearest {
        let s = (pos.floor() as usize / div).clamp(lo, hi);
        return (s, s, 0.0);
    }
    let s = (pos / div as f64 - 0.5).clamp(lo as f64, hi as f64);
    let s0 = s.floor() as usize;
    // The engine's weights are whole 256ths.
    (s0, (s0 + 1).min(hi), ((s - s0 as f64) * 256.0).round_ties_even() / 256.0)
}

/// The value the reference says channel `ch` of destination pixel (x, y) has, before storing.
fn reference(frame: &Frame, dst: &DstLayout, spec: &ConvertSpec, x: usize, y: usize, ch: usize) -> f64 {
    let region = spec.source_region.unwrap_or(Region::new(0, 0, frame.w, frame.h));
    let cr =
        letterbox_rect(region.width, region.height, dst.width, dst.height, spec.fit, spec.placement).unwrap();
    let (rect, mut src) = (cr.rect, cr.source);
    src.x += region.x;
    src.y += region.y;
    let order = if dst.colorspace == Colorspace::Bgr { [2, 1, 0, 3] } else { [0, 1, 2, 3] };
    let inside = x >= rect.x && x < rect.x + rect.width && y >= rect.y && y < rect.y + rect.height;
    let raw = if !inside {
        let f = spec.fill.map(|v| v as f64);
        if dst.colorspace == Colorspace::Gray {
            0.299 * f[0] + 0.587 * f[1] + 0.114 * f[2]
        } else {
            f[order[ch]]
        }
    } else {
        let sample = |&(plane, off, step, hd, vd): &(usize, usize, usize, usize, usize)| {
            let (x0, x1, wx) = taps(x - rect.x, rect.width, src.x, src.width, hd, spec.interpolation);
            let (y0, y1, wy) = taps(y - rect.y, rect.height, src.y, src.height, vd, spec.interpolation);
            let at = |r: usize, c: usize| frame.byte(plane, r, off + step * c);
            let top = at(y0, x0) + wx * (at(y0, x1) - at(y0, x0));
            let bottom = at(y1, x0) + wx * (at(y1, x1) - at(y1, x0));
            top + wy * (bottom - top)
        };
        let c: Vec<f64> = comps(frame.format).iter().map(sample).collect();
        let (r, g, b) = match frame.format {
            PixelFormat::Gray8 => (c[0], c[0], c[0]),
            f if f.is_yuv() => {
                let (m, o) = spec.colorimetry.yuv_to_rgb_matrix();
                let v = [c[0] - o[0], c[1] - o[1], c[2] - o[2]];
                let row = |i: usize| (m[i][0] * v[0] + m[i][1] * v[1] + m[i][2] * v[2]).clamp(0.0, 255.0);
                (row(0), row(1), row(2))
            }
            _ => (c[0], c[1], c[2]),
        };
        let alpha = if c.len() == 4 { c[3] } else { 255.0 };
        match (dst.colorspace, ch) {
            (Colorspace::Gray, _) => 0.299 * r + 0.587 * g + 0.114 * b,
            (_, 3) => alpha,
            _ => [r, g, b][order[ch]],
        }
    };
    if ch == 3 {
        return match (dst.dtype, spec.quantization) {
            (_, Some((q, z))) => raw / (255.0 * q as f64) + z as f64,
            (DType::I8, None) => raw - 128.0,
            (d, None) if d.is_float() => raw / 255.0,
            _ => raw,
        };
    }
    let (mean, std) = (spec.mean[order[ch]] as f64, spec.std[order[ch]] as f64);
    let norm = (raw / 255.0 - mean) / std;
    match (dst.dtype, spec.quantization) {
        (_, Some((q, z))) => norm / q as f64 + z as f64,
        (DType::I8, None) => raw - 128.0,
        (d, None) if d.is_float() => norm,
        _ => raw,
    }
}

/// The stored value of channel `ch` of pixel (x, y), read back as f64.
fn stored(out: &[u8], dst: &DstLayout, x: usize, y: usize, ch: usize) -> f64 {
    let esz = dst.dtype.size();
    let at = if dst.chw {
        ch * dst.plane_stride + y * dst.row_stride + x * esz
    } else {
        y * dst.row_stride + (x * dst.colorspace.channels() + ch) * esz
    };
    let b = &out[at..at + esz];
    match dst.dtype {
        DType::U8 => b[0] as f64,
        DType::I8 => b[0] as i8 as f64,
        DType::U16 => u16::from_ne_bytes(b.try_into().unwrap()) as f64,
        DType::I16 => i16::from_ne_bytes(b.try_into().unwrap()) as f64,
        DType::U32 => u32::from_ne_bytes(b.try_into().unwrap()) as f64,
        DType::I32 => i32::from_ne_bytes(b.try_into().unwrap()) as f64,
        DType::U64 => u64::from_ne_bytes(b.try_into().unwrap()) as f64,
        DType::I64 => i64::from_ne_bytes(b.try_into().unwrap()) as f64,
        DType::F16 => f16(u16::from_ne_bytes(b.try_into().unwrap())).to_f32() as f64,
        DType::F32 => f32::from_ne_bytes(b.try_into().unwrap()) as f64,
        DType::F64 => f64::from_ne_bytes(b.try_into().unwrap()),
        _ => unreachable!(),
    }
}

fn bounds(d: DType) -> (f64, f64) {
    match d {
        DType::U8 => (0.0, 255.0),
        DType::I8 => (-128.0, 127.0),
        DType::U16 => (0.0, 65535.0),
        DType::I16 => (-32768.0, 32767.0),
        DType::U32 | DType::U64 => (0.0, f64::MAX),
        _ => (f64::MIN, f64::MAX),
    }
}

/// Every kernel level this CPU has, baseline first.
fn levels() -> Vec<Simd> {
    let mut all = vec![Simd::Baseline];
    #[cfg(target_arch = "aarch64")]
    all.push(Simd::Neon);
    all.extend([Simd::Avx2, Simd::Avx512]);
    all.retain(|&l| l <= Simd::detect());
    all
}

/// The levels under test include the explicit kernels of this architecture, unless the
/// environment caps them (`EDGEFIRST_CONVERT_SIMD`).
fn assert_vector_levels_tested(levels: &[Simd]) {
    if std::env::var_os("EDGEFIRST_CONVERT_SIMD").is_some() {
        return;
    }
    #[cfg(target_arch = "aarch64")]
    assert!(levels.contains(&Simd::Neon), "aarch64 runs the NEON level: {levels:?}");
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        assert!(levels.contains(&Simd::Avx2), "this CPU runs the AVX2 level: {levels:?}");
    }
    let _ = levels;
}

/// Convert and compare every byte of the destination with the reference: 1 LSB for integer
/// outputs, 1e-3 for float (f16 at its own precision).
fn check(frame: &Frame, dst: DstLayout, spec: &ConvertSpec, threads: usize) -> Vec<u8> {
    let mut conv = Converter::new(frame.format, frame.w, frame.h, dst, spec, threads).unwrap();
    // The baseline kernels first, against the reference; then each wider level the CPU has.
    let mut out = Vec::new();
    for level in levels() {
        conv.set_simd(level);
        assert_eq!(conv.simd(), level);
        out = vec![0xeeu8; dst.bytes() + 7];
        conv.convert(&frame.image(), &mut out).unwrap();
        compare(frame, &dst, spec, &out);
    }
    out
}

fn compare(frame: &Frame, dst: &DstLayout, spec: &ConvertSpec, out: &[u8]) {
    let dst = *dst;
    let (lo, hi) = bounds(dst.dtype);
    for y in 0..dst.height {
        for x in 0..dst.width {
            for ch in 0..dst.colorspace.channels() {
                let want = reference(frame, &dst, spec, x, y, ch);
                let got = stored(out, &dst, x, y, ch);
                let tol = match dst.dtype {
                    DType::F16 => 1e-3 + want.abs() * 1e-3,
                    d if d.is_float() => 1e-3,
                    _ => 1.0,
                };
                let want_stored =
                    if dst.dtype.is_float() { want } else { want.round_ties_even().clamp(lo, hi) };
                assert!(
                    (got - want_stored).abs() <= tol,
                    "{:?} → {:?} chw={} {:?} {:?}: pixel ({x},{y}) ch {ch}: got {got}, reference {want}",
                    frame.format,
                    dst.colorspace,
                    dst.chw,
                    dst.dtype,
                    spec.fit
                );
            }
        }
    }
    assert!(out[dst.bytes()..].iter().all(|&b| b == 0xee), "nothing written past the layout");
}

#[test]
fn every_format_colorspace_layout_and_fit_matches_the_reference() {
    let mut n = 0;
    for (i, format) in formats().enumerate() {
        let frame = Frame::random(format, 37, 23, i as u64);
        for cs in COLORSPACES {
            for chw in [false, true] {
                for fit in FITS {
                    let dst = DstLayout::dense(29, 31, cs, chw, DType::U8);
                    let spec = ConvertSpec { fit, fill: [10, 200, 30, 40], ..Default::default() };
                    check(&frame, dst, &spec, 1);
                    n += 1;
                }
            }
        }
    }
    assert_eq!(n, 15 * 4 * 2 * 3);
}

#[test]
fn every_dtype_with_normalization_and_quantization() {
    let frame = Frame::random(PixelFormat::Nv12, 41, 27, 7);
    for &dtype in DType::ALL {
        let dst = DstLayout::dense(33, 19, Colorspace::Rgb, true, dtype);
        check(&frame, dst, &ConvertSpec::default(), 1);
    }
    let imagenet =
        ConvertSpec { mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225], ..Default::default() };
    // The outputs with a fused colour-and-store kernel, in every channel count and layout.
    for source in [PixelFormat::Nv12, PixelFormat::Rgba, PixelFormat::Gray8] {
        let frame = Frame::random(source, 41, 27, 8);
        for cs in COLORSPACES {
            for chw in [false, true] {
                for (dtype, spec) in [
                    (DType::U8, ConvertSpec::default()),
                    (DType::I8, ConvertSpec::default()),
                    (DType::F32, imagenet.clone()),
                ] {
                    check(&frame, DstLayout::dense(35, 19, cs, chw, dtype), &spec, 1);
                }
            }
        }
    }
    for dtype in [DType::F16, DType::F32, DType::F64] {
        check(&frame, DstLayout::dense(33, 19, Colorspace::Rgb, false, dtype), &imagenet, 1);
    }
    let quant = |q, z| ConvertSpec { quantization: Some((q, z)), ..imagenet.clone() };
    check(&frame, DstLayout::dense(33, 19, Colorspace::Bgr, false, DType::I8), &quant(0.0187, -14), 1);
    check(&frame, DstLayout::dense(33, 19, Colorspace::Rgb, true, DType::U8), &quant(0.0187, 114), 1);
    check(
        &frame,
        DstLayout::dense(33, 19, Colorspace::Rgba, false, DType::U8),
        &ConvertSpec { quantization: Some((1.0 / 255.0, 0)), ..Default::default() },
        1,
    );
}

#[test]
fn colorimetry_nearest_region_placement_and_padded_destinations() {
    let frame = Frame::random(PixelFormat::Yuy2, 45, 29, 3);
    for colorimetry in [Colorimetry::BT601_FULL, Colorimetry::BT709_LIMITED, Colorimetry::BT2020_LIMITED] {
        check(
            &frame,
            DstLayout::dense(20, 20, Colorspace::Rgb, false, DType::U8),
            &ConvertSpec { colorimetry, ..Default::default() },
            1,
        );
    }
    let nearest = ConvertSpec { interpolation: Interpolation::Nearest, ..Default::default() };
    check(
        &Frame::random(PixelFormat::I420, 45, 29, 4),
        DstLayout::dense(60, 50, Colorspace::Rgb, true, DType::F32),
        &nearest,
        1,
    );
    let region = ConvertSpec {
        source_region: Some(Region::new(5, 3, 21, 17)),
        fit: FitMode::CenterCrop,
        ..Default::default()
    };
    check(
        &Frame::random(PixelFormat::Nv21, 45, 29, 5),
        DstLayout::dense(16, 9, Colorspace::Bgr, false, DType::U8),
        &region,
        1,
    );
    let top_left = ConvertSpec { placement: LetterboxPlacement::TopLeft, ..Default::default() };
    check(
        &Frame::random(PixelFormat::Rgb, 45, 29, 6),
        DstLayout::dense(32, 32, Colorspace::Rgb, false, DType::U8),
        &top_left,
        1,
    );
    // Destination rows and planes with padding (a pool buffer's 64-byte pitch).
    let mut padded = DstLayout::dense(21, 13, Colorspace::Rgb, false, DType::U8);
    padded.row_stride = 128;
    check(&frame, padded, &ConvertSpec::default(), 1);
    let mut planar = DstLayout::dense(21, 13, Colorspace::Rgb, true, DType::F32);
    planar.row_stride = 128;
    planar.plane_stride = 128 * 16;
    check(&frame, planar, &ConvertSpec::default(), 1);
}

#[test]
fn threads_give_the_same_bytes() {
    let frame = Frame::random(PixelFormat::Nv12, 161, 91, 9);
    let dst = DstLayout::dense(97, 103, Colorspace::Rgb, true, DType::F32);
    let one = check(&frame, dst, &ConvertSpec::default(), 1);
    let three = check(&frame, dst, &ConvertSpec::default(), 3);
    assert_eq!(one, three);
    // Threads take rows in chunks, and a multi-tap filter refills its window at each chunk's
    // start: every filter gives one thread's bytes, downscaling and upscaling.
    use edgefirst_tensor::preprocess::Interpolation as I;
    let wide = Frame::random(PixelFormat::Nv12, 640, 360, 4);
    for interpolation in [I::Nearest, I::Area, I::BilinearAntialias, I::Bicubic, I::BicubicOpencv] {
        let spec = ConvertSpec { interpolation, ..Default::default() };
        for (w, h) in [(213, 150), (700, 420)] {
            let dst = DstLayout::dense(w, h, Colorspace::Rgb, false, DType::U8);
            let mut one = vec![0u8; dst.bytes()];
            let mut three = vec![1u8; dst.bytes()];
            Converter::new(wide.format, wide.w, wide.h, dst, &spec, 1)
                .unwrap()
                .convert(&wide.image(), &mut one)
                .unwrap();
            Converter::new(wide.format, wide.w, wide.h, dst, &spec, 3)
                .unwrap()
                .convert(&wide.image(), &mut three)
                .unwrap();
            assert!(one == three, "{interpolation:?} to {w}x{h}: three threads differ from one");
        }
    }
}

#[test]
fn letterbox_geometry_and_fill() {
    let frame = Frame::random(PixelFormat::Rgb, 64, 32, 1);
    let dst = DstLayout::dense(32, 32, Colorspace::Rgb, false, DType::U8);
    let conv = Converter::new(
        PixelFormat::Rgb,
        64,
        32,
        dst,
        &ConvertSpec { fill: [1, 2, 3, 255], ..Default::default() },
        1,
    )
    .unwrap();
    assert_eq!(conv.content().rect, Region::new(0, 8, 32, 16));
    let mut out = vec![0u8; dst.bytes()];
    conv.convert(&frame.image(), &mut out).unwrap();
    assert_eq!(&out[..3], &[1, 2, 3], "top padding is the fill colour");
    assert_eq!(&out[31 * 96..31 * 96 + 3], &[1, 2, 3], "bottom padding too");
}

#[test]
fn bad_input_is_refused() {
    let dst = DstLayout::dense(8, 8, Colorspace::Rgb, false, DType::U8);
    let spec = ConvertSpec::default();
    assert!(Converter::new(PixelFormat::H264, 8, 8, dst, &spec, 1).is_err());
    let conv = Converter::new(PixelFormat::Nv12, 16, 16, dst, &spec, 1).unwrap();
    let frame = Frame::random(PixelFormat::Nv12, 16, 16, 2);
    let mut short = frame.image();
    short.planes[1].0 = &short.planes[1].0[..10];
    assert!(conv.convert(&short, &mut vec![0; dst.bytes()]).is_err(), "a short chroma plane");
    assert!(conv.convert(&frame.image(), &mut vec![0; dst.bytes() - 1]).is_err(), "a short destination");
    let other = Frame::random(PixelFormat::Nv12, 18, 16, 2);
    assert!(conv.convert(&other.image(), &mut vec![0; dst.bytes()]).is_err(), "another geometry");
    let norm = ConvertSpec { mean: [0.5; 3], ..Default::default() };
    assert!(
        Converter::new(PixelFormat::Rgb, 8, 8, dst, &norm, 1).is_err(),
        "mean/std on uint8 without quantization"
    );
    let region = ConvertSpec { source_region: Some(Region::new(10, 0, 8, 8)), ..Default::default() };
    assert!(Converter::new(PixelFormat::Rgb, 16, 16, dst, &region, 1).is_err());
    let q16 = ConvertSpec { quantization: Some((0.1, 0)), ..Default::default() };
    assert!(Converter::new(
        PixelFormat::Rgb,
        8,
        8,
        DstLayout::dense(8, 8, Colorspace::Rgb, false, DType::U16),
        &q16,
        1
    )
    .is_err());
}

#[test]
fn integer_ratio_downscales_take_the_direct_paths() {
    // 96x72 → 32x24 puts every tap on a source sample (weight 0): rows are gathered straight
    // from the frame, four-byte pixels in one gather each. Compared like every other case.
    for (i, format) in formats().enumerate() {
        let frame = Frame::random(format, 96, 72, 100 + i as u64);
        for cs in [Colorspace::Rgb, Colorspace::Rgba] {
            let spec = ConvertSpec { fit: FitMode::Stretch, ..Default::default() };
            check(&frame, DstLayout::dense(32, 24, cs, false, DType::U8), &spec, 1);
            check(&frame, DstLayout::dense(32, 32, cs, true, DType::F32), &ConvertSpec::default(), 2);
        }
    }
}

#[test]
fn frames_ending_at_their_last_pixel() {
    // No byte after a plane's last pixel: wide reads (16-byte windows, dword gathers) near the
    // end of a plane must fall back, never read past it or give up.
    for (i, format) in formats().enumerate() {
        let frame = Frame::random(format, 96, 72, 200 + i as u64);
        for (w, h, fit) in
            [(32, 24, FitMode::Stretch), (48, 48, FitMode::Letterbox), (61, 37, FitMode::Stretch)]
        {
            let dst = DstLayout::dense(w, h, Colorspace::Rgb, false, DType::U8);
            let spec = ConvertSpec { fit, ..Default::default() };
            for level in levels() {
                let mut conv = Converter::new(format, 96, 72, dst, &spec, 1).unwrap();
                conv.set_simd(level);
                let mut out = vec![0xeeu8; dst.bytes() + 7];
                conv.convert(&frame.image_exact(), &mut out).unwrap();
                compare(&frame, &dst, &spec, &out);
            }
        }
    }
}

/// The normalizations each output type takes: none; mean/std, and a zero mean (float outputs);
/// quantization with and without mean/std (8-bit outputs).
fn specs_for(dtype: DType) -> Vec<ConvertSpec> {
    let imagenet =
        ConvertSpec { mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225], ..Default::default() };
    let mut specs = vec![ConvertSpec::default()];
    match dtype {
        d if d.is_float() => {
            specs.push(imagenet);
            specs.push(ConvertSpec { mean: [0.0; 3], std: [0.5, 0.25, 2.0], ..Default::default() });
        }
        DType::U8 | DType::I8 => {
            let zp = if dtype == DType::U8 { 114 } else { -14 };
            specs.push(ConvertSpec { quantization: Some((0.0187, zp)), ..imagenet });
            let q = if dtype == DType::U8 { (1.0 / 200.0, 7) } else { (1.0 / 128.0, -1) };
            specs.push(ConvertSpec { quantization: Some(q), ..Default::default() });
        }
        _ => {}
    }
    specs
}

/// Every kernel level stores the same bytes: for every input format, output type, layout and
/// normalization (colourspaces in turn), on an exact 2x upscale (taps a quarter and three
/// quarters between samples, so many values land exactly on .5 and the rounding rule decides)
/// and a letterboxed downscale by a non-integer ratio; bilinear at every output type, the
/// multi-tap filters at those with a fused finish (the levels differ in the finish alone).
#[test]
fn every_level_gives_the_same_bytes() {
    let levels = levels();
    assert_vector_levels_tested(&levels);
    let mut compared = 0;
    let filters = std::iter::once((Interpolation::Bilinear, DType::ALL))
        .chain(MULTI_TAP.map(|f| (f, &[DType::U8, DType::I8, DType::F32][..])));
    for (interpolation, dtypes) in filters {
        for (i, format) in formats().enumerate() {
            let cases = [
                (Frame::random(format, 16, 12, 300 + i as u64), (32, 24), FitMode::Stretch),
                (Frame::random(format, 37, 23, 400 + i as u64), (29, 17), FitMode::Letterbox),
                // Past 2×: four-byte pixels with both taps take windows of one output.
                (Frame::random(format, 101, 31, 500 + i as u64), (40, 12), FitMode::Stretch),
            ];
            for (frame, (w, h), fit) in &cases {
                for (k, &dtype) in dtypes.iter().enumerate() {
                    for chw in [false, true] {
                        let cs = COLORSPACES[(i + k + usize::from(chw)) % 4];
                        for base in specs_for(dtype) {
                            let spec = ConvertSpec { fit: *fit, interpolation, ..base };
                            let dst = DstLayout::dense(*w, *h, cs, chw, dtype);
                            let mut conv = Converter::new(format, frame.w, frame.h, dst, &spec, 1).unwrap();
                            let mut outs = levels.iter().map(|&level| {
                                conv.set_simd(level);
                                let mut out = vec![0xeeu8; dst.bytes()];
                                conv.convert(&frame.image(), &mut out).unwrap();
                                out
                            });
                            let first = outs.next().unwrap();
                            for (out, level) in outs.zip(&levels[1..]) {
                                let esz = dtype.size();
                                let differs =
                                    out.chunks(esz).zip(first.chunks(esz)).position(|(a, b)| a != b);
                                if let Some(e) = differs {
                                    panic!(
                                    "{interpolation:?} {format:?} {}x{} → {w}x{h} {cs:?} chw={chw} {dtype:?} mean {:?} \
                                     std {:?} quantization {:?}: element {e} is {:?} at {level:?}, {:?} at {:?}",
                                    frame.w,
                                    frame.h,
                                    spec.mean,
                                    spec.std,
                                    spec.quantization,
                                    &out[e * esz..][..esz],
                                    &first[e * esz..][..esz],
                                    levels[0]
                                );
                                }
                                compared += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    // Where the CPU has wider levels than the baseline: every case above compared.
    assert!(levels.len() == 1 || compared >= 15 * 2 * (11 + 4 * 3) * 2 * (levels.len() - 1));
}

/// The multi-tap filters' vector blocks (the horizontal pass: 16 outputs a block with AVX-512, 8
/// with AVX2 and NEON) on frames wide enough to take them, at 1.5× to 6.5× downscales (one to
/// four 16-byte pieces per half block, 64- and 128-byte windows), an upscale, a source region that
/// starts mid-chroma-sample and cosited chroma: every level gives the baseline's bytes, and the
/// vector levels' kernels did the horizontal pass where a plan applies.
#[test]
fn multi_tap_blocks_give_the_baseline_bytes() {
    use edgefirst_tensor::preprocess::ChromaSite;
    let levels = levels();
    assert_vector_levels_tested(&levels);
    let cases = [
        (480, 270, 160, 160, FitMode::Letterbox, None),
        (301, 211, 97, 61, FitMode::Stretch, None),
        (200, 150, 133, 100, FitMode::Stretch, None),
        (650, 364, 100, 56, FitMode::Stretch, None),
        (100, 80, 230, 170, FitMode::Stretch, None),
        (320, 240, 96, 96, FitMode::CenterCrop, Some(Region::new(3, 5, 301, 221))),
    ];
    for (i, format) in formats().enumerate() {
        for (j, &(w, h, dw, dh, fit, region)) in cases.iter().enumerate() {
            let frame = Frame::random(format, w, h, 900 + (i * 10 + j) as u64);
            for interpolation in MULTI_TAP {
                let site = if j % 2 == 1 { ChromaSite::COSITED } else { ChromaSite::CENTRED };
                let spec = ConvertSpec {
                    fit,
                    interpolation,
                    source_region: region,
                    chroma_site: site,
                    ..Default::default()
                };
                let dst = DstLayout::dense(dw, dh, Colorspace::Rgb, false, DType::U8);
                let mut conv = Converter::new(format, w, h, dst, &spec, 1).unwrap();
                let mut first = None;
                for &level in &levels {
                    conv.set_simd(level);
                    let before = conv.kernel_counts().sampled;
                    let mut out = vec![0xeeu8; dst.bytes()];
                    conv.convert(&frame.image(), &mut out).unwrap();
                    let sampled = conv.kernel_counts().sampled - before;
                    let what =
                        format!("{interpolation:?} {format:?} {w}x{h} -> {dw}x{dh} {fit:?} at {level:?}");
                    match &first {
                        None => first = Some(out),
                        Some(want) => {
                            let at = out.iter().zip(want).position(|(a, b)| a != b);
                            assert!(at.is_none(), "{what}: byte {at:?} differs from the baseline's");
                        }
                    }
                    if level == Simd::Baseline {
                        assert_eq!(sampled, 0, "{what}");
                    } else if j == 0 && interpolation == Interpolation::Area {
                        // 3× with three or four taps: every component's plan fits its windows.
                        assert!(sampled > 0, "{what}: no vector block ran");
                    }
                }
            }
        }
    }
}

/// Float outputs store +0.0 for a zero, never -0.0 (a model or a checksum can tell them apart):
/// black frames (all-zero bytes, and YUV's black, which the matrix and the clamp bring to zero),
/// a zero mean, a negative std, black padding, at every level.
#[test]
fn float_outputs_have_no_negative_zero() {
    let specs = [
        ConvertSpec::default(),
        ConvertSpec { mean: [0.0; 3], std: [0.5, 0.25, 2.0], ..Default::default() },
        ConvertSpec { mean: [-0.0; 3], std: [-0.5, 0.25, -2.0], ..Default::default() },
        ConvertSpec { mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225], ..Default::default() },
    ];
    let (mut checked, mut failures) = (0, Vec::new());
    for (i, format) in formats().enumerate() {
        let frames = [
            Frame::flat(format, 24, 16, 0, 0),
            Frame::flat(format, 24, 16, 16, 128),
            Frame::random(format, 24, 16, 500 + i as u64),
        ];
        for frame in &frames {
            for dtype in [DType::F16, DType::F32, DType::F64] {
                for (k, cs) in COLORSPACES.into_iter().enumerate() {
                    let chw = k % 2 == 1;
                    for base in &specs {
                        let spec = ConvertSpec { fill: [0, 0, 0, 0], ..base.clone() };
                        // Letterboxed into a square: padding rows and content.
                        let dst = DstLayout::dense(20, 20, cs, chw, dtype);
                        let mut conv = Converter::new(format, frame.w, frame.h, dst, &spec, 1).unwrap();
                        for level in levels() {
                            conv.set_simd(level);
                            let mut out = vec![0u8; dst.bytes()];
                            conv.convert(&frame.image(), &mut out).unwrap();
                            let negative_zero = |b: &[u8]| match dtype {
                                DType::F16 => u16::from_ne_bytes(b.try_into().unwrap()) == 0x8000,
                                DType::F32 => f32::from_ne_bytes(b.try_into().unwrap()).to_bits() == 1 << 31,
                                _ => f64::from_ne_bytes(b.try_into().unwrap()).to_bits() == 1 << 63,
                            };
                            if let Some(at) = out.chunks(dtype.size()).position(negative_zero) {
                                failures.push(format!(
                                    "{format:?} → {cs:?} chw={chw} {dtype:?} {level:?} mean {:?} std {:?}: \
                                     -0.0 at element {at}",
                                    spec.mean, spec.std
                                ));
                            }
                            checked += 1;
                        }
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked}:\n{}",
        failures.len(),
        failures[..failures.len().min(20)].join("\n")
    );
    assert!(checked >= 15 * 3 * 3 * 4 * 4);
}

/// `f` must not panic; a panic fails the test with `what` (the inputs) in the message.
fn no_panic<T>(what: impl Fn() -> String, f: impl FnOnce() -> T) -> T {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
            panic!("panicked on {}: {}", what(), msg.unwrap_or_default());
        }
    }
}

/// Source regions whose ends pass usize::MAX are refused, not wrapped round into the frame (in a
/// release build a wrapped x + width passed the bounds check, and the plan indexed from x).
#[test]
fn regions_past_usize_max_are_errors() {
    let m = usize::MAX;
    let regions = [
        Region::new(m - 1, 0, 2, 48),
        Region::new(0, m - 1, 64, 2),
        Region::new(m, m, m, m),
        Region::new(1, 0, m, 48),
        Region::new(0, 1, 64, m),
        Region::new(m / 2 + 1, 0, m / 2 + 1, 48),
        Region::new(63, 47, m - 62, m - 46),
    ];
    for format in [PixelFormat::Nv12, PixelFormat::Rgb, PixelFormat::Yuy2] {
        for interpolation in [Interpolation::Nearest, Interpolation::Bilinear].into_iter().chain(MULTI_TAP) {
            for fit in FITS {
                for region in regions {
                    let spec =
                        ConvertSpec { source_region: Some(region), interpolation, fit, ..Default::default() };
                    let dst = DstLayout::dense(32, 32, Colorspace::Rgb, false, DType::U8);
                    let what = || format!("{format:?} 64x48 {region:?} {interpolation:?} {fit:?}");
                    let made = no_panic(what, || Converter::new(format, 64, 48, dst, &spec, 1));
                    assert!(made.is_err(), "{} was accepted", what());
                }
            }
        }
    }
}

/// Destination sizes and strides whose byte counts overflow usize are refused.
#[test]
fn destination_sizes_past_usize_max_are_errors() {
    let m = usize::MAX;
    let dense = |w, h, cs, chw, dtype| {
        no_panic(|| format!("dense {w}x{h}"), || DstLayout::dense(w, h, cs, chw, dtype))
    };
    let mut layouts = vec![
        dense(m / 2, 1, Colorspace::Rgb, false, DType::U8),
        dense(m / 2, 2, Colorspace::Gray, false, DType::U8),
        dense(1, m / 2, Colorspace::Rgb, true, DType::F32),
        dense(m, m, Colorspace::Rgba, true, DType::F64),
        dense(1 << 40, 1 << 40, Colorspace::Rgb, false, DType::U8),
    ];
    let mut strided = DstLayout::dense(32, 32, Colorspace::Rgb, false, DType::U8);
    strided.row_stride = m / 4;
    layouts.push(strided);
    let mut planar = DstLayout::dense(32, 32, Colorspace::Rgb, true, DType::F32);
    planar.plane_stride = m / 2;
    layouts.push(planar);
    planar.plane_stride = m;
    planar.row_stride = m / 32;
    layouts.push(planar);
    for dst in layouts {
        let what = || format!("{dst:?}");
        let made =
            no_panic(what, || Converter::new(PixelFormat::Nv12, 64, 48, dst, &ConvertSpec::default(), 1));
        assert!(made.is_err(), "{} was accepted", what());
        no_panic(what, || dst.bytes());
    }
}

/// A source plane whose stride times rows overflows is refused, not wrapped to a small size that
/// the plane's bytes appear to hold.
#[test]
fn source_planes_past_usize_max_are_errors() {
    let dst = DstLayout::dense(32, 32, Colorspace::Rgb, false, DType::U8);
    let frame = Frame::random(PixelFormat::Nv12, 64, 48, 11);
    for interpolation in [Interpolation::Nearest, Interpolation::Bilinear] {
        let spec = ConvertSpec { interpolation, ..Default::default() };
        let conv = Converter::new(PixelFormat::Nv12, 64, 48, dst, &spec, 1).unwrap();
        // usize::MAX / 47 + 1: the luma plane's 47 row steps wrap round to a few bytes, which
        // the plane holds (the chroma plane's 23 likewise); the others wrap to huge sizes.
        for stride in [usize::MAX / 47 + 1, usize::MAX / 23 + 1, usize::MAX / 2, usize::MAX] {
            for plane in 0..2 {
                let mut img = frame.image();
                img.planes[plane].1 = stride;
                let mut out = vec![0u8; dst.bytes()];
                let what = || format!("plane {plane} stride {stride} {interpolation:?}");
                let r = no_panic(what, || conv.convert(&img, &mut out));
                assert!(r.is_err(), "{} was accepted", what());
            }
        }
    }
}

/// A deterministic generator for the walk below.
struct Walk(u64);

impl Walk {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n
    }

    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.below(from.len())]
    }

    /// Mostly a small size, sometimes an extreme one.
    fn size(&mut self, extremes: &[usize]) -> usize {
        if self.below(8) == 0 {
            self.pick(extremes)
        } else {
            1 + self.below(40)
        }
    }
}

/// A bounded walk over hostile geometry: source sizes, regions, destination sizes and strides and
/// source plane strides and lengths, drawn from small values and extremes. `Converter::new` and
/// `convert` answer Ok or Err and never panic, and what they accept converts a real frame.
#[test]
fn random_geometry_never_panics() {
    let m = usize::MAX;
    let extremes = [0, 1, 2, 3, 1000, (1 << 24) + 1, u32::MAX as usize, m / 3, m / 2, m / 2 + 1, m - 1, m];
    let formats: Vec<PixelFormat> = formats().collect();
    let mut walk = Walk(0x853c_49e6_748f_ea9b);
    let (mut accepted, mut converted) = (0, 0);
    for iteration in 0..1000 {
        let format = walk.pick(&formats);
        let (sw, sh) = (walk.size(&extremes), walk.size(&extremes));
        let source_region = match walk.below(3) {
            0 => None,
            1 if (1..=40).contains(&sw) && (1..=40).contains(&sh) => {
                let (x, y) = (walk.below(sw), walk.below(sh));
                Some(Region::new(x, y, 1 + walk.below(sw - x), 1 + walk.below(sh - y)))
            }
            _ => {
                let (x, y) = (walk.size(&extremes).saturating_sub(1), walk.size(&extremes).saturating_sub(1));
                Some(Region::new(x, y, walk.size(&extremes), walk.size(&extremes)))
            }
        };
        let (dtype, cs, chw) = (walk.pick(DType::ALL), walk.pick(&COLORSPACES), walk.below(2) == 1);
        let (dw, dh) = (walk.size(&extremes), walk.size(&extremes));
        let mut dst = no_panic(|| format!("dense {dw}x{dh}"), || DstLayout::dense(dw, dh, cs, chw, dtype));
        match walk.below(6) {
            0 => dst.row_stride = walk.pick(&extremes),
            1 => dst.plane_stride = walk.pick(&extremes),
            2 => dst.row_stride = dst.row_stride.saturating_add(walk.below(9)),
            _ => {}
        }
        let spec = ConvertSpec {
            fit: walk.pick(&FITS),
            interpolation: walk.pick(&[
                Interpolation::Nearest,
                Interpolation::Bilinear,
                Interpolation::Area,
                Interpolation::BilinearAntialias,
                Interpolation::Bicubic,
                Interpolation::BicubicOpencv,
            ]),
            source_region,
            ..Default::default()
        };
        let what = || {
            format!(
                "iteration {iteration}: {format:?} {sw}x{sh} {:?} → {dst:?} {:?} {:?}",
                spec.source_region, spec.fit, spec.interpolation
            )
        };
        let Ok(conv) = no_panic(what, || Converter::new(format, sw, sh, dst, &spec, 1)) else {
            continue;
        };
        accepted += 1;
        if sw * sh > 4096 || dst.bytes() > 1 << 20 {
            continue;
        }
        let frame = Frame::random(format, sw, sh, iteration);
        let mut img = frame.image();
        let plane = walk.below(format.num_planes());
        match walk.below(5) {
            0 => img.planes[plane].1 = walk.pick(&extremes),
            1 => img.planes[plane].0 = &img.planes[plane].0[..walk.below(img.planes[plane].0.len() + 1)],
            _ => {}
        }
        let mut out = vec![0u8; dst.bytes() + 3 - walk.below(5)];
        let (len, stride, out_len) = (img.planes[plane].0.len(), img.planes[plane].1, out.len());
        let converting = || {
            format!(
                "{}, plane {plane} of {len} bytes at stride {stride}, {out_len} destination bytes",
                what()
            )
        };
        if no_panic(converting, || conv.convert(&img, &mut out)).is_ok() {
            converted += 1;
        }
    }
    assert!(
        accepted >= 250 && converted >= 120,
        "the walk converted too: {accepted} plans, {converted} frames"
    );
}

/// Mean, std and quantization each finite but together past f32 (a bias of -inf, and +inf from a
/// bright pixel: NaN) are refused when planned, not converted into NaN bytes.
#[test]
fn normalization_past_f32_is_refused() {
    let dst = DstLayout::dense(16, 16, Colorspace::Rgb, false, DType::U8);
    let spec =
        ConvertSpec { mean: [0.5; 3], std: [1e-30; 3], quantization: Some((1e-10, 0)), ..Default::default() };
    let made = no_panic(
        || "1e-30 std, 1e-10 scale".into(),
        || Converter::new(PixelFormat::Rgb, 16, 16, dst, &spec, 1),
    );
    if let Ok(conv) = made {
        let frame = Frame::flat(PixelFormat::Rgb, 16, 16, 255, 0);
        let mut out = vec![0u8; dst.bytes()];
        no_panic(|| "converting".into(), || conv.convert(&frame.image(), &mut out)).ok();
        panic!("accepted; converted a white frame to {:?}", &out[..3]);
    }
    let float = DstLayout::dense(16, 16, Colorspace::Rgb, false, DType::F32);
    let spec = ConvertSpec { mean: [0.5; 3], std: [1e-40; 3], ..Default::default() };
    assert!(Converter::new(PixelFormat::Rgb, 16, 16, float, &spec, 1).is_err(), "a bias of -inf");
}

/// A converter set to a vector level takes that level's explicit kernels for the camera formats
/// (sampling straight from the frame and the fused finish), at every output type that has them,
/// hwc and chw; the baseline takes none. On aarch64 this is what tells `Simd::Neon` from a
/// baseline under another name.
#[test]
fn vector_levels_take_their_kernels() {
    let levels = levels();
    assert_vector_levels_tested(&levels);
    let sources = [
        PixelFormat::Nv12,
        PixelFormat::Nv21,
        PixelFormat::Yuy2,
        PixelFormat::Uyvy,
        PixelFormat::Rgba,
        PixelFormat::Rgb,
        PixelFormat::Bgrx,
        PixelFormat::I420,
        PixelFormat::Gray8,
    ];
    let imagenet =
        ConvertSpec { mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225], ..Default::default() };
    for (i, format) in sources.into_iter().enumerate() {
        // 1.5x and 3x downscales (NV12's taps on samples at 3x: one tap per row) and a 2x upscale.
        for (w, h, dw, dh) in [(96, 64, 64, 40), (192, 96, 64, 32), (32, 24, 64, 48)] {
            let frame = Frame::random(format, w, h, 700 + i as u64);
            for (dtype, spec) in [
                (DType::U8, ConvertSpec::default()),
                (DType::I8, ConvertSpec::default()),
                (DType::F32, imagenet.clone()),
            ] {
                for (chw, cs) in
                    [(false, Colorspace::Rgb), (true, Colorspace::Bgr), (false, Colorspace::Rgba)]
                {
                    let dst = DstLayout::dense(dw, dh, cs, chw, dtype);
                    let spec = ConvertSpec { fit: FitMode::Stretch, ..spec.clone() };
                    for &level in &levels {
                        let mut conv = Converter::new(format, w, h, dst, &spec, 1).unwrap();
                        conv.set_simd(level);
                        let mut out = vec![0u8; dst.bytes()];
                        conv.convert(&frame.image(), &mut out).unwrap();
                        let counts = conv.kernel_counts();
                        let what =
                            format!("{format:?} {w}x{h} → {dw}x{dh} {cs:?} chw={chw} {dtype:?} at {level:?}");
                        if level == Simd::Baseline {
                            assert_eq!(counts, Default::default(), "{what}: the baseline counts nothing");
                            continue;
                        }
                        // Every content pixel through the fused finish (widths are whole blocks),
                        // every component of it sampled by the level's kernels, but where a
                        // window load would pass the frame's last byte (the bottom rows of a
                        // packed frame take the baseline's rows there).
                        let components = match format {
                            PixelFormat::Rgba => 4,
                            PixelFormat::Gray8 => 1,
                            _ => 3,
                        };
                        let pixels = (dw * dh) as u64;
                        assert_eq!(counts.finished, pixels, "{what}: fused finish");
                        // The output rows over the last two source rows (and one for rounding).
                        let bottom = 2 * dh.div_ceil(h) + 1;
                        let most = components * (dw * (dh - bottom)) as u64;
                        assert!(
                            (most..=components * pixels).contains(&counts.sampled),
                            "{what}: sampling {} of {}",
                            counts.sampled,
                            components * pixels
                        );
                    }
                }
            }
        }
    }
}

/// The multi-tap filters' weights sum to exactly one (plan::TAP_STEPS; PIL's to one within its
/// rounding, which its half-up shift absorbs): a flat frame of every format converts to the bytes
/// bilinear gives it, in every fit, at downscales up to 16x (many taps) and an upscale. And at the
/// source's own size each filter is the identity: every kernel is 1 at 0 and 0 at whole samples.
#[test]
fn multi_tap_filters_keep_flat_frames_flat_and_sizes_identical() {
    for format in formats() {
        for (w, h, dw, dh) in [(64, 48, 29, 17), (160, 128, 10, 8), (13, 9, 40, 31)] {
            let frame = Frame::flat(format, w, h, 77, 140);
            for fit in FITS {
                let dst = DstLayout::dense(dw, dh, Colorspace::Rgb, false, DType::U8);
                let convert = |interpolation| {
                    let spec = ConvertSpec { fit, interpolation, ..Default::default() };
                    let conv = Converter::new(format, w, h, dst, &spec, 1).unwrap();
                    let mut out = vec![0u8; dst.bytes()];
                    conv.convert(&frame.image_exact(), &mut out).unwrap();
                    out
                };
                let want = convert(Interpolation::Bilinear);
                for interpolation in MULTI_TAP {
                    assert!(
                        convert(interpolation) == want,
                        "{interpolation:?} {format:?} {w}x{h} -> {dw}x{dh} {fit:?}: a flat frame changed"
                    );
                }
            }
        }
    }
    for format in [PixelFormat::Rgb, PixelFormat::Bgra, PixelFormat::Gray8, PixelFormat::PlanarRgb] {
        let frame = Frame::random(format, 37, 23, 11);
        let dst = DstLayout::dense(37, 23, Colorspace::Rgb, false, DType::U8);
        let out = |interpolation| {
            let spec = ConvertSpec { fit: FitMode::Stretch, interpolation, ..Default::default() };
            let mut out = vec![0u8; dst.bytes()];
            Converter::new(format, 37, 23, dst, &spec, 1).unwrap().convert(&frame.image(), &mut out).unwrap();
            out
        };
        let nearest = out(Interpolation::Nearest);
        for interpolation in MULTI_TAP {
            assert!(out(interpolation) == nearest, "{interpolation:?} {format:?}: not the identity at 1:1");
        }
    }
}

/// Area at an integer ratio is the mean of each output's block, rounded to nearest (ties to
/// even); bilinear-antialias at 2x is PIL's triangle over four samples, weights 1/8, 3/8, 3/8,
/// 1/8 (PIL's rounding: half up), the tap past each edge dropped and the rest renormalized
/// (3/7, 3/7, 1/7).
#[test]
fn area_and_triangle_weights_at_integer_ratios() {
    let frame = Frame::random(PixelFormat::Gray8, 24, 16, 12);
    let px = |x: usize, y: usize| frame.byte(0, y, x);
    let run = |interpolation, dw, dh| {
        let dst = DstLayout::dense(dw, dh, Colorspace::Gray, false, DType::F32);
        let spec = ConvertSpec { fit: FitMode::Stretch, interpolation, ..Default::default() };
        let mut out = vec![0u8; dst.bytes()];
        Converter::new(PixelFormat::Gray8, 24, 16, dst, &spec, 1)
            .unwrap()
            .convert(&frame.image(), &mut out)
            .unwrap();
        out.chunks_exact(4)
            .map(|b| f32::from_ne_bytes(b.try_into().unwrap()) as f64 * 255.0)
            .collect::<Vec<_>>()
    };
    let area = run(Interpolation::Area, 8, 4);
    for y in 0..4 {
        for x in 0..8 {
            let mean = (0..4)
                .flat_map(|j| (0..3).map(move |i| (3 * x + i, 4 * y + j)))
                .map(|(a, b)| px(a, b))
                .sum::<f64>()
                / 12.0;
            assert!((area[y * 8 + x] - mean).abs() < 0.05, "area ({x},{y}): {} vs {mean}", area[y * 8 + x]);
        }
    }
    let tri = run(Interpolation::BilinearAntialias, 12, 16);
    for y in 0..16 {
        for x in 0..12 {
            let taps: Vec<(usize, f64)> = match x {
                0 => vec![(0, 3.0 / 7.0), (1, 3.0 / 7.0), (2, 1.0 / 7.0)],
                11 => vec![(21, 1.0 / 7.0), (22, 3.0 / 7.0), (23, 3.0 / 7.0)],
                _ => vec![(2 * x - 1, 0.125), (2 * x, 0.375), (2 * x + 1, 0.375), (2 * x + 2, 0.125)],
            };
            let want = (taps.iter().map(|&(i, w)| w * px(i, y)).sum::<f64>() + 0.5).floor();
            assert_eq!(tri[y * 12 + x].round(), want, "triangle ({x},{y})");
        }
    }
}

/// Converting twice, on one band and on three, gives the same bytes (each band's ring of filtered
/// rows starts empty); a 16x downscale plans, and one past MAX_TAPS is refused, not allocated.
#[test]
fn multi_tap_threads_and_wide_downscales() {
    let frame = Frame::random(PixelFormat::Nv12, 161, 91, 13);
    for interpolation in MULTI_TAP {
        let dst = DstLayout::dense(97, 53, Colorspace::Rgb, true, DType::F32);
        let spec = ConvertSpec { interpolation, ..Default::default() };
        let run = |threads| {
            let conv = Converter::new(PixelFormat::Nv12, 161, 91, dst, &spec, threads).unwrap();
            let mut out = vec![0u8; dst.bytes()];
            conv.convert(&frame.image(), &mut out).unwrap();
            let first = out.clone();
            conv.convert(&frame.image(), &mut out).unwrap();
            assert!(first == out, "{interpolation:?}: a second frame differs");
            out
        };
        assert!(run(1) == run(3), "{interpolation:?}: bands differ");
        let wide = Frame::random(PixelFormat::Rgb, 640, 480, 14);
        let dst = DstLayout::dense(40, 30, Colorspace::Rgb, false, DType::U8);
        let conv = Converter::new(PixelFormat::Rgb, 640, 480, dst, &spec, 1).unwrap();
        conv.convert(&wide.image(), &mut vec![0u8; dst.bytes()]).unwrap();
        let tiny = DstLayout::dense(2, 2, Colorspace::Rgb, false, DType::U8);
        let refused = Converter::new(PixelFormat::Rgb, 8192, 8192, tiny, &spec, 1);
        assert!(
            interpolation == Interpolation::BicubicOpencv || refused.is_err(),
            "{interpolation:?}: a 4096x downscale was planned"
        );
    }
}

/// Through each filter, an NV12 or YUY2 frame (chroma filtered at its own resolution) stays close
/// to the same frame decoded to RGB first (bilinear chroma upsampling, rounded to bytes) and then
/// resized: within 7 levels per pixel and 0.8 on average (measured: at most 6 and 0.65, on
/// 2.5x downscales to 2x upscales). The two differ by the chroma's extra
/// low-pass (the upsampling's triangle before the filter), the decoded bytes' rounding (0.5
/// level), and for the PIL presets the 8-bit rounding of Y, U and V between and after the passes
/// instead of R, G and B's, which the matrix amplifies (V to R by 1.4).
#[test]
fn yuv_through_each_filter_is_close_to_decode_then_resize() {
    let (w, h) = (96, 64);
    for format in [PixelFormat::Nv12, PixelFormat::Yuy2] {
        // Smooth luma with noise and chroma that varies over the frame: a camera's picture.
        let mut frame = Frame::flat(format, w, h, 0, 0);
        let mut state = 7u64;
        for (k, &(plane, off, step, hd, vd)) in comps(format).iter().enumerate() {
            let (start, stride) = frame.planes[plane];
            for r in 0..h.div_ceil(vd) {
                for c in 0..w.div_ceil(hd) {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let noise = ((state >> 60) as f64) - 7.5;
                    let (x, y) = ((c * hd) as f64 / w as f64, (r * vd) as f64 / h as f64);
                    let v = match k {
                        0 => 120.0 + 80.0 * (5.0 * x + 2.0 * y).sin() + noise,
                        1 => 128.0 + 40.0 * (3.0 * y - 2.0 * x).cos(),
                        _ => 128.0 + 40.0 * (4.0 * x + y).sin(),
                    };
                    frame.bytes[start + r * stride + off + step * c] = v.round().clamp(16.0, 235.0) as u8;
                }
            }
        }
        let full = DstLayout::dense(w, h, Colorspace::Rgb, false, DType::U8);
        let stretch = ConvertSpec { fit: FitMode::Stretch, ..Default::default() };
        let mut rgb = vec![0u8; full.bytes()];
        Converter::new(format, w, h, full, &stretch, 1).unwrap().convert(&frame.image(), &mut rgb).unwrap();
        let rgb_image = SrcImage {
            format: PixelFormat::Rgb,
            width: w,
            height: h,
            planes: [(&rgb, w * 3), (&[], 0), (&[], 0)],
        };
        for interpolation in MULTI_TAP {
            for (dw, dh, fit) in
                [(40, 40, FitMode::Letterbox), (31, 23, FitMode::Stretch), (200, 150, FitMode::Stretch)]
            {
                let dst = DstLayout::dense(dw, dh, Colorspace::Rgb, false, DType::U8);
                let spec = ConvertSpec { fit, interpolation, ..Default::default() };
                let (mut direct, mut decoded) = (vec![0u8; dst.bytes()], vec![0u8; dst.bytes()]);
                Converter::new(format, w, h, dst, &spec, 1)
                    .unwrap()
                    .convert(&frame.image(), &mut direct)
                    .unwrap();
                Converter::new(PixelFormat::Rgb, w, h, dst, &spec, 1)
                    .unwrap()
                    .convert(&rgb_image, &mut decoded)
                    .unwrap();
                let diffs: Vec<u8> = direct.iter().zip(&decoded).map(|(a, b)| a.abs_diff(*b)).collect();
                let max = *diffs.iter().max().unwrap();
                let mean = diffs.iter().map(|&d| d as f64).sum::<f64>() / diffs.len() as f64;
                println!("{format:?} {interpolation:?} {dw}x{dh} {fit:?}: max {max}, mean {mean:.3}");
                assert!(
                    max <= 7 && mean <= 0.8,
                    "{format:?} {interpolation:?} {dw}x{dh} {fit:?}: max {max}, mean {mean:.3}"
                );
            }
        }
    }
}
