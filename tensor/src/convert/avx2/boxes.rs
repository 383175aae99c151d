//! The AVX2 level's exact box (`area` at an integer factor of rows): the rows summed first
//! (`box_sums`, u16), then across the sums by the word blocks (`box_blocks`).

#![allow(clippy::needless_range_loop)]

use super::taps::store_lanes;
use crate::convert::hint::{prefetch, prefetch_window, Trickle};
use crate::convert::plan::{box_rows, split_rows, Blocks, SplitSums};
use std::arch::x86_64::*;

/// An exact box's vertical sums (`avx512::box_sums` at sixteen samples a step): `sums[t] =
/// Σ_j k[j] · bytes[(first + j) · stride + t]` for `t` in `lo..hi`, in i16; the lines `ahead`
/// bytes on asked for as they are read (`multitap::ahead_bytes`; 0: none).
///
/// # Safety
/// The CPU has AVX2.
#[target_feature(enable = "avx2,fma")]
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
    // Two to four rows with their own loops (weights in registers, 32 samples a step), as
    // `avx512::box_sums`: the generic loop over the rows spent half of NV12's `area` on loop
    // control at this level.
    let t = match k.len() {
        2 => box_sums_n::<2>(base, stride, k, lo, hi, sums.as_mut_ptr(), ahead),
        3 => box_sums_n::<3>(base, stride, k, lo, hi, sums.as_mut_ptr(), ahead),
        4 => box_sums_n::<4>(base, stride, k, lo, hi, sums.as_mut_ptr(), ahead),
        _ => {
            let mut t = lo;
            while t + 16 <= hi {
                unsafe {
                    let mut acc = _mm256_setzero_si256();
                    for (j, &w) in k.iter().enumerate() {
                        if ahead != 0 && (t - lo).is_multiple_of(64) {
                            prefetch(base.wrapping_add(j * stride + t + ahead));
                        }
                        let v =
                            _mm256_cvtepu8_epi16(_mm_loadu_si128(base.add(j * stride + t) as *const __m128i));
                        acc = _mm256_add_epi16(acc, _mm256_mullo_epi16(v, _mm256_set1_epi16(w)));
                    }
                    _mm256_storeu_si256(sums.as_mut_ptr().add(t) as *mut __m256i, acc);
                }
                t += 16;
            }
            t
        }
    };
    for t in t..hi {
        sums[t] = sum_at(base, stride, k, t);
    }
}

/// The vertical sum of sample `t` (the loops' tails): `Σ_j k[j] · base[j · stride + t]`, as u16.
#[inline(always)]
unsafe fn sum_at(base: *const u8, stride: usize, k: &[i16], t: usize) -> u16 {
    k.iter().enumerate().fold(0u16, |acc, (j, &w)| {
        acc.wrapping_add((w as u16).wrapping_mul(*base.add(j * stride + t) as u16))
    })
}

/// `box_sums` split as it goes into the even samples' sums and the odd ones' (`even[i] =
/// sums[2i]`, `odd[i] = sums[2i + 1]`, for the samples of `lo & !1..hi`), as
/// `avx512::box_sums_split`: YUY2's and UYVY's luma and chroma, whose packed word blocks
/// (`plan::Compact::w8`) take two 16-byte pieces a lane where the row as it is took three and
/// four. Per 32 bytes and row, the even bytes by a mask and the odd by a shift are already the
/// samples in order. Two to four rows only; returns whether it made them (else the caller sums
/// and packs).
///
/// # Safety
/// The CPU has AVX2.
#[target_feature(enable = "avx2,fma")]
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
    let t = match k.len() {
        2 => box_sums_split_n::<2>(base, stride, k, lo, hi, out, ahead),
        3 => box_sums_split_n::<3>(base, stride, k, lo, hi, out, ahead),
        _ => box_sums_split_n::<4>(base, stride, k, lo, hi, out, ahead),
    };
    for t in t..hi {
        *out[t % 2].add(t / 2) = sum_at(base, stride, k, t);
    }
    true
}

/// `box_sums_split` over `N` rows, 32 samples a step from the even `lo`, whole steps only;
/// returns where it stopped.
#[inline(always)]
unsafe fn box_sums_split_n<const N: usize>(
    base: *const u8,
    stride: usize,
    k: &[i16],
    lo: usize,
    hi: usize,
    [even, odd]: [*mut u16; 2],
    ahead: usize,
) -> usize {
    let mut w = [_mm256_setzero_si256(); N];
    let mut row = [std::ptr::null::<u8>(); N];
    for j in 0..N {
        w[j] = _mm256_set1_epi16(k[j]);
        row[j] = base.add(j * stride);
    }
    let low = _mm256_set1_epi16(0x00ff);
    let mut t = lo;
    while t + 32 <= hi {
        if ahead != 0 && (t - lo).is_multiple_of(64) {
            prefetch_window(&row, t + ahead, false);
        }
        let (mut e, mut o) = (_mm256_setzero_si256(), _mm256_setzero_si256());
        for j in 0..N {
            let v = _mm256_loadu_si256(row[j].add(t) as *const __m256i);
            e = _mm256_add_epi16(e, _mm256_mullo_epi16(_mm256_and_si256(v, low), w[j]));
            o = _mm256_add_epi16(o, _mm256_mullo_epi16(_mm256_srli_epi16::<8>(v), w[j]));
        }
        _mm256_storeu_si256(even.add(t / 2) as *mut __m256i, e);
        _mm256_storeu_si256(odd.add(t / 2) as *mut __m256i, o);
        t += 32;
    }
    t
}

/// `box_sums` over `N` rows, 16 samples per vector, whole vectors only; returns where it stopped.
#[inline(always)]
unsafe fn box_sums_n<const N: usize>(
    base: *const u8,
    stride: usize,
    k: &[i16],
    lo: usize,
    hi: usize,
    out: *mut u16,
    ahead: usize,
) -> usize {
    // Loops and a macro, not closures: a closure LLVM leaves outlined has no AVX2 of its own, and
    // its intrinsics then run as calls.
    let mut w = [_mm256_setzero_si256(); N];
    for j in 0..N {
        w[j] = _mm256_set1_epi16(k[j]);
    }
    let row: [*const u8; N] = std::array::from_fn(|j| unsafe { base.add(j * stride) });
    macro_rules! sum {
        ($t:expr) => {{
            let t: usize = $t;
            let mut acc = _mm256_setzero_si256();
            for j in 0..N {
                let v = _mm256_cvtepu8_epi16(_mm_loadu_si128(row[j].add(t) as *const __m128i));
                acc = _mm256_add_epi16(acc, _mm256_mullo_epi16(v, w[j]));
            }
            acc
        }};
    }
    let mut t = lo;
    while t + 32 <= hi {
        // Every other step: one line (outside `sum`).
        if ahead != 0 && (t - lo).is_multiple_of(64) {
            prefetch_window(&row, t + ahead, false);
        }
        unsafe {
            _mm256_storeu_si256(out.add(t) as *mut __m256i, sum!(t));
            _mm256_storeu_si256(out.add(t + 16) as *mut __m256i, sum!(t + 16));
        }
        t += 32;
    }
    while t + 16 <= hi {
        unsafe { _mm256_storeu_si256(out.add(t) as *mut __m256i, sum!(t)) };
        t += 16;
    }
    t
}

/// An exact box's horizontal pass over its vertical sums at eight dwords a block (`Blocks` of
/// two lanes over u16 samples, `Blocks::words`): per tap pair a `pshufb` per 16-byte piece and
/// one `pmaddwd`, exact in i32, times `inv`; the lanes stored as `multitap` stores them, the
/// lines `ahead` asked for through the blocks.
///
/// # Safety
/// The CPU has AVX2; `out` holds the group's members' rows (null past them), each `plan.done`
/// writable values.
#[target_feature(enable = "avx2,fma")]
pub(in crate::convert) unsafe fn box_blocks(
    sums: &[u16],
    plan: &Blocks,
    inv: f32,
    out: [*mut f32; 4],
    ahead: Trickle,
) -> usize {
    assert!(plan.words && !plan.slide && plan.reach <= sums.len(), "loads stay inside the sums");
    match ahead.is_empty() {
        true => box_blocks_of::<false>(sums, plan, inv, out, ahead),
        false => box_blocks_of::<true>(sums, plan, inv, out, ahead),
    }
}

/// `box_blocks` asking for lines (`ASK`) or not, as AVX-512's `box_blocks_of`.
#[inline(always)]
unsafe fn box_blocks_of<const ASK: bool>(
    sums: &[u16],
    plan: &Blocks,
    inv: f32,
    out: [*mut f32; 4],
    ahead: Trickle,
) -> usize {
    let members = out.iter().take_while(|p| !p.is_null()).count();
    macro_rules! by_pairs {
        ($l:expr, $m:expr) => {
            match plan.pairs {
                1 => box_blocks_l::<$l, $m, 1, ASK>(sums, plan, inv, out, ahead),
                2 => box_blocks_l::<$l, $m, 2, ASK>(sums, plan, inv, out, ahead),
                _ => box_blocks_l::<$l, $m, 0, ASK>(sums, plan, inv, out, ahead),
            }
        };
    }
    macro_rules! go {
        ($l:expr) => {
            match members {
                1 => by_pairs!($l, 1),
                2 => by_pairs!($l, 2),
                3 => by_pairs!($l, 3),
                _ => by_pairs!($l, 4),
            }
        };
    }
    match plan.pieces {
        1 => go!(1),
        2 => go!(2),
        3 => go!(3),
        _ => go!(4),
    }
}

/// `box_blocks_of` for `L` pieces, `M` members, `P` tap pairs. Unoptimized, a function of its
/// own per case (inlined, the cases gave `box_blocks` a 0.43 MB frame).
#[cfg_attr(debug_assertions, inline(never))]
#[cfg_attr(not(debug_assertions), inline(always))]
unsafe fn box_blocks_l<const L: usize, const M: usize, const P: usize, const ASK: bool>(
    sums: &[u16],
    plan: &Blocks,
    inv: f32,
    out: [*mut f32; 4],
    mut ahead: Trickle,
) -> usize {
    assert!(plan.pieces == L && (P == 0 || plan.pairs == P));
    let pairs = if P == 0 { plan.pairs } else { P };
    let blocks = plan.targets.len().min(plan.lane_bases.len());
    assert!(plan.shuf.len() >= blocks * pairs * L && plan.hi.len() >= blocks * pairs * 8);
    let inv = _mm256_set1_ps(inv);
    let row = sums.as_ptr() as *const u8;
    let per = ahead.pace(blocks);
    // With the pair count a constant, a run of blocks with the same tables (`Blocks::runs`) holds
    // them in registers: 1080p NV12 `area` (engine, hot) 0.56 → 0.49 ms. Only where the tables,
    // the window and the sum fit the sixteen registers with room: YUY2's (three and four pieces)
    // spilled and ran 15 % slower.
    let runs = P > 0 && P * (L + 1) + L <= 11 && plan.runs.len() >= blocks;
    let mut b = 0;
    while b < blocks {
        let end = match runs {
            true => (*plan.runs.get_unchecked(b) as usize).clamp(b + 1, blocks),
            false => b + 1,
        };
        let (mut c, mut k) = ([[_mm256_setzero_si256(); L]; P], [_mm256_setzero_si256(); P]);
        if runs {
            for p in 0..P {
                (c[p], k[p]) = box_table::<L>(plan, b * pairs + p);
            }
        }
        for b in b..end {
            if ASK {
                ahead.ask(per);
            }
            unsafe {
                let [s0, s1] = *plan.lane_bases.get_unchecked(b);
                let (r0, r1) = (row.add(2 * s0 as usize), row.add(2 * s1 as usize));
                // A loop, not `array::from_fn`, as in `whole_bytes` (an outlined closure has no AVX2).
                let mut v = [_mm256_setzero_si256(); L];
                for q in 0..L {
                    v[q] = _mm256_loadu2_m128i(
                        r1.add(16 * q) as *const __m128i,
                        r0.add(16 * q) as *const __m128i,
                    );
                }
                let mut s = _mm256_setzero_si256();
                for p in 0..pairs {
                    let (cp, kp) = if runs { (c[p], k[p]) } else { box_table::<L>(plan, b * pairs + p) };
                    let mut t = _mm256_shuffle_epi8(v[0], cp[0]);
                    for q in 1..L {
                        t = _mm256_or_si256(t, _mm256_shuffle_epi8(v[q], cp[q]));
                    }
                    s = _mm256_add_epi32(s, _mm256_madd_epi16(t, kp));
                }
                let v = _mm256_mul_ps(_mm256_cvtepi32_ps(s), inv);
                store_lanes::<M>(&out, b, v);
            }
        }
        b = end;
    }
    plan.done
}

/// Pair `at`'s (`[block][pair]`) `pshufb` controls and weights in `box_blocks`. A function, not
/// a closure: an outlined closure has no AVX2 (YUY2 `area` ran 1.7× slower with one).
#[inline(always)]
unsafe fn box_table<const L: usize>(plan: &Blocks, at: usize) -> ([__m256i; L], __m256i) {
    let ctl = plan.shuf.as_ptr().add(at * L) as *const __m256i;
    let mut c = [_mm256_setzero_si256(); L];
    for q in 0..L {
        c[q] = _mm256_load_si256(ctl.add(q));
    }
    (c, _mm256_loadu_si256(plan.hi.as_ptr().add(8 * at) as *const __m256i))
}

#[cfg(test)]
mod tests {
    /// The split sums are the sums of the definition, the even samples' and the odd ones', from
    /// an odd or even `lo` and up to ends on and off the 32-sample step; more than four rows are
    /// left to the caller.
    #[test]
    fn split_sums_are_the_even_and_odd_samples_sums() {
        if !is_x86_feature_detected!("avx2") {
            return;
        }
        let stride = 700;
        let bytes: Vec<u8> = (0..stride * 6).map(|i| ((i * 7919 + i / 13) % 256) as u8).collect();
        let mut checked = 0;
        for k in [&[1i16, 1][..], &[2, 3, 1], &[1, 1, 1, 1], &[255, 1]] {
            for (lo, hi) in [(0, 640), (1, 639), (3, 97), (64, 64), (10, 700), (0, 31)] {
                let (mut even, mut odd) = (vec![0xeeeeu16; 360], vec![0xeeeeu16; 360]);
                let made =
                    unsafe { super::box_sums_split(&bytes, stride, 1, k, (lo, hi), &mut even, &mut odd, 0) };
                assert!(made, "{k:?} {lo}..{hi}");
                for t in lo & !1..hi {
                    let want = k.iter().enumerate().fold(0u16, |a, (j, &w)| {
                        a.wrapping_add((w as u16).wrapping_mul(bytes[(1 + j) * stride + t] as u16))
                    });
                    let got = if t % 2 == 0 { even[t / 2] } else { odd[t / 2] };
                    assert_eq!(got, want, "{k:?} {lo}..{hi} sample {t}");
                    checked += 1;
                }
                let end = hi.div_ceil(2);
                assert!(even[end..].iter().all(|&v| v == 0xeeee), "nothing past the samples");
            }
        }
        assert!(checked > 5000, "{checked}");
        let (mut even, mut odd) = (vec![0u16; 360], vec![0u16; 360]);
        let five =
            unsafe { super::box_sums_split(&bytes, stride, 0, &[1; 5], (0, 640), &mut even, &mut odd, 0) };
        assert!(!five, "five rows are the caller's");
    }
}
