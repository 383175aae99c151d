//! An exact box straight from the frame's bytes, for the AVX-512 level with VNNI: per output row,
//! source row and block, one byte permute moves each of sixteen outputs' taps into the four bytes
//! of its dword, and one `vpdpbusd` adds them times their whole weights (`Taps::k`) into the
//! block's i32 sums; the rows' weights scale each row's sums. No vertical sums are stored and
//! read again: summed down first (`box_sums`, then the word blocks `Blocks::words`), 1080p NV12
//! `area` spent 0.05 of its 0.18 ms (hot, Zen 5) widening and summing rows to u16 and another
//! 0.07 in the word blocks, about 28 vector instructions per 16 luma outputs at 3× against 6 here.
//! The sums are the same integers in any order, so the outputs are the word blocks' to the bit.

use super::taps::{Blocks, IDLE};
use super::{Aligned64, Taps};

/// A group's byte-quad blocks: lanes as any 16-dword blocks' (`Blocks::targets`, stored by the
/// same rule), each block's window the 64 bytes (`narrow`) or 128 of a source row from
/// `bases[b]`.
#[derive(Debug, Clone)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(in crate::convert) struct Quads {
    /// Outputs every member has from the blocks (the scalar loops do the rest).
    pub(in crate::convert) done: usize,
    /// Four taps a quad: `taps.div_ceil(4)` per block.
    pub(in crate::convert) quads: usize,
    pub(in crate::convert) narrow: bool,
    pub(in crate::convert) bases: Vec<u32>,
    /// `[block][quad]`: per dword, the window bytes of the quad's four taps (`vpermb` or
    /// `vpermt2b` indices; 0 where the tap is missing, its weight 0) ...
    pub(in crate::convert) ctl: Vec<Aligned64<[u8; 64]>>,
    /// ... and their whole weights, as the signed bytes `vpdpbusd` takes.
    pub(in crate::convert) k: Vec<Aligned64<[i8; 64]>>,
    /// Bytes from a row's start that every load stays below.
    pub(in crate::convert) reach: usize,
}

impl Quads {
    /// The quads of an exact box whose outputs lie in the lanes of `blocks` (16 dwords: lane `l`
    /// of block `b` outputs `x..x + 4` of member `m`, `targets[b][l] = (m << 24) | x`), member
    /// `m`'s output `x` reading bytes `base[x] + offsets[m] + step · j` weighted `t.k[x · taps + j]`,
    /// in rows of `row_len` bytes; `None` where a weight does not fit a signed byte or a block's
    /// taps do not fit 128 bytes.
    pub(in crate::convert) fn new(
        blocks: &Blocks,
        base: &[u32],
        offsets: &[usize],
        step: usize,
        t: &Taps,
        row_len: usize,
    ) -> Option<Quads> {
        let (taps, n) = (t.taps, blocks.targets.len());
        let quads = taps.div_ceil(4);
        let live = |b: usize| {
            blocks.targets[b].into_iter().enumerate().filter(|&(_, l)| l != IDLE).flat_map(|(l, target)| {
                (0..4).map(move |i| (4 * l + i, (target >> 24) as usize, (target & 0xff_ffff) as usize + i))
            })
        };
        let tap = |m: usize, x: usize, j: usize| base[x] as usize + offsets[m] + step * j;
        let span = |b: usize| {
            let lo = live(b).map(|(_, m, x)| tap(m, x, 0)).min().unwrap_or(0);
            let hi = live(b).map(|(_, m, x)| tap(m, x, taps - 1) + 1).max().unwrap_or(0);
            (lo, hi)
        };
        let widest = (0..n).map(|b| span(b).1 - span(b).0).max()?;
        let window = [64, 128].into_iter().find(|&w| widest <= w && row_len >= w)?;
        let mut plan = Quads {
            done: blocks.done,
            quads,
            narrow: window == 64,
            bases: Vec::with_capacity(n),
            ctl: Vec::with_capacity(n * quads),
            k: Vec::with_capacity(n * quads),
            reach: 0,
        };
        for b in 0..n {
            let start = span(b).0.min(row_len - window);
            plan.bases.push(start as u32);
            plan.reach = plan.reach.max(start + window);
            for q in 0..quads {
                let (mut ctl, mut k) = ([0u8; 64], [0i8; 64]);
                for (d, m, x) in live(b) {
                    for j in (4 * q..taps).take(4) {
                        let weight = *t.k.get(x * taps + j)?;
                        if weight != 0 {
                            let at = 4 * d + j % 4;
                            (ctl[at], k[at]) = ((tap(m, x, j) - start) as u8, i8::try_from(weight).ok()?);
                        }
                    }
                }
                plan.ctl.push(Aligned64(ctl));
                plan.k.push(Aligned64(k));
            }
        }
        Some(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{components, multi_axis, Filter, MultiTap};
    use crate::format::PixelFormat;
    use crate::preprocess::Interpolation;

    /// What the kernel makes of a plan, in scalar: per block and dword, the bytes its controls
    /// pick from the block's window times their weights, summed over the quads. Each output must
    /// be its taps' sum by the axis's whole weights (`Taps::k`), read from the row as the scalar
    /// loops read it; the camera formats at 3×, 2.5× and 1.5× (where a 64-byte window holds a
    /// block's taps and where it takes 128) have quads, and a box too wide for 128 bytes none.
    #[test]
    fn quads_sum_each_outputs_taps() {
        let area = Filter::of(Interpolation::Area, true).unwrap();
        let mut planned = 0;
        for format in [PixelFormat::Nv12, PixelFormat::Yuy2, PixelFormat::Rgba, PixelFormat::Gray8] {
            let (_, comps) = components(format).unwrap();
            let div = if matches!(format, PixelFormat::Nv12 | PixelFormat::Yuy2) { 2 } else { 1 };
            for (w, n, wants) in [(1920, 640, true), (1600, 640, true), (960, 640, true), (1920, 60, false)] {
                let cols = [
                    multi_axis(n, 0, w, 1, 0, w - 1, area, 0.0),
                    multi_axis(n, 0, w, div, 0, w / div - 1, area, 0.0),
                ];
                assert!(cols[0].exact.is_some() && cols[1].exact.is_some(), "{w} -> {n}");
                let row_len: [usize; 3] = std::array::from_fn(|p| match p < format.num_planes() {
                    true => format.plane_sampling(p, 1).row_bytes(w),
                    false => 0,
                });
                let plan = MultiTap::new(cols.clone(), cols.clone(), &comps, row_len, false);
                for g in &plan.groups {
                    let what = format!("{format:?} {w} -> {n}, group {:?}", g.members);
                    let Some(q) = &g.q16 else {
                        assert!(!wants, "{what}: no quads");
                        continue;
                    };
                    assert!(wants, "{what}: quads over more than 128 bytes");
                    planned += 1;
                    let lead = comps[g.members[0]];
                    let len = row_len[lead.plane];
                    assert!(q.reach <= len, "{what}: loads pass the row");
                    let row: Vec<u8> = (0..len).map(|i| (i * 37 % 251) as u8).collect();
                    let t = &cols[usize::from(lead.chroma)];
                    let blocks = g.b16.as_ref().unwrap();
                    let window = if q.narrow { 64 } else { 128 };
                    let mut seen = 0;
                    for (b, targets) in blocks.targets.iter().enumerate() {
                        let bytes = &row[q.bases[b] as usize..][..window];
                        for (l, &target) in targets.iter().enumerate().filter(|&(_, &t)| t != super::IDLE) {
                            let (m, x0) = ((target >> 24) as usize, (target & 0xff_ffff) as usize);
                            let c = g.members[m];
                            for i in 0..4 {
                                let (d, x) = (4 * l + i, x0 + i);
                                let got: i64 = (0..q.quads)
                                    .flat_map(|p| (0..4).map(move |j| (b * q.quads + p, 4 * d + j)))
                                    .map(|(at, j)| {
                                        bytes[q.ctl[at].0[j] as usize] as i64 * q.k[at].0[j] as i64
                                    })
                                    .sum();
                                let want: i64 = (0..t.taps)
                                    .map(|j| {
                                        t.k[x * t.taps + j] as i64
                                            * row[plan.base[c][x] as usize + comps[c].step * j] as i64
                                    })
                                    .sum();
                                assert_eq!(got, want, "{what}: block {b}, member {m}, output {x}");
                                seen += 1;
                            }
                        }
                    }
                    assert_eq!(seen, q.done * g.members.len(), "{what}: every output of the blocks");
                }
            }
        }
        assert!(planned >= 12, "{planned} groups planned");
    }
}
