//! The AVX-512 level's exact box (`area` where `plan::EXACT_MAX` allows): the rows' vertical
//! sums, packed for YUY2's members where the plan is (`plan::Compact`), and the word blocks
//! across them.

#![allow(clippy::needless_range_loop)]

use super::taps::store_lanes;
use crate::convert::hint::{prefetch, prefetch_window, Trickle};
use crate::convert::plan::{box_rows, split_rows, Blocks, EvenBox, SplitSums, EVEN_BLOCK};
use std::arch::x86_64::*;

/// An exact box's vertical sums (`plan::EXACT_MAX`): `sums[t] = Σ_j k[j] · bytes[(first + j) ·
/// stride + t]` for `t` in `lo..hi`, in i16 (the plan keeps `Σ k · 255` below 2^15), the last
/// samples under a mask. Two to four rows (the 2×–3× downscales) have their own loops, weights in
/// registers and 64 samples a step: one generic loop over the rows per 32 samples spent a third
/// of a 1080p NV12 frame on loop control. Each line read is asked for again `ahead` bytes on (the
/// rows a later output row sums, `multitap::ahead_bytes`; 0: none).
///
/// # Safety
/// The CPU has AVX-512 (F, BW, VL).
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
pub(in crate::convert) unsafe fn box_sums(
    bytes: &[u8],
    stride: usize,
    first: usize,
    k: &[i16],
    (lo, hi): (usize, usize),
    sums: &mut [u16],
    ahead: usize,
) {
    let Some(start) = box_rows(bytes.len(), stride, first, k.len(), (lo, hi), sums.len()) else { return };
    let base = bytes.as_ptr().add(start);
    let out = [sums.as_mut_ptr(), std::ptr::null_mut()];
    match k.len() {
        2 => box_sums_n::<2, false>(base, stride, k, lo, hi, out, ahead),
        3 => box_sums_n::<3, false>(base, stride, k, lo, hi, out, ahead),
        4 => box_sums_n::<4, false>(base, stride, k, lo, hi, out, ahead),
        _ => {
            let mut t = lo;
            while t < hi {
                let mask: __mmask32 = if hi - t >= 32 { u32::MAX } else { (1u32 << (hi - t)) - 1 };
                let mut acc = _mm512_setzero_si512();
                for (j, &w) in k.iter().enumerate() {
                    if ahead != 0 && (t - lo).is_multiple_of(64) {
                        prefetch(base.wrapping_add(j * stride + t + ahead));
                    }
                    let v = _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(
                        mask,
                        base.add(j * stride + t) as *const i8,
                    ));
                    acc = _mm512_add_epi16(acc, _mm512_mullo_epi16(v, _mm512_set1_epi16(w)));
                }
                _mm512_mask_storeu_epi16(out[0].add(t) as *mut i16, mask, acc);
                t += 32;
            }
        }
    }
}

/// `box_sums` split as it goes into the even samples' sums and the odd ones' (`even[i] =
/// sums[2i]`, `odd[i] = sums[2i + 1]`, for the samples of `lo & !1..hi`): YUY2's and UYVY's
/// luma and chroma, which their groups' packed blocks read (`plan::Compact`). Packed after the
/// sums were stored (`pack_words`, reading them once per group), the packing was 11 % of a
/// YUY2 `area` frame (profile, 8 rotating 1080p frames). Two to four rows only; returns whether
/// it made them (else the caller sums and packs).
///
/// # Safety
/// The CPU has AVX-512 (F, BW, VL).
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
#[allow(clippy::too_many_arguments)]
pub(in crate::convert) unsafe fn box_sums_split(
    bytes: &[u8],
    stride: usize,
    first: usize,
    k: &[i16],
    (lo, hi): (usize, usize),
    even: &mut [u16],
    odd: &mut [u16],
    ahead: usize,
) -> bool {
    let (start, lo) = match split_rows(bytes.len(), stride, first, k.len(), (lo, hi), (even.len(), odd.len()))
    {
        SplitSums::Declined => return false,
        SplitSums::Empty => return true,
        SplitSums::From(start, lo) => (start, lo),
    };
    let base = bytes.as_ptr().add(start);
    let out = [even.as_mut_ptr(), odd.as_mut_ptr()];
    match k.len() {
        2 => box_sums_n::<2, true>(base, stride, k, lo, hi, out, ahead),
        3 => box_sums_n::<3, true>(base, stride, k, lo, hi, out, ahead),
        _ => box_sums_n::<4, true>(base, stride, k, lo, hi, out, ahead),
    }
    true
}

/// The loops of `box_sums` (`SPLIT`: of `box_sums_split`, `lo` even, `out` the even and odd
/// samples' rows; else `out[0]` the sums).
#[inline(always)]
unsafe fn box_sums_n<const N: usize, const SPLIT: bool>(
    base: *const u8,
    stride: usize,
    k: &[i16],
    lo: usize,
    hi: usize,
    out: [*mut u16; 2],
    ahead: usize,
) {
    // Loops and a macro, not closures: a closure's intrinsics are not inlined where LLVM leaves
    // the closure outlined (it has no AVX-512 of its own), and then each runs as a call.
    let mut w = [_mm512_setzero_si512(); N];
    for j in 0..N {
        w[j] = _mm512_set1_epi16(k[j]);
    }
    let row: [*const u8; N] = std::array::from_fn(|j| base.add(j * stride));
    macro_rules! sum {
        ($t:expr, $mask:expr) => {{
            let (t, mask): (usize, __mmask32) = ($t, $mask);
            let mut acc = _mm512_setzero_si512();
            for j in 0..N {
                let v =
                    _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(mask, row[j].wrapping_add(t) as *const i8));
                acc = _mm512_add_epi16(acc, _mm512_mullo_epi16(v, w[j]));
            }
            acc
        }};
    }
    let ask_at = |t: usize| {
        if ahead != 0 {
            prefetch_window(&row, t + ahead, false);
        }
    };
    let mask = |n: usize| -> __mmask32 {
        match n {
            n if n >= 32 => u32::MAX,
            n => (1u32 << n) - 1,
        }
    };
    let evens = even_words();
    let odds = _mm512_add_epi16(evens, _mm512_set1_epi16(1));
    let mut t = lo;
    while t + 64 <= hi {
        ask_at(t);
        let (a, b) = (sum!(t, u32::MAX), sum!(t + 32, u32::MAX));
        if SPLIT {
            _mm512_storeu_si512(out[0].add(t / 2) as *mut _, _mm512_permutex2var_epi16(a, evens, b));
            _mm512_storeu_si512(out[1].add(t / 2) as *mut _, _mm512_permutex2var_epi16(a, odds, b));
        } else {
            _mm512_storeu_si512(out[0].add(t) as *mut _, a);
            _mm512_storeu_si512(out[0].add(t + 32) as *mut _, b);
        }
        t += 64;
    }
    ask_at(t);
    if SPLIT {
        if t < hi {
            let n = hi - t;
            let (a, b) = (sum!(t, mask(n)), sum!(t + 32, mask(n.saturating_sub(32))));
            let e = _mm512_permutex2var_epi16(a, evens, b);
            let o = _mm512_permutex2var_epi16(a, odds, b);
            _mm512_mask_storeu_epi16(out[0].add(t / 2) as *mut i16, mask(n.div_ceil(2)), e);
            _mm512_mask_storeu_epi16(out[1].add(t / 2) as *mut i16, mask(n / 2), o);
        }
        return;
    }
    while t < hi {
        let m = mask(hi - t);
        _mm512_mask_storeu_epi16(out[0].add(t) as *mut i16, m, sum!(t, m));
        t += 32;
    }
}

/// The horizontal pass of an exact box over its vertical sums (`box_sums`, a row of u16 samples)
/// for one group's `w16` blocks: per block and tap pair one `vpermt2b` of the 32 or 64 samples'
/// window and one `pmaddwd` with the whole weights, exact in i32; each output the sum times `inv`
/// (`1 / (K_x · K_y)`, the value the filter-across-first levels reach: see `MultiTap::scale`),
/// stored by the lanes' rule of `multitap`, asking for the lines `ahead` through the blocks.
/// Returns the outputs each member has.
///
/// # Safety
/// The CPU has AVX-512 (F, BW, VBMI); `out` holds the group's members' rows (null past them), each
/// `plan.done` writable values.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi")]
pub(in crate::convert) unsafe fn box_blocks(
    sums: &[u16],
    plan: &Blocks,
    inv: f32,
    out: [*mut f32; 4],
    ahead: Trickle,
) -> usize {
    assert!(plan.words && plan.reach <= sums.len(), "loads stay inside the sums");
    match ahead.is_empty() {
        true => unsafe { box_blocks_of::<false>(sums, plan, inv, out, ahead) },
        false => unsafe { box_blocks_of::<true>(sums, plan, inv, out, ahead) },
    }
}

/// `box_blocks` asking for lines (`ASK`) or not, each its own function: as one, the loops that
/// ask nothing ran slower than before the asking was added (NV12 1600×900 `area`, hot, 0.230 →
/// 0.240 ms; 8 camera frames in the element 0.29–0.32 → 0.33–0.35), their registers allocated
/// anew.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi")]
#[inline(never)]
unsafe fn box_blocks_of<const ASK: bool>(
    sums: &[u16],
    plan: &Blocks,
    inv: f32,
    out: [*mut f32; 4],
    ahead: Trickle,
) -> usize {
    let members = out.iter().take_while(|p| !p.is_null()).count();
    macro_rules! by_pairs {
        ($narrow:expr, $m:expr) => {
            match plan.pairs {
                1 => box_blocks_m::<$narrow, $m, ASK, 1>(sums, plan, inv, out, ahead),
                2 => box_blocks_m::<$narrow, $m, ASK, 2>(sums, plan, inv, out, ahead),
                _ => box_blocks_m::<$narrow, $m, ASK, 0>(sums, plan, inv, out, ahead),
            }
        };
    }
    macro_rules! go {
        ($narrow:expr) => {
            match members {
                1 => by_pairs!($narrow, 1),
                2 => by_pairs!($narrow, 2),
                3 => by_pairs!($narrow, 3),
                _ => by_pairs!($narrow, 4),
            }
        };
    }
    match plan.narrow {
        true => go!(true),
        false => go!(false),
    }
}

#[inline(always)]
unsafe fn box_blocks_m<const NARROW: bool, const M: usize, const ASK: bool, const P: usize>(
    sums: &[u16],
    plan: &Blocks,
    inv: f32,
    out: [*mut f32; 4],
    mut ahead: Trickle,
) -> usize {
    let pairs = if P > 0 { P } else { plan.pairs };
    let blocks = plan.targets.len().min(plan.bases.len());
    assert!(plan.c64.len() >= blocks * pairs && plan.hi.len() >= blocks * pairs * 16);
    let (weights, controls) = (plan.hi.as_ptr(), plan.c64.as_ptr());
    let inv = _mm512_set1_ps(inv);
    let row = sums.as_ptr();
    let per = ahead.pace(blocks);
    for b in 0..blocks {
        if ASK {
            ahead.ask(per);
        }
        unsafe {
            let base = *plan.bases.get_unchecked(b) as usize;
            let a = _mm512_loadu_si512(row.add(base) as *const _);
            let c = if NARROW { a } else { _mm512_loadu_si512(row.add(base + 32) as *const _) };
            let mut s = _mm512_setzero_si512();
            for p in 0..pairs {
                let at = b * pairs + p;
                let ctl = _mm512_load_si512(controls.add(at) as *const _);
                let w = _mm512_loadu_si512(weights.add(16 * at) as *const _);
                let t = match NARROW {
                    true => _mm512_permutexvar_epi8(ctl, a),
                    false => _mm512_permutex2var_epi8(a, ctl, c),
                };
                s = _mm512_add_epi32(s, _mm512_madd_epi16(t, w));
            }
            let v = _mm512_mul_ps(_mm512_cvtepi32_ps(s), inv);
            store_lanes::<M>(&out, b, v);
        }
    }
    plan.done
}

/// `box_blocks` for an even box (`plan::EvenBox`: four-byte pixels, every output the sum of `f`
/// whole pixels with one weight) into the members' rows `out` (null past them): per block of 16
/// outputs and half of it, each output's `f` pixels (a qword of four channel sums each) gathered
/// from the half's `f` loads of eight pixels and added as words; each channel's 16 sums by one
/// word permute of the halves, widened, times the weight (exact, the whole box sum stays below
/// 2^24) and `inv`: the value of `box_blocks` to the bit. The lines `ahead` are asked for through
/// the blocks. Returns the outputs each member has.
///
/// # Safety
/// The CPU has AVX-512 (F, BW); `out` holds 3 or 4 rows, each `plan.done` writable values.
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
pub(in crate::convert) unsafe fn box_even(
    sums: &[u16],
    plan: &EvenBox,
    inv: f32,
    out: [*mut f32; 4],
    ahead: Trickle,
) -> usize {
    let members = out.iter().take_while(|p| !p.is_null()).count();
    assert!(plan.reach() <= sums.len() && (3..=4).contains(&members), "loads stay inside the sums");
    // Every integer factor's box has weight 1, and `x · 1` is `x`: its blocks skip the multiply
    // (two of a block's four f32 multiplies per channel vector), with the same bits.
    macro_rules! go {
        ($f:expr, $one:expr) => {
            match ahead.is_empty() {
                true => box_even_of::<$f, false, $one>(sums, plan, inv, members == 4, out, ahead),
                false => box_even_of::<$f, true, $one>(sums, plan, inv, members == 4, out, ahead),
            }
        };
    }
    match (plan.f, plan.weight == 1) {
        (2, true) => go!(2, true),
        (2, false) => go!(2, false),
        (3, true) => go!(3, true),
        (3, false) => go!(3, false),
        (_, true) => go!(4, true),
        (_, false) => go!(4, false),
    }
    plan.done
}

/// The qword indices of tap `t`'s pixels (`f j + t` for lane `j`) in the first two of a half's `F`
/// loads and in the last two, and the lanes that take the last two (pixels 16 on).
const fn even_taps<const F: usize>(t: usize) -> ([i64; 8], [i64; 8], u8) {
    let (mut first, mut last, mut lanes) = ([0i64; 8], [0i64; 8], 0u8);
    let mut j = 0;
    while j < 8 {
        let q = F * j + t;
        first[j] = (q % 16) as i64;
        if q >= 16 {
            last[j] = (q - 8 * (F - 2)) as i64;
            lanes |= 1 << j;
        }
        j += 1;
    }
    (first, last, lanes)
}

/// The word indices that put channel `c` of outputs 0–15 (the halves' pixels, four words each)
/// in words 0–15 and channel `c + 1` in words 16–31.
const fn even_channels(c: usize) -> [i16; 32] {
    let mut idx = [0i16; 32];
    let mut i = 0;
    while i < 32 {
        let (x, c) = (i % 16, c + i / 16);
        idx[i] = (32 * (x / 8) + 4 * (x % 8) + c) as i16;
        i += 1;
    }
    idx
}

/// `box_even` for `F` pixels an output, asking for lines (`ASK`) or not, with weight 1 (`ONE`)
/// or `plan.weight`.
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
#[inline(never)]
unsafe fn box_even_of<const F: usize, const ASK: bool, const ONE: bool>(
    sums: &[u16],
    plan: &EvenBox,
    inv: f32,
    alpha: bool,
    out: [*mut f32; 4],
    mut ahead: Trickle,
) {
    let blocks = plan.done / EVEN_BLOCK;
    let load = |v: &[i64; 8]| _mm512_loadu_si512(v.as_ptr() as *const _);
    let (mut first, mut last, mut lanes) =
        ([_mm512_setzero_si512(); F], [_mm512_setzero_si512(); F], [0u8; F]);
    for t in 0..F {
        let (a, z, l) = even_taps::<F>(t);
        (first[t], last[t], lanes[t]) = (load(&a), load(&z), l);
    }
    let [rg, ba] = [0, 2].map(|c| _mm512_loadu_si512(even_channels(c).as_ptr() as *const _));
    let (weight, inv) = (_mm512_set1_ps(plan.weight as f32), _mm512_set1_ps(inv));
    let row = sums.as_ptr().add(plan.first);
    let per = ahead.pace(blocks);
    // Macros, not closures: a closure's intrinsics are not inlined where LLVM outlines it.
    macro_rules! value {
        ($v:expr) => {{
            let v = _mm512_cvtepi32_ps(_mm512_cvtepu16_epi32($v));
            _mm512_mul_ps(if ONE { v } else { _mm512_mul_ps(v, weight) }, inv)
        }};
    }
    for b in 0..blocks {
        if ASK {
            ahead.ask(per);
        }
        let at = row.add(4 * F * EVEN_BLOCK * b);
        let mut half = [_mm512_setzero_si512(); 2];
        for (h, acc) in half.iter_mut().enumerate() {
            let z: [__m512i; F] =
                std::array::from_fn(|i| _mm512_loadu_si512(at.add(32 * (F * h + i)) as *const _));
            for t in 0..F {
                let mut v = _mm512_permutex2var_epi64(z[0], first[t], z[1]);
                if F > 2 {
                    let u = _mm512_permutex2var_epi64(z[F - 2], last[t], z[F - 1]);
                    v = _mm512_mask_blend_epi64(lanes[t], v, u);
                }
                *acc = _mm512_add_epi16(*acc, v);
            }
        }
        let (a, c) = (
            _mm512_permutex2var_epi16(half[0], rg, half[1]),
            _mm512_permutex2var_epi16(half[0], ba, half[1]),
        );
        _mm512_storeu_ps(out[0].add(EVEN_BLOCK * b), value!(_mm512_castsi512_si256(a)));
        _mm512_storeu_ps(out[1].add(EVEN_BLOCK * b), value!(_mm512_extracti64x4_epi64::<1>(a)));
        _mm512_storeu_ps(out[2].add(EVEN_BLOCK * b), value!(_mm512_castsi512_si256(c)));
        if alpha {
            _mm512_storeu_ps(out[3].add(EVEN_BLOCK * b), value!(_mm512_extracti64x4_epi64::<1>(c)));
        }
    }
}

/// `vpermt2w`'s indices of the even words of two vectors (the odd ones are one more).
#[inline(always)]
unsafe fn even_words() -> __m512i {
    _mm512_set_epi16(
        62, 60, 58, 56, 54, 52, 50, 48, 46, 44, 42, 40, 38, 36, 34, 32, 30, 28, 26, 24, 22, 20, 18, 16, 14,
        12, 10, 8, 6, 4, 2, 0,
    )
}

/// `pack_bytes` for a row of sums: `out[j] = v[from + 2j]`, 32 per step by one `vpermt2w`.
///
/// # Safety
/// The CPU has AVX-512 (F, BW).
#[target_feature(enable = "avx512f,avx512bw")]
pub(in crate::convert) unsafe fn pack_words(v: &[u16], from: usize, out: &mut [u16]) {
    assert!(from + 2 * out.len() <= v.len() + 1, "the packed sums are in the row");
    let idx = even_words();
    let mask = |at: usize| -> __mmask32 {
        match v.len().saturating_sub(at) {
            n if n >= 32 => u32::MAX,
            n => (1u32 << n) - 1,
        }
    };
    let mut j = 0;
    while j + 32 <= out.len() && from + 2 * j + 64 <= v.len() {
        unsafe {
            let at = v.as_ptr().add(from + 2 * j);
            let p = _mm512_permutex2var_epi16(
                _mm512_loadu_si512(at as *const _),
                idx,
                _mm512_loadu_si512(at.add(32) as *const _),
            );
            _mm512_storeu_si512(out.as_mut_ptr().add(j) as *mut _, p);
        }
        j += 32;
    }
    for j in (j..out.len()).step_by(32) {
        unsafe {
            let at = from + 2 * j;
            let a = _mm512_maskz_loadu_epi16(mask(at), v.as_ptr().wrapping_add(at) as *const i16);
            let b = _mm512_maskz_loadu_epi16(mask(at + 32), v.as_ptr().wrapping_add(at + 32) as *const i16);
            let p = _mm512_permutex2var_epi16(a, idx, b);
            let left = out.len() - j;
            let keep: __mmask32 = if left >= 32 { u32::MAX } else { (1u32 << left) - 1 };
            _mm512_mask_storeu_epi16(out.as_mut_ptr().add(j) as *mut i16, keep, p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The even box's blocks give each member's output `weight · Σ` of its pixels' sums times
    /// `inv`, to the bit, for 2–4 pixels an output, three and four members, a first tap past the
    /// row's start, asking for lines or not; nothing past `done` is written.
    #[test]
    fn even_blocks_are_the_weighted_pixel_sums() {
        if !(is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw")) {
            eprintln!("skipped: no AVX-512 here");
            return;
        }
        let mut seed = 0x2545_f491u32;
        let sums: Vec<u16> = (0..4 * 4 * 16 * 3 + 64)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 17;
                seed ^= seed << 5;
                (seed % 4000) as u16
            })
            .collect();
        let lines = [7u8; 4096];
        let inv = 1.0 / 9.0f32;
        let mut tried = 0;
        for f in 2..=4 {
            for (first, weight) in [(0, 1u16), (8, 3)] {
                for members in 3..=4 {
                    for ask in [false, true] {
                        let done = 16 * ((sums.len() - first) / (64 * f)).min(3);
                        let plan = EvenBox { first, f, weight, done };
                        let mut rows = vec![vec![f32::NAN; done + 16]; 4];
                        let out: [*mut f32; 4] = std::array::from_fn(|m| match m < members {
                            true => rows[m].as_mut_ptr(),
                            false => std::ptr::null_mut(),
                        });
                        let ahead = if ask { Trickle::over(&lines, 0..4096) } else { Trickle::NONE };
                        assert_eq!(unsafe { box_even(&sums, &plan, inv, out, ahead) }, done);
                        for (m, row) in rows.iter().enumerate().take(members) {
                            for x in 0..done {
                                let s: u32 = (0..f).map(|t| sums[first + 4 * (f * x + t) + m] as u32).sum();
                                let want = (weight as u32 * s) as f32 * inv;
                                assert_eq!(
                                    row[x].to_bits(),
                                    want.to_bits(),
                                    "f {f} first {first} member {m} output {x}"
                                );
                                tried += 1;
                            }
                            assert!(row[done..].iter().all(|v| v.is_nan()), "nothing past done");
                        }
                        assert!(
                            rows[members..].iter().flatten().all(|v| v.is_nan()),
                            "no row past the members"
                        );
                    }
                }
            }
        }
        assert!(tried > 2000);
    }

    /// The split sums are the sums' even and odd samples, over spans that start and end on odd
    /// samples, tails shorter than a vector, and two to four rows (five: not made).
    #[test]
    fn split_sums_are_the_sums_even_and_odd_samples() {
        if !(is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw")) {
            eprintln!("skipped: no AVX-512 here");
            return;
        }
        let (stride, rows) = (300, 6);
        let mut seed = 0x9e37_79b9u32;
        let bytes: Vec<u8> = (0..stride * rows)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 17;
                seed ^= seed << 5;
                seed as u8
            })
            .collect();
        let mut tried = 0;
        for k in [&[1i16, 2][..], &[3, 1, 2], &[1, 1, 1, 1], &[2, 3, 3, 2]] {
            for (lo, hi) in [(0, 300), (1, 299), (3, 70), (64, 129), (5, 6), (0, 1), (200, 200)] {
                let mut sums = vec![0u16; stride];
                let (mut even, mut odd) = (vec![0xeeeeu16; stride / 2], vec![0xeeeeu16; stride / 2]);
                unsafe {
                    box_sums(&bytes, stride, 1, k, (lo, hi), &mut sums, 0);
                    assert!(box_sums_split(&bytes, stride, 1, k, (lo, hi), &mut even, &mut odd, 0));
                }
                for t in lo..hi {
                    let want: u16 = k
                        .iter()
                        .enumerate()
                        .map(|(j, &w)| w as u16 * bytes[(1 + j) * stride + t] as u16)
                        .sum();
                    assert_eq!(sums[t], want, "{k:?} {lo}..{hi} sample {t}");
                    let got = if t % 2 == 0 { even[t / 2] } else { odd[t / 2] };
                    assert_eq!(got, want, "{k:?} {lo}..{hi} split sample {t}");
                    tried += 1;
                }
                // Nothing written past the span.
                assert!(
                    even[hi.div_ceil(2)..].iter().chain(&odd[hi / 2..]).all(|&v| v == 0xeeee),
                    "{k:?} {lo}..{hi}"
                );
            }
        }
        assert_eq!(tried, 4 * 732);
        let (mut even, mut odd) = (vec![0u16; stride / 2], vec![0u16; stride / 2]);
        assert!(!unsafe { box_sums_split(&bytes, 60, 0, &[1; 5], (0, 60), &mut even, &mut odd, 0) });
        // Halves too short for the span: not made.
        assert!(!unsafe {
            box_sums_split(&bytes, stride, 0, &[1, 1], (0, 300), &mut even[..100], &mut odd, 0)
        });
    }
}
