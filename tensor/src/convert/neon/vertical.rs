//! The NEON level's PIL vertical pass over the byte ring (`multitap::pil8_row`).

use super::whole::{divide, umlal2};
use crate::convert::hint::Trickle;
use crate::convert::plan::{WholeRow, PIL_HALF, PIL_SHIFT};
use std::arch::aarch64::*;

/// PIL's vertical pass over rows of bytes into a component's row (f32 values of PIL's bytes, or
/// the bytes themselves: `Out`): with whole weights (`k`, `D` and `div`, `⌊t / 2D⌋`'s multiplier
/// and shift) 16 outputs a step, `t = 2S + D` in u16 by `umlal` of the doubled weights (bytes:
/// `2k ≤ 254`) and the division of the horizontal blocks (`whole::divide`); else PIL's 2^-22
/// weights in i32, eight a step. The lines `ahead` asked for through the steps. Over the f32
/// ring (four bytes a sample) the pass read four times the bytes and took an `mla` in i32 per
/// four outputs and row. Returns the outputs it wrote (whole steps).
///
/// # Safety
/// Every row pointer is readable for `out.len()` bytes.
pub(in crate::convert) unsafe fn vertical_bytes<O: Out>(
    rows: &[*const u8],
    wi: &[i32],
    whole: Option<WholeRow<'_>>,
    out: &mut [O],
    mut ahead: Trickle,
) -> usize {
    let o = out.as_mut_ptr();
    let fits = |w: &WholeRow| w.k.len() <= rows.len() && (w.n.is_empty() || w.n.len() == w.k.len());
    match whole.filter(fits) {
        // A tied row (`WholeRow::n`) through the steps of any number of rows, its remainders'
        // sums beside (two instances, not sixteen more).
        Some(WholeRow { k, d, div, n: ties }) if !ties.is_empty() => {
            let (b, len) = (o as *mut u8, out.len());
            match O::BYTES {
                false => unsafe { halves::<0, false, true>(rows, k, ties, d, div, b, len, &mut ahead) },
                true => unsafe { halves::<0, true, true>(rows, k, ties, d, div, b, len, &mut ahead) },
            }
        }
        Some(WholeRow { k, d, div, .. }) => {
            let (b, len) = (o as *mut u8, out.len());
            macro_rules! taps {
                ($($t:literal)*) => {
                    match (k.len(), O::BYTES) {
                        $(($t, false) => unsafe { halves::<$t, false, false>(rows, k, &[], d, div, b, len, &mut ahead) },)*
                        $(($t, true) => unsafe { halves::<$t, true, false>(rows, k, &[], d, div, b, len, &mut ahead) },)*
                        (_, false) => unsafe { halves::<0, false, false>(rows, k, &[], d, div, b, len, &mut ahead) },
                        (_, true) => unsafe { halves::<0, true, false>(rows, k, &[], d, div, b, len, &mut ahead) },
                    }
                };
            }
            taps!(1 2 3 4 5 6 7 8)
        }
        _ => {
            let n = out.len() / 8 * 8;
            let rows = &rows[..wi.len().min(rows.len())];
            let per = ahead.pace(n / 8);
            let (half, zero, top) = (vdupq_n_s32(PIL_HALF), vdupq_n_s32(0), vdupq_n_s32(255));
            for x in (0..n).step_by(8) {
                ahead.ask(per);
                unsafe {
                    let (mut lo, mut hi) = (half, half);
                    for (&r, &w) in rows.iter().zip(wi) {
                        let v = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(r.add(x))));
                        lo = vmlaq_n_s32(lo, vmovl_s16(vget_low_s16(v)), w);
                        hi = vmlaq_n_s32(hi, vmovl_high_s16(v), w);
                    }
                    let [lo, hi] = [lo, hi]
                        .map(|a| vminq_s32(vmaxq_s32(vshrq_n_s32::<{ PIL_SHIFT as i32 }>(a), zero), top));
                    O::put8(o.add(x), lo, hi);
                }
            }
            n
        }
    }
}

/// What PIL's vertical pass over bytes writes at this level: the components' f32 rows, or
/// (`u8`, `multitap::Sample::BYTES`) the bytes themselves, for the finish that only
/// interleaves them (`neon::finish_bytes`).
pub(in crate::convert) trait Out: crate::convert::multitap::Sample {
    /// Eight values 0..=255 (two halves of four) at `o`.
    unsafe fn put8(o: *mut Self, lo: int32x4_t, hi: int32x4_t);
}

impl Out for f32 {
    #[inline(always)]
    unsafe fn put8(o: *mut f32, lo: int32x4_t, hi: int32x4_t) {
        unsafe {
            vst1q_f32(o, vcvtq_f32_s32(lo));
            vst1q_f32(o.add(4), vcvtq_f32_s32(hi));
        }
    }
}

impl Out for u8 {
    #[inline(always)]
    unsafe fn put8(o: *mut u8, lo: int32x4_t, hi: int32x4_t) {
        let w = vcombine_u16(vqmovun_s32(lo), vqmovun_s32(hi));
        unsafe { vst1_u8(o, vqmovn_u16(w)) }
    }
}

/// The whole-weight steps over `N` rows (their weights and pointers in registers across the row;
/// 0: any number, up to `multitap::VTAPS`, from memory), their quotients as floats at `o`, or
/// (`BYTES`) as bytes. One body per `N`, not inlined (a call per member and output row). The
/// asking goes through a copy of `ahead`: through the reference, each step's asking stored it
/// back. With `TIE` (a row whole only with ties, `weights::pil_tied`: the remainders `ties`)
/// the remainders' sums beside, in i16, and `t` less two where they are negative (PIL's byte
/// one less on a tie, as `whole::tap_blocks`).
#[inline(never)]
#[allow(clippy::too_many_arguments)]
unsafe fn halves<const N: usize, const BYTES: bool, const TIE: bool>(
    rows: &[*const u8],
    k: &[i16],
    ties: &[i8],
    d: u8,
    (mul, shift): (u16, u16),
    o: *mut u8,
    len: usize,
    ahead: &mut Trickle,
) -> usize {
    let taps = if N == 0 { k.len().min(rows.len()).min(64) } else { N };
    assert!(taps <= k.len() && taps <= rows.len());
    // Twice the weights, as bytes (`k ≤ D ≤ WHOLE_MAX`).
    let (mut kk, mut at) = ([vdupq_n_u8(0); 64], [std::ptr::null::<u8>(); 64]);
    let mut nn = [0i16; 64];
    for j in 0..taps {
        kk[j] = vdupq_n_u8((2 * k[j]) as u8);
        at[j] = rows[j];
        if TIE {
            nn[j] = ties[j] as i16;
        }
    }
    let n = len / 16 * 16;
    let mut asking = *ahead;
    let per = asking.pace(n / 16);
    let (dv, m, s) = (vdupq_n_u16(d as u16), vdupq_n_u16(mul), vdupq_n_s16(-(shift as i16)));
    for x in (0..n).step_by(16) {
        asking.ask(per);
        unsafe {
            // From four rows, the even and the odd ones in two chains (as `whole::tap_blocks`).
            let chains = if N >= 4 || N == 0 { 2 } else { 1 };
            let zero = vdupq_n_u16(0);
            let (mut lo, mut hi) = ([dv, zero], [dv, zero]);
            for j in 0..taps {
                let (v, c) = (vld1q_u8(at[j].add(x)), j % chains);
                lo[c] = vmlal_u8(lo[c], vget_low_u8(v), vget_low_u8(kk[j]));
                hi[c] = umlal2(hi[c], v, kk[j]);
            }
            let (mut lo, mut hi) = match chains {
                1 => (lo[0], hi[0]),
                _ => (vaddq_u16(lo[0], lo[1]), vaddq_u16(hi[0], hi[1])),
            };
            if TIE {
                let (mut e0, mut e1) = (vdupq_n_s16(0), vdupq_n_s16(0));
                for j in 0..taps {
                    let v = vld1q_u8(at[j].add(x));
                    e0 = vmlaq_n_s16(e0, vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(v))), nn[j]);
                    e1 = vmlaq_n_s16(e1, vreinterpretq_s16_u16(vmovl_high_u8(v)), nn[j]);
                }
                lo = vaddq_u16(lo, vshlq_n_u16::<1>(vcltzq_s16(e0)));
                hi = vaddq_u16(hi, vshlq_n_u16::<1>(vcltzq_s16(e1)));
            }
            if BYTES {
                let (lo, hi) = (divide(lo, m, s), divide(hi, m, s));
                vst1q_u8(o.add(x), vcombine_u8(vmovn_u16(lo), vmovn_u16(hi)));
                continue;
            }
            let o = o as *mut f32;
            for (h, t) in [lo, hi].into_iter().enumerate() {
                let q = divide(t, m, s);
                vst1q_f32(o.add(x + 8 * h), vcvtq_f32_u32(vmovl_u16(vget_low_u16(q))));
                vst1q_f32(o.add(x + 8 * h + 4), vcvtq_f32_u32(vmovl_high_u16(q)));
            }
        }
    }
    *ahead = asking;
    n
}

/// PIL's vertical pass straight over a plane's source rows into one row of bytes (PIL's filters
/// blended down first, `multitap::pil8_down_first`) with whole weights (`2k` a byte): `halves`'
/// steps, their bytes stored. Returns the bytes written (whole steps); 0 where the weights are
/// not such.
///
/// # Safety
/// Every row pointer is readable for `out.len()` bytes.
pub(in crate::convert) unsafe fn down_bytes(
    rows: &[*const u8],
    k: &[i16],
    (d, div): (u8, (u16, u16)),
    out: &mut [u8],
) -> usize {
    if k.len() > rows.len() || !k.iter().all(|&k| (0..=127).contains(&k)) {
        return 0;
    }
    let (o, len, mut none) = (out.as_mut_ptr(), out.len(), Trickle::NONE);
    macro_rules! taps {
        ($($t:literal)*) => {
            match k.len() {
                $($t => unsafe { halves::<$t, true, false>(rows, k, &[], d, div, o, len, &mut none) },)*
                _ => unsafe { halves::<0, true, false>(rows, k, &[], d, div, o, len, &mut none) },
            }
        };
    }
    taps!(1 2 3 4 5 6 7 8)
}

#[cfg(test)]
mod tests {
    use super::{vertical_bytes, Trickle, WholeRow};

    /// Rows whole only with ties give PIL's byte through `halves`' remainder sums
    /// (`plan::check_tied_rows`).
    #[test]
    fn tied_rows_give_pils_bytes() {
        crate::convert::plan::check_tied_rows_of!(super::vertical_bytes, 16);
    }

    /// The vertical pass gives PIL's byte, `⌊(Σ wi · b + 2^21) / 2^22⌋`: with whole weights
    /// (`wi = 2^22 k / D` rounded, `weights::pil_whole`: 3×'s and 2.5×'s triangles, one to nine
    /// rows, a weight of 80) by the u16 sums and the division, without them by the 2^-22 sums,
    /// over lengths around the steps (the outputs past them are the caller's).
    #[test]
    fn vertical_bytes_give_pils_bytes() {
        let cases: [&[i16]; 6] =
            [&[1, 2, 3, 2, 1], &[1, 5, 9, 7, 3], &[40, 40, 11], &[1], &[80, 11], &[3; 9]];
        let mut checked = 0;
        for k in cases {
            let d: i16 = k.iter().sum();
            let div = crate::convert::plan::divider(d as u16).expect("a divider");
            let wi: Vec<i32> =
                k.iter().map(|&k| ((k as f64) * (1u64 << 22) as f64 / d as f64).round() as i32).collect();
            for n in [16, 24, 40, 64, 640, 650] {
                let rows: Vec<Vec<u8>> = (0..k.len())
                    .map(|r| (0..n).map(|i| ((i * 97 + r * 61 + i * i * 13) % 256) as u8).collect())
                    .collect();
                let at: Vec<*const u8> = rows.iter().map(|r| r.as_ptr()).collect();
                for whole in [true, false] {
                    let mut out = vec![-1f32; n];
                    let w = whole.then_some(WholeRow { k, d: d as u8, div, n: &[] });
                    let done = unsafe { vertical_bytes(&at, &wi, w, &mut out, Trickle::NONE) };
                    // The same pass storing bytes: the floats' values, as bytes, and nothing past.
                    let mut bytes = vec![0xa5u8; n];
                    let done8 = unsafe { vertical_bytes(&at, &wi, w, &mut bytes, Trickle::NONE) };
                    assert_eq!(done8, done, "weights {k:?}");
                    for x in 0..n {
                        let want = if x < done { out[x] as u8 } else { 0xa5 };
                        assert_eq!(bytes[x], want, "weights {k:?}, {n} outputs, byte {x}");
                    }
                    let step = if whole { 16 } else { 8 };
                    assert_eq!(done, n / step * step, "weights {k:?}");
                    for x in 0..n {
                        if x >= done {
                            assert_eq!(out[x], -1.0, "nothing written past the steps");
                            continue;
                        }
                        let acc: i64 = (0..k.len()).map(|j| wi[j] as i64 * rows[j][x] as i64).sum();
                        let pil = ((acc + (1 << 21)) >> 22).clamp(0, 255);
                        assert_eq!(out[x], pil as f32, "weights {k:?} over {d}, {n} outputs, output {x}");
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 10_000, "{checked}");
    }
}
