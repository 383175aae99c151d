//! The AVX-512 level's multi-tap kernels (`area`, `bilinear-antialias`, the bicubics): the
//! horizontal blocks over bytes (2^-22 and 2^-14 weights in dword lanes), PIL's whole weights in
//! word lanes, and the vertical pass; an exact box's row sums and the blocks across them are in
//! `boxes.rs`.

#![allow(clippy::needless_range_loop)]

use crate::convert::baseline::VTaps;
use crate::convert::hint::prefetch_window;
use crate::convert::plan::{Blocks, Whole, PIL_HALF, PIL_SHIFT, PIL_SPLIT, TAP_UNIT};
use std::arch::x86_64::*;

/// A multi-tap filter's horizontal pass over source rows `rows` (one to three, each its bytes) for
/// one group (`plan::TapGroup`), sixteen dwords per block: per tap pair and row one `vpermt2b`
/// and one `vpmaddwd` (two for PIL's split weights), exact in i32, then the scalar loops' result;
/// each lane stored to its member's row (`out[i]` for row `i`). The rows share each block's
/// controls and weights: loaded once for all, where one row per call spent most of its cycles on
/// those loads (1080p RGBA → 640, area: 0.62 → 0.44 ms). Returns the outputs each member has from the
/// blocks.
///
/// # Safety
/// The CPU has AVX-512 F/BW/VBMI; `out[i]` holds the group's members' rows (null past them),
/// each `plan.done` writable values.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx2,fma")]
pub(in crate::convert) unsafe fn multitap(
    rows: &[&[u8]],
    plan: &Blocks,
    pil: bool,
    out: &[[*mut f32; 4]],
    only: Option<&[u32]>,
    ahead: usize,
) -> usize {
    unsafe { multitap_to::<false>(rows, plan, pil, out, only, ahead) }
}

/// `multitap` for PIL's filters into rows of bytes (`baseline::pil8_row`).
///
/// # Safety
/// As `multitap`, each row `plan.done` writable bytes.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx2,fma")]
pub(in crate::convert) unsafe fn multitap_bytes(
    rows: &[&[u8]],
    plan: &Blocks,
    out: &[[*mut u8; 4]],
    only: Option<&[u32]>,
) -> usize {
    // The same pointers, cast back to bytes where the kernel stores.
    let out = unsafe { std::slice::from_raw_parts(out.as_ptr() as *const [*mut f32; 4], out.len()) };
    unsafe { multitap_to::<true>(rows, plan, true, out, only, 0) }
}

#[inline(always)]
unsafe fn multitap_to<const BYTES: bool>(
    rows: &[&[u8]],
    plan: &Blocks,
    pil: bool,
    out: &[[*mut f32; 4]],
    only: Option<&[u32]>,
    ahead: usize,
) -> usize {
    assert!(
        rows.len() == out.len() && rows.iter().all(|r| plan.reach <= r.len()),
        "loads stay inside the rows"
    );
    let members = out[0].iter().take_while(|p| !p.is_null()).count();
    macro_rules! by_rows {
        ($narrow:expr, $pil:expr, $m:expr) => {
            match rows.len() {
                1 => unsafe { multitap_blocks::<$narrow, $pil, $m, 1, BYTES>(rows, plan, out, only, ahead) },
                2 => unsafe { multitap_blocks::<$narrow, $pil, $m, 2, BYTES>(rows, plan, out, only, ahead) },
                _ => unsafe { multitap_blocks::<$narrow, $pil, $m, 3, BYTES>(rows, plan, out, only, ahead) },
            }
        };
    }
    macro_rules! go {
        ($narrow:expr, $pil:expr) => {
            match members {
                1 => by_rows!($narrow, $pil, 1),
                2 => by_rows!($narrow, $pil, 2),
                3 => by_rows!($narrow, $pil, 3),
                _ => by_rows!($narrow, $pil, 4),
            }
        };
    }
    match (plan.narrow, pil) {
        (true, false) => go!(true, false),
        (true, true) => go!(true, true),
        (false, false) => go!(false, false),
        (false, true) => go!(false, true),
    }
}

#[inline(always)]
unsafe fn multitap_blocks<
    const NARROW: bool,
    const PIL: bool,
    const M: usize,
    const R: usize,
    const BYTES: bool,
>(
    rows: &[&[u8]],
    plan: &Blocks,
    out: &[[*mut f32; 4]],
    only: Option<&[u32]>,
    ahead: usize,
) -> usize {
    assert!(rows.len() >= R && out.len() >= R && (1..=3).contains(&R));
    let pairs = plan.pairs;
    let blocks = plan.targets.len().min(plan.bases.len());
    assert!(plan.c64.len() >= blocks * pairs && plan.hi.len() >= blocks * pairs * 16);
    assert!(!PIL || plan.lo.len() >= blocks * pairs * 16);
    let zero = _mm512_setzero_si512();
    let unit = _mm512_set1_ps(TAP_UNIT);
    let half = _mm512_set1_epi32(PIL_HALF);
    let top = _mm512_set1_epi32(255);
    let (hi, lo, controls) = (plan.hi.as_ptr(), plan.lo.as_ptr(), plan.c64.as_ptr());
    let row: [*const u8; R] = std::array::from_fn(|i| rows[i].as_ptr());
    // (A closure over the body, passed to `for_each`, was not inlined: its intrinsics then ran
    // as calls, 20× slower.)
    let mut next = 0;
    loop {
        let b = match only {
            None if next < blocks => next,
            // Blocks the whole-weight plan left (`plan::Whole`), in range.
            Some(list) if next < list.len() => list[next] as usize,
            _ => break,
        };
        next += 1;
        if b >= blocks {
            continue;
        }
        unsafe {
            let base = *plan.bases.get_unchecked(b) as usize;
            if ahead != 0 {
                prefetch_window(&row, base + ahead, !NARROW);
            }
            let a: [__m512i; R] = std::array::from_fn(|i| _mm512_loadu_si512(row[i].add(base) as *const _));
            let c: [__m512i; R] = std::array::from_fn(|i| match NARROW {
                true => zero,
                false => _mm512_loadu_si512(row[i].add(base + 64) as *const _),
            });
            let (mut sh, mut sl) = ([zero; R], [zero; R]);
            for p in 0..pairs {
                let at = b * pairs + p;
                let ctl = _mm512_load_si512(controls.add(at) as *const _);
                let wh = _mm512_loadu_si512(hi.add(16 * at) as *const _);
                let wl = if PIL { _mm512_loadu_si512(lo.add(16 * at) as *const _) } else { zero };
                for i in 0..R {
                    let t = match NARROW {
                        true => _mm512_permutex2var_epi8(a[i], ctl, zero),
                        false => _mm512_maskz_permutex2var_epi8(0x5555_5555_5555_5555, a[i], ctl, c[i]),
                    };
                    sh[i] = _mm512_add_epi32(sh[i], _mm512_madd_epi16(t, wh));
                    if PIL {
                        sl[i] = _mm512_add_epi32(sl[i], _mm512_madd_epi16(t, wl));
                    }
                }
            }
            for i in 0..R {
                let v = match PIL {
                    true => {
                        let s = _mm512_slli_epi32::<PIL_SPLIT>(sh[i]);
                        let s = _mm512_srai_epi32::<{ PIL_SHIFT }>(_mm512_add_epi32(
                            _mm512_add_epi32(s, sl[i]),
                            half,
                        ));
                        // As i32 bits (see `baseline::pil_byte`).
                        _mm512_castsi512_ps(_mm512_min_epi32(_mm512_max_epi32(s, zero), top))
                    }
                    false => _mm512_mul_ps(_mm512_cvtepi32_ps(sh[i]), unit),
                };
                let out = out[i];
                if BYTES {
                    // PIL's bytes (0..=255) packed, stored by the same lane rule.
                    let v = _mm512_cvtepi32_epi8(_mm512_castps_si512(v));
                    let o = |m: usize| out[m] as *mut u8;
                    match M {
                        1 => _mm_storeu_si128(o(0).add(16 * b) as *mut __m128i, v),
                        2 => {
                            _mm_storel_epi64(o(0).add(8 * b) as *mut __m128i, v);
                            _mm_storel_epi64(o(1).add(8 * b) as *mut __m128i, _mm_unpackhi_epi64(v, v));
                        }
                        _ => {
                            let mut t = [0u8; 16];
                            _mm_storeu_si128(t.as_mut_ptr() as *mut __m128i, v);
                            for m in 0..M {
                                std::ptr::copy_nonoverlapping(t.as_ptr().add(4 * m), o(m).add(4 * b), 4);
                            }
                        }
                    }
                    continue;
                }
                store_lanes::<M>(&out, b, v);
            }
        }
    }
    plan.done
}

/// Block `b`'s sixteen dwords into its members' rows by the lanes of `Blocks::new` (without
/// reading the targets per block): one member's sixteen outputs, two members' eight, or each
/// member's four. The 2^-22/2^-14 blocks and the rows-first box blocks store alike.
#[inline(always)]
pub(super) unsafe fn store_lanes<const M: usize>(out: &[*mut f32; 4], b: usize, v: __m512) {
    unsafe {
        match M {
            1 => _mm512_storeu_ps(out[0].add(16 * b), v),
            2 => {
                _mm256_storeu_ps(out[0].add(8 * b), _mm512_castps512_ps256(v));
                // (`extractf32x8` is AVX512DQ, which the level does not ask for: not inlined.)
                let upper = _mm512_extractf64x4_pd::<1>(_mm512_castps_pd(v));
                _mm256_storeu_ps(out[1].add(8 * b), _mm256_castpd_ps(upper));
            }
            _ => {
                _mm_storeu_ps(out[0].add(4 * b), _mm512_castps512_ps128(v));
                _mm_storeu_ps(out[1].add(4 * b), _mm512_extractf32x4_ps::<1>(v));
                _mm_storeu_ps(out[2].add(4 * b), _mm512_extractf32x4_ps::<2>(v));
                if M == 4 {
                    _mm_storeu_ps(out[3].add(4 * b), _mm512_extractf32x4_ps::<3>(v));
                }
            }
        }
    }
}

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
                        // The rows hold the horizontal pass's bytes as i32 bits (`baseline::pil_byte`).
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

/// PIL's horizontal pass with whole weights (`plan::Whole`) over source rows `rows` into their
/// members' rows `out[i]` (PIL's bytes as i32 bits, `baseline::pil_byte`): per block and tap pair
/// one byte permute and one `pmaddubsw` for 32 outputs, then `⌊(2S + D) / 2D⌋` by a multiply-high
/// and a shift per lane. Blocks that are not whole are skipped (the caller makes them). Returns
/// the outputs each member has from the blocks, whole or not.
///
/// # Safety
/// The CPU has AVX-512 (F, BW, VL, VBMI); `out[i]` holds the group's members' rows (null past
/// them), each `plan.done` writable values.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi")]
pub(in crate::convert) unsafe fn whole(
    rows: &[&[u8]],
    plan: &Whole,
    out: &[[*mut f32; 4]],
    ahead: usize,
) -> usize {
    unsafe { whole_to::<false>(rows, plan, out, ahead) }
}

/// `whole` into rows of bytes (`baseline::pil8_row`), each block's window asked for again
/// `ahead` bytes on (`baseline::ahead_bytes`; 0: none).
///
/// # Safety
/// As `whole`, each row `plan.done` writable bytes.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi")]
pub(in crate::convert) unsafe fn whole_bytes(
    rows: &[&[u8]],
    plan: &Whole,
    out: &[[*mut u8; 4]],
    ahead: usize,
) -> usize {
    // The same pointers, cast back to bytes where the kernel stores.
    let out = unsafe { std::slice::from_raw_parts(out.as_ptr() as *const [*mut f32; 4], out.len()) };
    unsafe { whole_to::<true>(rows, plan, out, ahead) }
}

#[inline(always)]
unsafe fn whole_to<const BYTES: bool>(
    rows: &[&[u8]],
    plan: &Whole,
    out: &[[*mut f32; 4]],
    ahead: usize,
) -> usize {
    assert!(
        rows.len() == out.len() && rows.iter().all(|r| plan.reach <= r.len()),
        "loads stay inside the rows"
    );
    let members = out[0].iter().take_while(|p| !p.is_null()).count();
    macro_rules! by_rows {
        ($narrow:expr, $m:expr) => {
            match rows.len() {
                1 => whole_blocks::<$narrow, $m, 1, BYTES>(rows, plan, out, ahead),
                2 => whole_blocks::<$narrow, $m, 2, BYTES>(rows, plan, out, ahead),
                _ => whole_blocks::<$narrow, $m, 3, BYTES>(rows, plan, out, ahead),
            }
        };
    }
    macro_rules! go {
        ($narrow:expr) => {
            match members {
                1 => by_rows!($narrow, 1),
                2 => by_rows!($narrow, 2),
                3 => by_rows!($narrow, 3),
                _ => by_rows!($narrow, 4),
            }
        };
    }
    match plan.narrow {
        true => go!(true),
        false => go!(false),
    }
}

#[inline(always)]
unsafe fn whole_blocks<const NARROW: bool, const M: usize, const R: usize, const BYTES: bool>(
    rows: &[&[u8]],
    plan: &Whole,
    out: &[[*mut f32; 4]],
    ahead: usize,
) -> usize {
    assert!(rows.len() >= R && out.len() >= R && (1..=3).contains(&R));
    let pairs = plan.pairs;
    let blocks = plan.targets.len().min(plan.bases.len()).min(plan.whole.len());
    assert!(plan.ctl.len() >= blocks * pairs && plan.k.len() >= blocks * pairs);
    assert!(plan.d.len() >= blocks && plan.mul.len() >= blocks && plan.shift.len() >= blocks);
    let row: [*const u8; R] = std::array::from_fn(|i| rows[i].as_ptr());
    for b in 0..blocks {
        let base = *plan.bases.get_unchecked(b) as usize;
        // Every block's window, whole or not: the rows' lines in order, a few per block.
        if ahead != 0 {
            prefetch_window(&row, base + ahead, !NARROW);
        }
        if !*plan.whole.get_unchecked(b) {
            continue;
        }
        unsafe {
            let a: [__m512i; R] = std::array::from_fn(|i| _mm512_loadu_si512(row[i].add(base) as *const _));
            let c: [__m512i; R] = std::array::from_fn(|i| match NARROW {
                true => a[i],
                false => _mm512_loadu_si512(row[i].add(base + 64) as *const _),
            });
            let d = _mm512_load_si512(plan.d.as_ptr().add(b) as *const _);
            // Sums from `D` over twice the weights are `2S + D` (`Whole::k`).
            let mut s = [d; R];
            for p in 0..pairs {
                let at = b * pairs + p;
                let ctl = _mm512_load_si512(plan.ctl.as_ptr().add(at) as *const _);
                let k = _mm512_load_si512(plan.k.as_ptr().add(at) as *const _);
                for i in 0..R {
                    let t = match NARROW {
                        true => _mm512_permutexvar_epi8(ctl, a[i]),
                        false => _mm512_permutex2var_epi8(a[i], ctl, c[i]),
                    };
                    s[i] = _mm512_add_epi16(s[i], _mm512_maddubs_epi16(t, k));
                }
            }
            let mul = _mm512_load_si512(plan.mul.as_ptr().add(b) as *const _);
            let shift = _mm512_load_si512(plan.shift.as_ptr().add(b) as *const _);
            for i in 0..R {
                // 2S + D < 2^16 (`WHOLE_MAX`), then ⌊· / 2D⌋.
                let q = _mm512_srlv_epi16(_mm512_mulhi_epu16(s[i], mul), shift);
                if BYTES {
                    // 32 bytes, the lanes' eight each in order: stored by the same rule.
                    let v = _mm512_cvtepi16_epi8(q);
                    let o = |m: usize| out[i][m] as *mut u8;
                    match M {
                        1 => _mm256_storeu_si256(o(0).add(32 * b) as *mut __m256i, v),
                        2 => {
                            _mm_storeu_si128(o(0).add(16 * b) as *mut __m128i, _mm256_castsi256_si128(v));
                            _mm_storeu_si128(
                                o(1).add(16 * b) as *mut __m128i,
                                _mm256_extracti128_si256::<1>(v),
                            );
                        }
                        _ => {
                            let (lo, hi) = (_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
                            _mm_storel_epi64(o(0).add(8 * b) as *mut __m128i, lo);
                            _mm_storel_epi64(o(1).add(8 * b) as *mut __m128i, _mm_unpackhi_epi64(lo, lo));
                            _mm_storel_epi64(o(2).add(8 * b) as *mut __m128i, hi);
                            if M == 4 {
                                _mm_storel_epi64(o(3).add(8 * b) as *mut __m128i, _mm_unpackhi_epi64(hi, hi));
                            }
                        }
                    }
                    continue;
                }
                let lo = _mm512_cvtepu16_epi32(_mm512_castsi512_si256(q));
                let hi = _mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64::<1>(q));
                let (lo, hi) = (_mm512_castsi512_ps(lo), _mm512_castsi512_ps(hi));
                let out = out[i];
                // The lanes of `Whole::new`.
                match M {
                    1 => {
                        _mm512_storeu_ps(out[0].add(32 * b), lo);
                        _mm512_storeu_ps(out[0].add(32 * b + 16), hi);
                    }
                    2 => {
                        _mm512_storeu_ps(out[0].add(16 * b), lo);
                        _mm512_storeu_ps(out[1].add(16 * b), hi);
                    }
                    _ => {
                        let half = |v: __m512, h: bool| match h {
                            false => _mm512_castps512_ps256(v),
                            true => _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(v))),
                        };
                        _mm256_storeu_ps(out[0].add(8 * b), half(lo, false));
                        _mm256_storeu_ps(out[1].add(8 * b), half(lo, true));
                        _mm256_storeu_ps(out[2].add(8 * b), half(hi, false));
                        if M == 4 {
                            _mm256_storeu_ps(out[3].add(8 * b), half(hi, true));
                        }
                    }
                }
            }
        }
    }
    plan.done
}

/// PIL's vertical pass over rows of bytes (`baseline::pil8_row`) into a component's row (f32
/// values of PIL's bytes): with whole weights (`div`: `D`'s divider), 32 outputs per step in i16
/// (`Σ k · b` and `2S + D` fit: `plan::WHOLE_MAX`) and the multiply-high division; else PIL's
/// 2^-22 weights in i32, 16 per step. Returns the outputs it wrote (whole steps).
///
/// # Safety
/// The CPU has AVX-512 (F, BW); every row pointer is readable for `out.len()` bytes.
#[target_feature(enable = "avx512f,avx512bw")]
pub(in crate::convert) unsafe fn vertical_bytes(
    rows: &[*const u8],
    wi: &[i32],
    whole: Option<(&[i16], u8, (u16, u16))>,
    out: &mut [f32],
) -> usize {
    let o = out.as_mut_ptr();
    match whole {
        Some((k, d, (mul, shift))) => {
            let n = out.len() / 32 * 32;
            let rows = &rows[..k.len().min(rows.len())];
            let (d, mul, shift) = (d as i16, mul as i16, shift as i16);
            macro_rules! taps {
                ($($t:literal)*) => {
                    match rows.len() {
                        $($t => unsafe { vertical_whole::<$t>(rows, k, (d, mul, shift), o, n) },)*
                        _ => unsafe { vertical_whole_any(rows, k, (d, mul, shift), o, n) },
                    }
                };
            }
            taps!(1 2 3 4 5 6 7 8 9 10 11 12);
            n
        }
        None => {
            let n = out.len() / 16 * 16;
            let rows = &rows[..wi.len().min(rows.len())];
            let (half, zero, top) =
                (_mm512_set1_epi32(PIL_HALF), _mm512_setzero_si512(), _mm512_set1_epi32(255));
            for x in (0..n).step_by(16) {
                unsafe {
                    let mut a = half;
                    for (&r, &w) in rows.iter().zip(wi) {
                        let v = _mm512_cvtepu8_epi32(_mm_loadu_si128(r.add(x) as *const __m128i));
                        a = _mm512_add_epi32(a, _mm512_mullo_epi32(v, _mm512_set1_epi32(w)));
                    }
                    let s = _mm512_srai_epi32::<{ PIL_SHIFT }>(a);
                    _mm512_storeu_ps(
                        o.add(x),
                        _mm512_cvtepi32_ps(_mm512_min_epi32(_mm512_max_epi32(s, zero), top)),
                    );
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
/// slower in the converter, 1080p NV12 → 640 hot 0.386 → 0.414 ms (docs/benchmarks.md).
#[inline(always)]
unsafe fn vertical_whole<const N: usize>(
    rows: &[*const u8],
    k: &[i16],
    (d, mul, shift): (i16, i16, i16),
    o: *mut f32,
    n: usize,
) {
    let rows: [*const u8; N] = std::array::from_fn(|j| rows[j]);
    let kj: [__m512i; N] = std::array::from_fn(|j| _mm512_set1_epi16(2 * k[j]));
    let (d, mul, shift) = (_mm512_set1_epi16(d), _mm512_set1_epi16(mul), _mm512_set1_epi16(shift));
    for x in (0..n).step_by(32) {
        unsafe {
            let mut s = d;
            for j in 0..N {
                let v = _mm512_cvtepu8_epi16(_mm256_loadu_si256(rows[j].add(x) as *const __m256i));
                s = _mm512_add_epi16(s, _mm512_mullo_epi16(v, kj[j]));
            }
            whole_store(s, mul, shift, o.add(x));
        }
    }
}

/// `vertical_whole` for any number of rows.
#[inline(always)]
unsafe fn vertical_whole_any(
    rows: &[*const u8],
    k: &[i16],
    (d, mul, shift): (i16, i16, i16),
    o: *mut f32,
    n: usize,
) {
    let (d, mul, shift) = (_mm512_set1_epi16(d), _mm512_set1_epi16(mul), _mm512_set1_epi16(shift));
    for x in (0..n).step_by(32) {
        unsafe {
            let mut s = d;
            for (&r, &kj) in rows.iter().zip(k) {
                let v = _mm512_cvtepu8_epi16(_mm256_loadu_si256(r.add(x) as *const __m256i));
                s = _mm512_add_epi16(s, _mm512_mullo_epi16(v, _mm512_set1_epi16(2 * kj)));
            }
            whole_store(s, mul, shift, o.add(x));
        }
    }
}

/// PIL's byte of 32 whole-weight sums as `t = 2S + D` (`⌊t / 2D⌋` by the multiply-high division)
/// as floats at `o`.
#[inline(always)]
unsafe fn whole_store(t: __m512i, mul: __m512i, shift: __m512i, o: *mut f32) {
    let q = _mm512_srlv_epi16(_mm512_mulhi_epu16(t, mul), shift);
    let lo = _mm512_cvtepi32_ps(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(q)));
    let hi = _mm512_cvtepi32_ps(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64::<1>(q)));
    unsafe {
        _mm512_storeu_ps(o, lo);
        _mm512_storeu_ps(o.add(16), hi);
    }
}

/// A packed row (`plan::Compact`): `out[j] = row[from + 2j]` for `j < out.len()`, 64 bytes per
/// step from 128 by one `vpermt2b`, the last loads under masks; the lines `ahead` bytes on are
/// asked for as it goes (`baseline::ahead_bytes`; 0: none).
///
/// # Safety
/// The CPU has AVX-512 (F, BW, VBMI).
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
pub(in crate::convert) unsafe fn pack_bytes(row: &[u8], from: usize, out: &mut [u8], ahead: usize) {
    assert!(from + 2 * out.len() <= row.len() + 1, "the packed samples are in the row");
    let idx = _mm512_set_epi8(
        126, 124, 122, 120, 118, 116, 114, 112, 110, 108, 106, 104, 102, 100, 98, 96, 94, 92, 90, 88, 86, 84,
        82, 80, 78, 76, 74, 72, 70, 68, 66, 64, 62, 60, 58, 56, 54, 52, 50, 48, 46, 44, 42, 40, 38, 36, 34,
        32, 30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0,
    );
    let mask = |at: usize| -> __mmask64 {
        match row.len().saturating_sub(at) {
            n if n >= 64 => u64::MAX,
            n => (1u64 << n) - 1,
        }
    };
    let mut j = 0;
    // Whole steps unmasked (the masks' arithmetic per step measured a quarter of a YUY2 frame).
    while j + 64 <= out.len() && from + 2 * j + 128 <= row.len() {
        unsafe {
            let at = row.as_ptr().add(from + 2 * j);
            if ahead != 0 {
                prefetch_window(&[at], ahead, true);
            }
            let v = _mm512_permutex2var_epi8(
                _mm512_loadu_si512(at as *const _),
                idx,
                _mm512_loadu_si512(at.add(64) as *const _),
            );
            _mm512_storeu_si512(out.as_mut_ptr().add(j) as *mut _, v);
        }
        j += 64;
    }
    for j in (j..out.len()).step_by(64) {
        unsafe {
            let at = from + 2 * j;
            let a = _mm512_maskz_loadu_epi8(mask(at), row.as_ptr().wrapping_add(at) as *const i8);
            let b = _mm512_maskz_loadu_epi8(mask(at + 64), row.as_ptr().wrapping_add(at + 64) as *const i8);
            let v = _mm512_permutex2var_epi8(a, idx, b);
            let left = out.len() - j;
            let keep: __mmask64 = if left >= 64 { u64::MAX } else { (1u64 << left) - 1 };
            _mm512_mask_storeu_epi8(out.as_mut_ptr().add(j) as *mut i8, keep, v);
        }
    }
}

#[cfg(test)]
mod tests {
    /// The vertical pass with whole weights gives PIL's byte, `⌊(Σ wi · b + 2^21) / 2^22⌋` with
    /// `wi = 2^22 k / D` rounded (`weights::pil_whole`), for 3×'s and 2.5×'s triangles, weights
    /// whose double passes a signed byte (`pmullw`'s low half), one to twelve rows, and lengths
    /// around the 32-output step.
    #[test]
    fn vertical_whole_gives_pils_bytes() {
        if !std::is_x86_feature_detected!("avx512bw") {
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
                let done = unsafe { super::vertical_bytes(&at, &[], Some((k, d as u8, div)), &mut out) };
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
