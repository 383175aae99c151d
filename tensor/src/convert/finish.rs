//! What the finish stage (colour, normalization, store) computes, made once per converter and the
//! same on every target: the values and constants every level's finish reads (`FinishValues`, the
//! const parameters of the fused loops), the scalar definitions of gray, the float clamp and the
//! rounding that the vector levels reproduce bit for bit, and the letterbox padding pattern.

// The channel loops index several parallel arrays at once; iterating one of them would only hide
// the others.
#![allow(clippy::needless_range_loop)]

use super::plan::SrcKind;
use super::{Colorspace, DstLayout};
use crate::dtype::{f16, DType};
use crate::preprocess::Region;

/// The destination's bytes, shared by the bands (each writes its own rows).
#[derive(Clone, Copy)]
pub(super) struct SendPtr(pub(super) *mut u8);
unsafe impl Send for SendPtr {}
unsafe impl Sync for SendPtr {}

/// BT.601 luma weights: the one definition of gray output for every source, in the order of
/// operations the fused kernels use (no FMA: the baseline has none, and every level must round
/// alike).
#[inline(always)]
pub(super) fn gray(r: f32, g: f32, b: f32) -> f32 {
    let [wr, wg, wb] = GRAY_WEIGHTS;
    (wb * b + wg * g) + wr * r
}

/// `v` limited to `lo..=hi` as `maxps` then `minps` do it (the first operand where the compare
/// is false, so a -0.0 against a +0.0 bound gives the bound), so that the baseline and the
/// vector kernels agree on every bit.
#[inline(always)]
pub(super) fn clamp_ps(v: f32, lo: f32, hi: f32) -> f32 {
    let v = if v > lo { v } else { lo };
    if v < hi {
        v
    } else {
        hi
    }
}

/// The weights of R, G and B in `gray` (also the fused kernel's).
pub(super) const GRAY_WEIGHTS: [f32; 3] = [0.299, 0.587, 0.114];

/// `v` rounded to the nearest integer, ties to even (IEEE 754's default rounding, what the AVX2 and
/// AVX-512 conversions do and what OpenCV's `cvRound` and numpy's `rint` give), NaN and infinities
/// kept. Below 2^23 adding 2^23 (with `v`'s sign) leaves no fraction bits, so the add rounds with
/// the FPU's own rule and the subtraction is exact; from 2^23 up every f32 is an integer. A select
/// and two adds per element, where `f32::round_ties_even` is a libm call no SSE2 loop vectorizes.
#[inline(always)]
pub(super) fn round_even(v: f32) -> f32 {
    const TWO_23: f32 = 8_388_608.0;
    let m = if v.abs() < TWO_23 { TWO_23.copysign(v) } else { 0.0 };
    (v + m) - m
}

/// `v` in -2^22..2^22 rounded to the nearest integer, ties to even: 1.5 * 2^23 plus such a value
/// lies in 2^23..2^24, whose floats are the integers, whatever its sign.
#[inline(always)]
pub(super) fn round_even_small(v: f32) -> f32 {
    const MAGIC: f32 = 12_582_912.0;
    (v + MAGIC) - MAGIC
}

/// Conversion of a finished f32 value to the stored element: integers round to nearest, ties to
/// even (`round_even`: every level the same), and saturate (`as` saturates and maps NaN to 0);
/// floats are stored as they are.
pub(super) trait Out: Copy {
    fn from_f32(v: f32) -> Self;
}

macro_rules! int_out {
    ($($t:ty),*) => {$(
        impl Out for $t {
            #[inline(always)]
            fn from_f32(v: f32) -> Self {
                round_even(v) as $t
            }
        }
    )*};
}
int_out!(u8, i8, u16, i16, u32, i32, u64, i64);

impl Out for f32 {
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        v
    }
}
impl Out for f64 {
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        v as f64
    }
}
impl Out for f16 {
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        f16::from_f32(v)
    }
}

/// Write `T::from_f32(v)` as native-endian bytes.
#[inline(always)]
pub(super) fn put<T: Out>(out: &mut [u8], v: f32) {
    let t = T::from_f32(v);
    let n = std::mem::size_of::<T>();
    // Plain-old-data: the value's bytes are the element's bytes.
    let bytes = unsafe { std::slice::from_raw_parts(&t as *const T as *const u8, n) };
    out[..n].copy_from_slice(bytes);
}

/// Source kinds, output colourspaces and output forms of the fused finish loops (in `avx2`,
/// `avx512` and `neon`), their const parameters; `fused_params` picks them for a converter.
pub(super) const YUV: u8 = 0;
pub(super) const RGB: u8 = 1;
pub(super) const GRAY: u8 = 2;
pub(super) const CS_GRAY: u8 = 0;
pub(super) const CS_RGB: u8 = 1;
pub(super) const CS_BGR: u8 = 2;
pub(super) const CS_RGBA: u8 = 3;
/// uint8 as it is or int8 as value - 128, no normalization (the saturating packs clamp); 8-bit
/// normalized or quantized; float32.
pub(super) const RAW8: u8 = 0;
pub(super) const BYTE: u8 = 1;
pub(super) const FLOAT: u8 = 2;

/// The (kind, colourspace, output form) of the fused finish loop for a `kind` source into
/// `colorspace` and `dtype` (`raw8`: 8-bit output without normalization).
pub(super) fn fused_params(kind: SrcKind, colorspace: Colorspace, dtype: DType, raw8: bool) -> (u8, u8, u8) {
    let kind = match kind {
        SrcKind::Yuv => YUV,
        SrcKind::Rgb { .. } => RGB,
        SrcKind::Gray => GRAY,
    };
    let cs = match colorspace {
        Colorspace::Gray => CS_GRAY,
        Colorspace::Rgb => CS_RGB,
        Colorspace::Bgr => CS_BGR,
        Colorspace::Rgba => CS_RGBA,
    };
    let out = match (dtype, raw8) {
        (DType::U8 | DType::I8, true) => RAW8,
        (DType::U8 | DType::I8, false) => BYTE,
        _ => FLOAT,
    };
    (kind, cs, out)
}

/// Output channels of colourspace `cs`.
pub(super) const fn channels(cs: u8) -> usize {
    match cs {
        CS_GRAY => 1,
        CS_RGBA => 4,
        _ => 3,
    }
}

/// Output channel `i` is R, G, B or A `order(cs)[i]` (its own inverse: R's output channel is
/// `order(cs)[0]` too).
pub(super) const fn order(cs: u8) -> [usize; 4] {
    if cs == CS_BGR {
        [2, 1, 0, 3]
    } else {
        [0, 1, 2, 3]
    }
}

/// YUV to a normalized or quantized three- or four-channel output: the per-channel scale and
/// bias multiply into the matrix, and one clamp does the colour's and the type's ranges (three
/// multiplies, three adds and, for 8-bit, six min/max fewer per pixel).
pub(super) const fn folded(kind: u8, cs: u8, out: u8) -> bool {
    kind == YUV && out != RAW8 && cs != CS_GRAY
}

/// The shape of every YUV → RGB matrix the converter makes (`Colorimetry::yuv_to_rgb_matrix`):
/// one Y coefficient for all three rows, no U term in R, no V term in B. The fused loops compute
/// the rows that way (see `yuv_rows`); a matrix of another shape takes the channel-row path.
pub(super) fn yuv_shaped(m: &[[f32; 3]; 3]) -> bool {
    m[0][0] == m[1][0] && m[1][0] == m[2][0] && m[0][1] == 0.0 && m[2][2] == 0.0
}

/// One fused finish loop per source kind, output colourspace and output form (`fused_params`):
/// `$f::<KIND, CS, OUT>($v, args...)` (`$f<T>`: `$f::<T, KIND, CS, OUT>`), `$v` the
/// `FinishValues`. A colourspace match left inside the loop was a fifth of its samples.
#[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(unused_macros))]
macro_rules! finish_dispatch {
    ($f:ident $(<$t:ty>)?, $v:expr, $($arg:expr),*) => {{
        use $crate::convert::finish::{BYTE, CS_BGR, CS_GRAY, CS_RGB, CS_RGBA, FLOAT, GRAY, RAW8, RGB, YUV};
        let f: &$crate::convert::finish::FinishValues = $v;
        let (kind, cs, out) = (f.kind, f.cs, f.out);
        macro_rules! by_out {
            ($k:expr, $cs:expr) => {
                match out {
                    RAW8 => unsafe { $f::<$($t,)? { $k }, { $cs }, RAW8>(f, $($arg),*) },
                    BYTE => unsafe { $f::<$($t,)? { $k }, { $cs }, BYTE>(f, $($arg),*) },
                    _ => unsafe { $f::<$($t,)? { $k }, { $cs }, FLOAT>(f, $($arg),*) },
                }
            };
        }
        macro_rules! by_colorspace {
            ($k:expr) => {
                match cs {
                    CS_GRAY => by_out!($k, CS_GRAY),
                    CS_RGB => by_out!($k, CS_RGB),
                    CS_BGR => by_out!($k, CS_BGR),
                    _ => by_out!($k, CS_RGBA),
                }
            };
        }
        match kind {
            YUV => by_colorspace!(YUV),
            RGB => by_colorspace!(RGB),
            _ => by_colorspace!(GRAY),
        }
    }};
}
#[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(unused_imports))]
pub(super) use finish_dispatch;

/// `finish_dispatch` for a YUV source alone: `$f::<G.., YUV, CS, OUT>($v, args...)` with the
/// leading generic arguments given, one loop per output colourspace and form (each level's
/// `finish_yuv_bytes`, the components as bytes, and the levels' `finish_luma`).
#[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(unused_macros))]
macro_rules! finish_yuv_dispatch {
    ($f:ident<$($g:tt),+>, $v:expr, $($arg:expr),*) => {{
        use $crate::convert::finish::{BYTE, CS_BGR, CS_GRAY, CS_RGB, CS_RGBA, FLOAT, RAW8, YUV};
        let f: &$crate::convert::finish::FinishValues = $v;
        assert_eq!(f.kind, YUV, "a finish for a YUV source's components alone");
        macro_rules! by_out {
            ($cs:expr) => {
                match f.out {
                    RAW8 => unsafe { $f::<$($g,)+ YUV, { $cs }, RAW8>(f, $($arg),*) },
                    BYTE => unsafe { $f::<$($g,)+ YUV, { $cs }, BYTE>(f, $($arg),*) },
                    _ => unsafe { $f::<$($g,)+ YUV, { $cs }, FLOAT>(f, $($arg),*) },
                }
            };
        }
        match f.cs {
            CS_GRAY => by_out!(CS_GRAY),
            CS_RGB => by_out!(CS_RGB),
            CS_BGR => by_out!(CS_BGR),
            _ => by_out!(CS_RGBA),
        }
    }};
}
#[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(unused_imports))]
pub(super) use finish_yuv_dispatch;

/// The values of the colour and normalization arithmetic, made once with the plan (each fused loop
/// broadcasts them per row; the baseline's `colour` and stores read them), the colour rows in R,
/// G, B order. With `folded`, row `r`'s `m` and `k` carry the scale and bias of its output channel
/// and `range` is where the colour clamp and the type's range meet; else `range` is the colour
/// clamp, 0..255, and `luma` the rows' shared Y coefficient. Every level computes the same
/// operations in the same order without FMA, so that every level stores the same bits. With them,
/// the loop they are for and where its pixels go: a level's finish reads nothing else.
#[derive(Debug, Clone)]
// The plan is made on every target; only the x86_64 kernels read all of it.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(super) struct FinishValues {
    pub m: [[f32; 3]; 3],
    pub k: [f32; 3],
    pub range: [(f32, f32); 3],
    pub luma: f32,
    /// The type's range (8-bit outputs).
    pub lo: f32,
    pub hi: f32,
    pub signed: bool,
    pub alpha: bool,
    /// Per output channel, what multiplies and is added after colour: the normalization, or 1
    /// and 0 where it is folded into `m` and `k`.
    pub scale: [f32; 4],
    pub bias: [f32; 4],
    /// The fused loop's source kind, output colourspace and output form (`fused_params`).
    pub kind: u8,
    pub cs: u8,
    pub out: u8,
    /// The destination: element type, planar or interleaved, strides in bytes, and the content
    /// columns (the first, and how many) of every row.
    pub dtype: DType,
    pub chw: bool,
    pub row_stride: usize,
    pub plane_stride: usize,
    pub x0: usize,
    pub width: usize,
}

/// The finish of components' bytes (`FinishValues::interleaves_bytes`) into row `y`: output
/// channel `i` is component `order(cs)[i]`, flipped to int8 where the output is signed (RAW8's
/// `v - 128`); planar by copies; interleaved by the level's `steps(channels, row, flip)`, which
/// says how many pixels it wrote, and the rest here. Returns the content columns (all of them).
///
/// # Safety
/// `dst` holds the converter's layout, whose row `y` the caller owns; `comps` rows hold the
/// content width.
#[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(dead_code))]
pub(super) unsafe fn finish_bytes_by(
    f: &FinishValues,
    comps: &[super::lines::Lines<u8>; 4],
    dst: SendPtr,
    y: usize,
    steps: impl FnOnce([&[u8]; 3], *mut u8, u8) -> usize,
) -> usize {
    let n = f.width.min(comps[0].len());
    let order = order(f.cs);
    let ch: [&[u8]; 3] = std::array::from_fn(|i| &comps[order[i]][..n]);
    let flip = if f.signed { 0x80u8 } else { 0 };
    let row = unsafe { dst.0.add(y * f.row_stride + f.x0 * if f.chw { 1 } else { 3 }) };
    if f.chw {
        for (i, c) in ch.iter().enumerate() {
            let plane = unsafe { std::slice::from_raw_parts_mut(row.add(i * f.plane_stride), n) };
            for (o, &b) in plane.iter_mut().zip(c.iter()) {
                *o = b ^ flip;
            }
        }
        return n;
    }
    let x = steps(ch, row, flip).min(n);
    let tail = unsafe { std::slice::from_raw_parts_mut(row.add(3 * x), 3 * (n - x)) };
    for (j, px) in tail.chunks_exact_mut(3).enumerate() {
        for i in 0..3 {
            px[i] = ch[i][x + j] ^ flip;
        }
    }
    n
}

impl FinishValues {
    /// Whether the output's bytes are an RGB source's components as they are, only ordered and
    /// interleaved (or planar): 8-bit RGB or BGR without normalization. Where the multi-tap
    /// passes make the components as bytes (PIL's; an exact box's quads, rounded), they go to the
    /// output without becoming floats (AVX-512 and NEON; AVX2 for PIL's).
    #[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(dead_code))]
    pub(super) fn interleaves_bytes(&self) -> bool {
        self.kind == RGB && self.out == RAW8 && matches!(self.cs, CS_RGB | CS_BGR)
    }

    /// The values for a `kind` source into the content `rect` of `dst`: YUV → RGB by `matrix`
    /// plus `yuv_bias`, then per output channel `scale` and `bias` (`raw8`: 8-bit output
    /// without normalization).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        kind: SrcKind,
        dst: &DstLayout,
        rect: Region,
        raw8: bool,
        matrix: &[[f32; 3]; 3],
        yuv_bias: &[f32; 3],
        scale: &[f32; 4],
        bias: &[f32; 4],
    ) -> FinishValues {
        let (fkind, cs, out) = fused_params(kind, dst.colorspace, dst.dtype, raw8);
        let (folded, order) = (folded(fkind, cs, out), order(cs));
        let signed = dst.dtype == DType::I8;
        let (lo, hi) = if signed { (-128.0, 127.0) } else { (0.0, 255.0) };
        let (tlo, thi) = if out == FLOAT { (f32::MIN, f32::MAX) } else { (lo, hi) };
        let mut v = FinishValues {
            m: [[0.0; 3]; 3],
            k: [0.0; 3],
            range: [(0.0, 255.0); 3],
            luma: matrix[0][0],
            lo,
            hi,
            signed,
            alpha: matches!(kind, SrcKind::Rgb { alpha: true }),
            scale: *scale,
            bias: *bias,
            kind: fkind,
            cs,
            out,
            dtype: dst.dtype,
            chw: dst.chw,
            row_stride: dst.row_stride,
            plane_stride: dst.plane_stride,
            x0: rect.x,
            width: rect.width,
        };
        for r in 0..3 {
            let (s, b) = if folded { (scale[order[r]], bias[order[r]]) } else { (1.0, 0.0) };
            for j in 0..3 {
                v.m[r][j] = s * matrix[r][j];
            }
            v.k[r] = s * yuv_bias[r] + b;
            if folded {
                // Clamping to 0..255 then to the type is clamping to where the two ranges meet (or
                // to the type's nearer end where they do not).
                let (a, z) = (b.min(255.0 * s + b), b.max(255.0 * s + b));
                v.range[r] = (a.max(tlo).min(thi), z.min(thi).max(tlo));
                v.scale[order[r]] = 1.0;
                v.bias[order[r]] = 0.0;
            }
        }
        v
    }
}

/// R, G, B of one vector of Y, U, V, by the fused loops of every level: `$mul`, `$add` the
/// width's intrinsics; `$m`, `$k`, `$luma` the broadcast `FinishValues`. Row `r` is
/// `((m[r][0]·y + k[r]) + m[r][2]·v) + m[r][1]·u` without its zero terms, in that order; unfolded,
/// the rows share one Y coefficient and the product is made once. No FMA: the baseline
/// (`colour`) has none, and a fused multiply-add rounds once where the baseline rounds twice,
/// which put an 8-bit output one apart between levels now and then (one in several thousand on
/// the tests' frames) and most float32 outputs a bit apart. Measured against the FMA rows
/// (1080p → 640×640, interleaved runs): NV12 uint8 0.083 → 0.087 ms with AVX-512, 0.126 → 0.132
/// with AVX2; float32 0.109 → 0.114 with AVX-512, the same within noise with AVX2.
#[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(unused_macros))]
macro_rules! yuv_rows {
    (
        $folded:expr, $mul:ident, $add:ident,
        $m:expr, $k:expr, $luma:expr, $y:expr, $u:expr, $v:expr
    ) => {{
        let (m, k, y, u, v) = (&$m, &$k, $y, $u, $v);
        let t = if $folded {
            [$mul(m[0][0], y), $mul(m[1][0], y), $mul(m[2][0], y)]
        } else {
            let t = $mul($luma, y);
            [t, t, t]
        };
        [
            $add($add(t[0], k[0]), $mul(m[0][2], v)),
            $add($add($add(t[1], k[1]), $mul(m[1][2], v)), $mul(m[1][1], u)),
            $add($add(t[2], k[2]), $mul(m[2][1], u)),
        ]
    }};
}
#[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(unused_imports))]
pub(super) use yuv_rows;

/// Bytes of a padding pattern: 192 (a multiple of every pattern period — 1, 2, 3, 4, 6, 8, 12, 16,
/// 24 or 32 bytes, a pixel for hwc or a value for chw — and of a 64-byte line) plus one period, so
/// that a whole 192-byte block can start at any phase.
pub(super) const PATTERN: usize = 256;
pub(super) const BLOCK: usize = 192;

/// The letterbox fill in the output type, repeated from a pixel (hwc) or value (chw) boundary: one
/// pattern per destination plane, so padding is a store, not a conversion, per frame.
pub(super) struct Padding {
    pub(super) patterns: Vec<[u8; PATTERN]>,
    pub(super) period: usize,
}

impl Padding {
    /// `fill` (per output channel, normalized) stored as `dst`'s elements.
    pub(super) fn new(dst: &DstLayout, fill: &[f32; 4]) -> Padding {
        let channels = dst.colorspace.channels();
        let esz = dst.dtype.size();
        let mut one = vec![0u8; channels * esz];
        for ch in 0..channels {
            let v = fill[ch];
            let o = &mut one[ch * esz..];
            match dst.dtype {
                DType::U8 => put::<u8>(o, v),
                DType::I8 => put::<i8>(o, v),
                DType::U16 => put::<u16>(o, v),
                DType::I16 => put::<i16>(o, v),
                DType::U32 => put::<u32>(o, v),
                DType::I32 => put::<i32>(o, v),
                DType::U64 => put::<u64>(o, v),
                DType::I64 => put::<i64>(o, v),
                DType::F16 => put::<f16>(o, v),
                DType::F32 => put::<f32>(o, v),
                DType::F64 => put::<f64>(o, v),
            }
        }
        let repeat = |unit: &[u8]| -> [u8; PATTERN] { std::array::from_fn(|i| unit[i % unit.len()]) };
        if dst.chw {
            Padding { patterns: one.chunks(esz).map(repeat).collect(), period: esz }
        } else {
            Padding { patterns: vec![repeat(&one)], period: channels * esz }
        }
    }
}

/// `n` blocks of `BLOCK` bytes from `block`, held in `N` registers of type `T`.
#[inline(always)]
pub(super) unsafe fn fill_blocks<T: Copy, const N: usize>(block: *const u8, dst: *mut u8, n: usize) {
    debug_assert_eq!(N * size_of::<T>(), BLOCK);
    let regs: [T; N] =
        std::array::from_fn(|k| unsafe { block.add(k * size_of::<T>()).cast::<T>().read_unaligned() });
    for b in 0..n {
        for (k, r) in regs.iter().enumerate() {
            unsafe { dst.add(b * BLOCK + k * size_of::<T>()).cast::<T>().write_unaligned(*r) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `round_even` against its definition, `f32::round_ties_even` (equal values: a negative
    /// fraction rounds to +0.0 here, which no integer conversion can tell from -0.0), and each
    /// integer element against that rounding saturated to the type, NaN to 0 (what `as` does).
    #[test]
    fn rounding_is_to_nearest_ties_to_even_then_saturating() {
        let ties = [0.5, 1.5, 2.5, 3.5, 126.5, 127.5, 128.5, 129.5, 254.5, 255.5, 256.5, 32767.5, 65535.5];
        let near_ties = [0.49999997, 0.50000006, 1.4999999, 1.5000001, 2.4999998, 2.5000002];
        // Around 2^22 and 2^23, where the fraction bits run out, and on to the types' ends.
        let large = [4194303.5, 4194304.5, 8388607.5, 8388608.0, 8388609.0, 16777216.0, 2147483520.0];
        let huge = [2147483648.0, 4294967040.0, 4294967296.0, 1e10, 1e19, 1e20, f32::MAX, f32::INFINITY];
        let tiny = [0.0, 1e-45, f32::MIN_POSITIVE];
        let mut values: Vec<f32> = [&ties[..], &near_ties, &large, &huge, &tiny]
            .concat()
            .into_iter()
            .flat_map(|v: f32| [v, -v])
            .chain([f32::NAN])
            .collect();
        // Every quarter from -300 to 300 and the floats either side of each tie.
        for q in -1200..=1200 {
            let v = q as f32 / 4.0;
            values.extend([v, v.next_up(), v.next_down()]);
        }
        // And bit patterns from all over the line.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            values.push(f32::from_bits((state >> 32) as u32));
        }
        for &v in &values {
            let want = v.round_ties_even();
            let got = round_even(v);
            assert!(
                got == want || (got.is_nan() && want.is_nan()),
                "round_even({v:e}) = {got:e}, not {want:e}"
            );
            if v.abs() <= 4_194_304.0 {
                assert_eq!(round_even_small(v), want, "round_even_small({v:e})");
            }
            macro_rules! each {
                ($($t:ty),*) => {$(
                    assert_eq!(<$t as Out>::from_f32(v), want as $t, "{v:e} as {}", stringify!($t));
                )*};
            }
            each!(u8, i8, u16, i16, u32, i32, u64, i64);
        }
    }
}
