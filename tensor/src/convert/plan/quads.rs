//! An exact box straight from the frame's bytes, for the AVX-512 level with VNNI: per output row,
//! source row and block, one byte permute moves each of sixteen outputs' taps into the four bytes
//! of its dword, and one `vpdpbusd` adds them times their whole weights (`Taps::k`) into the
//! block's i32 sums; the rows' weights scale each row's sums. No vertical sums are stored and
//! read again: summed down first (`box_sums`, then the word blocks `Blocks::words`), 1080p NV12
//! `area` spent 0.05 of its 0.18 ms (hot, Zen 5) widening and summing rows to u16 and another
//! 0.07 in the word blocks, about 28 vector instructions per 16 luma outputs at 3× where these
//! take 3 permutes and 3 dot products. Engine, uint8, `area`, Zen 5, rows first → quads, best of
//! 80: NV12 1080p hot 0.183 → 0.135 ms, 8 rotating frames 0.215 → 0.167; YUY2 0.201 → 0.164,
//! 0.240 → 0.176; RGBA 1600×900 0.294 → 0.178 (`EDGEFIRST_CONVERT_VNNI=0` against the default).
//! The sums are the same integers in any order, so the outputs are the word blocks' to the bit.

use super::taps::{Blocks, IDLE};
use super::{Aligned64, Taps};
use std::collections::HashMap;

/// A group's byte-quad blocks, each block's window the 64 bytes (`narrow`) or 128 of a source
/// row from `bases[b]`. Lanes as any 16-dword blocks' (`Blocks::targets`, stored by the same
/// rule), or (`five`) outputs `5b..5b + 5` of members 0, 1 and 2 in dwords `5m..5m + 5`.
#[derive(Debug, Clone)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(in crate::convert) struct Quads {
    /// Outputs every member has from the blocks (the scalar loops do the rest).
    pub(in crate::convert) done: usize,
    /// Four taps a quad: `taps.div_ceil(4)` per block.
    pub(in crate::convert) quads: usize,
    pub(in crate::convert) narrow: bool,
    pub(in crate::convert) five: bool,
    /// NEON's blocks (`pieces`): each of the four lanes its own 16-byte window from
    /// `bases[4b + l]`, its indices `tbl`'s over that one register.
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    pub(in crate::convert) pieces: bool,
    pub(in crate::convert) bases: Vec<u32>,
    /// Per block, its table `t`: its quads are `t · quads + q` of `ctl` and `k`. Blocks whose
    /// quads are the same relative to their windows share one (at 3× every block between a
    /// row's ends): a table per block, 1080p RGBA's five-output lanes read 16 KB of them for
    /// every output row besides the rows' 23 KB. Engine, uint8 `area`, Zen 5, best of 80,
    /// alternated three times: NV12 hot 0.129–0.130 → 0.122–0.125 ms, 8 rotating frames
    /// 0.156–0.182 → 0.132–0.155; RGBA hot 0.175–0.178 → 0.162–0.166; YUY2 level (with the
    /// table looked up a block and not held, 5 % slower on 8 frames).
    pub(in crate::convert) table: Vec<u32>,
    /// `[table][quad]`: per dword, the window bytes of the quad's four taps (`vpermb` or
    /// `vpermt2b` indices; 0 where the tap is missing, its weight 0) ...
    pub(in crate::convert) ctl: Vec<Aligned64<[u8; 64]>>,
    /// ... and their whole weights, as the signed bytes `vpdpbusd` takes.
    pub(in crate::convert) k: Vec<Aligned64<[i8; 64]>>,
    /// Bytes from a row's start that every load stays below.
    pub(in crate::convert) reach: usize,
    /// The largest of `k`: where it times every row weight of an output row fits the level's
    /// weight byte, the row weights can be folded into the tables (`Quads::row_weights`).
    pub(in crate::convert) kmax: i8,
}

/// How a level's quads weight an output row's source rows (`Quads::row_weights`; a const
/// parameter of the kernels): every weight 1, the sums added; each row's weight folded into the
/// block's held table (one quad a block), the row's bytes summed straight into the block's sums;
/// or each row's sums times its weight.
pub(in crate::convert) const ROWS_ONE: u8 = 0;
pub(in crate::convert) const ROWS_FOLD: u8 = 1;
pub(in crate::convert) const ROWS_TIMES: u8 = 2;

/// One quad of a block's table: its controls and weights.
type QuadTable = ([u8; 64], [i8; 64]);

/// Where a group's taps are: member `m`'s output `x` reads bytes `base[x] + offsets[m] + step · j`
/// weighted `t.k[x · taps + j]`, in rows of `row_len` bytes.
pub(in crate::convert) struct Reads<'a> {
    pub(in crate::convert) base: &'a [u32],
    pub(in crate::convert) offsets: &'a [usize],
    pub(in crate::convert) step: usize,
    pub(in crate::convert) t: &'a Taps,
    pub(in crate::convert) row_len: usize,
}

impl Quads {
    /// The weighting (`ROWS_*`) for the row weights `k`, where a folded weight (a table's times
    /// a row's) must stay at most `byte_max`: the weight byte the level's dot product takes
    /// (127 for `vpdpbusd`'s signed bytes, 255 for `udot`'s).
    #[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(dead_code))]
    pub(in crate::convert) fn row_weights(&self, k: &[i16], byte_max: i32) -> u8 {
        let fits = |&k: &i16| (0..=byte_max).contains(&(i32::from(k) * i32::from(self.kmax)));
        match k.iter().all(|&k| k == 1) {
            true => ROWS_ONE,
            false if self.quads == 1 && k.iter().all(fits) => ROWS_FOLD,
            false => ROWS_TIMES,
        }
    }

    /// The quads of an exact box whose outputs lie in the lanes of `blocks` (16 dwords: lane `l`
    /// of block `b` outputs `x..x + 4` of member `m`, `targets[b][l] = (m << 24) | x`); `None`
    /// where a weight does not fit a signed byte or a block's taps do not fit 128 bytes.
    pub(in crate::convert) fn new(blocks: &Blocks, reads: &Reads<'_>) -> Option<Quads> {
        Quads::build(blocks.targets.len(), blocks.done, |b| lanes_of(blocks, b), reads, false, false)
    }

    /// Five outputs of each of three members a block (`five`): four-byte pixels whose fourth
    /// channel no output blends (an RGBA source's alpha), where the lanes of `new` leave it a
    /// quarter of every block. Engine, RGBA → RGB `area`, Zen 5, best of 100 alternated twice:
    /// 1080p hot 0.191–0.194 → 0.171–0.174 ms, 1600×900 on 8 rotating frames 0.223 → 0.187
    /// (on 8 rotating 1080p frames, which wait on memory, 0.28 either way).
    pub(in crate::convert) fn five(reads: &Reads<'_>) -> Option<Quads> {
        if !(super::pixels::pixel_members(reads.offsets, reads.step)) {
            return None;
        }
        let blocks = reads.base.len() / 5;
        let live =
            |b: usize| -> Vec<(usize, usize, usize)> { (0..15).map(|d| (d, d / 5, 5 * b + d % 5)).collect() };
        Quads::build(blocks, 5 * blocks, live, reads, true, false)
    }

    /// The same in lanes of 16-byte windows (`pieces`: `blocks`' lanes, four outputs of one
    /// member each, within 16 bytes), for NEON's one-register `tbl`: the 64-byte windows of
    /// `new` take four-register `tbl`s, which llvm-mca puts at 175 cycles a block of a 1080p
    /// NV12 3× luma row on a Cortex-A55 (the rows-first word blocks and sums about 160; these
    /// lanes: see `neon::box_quads`). 1080p and 900p NV12 fit, luma and chroma; not four-byte
    /// pixels, nor YUY2 at 3×.
    pub(in crate::convert) fn pieces(blocks: &Blocks, reads: &Reads<'_>) -> Option<Quads> {
        Quads::build(blocks.targets.len(), blocks.done, |b| lanes_of(blocks, b), reads, false, true)
    }

    /// The quads of `blocks` blocks whose dwords `live(b)` (dword, member, output) hold `done`
    /// outputs of every member, over one window a block or (`pieces`) one of 16 bytes a lane.
    fn build(
        blocks: usize,
        done: usize,
        live: impl Fn(usize) -> Vec<(usize, usize, usize)>,
        reads: &Reads<'_>,
        five: bool,
        pieces: bool,
    ) -> Option<Quads> {
        let Reads { base, offsets, step, t, row_len } = *reads;
        let taps = t.taps;
        let quads = taps.div_ceil(4);
        // Windows a block, and the window of dword `d`.
        let per = if pieces { 4 } else { 1 };
        let of = |d: usize| d * per / 16;
        let tap = |m: usize, x: usize, j: usize| base[x] as usize + offsets[m] + step * j;
        let spans: Vec<[(usize, usize); 4]> = (0..blocks)
            .map(|b| {
                let lanes = live(b);
                std::array::from_fn(|w| {
                    let mine = || lanes.iter().filter(|&&(d, ..)| of(d) == w);
                    let lo = mine().map(|&(_, m, x)| tap(m, x, 0)).min().unwrap_or(0);
                    let hi = mine().map(|&(_, m, x)| tap(m, x, taps - 1) + 1).max().unwrap_or(0);
                    (lo, hi)
                })
            })
            .collect();
        let widest = spans.iter().flat_map(|s| &s[..per]).map(|&(a, z)| z - a).max()?;
        let sizes: &[usize] = if pieces { &[16] } else { &[64, 128] };
        let window = sizes.iter().copied().find(|&w| widest <= w && row_len >= w)?;
        // A block's quads relative to its windows, once per distinct table.
        let mut tables: HashMap<Vec<QuadTable>, u32> = HashMap::new();
        let mut plan = Quads {
            done,
            quads,
            narrow: window == 64,
            five,
            pieces,
            bases: Vec::with_capacity(per * blocks),
            table: Vec::with_capacity(blocks),
            ctl: Vec::with_capacity(blocks * quads),
            k: Vec::with_capacity(blocks * quads),
            reach: 0,
            kmax: 0,
        };
        for (b, spans) in spans.iter().enumerate() {
            let starts = spans.map(|(lo, _)| lo.min(row_len - window));
            for &start in &starts[..per] {
                plan.bases.push(start as u32);
                plan.reach = plan.reach.max(start + window);
            }
            let lanes = live(b);
            let mut table = Vec::with_capacity(quads);
            for q in 0..quads {
                let (mut ctl, mut k) = ([0u8; 64], [0i8; 64]);
                for &(d, m, x) in &lanes {
                    for j in (4 * q..taps).take(4) {
                        let weight = *t.k.get(x * taps + j)?;
                        if weight != 0 {
                            let at = 4 * d + j % 4;
                            (ctl[at], k[at]) =
                                ((tap(m, x, j) - starts[of(d)]) as u8, i8::try_from(weight).ok()?);
                        }
                    }
                }
                table.push((ctl, k));
            }
            let id = *tables.entry(table).or_insert_with_key(|table| {
                for &(ctl, k) in table {
                    plan.ctl.push(Aligned64(ctl));
                    plan.k.push(Aligned64(k));
                }
                (plan.ctl.len() / quads) as u32 - 1
            });
            plan.table.push(id);
        }
        plan.kmax = plan.k.iter().flat_map(|t| t.0).max().unwrap_or(0);
        Some(plan)
    }
}

/// The dwords of block `b` of 16-dword `blocks` as (dword, member, output): lane `l` holds outputs
/// `x..x + 4` of member `m` (`targets[b][l] = (m << 24) | x`, or `IDLE`).
fn lanes_of(blocks: &Blocks, b: usize) -> Vec<(usize, usize, usize)> {
    let lanes = blocks.targets[b].into_iter().enumerate().filter(|&(_, l)| l != IDLE);
    lanes
        .flat_map(|(l, target)| {
            (0..4).map(move |i| (4 * l + i, (target >> 24) as usize, (target & 0xff_ffff) as usize + i))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::{components, multi_axis, Filter, MultiTap};
    use super::Quads;

    /// A block's lanes: (dword, member, output).
    type Lanes<'a> = &'a dyn Fn(usize) -> Vec<(usize, usize, usize)>;
    use crate::format::PixelFormat;
    use crate::preprocess::Interpolation;

    /// Rows of weight 1 add; other weights fold where one quad a block and every product stays
    /// within the byte; else each row's sums are multiplied.
    #[test]
    fn row_weights_fold_only_what_fits() {
        use super::{ROWS_FOLD, ROWS_ONE, ROWS_TIMES};
        let plan = |quads, kmax| Quads {
            done: 0,
            quads,
            narrow: true,
            five: false,
            pieces: false,
            bases: vec![],
            table: vec![],
            ctl: vec![],
            k: vec![],
            reach: 0,
            kmax,
        };
        assert_eq!(plan(1, 2).row_weights(&[1, 1, 1], 127), ROWS_ONE);
        assert_eq!(plan(2, 2).row_weights(&[1, 1], 127), ROWS_ONE);
        assert_eq!(plan(1, 2).row_weights(&[2, 2, 1], 127), ROWS_FOLD);
        assert_eq!(plan(1, 63).row_weights(&[2, 1], 127), ROWS_FOLD);
        assert_eq!(plan(1, 64).row_weights(&[2, 1], 127), ROWS_TIMES);
        assert_eq!(plan(1, 64).row_weights(&[2, 1], 255), ROWS_FOLD);
        assert_eq!(plan(1, 5).row_weights(&[27, 27, 10, 0], 127), ROWS_TIMES);
        assert_eq!(plan(2, 2).row_weights(&[2, 1], 127), ROWS_TIMES);
    }

    /// What the kernel makes of a plan, in scalar: per block and dword, the bytes its controls
    /// pick from the block's window times their weights, summed over the quads. Each output must
    /// be its taps' sum by the axis's whole weights (`Taps::k`), read from the row as the scalar
    /// loops read it, in the lanes of `b16` (over one window a block, or NEON's 16 bytes a lane)
    /// or five outputs of each of three members (RGBA's `q5`); the camera formats at 3×, 2.5× and
    /// 1.5× (where a 64-byte window holds a block's taps and where it takes 128) have quads, and
    /// a box too wide for 128 bytes none.
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
                    let pixels = format == PixelFormat::Rgba;
                    assert_eq!(g.q5.is_some(), pixels && wants, "{what}: five-output lanes");
                    let Some(q) = &g.q16 else {
                        assert!(!wants, "{what}: no quads");
                        continue;
                    };
                    assert!(wants, "{what}: quads over more than 128 bytes");
                    let lead = comps[g.members[0]];
                    let len = row_len[lead.plane];
                    let row: Vec<u8> = (0..len).map(|i| (i * 37 % 251) as u8).collect();
                    let t = &cols[usize::from(lead.chroma)];
                    let lanes = |b: usize| -> Vec<(usize, usize, usize)> {
                        let targets = g.b16.as_ref().unwrap().targets[b];
                        let live = targets.into_iter().enumerate().filter(|&(_, t)| t != super::IDLE);
                        live.flat_map(|(l, t)| {
                            (0..4).map(move |i| (4 * l + i, (t >> 24) as usize, (t & 0xff_ffff) as usize + i))
                        })
                        .collect()
                    };
                    let five = |b: usize| -> Vec<(usize, usize, usize)> {
                        (0..15).map(|d| (d, d / 5, 5 * b + d % 5)).collect()
                    };
                    // NEON's lanes of 16-byte windows: NV12's and gray's fit, four-byte pixels'
                    // do not (YUY2's at 1.5× only: its samples are two and four bytes apart).
                    if format != PixelFormat::Yuy2 {
                        assert_eq!(g.q4.is_some(), !pixels, "{what}: lanes of 16-byte windows");
                    }
                    let mut plans: Vec<(&Quads, Lanes<'_>, usize)> = vec![(q, &lanes, g.members.len())];
                    plans.extend(g.q5.as_ref().map(|q| (q, &five as Lanes<'_>, 3)));
                    plans.extend(g.q4.as_ref().map(|q| (q, &lanes as Lanes<'_>, g.members.len())));
                    for (q, lanes, members) in plans {
                        planned += 1;
                        assert!(q.reach <= len, "{what}: loads pass the row");
                        let window = if q.narrow { 64 } else { 128 };
                        let blocks = if q.pieces { q.bases.len() / 4 } else { q.bases.len() };
                        let mut seen = 0;
                        // Blocks share tables: at 3× the first, the inner and the last blocks'.
                        assert_eq!(q.table.len(), blocks, "{what}: a table a block");
                        if w == 1920 {
                            assert!(q.ctl.len() <= 4 * q.quads, "{what}: {} tables", q.ctl.len() / q.quads);
                        }
                        for b in 0..blocks {
                            let tb = q.table[b] as usize;
                            for (d, m, x) in lanes(b) {
                                // A block's window, or (`pieces`) its dword's lane's 16 bytes.
                                let bytes = match q.pieces {
                                    true => &row[q.bases[4 * b + d / 4] as usize..][..16],
                                    false => &row[q.bases[b] as usize..][..window],
                                };
                                let c = g.members[m];
                                let got: i64 = (0..q.quads)
                                    .flat_map(|p| (0..4).map(move |j| (tb * q.quads + p, 4 * d + j)))
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
                        assert_eq!(seen, q.done * members, "{what}: every output of the blocks");
                    }
                }
            }
        }
        assert!(planned >= 25, "{planned} plans checked");
    }
}
