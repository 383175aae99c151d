//! The AVX2 level's PIL vertical pass over the byte ring (`multitap::pil8_row`).

use super::whole::{mulhi, tie_sum};
use crate::convert::hint::{prefetch, Trickle};
use crate::convert::plan::{WholeRow, PIL_HALF, PIL_SHIFT};
use std::arch::x86_64::*;

/// PIL's vertical pass over rows of bytes into a component's row (f32 values of PIL's bytes):
/// with whole weights (`div`: `D`'s divider) 32 outputs a step in u16 lanes (`2S + D` fits:
/// `plan::WHOLE_MAX`) and the multiply-high division; else PIL's 2^-22 weights in i32, eight a
/// step; the lines `ahead` asked for through the steps. Over the f32 ring (i32 bits, four bytes
/// a sample) the pass read 60 KB a 1080p NV12 output row from L2 and took a quarter of the
/// frame at AVX2 (Zen 2). Returns the outputs it wrote (whole steps).
///
/// # Safety
/// The CPU has AVX2; every row pointer is readable for `out.len()` bytes.
#[target_feature(enable = "avx2,fma")]
pub(in crate::convert) unsafe fn vertical_bytes<O: Out>(
    rows: &[*const u8],
    wi: &[i32],
    whole: Option<WholeRow<'_>>,
    out: &mut [O],
    ahead: Trickle,
) -> usize {
    match ahead.is_empty() {
        true => unsafe { vertical_bytes_of::<O, false>(rows, wi, whole, out, ahead) },
        false => unsafe { vertical_bytes_of::<O, true>(rows, wi, whole, out, ahead) },
    }
}

/// What PIL's vertical pass over bytes writes at this level: the components' f32 rows, or
/// (`u8`, `multitap::Sample::BYTES`) the bytes themselves, for the finish that only
/// interleaves them (`avx2::finish_bytes`).
pub(in crate::convert) trait Out: crate::convert::multitap::Sample {
    /// Eight dwords, each a byte's value, at `o`.
    unsafe fn put8(o: *mut Self, v: __m256i);
}

impl Out for f32 {
    #[inline(always)]
    unsafe fn put8(o: *mut f32, v: __m256i) {
        unsafe { _mm256_storeu_ps(o, _mm256_cvtepi32_ps(v)) }
    }
}

impl Out for u8 {
    #[inline(always)]
    unsafe fn put8(o: *mut u8, v: __m256i) {
        // Dwords 0..255: their low bytes, in order.
        let w = _mm256_packus_epi32(v, v);
        let b = _mm256_packus_epi16(w, w);
        let lo = _mm_unpacklo_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256::<1>(b));
        unsafe { _mm_storel_epi64(o as *mut __m128i, lo) }
    }
}

/// `vertical_bytes` asking for lines (`ASK`) or not, each its own loop (as AVX-512's).
#[target_feature(enable = "avx2,fma")]
#[inline(never)]
unsafe fn vertical_bytes_of<O: Out, const ASK: bool>(
    rows: &[*const u8],
    wi: &[i32],
    whole: Option<WholeRow<'_>>,
    out: &mut [O],
    mut ahead: Trickle,
) -> usize {
    let o = out.as_mut_ptr();
    // Doubled weights that are signed bytes: `pmaddubsw` over each row's even and odd bytes; a
    // tied row (`WholeRow::n`) with its remainders' sums beside, up to eight rows (the others by
    // PIL's sums below).
    let fits = |w: &WholeRow| {
        w.k.len() <= rows.len()
            && w.k.iter().all(|&k| (0..=63).contains(&k))
            && (w.n.is_empty() || (w.n.len() == w.k.len() && w.k.len() <= 8))
    };
    match whole.filter(fits) {
        Some(WholeRow { k, d, div, n: ties }) => {
            let rows = &rows[..k.len()];
            macro_rules! taps {
                ($($t:literal)*) => {
                    match rows.len() {
                        $($t => unsafe { match O::BYTES { true => halves::<$t, ASK, true>(rows, k, ties, d, div, o as *mut u8, out.len(), &mut ahead, (0, 0)), false => halves::<$t, ASK, false>(rows, k, ties, d, div, o as *mut u8, out.len(), &mut ahead, (0, 0)) } },)*
                        _ => unsafe { match O::BYTES { true => halves_any::<ASK, true>(rows, k, d, div, o as *mut u8, out.len(), &mut ahead, (0, 0)), false => halves_any::<ASK, false>(rows, k, d, div, o as *mut u8, out.len(), &mut ahead, (0, 0)) } },
                    }
                };
            }
            taps!(1 2 3 4 5 6 7 8)
        }
        _ => {
            let n = out.len() / 8 * 8;
            let rows = &rows[..wi.len().min(rows.len())];
            let (half, zero, top) =
                (_mm256_set1_epi32(PIL_HALF), _mm256_setzero_si256(), _mm256_set1_epi32(255));
            let per = ahead.pace(n / 8);
            for x in (0..n).step_by(8) {
                if ASK {
                    ahead.ask(per);
                }
                unsafe {
                    let mut a = half;
                    for (&r, &w) in rows.iter().zip(wi) {
                        let v = _mm256_cvtepu8_epi32(_mm_loadl_epi64(r.add(x) as *const __m128i));
                        a = _mm256_add_epi32(a, _mm256_mullo_epi32(v, _mm256_set1_epi32(w)));
                    }
                    let s = _mm256_srai_epi32::<{ PIL_SHIFT as i32 }>(a);
                    O::put8(o.add(x), _mm256_min_epi32(_mm256_max_epi32(s, zero), top));
                }
            }
            n
        }
    }
}

/// Whole rows, `N` of them (weights in registers across the row), 32 outputs a step: each row's
/// 32 bytes into two `pmaddubsw`, one weighting the even bytes (`(2k, 0)`), one the odd
/// (`(0, 2k)`), the sums started at `D` (`2S + D`, below 2^16: u16 lanes wrap nowhere), then
/// `⌊t / 2D⌋` by a multiply-high and one shift for the row; the quotients' bytes back in order
/// and widened to floats, or (`BYTES`, `o` a row of bytes) stored as they are. With `ties` (a
/// row whole only with ties, `weights::pil_tied`: its remainders, signed bytes) the
/// remainders' sums beside, by two more `pmaddubsw` a row, and `t` less two where they are
/// negative (`whole::tie_sum`): 900p NV12's chroma rows at 1.25× are tied every other row, and
/// PIL's i32 sums took those eight outputs a step. Returns the outputs written.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn halves<const N: usize, const ASK: bool, const BYTES: bool>(
    rows: &[*const u8],
    k: &[i16],
    ties: &[i8],
    d: u8,
    div: (u16, u16),
    o: *mut u8,
    len: usize,
    ahead: &mut Trickle,
    own: (usize, usize),
) -> usize {
    let at: [*const u8; N] = std::array::from_fn(|j| rows[j]);
    let zero = _mm256_setzero_si256();
    let (mut even, mut odd) = ([zero; N], [zero; N]);
    let (mut tie_even, mut tie_odd) = ([zero; N], [zero; N]);
    for j in 0..N {
        even[j] = _mm256_set1_epi16(2 * k[j]);
        odd[j] = _mm256_set1_epi16((2 * k[j]) << 8);
        if let Some(&t) = ties.get(j) {
            tie_even[j] = _mm256_set1_epi16(t as u8 as i16);
            tie_odd[j] = _mm256_set1_epi16((t as u8 as i16) << 8);
        }
    }
    let tied = (&tie_even[..], &tie_odd[..]);
    match ties.is_empty() {
        true => unsafe {
            halves_loop::<ASK, BYTES, false>(&at, &even, &odd, tied, d, div, o, len, ahead, own)
        },
        false => unsafe {
            halves_loop::<ASK, BYTES, true>(&at, &even, &odd, tied, d, div, o, len, ahead, own)
        },
    }
}

/// `halves` for any number of rows up to 64 (`multitap::VTAPS`).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn halves_any<const ASK: bool, const BYTES: bool>(
    rows: &[*const u8],
    k: &[i16],
    d: u8,
    div: (u16, u16),
    o: *mut u8,
    len: usize,
    ahead: &mut Trickle,
    own: (usize, usize),
) -> usize {
    let (mut even, mut odd) = ([_mm256_setzero_si256(); 64], [_mm256_setzero_si256(); 64]);
    let n = k.len().min(64);
    for j in 0..n {
        even[j] = _mm256_set1_epi16(2 * k[j]);
        odd[j] = _mm256_set1_epi16((2 * k[j]) << 8);
    }
    unsafe {
        halves_loop::<ASK, BYTES, false>(
            &rows[..n],
            &even[..n],
            &odd[..n],
            (&[], &[]),
            d,
            div,
            o,
            len,
            ahead,
            own,
        )
    }
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn halves_loop<const ASK: bool, const BYTES: bool, const TIE: bool>(
    rows: &[*const u8],
    even: &[__m256i],
    odd: &[__m256i],
    (tie_even, tie_odd): (&[__m256i], &[__m256i]),
    d: u8,
    (mul, shift): (u16, u16),
    o: *mut u8,
    len: usize,
    ahead: &mut Trickle,
    (on, asked): (usize, usize),
) -> usize {
    let n = len / 32 * 32;
    let asking = &rows[rows.len() - asked.min(rows.len())..];
    let (dv, mulv, count) =
        (_mm256_set1_epi16(d as i16), _mm256_set1_epi16(mul as i16), _mm_cvtsi32_si128(shift as i32));
    let per = ahead.pace(n / 32);
    let mut q = [0u8; 32];
    for x in (0..n).step_by(32) {
        if ASK {
            ahead.ask(per);
        }
        if BYTES && on != 0 && x % 64 == 0 {
            for &r in asking {
                prefetch(r.wrapping_add(x + on));
            }
        }
        unsafe {
            let (mut e, mut h) = (dv, dv);
            if TIE {
                let (mut te, mut th) = (_mm256_setzero_si256(), _mm256_setzero_si256());
                let ties = tie_even.iter().zip(tie_odd);
                for (((&r, &ev), &od), (&tev, &tod)) in rows.iter().zip(even).zip(odd).zip(ties) {
                    let v = _mm256_loadu_si256(r.add(x) as *const __m256i);
                    e = _mm256_add_epi16(e, _mm256_maddubs_epi16(v, ev));
                    h = _mm256_add_epi16(h, _mm256_maddubs_epi16(v, od));
                    te = _mm256_add_epi16(te, _mm256_maddubs_epi16(v, tev));
                    th = _mm256_add_epi16(th, _mm256_maddubs_epi16(v, tod));
                }
                (e, h) = (tie_sum(e, te), tie_sum(h, th));
            } else {
                for ((&r, &ev), &od) in rows.iter().zip(even).zip(odd) {
                    let v = _mm256_loadu_si256(r.add(x) as *const __m256i);
                    e = _mm256_add_epi16(e, _mm256_maddubs_epi16(v, ev));
                    h = _mm256_add_epi16(h, _mm256_maddubs_epi16(v, od));
                }
            }
            let qe = _mm256_srl_epi16(mulhi(e, mulv), count);
            let qo = _mm256_srl_epi16(mulhi(h, mulv), count);
            // Each quotient is at most 255: the odd one moves to its word's high byte.
            let b = _mm256_or_si256(qe, _mm256_slli_epi16::<8>(qo));
            if BYTES {
                _mm256_storeu_si256(o.add(x) as *mut __m256i, b);
                continue;
            }
            _mm256_storeu_si256(q.as_mut_ptr() as *mut __m256i, b);
            let o = o as *mut f32;
            for z in 0..4 {
                let v = _mm256_cvtepu8_epi32(_mm_loadl_epi64(q.as_ptr().add(8 * z) as *const __m128i));
                _mm256_storeu_ps(o.add(x + 8 * z), _mm256_cvtepi32_ps(v));
            }
        }
    }
    n
}

/// PIL's vertical pass straight over a plane's source rows into one row of bytes (PIL's filters
/// blended down first, `multitap::pil8_down_first`), where the doubled whole weights are signed
/// bytes: `halves`' steps, their bytes stored, asking for the line `ahead` bytes on in the last
/// `asked` rows every other step (as `avx512::down_bytes`). Returns the bytes written (whole
/// steps); 0 where the weights are not such.
///
/// # Safety
/// The CPU has AVX2; every row pointer is readable for `out.len()` bytes.
#[target_feature(enable = "avx2,fma")]
pub(in crate::convert) unsafe fn down_bytes(
    rows: &[*const u8],
    k: &[i16],
    (d, div): (u8, (u16, u16)),
    out: &mut [u8],
    ahead: usize,
    asked: usize,
) -> usize {
    if k.len() > rows.len() || !k.iter().all(|&k| (0..=63).contains(&k)) {
        return 0;
    }
    let (o, len, mut none) = (out.as_mut_ptr(), out.len(), Trickle::NONE);
    macro_rules! taps {
        ($($t:literal)*) => {
            match k.len() {
                $($t => unsafe { halves::<$t, false, true>(rows, k, &[], d, div, o, len, &mut none, (ahead, asked)) },)*
                _ => unsafe { halves_any::<false, true>(rows, k, d, div, o, len, &mut none, (ahead, asked)) },
            }
        };
    }
    taps!(1 2 3 4 5 6 7 8)
}

#[cfg(test)]
mod tests {
    use super::WholeRow;

    /// Rows whole only with ties give PIL's byte through `halves`' remainder sums
    /// (`plan::check_tied_rows`).
    #[test]
    fn tied_rows_give_pils_bytes() {
        if !super::super::detect() {
            return;
        }
        crate::convert::plan::check_tied_rows_of!(super::vertical_bytes, 32);
    }

    /// The vertical pass gives PIL's byte, `⌊(Σ wi · b + 2^21) / 2^22⌋`: with whole weights
    /// (`wi = 2^22 k / D` rounded, `weights::pil_whole`: 3×'s and 2.5×'s triangles, one to nine
    /// rows) through the `pmaddubsw` halves, a weight past 63 through the 2^-22 sums, and lengths
    /// around the 32-output step (the outputs past it are the caller's).
    #[test]
    fn vertical_bytes_give_pils_bytes() {
        if !is_x86_feature_detected!("avx2") {
            return;
        }
        let cases: [&[i16]; 6] =
            [&[1, 2, 3, 2, 1], &[1, 5, 9, 7, 3], &[40, 40, 11], &[1], &[80, 11], &[3; 9]];
        let mut checked = 0;
        for k in cases {
            let d: i16 = k.iter().sum();
            let div = crate::convert::plan::divider(d as u16).expect("a divider");
            let wi: Vec<i32> =
                k.iter().map(|&k| ((k as f64) * (1u64 << 22) as f64 / d as f64).round() as i32).collect();
            for n in [32, 40, 64, 96, 640, 650] {
                let rows: Vec<Vec<u8>> = (0..k.len())
                    .map(|r| (0..n).map(|i| ((i * 97 + r * 61 + i * i * 13) % 256) as u8).collect())
                    .collect();
                let at: Vec<*const u8> = rows.iter().map(|r| r.as_ptr()).collect();
                let mut out = vec![-1f32; n];
                let done = unsafe {
                    super::vertical_bytes(
                        &at,
                        &wi,
                        Some(WholeRow { k, d: d as u8, div, n: &[] }),
                        &mut out,
                        super::Trickle::NONE,
                    )
                };
                let step = if k.iter().all(|&k| k <= 63) { 32 } else { 8 };
                assert_eq!(done, n / step * step, "weights {k:?}");
                for x in 0..n {
                    if x >= done {
                        assert_eq!(out[x], -1.0, "nothing written past the steps");
                        continue;
                    }
                    let acc: i64 = (0..k.len()).map(|j| wi[j] as i64 * rows[j][x] as i64).sum();
                    let pil = ((acc + (1 << 21)) >> 22).clamp(0, 255);
                    assert_eq!(out[x], pil as f32, "weights {k:?} over {d}, {n} outputs, output {x}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 5000, "{checked}");
    }
}
