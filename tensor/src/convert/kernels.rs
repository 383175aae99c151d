//! The per-row work. Loops run over contiguous f32 rows so the compiler vectorizes them: the
//! whole row body is compiled twice on x86_64, for the baseline (SSE2) and for AVX2+FMA, and the
//! converter picks one when it is built; aarch64's baseline is what the compiler makes of them
//! with NEON, and `Simd::Neon` adds the explicit kernels of `neon`. With AVX2 the
//! horizontal taps are read with byte shuffles from 16-byte windows where they are dense and with
//! gathers where not (scalar tap loads were most of a frame's time, then gathers were), and colour
//! plus store run as one intrinsics pass for the common output types.

// The channel and plane loops index several parallel arrays at once; iterating one of them would
// only hide the others.
#![allow(clippy::needless_range_loop)]

use super::{Colorspace, Converter, Scratch, Simd, SrcImage, SrcKind};
use crate::dtype::{f16, DType};
use std::ops::Range;

/// A plane's two source rows (from the window start), the vertical weight of the second, and
/// whether its groups are read by shuffles (else by gathers).
type DirectRows<'a> = (&'a [u8], &'a [u8], f32, bool);

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
fn clamp_ps(v: f32, lo: f32, hi: f32) -> f32 {
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
fn round_even_small(v: f32) -> f32 {
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
fn put<T: Out>(out: &mut [u8], v: f32) {
    let t = T::from_f32(v);
    let n = std::mem::size_of::<T>();
    // Plain-old-data: the value's bytes are the element's bytes.
    let bytes = unsafe { std::slice::from_raw_parts(&t as *const T as *const u8, n) };
    out[..n].copy_from_slice(bytes);
}

/// Content columns `xs` of one row: `chans[c][x] * scale[c] + bias[c]` stored interleaved (hwc,
/// `C` channels, one pass over x) or into each channel's plane (chw).
#[inline(always)]
fn store_row<T: Out, const C: usize>(
    c: &Converter,
    dst: SendPtr,
    y: usize,
    xs: Range<usize>,
    chans: &[Vec<f32>; 4],
) {
    let d = &c.dst;
    let n = xs.len();
    let x0 = c.content.rect.x + xs.start;
    let esz = std::mem::size_of::<T>();
    if d.chw {
        for ch in 0..C {
            let start = ch * d.plane_stride + y * d.row_stride + x0 * esz;
            // This band owns row y of every plane.
            let out = unsafe { std::slice::from_raw_parts_mut(dst.0.add(start), n * esz) };
            let (sc, bi) = (c.finish.scale[ch], c.finish.bias[ch]);
            for (o, &v) in out.chunks_exact_mut(esz).zip(&chans[ch][xs.clone()]) {
                put::<T>(o, v * sc + bi);
            }
        }
    } else {
        let start = y * d.row_stride + x0 * C * esz;
        let out = unsafe { std::slice::from_raw_parts_mut(dst.0.add(start), n * C * esz) };
        let (sc, bi) = (&c.finish.scale, &c.finish.bias);
        for (x, px) in xs.zip(out.chunks_exact_mut(C * esz)) {
            for ch in 0..C {
                put::<T>(&mut px[ch * esz..], chans[ch][x] * sc[ch] + bi[ch]);
            }
        }
    }
}

/// 8-bit outputs: each channel is rounded and saturated in its own contiguous (vectorized) pass,
/// then the bytes are interleaved; converting and interleaving in one loop kept every element in
/// a scalar register.
#[inline(always)]
fn store_bytes<const C: usize>(
    c: &Converter,
    dst: SendPtr,
    y: usize,
    xs: Range<usize>,
    chans: &[Vec<f32>; 4],
    bytes: &mut [Vec<u8>; 4],
) {
    let d = &c.dst;
    let n = xs.len();
    let x0 = c.content.rect.x + xs.start;
    // Raw int8 is the uint8 value with its top bit flipped, as the fused kernels make it:
    // subtracting 128 in f32 first can round a value below 64 onto a tie.
    let (lo, hi, flip) = match (c.raw8, d.dtype == DType::I8) {
        (true, signed) => (0.0f32, 255.0f32, if signed { 0x80u8 } else { 0 }),
        (false, true) => (-128.0, 127.0, 0),
        (false, false) => (0.0, 255.0, 0),
    };
    for ch in 0..C {
        let (sc, bi) = if c.raw8 { (1.0, 0.0) } else { (c.finish.scale[ch], c.finish.bias[ch]) };
        for (o, &v) in bytes[ch][..n].iter_mut().zip(&chans[ch][xs.clone()]) {
            let r = round_even_small(clamp_ps(v * sc + bi, lo, hi));
            // Finite and in range: every input is a byte and the plan checked that scale and
            // bias are finite, so the unchecked conversion (one vector instruction, where `as`
            // needs a NaN test per element) is exact.
            debug_assert!(r.is_finite());
            *o = (unsafe { r.to_int_unchecked::<i32>() } as u8) ^ flip;
        }
    }
    if d.chw {
        for ch in 0..C {
            let at = ch * d.plane_stride + y * d.row_stride + x0;
            unsafe { std::ptr::copy_nonoverlapping(bytes[ch].as_ptr(), dst.0.add(at), n) };
        }
    } else {
        let out = unsafe { std::slice::from_raw_parts_mut(dst.0.add(y * d.row_stride + x0 * C), n * C) };
        for (x, px) in out.chunks_exact_mut(C).enumerate() {
            for ch in 0..C {
                px[ch] = bytes[ch][x];
            }
        }
    }
}

#[inline(always)]
fn store_content(
    c: &Converter,
    dst: SendPtr,
    y: usize,
    xs: Range<usize>,
    chans: &[Vec<f32>; 4],
    bytes: &mut [Vec<u8>; 4],
) {
    if xs.is_empty() {
        return;
    }
    if matches!(c.dst.dtype, DType::U8 | DType::I8) {
        return match c.dst.colorspace.channels() {
            1 => store_bytes::<1>(c, dst, y, xs, chans, bytes),
            3 => store_bytes::<3>(c, dst, y, xs, chans, bytes),
            _ => store_bytes::<4>(c, dst, y, xs, chans, bytes),
        };
    }
    macro_rules! by_channels {
        ($t:ty) => {
            match c.dst.colorspace.channels() {
                1 => store_row::<$t, 1>(c, dst, y, xs, chans),
                3 => store_row::<$t, 3>(c, dst, y, xs, chans),
                _ => store_row::<$t, 4>(c, dst, y, xs, chans),
            }
        };
    }
    match c.dst.dtype {
        DType::U8 => by_channels!(u8),
        DType::I8 => by_channels!(i8),
        DType::U16 => by_channels!(u16),
        DType::I16 => by_channels!(i16),
        DType::U32 => by_channels!(u32),
        DType::I32 => by_channels!(i32),
        DType::U64 => by_channels!(u64),
        DType::I64 => by_channels!(i64),
        DType::F16 => by_channels!(f16),
        DType::F32 => by_channels!(f32),
        DType::F64 => by_channels!(f64),
    }
}

/// Bytes of a padding pattern: 192 (a multiple of every pattern period — 1, 2, 3, 4, 6, 8, 12, 16,
/// 24 or 32 bytes, a pixel for hwc or a value for chw — and of a 64-byte line) plus one period, so
/// that a whole 192-byte block can start at any phase.
const PATTERN: usize = 256;
const BLOCK: usize = 192;

/// The letterbox fill in the output type, repeated from a pixel (hwc) or value (chw) boundary: one
/// pattern per destination plane, so padding is a store, not a conversion, per frame.
#[derive(Default)]
pub(super) struct Padding {
    patterns: Vec<[u8; PATTERN]>,
    period: usize,
}

pub(super) fn padding(c: &Converter) -> Padding {
    let d = &c.dst;
    let channels = d.colorspace.channels();
    let esz = d.dtype.size();
    let mut one = vec![0u8; channels * esz];
    for ch in 0..channels {
        let v = c.fill[ch];
        let o = &mut one[ch * esz..];
        match d.dtype {
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
    if d.chw {
        Padding { patterns: one.chunks(esz).map(repeat).collect(), period: esz }
    } else {
        Padding { patterns: vec![repeat(&one)], period: channels * esz }
    }
}

/// Fill `len` bytes at `dst`, which sits at phase 0 of `pattern` (period `period`). Whole blocks are
/// stored from registers at 64-byte alignment, as wide as `level` allows. Measured against the copy
/// of a prepared fill row per destination row that this replaced (loads and unaligned stores),
/// 1920×1080 → 640×640 letterbox here: YUY2 float32 0.183 → 0.173 ms, uint8 0.150 → 0.143; the
/// same blocks written as byte arrays, which compiled to a memcpy call per block, took 0.189.
///
/// # Safety
/// `dst..dst + len` is writable and no other thread touches it.
unsafe fn fill_span(level: Simd, pattern: &[u8; PATTERN], period: usize, dst: *mut u8, len: usize) {
    assert!(
        BLOCK.is_multiple_of(period) && BLOCK + period <= PATTERN,
        "period {period} repeats within a block"
    );
    let head = dst.align_offset(64).min(len);
    let blocks = (len - head) / BLOCK;
    let tail = head + blocks * BLOCK;
    // Every block starts at the phase the first aligned byte has: BLOCK is a whole number of periods.
    let block = pattern[head % period..].as_ptr();
    unsafe {
        std::ptr::copy_nonoverlapping(pattern.as_ptr(), dst, head);
        let at = dst.add(head);
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{__m256i, __m512i};
            #[target_feature(enable = "avx512f")]
            unsafe fn zmm(block: *const u8, dst: *mut u8, n: usize) {
                unsafe { fill_blocks::<__m512i, 3>(block, dst, n) }
            }
            #[target_feature(enable = "avx")]
            unsafe fn ymm(block: *const u8, dst: *mut u8, n: usize) {
                unsafe { fill_blocks::<__m256i, 6>(block, dst, n) }
            }
            match level {
                Simd::Avx512 => zmm(block, at, blocks),
                Simd::Avx2 => ymm(block, at, blocks),
                Simd::Baseline => fill_blocks::<u128, 12>(block, at, blocks),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = level;
            fill_blocks::<u128, 12>(block, at, blocks);
        }
        std::ptr::copy_nonoverlapping(block, dst.add(tail), len - tail);
    }
}

/// `n` blocks of `BLOCK` bytes from `block`, held in `N` registers of type `T`.
#[inline(always)]
unsafe fn fill_blocks<T: Copy, const N: usize>(block: *const u8, dst: *mut u8, n: usize) {
    debug_assert_eq!(N * size_of::<T>(), BLOCK);
    let regs: [T; N] =
        std::array::from_fn(|k| unsafe { block.add(k * size_of::<T>()).cast::<T>().read_unaligned() });
    for b in 0..n {
        for (k, r) in regs.iter().enumerate() {
            unsafe { dst.add(b * BLOCK + k * size_of::<T>()).cast::<T>().write_unaligned(*r) };
        }
    }
}

/// Padding pixels `x0..x0 + n` of `rows` consecutive destination rows from `y`: one span per
/// plane where the rows are contiguous, else one per row.
fn pad(c: &Converter, dst: SendPtr, y: usize, rows: usize, x0: usize, n: usize) {
    if n == 0 || rows == 0 {
        return;
    }
    let d = &c.dst;
    let esz = d.dtype.size();
    let channels = d.colorspace.channels();
    let (pixel, planes) = if d.chw { (esz, channels) } else { (channels * esz, 1) };
    let span = n * pixel;
    let (count, len) = if n == d.width && d.row_stride == span { (1, rows * span) } else { (rows, span) };
    for (plane, pattern) in c.padding.patterns.iter().enumerate().take(planes) {
        for r in 0..count {
            let at = plane * d.plane_stride + (y + r) * d.row_stride + x0 * pixel;
            // The caller's band holds these rows alone.
            unsafe { fill_span(c.simd, pattern, c.padding.period, dst.0.add(at), len) };
        }
    }
}

/// Convert destination rows `rows` of `src` into `dst`, with the widest vector unit this CPU has.
///
/// # Safety
/// `dst` points at `c.dst.bytes()` writable bytes, and no other thread writes these rows.
pub(super) unsafe fn rows(
    c: &Converter,
    src: &SrcImage<'_>,
    dst: SendPtr,
    rows: Range<usize>,
    s: &mut Scratch,
) {
    #[cfg(target_arch = "x86_64")]
    if c.avx2() {
        // Checked once per converter: the CPU has AVX2 and FMA.
        return unsafe { rows_avx2(c, src, dst, rows, s) };
    }
    rows_generic(c, src, dst, rows, s)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn rows_avx2(c: &Converter, src: &SrcImage<'_>, dst: SendPtr, rows: Range<usize>, s: &mut Scratch) {
    rows_generic(c, src, dst, rows, s)
}

/// Output rows ahead whose source rows are asked for while this one is converted. Measured on 32
/// rotating 1080p frames (uint8, 640 letterbox): none 0.27 / 0.20 / 0.60 ms (NV12 / YUY2 / RGBA),
/// 1 row 0.150 / 0.150 / 0.341, 2 rows 0.154 / 0.151 / 0.332, 4 rows 0.162 / 0.148 / 0.343,
/// 8 rows 0.155 / 0.156 / 0.357.
const PREFETCH_AHEAD: usize = 2;

/// A camera frame arrives cold: its rows are in DRAM, and a downscale jumps between them, so the
/// hardware's stream prefetcher restarts on every row. The source rows that output row `cy +
/// PREFETCH_AHEAD` will read (each plane's window, both taps) are requested now, one line at a
/// time; a chroma row shared with the output row before it was requested then.
#[inline(always)]
fn prefetch_ahead(c: &Converter, src: &SrcImage<'_>, cy: usize) {
    let ahead = cy + PREFETCH_AHEAD;
    if ahead >= c.content.rect.height {
        return;
    }
    for p in 0..c.format.num_planes() {
        let (lo, hi) = c.plane_window[p];
        if hi <= lo {
            continue;
        }
        let axis = if c.plane_chroma_rows[p] { &c.rows_chroma } else { &c.rows_luma };
        let (i0, i1, w) = (axis.i0[ahead], axis.i1[ahead], axis.w[ahead]);
        if axis.i0[ahead - 1] == i0 && axis.i1[ahead - 1] == i1 {
            continue;
        }
        let (bytes, stride) = src.planes[p];
        let second = (w != 0.0 && i1 != i0).then_some(i1);
        for r in std::iter::once(i0).chain(second) {
            let start = (r * stride + lo).min(bytes.len());
            let end = (r * stride + hi).min(bytes.len());
            let mut at = start;
            while at < end {
                prefetch(bytes.as_ptr().wrapping_add(at));
                at += 64;
            }
        }
    }
}

#[inline(always)]
fn prefetch(p: *const u8) {
    // A hint: it never faults, and it changes no byte of the result.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(target_arch = "aarch64")]
    unsafe {
        std::arch::asm!("prfm pldl1keep, [{0}]", in(reg) p, options(nostack, readonly, preserves_flags));
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let _ = p;
}

#[inline(always)]
fn rows_generic(c: &Converter, src: &SrcImage<'_>, dst: SendPtr, rows: Range<usize>, s: &mut Scratch) {
    let rect = c.content.rect;
    let content = rect.y..rect.y + rect.height;
    // Padding rows above and below the picture, each run as one fill.
    pad(c, dst, rows.start, rows.start.max(content.start).min(rows.end) - rows.start, 0, c.dst.width);
    let below = content.end.max(rows.start).min(rows.end);
    pad(c, dst, below, rows.end - below, 0, c.dst.width);
    for y in rows.start.max(content.start)..rows.end.min(content.end) {
        let cy = y - rect.y;
        prefetch_ahead(c, src, cy);
        // Per plane, one of two orders. With AVX2, where the taps are dense (shuffle plan) or
        // sparse (a quarter of the window or less), they are read straight from the two source
        // rows' bytes — by byte shuffles, or a dword gather per tap bringing every component of a
        // pixel or U and V together — and blended at output width; otherwise the two rows are
        // first blended at window width into f32 and the taps gathered from that.
        let mut direct: [Option<DirectRows<'_>>; 3] = [None; 3];
        for p in 0..c.format.num_planes() {
            let (lo, hi) = c.plane_window[p];
            if hi <= lo {
                continue;
            }
            let axis = if c.plane_chroma_rows[p] { &c.rows_chroma } else { &c.rows_luma };
            let (bytes, stride) = src.planes[p];
            let (s0, s1) = (axis.i0[cy] * stride, axis.i1[cy] * stride);
            let w = axis.w[cy];
            // Dword gathers read up to 3 bytes past a plane's last tap, shuffles up to 15: only
            // where the rows have them.
            let end = s0.max(s1) + lo;
            let shuffled = c.plane_shuffled[p].is_some_and(|reach| end + reach <= bytes.len());
            // NEON has no gathers: only the shuffle plans read the frame straight.
            #[cfg(target_arch = "aarch64")]
            let direct_ok = c.neon() && shuffled;
            #[cfg(not(target_arch = "aarch64"))]
            let direct_ok = c.avx2()
                && (shuffled || (end + (hi - lo) + 3 <= bytes.len() && (w == 0.0 || c.plane_downscaled[p])));
            if direct_ok {
                direct[p] = Some((&bytes[s0 + lo..], &bytes[s1 + lo..], w, shuffled));
                continue;
            }
            let (r0, r1) = (&bytes[s0 + lo..s0 + hi], &bytes[s1 + lo..s1 + hi]);
            let out = &mut s.vrows[p][..hi - lo];
            if w == 0.0 {
                for (o, &a) in out.iter_mut().zip(r0) {
                    *o = a as f32;
                }
            } else {
                for ((o, &a), &b) in out.iter_mut().zip(r0).zip(r1) {
                    let a = a as f32;
                    *o = a + w * (b as f32 - a);
                }
            }
        }
        #[cfg(target_arch = "x86_64")]
        for g in &c.groups {
            if let Some((r0, r1, wy, shuffled)) = direct[g.plane] {
                let (wx, single) = if g.chroma {
                    (&c.weights_chroma, c.chroma_on_samples)
                } else {
                    (&c.weights_luma, c.luma_on_samples)
                };
                let wq = if g.chroma { &c.wq_chroma } else { &c.wq_luma };
                let columns = match (&g.permute, &g.shuffle) {
                    (Some(plan), _) if c.avx512() && plan.reach <= r0.len().min(r1.len()) => unsafe {
                        super::avx512::sample(r0, r1, wy, g, plan, wx, wq, single, &mut s.comps)
                    },
                    (_, Some(plan)) if shuffled => {
                        assert!(plan.reach <= r0.len().min(r1.len()), "loads stay inside the rows");
                        unsafe { shuffle_avx2(r0, r1, wy, g, plan, wx, wq, single, &mut s.comps) }
                    }
                    _ => {
                        assert!(
                            g.max as usize + 4 <= r0.len().min(r1.len()),
                            "dword gathers stay inside the rows"
                        );
                        unsafe { group_avx2(r0, r1, wy, g, wx, single, &mut s.comps) }
                    }
                };
                s.counts.sampled += (columns * g.members.len()) as u64;
            }
        }
        // The NEON sampling: every group of a direct plane has a shuffle plan (`direct_ok`).
        #[cfg(target_arch = "aarch64")]
        for g in &c.groups {
            if let (Some((r0, r1, wy, _)), Some(plan)) = (direct[g.plane], &g.shuffle) {
                let (wx, single) = if g.chroma {
                    (&c.weights_chroma, c.chroma_on_samples)
                } else {
                    (&c.weights_luma, c.luma_on_samples)
                };
                let wq = if g.chroma { &c.wq_chroma } else { &c.wq_luma };
                let columns = super::neon::sample(r0, r1, wy, g, plan, wx, wq, single, &mut s.comps);
                s.counts.sampled += (columns * g.members.len()) as u64;
            }
        }
        // Interleaved chroma (NV12's UV) blended into f32: each tap's U and V come as one 64-bit
        // pair, half the loads of gathering them apart.
        #[cfg(target_arch = "x86_64")]
        let paired = match c.chroma_pair {
            Some((ku, kv)) if c.avx2() && direct[c.comps[ku].plane].is_none() => {
                let (i0, i1) = &c.taps[ku];
                let [.., cu, cv] = pick2(&mut s.comps, ku, kv);
                let row = &s.vrows[c.comps[ku].plane];
                // The plan's largest U tap, and the V right after it, inside the blended row.
                assert!(c.tap_max[ku] as usize + 2 <= row.len(), "pairs stay inside the row");
                unsafe { horizontal_pairs_avx2(row, i0, i1, &c.weights_chroma, c.chroma_on_samples, cu, cv) };
                Some((ku, kv))
            }
            _ => None,
        };
        #[cfg(not(target_arch = "x86_64"))]
        let paired: Option<(usize, usize)> = None;
        for (k, comp) in c.comps.iter().enumerate() {
            if direct[comp.plane].is_some() || paired.is_some_and(|(ku, kv)| k == ku || k == kv) {
                continue;
            }
            let (i0, i1) = &c.taps[k];
            let w = if comp.chroma { &c.weights_chroma } else { &c.weights_luma };
            let single = if comp.chroma { c.chroma_on_samples } else { c.luma_on_samples };
            horizontal(c.avx2(), &s.vrows[comp.plane], i0, i1, w, single, &mut s.comps[k]);
        }
        // Colour, normalization and the store in one pass where there is a fused kernel for the
        // output; the rest (and the last columns of a row) through the channel rows.
        #[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(unused_mut))]
        let mut done = 0;
        #[cfg(target_arch = "x86_64")]
        if c.avx2() && c.fused_finish {
            done = if c.avx512() {
                unsafe { super::avx512::finish(c, &s.comps, dst, y) }
            } else {
                unsafe { finish_avx2(c, &s.comps, dst, y) }
            };
        }
        #[cfg(target_arch = "aarch64")]
        if c.neon() && c.fused_finish {
            // The band owns row y; the rows of `comps` hold the content width.
            done = unsafe { super::neon::finish(c, &s.comps, dst, y) };
        }
        s.counts.finished += done as u64;
        let xs = done..rect.width;
        colour(c, s, xs.clone());
        store_content(c, dst, y, xs, &s.chans, &mut s.bytes);
        pad(c, dst, y, 1, 0, rect.x);
        pad(c, dst, y, 1, rect.x + rect.width, c.dst.width - rect.x - rect.width);
    }
}

/// Source components → output channels, the fused kernels' arithmetic operation for operation
/// (see `FinishValues`): YUV through the matrix (with the normalization where it is folded in)
/// and clamped to the colour's range, which limited-range YUV overshoots.
#[inline(always)]
fn colour(c: &Converter, s: &mut Scratch, xs: Range<usize>) {
    let [c0, c1, c2, c3] = &mut s.chans;
    let comps = &s.comps;
    let f = &c.finish;
    let rgb_to = |r: f32, g: f32, b: f32| match c.dst.colorspace {
        Colorspace::Gray => (gray(r, g, b), 0.0, 0.0),
        _ => (r, g, b),
    };
    match c.kind {
        SrcKind::Yuv => {
            let (m, k, range) = (f.m, f.k, f.range);
            // `yuv_rows`' order; the terms it leaves out (zero in every matrix it takes) add a
            // zero, which changes no value.
            let row = |r: usize, y: f32, u: f32, v: f32| {
                let x = ((m[r][0] * y + k[r]) + m[r][2] * v) + m[r][1] * u;
                clamp_ps(x, range[r].0, range[r].1)
            };
            for i in xs.clone() {
                let (y, u, v) = (comps[0][i], comps[1][i], comps[2][i]);
                (c0[i], c1[i], c2[i]) = rgb_to(row(0, y, u, v), row(1, y, u, v), row(2, y, u, v));
            }
        }
        SrcKind::Rgb { .. } => {
            for i in xs.clone() {
                (c0[i], c1[i], c2[i]) = rgb_to(comps[0][i], comps[1][i], comps[2][i]);
            }
        }
        SrcKind::Gray => {
            for i in xs.clone() {
                let v = comps[0][i];
                (c0[i], c1[i], c2[i]) = (v, v, v);
            }
        }
    }
    if c.dst.colorspace == Colorspace::Bgr {
        std::mem::swap(c0, c2);
    }
    if c.dst.colorspace == Colorspace::Rgba {
        match c.kind {
            SrcKind::Rgb { alpha: true } => c3[xs.clone()].copy_from_slice(&comps[3][xs.clone()]),
            _ => c3[xs].fill(255.0),
        }
    }
}

/// `out[x] = row[i0[x]] + w[x] * (row[i1[x]] - row[i0[x]])`. Every index is below `row.len()`: the
/// plan built them inside the plane window `row` holds.
#[inline(always)]
fn horizontal(avx2: bool, row: &[f32], i0: &[u32], i1: &[u32], w: &[f32], single: bool, out: &mut [f32]) {
    let n = out.len().min(i0.len()).min(i1.len()).min(w.len());
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
    let mut x = 0;
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        // Eight gathered pairs at a time: scalar loads were most of a frame's time.
        x = unsafe { horizontal_avx2(row, &i0[..n], &i1[..n], &w[..n], single, &mut out[..n]) };
    }
    let _ = (avx2, single);
    for x in x..n {
        debug_assert!((i0[x] as usize) < row.len() && (i1[x] as usize) < row.len());
        let (a, b) = unsafe { (*row.get_unchecked(i0[x] as usize), *row.get_unchecked(i1[x] as usize)) };
        out[x] = a + w[x] * (b - a);
    }
}

/// Returns how many outputs it wrote (a multiple of 8); the caller finishes the tail.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn horizontal_avx2(
    row: &[f32],
    i0: &[u32],
    i1: &[u32],
    w: &[f32],
    single: bool,
    out: &mut [f32],
) -> usize {
    use std::arch::x86_64::*;
    let base = row.as_ptr();
    unsafe { lerp_gathered(i0, i1, w, single, out, |idx| _mm256_i32gather_ps::<4>(base, idx)) }
}

/// `out[x] = g(i0) + w * (g(i1) - g(i0))` eight lanes at a time, `g` a gather of eight samples.
/// Integer-ratio downscales (1920 → 640) put every tap on a sample (`single`): one gather only.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn lerp_gathered(
    i0: &[u32],
    i1: &[u32],
    w: &[f32],
    single: bool,
    out: &mut [f32],
    gather: impl Fn(std::arch::x86_64::__m256i) -> std::arch::x86_64::__m256,
) -> usize {
    use std::arch::x86_64::*;
    let n = out.len().min(i0.len()).min(i1.len()).min(w.len()) / 8 * 8;
    let mut x = 0;
    while x < n {
        unsafe {
            let a = gather(_mm256_loadu_si256(i0.as_ptr().add(x) as *const __m256i));
            let v = if single {
                a
            } else {
                let b = gather(_mm256_loadu_si256(i1.as_ptr().add(x) as *const __m256i));
                _mm256_fmadd_ps(_mm256_loadu_ps(w.as_ptr().add(x)), _mm256_sub_ps(b, a), a)
            };
            _mm256_storeu_ps(out.as_mut_ptr().add(x), v);
        }
        x += 8;
    }
    n
}

/// Two distinct rows of `rows`, mutably: `[.., a, b]` are rows `ka` and `kb`.
#[cfg(target_arch = "x86_64")]
fn pick2(rows: &mut [Vec<f32>; 4], ka: usize, kb: usize) -> [&mut Vec<f32>; 2] {
    assert_ne!(ka, kb);
    let [r0, r1, r2, r3] = rows;
    let mut all = [Some(r0), Some(r1), Some(r2), Some(r3)];
    [all[ka].take().unwrap(), all[kb].take().unwrap()]
}

/// `u[x], v[x]` from the (U, V) f32 pairs of `row` at taps `i0` (the U of each pair) and `i1`,
/// eight pixels per iteration: two 64-bit gathers per tap bring eight pairs.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn horizontal_pairs_avx2(
    row: &[f32],
    i0: &[u32],
    i1: &[u32],
    w: &[f32],
    single: bool,
    u: &mut [f32],
    v: &mut [f32],
) {
    use std::arch::x86_64::*;
    let n = u.len().min(v.len()).min(i0.len()).min(i1.len()).min(w.len());
    let base = row.as_ptr() as *const f64;
    // Eight (U, V) pairs at the taps in `idx`, split into eight U and eight V.
    let gather = |idx: *const u32| unsafe {
        let lo = _mm256_castpd_ps(_mm256_i32gather_pd::<4>(base, _mm_loadu_si128(idx as *const __m128i)));
        let hi =
            _mm256_castpd_ps(_mm256_i32gather_pd::<4>(base, _mm_loadu_si128(idx.add(4) as *const __m128i)));
        // Within each 128-bit lane: U from even slots, V from odd; then the lanes back in order.
        let us = _mm256_shuffle_ps::<0b10_00_10_00>(lo, hi);
        let vs = _mm256_shuffle_ps::<0b11_01_11_01>(lo, hi);
        let order = _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7);
        (_mm256_permutevar8x32_ps(us, order), _mm256_permutevar8x32_ps(vs, order))
    };
    let lanes = n / 8 * 8;
    let mut x = 0;
    while x < lanes {
        unsafe {
            let (ua, va) = gather(i0.as_ptr().add(x));
            let (uo, vo) = if single {
                (ua, va)
            } else {
                let (ub, vb) = gather(i1.as_ptr().add(x));
                let wv = _mm256_loadu_ps(w.as_ptr().add(x));
                (
                    _mm256_fmadd_ps(wv, _mm256_sub_ps(ub, ua), ua),
                    _mm256_fmadd_ps(wv, _mm256_sub_ps(vb, va), va),
                )
            };
            _mm256_storeu_ps(u.as_mut_ptr().add(x), uo);
            _mm256_storeu_ps(v.as_mut_ptr().add(x), vo);
        }
        x += 8;
    }
    for x in lanes..n {
        let (a, b) = (i0[x] as usize, i1[x] as usize);
        u[x] = row[a] + w[x] * (row[b] - row[a]);
        v[x] = row[a + 1] + w[x] * (row[b + 1] - row[a + 1]);
    }
}

/// One gather group's components at every content column, straight from two source rows' bytes:
/// a dword gather per tap per row brings every member (member `m` is byte `shift` of it), then the
/// horizontal and vertical blends run at output width.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn group_avx2(
    r0: &[u8],
    r1: &[u8],
    wy: f32,
    g: &super::Group,
    wx: &[f32],
    single: bool,
    out: &mut [Vec<f32>; 4],
) -> usize {
    use std::arch::x86_64::*;
    let n = g.i0.len().min(g.i1.len()).min(wx.len());
    let (b0, b1) = (r0.as_ptr() as *const i32, r1.as_ptr() as *const i32);
    let low = _mm256_set1_epi32(0xff);
    let wyv = _mm256_set1_ps(wy);
    let two_rows = wy != 0.0;
    let lanes = n / 8 * 8;
    let mut x = 0;
    while x < lanes {
        unsafe {
            let ia = _mm256_loadu_si256(g.i0.as_ptr().add(x) as *const __m256i);
            let ib = _mm256_loadu_si256(g.i1.as_ptr().add(x) as *const __m256i);
            let wxv = _mm256_loadu_ps(wx.as_ptr().add(x));
            let a0 = _mm256_i32gather_epi32::<1>(b0, ia);
            let c0 = if single { a0 } else { _mm256_i32gather_epi32::<1>(b0, ib) };
            let (a1, c1) = if two_rows {
                let a1 = _mm256_i32gather_epi32::<1>(b1, ia);
                (a1, if single { a1 } else { _mm256_i32gather_epi32::<1>(b1, ib) })
            } else {
                (a0, c0)
            };
            for &(k, shift) in &g.members {
                let sh = _mm_cvtsi32_si128(8 * shift as i32);
                let byte = |v: __m256i| _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srl_epi32(v, sh), low));
                let lerp_x = |a: __m256i, c: __m256i| {
                    let fa = byte(a);
                    if single {
                        fa
                    } else {
                        _mm256_fmadd_ps(wxv, _mm256_sub_ps(byte(c), fa), fa)
                    }
                };
                let top = lerp_x(a0, c0);
                let v = if two_rows {
                    _mm256_fmadd_ps(wyv, _mm256_sub_ps(lerp_x(a1, c1), top), top)
                } else {
                    top
                };
                _mm256_storeu_ps(out[k].as_mut_ptr().add(x), v);
            }
        }
        x += 8;
    }
    group_tail(r0, r1, wy, g, wx, lanes..n, out);
    lanes
}

/// A group's outputs `xs` one at a time, straight from the two source rows' bytes: the columns
/// the vector kernels leave after their last full block.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(super) fn group_tail(
    r0: &[u8],
    r1: &[u8],
    wy: f32,
    g: &super::Group,
    wx: &[f32],
    xs: Range<usize>,
    out: &mut [Vec<f32>; 4],
) {
    for x in xs {
        for &(k, shift) in &g.members {
            let at = |r: &[u8], i: u32| r[i as usize + shift] as f32;
            let (i0, i1) = (g.i0[x], g.i1[x]);
            let top = at(r0, i0) + wx[x] * (at(r0, i1) - at(r0, i0));
            let bottom = at(r1, i0) + wx[x] * (at(r1, i1) - at(r1, i0));
            out[k][x] = top + wy * (bottom - top);
        }
    }
}

/// One loop per (window variant, members, single tap, two rows) of a group's block kernel:
/// `$f::<VARIANT, MEMBERS, SINGLE, TWO>(args)`, the variant `$a` or (where `$alt`) `$b`, members
/// 1 to 4. No branch, member loop or bounds check per block (measured: NV12 → uint8 0.248 → 0.225
/// ms with the AVX2 shuffles; callgrind counted ~90 instructions per 8 outputs before, for ~35
/// vector ones).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
macro_rules! group_dispatch {
    ($f:ident, $alt:expr => [$a:tt, $b:tt], $members:expr, $single:expr, $two:expr, ($($arg:expr),*)) => {{
        macro_rules! taps {
            ($v:tt, $m:tt) => {
                match ($single, $two) {
                    (true, false) => unsafe { $f::<$v, $m, true, false>($($arg),*) },
                    (true, true) => unsafe { $f::<$v, $m, true, true>($($arg),*) },
                    (false, false) => unsafe { $f::<$v, $m, false, false>($($arg),*) },
                    (false, true) => unsafe { $f::<$v, $m, false, true>($($arg),*) },
                }
            };
        }
        match ($alt, $members) {
            (false, 1) => taps!($a, 1),
            (false, 2) => taps!($a, 2),
            (false, 3) => taps!($a, 3),
            (false, _) => taps!($a, 4),
            (true, 1) => taps!($b, 1),
            (true, 2) => taps!($b, 2),
            (true, 3) => taps!($b, 3),
            (true, _) => taps!($b, 4),
        }
    }};
}
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(super) use group_dispatch;

/// The same as `group_avx2` (same arithmetic, so the same values) for groups whose taps are dense
/// enough to be picked out of 16-byte loads by `pshufb` (see `Shuffle`). Returns the columns its
/// blocks wrote.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn shuffle_avx2(
    r0: &[u8],
    r1: &[u8],
    wy: f32,
    g: &super::Group,
    plan: &super::Shuffle,
    wx: &[f32],
    wq: &[u32],
    single: bool,
    out: &mut [Vec<f32>; 4],
) -> usize {
    let blocks = group_dispatch!(
        shuffle_blocks,
        plan.quarters => [1, 2],
        g.members.len(),
        single,
        wy != 0.0,
        (r0, r1, wy, g, plan, wq, out)
    );
    let n = g.i0.len().min(g.i1.len()).min(wx.len());
    let blocks = blocks.min(n / 8);
    group_tail(r0, r1, wy, g, wx, 8 * blocks..n, out);
    8 * blocks
}

/// Source kinds, output colourspaces and output forms of the fused finish loops (AVX2 here,
/// AVX-512 in `avx512`), their const parameters; `fused_params` picks them for a converter.
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

/// The (kind, colourspace, output form) of a converter's fused finish loop.
pub(super) fn fused_params(c: &Converter) -> (u8, u8, u8) {
    let kind = match c.kind {
        SrcKind::Yuv => YUV,
        SrcKind::Rgb { .. } => RGB,
        SrcKind::Gray => GRAY,
    };
    let cs = match c.dst.colorspace {
        Colorspace::Gray => CS_GRAY,
        Colorspace::Rgb => CS_RGB,
        Colorspace::Bgr => CS_BGR,
        Colorspace::Rgba => CS_RGBA,
    };
    let out = match (c.dst.dtype, c.raw8) {
        (DType::U8 | DType::I8, true) => RAW8,
        (DType::U8 | DType::I8, false) => BYTE,
        _ => FLOAT,
    };
    (kind, cs, out)
}

/// Output channels of colourspace `cs`.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
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
/// `$f::<KIND, CS, OUT>($c, args...)`, `$c` the converter. A colourspace match left inside the
/// loop was a fifth of its samples.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
macro_rules! finish_dispatch {
    ($f:ident, $c:expr, $($arg:expr),*) => {{
        let c: &Converter = $c;
        let (kind, cs, out) = fused_params(c);
        macro_rules! by_out {
            ($k:expr, $cs:expr) => {
                match out {
                    RAW8 => unsafe { $f::<{ $k }, { $cs }, RAW8>(c, $($arg),*) },
                    BYTE => unsafe { $f::<{ $k }, { $cs }, BYTE>(c, $($arg),*) },
                    _ => unsafe { $f::<{ $k }, { $cs }, FLOAT>(c, $($arg),*) },
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
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(super) use finish_dispatch;

/// The values of the colour and normalization arithmetic, made once with the plan (each fused loop
/// broadcasts them per row; the baseline's `colour` and stores read them), the colour rows in R,
/// G, B order. With `folded`, row `r`'s `m` and `k` carry the scale and bias of its output channel
/// and `range` is where the colour clamp and the type's range meet; else `range` is the colour
/// clamp, 0..255, and `luma` the rows' shared Y coefficient. Every level computes the same
/// operations in the same order without FMA, so that every level stores the same bits.
#[derive(Debug, Clone, Default)]
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
}

/// `c`'s `FinishValues`, for the loop `fused_params(c)` picks.
pub(super) fn finish_values(c: &Converter) -> FinishValues {
    let (kind, cs, out) = fused_params(c);
    let (folded, order) = (folded(kind, cs, out), order(cs));
    let signed = c.dst.dtype == DType::I8;
    let (lo, hi) = if signed { (-128.0, 127.0) } else { (0.0, 255.0) };
    let (tlo, thi) = if out == FLOAT { (f32::MIN, f32::MAX) } else { (lo, hi) };
    let mut v = FinishValues {
        m: [[0.0; 3]; 3],
        k: [0.0; 3],
        range: [(0.0, 255.0); 3],
        luma: c.matrix[0][0],
        lo,
        hi,
        signed,
        alpha: matches!(c.kind, SrcKind::Rgb { alpha: true }),
        scale: c.scale,
        bias: c.bias,
    };
    for r in 0..3 {
        let (s, b) = if folded { (c.scale[order[r]], c.bias[order[r]]) } else { (1.0, 0.0) };
        for j in 0..3 {
            v.m[r][j] = s * c.matrix[r][j];
        }
        v.k[r] = s * c.yuv_bias[r] + b;
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

/// R, G, B of one vector of Y, U, V, by the fused loops of either width: `$mul`, `$add` the
/// width's intrinsics; `$m`, `$k`, `$luma` the broadcast `FinishValues`. Row `r` is
/// `((m[r][0]·y + k[r]) + m[r][2]·v) + m[r][1]·u` without its zero terms, in that order; unfolded,
/// the rows share one Y coefficient and the product is made once. No FMA: the baseline
/// (`colour`) has none, and a fused multiply-add rounds once where the baseline rounds twice,
/// which put an 8-bit output one apart between levels now and then (one in several thousand on
/// the tests' frames) and most float32 outputs a bit apart. Measured against the FMA rows
/// (1080p → 640×640, interleaved runs): NV12 uint8 0.083 → 0.087 ms with AVX-512, 0.126 → 0.132
/// with AVX2; float32 0.109 → 0.114 with AVX-512, the same within noise with AVX2.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
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
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(super) use yuv_rows;

/// Colour, normalization and store of content columns `0..n` (`n` the largest multiple of 8) of
/// row `y` in one pass, eight pixels per iteration: uint8, int8 and float32 outputs, hwc or chw.
/// Going through channel rows and a separate interleaving pass cost about as much as sampling
/// (measured: half of an NV12 → uint8 frame's time). Returns `n`; the caller finishes the row.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn finish_avx2(c: &Converter, comps: &[Vec<f32>; 4], dst: SendPtr, y: usize) -> usize {
    finish_dispatch!(finish_rows, c, comps, dst, y)
}

/// Output colourspace `CS` from source kind `K`, stored as `OUT`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn finish_rows<const K: u8, const CS: u8, const OUT: u8>(
    c: &Converter,
    comps: &[Vec<f32>; 4],
    dst: SendPtr,
    y: usize,
) -> usize {
    use std::arch::x86_64::*;
    let d = &c.dst;
    let n = c.content.rect.width.min(comps[0].len()) / 8 * 8;
    let x0 = c.content.rect.x;
    let esz = if OUT == FLOAT { 4 } else { 1 };
    let (nc, order) = (channels(CS), order(CS));
    let fold = folded(K, CS, OUT);
    let f = &c.finish;
    let zero = _mm256_setzero_ps();
    let luma = _mm256_set1_ps(f.luma);
    let full = _mm256_set1_ps(255.0);
    let (lov, hiv) = (_mm256_set1_ps(f.lo), _mm256_set1_ps(f.hi));
    // (Plain loops: array `map` closures are compiled without AVX2 and not inlined.)
    let mut m = [[zero; 3]; 3];
    let (mut k, mut gray_w, mut range) = ([zero; 3], [zero; 3], [(zero, zero); 3]);
    let (mut scale, mut bias) = ([zero; 4], [zero; 4]);
    for i in 0..3 {
        for j in 0..3 {
            m[i][j] = _mm256_set1_ps(f.m[i][j]);
        }
        k[i] = _mm256_set1_ps(f.k[i]);
        gray_w[i] = _mm256_set1_ps(GRAY_WEIGHTS[i]);
        range[i] = (_mm256_set1_ps(f.range[i].0), _mm256_set1_ps(f.range[i].1));
    }
    for i in 0..4 {
        scale[i] = _mm256_set1_ps(f.scale[i]);
        bias[i] = _mm256_set1_ps(f.bias[i]);
    }
    let signed = f.signed;
    let row = unsafe { dst.0.add(y * d.row_stride + x0 * if d.chw { esz } else { nc * esz }) };
    let mut x = 0;
    while x < n {
        unsafe {
            let ld = |k: usize| _mm256_loadu_ps(comps[k].as_ptr().add(x));
            // Output channels 0..3 in order (colour, or gray's source RGB).
            let mut ch = [zero, zero, zero, full];
            match K {
                YUV => {
                    let rgb = yuv_rows!(fold, _mm256_mul_ps, _mm256_add_ps, m, k, luma, ld(0), ld(1), ld(2));
                    for i in 0..3 {
                        let r = order[i];
                        ch[i] = if OUT == RAW8 && nc != 1 {
                            rgb[r]
                        } else {
                            _mm256_min_ps(_mm256_max_ps(rgb[r], range[r].0), range[r].1)
                        };
                    }
                }
                RGB => {
                    for i in 0..3 {
                        ch[i] = ld(order[i]);
                    }
                }
                _ => {
                    let v = ld(0);
                    ch = [v, v, v, full];
                }
            }
            if nc == 1 && K != GRAY {
                // Gray's weights are over R, G, B: the order is RGB's for a one-channel output.
                // `gray`'s operations, in its order.
                let gb = _mm256_add_ps(_mm256_mul_ps(gray_w[2], ch[2]), _mm256_mul_ps(gray_w[1], ch[1]));
                ch[0] = _mm256_add_ps(gb, _mm256_mul_ps(gray_w[0], ch[0]));
            }
            if nc == 4 && f.alpha {
                ch[3] = ld(3);
            }
            if OUT != RAW8 {
                let from = if fold { 3 } else { 0 };
                for i in from..nc {
                    ch[i] = _mm256_add_ps(_mm256_mul_ps(ch[i], scale[i]), bias[i]);
                }
            }
            if OUT == FLOAT {
                if d.chw || nc == 1 {
                    for i in 0..nc {
                        _mm256_storeu_ps(row.add(i * d.plane_stride + 4 * x) as *mut f32, ch[i]);
                    }
                } else if nc == 3 {
                    let at = row.add(12 * x) as *mut f32;
                    // Per 128-bit lane (four pixels), R, G, B rotated in place so that each of
                    // the three output vectors is two blends of them; then the lanes put in
                    // order. 12 shuffles and blends for 8 pixels where cross-lane permutes of
                    // each channel took 16 (measured: NV12 → float32 0.300 → 0.287 ms).
                    let r = _mm256_permute_ps::<0b01_10_11_00>(ch[0]); // r0 r3 r2 r1
                    let g = _mm256_permute_ps::<0b10_11_00_01>(ch[1]); // g1 g0 g3 g2
                    let b = _mm256_permute_ps::<0b11_00_01_10>(ch[2]); // b2 b1 b0 b3
                    let x0 = _mm256_blend_ps::<0b0100_0100>(_mm256_blend_ps::<0b0010_0010>(r, g), b);
                    let x1 = _mm256_blend_ps::<0b0100_0100>(_mm256_blend_ps::<0b0010_0010>(g, b), r);
                    let x2 = _mm256_blend_ps::<0b0100_0100>(_mm256_blend_ps::<0b0010_0010>(b, r), g);
                    _mm256_storeu_ps(at, _mm256_permute2f128_ps::<0x20>(x0, x1));
                    _mm256_storeu_ps(at.add(8), _mm256_permute2f128_ps::<0x30>(x2, x0));
                    _mm256_storeu_ps(at.add(16), _mm256_permute2f128_ps::<0x31>(x1, x2));
                } else {
                    let at = row.add(16 * x) as *mut f32;
                    let (t0, t1) = (_mm256_unpacklo_ps(ch[0], ch[1]), _mm256_unpackhi_ps(ch[0], ch[1]));
                    let (t2, t3) = (_mm256_unpacklo_ps(ch[2], ch[3]), _mm256_unpackhi_ps(ch[2], ch[3]));
                    // Pixels 0|4, 1|5, 2|6, 3|7, then the halves put in order.
                    let p04 = _mm256_shuffle_ps::<0b01_00_01_00>(t0, t2);
                    let p15 = _mm256_shuffle_ps::<0b11_10_11_10>(t0, t2);
                    let p26 = _mm256_shuffle_ps::<0b01_00_01_00>(t1, t3);
                    let p37 = _mm256_shuffle_ps::<0b11_10_11_10>(t1, t3);
                    _mm256_storeu_ps(at, _mm256_permute2f128_ps::<0x20>(p04, p15));
                    _mm256_storeu_ps(at.add(8), _mm256_permute2f128_ps::<0x20>(p26, p37));
                    _mm256_storeu_ps(at.add(16), _mm256_permute2f128_ps::<0x31>(p04, p15));
                    _mm256_storeu_ps(at.add(24), _mm256_permute2f128_ps::<0x31>(p26, p37));
                }
            } else {
                // Clamped to the type's range, then rounded to nearest, ties to even, by the
                // conversion (the default MXCSR mode; `round_even` in the baseline).
                // (Loops, not array `map`: its closure is compiled without AVX2 and not inlined.)
                let mut q = [_mm256_setzero_si256(); 4];
                for i in 0..nc {
                    q[i] = _mm256_cvtps_epi32(if OUT == RAW8 || (fold && i < 3) {
                        ch[i]
                    } else {
                        _mm256_min_ps(_mm256_max_ps(ch[i], lov), hiv)
                    });
                }
                let flip = _mm256_set1_epi8(-128);
                let pack8 = |a: __m256i, b: __m256i| match (OUT == RAW8, signed) {
                    (true, true) => _mm256_xor_si256(_mm256_packus_epi16(a, b), flip),
                    (false, true) => _mm256_packs_epi16(a, b),
                    _ => _mm256_packus_epi16(a, b),
                };
                if d.chw || nc == 1 {
                    // Bytes 0-3 and 8-11 of the packed vector are the pixels 0-3, 4-7.
                    let order = _mm256_setr_epi32(0, 4, 1, 1, 1, 1, 1, 1);
                    for i in 0..nc {
                        let w = _mm256_packs_epi32(q[i], q[i]);
                        let b = _mm256_permutevar8x32_epi32(pack8(w, w), order);
                        _mm_storel_epi64(
                            row.add(i * d.plane_stride + x) as *mut __m128i,
                            _mm256_castsi256_si128(b),
                        );
                    }
                } else if nc == 3 {
                    // Per half: R0-3 G0-3 B0-3 B0-3, interleaved to 12 bytes, halves joined.
                    let b = pack8(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[2]));
                    let pick = _mm256_setr_epi8(
                        0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, -1, -1, -1, -1, 0, 4, 8, 1, 5, 9, 2, 6, 10, 3,
                        7, 11, -1, -1, -1, -1,
                    );
                    let b = _mm256_shuffle_epi8(b, pick);
                    let b = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 3, 7));
                    let at = row.add(3 * x);
                    _mm_storeu_si128(at as *mut __m128i, _mm256_castsi256_si128(b));
                    _mm_storel_epi64(at.add(16) as *mut __m128i, _mm256_extracti128_si256::<1>(b));
                } else {
                    let b = pack8(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
                    let pick = _mm256_setr_epi8(
                        0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15, 0, 4, 8, 12, 1, 5, 9, 13, 2, 6,
                        10, 14, 3, 7, 11, 15,
                    );
                    _mm256_storeu_si256(row.add(4 * x) as *mut __m256i, _mm256_shuffle_epi8(b, pick));
                }
            }
        }
        x += 8;
    }
    n
}

/// The blocks of `shuffle_avx2` with `P` vectors of windows (1: two windows of four outputs; 2:
/// four of two, OR-ed), `M` members, taps on samples (`SINGLE`) or not, one source row or two
/// (`TWO`); returns how many blocks it wrote.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn shuffle_blocks<const P: usize, const M: usize, const SINGLE: bool, const TWO: bool>(
    r0: &[u8],
    r1: &[u8],
    wy: f32,
    g: &super::Group,
    plan: &super::Shuffle,
    wq: &[u32],
    out: &mut [Vec<f32>; 4],
) -> usize {
    use std::arch::x86_64::*;
    assert!(g.members.len() >= M && (1..=4).contains(&M));
    let per_block = M * 2 * P;
    let width = g.members.iter().map(|&(k, _)| out[k].len()).min().unwrap_or(0);
    let blocks = plan.bases.len().min(wq.len() / 8).min(plan.controls.len() / per_block).min(width / 8);
    // Each member's output row, checked above to hold `8 * blocks` values.
    let mut rows = [std::ptr::null_mut::<f32>(); M];
    for (j, row) in rows.iter_mut().enumerate() {
        *row = out[g.members[j].0].as_mut_ptr();
    }
    let wyv = _mm256_set1_ps(wy);
    let unit = _mm256_set1_ps(super::WEIGHT_UNIT);
    let tap = if SINGLE { 0 } else { P };
    let (bases, controls) = (plan.bases.as_ptr(), plan.controls.as_ptr());
    for b in 0..blocks {
        unsafe {
            let w = *bases.add(b);
            // Vector p's lanes are windows p and p + P: the plan keeps every base + 16 within
            // `reach`.
            let load = |r: &[u8], p: usize| {
                _mm256_loadu2_m128i(
                    r.as_ptr().add(w[p + P] as usize) as *const __m128i,
                    r.as_ptr().add(w[p] as usize) as *const __m128i,
                )
            };
            let mut v0 = [_mm256_setzero_si256(); P];
            let mut v1 = [_mm256_setzero_si256(); P];
            for p in 0..P {
                v0[p] = load(r0, p);
                if TWO {
                    v1[p] = load(r1, p);
                }
            }
            let wqv = if SINGLE {
                _mm256_setzero_si256()
            } else {
                _mm256_loadu_si256(wq.as_ptr().add(8 * b) as *const __m256i)
            };
            let ctl = controls.add(b * per_block);
            for j in 0..M {
                // On samples: the tap's byte; else both taps' bytes blended by one multiply-add
                // of the weight pair (exact in i32, scaled back below).
                let c = ctl.add(2 * P * j + tap);
                let pick = |v: &[__m256i; P]| {
                    let mut t = _mm256_shuffle_epi8(v[0], _mm256_loadu_si256(c as *const __m256i));
                    for p in 1..P {
                        let u = _mm256_shuffle_epi8(v[p], _mm256_loadu_si256(c.add(p) as *const __m256i));
                        t = _mm256_or_si256(t, u);
                    }
                    _mm256_cvtepi32_ps(if SINGLE { t } else { _mm256_madd_epi16(t, wqv) })
                };
                let top = pick(&v0);
                let mut v = if TWO { _mm256_fmadd_ps(wyv, _mm256_sub_ps(pick(&v1), top), top) } else { top };
                if !SINGLE {
                    v = _mm256_mul_ps(v, unit);
                }
                _mm256_storeu_ps(rows[j].add(8 * b), v);
            }
        }
    }
    blocks
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

    /// Every period a pattern can have, from every alignment, over lengths around the block and
    /// line sizes, at every level this CPU has: the bytes written are the pattern from phase 0,
    /// and nothing past the span changes.
    #[test]
    fn fill_span_repeats_the_pattern_from_any_alignment() {
        let mut levels = vec![Simd::Baseline, Simd::Avx2, Simd::Avx512];
        #[cfg(target_arch = "aarch64")]
        levels.push(Simd::Neon);
        levels.retain(|l| *l <= Simd::detect());
        for period in [1, 2, 3, 4, 6, 8, 12, 16, 24, 32] {
            let unit: Vec<u8> = (1..=period as u8).collect();
            let pattern: [u8; PATTERN] = std::array::from_fn(|i| unit[i % period]);
            for &level in &levels {
                for offset in 0..64 {
                    for len in [0, 1, 63, 64, 191, 192, 193, 255, 256, 450, 1000] {
                        let mut buf = vec![0xEEu8; 64 + 1100 + 64];
                        let base = buf.as_ptr().align_offset(64);
                        let at = base + offset;
                        unsafe { fill_span(level, &pattern, period, buf.as_mut_ptr().add(at), len) };
                        for (i, &b) in buf.iter().enumerate() {
                            let want =
                                if (at..at + len).contains(&i) { unit[(i - at) % period] } else { 0xEE };
                            assert_eq!(
                                b, want,
                                "{level:?} period {period} offset {offset} len {len} byte {i}"
                            );
                        }
                    }
                }
            }
        }
    }
}
