//! The finish of PIL's filters where the output's bytes are an RGB source's components
//! (`FinishValues::interleaves_bytes`): the vertical pass's bytes ordered and interleaved into
//! the output, with no floats between.

use super::super::finish::{finish_bytes_by, FinishValues, SendPtr};
use super::super::lines::Lines;
use std::arch::x86_64::*;

/// Per output vector `v` (bytes `64v..64v + 64` of a run of 64 RGB pixels), the index vectors
/// of `permutex2var(first, a, second)` (the first two channels in place, the third's bytes
/// unused) and of `permutex2var(that, b, third)`.
const fn interleave_rgb() -> [[[u8; 64]; 2]; 3] {
    let mut t = [[[0u8; 64]; 2]; 3];
    let mut v = 0;
    while v < 3 {
        let mut j = 0;
        while j < 64 {
            let (p, c) = ((64 * v + j) / 3, (64 * v + j) % 3);
            t[v][0][j] = match c {
                0 => p as u8,
                1 => 64 + p as u8,
                _ => 0,
            };
            t[v][1][j] = if c == 2 { 64 + p as u8 } else { j as u8 };
            j += 1;
        }
        v += 1;
    }
    t
}

static INTERLEAVE_RGB: [[[u8; 64]; 2]; 3] = interleave_rgb();

/// Row `y`'s content columns from the components' bytes `comps` (`finish::finish_bytes_by`):
/// interleaved 64 pixels a step by two `vpermt2b` per 64 output bytes. Returns the columns it
/// wrote (all of them).
///
/// # Safety
/// The CPU has AVX-512 F/BW/VBMI; `dst` holds the converter's layout, whose row `y` the caller
/// owns.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
pub(in crate::convert) unsafe fn finish_bytes(
    f: &FinishValues,
    comps: &[Lines<u8>; 4],
    dst: SendPtr,
    y: usize,
) -> usize {
    let steps = |ch: [&[u8]; 3], row: *mut u8, flip: u8| {
        let n = ch[0].len();
        let flips = _mm512_set1_epi8(flip as i8);
        let mut x = 0;
        while x + 64 <= n {
            unsafe {
                let at = |i: usize| _mm512_loadu_si512(ch[i].as_ptr().add(x) as *const _);
                let (c0, c1, c2) = (at(0), at(1), at(2));
                for v in 0..3 {
                    let a = _mm512_loadu_si512(INTERLEAVE_RGB[v][0].as_ptr() as *const _);
                    let b = _mm512_loadu_si512(INTERLEAVE_RGB[v][1].as_ptr() as *const _);
                    let o = _mm512_permutex2var_epi8(_mm512_permutex2var_epi8(c0, a, c1), b, c2);
                    _mm512_storeu_si512(row.add(3 * x + 64 * v) as *mut _, _mm512_xor_si512(o, flips));
                }
            }
            x += 64;
        }
        x
    };
    unsafe { finish_bytes_by(f, comps, dst, y, steps) }
}

/// Row `y`'s content columns from one row of the components' bytes side by side, three a pixel
/// (`plan::Whole::ten_interleaved`'s rows blended down), where the output's channel `i` is byte
/// `pick[i]` of each pixel: 21 pixels a step by one `vpermb` (a copy, for RGB in the members'
/// order). Returns the columns it wrote (all of them).
///
/// # Safety
/// The CPU has AVX-512 F/BW/VBMI; `dst` holds the converter's layout (pixels interleaved), whose
/// row `y` the caller owns.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
pub(in crate::convert) unsafe fn finish_side_by_side(
    f: &FinishValues,
    row: &[u8],
    pick: [usize; 3],
    dst: SendPtr,
    y: usize,
) -> usize {
    assert!(!f.chw && pick.iter().all(|&p| p < 3), "pixels interleaved, three bytes each");
    let n = f.width.min(row.len() / 3);
    let bytes = 3 * n;
    let table: [u8; 64] = std::array::from_fn(|j| match j < 63 {
        true => (3 * (j / 3) + pick[j % 3]) as u8,
        false => 63,
    });
    unsafe {
        let out = dst.0.add(y * f.row_stride + 3 * f.x0);
        let t = _mm512_loadu_si512(table.as_ptr() as *const _);
        let flips = _mm512_set1_epi8(if f.signed { 0x80u8 as i8 } else { 0 });
        let mut x = 0;
        // 64 bytes loaded, the first 63 (21 pixels) stored.
        while x + 64 <= bytes {
            let v = _mm512_loadu_si512(row.as_ptr().add(x) as *const _);
            let o = _mm512_xor_si512(_mm512_permutexvar_epi8(t, v), flips);
            _mm512_mask_storeu_epi8(out.add(x) as *mut i8, (1u64 << 63) - 1, o);
            x += 63;
        }
        // The last pixels (fewer than 64 bytes: whole pixels, as `x` and `bytes` are).
        let last: __mmask64 = (1u64 << (bytes - x)) - 1;
        let v = _mm512_maskz_loadu_epi8(last, row.as_ptr().add(x) as *const i8);
        let o = _mm512_xor_si512(_mm512_permutexvar_epi8(t, v), flips);
        _mm512_mask_storeu_epi8(out.add(x) as *mut i8, last, o);
    }
    n
}

#[cfg(test)]
mod tests {
    /// The interleave's indices put byte `3p + c` of a run at channel `c`'s pixel `p`.
    #[test]
    fn the_tables_interleave_three_channels() {
        let t = super::interleave_rgb();
        let chans: [Vec<u8>; 3] = std::array::from_fn(|c| (0..64).map(|p| (3 * p + c) as u8).collect());
        for v in 0..3 {
            let pick = |a: &[u8], b: &[u8], i: u8| if i < 64 { a[i as usize] } else { b[i as usize - 64] };
            let first: Vec<u8> = (0..64).map(|j| pick(&chans[0], &chans[1], t[v][0][j])).collect();
            let out: Vec<u8> = (0..64).map(|j| pick(&first, &chans[2], t[v][1][j])).collect();
            let want: Vec<u8> = (0..64).map(|j| (64 * v + j) as u8).collect();
            assert_eq!(out, want, "vector {v}");
        }
    }
}
