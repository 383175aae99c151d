//! AVX2 bilinear sampling of two rows and two taps whose column weights are whole quarters of
//! 256ths: each row's tap bytes across first by one `pmaddubsw` a pair of members, then the two
//! rows down by one `pmaddwd`.

use super::super::hint::{first_asks, run_asks};
use super::super::lines::Lines;
use super::super::plan::{row_steps, SampleRow, Shuffle};
use super::Scaled;
use std::arch::x86_64::*;

/// The second row's weight in 256ths where `rows_first_blocks` takes a group's row: two rows (a
/// weight strictly between 0 and 1), two taps across, and `Shuffle::pairs` made (one vector of
/// windows, every column weight whole quarters).
pub(super) fn row_weight(wy: f32, single: bool, plan: &Shuffle) -> Option<u32> {
    row_steps(wy).filter(|_| !single && !plan.pairs.is_empty())
}

/// `shuffle_blocks::<1, M, false, true>` with the taps blended across in bytes: one `pshufb` a row
/// and pair of members puts each output's two tap bytes side by side (`Shuffle::pairs`), one
/// `pmaddubsw` blends them by the column weights in quarters (`(256 - w) / 4`, `w / 4`: at most
/// 64, a sum at most 255 · 64), an interleave of the two rows' words and one `pmaddwd` by the row
/// weights (`256 - k`, `k`) blend them down, then the scale by 2^-14 (`Scaled`: an `or` and a
/// subtract, the floats a conversion and a multiply make). The sums
/// are the whole numbers `shuffle_blocks` makes, divided by 4 (`plan::WEIGHT_STEPS`: exact
/// either way), so the floats are equal; where `shuffle_blocks` takes two shuffles, two
/// `pmaddwd`, two conversions and three float operations a member, this takes per pair of members
/// two shuffles, two `pmaddubsw`, two interleaves, two `pmaddwd`, two conversions and two scales
/// (NV12's U and V at 3×: 14 vector operations a block where 20 were, as many shuffles). Measured
/// (Intel Xeon, engine, AVX2 level, uint8, two builds alternated four to eight times): NV12 1080p
/// hot 0.193-0.196 -> 0.181-0.189 ms, 8 rotating frames 0.211-0.224 -> 0.205-0.220, 1600×900
/// 0.221-0.222 -> 0.210-0.211; float32 on 8 frames 0.333-0.336 -> 0.318-0.324.
///
/// # Safety
/// The CPU has AVX2; `plan.reach` bytes are readable from `r0` and `r1`.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn rows_first_blocks<const M: usize>(
    row: &SampleRow<'_, Shuffle>,
    k: u32,
    out: &mut [Lines<f32>; 4],
) -> usize {
    let SampleRow { r0, r1, g, plan, ahead, .. } = *row;
    let pairs = M.div_ceil(2);
    assert!(g.members.len() >= M && (1..=4).contains(&M) && plan.windows == 2 && (1..256).contains(&k));
    assert!(plan.reach <= r0.len() && plan.reach <= r1.len(), "loads stay inside the rows");
    let (rows, width) = g.member_rows::<M>(out);
    let blocks = plan.bases.len().min(plan.across.len()).min(plan.pairs.len() / pairs).min(width / 8);
    let down = _mm256_set1_epi32(((256 - k) | (k << 16)) as i32);
    // The sums are at most 255 · 64 · 256, below 2^23: `Scaled`'s range.
    let unit = Scaled::new(1.0 / (1 << 14) as f32);
    let (bases, controls, weights) = (plan.bases.as_ptr(), plan.pairs.as_ptr(), plan.across.as_ptr());
    if blocks > 0 {
        first_asks(r0, plan.bases[0][0], ahead);
    }
    for b in 0..blocks {
        unsafe {
            let w = *bases.add(b);
            run_asks::<true>(r0, b, w[1], ahead);
            let load = |r: &[u8]| {
                _mm256_loadu2_m128i(
                    r.as_ptr().add(w[1] as usize) as *const __m128i,
                    r.as_ptr().add(w[0] as usize) as *const __m128i,
                )
            };
            let (a, c) = (load(r0), load(r1));
            let across = _mm256_load_si256(weights.add(b) as *const __m256i);
            for p in 0..pairs {
                let ctl = _mm256_load_si256(controls.add(b * pairs + p) as *const __m256i);
                let h0 = _mm256_maddubs_epi16(_mm256_shuffle_epi8(a, ctl), across);
                let h1 = _mm256_maddubs_epi16(_mm256_shuffle_epi8(c, ctl), across);
                let v = _mm256_madd_epi16(_mm256_unpacklo_epi16(h0, h1), down);
                _mm256_storeu_ps(rows[2 * p].add(8 * b), unit.of(v));
                if 2 * p + 1 < M {
                    let v = _mm256_madd_epi16(_mm256_unpackhi_epi16(h0, h1), down);
                    _mm256_storeu_ps(rows[2 * p + 1].add(8 * b), unit.of(v));
                }
            }
        }
    }
    blocks
}
