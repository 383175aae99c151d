//! NEON bilinear sampling with the two rows blended first, for groups of two or more members
//! (NV12's U and V): the window's bytes down once, then each member's taps across.

use super::super::hint::{block_asks, first_asks};
use super::super::lines::Lines;
use super::super::plan::{row_steps, SampleRow, Shuffle, WEIGHT_UNIT};
use std::arch::aarch64::*;

/// The second row's weight in 256ths where `rows_first_blocks` takes a group's row: two rows (a
/// weight strictly between 0 and 1), two taps across, one vector of windows (`Shuffle::windows`
/// 2: a window per four outputs) and two or more members.
pub(super) fn row_weight(wy: f32, single: bool, members: usize, plan: &Shuffle) -> Option<u8> {
    row_steps(wy).filter(|_| !single && members >= 2 && plan.windows == 2).map(|k| k as u8)
}

/// `sample_blocks::<1, M, false, true>` with the rows blended first: each window's 16 bytes down
/// by `umull`/`umlal` with the row weights (`256 - k`, `k`: a u16 each, at most 255 · 256), once
/// for all members; then per member the two taps' u16 by one two-register `tbl`
/// (`plan::Shuffle::words`: the AVX2 control's tap bytes `i` as the byte pairs `2i, 2i + 1`), across by
/// `umull` with the column weights and a pairwise add. The sums are the same whole numbers of
/// 2^-16ths as `sample_blocks`' (`plan::WEIGHT_STEPS`: exact either way), so the floats are equal;
/// where `sample_blocks` takes two lookups, two multiplies, two widening adds and two
/// conversions a member and four outputs, then the blend down, this takes one lookup, two
/// multiplies, one add and one conversion (llvm-mca, docs/benchmark-log.md).
///
/// Not inlined, as `sample_blocks` (`scripts/neon-mca.sh` reads its loop).
///
/// # Safety
/// `plan.reach` bytes are readable from `r0` and `r1`.
#[inline(never)]
pub(super) unsafe fn rows_first_blocks<const M: usize>(
    row: &SampleRow<'_, Shuffle>,
    k: u8,
    out: &mut [Lines<f32>; 4],
) -> usize {
    let SampleRow { r0, r1, g, plan, wq, ahead, .. } = *row;
    assert!(g.members.len() >= M && (2..=4).contains(&M) && plan.windows == 2 && k != 0);
    assert!(plan.reach <= r0.len() && plan.reach <= r1.len(), "loads stay inside the rows");
    let (rows, width) = g.member_rows::<M>(out);
    let blocks = plan.bases.len().min(wq.len() / 8).min(plan.words.len() / M).min(width / 8);
    let (top, bottom) = (vdupq_n_u8(0u8.wrapping_sub(k)), vdupq_n_u8(k));
    let (bases, words) = (plan.bases.as_ptr(), plan.words.as_ptr());
    if blocks > 0 {
        first_asks(r0, plan.bases[0][0], ahead);
    }
    for b in 0..blocks {
        unsafe {
            let w = *bases.add(b);
            block_asks::<true>(r0, w[1], ahead);
            let at = wq.as_ptr().add(8 * b) as *const u16;
            let weights = [vld1q_u16(at), vld1q_u16(at.add(8))];
            let picks = words.add(b * M);
            // Outputs 4h..4h + 4 from window h (lane h of the AVX2 controls).
            for h in 0..2 {
                let (a, c) =
                    (vld1q_u8(r0.as_ptr().add(w[h] as usize)), vld1q_u8(r1.as_ptr().add(w[h] as usize)));
                let lo =
                    vmlal_u8(vmull_u8(vget_low_u8(a), vget_low_u8(top)), vget_low_u8(c), vget_low_u8(bottom));
                let hi = vmlal_high_u8(vmull_high_u8(a, top), c, bottom);
                let down = uint8x16x2_t(vreinterpretq_u8_u16(lo), vreinterpretq_u8_u16(hi));
                for j in 0..M {
                    let idx = vld1q_u8((picks.add(j) as *const u8).add(16 * h));
                    let words = vreinterpretq_u16_u8(vqtbl2q_u8(down, idx));
                    let across = vpaddq_u32(
                        vmull_u16(vget_low_u16(words), vget_low_u16(weights[h])),
                        vmull_high_u16(words, weights[h]),
                    );
                    // In 2^-16ths (`WEIGHT_UNIT` squared): the fixed-point conversion gives the
                    // floats a conversion and a multiply by 2^-16 do (below 2^24, both exact), in
                    // one instruction.
                    const { assert!(WEIGHT_UNIT * WEIGHT_UNIT * 65536.0 == 1.0) };
                    vst1q_f32(rows[j].add(8 * b + 4 * h), vcvtq_n_f32_u32::<16>(across));
                }
            }
        }
    }
    blocks
}
