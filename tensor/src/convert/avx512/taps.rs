//! The AVX-512 level's multi-tap kernels (`area`, `bilinear-antialias`, the bicubics): the
//! horizontal blocks over bytes (2^-22 and 2^-14 weights in dword lanes), PIL's whole weights in
//! word lanes, and the packed rows; the vertical passes are in `vertical.rs`, an exact box's row
//! sums and the blocks across them in `boxes.rs`.

#![allow(clippy::needless_range_loop)]

use super::{pick_two, second_window};
use crate::convert::hint::{prefetch_window, prefetch_window_near, whole_near};
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

/// `multitap` for PIL's filters into rows of bytes (`multitap::pil8_row`).
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

/// Unoptimized, a function of its own per case (inlined, the cases gave `multitap` a 0.27 MB
/// frame; as `whole_blocks`).
#[cfg_attr(debug_assertions, inline(never))]
#[cfg_attr(not(debug_assertions), inline(always))]
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
                        // As i32 bits (see `multitap::pil_byte`).
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

/// PIL's horizontal pass with whole weights (`plan::Whole`) over source rows `rows` into their
/// members' rows of bytes `out[i]` (`multitap::pil8_row`): per block and tap pair a byte
/// permute (`vpermb`; a held table's two windows by `pick_two`) and one `pmaddubsw` for 32
/// outputs, then `⌊(2S + D) / 2D⌋` by a multiply-high and a shift per lane; each block's window asked for again `ahead` bytes on
/// (`multitap::ahead_bytes`; 0: none). Blocks that are not whole are skipped (the caller makes
/// them). Returns the outputs each member has from the blocks, whole or not.
///
/// # Safety
/// The CPU has AVX-512 (F, BW, VL, VBMI); `out[i]` holds the group's members' rows (null past
/// them), each `plan.done` writable bytes.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi")]
pub(in crate::convert) unsafe fn whole_bytes(
    rows: &[&[u8]],
    plan: &Whole,
    out: &[[*mut u8; 4]],
    ahead: usize,
) -> usize {
    assert!(
        rows.len() == out.len() && rows.iter().all(|r| plan.reach <= r.len()),
        "loads stay inside the rows"
    );
    let members = out[0].iter().take_while(|p| !p.is_null()).count();
    let lanes = match (plan.ten, plan.interleaved) {
        (true, true) => PIXELS,
        (true, false) => TEN,
        (false, _) => members,
    };
    macro_rules! by_rows {
        ($narrow:expr, $m:expr) => {
            match rows.len() {
                1 => unsafe { whole_blocks::<$narrow, $m, 1>(rows, plan, out, ahead) },
                2 => unsafe { whole_blocks::<$narrow, $m, 2>(rows, plan, out, ahead) },
                _ => unsafe { whole_blocks::<$narrow, $m, 3>(rows, plan, out, ahead) },
            }
        };
    }
    macro_rules! go {
        ($narrow:expr) => {
            match lanes {
                TEN => by_rows!($narrow, TEN),
                PIXELS => by_rows!($narrow, PIXELS),
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

/// `M` of the ten-output lanes (`Whole::ten`).
const TEN: usize = 10;

/// `M` of the ten-output lanes with the members interleaved (`Whole::ten_interleaved`): one row,
/// 30 bytes a block.
const PIXELS: usize = 30;

/// `whole_bytes` for `R` rows of `M` members (`TEN`: the ten-output lanes), windows of 64 bytes
/// where `NARROW`. Unoptimized, a function of its own per case: inlined, the cases gave
/// `whole_bytes` a 2 MB frame, past a test thread's stack. (Optimized, inlined: as a function
/// of its own with the level's features, 1080p YUY2 `bilinear-antialias` took 14 % longer.)
#[cfg_attr(debug_assertions, inline(never))]
#[cfg_attr(not(debug_assertions), inline(always))]
unsafe fn whole_blocks<const NARROW: bool, const M: usize, const R: usize>(
    rows: &[&[u8]],
    plan: &Whole,
    out: &[[*mut u8; 4]],
    ahead: usize,
) -> usize {
    assert!(rows.len() >= R && out.len() >= R && (1..=3).contains(&R));
    let pairs = plan.pairs;
    let blocks = plan.bases.len().min(plan.plain.len());
    let tables = plan.tables();
    assert!(
        plan.ctl.len() >= tables * pairs && plan.k.len() >= tables * pairs && plan.n.len() >= tables * pairs
    );
    assert!(
        plan.table.len() >= blocks && (blocks == 0 || tables > 0) && (plan.tied.is_empty() || blocks > 0)
    );
    // Each block's table and each tied block are kept in range where they are read
    // (`Whole::table_of`, `tied_block`: a compare each) rather than every table checked on every
    // call, which was 1.5 % of the 1080p NV12 `bilinear-antialias` frame (8 frames 0.263–0.277 →
    // 0.260–0.268 ms).
    debug_assert!(plan.table[..blocks].iter().all(|&t| (t as usize) < tables));
    debug_assert!(plan.tied.iter().all(|&b| (b as usize) < blocks), "tied blocks are blocks");
    let row: [*const u8; R] = std::array::from_fn(|i| rows[i].as_ptr());
    // Asks: none, by T1, or by T0 (`whole_near`).
    let ask = if ahead == 0 {
        0
    } else if whole_near() {
        2
    } else {
        1
    };
    match (pairs, ask) {
        (2, 0) => plain_blocks::<NARROW, M, R, 2, 0>(&row, plan, out, ahead, blocks),
        (3, 0) => plain_blocks::<NARROW, M, R, 3, 0>(&row, plan, out, ahead, blocks),
        (4, 0) => plain_blocks::<NARROW, M, R, 4, 0>(&row, plan, out, ahead, blocks),
        (_, 0) => plain_blocks::<NARROW, M, R, 0, 0>(&row, plan, out, ahead, blocks),
        (2, 1) => plain_blocks::<NARROW, M, R, 2, 1>(&row, plan, out, ahead, blocks),
        (3, 1) => plain_blocks::<NARROW, M, R, 3, 1>(&row, plan, out, ahead, blocks),
        (4, 1) => plain_blocks::<NARROW, M, R, 4, 1>(&row, plan, out, ahead, blocks),
        (_, 1) => plain_blocks::<NARROW, M, R, 0, 1>(&row, plan, out, ahead, blocks),
        (2, _) => plain_blocks::<NARROW, M, R, 2, 2>(&row, plan, out, ahead, blocks),
        (3, _) => plain_blocks::<NARROW, M, R, 3, 2>(&row, plan, out, ahead, blocks),
        (4, _) => plain_blocks::<NARROW, M, R, 4, 2>(&row, plan, out, ahead, blocks),
        (_, _) => plain_blocks::<NARROW, M, R, 0, 2>(&row, plan, out, ahead, blocks),
    }
    // The tied blocks after the others, so that those test nothing per block: tested in the
    // loop above (2.5×'s two edge blocks tied in a row of 20), 900p RGBA antialias went 0.569 →
    // 0.587 ms (8 frames), 0.500 → 0.520 hot.
    match pairs {
        2 => tied_blocks::<NARROW, M, R, 2>(&row, plan, out, blocks),
        3 => tied_blocks::<NARROW, M, R, 3>(&row, plan, out, blocks),
        4 => tied_blocks::<NARROW, M, R, 4>(&row, plan, out, blocks),
        _ => {
            for &b in &plan.tied {
                whole_block::<NARROW, M, R, true>(&row, plan, out, tied_block(b, blocks));
            }
        }
    }
    plan.done
}

/// The plain blocks (whole, no ties) of `whole_blocks`, the first `blocks`, asking for every
/// block's window `ahead` bytes on (`ASK`: 0 none, 1 by T1, 2 by T0:
/// `hint::prefetch_window_near`) with no test a block: the two tests a block (whether to ask,
/// which hint) were 3 % of 1080p NV12 `bilinear-antialias` (engine, Intel Xeon, alternated four
/// times: hot 0.270-0.273 -> 0.263-0.266 ms, 8 rotating frames 0.273-0.286 -> 0.266-0.267).
/// With `P` pairs (not 0: `plan.pairs`), a table is held in
/// registers while the blocks share it (`Whole::table`): loaded for each block, the table's
/// nine vectors (three pairs) took a fixed 1.7 ns a block against 1 ns a block and row for the
/// rest (three rows in L1, 3× gray), and in L1 the blocks went 1.54 → 1.34 ns a block and row
/// (gray), 2.32 → 1.81 (RGBA's ten-output lanes). Engine, uint8 `bilinear-antialias`, Zen 5,
/// best of 80, alternated three times: NV12 hot 0.191–0.195 → 0.168–0.172 ms, 8 rotating
/// frames 0.197–0.204 → 0.175–0.183; YUY2 hot 0.282–0.283 → 0.249–0.264; RGBA hot 0.286–0.300
/// → 0.248–0.261 (RGBA on 8 and 32 frames, which wait on memory, within the noise).
#[inline(always)]
unsafe fn plain_blocks<const NARROW: bool, const M: usize, const R: usize, const P: usize, const ASK: u8>(
    row: &[*const u8; R],
    plan: &Whole,
    out: &[[*mut u8; 4]],
    ahead: usize,
    blocks: usize,
) {
    let mut held = (usize::MAX, Held::<P>::EMPTY);
    for b in 0..blocks {
        let base = *plan.bases.get_unchecked(b) as usize;
        // Every block's window, whole or not: the rows' lines in order, a few per block.
        if ASK != 0 {
            prefetch_window_near(row, base + ahead, !NARROW, ASK == 2);
        }
        if *plan.plain.get_unchecked(b) {
            if P == 0 {
                whole_block::<NARROW, M, R, false>(row, plan, out, b);
                continue;
            }
            let t = plan.table_of(b);
            if t != held.0 {
                held = (t, Held::<P>::load::<false>(plan, t));
            }
            whole_block_held::<NARROW, M, R, P, false>(row, &held.1, out, b, base);
        }
    }
}

/// The tied blocks of `whole_blocks` (`Whole::tied`) through a table held in registers while
/// they share it, their remainders' weights too: at 1.25× (900p's chroma) every block of a row
/// is tied. Engine, uint8 `bilinear-antialias`, 1600×900, Zen 5, best of 60 alternated four
/// times, hot: NV12 0.180–0.182 → 0.176–0.177 ms, YUY2 0.244–0.247 → 0.234–0.243, RGBA
/// 0.211–0.228 → 0.204–0.208 (8 frames: 0.180–0.184 → 0.177–0.180, 0.251–0.263 → 0.251–0.260,
/// 0.220–0.228 → 0.207–0.215).
#[inline(always)]
unsafe fn tied_blocks<const NARROW: bool, const M: usize, const R: usize, const P: usize>(
    row: &[*const u8; R],
    plan: &Whole,
    out: &[[*mut u8; 4]],
    blocks: usize,
) {
    let mut held = (usize::MAX, Held::<P>::EMPTY);
    for &b in &plan.tied {
        let b = tied_block(b, blocks);
        let t = plan.table_of(b);
        if t != held.0 {
            held = (t, Held::<P>::load::<true>(plan, t));
        }
        whole_block_held::<NARROW, M, R, P, true>(
            row,
            &held.1,
            out,
            b,
            *plan.bases.get_unchecked(b) as usize,
        );
    }
}

/// Each row's window from byte `base`: its first 64 bytes and (not `NARROW`) the next 64.
#[inline(always)]
unsafe fn windows<const NARROW: bool, const R: usize>(
    row: &[*const u8; R],
    base: usize,
) -> ([__m512i; R], [__m512i; R]) {
    // Loops, not `from_fn`: where LLVM left its closures out of line, each load ran as a call
    // without the level's features (a change to `whole_blocks` that moved its loop into a
    // function of its own did that to the NV12 instances: 1080p `bilinear-antialias` 0.41 ms
    // against 0.16).
    let (mut a, mut c) = ([_mm512_setzero_si512(); R], [_mm512_setzero_si512(); R]);
    for i in 0..R {
        unsafe {
            a[i] = _mm512_loadu_si512(row[i].add(base) as *const _);
            c[i] = match NARROW {
                true => a[i],
                false => _mm512_loadu_si512(row[i].add(base + 64) as *const _),
            };
        }
    }
    (a, c)
}

/// Tied block `b` (`Whole::tied`) kept among the `blocks` (as `Whole::table_of`).
#[inline(always)]
fn tied_block(b: u32, blocks: usize) -> usize {
    (b as usize).min(blocks - 1)
}

/// Block `b` of `whole_blocks` over rows `row`, with the ties' remainders where `TIE`.
#[inline(always)]
unsafe fn whole_block<const NARROW: bool, const M: usize, const R: usize, const TIE: bool>(
    row: &[*const u8; R],
    plan: &Whole,
    out: &[[*mut u8; 4]],
    b: usize,
) {
    let pairs = plan.pairs;
    let base = *plan.bases.get_unchecked(b) as usize;
    let t = plan.table_of(b);
    unsafe {
        let (a, c) = windows::<NARROW, R>(row, base);
        let d = _mm512_load_si512(plan.d.as_ptr().add(t) as *const _);
        // Sums from `D` over twice the weights are `2S + D` (`Whole::k`); with ties, the
        // remainders' sums beside them (`Whole::n`).
        let mut s = [d; R];
        let mut e = [_mm512_setzero_si512(); R];
        for p in 0..pairs {
            let at = t * pairs + p;
            let ctl = _mm512_load_si512(plan.ctl.as_ptr().add(at) as *const _);
            let k = _mm512_load_si512(plan.k.as_ptr().add(at) as *const _);
            for i in 0..R {
                let t = match NARROW {
                    true => _mm512_permutexvar_epi8(ctl, a[i]),
                    false => _mm512_permutex2var_epi8(a[i], ctl, c[i]),
                };
                s[i] = _mm512_add_epi16(s[i], _mm512_maddubs_epi16(t, k));
                if TIE {
                    let n = _mm512_load_si512(plan.n.as_ptr().add(at) as *const _);
                    e[i] = _mm512_add_epi16(e[i], _mm512_maddubs_epi16(t, n));
                }
            }
        }
        let mul = _mm512_load_si512(plan.mul.as_ptr().add(t) as *const _);
        let shift = _mm512_load_si512(plan.shift.as_ptr().add(t) as *const _);
        for i in 0..R {
            // 2S + D < 2^16 (`WHOLE_MAX`), then ⌊· / 2D⌋.
            let t = if TIE { tie_sum(s[i], e[i]) } else { s[i] };
            store_whole::<M>(_mm512_srlv_epi16(_mm512_mulhi_epu16(t, mul), shift), &out[i], b);
        }
    }
}

/// `2S + D` (`s`) of tied weights less two where the remainders' sum `e` is negative: its
/// quotient by `2D` is PIL's byte (`weights::pil_tied`). Two operations where the tie was
/// tested on the quotient (a multiply, two compares and a masked subtract after the division's
/// latency).
#[inline(always)]
pub(super) unsafe fn tie_sum(s: __m512i, e: __m512i) -> __m512i {
    _mm512_mask_sub_epi16(s, _mm512_movepi16_mask(e), s, _mm512_set1_epi16(2))
}

/// Block `b`'s 32 quotients (words) into its members' rows of bytes `out`, by the lanes of
/// `Whole::new` or `Whole::ten` (`M` = `TEN`).
#[inline(always)]
unsafe fn store_whole<const M: usize>(q: __m512i, out: &[*mut u8; 4], b: usize) {
    unsafe {
        // 32 bytes, the lanes' eight each in order: stored by the same rule. The words' low
        // bytes by one `vpermb`, not `vpmovwb` (two operations on the permute port, which the
        // blocks' `vpermb`s keep busy): engine, 1080p NV12 `bilinear-antialias`, alternated
        // four times, hot 0.264-0.276 -> 0.262-0.268 ms and 0.293-0.297 -> 0.288-0.292, 8
        // frames 0.271-0.276 -> 0.267-0.270; YUY2, RGBA, 900p level. (The second member's half
        // by a masked store instead of an extract, and two rows' bytes by one `vpermt2b`, the
        // second row's half by a masked store: level.)
        let v = _mm512_castsi512_si256(_mm512_permutexvar_epi8(even_bytes(), q));
        let o = |m: usize| out[m];
        match M {
            // Each member's ten bytes where they go in its row, the mask picking them.
            TEN => {
                let o = |m: usize| o(m).add(10 * b).wrapping_sub(10 * m) as *mut i8;
                _mm256_mask_storeu_epi8(o(0), 0x3ff, v);
                _mm256_mask_storeu_epi8(o(1), 0x3ff << 10, v);
                _mm256_mask_storeu_epi8(o(2), 0x3ff << 20, v);
            }
            // The ten pixels' 30 bytes in order: one store where the members took three (1080p
            // RGBA → RGB `bilinear-antialias` on a hot frame: that plan with two of its three
            // stores taken out ran 0.244 → 0.221 ms).
            PIXELS => _mm256_mask_storeu_epi8(o(0).add(30 * b) as *mut i8, (1 << 30) - 1, v),
            1 => _mm256_storeu_si256(o(0).add(32 * b) as *mut __m256i, v),
            2 => {
                _mm_storeu_si128(o(0).add(16 * b) as *mut __m128i, _mm256_castsi256_si128(v));
                _mm_storeu_si128(o(1).add(16 * b) as *mut __m128i, _mm256_extracti128_si256::<1>(v));
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
    }
}

/// A table of `Whole::table` in registers: `P` pairs' controls and weights (and the remainders'
/// weights, for tied blocks), `D`, the multiplier and the shift.
#[derive(Clone, Copy)]
struct Held<const P: usize> {
    ctl: [__m512i; P],
    /// Per pair, the bytes whose control picks from the second window (its bit 6).
    hi: [__mmask64; P],
    k: [__m512i; P],
    n: [__m512i; P],
    d: __m512i,
    mul: __m512i,
    shift: __m512i,
}

impl<const P: usize> Held<P> {
    const EMPTY: Held<P> = {
        // (All-zero bits are a vector of zeros.)
        let zero = unsafe { std::mem::zeroed::<__m512i>() };
        Held { ctl: [zero; P], hi: [0; P], k: [zero; P], n: [zero; P], d: zero, mul: zero, shift: zero }
    };

    /// Table `t` of `plan` (whose pairs are `P`), with the remainders' weights where `TIE`.
    #[inline(always)]
    unsafe fn load<const TIE: bool>(plan: &Whole, t: usize) -> Held<P> {
        unsafe {
            let mut held = Held {
                d: _mm512_load_si512(plan.d.as_ptr().add(t) as *const _),
                mul: _mm512_load_si512(plan.mul.as_ptr().add(t) as *const _),
                shift: _mm512_load_si512(plan.shift.as_ptr().add(t) as *const _),
                ..Self::EMPTY
            };
            // Loops, not `from_fn` (its closures' intrinsics ran as calls).
            for p in 0..P {
                held.ctl[p] = _mm512_load_si512(plan.ctl.as_ptr().add(t * P + p) as *const _);
                held.hi[p] = second_window(held.ctl[p]);
                held.k[p] = _mm512_load_si512(plan.k.as_ptr().add(t * P + p) as *const _);
                if TIE {
                    held.n[p] = _mm512_load_si512(plan.n.as_ptr().add(t * P + p) as *const _);
                }
            }
            held
        }
    }
}

/// A block of `whole_blocks` through a table held in registers (`P` pairs), with the ties'
/// remainders where `TIE` (as `whole_block`).
#[inline(always)]
unsafe fn whole_block_held<
    const NARROW: bool,
    const M: usize,
    const R: usize,
    const P: usize,
    const TIE: bool,
>(
    row: &[*const u8; R],
    held: &Held<P>,
    out: &[[*mut u8; 4]],
    b: usize,
    base: usize,
) {
    unsafe {
        let (a, c) = windows::<NARROW, R>(row, base);
        let mut s = [held.d; R];
        let mut e = [_mm512_setzero_si512(); R];
        for p in 0..P {
            for i in 0..R {
                let t = match NARROW {
                    true => _mm512_permutexvar_epi8(held.ctl[p], a[i]),
                    false => pick_two(a[i], c[i], held.ctl[p], held.hi[p]),
                };
                s[i] = _mm512_add_epi16(s[i], _mm512_maddubs_epi16(t, held.k[p]));
                if TIE {
                    e[i] = _mm512_add_epi16(e[i], _mm512_maddubs_epi16(t, held.n[p]));
                }
            }
        }
        for i in 0..R {
            let t = if TIE { tie_sum(s[i], e[i]) } else { s[i] };
            store_whole::<M>(_mm512_srlv_epi16(_mm512_mulhi_epu16(t, held.mul), held.shift), &out[i], b);
        }
    }
}

/// A packed row (`plan::Compact`): `out[j] = row[from + 2j]` for `j < out.len()`, 64 bytes per
/// step from 128 by one `vpermt2b`, the last loads under masks; the lines `ahead` bytes on are
/// asked for as it goes (`multitap::ahead_bytes`; 0: none).
///
/// # Safety
/// The CPU has AVX-512 (F, BW, VBMI).
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
pub(in crate::convert) unsafe fn pack_bytes(row: &[u8], from: usize, out: &mut [u8], ahead: usize) {
    assert!(from + 2 * out.len() <= row.len() + 1, "the packed samples are in the row");
    let idx = even_bytes();
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

/// `vpermt2b`'s indices of the even bytes of two vectors (the odd ones are one more).
#[inline(always)]
unsafe fn even_bytes() -> __m512i {
    _mm512_set_epi8(
        126, 124, 122, 120, 118, 116, 114, 112, 110, 108, 106, 104, 102, 100, 98, 96, 94, 92, 90, 88, 86, 84,
        82, 80, 78, 76, 74, 72, 70, 68, 66, 64, 62, 60, 58, 56, 54, 52, 50, 48, 46, 44, 42, 40, 38, 36, 34,
        32, 30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0,
    )
}

/// `pack_bytes` from byte 0 and from byte 1 at once: `even[j] = row[2j]`, `odd[j] = row[2j + 1]`
/// (YUY2's and UYVY's luma and chroma, both groups packed), one pass over the row. Packed once per
/// group, the row was read twice and the packing took 18 % of a hot YUY2 `bilinear-antialias`
/// frame (profile, 1080p).
///
/// # Safety
/// The CPU has AVX-512 (F, BW, VBMI).
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
pub(in crate::convert) unsafe fn pack_bytes_split(row: &[u8], even: &mut [u8], odd: &mut [u8], ahead: usize) {
    assert!(even.len() == row.len().div_ceil(2) && odd.len() == row.len() / 2, "both halves of the row");
    let evens = even_bytes();
    let odds = _mm512_add_epi8(evens, _mm512_set1_epi8(1));
    let keep = |n: usize| -> __mmask64 {
        match n {
            n if n >= 64 => u64::MAX,
            n => (1u64 << n) - 1,
        }
    };
    let mut j = 0;
    while 2 * j + 128 <= row.len() {
        unsafe {
            let at = row.as_ptr().add(2 * j);
            if ahead != 0 {
                prefetch_window(&[at], ahead, true);
            }
            let (a, b) = (_mm512_loadu_si512(at as *const _), _mm512_loadu_si512(at.add(64) as *const _));
            _mm512_storeu_si512(even.as_mut_ptr().add(j) as *mut _, _mm512_permutex2var_epi8(a, evens, b));
            _mm512_storeu_si512(odd.as_mut_ptr().add(j) as *mut _, _mm512_permutex2var_epi8(a, odds, b));
        }
        j += 64;
    }
    if 2 * j < row.len() {
        unsafe {
            let n = row.len() - 2 * j;
            let at = row.as_ptr().add(2 * j);
            let a = _mm512_maskz_loadu_epi8(keep(n), at as *const i8);
            let b = _mm512_maskz_loadu_epi8(keep(n.saturating_sub(64)), at.wrapping_add(64) as *const i8);
            let (e, o) = (_mm512_permutex2var_epi8(a, evens, b), _mm512_permutex2var_epi8(a, odds, b));
            _mm512_mask_storeu_epi8(even.as_mut_ptr().add(j) as *mut i8, keep(n.div_ceil(2)), e);
            _mm512_mask_storeu_epi8(odd.as_mut_ptr().add(j) as *mut i8, keep(n / 2), o);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both halves are `pack_bytes` from byte 0 and from byte 1, on rows shorter than a step,
    /// of odd lengths and with a masked tail, and nothing is written past them.
    #[test]
    fn split_packing_is_packing_from_both_bytes() {
        if !(is_x86_feature_detected!("avx512bw") && is_x86_feature_detected!("avx512vbmi")) {
            eprintln!("skipped: no AVX-512 VBMI here");
            return;
        }
        let row: Vec<u8> = (0..3000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        for len in [1, 2, 3, 63, 64, 127, 128, 129, 255, 256, 1000, 2999, 3000] {
            let row = &row[..len];
            let (mut even, mut odd) = (vec![0xee; len.div_ceil(2) + 70], vec![0xee; len / 2 + 70]);
            unsafe { pack_bytes_split(row, &mut even[..len.div_ceil(2)], &mut odd[..len / 2], 0) };
            for (from, half) in [(0, &even), (1, &odd)] {
                let n = (len - from).div_ceil(2);
                let mut want = vec![0u8; n];
                unsafe { pack_bytes(row, from, &mut want, 0) };
                assert_eq!(&half[..n], &want[..], "{len} from {from}");
                assert_eq!(want, row.iter().skip(from).step_by(2).copied().collect::<Vec<_>>(), "{len}");
                assert!(half[n..].iter().all(|&b| b == 0xee), "{len} from {from}: written past the half");
            }
        }
    }
}
