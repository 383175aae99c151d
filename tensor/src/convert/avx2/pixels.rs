//! The AVX2 level's multi-tap horizontal pass over four-byte pixels (`plan::Pixels`): a lane
//! per output pixel, its channels side by side.

use crate::convert::hint::prefetch;
use crate::convert::plan::{Pixels, PIL_HALF, PIL_SHIFT, PIL_SPLIT, TAIL_COPY, TAP_UNIT};
use std::arch::x86_64::*;

/// The pixel blocks of `plan` over source rows `rows` into each row's members' rows `out[i]`
/// (`members` of them, channel `m` of a pixel to row `m`), the same sums as `multitap` (exact in
/// i32, then PIL's byte as i32 bits or the OpenCV presets' value); the lines `ahead` bytes on
/// asked for as they are read (`baseline::ahead_bytes`; 0: none). Returns the outputs each
/// member has from the blocks.
///
/// # Safety
/// The CPU has AVX2; `out[i]` holds `members` rows, each `plan.done` writable values.
#[target_feature(enable = "avx2,fma")]
pub(in crate::convert) unsafe fn pixels(
    rows: &[&[u8]],
    plan: &Pixels,
    pil: bool,
    members: usize,
    out: &[[*mut f32; 4]],
    ahead: usize,
) -> usize {
    assert!(
        rows.len() == out.len() && rows.iter().all(|r| plan.reach <= r.len()),
        "loads stay inside the rows"
    );
    assert!(plan.hi.len() >= 4 * plan.pairs * (plan.done / 8) && (!pil || plan.lo.len() == plan.hi.len()));
    assert!(plan.bases.len() >= plan.done && (3..=4).contains(&members));
    let blocks = plan.done / 8;
    for (row, out) in rows.iter().zip(out) {
        // The blocks past the row's end read its last bytes from a copy.
        let mut copy = [0u8; TAIL_COPY];
        copy[..plan.reach - plan.tail].copy_from_slice(&row[plan.tail..plan.reach]);
        let parts = [
            (row.as_ptr(), 0..plan.edge, ahead),
            (copy.as_ptr().wrapping_sub(plan.tail), plan.edge..blocks, 0),
        ];
        for (src, range, ahead) in parts {
            macro_rules! go {
                ($w:expr) => {
                    match (pil, members) {
                        (true, 3) => unsafe { pixel_blocks::<$w, true, 3>(src, plan, range, out, ahead) },
                        (true, _) => unsafe { pixel_blocks::<$w, true, 4>(src, plan, range, out, ahead) },
                        (false, 3) => unsafe { pixel_blocks::<$w, false, 3>(src, plan, range, out, ahead) },
                        (false, _) => unsafe { pixel_blocks::<$w, false, 4>(src, plan, range, out, ahead) },
                    }
                };
            }
            match plan.windows {
                1 => go!(1),
                2 => go!(2),
                3 => go!(3),
                _ => go!(4),
            }
        }
    }
    plan.done
}

/// Blocks `range` with `W` windows a pixel, PIL's split weights or not, `M` members stored;
/// `src` the row (or the copy of its end, addressed as the row).
#[inline(always)]
unsafe fn pixel_blocks<const W: usize, const PIL: bool, const M: usize>(
    src: *const u8,
    plan: &Pixels,
    range: std::ops::Range<usize>,
    out: &[*mut f32; 4],
    ahead: usize,
) {
    let zero = _mm256_setzero_si256();
    // Dword `c` of a lane: channel `c` of the window's pixels 0 and 1 (control 0) or 2 and 3
    // (control 1), as i16 halves.
    let z = -128i8;
    #[rustfmt::skip]
    let ctl = [
        _mm256_setr_epi8(0, z, 4, z, 1, z, 5, z, 2, z, 6, z, 3, z, 7, z,
                         0, z, 4, z, 1, z, 5, z, 2, z, 6, z, 3, z, 7, z),
        _mm256_setr_epi8(8, z, 12, z, 9, z, 13, z, 10, z, 14, z, 11, z, 15, z,
                         8, z, 12, z, 9, z, 13, z, 10, z, 14, z, 11, z, 15, z),
    ];
    let unit = _mm256_set1_ps(TAP_UNIT);
    let half = _mm256_set1_epi32(PIL_HALF);
    let top = _mm256_set1_epi32(255);
    let pairs = plan.pairs;
    let (bases, hi, lo) =
        (plan.bases.as_ptr(), plan.hi.as_ptr() as *const __m256i, plan.lo.as_ptr() as *const __m256i);
    for b in range {
        unsafe {
            if ahead != 0 {
                let (first, last) = (*bases.add(8 * b) as usize, *bases.add(8 * b + 7) as usize + 16 * W - 1);
                let mut at = first;
                while at <= last {
                    prefetch(src.wrapping_add(at + ahead));
                    at += 64;
                }
                prefetch(src.wrapping_add(last + ahead));
            }
            // Register i: pixels 8b + i (low lane) and 8b + 4 + i (high lane), every channel.
            let mut sums = [zero; 4];
            for (i, sum) in sums.iter_mut().enumerate() {
                let (a, c) = (*bases.add(8 * b + i) as usize, *bases.add(8 * b + 4 + i) as usize);
                let (mut sh, mut sl) = (zero, zero);
                for q in 0..W {
                    let v = _mm256_loadu2_m128i(
                        src.add(c + 16 * q) as *const __m128i,
                        src.add(a + 16 * q) as *const __m128i,
                    );
                    for h in 0..2 {
                        let p = 2 * q + h;
                        if p >= pairs {
                            break;
                        }
                        let t = _mm256_shuffle_epi8(v, ctl[h]);
                        let at = plan.at(b, i, p);
                        sh = _mm256_add_epi32(sh, _mm256_madd_epi16(t, _mm256_load_si256(hi.add(at))));
                        if PIL {
                            sl = _mm256_add_epi32(sl, _mm256_madd_epi16(t, _mm256_load_si256(lo.add(at))));
                        }
                    }
                }
                *sum = match PIL {
                    true => {
                        let s = _mm256_add_epi32(
                            _mm256_add_epi32(_mm256_slli_epi32::<{ PIL_SPLIT as i32 }>(sh), sl),
                            half,
                        );
                        let s = _mm256_srai_epi32::<{ PIL_SHIFT as i32 }>(s);
                        // As i32 bits (see `baseline::pil_byte`).
                        _mm256_min_epi32(_mm256_max_epi32(s, zero), top)
                    }
                    false => _mm256_castps_si256(_mm256_mul_ps(_mm256_cvtepi32_ps(sh), unit)),
                };
            }
            // Per half: pixels × channels to channels × pixels; channel m of pixels 8b..8b + 8.
            let (t0, t1) = (_mm256_unpacklo_epi32(sums[0], sums[1]), _mm256_unpackhi_epi32(sums[0], sums[1]));
            let (t2, t3) = (_mm256_unpacklo_epi32(sums[2], sums[3]), _mm256_unpackhi_epi32(sums[2], sums[3]));
            let ch = [
                _mm256_unpacklo_epi64(t0, t2),
                _mm256_unpackhi_epi64(t0, t2),
                _mm256_unpacklo_epi64(t1, t3),
                _mm256_unpackhi_epi64(t1, t3),
            ];
            for m in 0..M {
                _mm256_storeu_ps(out[m].add(8 * b), _mm256_castsi256_ps(ch[m]));
            }
        }
    }
}
