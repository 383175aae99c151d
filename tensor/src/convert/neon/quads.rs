//! The NEON level's exact box straight from the frame's rows where the core has the dot product
//! instructions (Armv8.2 `udot`: Cortex-A55, A76, A78; not the A53), over lanes of 16-byte
//! windows (`plan::Quads::pieces`): per block of sixteen outputs, source row and quad, four loads,
//! four one-register `tbl` and four `udot`. Not timed (no aarch64 machine here); llvm-mca 19,
//! cycles per 16 outputs of 1080p NV12 → 640 `area`, Cortex-A55 / Neoverse N1: luma at 3× (three
//! rows) 93 / 22 here, against the rows-first word blocks' 130 / 26 plus the row sums' about 96
//! / 36 (their loop written out without its per-row overhead); chroma (8 U and 8 V at 1.5×, two
//! rows) 100 / 30 against about 124 + 33 / 26 + 12. Over one 64-byte window a block (`Quads::new`,
//! four-register `tbl`) the luma took 175 / 35.

#![allow(clippy::needless_range_loop)]

use crate::convert::plan::{Quads, ROWS_FOLD as FOLD, ROWS_ONE as ONE, ROWS_TIMES as TIMES};
use std::arch::aarch64::*;

/// The core has `udot`, and `EDGEFIRST_CONVERT_VNNI` is not `0` (the switch the x86 levels'
/// dot products share).
pub(in crate::convert) fn dotprod() -> bool {
    std::arch::is_aarch64_feature_detected!("dotprod")
        && std::env::var("EDGEFIRST_CONVERT_VNNI").as_deref() != Ok("0")
}

/// `acc + Σ a · b` over each lane's four bytes (`udot`; its intrinsic is unstable in this Rust).
#[inline(always)]
unsafe fn udot(acc: uint32x4_t, a: uint8x16_t, b: uint8x16_t) -> uint32x4_t {
    let mut acc = acc;
    unsafe {
        std::arch::asm!(
            "udot {acc:v}.4s, {a:v}.16b, {b:v}.16b",
            acc = inout(vreg) acc, a = in(vreg) a, b = in(vreg) b,
            options(pure, nomem, nostack, preserves_flags)
        );
    }
    acc
}

/// `avx512::box_quads` at NEON over a `pieces` plan, stored by the lanes' rule of `multitap` (one
/// member's sixteen outputs, two members' eight, or each member's four) as f32 or (`u8`) as the
/// finish rounds them (`Put`). Two to four rows; `None` for others and other plans.
///
/// # Safety
/// The core has NEON and the dot product; each of `rows` holds `plan.reach` readable bytes; `out`
/// holds the group's members' rows, each `plan.done` writable values.
#[target_feature(enable = "neon,dotprod")]
pub(in crate::convert) unsafe fn box_quads<O: Put>(
    rows: &[*const u8],
    k: &[i16],
    plan: &Quads,
    inv: f32,
    out: &[*mut O; 4],
    ahead: usize,
) -> Option<usize> {
    if rows.len() != k.len() || !(2..=4).contains(&rows.len()) || !plan.pieces {
        return None;
    }
    let members = out.iter().take_while(|p| !p.is_null()).count();
    // Each row's weight times the tables' still a byte (`udot`'s are unsigned): folded.
    let weights = plan.row_weights(k, 255);
    macro_rules! by_quads {
        ($r:expr, $one:expr, $m:expr) => {
            match plan.quads {
                1 => quads_of::<O, $r, $one, $m, 1>(rows, k, plan, inv, out, ahead),
                _ => quads_of::<O, $r, $one, $m, 0>(rows, k, plan, inv, out, ahead),
            }
        };
    }
    macro_rules! by_members {
        ($r:expr, $one:expr) => {
            match members {
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

/// `box_quads` over `R` rows weighted as `W` says, for `M` members, `Q` quads a block (0:
/// `plan.quads`; with one, its indices and weights are held while the blocks share them).
#[target_feature(enable = "neon,dotprod")]
#[inline(never)]
unsafe fn quads_of<O: Put, const R: usize, const W: u8, const M: usize, const Q: usize>(
    rows: &[*const u8],
    k: &[i16],
    plan: &Quads,
    inv: f32,
    out: &[*mut O; 4],
    ahead: usize,
) {
    let (quads, blocks) = (if Q > 0 { Q } else { plan.quads }, plan.bases.len() / 4);
    let count = plan.ctl.len().min(plan.k.len()) / quads;
    assert!(plan.table.len() >= blocks && (blocks == 0 || count > 0));
    // Each block's table kept among them where it is read (a compare), not every table checked
    // on every call (as AVX-512's quads).
    debug_assert!(plan.table[..blocks].iter().all(|&t| (t as usize) < count));
    assert!(rows.len() >= R);
    let row: [*const u8; R] = std::array::from_fn(|r| rows[r]);
    let inv = vdupq_n_f32(inv);
    // Quad `at`'s indices and weights (whole and not negative: the signed bytes read as unsigned).
    let tables = |at: usize| {
        let (c, w) = (
            vld1q_u8_x4(plan.ctl.as_ptr().add(at) as *const u8),
            vld1q_u8_x4(plan.k.as_ptr().add(at) as *const u8),
        );
        ([c.0, c.1, c.2, c.3], [w.0, w.1, w.2, w.3])
    };
    // One quad a block: its table held while the blocks share it (and `FOLD`: times each row's
    // weight, bytewise: every product is under 256).
    let (mut held, mut ctl, mut w) = (usize::MAX, [vdupq_n_u8(0); 4], [vdupq_n_u8(0); 4]);
    let mut wr = [[vdupq_n_u8(0); 4]; R];
    for b in 0..blocks {
        let base: [usize; 4] = std::array::from_fn(|l| *plan.bases.get_unchecked(4 * b + l) as usize);
        if ahead != 0 {
            for r in 0..R {
                crate::convert::hint::prefetch(row[r].wrapping_add(base[0] + ahead));
            }
        }
        let tb = (*plan.table.get_unchecked(b) as usize).min(count - 1);
        if Q == 1 && W != TIMES && tb != held {
            (ctl, w) = tables(tb);
            if W == FOLD {
                for r in 0..R {
                    let kr = vdupq_n_u8(k[r] as u8);
                    for i in 0..4 {
                        wr[r][i] = vmulq_u8(w[i], kr);
                    }
                }
            }
            held = tb;
        }
        // (Times each row's weight, the tables loaded a block: held, they took the A55 model
        // from 214 to 240 cycles per 16 NV12 chroma outputs, its registers spilled.)
        let first = if Q == 1 && W == TIMES { tables(tb) } else { (ctl, w) };
        let mut acc = [vdupq_n_u32(0); 4];
        for r in 0..R {
            let window: [uint8x16_t; 4] = std::array::from_fn(|l| vld1q_u8(row[r].add(base[l])));
            let mut h = [vdupq_n_u32(0); 4];
            for q in 0..quads {
                let (c, w) = match Q == 1 {
                    true => (first.0, if W == FOLD { wr[r] } else { first.1 }),
                    false => tables(tb * quads + q),
                };
                for i in 0..4 {
                    let t = vqtbl1q_u8(window[i], c[i]);
                    match W {
                        TIMES => h[i] = udot(h[i], t, w[i]),
                        _ => acc[i] = udot(acc[i], t, w[i]),
                    }
                }
            }
            if W == TIMES {
                let kr = k[r] as u32;
                for i in 0..4 {
                    acc[i] = vmlaq_n_u32(acc[i], h[i], kr);
                }
            }
        }
        let v: [float32x4_t; 4] = std::array::from_fn(|i| vmulq_f32(vcvtq_f32_u32(acc[i]), inv));
        O::lanes::<M>(out, b, v);
    }
}

/// Where the quads' sixteen values go: the components' f32 rows, or (`u8`) the 8-bit output's
/// bytes as the finish would round them (`neon::finish_bytes`), by the lanes of `Blocks::new`
/// (16 dwords: one member's 16, two members' 8, or each one's 4).
pub(in crate::convert) trait Put: crate::convert::multitap::Sample {
    /// Block `b`'s values `v` (four vectors of four) into the members' rows.
    unsafe fn lanes<const M: usize>(out: &[*mut Self; 4], b: usize, v: [float32x4_t; 4]);
}

impl Put for f32 {
    #[inline(always)]
    unsafe fn lanes<const M: usize>(out: &[*mut f32; 4], b: usize, v: [float32x4_t; 4]) {
        for i in 0..4 {
            let (m, x) = match M {
                1 => (0, 16 * b + 4 * i),
                2 => (i / 2, 8 * b + 4 * (i % 2)),
                _ => (i, 4 * b),
            };
            if m < M {
                unsafe { vst1q_f32(out[m].add(x), v[i]) };
            }
        }
    }
}

impl Put for u8 {
    #[inline(always)]
    unsafe fn lanes<const M: usize>(out: &[*mut u8; 4], b: usize, v: [float32x4_t; 4]) {
        // Nearest, ties to even (the finish's `fcvtns`), then saturated to bytes (the sums are
        // not negative): each vector's four values as u16, then as bytes.
        let w = |i: usize| vqmovn_u32(vcvtnq_u32_f32(v[i]));
        let b4 = |i: usize| vqmovn_u16(vcombine_u16(w(i), vdup_n_u16(0)));
        unsafe {
            match M {
                1 => {
                    let (lo, hi) = (vcombine_u16(w(0), w(1)), vcombine_u16(w(2), w(3)));
                    vst1q_u8(out[0].add(16 * b), vcombine_u8(vqmovn_u16(lo), vqmovn_u16(hi)));
                }
                2 => {
                    vst1_u8(out[0].add(8 * b), vqmovn_u16(vcombine_u16(w(0), w(1))));
                    vst1_u8(out[1].add(8 * b), vqmovn_u16(vcombine_u16(w(2), w(3))));
                }
                _ => {
                    // Each member's four bytes on their own (one chain of narrows a member; the
                    // four through shared narrows and lane stores cost the Cortex-A55 model
                    // 498 cycles for 16 pixels of RGBA `area` where the float rows took 434,
                    // this 382). The rows start on a line (`Lines`): word stores are aligned.
                    for m in 0..M.min(4) {
                        vst1_lane_u32::<0>(out[m].add(4 * b) as *mut u32, vreinterpret_u32_u8(b4(m)));
                    }
                }
            }
        }
    }
}
