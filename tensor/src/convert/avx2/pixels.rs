//! The AVX2 level's multi-tap horizontal pass over four-byte pixels (`plan::Pixels`): a lane
//! per output pixel, its channels side by side.

use super::taps::pil_bytes;
use crate::convert::hint::{prefetch, prefetch_span, Trickle};
use crate::convert::plan::{Pixels, TAIL_COPY, TAP_UNIT};
use std::arch::x86_64::*;

/// The pixel blocks of `plan` over source rows `rows` into each row's members' rows `out[i]`
/// (`members` of them, channel `m` of a pixel to row `m`), the same sums as `multitap` (exact in
/// i32, then PIL's byte as i32 bits or the OpenCV presets' value); the lines `ahead` bytes on
/// asked for as they are read (`multitap::ahead_bytes`; 0: none). Returns the outputs each
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
    assert!(
        !pil || plan.whole.is_empty()
            || (plan.whole.len() >= blocks
                && plan.wk.len() >= 4 * blocks * plan.windows
                && [&plan.wd, &plan.wm, &plan.ws].iter().all(|v| v.len() >= 4 * blocks)),
        "whole-weight tables for every block"
    );
    assert!(!plan.words, "a plan over bytes");
    for (row, out) in rows.iter().zip(out) {
        unsafe { run::<false, false>(row, plan, pil, members, out, TAP_UNIT, (ahead, Trickle::NONE)) };
    }
    plan.done
}

/// `pixels` for PIL's filters into rows of bytes (`multitap::pil8_row`).
///
/// # Safety
/// As `pixels`, each row `plan.done` writable bytes.
#[target_feature(enable = "avx2,fma")]
pub(in crate::convert) unsafe fn pixels_bytes(
    rows: &[&[u8]],
    plan: &Pixels,
    members: usize,
    out: &[[*mut u8; 4]],
    ahead: usize,
) -> usize {
    assert!(
        rows.len() == out.len() && rows.iter().all(|r| plan.reach <= r.len()),
        "loads stay inside the rows"
    );
    assert!(plan.hi.len() >= 4 * plan.pairs * (plan.done / 8) && plan.lo.len() == plan.hi.len());
    assert!(plan.bases.len() >= plan.done && (3..=4).contains(&members) && !plan.words);
    let blocks = plan.done / 8;
    assert!(
        plan.whole.is_empty()
            || (plan.whole.len() >= blocks
                && plan.wk.len() >= 4 * blocks * plan.windows
                && [&plan.wd, &plan.wm, &plan.ws].iter().all(|v| v.len() >= 4 * blocks)),
        "whole-weight tables for every block"
    );
    for (row, out) in rows.iter().zip(out) {
        // The same pointers, cast back to bytes where the kernel stores.
        let out = out.map(|p| p as *mut f32);
        unsafe { run::<false, true>(row, plan, true, members, &out, TAP_UNIT, (ahead, Trickle::NONE)) };
    }
    plan.done
}

/// The pixel blocks of a `words` plan (an exact box's rows summed first, `multitap::box_row`) over
/// the sums `sums` into the members' rows `out` (null past them): per tap pair one `pshufb` and
/// one `pmaddwd`, exact in i32, times `inv`, as `box_blocks`, asking for the lines `ahead`
/// through the blocks. Returns the outputs each member has.
///
/// # Safety
/// The CPU has AVX2; `out` holds 3 or 4 rows, each `plan.done` writable values.
#[target_feature(enable = "avx2,fma")]
pub(in crate::convert) unsafe fn pixel_words(
    sums: &[u16],
    plan: &Pixels,
    inv: f32,
    out: [*mut f32; 4],
    ahead: Trickle,
) -> usize {
    let members = out.iter().take_while(|p| !p.is_null()).count();
    let bytes = unsafe { std::slice::from_raw_parts(sums.as_ptr() as *const u8, 2 * sums.len()) };
    assert!(
        plan.words && plan.reach <= bytes.len() && (3..=4).contains(&members),
        "loads stay inside the sums"
    );
    assert!(plan.hi.len() >= 4 * plan.pairs * (plan.done / 8) && plan.bases.len() >= plan.done);
    unsafe { run::<true, false>(bytes, plan, false, members, &out, inv, (0, ahead)) };
    plan.done
}

/// One row's blocks: those inside the row read it, those past its end a copy of its last bytes.
/// `ahead`: how far on the lines read are asked for again (`pixel_blocks`), and the lines asked
/// for through the blocks (`hint::Trickle`).
#[inline(always)]
unsafe fn run<const WORDS: bool, const BYTES: bool>(
    row: &[u8],
    plan: &Pixels,
    pil: bool,
    members: usize,
    out: &[*mut f32; 4],
    scale: f32,
    (ahead, mut trickle): (usize, Trickle),
) {
    let blocks = plan.done / 8;
    let per = trickle.pace(blocks);
    let mut copy = [0u8; TAIL_COPY];
    copy[..plan.reach - plan.tail].copy_from_slice(&row[plan.tail..plan.reach]);
    let parts =
        [(row.as_ptr(), 0..plan.edge, ahead), (copy.as_ptr().wrapping_sub(plan.tail), plan.edge..blocks, 0)];
    for (src, range, ahead) in parts {
        macro_rules! go {
            ($w:expr) => {{
                let t = (&mut trickle, per);
                match (pil, members) {
                    (true, 3) => unsafe {
                        pixel_blocks::<$w, true, 3, WORDS, BYTES>(src, plan, range, out, scale, ahead, t)
                    },
                    (true, _) => unsafe {
                        pixel_blocks::<$w, true, 4, WORDS, BYTES>(src, plan, range, out, scale, ahead, t)
                    },
                    (false, 3) => unsafe {
                        pixel_blocks::<$w, false, 3, WORDS, BYTES>(src, plan, range, out, scale, ahead, t)
                    },
                    (false, _) => unsafe {
                        pixel_blocks::<$w, false, 4, WORDS, BYTES>(src, plan, range, out, scale, ahead, t)
                    },
                }
            }};
        }
        match plan.windows {
            1 => go!(1),
            2 => go!(2),
            3 => go!(3),
            _ => go!(4),
        }
    }
}

/// Blocks `range` with `W` windows a pixel, PIL's split weights or not, `M` members stored, over
/// bytes or u16 sums (`WORDS`: a window is two pixels, one tap pair); `src` the row (or the copy
/// of its end, addressed as the row); the OpenCV presets' and the sums' i32 times `scale`;
/// `per` lines of `trickle` asked for a block.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn pixel_blocks<
    const W: usize,
    const PIL: bool,
    const M: usize,
    const WORDS: bool,
    const BYTES: bool,
>(
    src: *const u8,
    plan: &Pixels,
    range: std::ops::Range<usize>,
    out: &[*mut f32; 4],
    scale: f32,
    ahead: usize,
    (trickle, per): (&mut Trickle, u32),
) {
    let zero = _mm256_setzero_si256();
    // Dword `c` of a lane: channel `c` of the window's pixels 0 and 1 (control 0) or 2 and 3
    // (control 1), as i16 halves.
    let z = -128i8;
    #[rustfmt::skip]
    let ctl = match WORDS {
        false => [
            _mm256_setr_epi8(0, z, 4, z, 1, z, 5, z, 2, z, 6, z, 3, z, 7, z,
                             0, z, 4, z, 1, z, 5, z, 2, z, 6, z, 3, z, 7, z),
            _mm256_setr_epi8(8, z, 12, z, 9, z, 13, z, 10, z, 14, z, 11, z, 15, z,
                             8, z, 12, z, 9, z, 13, z, 10, z, 14, z, 11, z, 15, z),
        ],
        // Sums: channel c's u16 of the window's two pixels.
        true => [_mm256_setr_epi8(0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15,
                                  0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15); 2],
    };
    let per_window = if WORDS { 1 } else { 2 };
    // Whole weights: channel c's taps 0-1 and 2-3 of the window side by side (i16s 2c, 2c + 1).
    #[rustfmt::skip]
    let four = _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,
                                0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    let ones = _mm256_set1_epi16(1);
    let (whole, any_whole) = (plan.whole.as_ptr(), !plan.whole.is_empty());
    let (wk, wd) = (plan.wk.as_ptr() as *const __m256i, plan.wd.as_ptr() as *const __m256i);
    let (wm, ws) = (plan.wm.as_ptr() as *const __m256i, plan.ws.as_ptr() as *const __m256i);
    let unit = _mm256_set1_ps(scale);
    let pairs = plan.pairs;
    let (bases, hi, lo) =
        (plan.bases.as_ptr(), plan.hi.as_ptr() as *const __m256i, plan.lo.as_ptr() as *const __m256i);
    // Window `q` of the pixels whose taps start at bytes `a` (low lane) and `c` (high lane).
    let window = |a: usize, c: usize, q: usize| unsafe {
        _mm256_loadu2_m128i(src.add(c + 16 * q) as *const __m128i, src.add(a + 16 * q) as *const __m128i)
    };
    for b in range {
        // Only the sums' blocks ask (the bytes' pass passes nothing, and keeps its loop as it was).
        if WORDS {
            trickle.ask(per);
        }
        unsafe {
            if ahead != 0 {
                let (first, last) = (*bases.add(8 * b) as usize, *bases.add(8 * b + 7) as usize + 16 * W - 1);
                prefetch_span(src.wrapping_add(ahead), first, last);
            }
            // Register i: pixels 8b + i (low lane) and 8b + 4 + i (high lane), every channel.
            let mut sums = [zero; 4];
            if PIL && any_whole && *whole.add(b) {
                for (i, sum) in sums.iter_mut().enumerate() {
                    let (a, c) = (*bases.add(8 * b + i) as usize, *bases.add(8 * b + 4 + i) as usize);
                    // Σ k · b in i16 (at most 255 · 127): per window its four taps of each
                    // channel in adjacent bytes, added in pairs by one `pmaddubsw`.
                    let mut acc = zero;
                    for q in 0..W {
                        let v = window(a, c, q);
                        let k = _mm256_load_si256(wk.add(plan.window(b, i, q)));
                        acc = _mm256_add_epi16(acc, _mm256_maddubs_epi16(_mm256_shuffle_epi8(v, four), k));
                    }
                    let at = 4 * b + i;
                    // S per channel, then PIL's byte ⌊(2S + D) / 2D⌋ (below 2^32 before the shift).
                    let s = _mm256_madd_epi16(acc, ones);
                    let t = _mm256_add_epi32(_mm256_add_epi32(s, s), _mm256_load_si256(wd.add(at)));
                    let q = _mm256_mullo_epi32(t, _mm256_load_si256(wm.add(at)));
                    *sum = _mm256_srlv_epi32(q, _mm256_load_si256(ws.add(at)));
                }
            } else {
                for (i, sum) in sums.iter_mut().enumerate() {
                    let (a, c) = (*bases.add(8 * b + i) as usize, *bases.add(8 * b + 4 + i) as usize);
                    let (mut sh, mut sl) = (zero, zero);
                    for q in 0..W {
                        let v = window(a, c, q);
                        for h in 0..per_window {
                            let p = per_window * q + h;
                            if p >= pairs {
                                break;
                            }
                            let t = _mm256_shuffle_epi8(v, ctl[h]);
                            let at = plan.at(b, i, p);
                            sh = _mm256_add_epi32(sh, _mm256_madd_epi16(t, _mm256_load_si256(hi.add(at))));
                            if PIL {
                                sl =
                                    _mm256_add_epi32(sl, _mm256_madd_epi16(t, _mm256_load_si256(lo.add(at))));
                            }
                        }
                    }
                    *sum = match PIL {
                        true => pil_bytes(sh, sl),
                        false => _mm256_castps_si256(_mm256_mul_ps(_mm256_cvtepi32_ps(sh), unit)),
                    };
                }
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
            if BYTES {
                // PIL's bytes (below 256): channel m's eight in the m-th quarter.
                let b4 =
                    _mm256_packus_epi16(_mm256_packus_epi32(ch[0], ch[1]), _mm256_packus_epi32(ch[2], ch[3]));
                let v = _mm256_permutevar8x32_epi32(b4, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
                let (l0, l1) = (_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
                let halves = [l0, _mm_unpackhi_epi64(l0, l0), l1, _mm_unpackhi_epi64(l1, l1)];
                for m in 0..M {
                    _mm_storel_epi64((out[m] as *mut u8).add(8 * b) as *mut __m128i, halves[m]);
                }
                continue;
            }
            for m in 0..M {
                _mm256_storeu_ps(out[m].add(8 * b), _mm256_castsi256_ps(ch[m]));
            }
        }
    }
}

/// A row of four-byte pixels split into its channels' rows (`plan::Planar`): `out[c][p]` is
/// byte `c` of pixel `p`, for every whole pixel of `row` and every channel whose `out[c]` is not
/// null (`driver::planar_members`); sixteen pixels a step (two in-lane 4×4 byte transposes, a
/// dword permute each, the quarters' halves put together), the last step moved back to end at
/// the row's end, rows under a step by the scalar loop. The lines `ahead` bytes on asked for as
/// they are read (0: none).
///
/// # Safety
/// The CPU has AVX2; each `out[c]` is null or writable for `row.len() / 4` bytes.
#[target_feature(enable = "avx2")]
pub(in crate::convert) unsafe fn pack_planar(row: &[u8], out: [*mut u8; 4], ahead: usize) {
    let n = row.len() / 4;
    if n < 16 {
        for p in 0..n {
            for (c, o) in out.iter().enumerate().filter(|(_, o)| !o.is_null()) {
                unsafe { *o.add(p) = row[4 * p + c] };
            }
        }
        return;
    }
    #[rustfmt::skip]
    let ctl = _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,
                               0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    // Pixels `j..j + 16`: each load's channels as [c0 c1 | c2 c3] of eight pixels, then the two
    // loads' eights side by side.
    let step = |j: usize| unsafe {
        let at = row.as_ptr().add(4 * j);
        let split = |v: *const u8| {
            _mm256_permutevar8x32_epi32(
                _mm256_shuffle_epi8(_mm256_loadu_si256(v as *const __m256i), ctl),
                order,
            )
        };
        let (a, b) = (split(at), split(at.add(32)));
        let (even, odd) = (_mm256_unpacklo_epi64(a, b), _mm256_unpackhi_epi64(a, b));
        // (Four tests, not a loop over the quarters: with the loop 1080p RGBA
        // `bilinear-antialias` took 1.6 ms hot for 1.2.)
        if !out[0].is_null() {
            _mm_storeu_si128(out[0].add(j) as *mut __m128i, _mm256_castsi256_si128(even));
        }
        if !out[1].is_null() {
            _mm_storeu_si128(out[1].add(j) as *mut __m128i, _mm256_castsi256_si128(odd));
        }
        if !out[2].is_null() {
            _mm_storeu_si128(out[2].add(j) as *mut __m128i, _mm256_extracti128_si256::<1>(even));
        }
        if !out[3].is_null() {
            _mm_storeu_si128(out[3].add(j) as *mut __m128i, _mm256_extracti128_si256::<1>(odd));
        }
    };
    let mut j = 0;
    while j + 16 <= n {
        if ahead != 0 {
            prefetch(row.as_ptr().wrapping_add(4 * j + ahead));
        }
        step(j);
        j += 16;
    }
    if j < n {
        step(n - 16);
    }
}

#[cfg(test)]
mod tests {
    /// Every whole pixel's channels land in their rows, on rows shorter than a step, of a few
    /// steps and with a last step moved back, and nothing is written past them.
    #[test]
    fn planar_rows_are_the_channels() {
        if !is_x86_feature_detected!("avx2") {
            return;
        }
        // A null row is a channel no member blends (RGBA's or ARGB's alpha): not written.
        for skip in [None, Some(0), Some(3)] {
            for pixels in [0usize, 3, 15, 16, 17, 31, 33, 640, 1920] {
                let row: Vec<u8> = (0..4 * pixels + 3).map(|i| (i * 29 + 7) as u8).collect();
                let mut planes = vec![vec![0x3cu8; pixels + 8]; 4];
                let out: [*mut u8; 4] = std::array::from_fn(|c| match Some(c) == skip {
                    true => std::ptr::null_mut(),
                    false => planes[c].as_mut_ptr(),
                });
                unsafe { super::pack_planar(&row[..4 * pixels], out, 0) };
                for (c, plane) in planes.iter().enumerate() {
                    let want: Vec<u8> = match Some(c) == skip {
                        true => vec![0x3c; pixels],
                        false => (0..pixels).map(|p| row[4 * p + c]).collect(),
                    };
                    assert_eq!(&plane[..pixels], &want[..], "{pixels} pixels, channel {c}, {skip:?} skipped");
                    assert!(plane[pixels..].iter().all(|&b| b == 0x3c), "{pixels}: past the row");
                }
            }
        }
    }
}
