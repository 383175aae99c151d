//! The NEON level's packing of source rows for the tap-by-tap blocks (`plan::WholeTaps` of a
//! `plan::Compact` or `plan::Planar` group): the de-interleaving loads (`ld2`, `ld4`) split a
//! row into its every-other bytes or its pixels' channels as they load it.

use crate::convert::hint::prefetch;
use std::arch::aarch64::*;

/// `out[j] = row[from + 2j]` for every `j` of `out` (YUY2's and UYVY's luma, or their U and V
/// pairs): 16 a step by `ld2`, the rest by the scalar loop. The lines `ahead` bytes on asked for
/// as they are read (0: none).
pub(in crate::convert) fn pack_bytes(row: &[u8], from: usize, out: &mut [u8], ahead: usize) {
    assert!(out.is_empty() || from + 2 * (out.len() - 1) < row.len(), "every sample is in the row");
    let mut j = 0;
    while from + 2 * j + 32 <= row.len() && j + 16 <= out.len() {
        let at = row[from + 2 * j..].as_ptr();
        if j % 32 == 0 {
            prefetch_if(at, ahead);
        }
        // In bounds: checked by the loop's condition.
        unsafe { vst1q_u8(out.as_mut_ptr().add(j), vld2q_u8(at).0) };
        j += 16;
    }
    for (o, &b) in out[j..].iter_mut().zip(row.get(from + 2 * j..).unwrap_or(&[]).iter().step_by(2)) {
        *o = b;
    }
}

/// A row of four-byte pixels split into its channels' rows: `out[c][p] = row[4p + c]` for every
/// whole pixel and every channel whose `out[c]` is not null (`driver::planar_members`), 16 pixels
/// a step by `ld4`, the rest by the scalar loop; the lines `ahead` bytes on asked for as they are
/// read (0: none).
///
/// # Safety
/// Each `out[c]` is null or writable for `row.len() / 4` bytes.
pub(in crate::convert) unsafe fn pack_planar(row: &[u8], out: [*mut u8; 4], ahead: usize) {
    let n = row.len() / 4;
    let mut p = 0;
    while p + 16 <= n {
        let at = row[4 * p..].as_ptr();
        prefetch_if(at, ahead);
        unsafe {
            let v = vld4q_u8(at);
            // (Four tests, as AVX2's `pack_planar`: there a loop over the channels cost a third.)
            if !out[0].is_null() {
                vst1q_u8(out[0].add(p), v.0);
            }
            if !out[1].is_null() {
                vst1q_u8(out[1].add(p), v.1);
            }
            if !out[2].is_null() {
                vst1q_u8(out[2].add(p), v.2);
            }
            if !out[3].is_null() {
                vst1q_u8(out[3].add(p), v.3);
            }
        }
        p += 16;
    }
    for p in p..n {
        for (c, o) in out.iter().enumerate().filter(|(_, o)| !o.is_null()) {
            unsafe { *o.add(p) = row[4 * p + c] };
        }
    }
}

/// The step's line `ahead` bytes on, where asked (the step reads one line of 64 bytes).
#[inline(always)]
fn prefetch_if(at: *const u8, ahead: usize) {
    if ahead != 0 {
        prefetch(at.wrapping_add(ahead));
    }
}

#[cfg(test)]
mod tests {
    use super::{pack_bytes, pack_planar};

    /// Both packings give the row's every-other bytes and its channels, on rows shorter than a
    /// step, of a few steps and with a partial last one, and write nothing past their outputs.
    #[test]
    fn packed_rows_are_the_rows_bytes() {
        for len in [0usize, 1, 7, 31, 32, 33, 64, 65, 200, 3840, 3843] {
            let row: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            for from in [0, 1] {
                let n = len.saturating_sub(from).div_ceil(2);
                let mut out = vec![0xa5u8; n + 8];
                pack_bytes(&row, from, &mut out[..n], 64);
                let want: Vec<u8> = row.iter().skip(from).step_by(2).copied().collect();
                assert_eq!(&out[..n], &want[..], "{len} bytes from {from}");
                assert!(out[n..].iter().all(|&b| b == 0xa5), "{len} bytes from {from}: past the end");
            }
            // A null row is a channel no member blends (RGBA's or ARGB's alpha): not written.
            for skip in [None, Some(0), Some(3)] {
                let pixels = len / 4;
                let mut planes = vec![vec![0x3cu8; pixels + 8]; 4];
                let out: [*mut u8; 4] = std::array::from_fn(|c| match Some(c) == skip {
                    true => std::ptr::null_mut(),
                    false => planes[c].as_mut_ptr(),
                });
                unsafe { pack_planar(&row, out, 128) };
                for (c, plane) in planes.iter().enumerate() {
                    let want: Vec<u8> = match Some(c) == skip {
                        true => vec![0x3c; pixels],
                        false => (0..pixels).map(|p| row[4 * p + c]).collect(),
                    };
                    assert_eq!(&plane[..pixels], &want[..], "{pixels} pixels, channel {c}, {skip:?} skipped");
                    assert!(
                        plane[pixels..].iter().all(|&b| b == 0x3c),
                        "{pixels} pixels, channel {c}: past the end"
                    );
                }
            }
        }
    }
}
