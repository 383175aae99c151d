//! The baseline level: plain loops over contiguous f32 rows that the compiler vectorizes (SSE2 on
//! x86_64, NEON on aarch64). The driver compiles them into its row loop twice on x86_64, once
//! plain and once with AVX2+FMA enabled, so everything here stays `#[inline(always)]`; the vector
//! levels run them for what their kernels leave (other output types, the last columns of a row,
//! planes read through blended rows).

// The channel and plane loops index several parallel arrays at once; iterating one of them would
// only hide the others.
#![allow(clippy::needless_range_loop)]

use super::finish::{
    channels, clamp_ps, fill_blocks, gray, put, round_even_small, FinishValues, Out, SendPtr, CS_BGR,
    CS_GRAY, CS_RGBA, RAW8, RGB, YUV,
};
use super::lines::Lines;
use crate::dtype::{f16, DType};
use std::ops::Range;

/// Two source rows `r0`, `r1` blended at window width into f32, `w` the weight of `r1`.
#[inline(always)]
pub(super) fn blend_rows(r0: &[u8], r1: &[u8], w: f32, out: &mut [f32]) {
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

/// `out[x] = row[i0[x]] + w[x] * (row[i1[x]] - row[i0[x]])` from column `from` on (a vector level
/// did the ones before). Every index is below `row.len()`: the plan built them inside the plane
/// window `row` holds.
#[inline(always)]
pub(super) fn horizontal(from: usize, row: &[f32], i0: &[u32], i1: &[u32], w: &[f32], out: &mut [f32]) {
    let n = out.len().min(i0.len()).min(i1.len()).min(w.len());
    for x in from..n {
        debug_assert!((i0[x] as usize) < row.len() && (i1[x] as usize) < row.len());
        let (a, b) = unsafe { (*row.get_unchecked(i0[x] as usize), *row.get_unchecked(i1[x] as usize)) };
        out[x] = a + w[x] * (b - a);
    }
}

/// Source components → output channels at columns `xs`, the fused kernels' arithmetic operation
/// for operation (see `FinishValues`): YUV through the matrix (with the normalization where it is
/// folded in) and clamped to the colour's range, which limited-range YUV overshoots.
#[inline(always)]
pub(super) fn colour(
    f: &FinishValues,
    comps: &[Lines<f32>; 4],
    chans: &mut [Lines<f32>; 4],
    xs: Range<usize>,
) {
    // One loop for gray outputs and one for colour: with the choice inside the loop, aarch64's
    // rebuilt its select mask on every vector once the colourspace came as a byte (llvm-mca: 46 →
    // 51 instructions per YUV iteration, 16 → 19 per RGB one).
    match f.cs == CS_GRAY {
        true => colour_rows::<true>(f, comps, chans, xs.clone()),
        false => colour_rows::<false>(f, comps, chans, xs.clone()),
    }
    let [c0, _, c2, c3] = chans;
    if f.cs == CS_BGR {
        std::mem::swap(c0, c2);
    }
    if f.cs == CS_RGBA {
        match f.alpha {
            true => c3[xs.clone()].copy_from_slice(&comps[3][xs.clone()]),
            false => c3[xs].fill(255.0),
        }
    }
}

/// `colour`'s R, G, B (or gray, `GRAY_OUT`) into channel rows 0 to 2.
#[inline(always)]
fn colour_rows<const GRAY_OUT: bool>(
    f: &FinishValues,
    comps: &[Lines<f32>; 4],
    chans: &mut [Lines<f32>; 4],
    xs: Range<usize>,
) {
    let [c0, c1, c2, _] = chans;
    let rgb_to = |r: f32, g: f32, b: f32| if GRAY_OUT { (gray(r, g, b), 0.0, 0.0) } else { (r, g, b) };
    match f.kind {
        YUV => {
            let (m, k, range) = (f.m, f.k, f.range);
            // `yuv_rows`' order; the terms it leaves out (zero in every matrix it takes) add a
            // zero, which changes no value.
            let row = |r: usize, y: f32, u: f32, v: f32| {
                let x = ((m[r][0] * y + k[r]) + m[r][2] * v) + m[r][1] * u;
                clamp_ps(x, range[r].0, range[r].1)
            };
            for i in xs {
                let (y, u, v) = (comps[0][i], comps[1][i], comps[2][i]);
                (c0[i], c1[i], c2[i]) = rgb_to(row(0, y, u, v), row(1, y, u, v), row(2, y, u, v));
            }
        }
        RGB => {
            for i in xs {
                (c0[i], c1[i], c2[i]) = rgb_to(comps[0][i], comps[1][i], comps[2][i]);
            }
        }
        _ => {
            for i in xs {
                let v = comps[0][i];
                (c0[i], c1[i], c2[i]) = (v, v, v);
            }
        }
    }
}

/// Content columns `xs` of one row: `chans[c][x] * scale[c] + bias[c]` stored interleaved (hwc,
/// `C` channels, one pass over x) or into each channel's plane (chw).
#[inline(always)]
fn store_row<T: Out, const C: usize>(
    f: &FinishValues,
    dst: SendPtr,
    y: usize,
    xs: Range<usize>,
    chans: &[Lines<f32>; 4],
) {
    let n = xs.len();
    let x0 = f.x0 + xs.start;
    let esz = std::mem::size_of::<T>();
    if f.chw {
        for ch in 0..C {
            let start = ch * f.plane_stride + y * f.row_stride + x0 * esz;
            // This band owns row y of every plane.
            let out = unsafe { std::slice::from_raw_parts_mut(dst.0.add(start), n * esz) };
            let (sc, bi) = (f.scale[ch], f.bias[ch]);
            for (o, &v) in out.chunks_exact_mut(esz).zip(&chans[ch][xs.clone()]) {
                put::<T>(o, v * sc + bi);
            }
        }
    } else {
        let start = y * f.row_stride + x0 * C * esz;
        let out = unsafe { std::slice::from_raw_parts_mut(dst.0.add(start), n * C * esz) };
        let (sc, bi) = (&f.scale, &f.bias);
        for (x, px) in xs.zip(out.chunks_exact_mut(C * esz)) {
            for ch in 0..C {
                put::<T>(&mut px[ch * esz..], chans[ch][x] * sc[ch] + bi[ch]);
            }
        }
    }
}

/// float16 outputs: `chans[c][x] * scale[c] + bias[c]` in f32 as `store_row` makes them, a block
/// at a time in output order on the stack, then through `f16::from_f32_slice` (F16C or fp16 where
/// the CPU has them: the same rounding as the scalar conversion, so every level stores the same
/// bytes) and copied to the row. One value at a time, the scalar conversion was a branchy function
/// call per element.
#[inline(always)]
fn store_f16<const C: usize>(
    f: &FinishValues,
    dst: SendPtr,
    y: usize,
    xs: Range<usize>,
    chans: &[Lines<f32>; 4],
) {
    const BLOCK_VALUES: usize = 256;
    let mut vals = [0.0f32; BLOCK_VALUES];
    let mut halves = [f16(0); BLOCK_VALUES];
    let x0 = f.x0 + xs.start;
    let mut put_block = |at: usize, vals: &[f32]| {
        let out = &mut halves[..vals.len()];
        f16::from_f32_slice(out, vals);
        // This band owns the row; the halves' bytes are the elements' (native-endian u16s).
        unsafe { std::ptr::copy_nonoverlapping(out.as_ptr().cast::<u8>(), dst.0.add(at), 2 * out.len()) };
    };
    if f.chw {
        for ch in 0..C {
            let (sc, bi) = (f.scale[ch], f.bias[ch]);
            let row = ch * f.plane_stride + y * f.row_stride + x0 * 2;
            for (b, src) in chans[ch][xs.clone()].chunks(BLOCK_VALUES).enumerate() {
                for (o, &v) in vals.iter_mut().zip(src) {
                    *o = v * sc + bi;
                }
                put_block(row + b * BLOCK_VALUES * 2, &vals[..src.len()]);
            }
        }
    } else {
        let (sc, bi) = (&f.scale, &f.bias);
        let per = BLOCK_VALUES / C;
        let row = y * f.row_stride + x0 * C * 2;
        let mut start = xs.start;
        while start < xs.end {
            let end = (start + per).min(xs.end);
            for (k, x) in (start..end).enumerate() {
                for ch in 0..C {
                    vals[k * C + ch] = chans[ch][x] * sc[ch] + bi[ch];
                }
            }
            put_block(row + (start - xs.start) * C * 2, &vals[..(end - start) * C]);
            start = end;
        }
    }
}

/// 8-bit outputs: each channel is rounded and saturated in its own contiguous (vectorized) pass,
/// then the bytes are interleaved; converting and interleaving in one loop kept every element in
/// a scalar register.
#[inline(always)]
fn store_bytes<const C: usize>(
    f: &FinishValues,
    dst: SendPtr,
    y: usize,
    xs: Range<usize>,
    chans: &[Lines<f32>; 4],
    bytes: &mut [Lines<u8>; 4],
) {
    let n = xs.len();
    let x0 = f.x0 + xs.start;
    let raw8 = f.out == RAW8;
    // Raw int8 is the uint8 value with its top bit flipped, as the fused kernels make it:
    // subtracting 128 in f32 first can round a value below 64 onto a tie.
    let (lo, hi, flip) = match (raw8, f.dtype == DType::I8) {
        (true, signed) => (0.0f32, 255.0f32, if signed { 0x80u8 } else { 0 }),
        (false, true) => (-128.0, 127.0, 0),
        (false, false) => (0.0, 255.0, 0),
    };
    for ch in 0..C {
        let (sc, bi) = if raw8 { (1.0, 0.0) } else { (f.scale[ch], f.bias[ch]) };
        for (o, &v) in bytes[ch][..n].iter_mut().zip(&chans[ch][xs.clone()]) {
            let r = round_even_small(clamp_ps(v * sc + bi, lo, hi));
            // Finite and in range: every input is a byte and the plan checked that scale and
            // bias are finite, so the unchecked conversion (one vector instruction, where `as`
            // needs a NaN test per element) is exact.
            debug_assert!(r.is_finite());
            *o = (unsafe { r.to_int_unchecked::<i32>() } as u8) ^ flip;
        }
    }
    if f.chw {
        for ch in 0..C {
            let at = ch * f.plane_stride + y * f.row_stride + x0;
            unsafe { std::ptr::copy_nonoverlapping(bytes[ch].as_ptr(), dst.0.add(at), n) };
        }
    } else {
        let out = unsafe { std::slice::from_raw_parts_mut(dst.0.add(y * f.row_stride + x0 * C), n * C) };
        for (x, px) in out.chunks_exact_mut(C).enumerate() {
            for ch in 0..C {
                px[ch] = bytes[ch][x];
            }
        }
    }
}

/// Content columns `xs` of row `y` from the channel rows, in the output type.
#[inline(always)]
pub(super) fn store_content(
    f: &FinishValues,
    dst: SendPtr,
    y: usize,
    xs: Range<usize>,
    chans: &[Lines<f32>; 4],
    bytes: &mut [Lines<u8>; 4],
) {
    if xs.is_empty() {
        return;
    }
    if matches!(f.dtype, DType::U8 | DType::I8) {
        return match channels(f.cs) {
            1 => store_bytes::<1>(f, dst, y, xs, chans, bytes),
            3 => store_bytes::<3>(f, dst, y, xs, chans, bytes),
            _ => store_bytes::<4>(f, dst, y, xs, chans, bytes),
        };
    }
    macro_rules! by_channels {
        ($t:ty) => {
            match channels(f.cs) {
                1 => store_row::<$t, 1>(f, dst, y, xs, chans),
                3 => store_row::<$t, 3>(f, dst, y, xs, chans),
                _ => store_row::<$t, 4>(f, dst, y, xs, chans),
            }
        };
    }
    match f.dtype {
        DType::U8 => by_channels!(u8),
        DType::I8 => by_channels!(i8),
        DType::U16 => by_channels!(u16),
        DType::I16 => by_channels!(i16),
        DType::U32 => by_channels!(u32),
        DType::I32 => by_channels!(i32),
        DType::U64 => by_channels!(u64),
        DType::I64 => by_channels!(i64),
        DType::F16 => match channels(f.cs) {
            1 => store_f16::<1>(f, dst, y, xs, chans),
            3 => store_f16::<3>(f, dst, y, xs, chans),
            _ => store_f16::<4>(f, dst, y, xs, chans),
        },
        DType::F32 => by_channels!(f32),
        DType::F64 => by_channels!(f64),
    }
}

/// `n` blocks of padding from `block` (see `fill_blocks`), in SSE2 / NEON registers.
///
/// # Safety
/// `block` holds `BLOCK` readable bytes and `dst` `n * BLOCK` writable ones.
#[inline(always)]
pub(super) unsafe fn fill(block: *const u8, dst: *mut u8, n: usize) {
    unsafe { fill_blocks::<u128, 12>(block, dst, n) }
}
