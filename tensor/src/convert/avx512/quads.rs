//! The AVX-512 level's exact box straight from the frame's rows where the CPU has VNNI
//! (`plan::Quads`): per block, source row and quad one `vpermb` and one `vpdpbusd`.

#![allow(clippy::needless_range_loop)]

use super::taps::store_lanes;
use crate::convert::hint::{once_by_nta, prefetch_window_once};
use crate::convert::plan::{Quads, ROWS_FOLD as FOLD, ROWS_ONE as ONE, ROWS_TIMES as TIMES};
use std::arch::x86_64::*;

/// The CPU has `vpdpbusd` (AVX512_VNNI) beside the level's own features, and
/// `EDGEFIRST_CONVERT_VNNI` is not `0` (to compare with the rows-first blocks).
pub(in crate::convert) fn vnni() -> bool {
    std::is_x86_feature_detected!("avx512vnni")
        && std::env::var("EDGEFIRST_CONVERT_VNNI").as_deref() != Ok("0")
}

/// `M` of the five-output lanes (`Quads::five`).
const FIVE: usize = 5;

/// Output row sums `Σ_r k[r] Σ_t k_x[t] · rows[r][t]` of `plan`'s blocks, times `inv`, into the
/// members' rows `out` (null past them) by the lanes' rule of `multitap`, asking for the lines
/// `ahead` through the blocks. Two to four rows (the 1.5×–4× downscales); returns `None` for
/// others, else the outputs each member has.
///
/// # Safety
/// The CPU has AVX-512 (F, BW, VL, VBMI) and VNNI; each of `rows` holds `plan.reach` readable
/// bytes; `out` holds the group's members' rows, each `plan.done` writable values.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vnni")]
pub(in crate::convert) unsafe fn box_quads<O: Put>(
    rows: &[*const u8],
    k: &[i16],
    plan: &Quads,
    inv: f32,
    out: &[*mut O; 4],
    ahead: usize,
) -> Option<usize> {
    if rows.len() != k.len() || !(2..=4).contains(&rows.len()) {
        return None;
    }
    let members = out.iter().take_while(|p| !p.is_null()).count();
    // Each row's weight times the tables' still a signed byte (`vpdpbusd`'s): folded into the
    // held table, instead of each row's sums times its weight (`vpmulld`). Engine, uint8 `area`,
    // Zen 4, hot, three alternations (ms): NV12 1080p 0.189–0.190 → 0.179–0.186 (its chroma rows
    // at 1.5×), NV12 900p 0.190–0.193 → 0.179–0.185, YUY2 900p 0.233 → 0.221–0.223, RGBA 900p
    // 0.215–0.240 → 0.210–0.214; YUY2 1080p (every weight 1) level. The same integers either way.
    let weights = plan.row_weights(k, 127);
    let nta = once_by_nta();
    macro_rules! by_ask {
        ($r:expr, $one:expr, $m:expr, $narrow:expr, $q:expr) => {
            match ahead == 0 {
                true => quads_of::<O, $r, $one, $m, $narrow, $q, false>(rows, k, plan, inv, out, ahead, nta),
                false => quads_of::<O, $r, $one, $m, $narrow, $q, true>(rows, k, plan, inv, out, ahead, nta),
            }
        };
    }
    macro_rules! by_quads {
        ($r:expr, $one:expr, $m:expr) => {
            match (plan.narrow, plan.quads == 1) {
                (true, true) => by_ask!($r, $one, $m, true, 1),
                (true, false) => by_ask!($r, $one, $m, true, 0),
                (false, true) => by_ask!($r, $one, $m, false, 1),
                (false, false) => by_ask!($r, $one, $m, false, 0),
            }
        };
    }
    macro_rules! by_members {
        ($r:expr, $one:expr) => {
            match if plan.five { FIVE } else { members } {
                FIVE => by_quads!($r, $one, FIVE),
                1 => by_quads!($r, $one, 1),
                2 => by_quads!($r, $one, 2),
                3 => by_quads!($r, $one, 3),
                _ => by_quads!($r, $one, 4),
            }
        };
    }
    macro_rules! by_weights {
        ($r:expr) => {
            match weights {
                ONE => by_members!($r, ONE),
                FOLD => by_members!($r, FOLD),
                _ => by_members!($r, TIMES),
            }
        };
    }
    match rows.len() {
        2 => by_weights!(2),
        3 => by_weights!(3),
        _ => by_weights!(4),
    }
    Some(plan.done)
}

/// `box_quads` over `R` rows weighted as `W` says (`ONE`, `FOLD`, `TIMES`), for `M` members,
/// windows of 64 bytes (`NARROW`) or 128, `Q` quads a block (0: `plan.quads`), asking for lines
/// (`ASK`) or not.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx512vnni")]
#[inline(never)]
unsafe fn quads_of<
    O: Put,
    const R: usize,
    const W: u8,
    const M: usize,
    const NARROW: bool,
    const Q: usize,
    const ASK: bool,
>(
    rows: &[*const u8],
    k: &[i16],
    plan: &Quads,
    inv: f32,
    out: &[*mut O; 4],
    ahead: usize,
    nta: bool,
) {
    let quads = if Q > 0 { Q } else { plan.quads };
    let blocks = plan.bases.len();
    let tables = plan.ctl.len().min(plan.k.len()) / quads;
    assert!(plan.table.len() >= blocks && (blocks == 0 || tables > 0));
    // Each block's table kept among them where it is read (a compare), not every table checked
    // on every call (as `taps::whole_blocks`): engine, uint8 `area`, 8 rotating frames, two
    // builds alternated, RGBA 0.342–0.346 → 0.330–0.335 ms, 900p 0.261–0.262 → 0.247, NV12
    // 0.204–0.211 → 0.190–0.191, YUY2 0.270–0.275 → 0.261–0.267.
    debug_assert!(plan.table[..blocks].iter().all(|&t| (t as usize) < tables));
    assert!(rows.len() >= R);
    let row: [*const u8; R] = std::array::from_fn(|r| rows[r]);
    let kr: [__m512i; R] = std::array::from_fn(|r| _mm512_set1_epi32(i32::from(k[r])));
    // `FOLD`: the held table's weights times each row's, bytewise by 16-bit products (no byte
    // carries: every product is under 128).
    let mut wr = [_mm512_setzero_si512(); R];
    let kw: [__m512i; R] = std::array::from_fn(|r| _mm512_set1_epi16(k[r]));
    let inv = _mm512_set1_ps(inv);
    // One quad a block: its table held while the blocks share it.
    let (mut held, mut ctl, mut w) = (usize::MAX, _mm512_setzero_si512(), _mm512_setzero_si512());
    for b in 0..blocks {
        let base = *plan.bases.get_unchecked(b) as usize;
        let tb = (*plan.table.get_unchecked(b) as usize).min(tables - 1);
        if ASK {
            // NTA on Zen 5, not `prefetch`'s T1: each line is summed for one output row (two at
            // most, at 1.5×). Engine, uint8 `area`, Zen 5, T1 → NTA, best of 80, alternated
            // twice: RGBA on 8 rotating frames 0.265–0.280 → 0.247–0.255 ms, on 32 0.358–0.391 →
            // 0.346–0.352, YUY2 on 32 0.211–0.224 → 0.196–0.199; NV12, hot frames and 900p level.
            // On Intel NTA made every frame 2–3.5× slower, on Zen 4 up to 2× (`once_by_nta`).
            prefetch_window_once(&row, base + ahead, !NARROW, nta);
        }
        let window: [__m512i; R] = std::array::from_fn(|r| _mm512_loadu_si512(row[r].add(base) as *const _));
        let upper: [__m512i; R] = std::array::from_fn(|r| match NARROW {
            true => window[r],
            false => _mm512_loadu_si512(row[r].add(base + 64) as *const _),
        });
        let pick = |ctl: __m512i, r: usize| match NARROW {
            true => _mm512_permutexvar_epi8(ctl, window[r]),
            false => _mm512_permutex2var_epi8(window[r], ctl, upper[r]),
        };
        let mut acc = _mm512_setzero_si512();
        if Q == 1 {
            if tb != held {
                (ctl, w) = (
                    _mm512_load_si512(plan.ctl.as_ptr().add(tb) as *const _),
                    _mm512_load_si512(plan.k.as_ptr().add(tb) as *const _),
                );
                if W == FOLD {
                    for r in 0..R {
                        wr[r] = _mm512_mullo_epi16(w, kw[r]);
                    }
                }
                held = tb;
            }
            for r in 0..R {
                let t = pick(ctl, r);
                match W {
                    ONE => acc = _mm512_dpbusd_epi32(acc, t, w),
                    FOLD => acc = _mm512_dpbusd_epi32(acc, t, wr[r]),
                    _ => {
                        let h = _mm512_dpbusd_epi32(_mm512_setzero_si512(), t, w);
                        acc = _mm512_add_epi32(acc, _mm512_mullo_epi32(h, kr[r]));
                    }
                }
            }
        } else {
            for r in 0..R {
                let mut h = _mm512_setzero_si512();
                for q in 0..quads {
                    let at = tb * quads + q;
                    let ctl = _mm512_load_si512(plan.ctl.as_ptr().add(at) as *const _);
                    let w = _mm512_load_si512(plan.k.as_ptr().add(at) as *const _);
                    h = _mm512_dpbusd_epi32(h, pick(ctl, r), w);
                }
                acc = match W {
                    ONE => _mm512_add_epi32(acc, h),
                    _ => _mm512_add_epi32(acc, _mm512_mullo_epi32(h, kr[r])),
                };
            }
        }
        let v = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), inv);
        match M {
            FIVE => O::five(out, b, v),
            _ => O::lanes::<M>(out, b, v),
        }
    }
}

/// Where the quads' sixteen values go: the components' f32 rows, or (`u8`) the 8-bit output's
/// bytes as the finish would round them (`avx512::finish_bytes`).
pub(in crate::convert) trait Put: crate::convert::multitap::Sample {
    /// Each of three members' five values (`Quads::five`) where they go in its row.
    unsafe fn five(out: &[*mut Self; 4], b: usize, v: __m512);
    /// The values by the lanes of `store_lanes`.
    unsafe fn lanes<const M: usize>(out: &[*mut Self; 4], b: usize, v: __m512);
}

impl Put for f32 {
    #[inline(always)]
    unsafe fn five(out: &[*mut f32; 4], b: usize, v: __m512) {
        // The mask picks each member's five (the lanes before them fall before the address,
        // under the mask: never written).
        unsafe {
            _mm512_mask_storeu_ps(out[0].add(5 * b), 0x1f, v);
            _mm512_mask_storeu_ps(out[1].add(5 * b).wrapping_sub(5), 0x1f << 5, v);
            _mm512_mask_storeu_ps(out[2].add(5 * b).wrapping_sub(10), 0x1f << 10, v);
        }
    }
    #[inline(always)]
    unsafe fn lanes<const M: usize>(out: &[*mut f32; 4], b: usize, v: __m512) {
        unsafe { store_lanes::<M>(out, b, v) }
    }
}

impl Put for u8 {
    #[inline(always)]
    unsafe fn five(out: &[*mut u8; 4], b: usize, v: __m512) {
        // Nearest, ties to even (the rounding mode the finish's `cvtps2dq` runs under), then
        // saturated to bytes (the sums are not negative).
        let q = _mm512_cvtusepi32_epi8(_mm512_cvtps_epi32(v));
        unsafe {
            _mm_mask_storeu_epi8(out[0].add(5 * b) as *mut i8, 0x1f, q);
            _mm_mask_storeu_epi8(out[1].add(5 * b).wrapping_sub(5) as *mut i8, 0x1f << 5, q);
            _mm_mask_storeu_epi8(out[2].add(5 * b).wrapping_sub(10) as *mut i8, 0x1f << 10, q);
        }
    }
    #[inline(always)]
    unsafe fn lanes<const M: usize>(out: &[*mut u8; 4], b: usize, v: __m512) {
        let q = _mm512_cvtusepi32_epi8(_mm512_cvtps_epi32(v));
        unsafe {
            match M {
                1 => _mm_storeu_si128(out[0].add(16 * b) as *mut __m128i, q),
                2 => {
                    _mm_storel_epi64(out[0].add(8 * b) as *mut __m128i, q);
                    _mm_storel_epi64(out[1].add(8 * b) as *mut __m128i, _mm_unpackhi_epi64(q, q));
                }
                _ => {
                    let words = [
                        _mm_cvtsi128_si32(q),
                        _mm_extract_epi32::<1>(q),
                        _mm_extract_epi32::<2>(q),
                        _mm_extract_epi32::<3>(q),
                    ];
                    for m in 0..M.min(4) {
                        (out[m].add(4 * b) as *mut i32).write_unaligned(words[m]);
                    }
                }
            }
        }
    }
}
