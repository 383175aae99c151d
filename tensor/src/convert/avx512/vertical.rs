//! The AVX-512 level's vertical passes of the multi-tap filters: over the f32 rows of the
//! horizontal pass (OpenCV's order, PIL's i32 sums), and PIL's over rows of bytes with whole
//! weights (`multitap::pil8_row`).

#![allow(clippy::needless_range_loop)]

use super::taps::tie_sum;
use crate::convert::hint::{prefetch, Trickle};
use crate::convert::multitap::VTaps;
use crate::convert::plan::{WholeRow, PIL_HALF, PIL_SHIFT};
use std::arch::x86_64::*;

/// A multi-tap filter's vertical pass at sixteen lanes (`avx2::multitap_vertical` at twice the
/// width, the same order: OpenCV's separate multiply and add, then the scale; PIL's i32 sums,
/// shift and clamp), 32 outputs per step. The AVX2 loop took a quarter of a 1080p NV12 frame's
/// `bilinear-antialias` at this level. Returns the outputs it wrote (whole steps).
///
/// # Safety
/// The CPU has AVX-512 (F, BW); every row pointer is readable for `out.len()` values.
#[target_feature(enable = "avx512f,avx512bw")]
pub(in crate::convert) unsafe fn multitap_vertical(
    rows: &[*const f32],
    taps: VTaps<'_>,
    out: &mut [f32],
) -> usize {
    let n = out.len() / 32 * 32;
    let o = out.as_mut_ptr();
    match taps {
        VTaps::Float(w, scale) => {
            let rows = &rows[..w.len().min(rows.len())];
            let scale = _mm512_set1_ps(scale);
            let w0 = _mm512_set1_ps(w[0]);
            for x in (0..n).step_by(32) {
                unsafe {
                    let mut a = _mm512_mul_ps(w0, _mm512_loadu_ps(rows[0].add(x)));
                    let mut b = _mm512_mul_ps(w0, _mm512_loadu_ps(rows[0].add(x + 16)));
                    for (&r, &wj) in rows[1..].iter().zip(&w[1..]) {
                        let wj = _mm512_set1_ps(wj);
                        a = _mm512_add_ps(a, _mm512_mul_ps(wj, _mm512_loadu_ps(r.add(x))));
                        b = _mm512_add_ps(b, _mm512_mul_ps(wj, _mm512_loadu_ps(r.add(x + 16))));
                    }
                    _mm512_storeu_ps(o.add(x), _mm512_mul_ps(a, scale));
                    _mm512_storeu_ps(o.add(x + 16), _mm512_mul_ps(b, scale));
                }
            }
        }
        VTaps::Pil(_, Some((k, d))) => {
            // Whole weights (`plan::Taps::d`): each byte times its `k` by one `pmaddwd` (the
            // byte's dword is (b, 0) as words), then `⌊(2S + D) / 2D⌋` in f32: exact, as `2S + D`
            // and the quotient's error (under 2^-15) stay below the `1/(2D)` between it and a
            // whole number for an odd D, and a power-of-two D divides exactly.
            let rows = &rows[..k.len().min(rows.len())];
            let inv = _mm512_set1_ps((0.5 / d as f64) as f32);
            let d = _mm512_set1_epi32(d as i32);
            for x in (0..n).step_by(32) {
                unsafe {
                    let (mut a, mut b) = (_mm512_setzero_si512(), _mm512_setzero_si512());
                    for (&r, &kj) in rows.iter().zip(k) {
                        let kj = _mm512_set1_epi32(kj as i32);
                        let (ra, rb) = (
                            _mm512_loadu_si512(r.add(x) as *const _),
                            _mm512_loadu_si512(r.add(x + 16) as *const _),
                        );
                        a = _mm512_add_epi32(a, _mm512_madd_epi16(ra, kj));
                        b = _mm512_add_epi32(b, _mm512_madd_epi16(rb, kj));
                    }
                    let q = |s: __m512i| {
                        let t = _mm512_cvtepi32_ps(_mm512_add_epi32(_mm512_add_epi32(s, s), d));
                        _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC }>(_mm512_mul_ps(
                            t, inv,
                        ))
                    };
                    _mm512_storeu_ps(o.add(x), q(a));
                    _mm512_storeu_ps(o.add(x + 16), q(b));
                }
            }
        }
        VTaps::Pil(w, None) => {
            let (half, zero, top) =
                (_mm512_set1_epi32(PIL_HALF), _mm512_setzero_si512(), _mm512_set1_epi32(255));
            let done = |s: __m512i| {
                let s = _mm512_srai_epi32::<{ PIL_SHIFT }>(s);
                _mm512_cvtepi32_ps(_mm512_min_epi32(_mm512_max_epi32(s, zero), top))
            };
            for x in (0..n).step_by(32) {
                unsafe {
                    let (mut a, mut b) = (half, half);
                    for (&r, &wj) in rows.iter().zip(w) {
                        let wj = _mm512_set1_epi32(wj);
                        // The rows hold the horizontal pass's bytes as i32 bits (`multitap::pil_byte`).
                        let (ra, rb) = (
                            _mm512_loadu_si512(r.add(x) as *const _),
                            _mm512_loadu_si512(r.add(x + 16) as *const _),
                        );
                        a = _mm512_add_epi32(a, _mm512_mullo_epi32(wj, ra));
                        b = _mm512_add_epi32(b, _mm512_mullo_epi32(wj, rb));
                    }
                    _mm512_storeu_ps(o.add(x), done(a));
                    _mm512_storeu_ps(o.add(x + 16), done(b));
                }
            }
        }
    }
    n
}

/// PIL's vertical pass over rows of bytes (`multitap::pil8_row`) into a component's row (f32
/// values of PIL's bytes): with whole weights (`div`: `D`'s divider), 32 outputs per step in i16
/// (`Σ k · b` and `2S + D` fit: `plan::WHOLE_MAX`) and the multiply-high division, tied rows
/// (`WholeRow::n`) 64 a step where their doubled weights are signed bytes; else PIL's 2^-22
/// weights in i32, 16 per step; the lines `ahead` asked for through the steps. Returns the
/// outputs it wrote (whole steps).
///
/// # Safety
/// The CPU has AVX-512 (F, BW, VBMI); every row pointer is readable for `out.len()` bytes.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
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

/// What PIL's vertical pass over bytes writes: the components' f32 rows, or (`u8`) the bytes
/// themselves, for the finish that only interleaves them (`avx512::finish_bytes`).
pub(in crate::convert) trait Out: crate::convert::multitap::Sample {
    /// 64 bytes in order at `o`.
    unsafe fn put64(o: *mut Self, b: __m512i);
    /// 32 words, each a byte's value, at `o`.
    unsafe fn put32(o: *mut Self, q: __m512i);
    /// 16 dwords, each a byte's value, at `o`.
    unsafe fn put16(o: *mut Self, v: __m512i);
}

impl Out for f32 {
    #[inline(always)]
    unsafe fn put64(o: *mut f32, b: __m512i) {
        // Byte 4p of dword lane p takes byte 16z + p; the other three are zeroed by the mask.
        let lanes = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
        let firsts: __mmask64 = 0x1111_1111_1111_1111;
        for z in 0..4 {
            let spread = _mm512_add_epi32(_mm512_set1_epi32(16 * z as i32), lanes);
            let v = _mm512_maskz_permutexvar_epi8(firsts, spread, b);
            unsafe { _mm512_storeu_ps(o.add(16 * z), _mm512_cvtepi32_ps(v)) };
        }
    }
    #[inline(always)]
    unsafe fn put32(o: *mut f32, q: __m512i) {
        let lo = _mm512_cvtepi32_ps(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(q)));
        let hi = _mm512_cvtepi32_ps(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64::<1>(q)));
        unsafe {
            _mm512_storeu_ps(o, lo);
            _mm512_storeu_ps(o.add(16), hi);
        }
    }
    #[inline(always)]
    unsafe fn put16(o: *mut f32, v: __m512i) {
        unsafe { _mm512_storeu_ps(o, _mm512_cvtepi32_ps(v)) }
    }
}

impl Out for u8 {
    #[inline(always)]
    unsafe fn put64(o: *mut u8, b: __m512i) {
        unsafe { _mm512_storeu_si512(o as *mut _, b) }
    }
    #[inline(always)]
    unsafe fn put32(o: *mut u8, q: __m512i) {
        unsafe { _mm256_storeu_si256(o as *mut __m256i, _mm512_cvtepi16_epi8(q)) }
    }
    #[inline(always)]
    unsafe fn put16(o: *mut u8, v: __m512i) {
        unsafe { _mm_storeu_si128(o as *mut __m128i, _mm512_cvtepi32_epi8(v)) }
    }
}

/// `vertical_bytes` asking for lines (`ASK`) or not, each its own function (as `box_blocks`; the
/// asking's code in the one loop cost NV12's hot frame 0.02–0.05 ms before it was split).
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
#[inline(never)]
unsafe fn vertical_bytes_of<O: Out, const ASK: bool>(
    rows: &[*const u8],
    wi: &[i32],
    whole: Option<WholeRow<'_>>,
    out: &mut [O],
    mut ahead: Trickle,
) -> usize {
    let o = out.as_mut_ptr();
    // Doubled weights that are signed bytes go through `pmaddubsw` (`vertical_halves`); a tied
    // row only so (the others by PIL's i32 sums below).
    let bytes = |w: &WholeRow| w.k.iter().all(|&k| (0..=63).contains(&k));
    match whole.filter(|w| w.n.is_empty() || (bytes(w) && w.n.len() == w.k.len() && w.k.len() <= rows.len()))
    {
        Some(w @ WholeRow { k, d, div: (mul, shift), n: ties }) => {
            let n = out.len() / 32 * 32;
            let rows = &rows[..k.len().min(rows.len())];
            let (d, mul, shift) = (d as i16, mul as i16, shift as i16);
            let bytes = bytes(&w);
            macro_rules! taps {
                ($($t:literal)*) => {
                    match (rows.len(), bytes, ties.is_empty()) {
                        $(($t, true, true) => unsafe { vertical_halves::<O, $t, ASK, false>(rows, k, &[], (d, mul, shift), o, n, &mut ahead) },)*
                        $(($t, true, false) => unsafe { vertical_halves::<O, $t, ASK, true>(rows, k, ties, (d, mul, shift), o, n, &mut ahead) },)*
                        $(($t, false, _) => unsafe { vertical_whole::<O, $t, ASK>(rows, k, (d, mul, shift), o, 0, n, &mut ahead); n },)*
                        _ => unsafe { vertical_whole_any::<O, ASK>(rows, k, (d, mul, shift), o, n, &mut ahead); n },
                    }
                };
            }
            taps!(1 2 3 4 5 6 7 8 9 10 11 12)
        }
        None => {
            let n = out.len() / 16 * 16;
            let rows = &rows[..wi.len().min(rows.len())];
            let (half, zero, top) =
                (_mm512_set1_epi32(PIL_HALF), _mm512_setzero_si512(), _mm512_set1_epi32(255));
            let per = ahead.pace(n / 16);
            for x in (0..n).step_by(16) {
                if ASK {
                    ahead.ask(per);
                }
                unsafe {
                    let mut a = half;
                    for (&r, &w) in rows.iter().zip(wi) {
                        let v = _mm512_cvtepu8_epi32(_mm_loadu_si128(r.add(x) as *const __m128i));
                        a = _mm512_add_epi32(a, _mm512_mullo_epi32(v, _mm512_set1_epi32(w)));
                    }
                    let s = _mm512_srai_epi32::<{ PIL_SHIFT }>(a);
                    O::put16(o.add(x), _mm512_min_epi32(_mm512_max_epi32(s, zero), top));
                }
            }
            n
        }
    }
}

/// `vertical_bytes` with whole weights for `N` rows: the weights' broadcasts and the row pointers
/// held in registers across the row. With the count known only at run time, each step loaded and
/// broadcast every weight again and reloaded the row pointers (at 3× the triangle's 5 rows:
/// the broadcasts a sixth of the loop's instructions). Engine, uint8, `bilinear-antialias`, 8
/// rotating frames, min of 1000, before → after: YUY2 0.699–0.768 → 0.656–0.711 ms, RGBA (32
/// frames) 0.902–0.910 → 0.861–0.878, NV12 0.406–0.434 → 0.406–0.417.
///
/// Sums start at `D` over twice the weights: `2S + D` with two adds fewer per step (`pmullw`
/// keeps the low 16 bits, and `2S + D < 2^16`). Rows taken two at a time into `pmaddubsw`
/// (64 outputs a step, in-lane byte interleaves instead of `vpmovzxbw`, which Zen 4 runs on its
/// two shuffle pipes) was faster alone, 129 → 113 ns for 640 outputs over 5 rows in L1, and
/// slower in the converter, 1080p NV12 → 640 hot 0.386 → 0.414 ms (docs/benchmark-log.md).
/// `vertical_halves` now takes the rows whole where the doubled weights are signed bytes; this
/// pass does the others, and its last 32 outputs (from `from`).
#[inline(always)]
unsafe fn vertical_whole<O: Out, const N: usize, const ASK: bool>(
    rows: &[*const u8],
    k: &[i16],
    (d, mul, shift): (i16, i16, i16),
    o: *mut O,
    from: usize,
    n: usize,
    ahead: &mut Trickle,
) {
    let rows: [*const u8; N] = std::array::from_fn(|j| rows[j]);
    // Loops, not `from_fn`: its closures' broadcasts ran as calls.
    let mut kj = [_mm512_setzero_si512(); N];
    for j in 0..N {
        kj[j] = _mm512_set1_epi16(2 * k[j]);
    }
    let (d, mul, shift) = (_mm512_set1_epi16(d), _mm512_set1_epi16(mul), _mm512_set1_epi16(shift));
    let per = ahead.pace((n - from.min(n)) / 32);
    for x in (from..n).step_by(32) {
        if ASK {
            ahead.ask(per);
        }
        unsafe {
            let mut s = d;
            for j in 0..N {
                let v = _mm512_cvtepu8_epi16(_mm256_loadu_si256(rows[j].add(x) as *const __m256i));
                s = _mm512_add_epi16(s, _mm512_mullo_epi16(v, kj[j]));
            }
            whole_store::<O>(s, mul, shift, o.add(x));
        }
    }
}

/// `vertical_whole` where every doubled weight is a signed byte, 64 outputs a step: each row's
/// 64 bytes go whole into two `pmaddubsw`, one weighting the even bytes (weights `(2k, 0)`), one
/// the odd (`(0, 2k)`), so no byte is widened before the sums. The two quotients (bytes in word
/// lanes) merge into the 64 bytes in order by a shift and an or, and each 16 of them become
/// floats by one zero-masked `vpermb` into dword lanes. Against `vertical_whole` at 5 rows that
/// is 4 shuffles per 64 outputs instead of 14 (`vpmovzxbw` and `vpmovzxwd`, which Zen 4 runs on
/// its two shuffle pipes). A last step of 32 goes through `vertical_whole`. Engine, uint8,
/// `bilinear-antialias`, hot 1080p frame, best of 6 alternations: NV12 0.371 → 0.335 ms, YUY2
/// 0.539 → 0.503, RGBA 0.538 → 0.497 (with `mulhi`).
///
/// With `TIE` (a row whole only with ties, `weights::pil_tied`: the remainders `ties`, signed
/// bytes) the remainders' sums `N` beside, by two more `pmaddubsw` a row, and a tie with a
/// negative `N` one less (`taps::tie_sum`, as the horizontal blocks); the last outputs past the
/// 64-output steps are left to PIL's sums. 900p NV12's chroma rows at 1.25× are tied every other
/// row, and those went through the i32 steps: half the vertical pass's time there.
/// Returns the outputs written.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
#[inline]
#[allow(clippy::too_many_arguments)]
unsafe fn vertical_halves<O: Out, const N: usize, const ASK: bool, const TIE: bool>(
    rows: &[*const u8],
    k: &[i16],
    ties: &[i8],
    (d, mul, shift): (i16, i16, i16),
    o: *mut O,
    n: usize,
    ahead: &mut Trickle,
) -> usize {
    let at: [*const u8; N] = std::array::from_fn(|j| rows[j]);
    let zero = _mm512_setzero_si512();
    let (mut even, mut odd) = ([zero; N], [zero; N]);
    let (mut tie_even, mut tie_odd) = ([zero; N], [zero; N]);
    for j in 0..N {
        even[j] = _mm512_set1_epi16(2 * k[j]);
        odd[j] = _mm512_set1_epi16((2 * k[j]) << 8);
        if TIE {
            let t = ties[j] as u8 as i16;
            tie_even[j] = _mm512_set1_epi16(t);
            tie_odd[j] = _mm512_set1_epi16(t << 8);
        }
    }
    let (dv, mulv, count) = (_mm512_set1_epi16(d), _mm512_set1_epi16(mul), _mm_cvtsi32_si128(shift as i32));
    let whole = n / 64 * 64;
    let per = ahead.pace(whole / 64);
    for x in (0..whole).step_by(64) {
        if ASK {
            ahead.ask(per);
        }
        unsafe {
            let (mut e, mut h) = (dv, dv);
            let (mut te, mut th) = (zero, zero);
            for j in 0..N {
                let v = _mm512_loadu_si512(at[j].add(x) as *const _);
                e = _mm512_add_epi16(e, _mm512_maddubs_epi16(v, even[j]));
                h = _mm512_add_epi16(h, _mm512_maddubs_epi16(v, odd[j]));
                if TIE {
                    te = _mm512_add_epi16(te, _mm512_maddubs_epi16(v, tie_even[j]));
                    th = _mm512_add_epi16(th, _mm512_maddubs_epi16(v, tie_odd[j]));
                }
            }
            if TIE {
                (e, h) = (tie_sum(e, te), tie_sum(h, th));
            }
            let qe = _mm512_srl_epi16(mulhi(e, mulv), count);
            let qo = _mm512_srl_epi16(mulhi(h, mulv), count);
            // Each quotient is at most 255: the odd one moves to its word's high byte.
            let b = _mm512_or_si512(qe, _mm512_slli_epi16::<8>(qo));
            O::put64(o.add(x), b);
        }
    }
    if !TIE && whole < n {
        unsafe { vertical_whole::<O, N, ASK>(rows, k, (d, mul, shift), o, whole, n, ahead) };
        return n;
    }
    whole
}

/// PIL's vertical pass straight over a plane's source rows into one row of bytes (PIL's filters
/// blended down first, `multitap::pil8_down_first`), where the doubled whole weights are signed
/// bytes: each row's 64 bytes into two `pmaddubsw` (even and odd bytes, as `vertical_halves`),
/// the quotients merged into the 64 bytes in order and stored as they are. Each step asks for
/// the line `ahead` bytes on in the last `asked` rows (the rows new to the output row after
/// next), by `hint::prefetch`'s T1: against T0, 1080p YUY2 → 640 on this Intel Xeon (engine,
/// uint8 `bilinear-antialias`, best of 1000, three alternations) 32 frames 0.527–0.559 →
/// 0.490–0.529 ms, 8 frames 0.388–0.406 → 0.375–0.398, 900p 0.377–0.381 → 0.358–0.375.
/// Returns the bytes it wrote (whole steps); 0 where the weights are not such.
///
/// # Safety
/// The CPU has AVX-512 (F, BW); every row pointer is readable for `out.len()` bytes.
#[target_feature(enable = "avx512f,avx512bw")]
pub(in crate::convert) unsafe fn down_bytes(
    rows: &[*const u8],
    k: &[i16],
    (d, (mul, shift)): (u8, (u16, u16)),
    out: &mut [u8],
    ahead: usize,
    asked: usize,
) -> usize {
    if k.len() > rows.len() || !k.iter().all(|&k| (0..=63).contains(&k)) {
        return 0;
    }
    macro_rules! taps {
        ($($t:literal)*) => {
            match k.len() {
                $($t => unsafe { down_steps::<$t>(rows, k, (d as i16, mul as i16, shift), out, ahead, asked) },)*
                _ => 0,
            }
        };
    }
    taps!(1 2 3 4 5 6 7 8 9 10 11 12)
}

/// `down_bytes` for `N` rows, the weights' broadcasts held across the row.
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
unsafe fn down_steps<const N: usize>(
    rows: &[*const u8],
    k: &[i16],
    (d, mul, shift): (i16, i16, u16),
    out: &mut [u8],
    ahead: usize,
    asked: usize,
) -> usize {
    let at: [*const u8; N] = std::array::from_fn(|j| rows[j]);
    let (mut even, mut odd) = ([_mm512_setzero_si512(); N], [_mm512_setzero_si512(); N]);
    for j in 0..N {
        even[j] = _mm512_set1_epi16(2 * k[j]);
        odd[j] = _mm512_set1_epi16((2 * k[j]) << 8);
    }
    let (dv, mulv, count) = (_mm512_set1_epi16(d), _mm512_set1_epi16(mul), _mm_cvtsi32_si128(shift as i32));
    let o = out.as_mut_ptr();
    let whole = out.len() / 64 * 64;
    for x in (0..whole).step_by(64) {
        unsafe {
            let (mut e, mut h) = (dv, dv);
            for j in 0..N {
                if ahead != 0 && j + asked >= N {
                    prefetch(at[j].wrapping_add(x + ahead));
                }
                let v = _mm512_loadu_si512(at[j].add(x) as *const _);
                e = _mm512_add_epi16(e, _mm512_maddubs_epi16(v, even[j]));
                h = _mm512_add_epi16(h, _mm512_maddubs_epi16(v, odd[j]));
            }
            let qe = _mm512_srl_epi16(mulhi(e, mulv), count);
            let qo = _mm512_srl_epi16(mulhi(h, mulv), count);
            _mm512_storeu_si512(o.add(x) as *mut _, _mm512_or_si512(qe, _mm512_slli_epi16::<8>(qo)));
        }
    }
    whole
}

/// `pmulhuw` as the instruction: from the intrinsic over `pmaddubsw` sums, LLVM widened each
/// half to dwords and back (two extends, two multiplies and two truncations per vector), which
/// made `vertical_halves` slower than `vertical_whole`.
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
unsafe fn mulhi(a: __m512i, b: __m512i) -> __m512i {
    let mut a = a;
    unsafe {
        std::arch::asm!("vpmulhuw {a}, {a}, {b}", a = inout(zmm_reg) a, b = in(zmm_reg) b, options(pure, nomem, nostack));
    }
    a
}

/// `vertical_whole` for any number of rows.
#[inline(always)]
unsafe fn vertical_whole_any<O: Out, const ASK: bool>(
    rows: &[*const u8],
    k: &[i16],
    (d, mul, shift): (i16, i16, i16),
    o: *mut O,
    n: usize,
    ahead: &mut Trickle,
) {
    let (d, mul, shift) = (_mm512_set1_epi16(d), _mm512_set1_epi16(mul), _mm512_set1_epi16(shift));
    let per = ahead.pace(n / 32);
    for x in (0..n).step_by(32) {
        if ASK {
            ahead.ask(per);
        }
        unsafe {
            let mut s = d;
            for (&r, &kj) in rows.iter().zip(k) {
                let v = _mm512_cvtepu8_epi16(_mm256_loadu_si256(r.add(x) as *const __m256i));
                s = _mm512_add_epi16(s, _mm512_mullo_epi16(v, _mm512_set1_epi16(2 * kj)));
            }
            whole_store::<O>(s, mul, shift, o.add(x));
        }
    }
}

/// PIL's byte of 32 whole-weight sums as `t = 2S + D` (`⌊t / 2D⌋` by the multiply-high division)
/// at `o`.
#[inline(always)]
unsafe fn whole_store<O: Out>(t: __m512i, mul: __m512i, shift: __m512i, o: *mut O) {
    unsafe { O::put32(o, _mm512_srlv_epi16(mulhi(t, mul), shift)) }
}

#[cfg(test)]
mod tests {
    use super::WholeRow;

    /// Rows whole only with ties give PIL's byte through `vertical_halves`' remainder sums
    /// (`plan::check_tied_rows`).
    #[test]
    fn tied_rows_give_pils_bytes() {
        if !super::super::detect() {
            return;
        }
        crate::convert::plan::check_tied_rows_of!(super::vertical_bytes, 64);
    }

    /// The vertical pass with whole weights gives PIL's byte, `⌊(Σ wi · b + 2^21) / 2^22⌋` with
    /// `wi = 2^22 k / D` rounded (`weights::pil_whole`), for 3×'s and 2.5×'s triangles (the
    /// `pmaddubsw` halves of `vertical_halves`, and its last 32 by `vertical_whole`), weights
    /// whose double passes a signed byte (`pmullw`'s low half), one to twelve rows, and lengths
    /// around the 32- and 64-output steps.
    #[test]
    fn vertical_whole_gives_pils_bytes() {
        if !super::super::detect() {
            return;
        }
        let cases: [&[i16]; 7] = [
            &[1, 2, 3, 2, 1],
            &[1, 5, 9, 7, 3],
            &[80, 11],
            &[40, 40, 11],
            &[60, 4, 27],
            &[1],
            &[6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 7],
        ];
        let mut large = 0;
        for k in cases {
            let d: i16 = k.iter().sum();
            let div = crate::convert::plan::divider(d as u16).expect("a divider");
            let wi: Vec<i64> =
                k.iter().map(|&k| ((k as f64) * (1u64 << 22) as f64 / d as f64).round() as i64).collect();
            for n in [32, 64, 96, 640, 672] {
                let rows: Vec<Vec<u8>> = (0..k.len())
                    .map(|r| (0..n).map(|i| ((i * 97 + r * 61 + i * i * 13) % 256) as u8).collect())
                    .collect();
                let at: Vec<*const u8> = rows.iter().map(|r| r.as_ptr()).collect();
                let mut out = vec![-1f32; n];
                let done = unsafe {
                    super::vertical_bytes(
                        &at,
                        &[],
                        Some(WholeRow { k, d: d as u8, div, n: &[] }),
                        &mut out,
                        super::Trickle::NONE,
                    )
                };
                assert_eq!(done, n);
                for x in 0..n {
                    let acc: i64 = (0..k.len()).map(|j| wi[j] * rows[j][x] as i64).sum();
                    let pil = ((acc + (1 << 21)) >> 22).clamp(0, 255);
                    assert_eq!(out[x], pil as f32, "weights {k:?} over {d}, {n} outputs, output {x}");
                }
            }
            large += usize::from(k.iter().any(|&w| 2 * w > 127));
        }
        assert_eq!(large, 1, "a weight whose double is past a signed byte");
    }
}
