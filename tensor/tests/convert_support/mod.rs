//! What the conversion tests share: frames of every format, the f64 reference written from the
//! definitions, the kernel levels this CPU has, and small generators.
#![allow(dead_code, unused_imports)] // each test binary uses its own subset

pub use edgefirst_tensor::convert::{
    Colorspace, ConvertSpec, Converter, DstLayout, KernelCounts, Simd, SrcImage,
};
pub use edgefirst_tensor::preprocess::{
    letterbox_rect, Colorimetry, FitMode, Interpolation, LetterboxPlacement, Region,
};
pub use edgefirst_tensor::{f16, DType, PixelFormat};

/// Every format with pixels (bitstreams have none to convert).
pub fn formats() -> impl Iterator<Item = PixelFormat> {
    PixelFormat::ALL.iter().copied().filter(|f| f.layout() != edgefirst_tensor::PixelLayout::Bitstream)
}
pub const COLORSPACES: [Colorspace; 4] =
    [Colorspace::Rgb, Colorspace::Bgr, Colorspace::Gray, Colorspace::Rgba];
pub const FITS: [FitMode; 3] = [FitMode::Stretch, FitMode::Letterbox, FitMode::CenterCrop];
/// The multi-tap filters (docs/resampling.md).
pub const MULTI_TAP: [Interpolation; 4] = [
    Interpolation::Area,
    Interpolation::BilinearAntialias,
    Interpolation::Bicubic,
    Interpolation::BicubicOpencv,
];

pub struct Frame {
    pub format: PixelFormat,
    pub w: usize,
    pub h: usize,
    pub bytes: Vec<u8>,
    pub planes: Vec<(usize, usize)>, // offset, stride
}

impl Frame {
    pub fn random(format: PixelFormat, w: usize, h: usize, seed: u64) -> Frame {
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
    pub fn flat(format: PixelFormat, w: usize, h: usize, luma: u8, chroma: u8) -> Frame {
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

    pub fn image(&self) -> SrcImage<'_> {
        let mut planes: [(&[u8], usize); 3] = [(&[], 0); 3];
        for (i, &(off, stride)) in self.planes.iter().enumerate() {
            planes[i] = (&self.bytes[off..], stride);
        }
        SrcImage { format: self.format, width: self.w, height: self.h, planes }
    }

    /// Each plane cut to the bytes its rows hold, nothing after the last row's last pixel (a
    /// frame at the very end of a buffer).
    pub fn image_exact(&self) -> SrcImage<'_> {
        let mut img = self.image();
        for (p, plane) in img.planes.iter_mut().enumerate().take(self.planes.len()) {
            let s = self.format.plane_sampling(p, 1);
            plane.0 = &plane.0[..(s.rows(self.h) - 1) * plane.1 + s.row_bytes(self.w)];
        }
        img
    }

    pub fn byte(&self, plane: usize, row: usize, col_byte: usize) -> f64 {
        let (off, stride) = self.planes[plane];
        self.bytes[off + row * stride + col_byte] as f64
    }
}

/// (plane, byte offset in granule, step, horizontal div, vertical div) of Y,U,V or R,G,B(,A).
pub fn comps(f: PixelFormat) -> Vec<(usize, usize, usize, usize, usize)> {
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
pub fn taps(
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
pub fn reference(frame: &Frame, dst: &DstLayout, spec: &ConvertSpec, x: usize, y: usize, ch: usize) -> f64 {
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
pub fn stored(out: &[u8], dst: &DstLayout, x: usize, y: usize, ch: usize) -> f64 {
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

pub fn bounds(d: DType) -> (f64, f64) {
    match d {
        DType::U8 => (0.0, 255.0),
        DType::I8 => (-128.0, 127.0),
        DType::U16 => (0.0, 65535.0),
        DType::I16 => (-32768.0, 32767.0),
        DType::U32 | DType::U64 => (0.0, f64::MAX),
        _ => (f64::MIN, f64::MAX),
    }
}

/// `frame` converted by `conv` at `level` into a fresh buffer of `dst`'s size (0xee before), and
/// what the level's kernels counted doing it.
pub fn convert_at(
    conv: &mut Converter,
    frame: &Frame,
    dst: DstLayout,
    level: Simd,
) -> (Vec<u8>, KernelCounts) {
    conv.set_simd(level);
    let before = conv.kernel_counts();
    let mut out = vec![0xeeu8; dst.bytes()];
    conv.convert(&frame.image(), &mut out).unwrap();
    let after = conv.kernel_counts();
    let made = KernelCounts {
        sampled: after.sampled - before.sampled,
        finished: after.finished - before.finished,
        rows_first: after.rows_first - before.rows_first,
        interleaved: after.interleaved - before.interleaved,
        side_by_side: after.side_by_side - before.side_by_side,
        from_bytes: after.from_bytes - before.from_bytes,
    };
    (out, made)
}

/// The first of a series of outputs (the baseline's: `levels` starts there) kept in `first`;
/// each later one must equal it byte for byte (`what` names the case).
pub fn same_as_first(first: &mut Option<Vec<u8>>, out: Vec<u8>, what: &str) {
    match first {
        None => *first = Some(out),
        Some(want) => {
            let at = out.iter().zip(want.iter()).position(|(a, b)| a != b);
            assert!(at.is_none(), "{what}: byte {at:?} differs from the baseline's");
        }
    }
}

/// Every kernel level this CPU has, baseline first.
pub fn levels() -> Vec<Simd> {
    let mut all = vec![Simd::Baseline];
    #[cfg(target_arch = "aarch64")]
    all.push(Simd::Neon);
    all.extend([Simd::Avx2, Simd::Avx512]);
    all.retain(|&l| l <= Simd::detect());
    all
}

/// The levels under test include the explicit kernels of this architecture, unless the
/// environment caps them (`EDGEFIRST_CONVERT_SIMD`).
pub fn assert_vector_levels_tested(levels: &[Simd]) {
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
pub fn check(frame: &Frame, dst: DstLayout, spec: &ConvertSpec, threads: usize) -> Vec<u8> {
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

pub fn compare(frame: &Frame, dst: &DstLayout, spec: &ConvertSpec, out: &[u8]) {
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

/// The normalizations each output type takes: none; mean/std, and a zero mean (float outputs);
/// quantization with and without mean/std (8-bit outputs).
pub fn specs_for(dtype: DType) -> Vec<ConvertSpec> {
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

/// `f` must not panic; a panic fails the test with `what` (the inputs) in the message.
pub fn no_panic<T>(what: impl Fn() -> String, f: impl FnOnce() -> T) -> T {
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

/// A deterministic generator for the walk below.
pub struct Walk(pub u64);

impl Walk {
    pub fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n
    }

    pub fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.below(from.len())]
    }

    /// Mostly a small size, sometimes an extreme one.
    pub fn size(&mut self, extremes: &[usize]) -> usize {
        if self.below(8) == 0 {
            self.pick(extremes)
        } else {
            1 + self.below(40)
        }
    }
}
