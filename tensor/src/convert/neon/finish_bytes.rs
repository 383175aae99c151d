//! The NEON level's finish of components' bytes into 8-bit RGB or BGR
//! (`FinishValues::interleaves_bytes`, as `avx512::finish_bytes`): the vertical pass's bytes
//! interleaved by `st3`, which the x86 levels shuffle for.

use super::super::finish::{finish_bytes_by, FinishValues, SendPtr};
use super::super::lines::Lines;
use std::arch::aarch64::*;

/// Row `y`'s content columns from the components' bytes `comps` (`finish::finish_bytes_by`):
/// 16 pixels a step, three loads, the int8 flip by `eor`, one `st3`. Returns the columns it
/// wrote (all of them).
///
/// # Safety
/// `dst` holds the converter's layout, whose row `y` the caller owns.
pub(in crate::convert) unsafe fn finish_bytes(
    f: &FinishValues,
    comps: &[Lines<u8>; 4],
    dst: SendPtr,
    y: usize,
) -> usize {
    let steps = |ch: [&[u8]; 3], row: *mut u8, flip: u8| {
        let n = ch[0].len().min(ch[1].len()).min(ch[2].len());
        let flips = vdupq_n_u8(flip);
        let mut x = 0;
        while x + 16 <= n {
            unsafe {
                let at = |i: usize| veorq_u8(vld1q_u8(ch[i].as_ptr().add(x)), flips);
                vst3q_u8(row.add(3 * x), uint8x16x3_t(at(0), at(1), at(2)));
            }
            x += 16;
        }
        x
    };
    unsafe { finish_bytes_by(f, comps, dst, y, steps) }
}
