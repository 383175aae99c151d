//! The NEON kernels (aarch64), `Simd::Neon`: sampling through a group's `Shuffle` plan, the AVX2
//! controls read by `tbl` (an index of 16 or more gives zero, as bit 7 does for `pshufb`), and the
//! fused finish with `st3`/`st4` doing the channel interleave that the x86 levels shuffle for.
//! Eight outputs per block, as the AVX2 kernels: two `float32x4_t` halves.
//!
//! Covered: every source whose planes have shuffle plans (the taps fit 16-byte windows: NV12,
//! NV21, NV16, I420, YV12, YUY2, UYVY, RGB, BGR, RGBA, BGRA, RGBx, BGRx, GRAY8 and planar RGB down
//! to about 3× for four-byte pixels, 6× for YUY2's luma), into uint8, int8 and float32, hwc or
//! chw, every colourspace. The rest stays on the baseline loops (auto-vectorized): planes whose
//! taps are too sparse for a window (no gathers on NEON; the rows are blended at window width
//! first), other element types (the channel rows and `store_content`), and the columns after the
//! last block of eight.
//!
//! Bit-exact with the other levels: the blends are exact whatever the order (weights in 256ths,
//! see `WEIGHT_STEPS`); colour and normalization are separate `fmul` and `fadd` in `yuv_rows`'
//! order (never `fmla`, which rounds once); integers round by `fcvtns` (nearest, ties to even)
//! and saturate by `sqxtn`/`sqxtun`, the x86 packs; float clamps keep x86's `maxps`/`minps`
//! choice between zeros of either sign (see `clamp_exact`).

#![allow(clippy::needless_range_loop)]

use super::finish::{
    channels, finish_dispatch, finish_yuv_dispatch, folded, order, yuv_rows, FinishValues, SendPtr, FLOAT,
    GRAY, GRAY_WEIGHTS, RAW8, RGB, YUV,
};
use super::hint::{block_asks, first_asks, prefetch, Trickle};
use super::lines::Lines;
use super::multitap::VTaps;
use super::plan::{
    box_rows, group_dispatch, Blocks, SampleRow, Shuffle, PIL_HALF, PIL_SHIFT, PIL_SPLIT, TAP_UNIT,
    WEIGHT_UNIT,
};
use std::arch::aarch64::*;

mod finish_bytes;
mod pack;
mod quads;
mod rows_first;
mod vertical;
mod whole;
pub(super) use finish_bytes::finish_bytes;
pub(super) use pack::{pack_bytes, pack_bytes_split, pack_planar};
pub(super) use quads::{box_quads, dotprod};
pub(super) use vertical::{down_bytes, vertical_bytes};
pub(super) use whole::whole_taps;

/// A group's components at every content column through its `Shuffle` plan (the arithmetic of
/// `avx2::sample`), then the columns after the last block as `group_tail` does them.
/// Returns the columns its blocks wrote.
pub(super) fn sample(row: SampleRow<'_, Shuffle>, wx: &[f32], out: &mut [Lines<f32>; 4]) -> usize {
    assert!(row.plan.reach <= row.r0.len().min(row.r1.len()), "loads stay inside the rows");
    let blocks = match rows_first::row_weight(row.wy, row.single, row.g.members.len(), row.plan) {
        Some(k) => match row.g.members.len() {
            2 => unsafe { rows_first::rows_first_blocks::<2>(&row, k, out) },
            3 => unsafe { rows_first::rows_first_blocks::<3>(&row, k, out) },
            _ => unsafe { rows_first::rows_first_blocks::<4>(&row, k, out) },
        },
        None => group_dispatch!(sample_blocks, windows, row, out),
    };
    row.tail(wx, 8, blocks, out)
}

/// The blocks of eight outputs of one group, `P` vectors of windows (see `Shuffle`: 1, two
/// windows of four outputs; 2, four of two), `M` members, taps on samples (`SINGLE`) or not, one
/// source row or two (`TWO`); returns how many blocks it wrote.
///
/// Not inlined: one symbol per variant, whose loop `scripts/neon-mca.sh` reads; the call is one
/// per group and row against 80 blocks of a 640-wide row.
///
/// # Safety
/// `plan.reach` bytes are readable from `r0` and (with `TWO`) `r1`.
#[inline(never)]
unsafe fn sample_blocks<const P: usize, const M: usize, const SINGLE: bool, const TWO: bool>(
    row: &SampleRow<'_, Shuffle>,
    out: &mut [Lines<f32>; 4],
) -> usize {
    let SampleRow { r0, r1, wy, g, plan, wq, ahead, .. } = *row;
    assert!(g.members.len() >= M && (1..=4).contains(&M) && matches!(P, 1 | 2 | 4));
    assert!(plan.reach <= r0.len() && (!TWO || plan.reach <= r1.len()), "loads stay inside the rows");
    let per_block = M * 2 * P;
    let (rows, width) = g.member_rows::<M>(out);
    let blocks = plan.bases.len().min(wq.len() / 8).min(plan.controls.len() / per_block).min(width / 8);
    let wyv = vdupq_n_f32(wy);
    let tap = if SINGLE { 0 } else { P };
    let (bases, controls) = (plan.bases.as_ptr(), plan.controls.as_ptr());
    if blocks > 0 {
        first_asks(r0, plan.bases[0][0], ahead);
    }
    for b in 0..blocks {
        unsafe {
            let w = *bases.add(b);
            block_asks::<TWO>(r0, w[2 * P - 1], ahead);
            // Window i of the block (2P of them); the plan keeps every base + 16 within `reach`.
            let mut v0 = [vdupq_n_u8(0); 8];
            let mut v1 = [vdupq_n_u8(0); 8];
            for i in 0..2 * P {
                v0[i] = vld1q_u8(r0.as_ptr().add(w[i] as usize));
                if TWO {
                    v1[i] = vld1q_u8(r1.as_ptr().add(w[i] as usize));
                }
            }
            // The weight pairs of outputs 0-3 and 4-7 as u16 (1 - w, w) in 256ths.
            let pairs = if SINGLE {
                [vdupq_n_u16(0); 2]
            } else {
                let at = wq.as_ptr().add(8 * b) as *const u16;
                [vld1q_u16(at), vld1q_u16(at.add(8))]
            };
            let ctl = controls.add(b * per_block);
            for j in 0..M {
                let c = ctl.add(2 * P * j + tap) as *const u8;
                // Outputs 4h..4h+4: lane h of each AVX2 control, whose vector p's lane h is window
                // p + P h. With two vectors the second `tbx` keeps the first's bytes where its own
                // index is 0x80 (the plan gives each output to one vector only).
                let pick = |v: &[uint8x16_t; 8], h: usize| {
                    let mut t = vqtbl1q_u8(v[P * h], vld1q_u8(c.add(16 * h)));
                    for p in 1..P {
                        t = vqtbx1q_u8(t, v[p + P * h], vld1q_u8(c.add(32 * p + 16 * h)));
                    }
                    if SINGLE {
                        vcvtq_f32_u32(vreinterpretq_u32_u8(t))
                    } else {
                        // Taps as the two u16 of each u32, times (1 - w, w): at most 255 · 256,
                        // so the products and their pairwise sum are exact in u16 / u32 (the
                        // `pmaddwd` of the x86 levels).
                        // In 256ths (`WEIGHT_UNIT`), scaled by the conversion itself (exact
                        // either way): a power of two's scale commutes with the rows' blend, so
                        // scaling first gives the floats scaling after did, one multiply fewer.
                        const { assert!(WEIGHT_UNIT * 256.0 == 1.0) };
                        let blend = vmulq_u16(vreinterpretq_u16_u8(t), pairs[h]);
                        vcvtq_n_f32_u32::<8>(vpaddlq_u16(blend))
                    }
                };
                for h in 0..2 {
                    let top = pick(&v0, h);
                    let v =
                        if TWO { vaddq_f32(top, vmulq_f32(wyv, vsubq_f32(pick(&v1, h), top))) } else { top };
                    vst1q_f32(rows[j].add(8 * b + 4 * h), v);
                }
            }
        }
    }
    blocks
}

/// Colour, normalization and store of content columns `0..n` of row `y` (`n` the largest multiple
/// of 8), the arithmetic of `avx2::finish` lane for lane; returns `n`, the caller finishes
/// the row.
///
/// # Safety
/// `dst` holds the converter's layout and no other thread writes row `y`; `comps` rows hold the
/// content width.
pub(super) unsafe fn finish(f: &FinishValues, comps: &[Lines<f32>; 4], dst: SendPtr, y: usize) -> usize {
    finish_dispatch!(finish_rows<f32>, f, comps, dst, y)
}

/// `finish` of a YUV source's components as bytes, widened as they are loaded (as
/// `avx512::finish_yuv_bytes`). `f.kind` is `YUV`.
///
/// # Safety
/// As `finish`.
pub(super) unsafe fn finish_yuv_bytes(
    f: &FinishValues,
    comps: &[Lines<u8>; 4],
    dst: SendPtr,
    y: usize,
) -> usize {
    finish_yuv_dispatch!(finish_rows<u8>, f, comps, dst, y)
}

/// A component row's values as the finish loads them, four at `x`.
trait Values: super::lines::Zeroed {
    unsafe fn load4(row: &[Self], x: usize) -> float32x4_t;
}

impl Values for f32 {
    #[inline(always)]
    unsafe fn load4(row: &[f32], x: usize) -> float32x4_t {
        unsafe { vld1q_f32(row.as_ptr().add(x)) }
    }
}

impl Values for u8 {
    #[inline(always)]
    unsafe fn load4(row: &[u8], x: usize) -> float32x4_t {
        unsafe {
            // (Four bytes, unaligned: the row's last block may end at its last byte.)
            let four = vdup_n_u32((row.as_ptr().add(x) as *const u32).read_unaligned());
            vcvtq_f32_u32(vmovl_u16(vget_low_u16(vmovl_u8(vreinterpret_u8_u32(four)))))
        }
    }
}

/// `FinishValues` broadcast once per row.
struct Consts {
    m: [[float32x4_t; 3]; 3],
    k: [float32x4_t; 3],
    range: [(float32x4_t, float32x4_t); 3],
    gray: [float32x4_t; 3],
    scale: [float32x4_t; 4],
    bias: [float32x4_t; 4],
    luma: float32x4_t,
    lo: float32x4_t,
    hi: float32x4_t,
    alpha: bool,
}

/// One loop per source kind, colourspace and output form (`fused_params`). Not inlined, for the
/// same reason as `sample_blocks`: one call per row.
#[inline(never)]
unsafe fn finish_rows<S: Values, const K: u8, const CS: u8, const OUT: u8>(
    f: &FinishValues,
    comps: &[Lines<S>; 4],
    dst: SendPtr,
    y: usize,
) -> usize {
    let n = f.width.min(comps.iter().map(|c| c.len()).min().unwrap_or(0)) / 8 * 8;
    let v = |a: f32| vdupq_n_f32(a);
    let k = Consts {
        m: f.m.map(|r| r.map(v)),
        k: f.k.map(v),
        range: f.range.map(|(a, z)| (v(a), v(z))),
        gray: GRAY_WEIGHTS.map(v),
        scale: f.scale.map(v),
        bias: f.bias.map(v),
        luma: v(f.luma),
        lo: v(f.lo),
        hi: v(f.hi),
        alpha: f.alpha,
    };
    let (nc, signed) = (channels(CS), f.signed);
    let esz = if OUT == FLOAT { 4 } else { 1 };
    let row = unsafe { dst.0.add(y * f.row_stride + f.x0 * if f.chw { esz } else { nc * esz }) };
    let plane = |i: usize, x: usize| unsafe { row.add(i * f.plane_stride + esz * x) };
    let mut x = 0;
    while x < n {
        unsafe {
            let halves = [values::<S, K, CS, OUT>(&k, comps, x), values::<S, K, CS, OUT>(&k, comps, x + 4)];
            if OUT == FLOAT {
                for (h, ch) in halves.iter().enumerate() {
                    let at = x + 4 * h;
                    if f.chw || nc == 1 {
                        for i in 0..nc {
                            vst1q_f32(plane(i, at) as *mut f32, ch[i]);
                        }
                    } else if nc == 3 {
                        vst3q_f32(row.add(12 * at) as *mut f32, float32x4x3_t(ch[0], ch[1], ch[2]));
                    } else {
                        vst4q_f32(row.add(16 * at) as *mut f32, float32x4x4_t(ch[0], ch[1], ch[2], ch[3]));
                    }
                }
            } else {
                // Nearest, ties to even (`fcvtns`), then the saturating narrows of the x86 packs.
                let mut b = [vdup_n_u8(0); 4];
                for i in 0..nc {
                    let q = |v: float32x4_t| vqmovn_s32(vcvtnq_s32_f32(v));
                    let w = vcombine_s16(q(halves[0][i]), q(halves[1][i]));
                    b[i] = match (OUT == RAW8, signed) {
                        (true, true) => veor_u8(vqmovun_s16(w), vdup_n_u8(0x80)),
                        (false, true) => vreinterpret_u8_s8(vqmovn_s16(w)),
                        _ => vqmovun_s16(w),
                    };
                }
                if f.chw || nc == 1 {
                    for i in 0..nc {
                        vst1_u8(plane(i, x), b[i]);
                    }
                } else if nc == 3 {
                    vst3_u8(row.add(3 * x), uint8x8x3_t(b[0], b[1], b[2]));
                } else {
                    vst4_u8(row.add(4 * x), uint8x8x4_t(b[0], b[1], b[2], b[3]));
                }
            }
        }
        x += 8;
    }
    n
}

/// `v` limited to `lo..=hi` as x86's `maxps` then `minps` (and the baseline's `clamp_ps`) do it:
/// the bound wherever the compare is false. `fmax`/`fmin` order -0.0 below +0.0 instead, so a
/// -0.0 against a folded +0.0 bound (a zero mean, a negative std) would come out -0.0 here and
/// +0.0 at the other levels; a float output stores that sign.
#[inline(always)]
fn clamp_exact(v: float32x4_t, lo: float32x4_t, hi: float32x4_t) -> float32x4_t {
    // NEON is part of the target: the intrinsics only need an unsafe block to be called.
    unsafe {
        let v = vbslq_f32(vcgtq_f32(v, lo), v, lo);
        vbslq_f32(vcltq_f32(v, hi), v, hi)
    }
}

/// The clamp of an `OUT` output: exact for float32; for 8-bit outputs the sign of a zero and NaN
/// cannot reach the stored integer (the values are finite), so one `fmax` and one `fmin`.
#[inline(always)]
fn clamp<const OUT: u8>(v: float32x4_t, lo: float32x4_t, hi: float32x4_t) -> float32x4_t {
    if OUT == FLOAT {
        clamp_exact(v, lo, hi)
    } else {
        unsafe { vminq_f32(vmaxq_f32(v, lo), hi) }
    }
}

/// Output channels 0..4 of pixels `x..x + 4`, finished: colour (or gray's R, G, B), the
/// normalization, and for 8-bit outputs the type's clamp; the order of `finish_rows` in
/// `avx2`.
#[inline(always)]
unsafe fn values<S: Values, const K: u8, const CS: u8, const OUT: u8>(
    k: &Consts,
    comps: &[Lines<S>; 4],
    x: usize,
) -> [float32x4_t; 4] {
    let (nc, order, fold) = (channels(CS), order(CS), folded(K, CS, OUT));
    let ld = |i: usize| unsafe { S::load4(&comps[i], x) };
    let zero = vdupq_n_f32(0.0);
    let full = vdupq_n_f32(255.0);
    let mut ch = [zero, zero, zero, full];
    match K {
        YUV => {
            let rgb = yuv_rows!(fold, vmulq_f32, vaddq_f32, k.m, k.k, k.luma, ld(0), ld(1), ld(2));
            for i in 0..3 {
                let r = order[i];
                ch[i] = if OUT == RAW8 && nc != 1 {
                    rgb[r]
                } else {
                    clamp::<OUT>(rgb[r], k.range[r].0, k.range[r].1)
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
        // `gray`'s operations, in its order, over R, G, B.
        let gb = vaddq_f32(vmulq_f32(k.gray[2], ch[2]), vmulq_f32(k.gray[1], ch[1]));
        ch[0] = vaddq_f32(gb, vmulq_f32(k.gray[0], ch[0]));
    }
    if nc == 4 && k.alpha {
        ch[3] = ld(3);
    }
    if OUT != RAW8 {
        let from = if fold { 3 } else { 0 };
        for i in from..nc {
            ch[i] = vaddq_f32(vmulq_f32(ch[i], k.scale[i]), k.bias[i]);
        }
    }
    if OUT != FLOAT {
        // RAW8 and the folded colours are already in the type's range (or saturate in the
        // narrows, as the x86 packs do).
        for i in 0..nc {
            if !(OUT == RAW8 || (fold && i < 3)) {
                ch[i] = clamp::<OUT>(ch[i], k.lo, k.hi);
            }
        }
    }
    ch
}

/// A multi-tap filter's horizontal pass over source rows `rows` (each its bytes) for one group
/// (`plan::TapGroup`), through the AVX2 level's blocks (`Blocks` of two lanes): per lane its
/// window as `pieces` 16-byte registers, per tap pair one `tbl` over them and two `smlal` (four
/// for PIL's split weights) into i32, the pairs' products summed by one `addp` at the end; the
/// arithmetic of `avx2::multitap`, exact in i32. Three rows share each block's controls and
/// weights, as on x86 (where one row per call spent most of its time loading them). Returns the
/// outputs each member has from the blocks.
///
/// # Safety
/// `out[i]` holds the group's members' rows for row `i` (null past them), each `plan.done`
/// writable values.
pub(super) unsafe fn multitap(
    rows: &[&[u8]],
    plan: &Blocks,
    pil: bool,
    out: &[[*mut f32; 4]],
    ahead: usize,
) -> usize {
    assert!(
        rows.len() == out.len() && rows.iter().all(|r| plan.reach <= r.len()),
        "loads stay inside the rows"
    );
    let members = out.first().map_or(0, |o| o.iter().take_while(|p| !p.is_null()).count());
    macro_rules! by_slide {
        ($l:expr, $pil:expr, $m:expr, $r:expr, $rows:expr, $out:expr) => {
            match plan.slide {
                true => unsafe { multitap_blocks::<$l, $pil, $m, $r, true>($rows, plan, $out, ahead) },
                false => unsafe { multitap_blocks::<$l, $pil, $m, $r, false>($rows, plan, $out, ahead) },
            }
        };
    }
    macro_rules! by_rows {
        ($l:expr, $pil:expr, $m:expr) => {
            match rows.len() {
                3 => by_slide!($l, $pil, $m, 3, rows, out),
                _ => {
                    let mut done = plan.done;
                    for i in 0..rows.len() {
                        let one = by_slide!($l, $pil, $m, 1, &rows[i..], &out[i..]);
                        done = done.min(one);
                    }
                    done
                }
            }
        };
    }
    macro_rules! by_pieces {
        ($pil:expr, $m:expr) => {
            match plan.pieces {
                1 => by_rows!(1, $pil, $m),
                2 => by_rows!(2, $pil, $m),
                3 => by_rows!(3, $pil, $m),
                _ => by_rows!(4, $pil, $m),
            }
        };
    }
    match (pil, members) {
        (true, 1) => by_pieces!(true, 1),
        (true, 2) => by_pieces!(true, 2),
        (true, 3) => by_pieces!(true, 3),
        (true, _) => by_pieces!(true, 4),
        (false, 1) => by_pieces!(false, 1),
        (false, 2) => by_pieces!(false, 2),
        (false, 3) => by_pieces!(false, 3),
        (false, _) => by_pieces!(false, 4),
    }
}

/// `tbl` over the first `L` registers of `t`.
#[inline(always)]
unsafe fn lookup<const L: usize>(t: &[uint8x16_t; 4], idx: uint8x16_t) -> uint8x16_t {
    unsafe {
        match L {
            1 => vqtbl1q_u8(t[0], idx),
            2 => vqtbl2q_u8(uint8x16x2_t(t[0], t[1]), idx),
            3 => vqtbl3q_u8(uint8x16x3_t(t[0], t[1], t[2]), idx),
            _ => vqtbl4q_u8(uint8x16x4_t(t[0], t[1], t[2], t[3]), idx),
        }
    }
}

/// One loop per window size `L`, weights (`PIL`), member count `M` (its lanes' stores), rows
/// per call `R` and sliding windows `S` (`Blocks::slide`). Not inlined, as `sample_blocks`.
#[inline(never)]
unsafe fn multitap_blocks<const L: usize, const PIL: bool, const M: usize, const R: usize, const S: bool>(
    rows: &[&[u8]],
    plan: &Blocks,
    out: &[[*mut f32; 4]],
    ahead: usize,
) -> usize {
    assert!(plan.pieces == L && plan.slide == S && (1..=4).contains(&L) && rows.len() >= R && out.len() >= R);
    let pairs = plan.pairs;
    let blocks = plan.targets.len().min(plan.lane_bases.len() / if S { pairs } else { 1 });
    assert!(plan.tbl.len() >= blocks * pairs && plan.hi.len() >= blocks * pairs * 8);
    assert!(!PIL || plan.lo.len() >= blocks * pairs * 8);
    unsafe {
        let zero = vdupq_n_s32(0);
        let (unit, half, top) = (vdupq_n_f32(TAP_UNIT), vdupq_n_s32(PIL_HALF), vdupq_n_s32(255));
        let (hi, lo, controls) = (plan.hi.as_ptr(), plan.lo.as_ptr(), plan.tbl.as_ptr() as *const u8);
        // Lane `l`'s windows from lane bases `at` (a block's, or a block's pair's where they slide).
        let load = |at: usize, l: usize| {
            let start = plan.lane_bases.get_unchecked(at)[l] as usize;
            let mut t = [[vdupq_n_u8(0); 4]; R];
            for i in 0..R {
                let at = rows[i].as_ptr().add(start);
                for q in 0..L {
                    t[i][q] = vld1q_u8(at.add(16 * q));
                }
            }
            t
        };
        for b in 0..blocks {
            // The block's lines at the distance (as `avx2::multitap`).
            if ahead != 0 {
                let (first, last) = if S { (b * pairs, b * pairs + pairs - 1) } else { (b, b) };
                let (s0, s1) =
                    (plan.lane_bases.get_unchecked(first)[0], plan.lane_bases.get_unchecked(last)[1]);
                for r in rows.iter().take(R) {
                    prefetch(r.as_ptr().wrapping_add(s0 as usize + ahead));
                    prefetch(r.as_ptr().wrapping_add(s1 as usize + 16 * L - 1 + ahead));
                }
            }
            for l in 0..2 {
                let mut t = if S { [[vdupq_n_u8(0); 4]; R] } else { load(b, l) };
                let (mut h0, mut h1, mut l0, mut l1) = ([zero; R], [zero; R], [zero; R], [zero; R]);
                for p in 0..pairs {
                    let k = b * pairs + p;
                    if S {
                        t = load(k, l);
                    }
                    let idx = vld1q_u8(controls.add(32 * k + 16 * l));
                    let wh = vld1q_s16(hi.add(8 * k + 4 * l) as *const i16);
                    let wl =
                        if PIL { vld1q_s16(lo.add(8 * k + 4 * l) as *const i16) } else { vdupq_n_s16(0) };
                    for i in 0..R {
                        // Taps as (a, b) i16 pairs of four outputs; the weights' pairs likewise.
                        let v = vreinterpretq_s16_u8(lookup::<L>(&t[i], idx));
                        h0[i] = vmlal_s16(h0[i], vget_low_s16(v), vget_low_s16(wh));
                        h1[i] = vmlal_high_s16(h1[i], v, wh);
                        if PIL {
                            l0[i] = vmlal_s16(l0[i], vget_low_s16(v), vget_low_s16(wl));
                            l1[i] = vmlal_high_s16(l1[i], v, wl);
                        }
                    }
                }
                for i in 0..R {
                    let sh = vpaddq_s32(h0[i], h1[i]);
                    let v = if PIL {
                        let s = vshlq_n_s32::<{ PIL_SPLIT as i32 }>(sh);
                        let s = vaddq_s32(vaddq_s32(s, vpaddq_s32(l0[i], l1[i])), half);
                        let s = vshrq_n_s32::<{ PIL_SHIFT as i32 }>(s);
                        // As i32 bits (see `multitap::pil_byte`).
                        vreinterpretq_f32_s32(vminq_s32(vmaxq_s32(s, zero), top))
                    } else {
                        vmulq_f32(vcvtq_f32_s32(sh), unit)
                    };
                    store_lane::<M>(&out[i], b, l, v);
                }
            }
        }
    }
    plan.done
}

/// Lane `l` (four dwords) of block `b` into its member's row by the lanes of `Blocks::new`, as
/// `avx2::multitap` stores them. The 2^-22/2^-14 blocks and the rows-first box blocks store alike.
#[inline(always)]
unsafe fn store_lane<const M: usize>(out: &[*mut f32; 4], b: usize, l: usize, v: float32x4_t) {
    unsafe {
        match M {
            1 => vst1q_f32(out[0].add(8 * b + 4 * l), v),
            2 => vst1q_f32(out[l].add(4 * b), v),
            _ => {
                let m = 2 * (b % 2) + l;
                if m < M {
                    vst1q_f32(out[m].add(4 * (b / 2)), v);
                }
            }
        }
    }
}

/// A multi-tap filter's vertical pass (the arithmetic of `avx2::multitap_vertical`, sixteen
/// outputs at a time, the sums in registers over every tap; separate multiply and add, never
/// `fmla`). Returns the outputs it wrote.
///
/// # Safety
/// Every row pointer is readable for `out.len()` values.
pub(super) unsafe fn multitap_vertical(rows: &[*const f32], taps: VTaps<'_>, out: &mut [f32]) -> usize {
    let n = out.len() / 16 * 16;
    let o = out.as_mut_ptr();
    unsafe {
        match taps {
            VTaps::Float(w, scale) => {
                let scale = vdupq_n_f32(scale);
                let rows = &rows[..w.len().min(rows.len())];
                for x in (0..n).step_by(16) {
                    let w0 = vdupq_n_f32(w[0]);
                    let mut a: [float32x4_t; 4] =
                        std::array::from_fn(|i| vmulq_f32(w0, vld1q_f32(rows[0].add(x + 4 * i))));
                    for (&r, &wj) in rows.iter().zip(w).skip(1) {
                        let wj = vdupq_n_f32(wj);
                        for (i, a) in a.iter_mut().enumerate() {
                            *a = vaddq_f32(*a, vmulq_f32(wj, vld1q_f32(r.add(x + 4 * i))));
                        }
                    }
                    for (i, a) in a.iter().enumerate() {
                        vst1q_f32(o.add(x + 4 * i), vmulq_f32(*a, scale));
                    }
                }
            }
            VTaps::Pil(w, _) => {
                let (zero, top) = (vdupq_n_s32(0), vdupq_n_s32(255));
                for x in (0..n).step_by(16) {
                    let mut a = [vdupq_n_s32(PIL_HALF); 4];
                    for (&r, &wj) in rows.iter().zip(w) {
                        let wj = vdupq_n_s32(wj);
                        for (i, a) in a.iter_mut().enumerate() {
                            // The horizontal pass's bytes as i32 bits (`multitap::pil_byte`).
                            *a = vmlaq_s32(*a, wj, vld1q_s32(r.add(x + 4 * i) as *const i32));
                        }
                    }
                    for (i, a) in a.iter().enumerate() {
                        let s = vshrq_n_s32::<{ PIL_SHIFT as i32 }>(*a);
                        vst1q_f32(o.add(x + 4 * i), vcvtq_f32_s32(vminq_s32(vmaxq_s32(s, zero), top)));
                    }
                }
            }
        }
    }
    n
}

/// An exact box's vertical sums (`avx512::box_sums` at sixteen samples a step): `sums[t] =
/// Σ_j k[j] · bytes[(first + j) · stride + t]` for `t` in `lo..hi`, in u16 (the plan keeps the
/// sums below 2^15); the lines `ahead` bytes on asked for as they are read
/// (`multitap::ahead_bytes`; 0: none).
///
/// # Safety
/// NEON (architectural on aarch64).
pub(super) unsafe fn box_sums(
    bytes: &[u8],
    stride: usize,
    first: usize,
    k: &[i16],
    (lo, hi): (usize, usize),
    sums: &mut [u16],
    ahead: usize,
) {
    let Some(start) = box_rows(bytes.len(), stride, first, k.len(), (lo, hi), sums.len()) else { return };
    unsafe {
        let base = bytes.as_ptr().add(start);
        let out = sums.as_mut_ptr();
        let mut t = lo;
        while t + 16 <= hi {
            let (mut a, mut b) = (vdupq_n_u16(0), vdupq_n_u16(0));
            for (j, &w) in k.iter().enumerate() {
                if ahead != 0 && (t - lo).is_multiple_of(64) {
                    prefetch(base.wrapping_add(j * stride + t + ahead));
                }
                let v = vld1q_u8(base.add(j * stride + t));
                let w = vdupq_n_u16(w as u16);
                a = vmlaq_u16(a, vmovl_u8(vget_low_u8(v)), w);
                b = vmlaq_u16(b, vmovl_high_u8(v), w);
            }
            vst1q_u16(out.add(t), a);
            vst1q_u16(out.add(t + 8), b);
            t += 16;
        }
        for t in t..hi {
            let mut acc = 0u16;
            for (j, &w) in k.iter().enumerate() {
                acc = acc.wrapping_add((w as u16).wrapping_mul(*base.add(j * stride + t) as u16));
            }
            *out.add(t) = acc;
        }
    }
}

/// An exact box's horizontal pass over its vertical sums (`Blocks` of two lanes over u16
/// samples, `Blocks::words`): per lane and tap pair one `tbl` over its pieces and two `smlal`,
/// exact in i32, times `inv`; the lanes stored as `multitap` stores them, the lines `ahead` asked
/// for through the blocks (as at the x86 levels; not measured on an ARM core).
///
/// # Safety
/// `out` holds the group's members' rows (null past them), each `plan.done` writable values.
pub(super) unsafe fn box_blocks(
    sums: &[u16],
    plan: &Blocks,
    inv: f32,
    out: [*mut f32; 4],
    ahead: Trickle,
) -> usize {
    assert!(plan.words && !plan.slide && plan.reach <= sums.len(), "loads stay inside the sums");
    match ahead.is_empty() {
        true => unsafe { box_blocks_of::<false>(sums, plan, inv, out, ahead) },
        false => unsafe { box_blocks_of::<true>(sums, plan, inv, out, ahead) },
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
    macro_rules! go {
        ($l:expr) => {
            match members {
                1 => unsafe { box_blocks_l::<$l, 1, ASK>(sums, plan, inv, out, ahead) },
                2 => unsafe { box_blocks_l::<$l, 2, ASK>(sums, plan, inv, out, ahead) },
                3 => unsafe { box_blocks_l::<$l, 3, ASK>(sums, plan, inv, out, ahead) },
                _ => unsafe { box_blocks_l::<$l, 4, ASK>(sums, plan, inv, out, ahead) },
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

#[inline(never)]
unsafe fn box_blocks_l<const L: usize, const M: usize, const ASK: bool>(
    sums: &[u16],
    plan: &Blocks,
    inv: f32,
    out: [*mut f32; 4],
    mut ahead: Trickle,
) -> usize {
    assert!(plan.pieces == L && (1..=4).contains(&L));
    let pairs = plan.pairs;
    let blocks = plan.targets.len().min(plan.lane_bases.len());
    assert!(plan.tbl.len() >= blocks * pairs && plan.hi.len() >= blocks * pairs * 8);
    unsafe {
        let inv = vdupq_n_f32(inv);
        let (weights, controls) = (plan.hi.as_ptr(), plan.tbl.as_ptr() as *const u8);
        let row = sums.as_ptr() as *const u8;
        let per = ahead.pace(blocks);
        for b in 0..blocks {
            if ASK {
                ahead.ask(per);
            }
            let starts = *plan.lane_bases.get_unchecked(b);
            for l in 0..2 {
                let at = row.add(2 * starts[l] as usize);
                let mut t = [vdupq_n_u8(0); 4];
                for q in 0..L {
                    t[q] = vld1q_u8(at.add(16 * q));
                }
                let (mut h0, mut h1) = (vdupq_n_s32(0), vdupq_n_s32(0));
                for p in 0..pairs {
                    let k = b * pairs + p;
                    let idx = vld1q_u8(controls.add(32 * k + 16 * l));
                    let w = vld1q_s16(weights.add(8 * k + 4 * l) as *const i16);
                    // Each output's two taps as an i16 pair; the weights' pairs likewise.
                    let v = vreinterpretq_s16_u8(lookup::<L>(&t, idx));
                    h0 = vmlal_s16(h0, vget_low_s16(v), vget_low_s16(w));
                    h1 = vmlal_high_s16(h1, v, w);
                }
                let v = vmulq_f32(vcvtq_f32_s32(vpaddq_s32(h0, h1)), inv);
                store_lane::<M>(&out, b, l, v);
            }
        }
    }
    plan.done
}
