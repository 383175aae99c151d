//! The NEON level's packing of source rows for the tap-by-tap blocks (`plan::WholeTaps` of a
//! `plan::Compact` or `plan::Planar` group): the de-interleaving loads (`ld2`, `ld4`) split a
//! row into its every-other bytes or its pixels' channels as they load it.

use crate::convert::hint::prefetch;
use std::arch::aarch64::*;

/// `out[j] = row[from + 2j]` for every `j` of `out` (YUY2's and UYVY's luma, or their U and V
/// pairs): 16 a step by `ld2`, the rest by the scalar loop. The lines `ahead` bytes on asked for
/// as they are read (0: none).
// (Not inlined: a call a row, and scripts/neon-mca.sh finds its loop by name.)
#[inline(never)]
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

/// A row's even and odd bytes at once (`pack_bytes` from byte 0 into `even` and from byte 1 into
/// `odd`), for YUY2's and UYVY's two groups (`driver::split_rows`), each row read once where
/// `pack_bytes` read it once a group; with `halve` (`Some(h)`) half `h` stored as two runs, its
/// even samples then its odd ones (`plan::Halved`: YUY2's U then V). 64 bytes a step by `ld4`
/// (the halves `st2` of two quarters, or a run each), or by `ld2` without `halve`, the rest by the
/// scalar loop; the lines `ahead` bytes on asked for as they are read (0: none).
// (Not inlined: a call a row, and scripts/neon-mca.sh finds its loop by name.)
#[inline(never)]
pub(in crate::convert) fn pack_bytes_split(
    row: &[u8],
    even: &mut [u8],
    odd: &mut [u8],
    halve: Option<usize>,
    ahead: usize,
) {
    assert!(even.len() == row.len().div_ceil(2) && odd.len() == row.len() / 2, "both halves of the row");
    assert!(halve.is_none_or(|h| h <= 1), "a half is 0 or 1");
    let q = [even.len().div_ceil(2), odd.len().div_ceil(2)];
    // Four-byte groups `k..k + 16` a step: 32 samples of each half.
    let k = match halve {
        None => {
            let mut k = 0;
            while 4 * k + 64 <= row.len() {
                let at = row[4 * k..].as_ptr();
                prefetch_if(at, ahead);
                // In bounds: 64 bytes of the row from `4k`, 32 samples of each half from `2k`.
                unsafe {
                    let (a, b) = (vld2q_u8(at), vld2q_u8(at.add(32)));
                    vst1q_u8(even.as_mut_ptr().add(2 * k), a.0);
                    vst1q_u8(even.as_mut_ptr().add(2 * k + 16), b.0);
                    vst1q_u8(odd.as_mut_ptr().add(2 * k), a.1);
                    vst1q_u8(odd.as_mut_ptr().add(2 * k + 16), b.1);
                }
                k += 16;
            }
            k
        }
        Some(0) => halved_steps::<0>(row, odd, even, q[0], ahead),
        Some(_) => halved_steps::<1>(row, even, odd, q[1], ahead),
    };
    for (i, &b) in row.iter().enumerate().skip(4 * k) {
        let s = i / 2;
        match (i % 2, halve) {
            (0, Some(0)) => even[if s % 2 == 0 { s / 2 } else { q[0] + s / 2 }] = b,
            (1, Some(1)) => odd[if s % 2 == 0 { s / 2 } else { q[1] + s / 2 }] = b,
            (0, _) => even[s] = b,
            _ => odd[s] = b,
        }
    }
}

/// `pack_bytes_split`'s steps with half `H` halved (a loop per half, each with one body): the
/// other half into `whole`, the halved one's runs into `halved` from 0 and `q`. Returns the
/// four-byte groups done.
#[inline(always)]
fn halved_steps<const H: usize>(
    row: &[u8],
    whole: &mut [u8],
    halved: &mut [u8],
    q: usize,
    ahead: usize,
) -> usize {
    let mut k = 0;
    while 4 * k + 64 <= row.len() {
        let at = row[4 * k..].as_ptr();
        prefetch_if(at, ahead);
        // In bounds: 64 bytes of the row from `4k`, 32 samples of the whole half from `2k`, and
        // 16 of each run from `k` (a run holds a sample for every four bytes of the row).
        unsafe {
            let v = vld4q_u8(at);
            // Half 0 is quarters 0 and 2 interleaved, half 1 quarters 1 and 3.
            let (w, r) = match H {
                0 => (uint8x16x2_t(v.1, v.3), (v.0, v.2)),
                _ => (uint8x16x2_t(v.0, v.2), (v.1, v.3)),
            };
            vst2q_u8(whole.as_mut_ptr().add(2 * k), w);
            vst1q_u8(halved.as_mut_ptr().add(k), r.0);
            vst1q_u8(halved.as_mut_ptr().add(q + k), r.1);
        }
        k += 16;
    }
    k
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

    /// Split once, the halves are the row's even and odd bytes, and a halved half its even
    /// samples then its odd ones, on rows shorter than a step, of every length modulo four and of
    /// a few steps with a partial last one; nothing is written past them.
    #[test]
    fn split_rows_are_both_halves() {
        for halve in [None, Some(0), Some(1)] {
            for len in [0usize, 1, 3, 63, 64, 65, 66, 67, 130, 3840, 3841, 3842, 3843] {
                let row: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
                let (ne, no) = (len.div_ceil(2), len / 2);
                let (mut even, mut odd) = (vec![0xa5u8; ne + 40], vec![0xa5u8; no + 40]);
                super::pack_bytes_split(&row, &mut even[..ne], &mut odd[..no], halve, 64);
                let half = |p: usize| -> Vec<u8> { row.iter().skip(p).step_by(2).copied().collect() };
                let runs = |h: Vec<u8>| -> Vec<u8> {
                    h.iter().step_by(2).chain(h.iter().skip(1).step_by(2)).copied().collect()
                };
                let want_even = if halve == Some(0) { runs(half(0)) } else { half(0) };
                let want_odd = if halve == Some(1) { runs(half(1)) } else { half(1) };
                assert_eq!(&even[..ne], &want_even[..], "{halve:?} {len}");
                assert_eq!(&odd[..no], &want_odd[..], "{halve:?} {len}");
                assert!(
                    even[ne..].iter().chain(&odd[no..]).all(|&b| b == 0xa5),
                    "{halve:?} {len}: past the halves"
                );
            }
        }
    }

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
