//! The AVX2 level's finish of components' bytes into 8-bit RGB or BGR
//! (`FinishValues::interleaves_bytes`, as `avx512::finish_bytes`).

use super::super::finish::{finish_bytes_by, FinishValues, SendPtr};
use super::super::lines::Lines;
use std::arch::x86_64::*;

/// Per output vector `v` (bytes `16v..16v + 16` of a run of 16 RGB pixels) and channel `c`, the
/// `pshufb` indices that bring channel `c`'s bytes to their places (128: a zero).
const fn interleave_rgb() -> [[[u8; 16]; 3]; 3] {
    let mut t = [[[128u8; 16]; 3]; 3];
    let mut v = 0;
    while v < 3 {
        let mut j = 0;
        while j < 16 {
            let (p, c) = ((16 * v + j) / 3, (16 * v + j) % 3);
            t[v][c][j] = p as u8;
            j += 1;
        }
        v += 1;
    }
    t
}

static INTERLEAVE_RGB: [[[u8; 16]; 3]; 3] = interleave_rgb();

/// Row `y`'s content columns from the components' bytes `comps` (`finish::finish_bytes_by`):
/// interleaved 16 pixels a step, three `pshufb` and two ors per 16 output bytes. Returns the
/// columns it wrote (all of them).
///
/// # Safety
/// The CPU has AVX2; `dst` holds the converter's layout, whose row `y` the caller owns.
#[target_feature(enable = "avx2")]
pub(in crate::convert) unsafe fn finish_bytes(
    f: &FinishValues,
    comps: &[Lines<u8>; 4],
    dst: SendPtr,
    y: usize,
) -> usize {
    let steps = |ch: [&[u8]; 3], row: *mut u8, flip: u8| {
        let n = ch[0].len();
        let flips = _mm_set1_epi8(flip as i8);
        let mut x = 0;
        while x + 16 <= n {
            unsafe {
                let at = |i: usize| _mm_loadu_si128(ch[i].as_ptr().add(x) as *const __m128i);
                let c = [at(0), at(1), at(2)];
                for v in 0..3 {
                    let idx = |k: usize| _mm_loadu_si128(INTERLEAVE_RGB[v][k].as_ptr() as *const __m128i);
                    let o = _mm_or_si128(
                        _mm_or_si128(_mm_shuffle_epi8(c[0], idx(0)), _mm_shuffle_epi8(c[1], idx(1))),
                        _mm_shuffle_epi8(c[2], idx(2)),
                    );
                    _mm_storeu_si128(row.add(3 * x + 16 * v) as *mut __m128i, _mm_xor_si128(o, flips));
                }
            }
            x += 16;
        }
        x
    };
    unsafe { finish_bytes_by(f, comps, dst, y, steps) }
}

#[cfg(test)]
mod tests {
    /// The interleave's indices put byte `3p + c` of a run at channel `c`'s pixel `p`, the other
    /// channels' shuffles zero there.
    #[test]
    fn the_tables_interleave_three_channels() {
        let t = super::interleave_rgb();
        let chans: [Vec<u8>; 3] = std::array::from_fn(|c| (0..16).map(|p| (3 * p + c) as u8).collect());
        for v in 0..3 {
            let out: Vec<u8> = (0..16)
                .map(|j| {
                    (0..3)
                        .map(|c| match t[v][c][j] {
                            i if i < 16 => chans[c][i as usize],
                            _ => 0,
                        })
                        .fold(0, |a, b| a | b)
                })
                .collect();
            assert_eq!(out, (0..16).map(|j| (16 * v + j) as u8).collect::<Vec<_>>(), "vector {v}");
        }
    }
}
