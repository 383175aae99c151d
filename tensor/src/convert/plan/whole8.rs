//! PIL's horizontal pass with whole weights (`Taps::d`, `weights::pil_whole`) for the AVX2 level:
//! blocks of 16 word lanes, a 128-bit lane eight consecutive outputs of one member, each lane's
//! taps read from its own window of one to four 16-byte pieces. Per block and tap pair a
//! `pshufb` per piece puts each output's two taps side by side and one `pmaddubsw` multiplies
//! and adds them, so a block makes sixteen outputs with one multiply a pair where the 2^-22
//! blocks (`taps::Blocks`, eight dword lanes) make eight with two `pmaddwd` and a `pshufb` per
//! piece a pair: 1080p NV12 `bilinear-antialias` at AVX2 spent 60 % of its time in those
//! (docs/benchmark-log.md, twelfth session). A pair is an output's next two taps of non-zero weight,
//! so a 3× triangle (1, 2, 3, 2, 1 over 9) takes three pairs whatever its zero taps. The sum
//! `2S + D` becomes PIL's byte `⌊(2S + D) / 2D⌋` by a multiply-high per lane and one shift for the
//! block (AVX2 shifts words by one count only): a block's `D`s share one (`whole::divider_at`), or
//! it is not whole. As dwords shifted per lane, widened and packed back, the division took a
//! third of the kernel's time. Outputs whole only with ties (`weights::pil_tied`) carry their
//! remainders as a second set of signed-byte weights, as AVX-512's blocks do: the 1.25× triangle
//! (900p NV12's chroma → 640) is tied on every other pair of outputs, and without them the whole
//! group ran the 2^-22 blocks, a third of the frame. Outputs that are not whole leave their block
//! to the 2^-22 blocks of the same outputs (`rest`).

use super::taps::Blocks;
use super::weights::pil_tied;
use super::whole::divider_at;
use super::{Aligned32, Taps};
use std::collections::HashMap;

/// An output's tap with a whole weight or a remainder: (tap, `k`, `n`).
type WeightedTap = (usize, i16, i8);

/// A block's table: controls, weights, remainders, `D`s, multipliers and shift.
type Table8 = (Vec<[u8; 32]>, Vec<[i8; 32]>, Vec<[i8; 32]>, [u16; 16], [u16; 16], u16);

/// Outputs of one lane, and lanes of a block.
const LANE: usize = 8;
const LANES: usize = 2;

/// A group's AVX2 whole-weight blocks. One member: block `b` holds outputs `16b..16b + 16` (lane
/// `l` outputs `16b + 8l..`); two members: lane `l` holds member `l`'s outputs `8b..8b + 8`.
#[derive(Debug, Clone)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(in crate::convert) struct Whole8 {
    /// Outputs every member has from the blocks here and `rest` (the scalar loops do the rest).
    pub(in crate::convert) done: usize,
    pub(in crate::convert) pairs: usize,
    /// 16-byte loads a lane's window takes.
    pub(in crate::convert) pieces: usize,
    /// Per block: each lane's window's first byte, and whether every output of it is whole
    /// (`plain`: and none tied); the whole blocks with a tied output.
    pub(in crate::convert) bases: Vec<[u32; 2]>,
    pub(in crate::convert) whole: Vec<bool>,
    pub(in crate::convert) plain: Vec<bool>,
    pub(in crate::convert) tied: Vec<u32>,
    /// Per block, its table `t`: `t · pairs + p` of `k` and `n` (times `pieces`, plus the piece,
    /// of `ctl`), `t` of `d`, `mul` and `shift`. Blocks that compute the same relative to their
    /// windows share one (at 3× every block between a row's ends), as AVX-512's (`Whole::table`).
    /// Engine, uint8 `bilinear-antialias` at AVX2, Zen 5, best of 80, alternated three times:
    /// NV12 hot 0.307–0.324 → 0.300–0.302 ms, 8 rotating frames 0.311–0.318 → 0.303–0.305;
    /// YUY2 hot 0.410–0.418 → 0.404–0.405.
    pub(in crate::convert) table: Vec<u32>,
    /// `[table][pair][piece]`: `pshufb` controls (0x80 where the byte is not in that piece, or
    /// the tap has no weight), the pair's two taps in each word lane.
    pub(in crate::convert) ctl: Vec<Aligned32<[u8; 32]>>,
    /// `[table][pair]`: twice the taps' whole weights as signed bytes (the sums start at `D`, so
    /// they are `2S + D` with no more adds).
    pub(in crate::convert) k: Vec<Aligned32<[i8; 32]>>,
    /// `[table][pair]`: the tied outputs' remainders `n` (`weights::pil_tied`) at their taps'
    /// places, summed beside `k` in the tied blocks.
    pub(in crate::convert) n: Vec<Aligned32<[i8; 32]>>,
    /// `[table]`, per lane: `D` and the multiplier of `⌊t / 2D⌋`; per table, its shift.
    pub(in crate::convert) d: Vec<Aligned32<[u16; 16]>>,
    pub(in crate::convert) mul: Vec<Aligned32<[u16; 16]>>,
    pub(in crate::convert) shift: Vec<u64>,
    /// Bytes from the row's start that every load stays below.
    pub(in crate::convert) reach: usize,
    /// The blocks of the group's 2^-22 plan (`taps::Blocks`, eight dword lanes) that make the
    /// outputs of the blocks here that are not whole (`2b` and `2b + 1`), and those past the
    /// last block here.
    pub(in crate::convert) rest: Vec<u32>,
}

impl Whole8 {
    /// The tables every block's `table` names: as many as each of `d`, `mul` and `shift` holds.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(in crate::convert) fn tables(&self) -> usize {
        self.d.len().min(self.mul.len()).min(self.shift.len())
    }

    /// Block `b`'s table (`table[b]`), the last where the plan names one past them (never, as
    /// planned), so that no load leaves the tables; the kernels read it once a block.
    ///
    /// # Safety
    /// `b < self.table.len()` and `self.tables() > 0` (the kernels assert a plan with blocks has
    /// tables).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    #[inline(always)]
    pub(in crate::convert) unsafe fn table_of(&self, b: usize) -> usize {
        unsafe { (*self.table.get_unchecked(b) as usize).min(self.tables() - 1) }
    }

    /// The blocks for one or two members at byte `offsets` from `base[x]` (output `x`'s first
    /// tap of the first member), taps `step` bytes apart, in rows of `row_len` bytes, whose
    /// 2^-22 blocks are `b8` (their non-whole outputs' blocks); `None` where the filter has no
    /// whole weights, the group has more members, a window needs more than four pieces, twice a
    /// weight does not fit a signed byte (or a pair's sum times 255 an i16), or `b8` does not
    /// cover the blocks that are not whole.
    pub(in crate::convert) fn new(
        base: &[u32],
        offsets: &[usize],
        step: usize,
        t: &Taps,
        row_len: usize,
        b8: Option<&Blocks>,
    ) -> Option<Whole8> {
        let members = offsets.len();
        let b8 = b8?;
        if t.d.is_empty() || !(1..=2).contains(&members) {
            return None;
        }
        let per = LANES / members;
        let blocks = base.len().min(t.d.len()) / (LANE * per);
        if blocks == 0 {
            return None;
        }
        // Lane `l` of block `b`: (member, first output).
        let lane = |b: usize, l: usize| match members {
            1 => (0, LANE * (LANES * b + l)),
            _ => (l, LANE * b),
        };
        let mut dividers = HashMap::new();
        let mut divide = |d: u8, s: u16| *dividers.entry((d, s)).or_insert_with(|| divider_at(d as u16, s));
        // Per output of the blocks: `D` (0: not whole) and its (tap, whole weight, remainder)
        // where either is not 0; `Taps::d` and `k` where PIL's weights have them, else the tied.
        let outs: Vec<(u8, Vec<WeightedTap>)> = (0..blocks * LANE * per)
            .map(|x| {
                let (d, k, n) = match t.d[x] {
                    0 => pil_tied(&t.wi[x * t.taps..][..t.taps]).unwrap_or_default(),
                    d => (d, t.k[x * t.taps..][..t.taps].to_vec(), vec![0; t.taps]),
                };
                let taps = (0..k.len()).map(|j| (j, k[j], n[j])).filter(|&(_, k, n)| k != 0 || n != 0);
                (d, taps.collect())
            })
            .collect();
        // Per block, the least shift that divides every output's `D` (none: not whole).
        let shifts: Vec<Option<u16>> = (0..blocks)
            .map(|b| {
                let xs = || (0..LANES).flat_map(|l| lane(b, l).1..lane(b, l).1 + LANE);
                match xs().all(|x| outs[x].0 != 0) {
                    true => (0..16).find(|&s| xs().all(|x| divide(outs[x].0, s).is_some())),
                    false => None,
                }
            })
            .collect();
        let whole: Vec<bool> = shifts.iter().map(Option::is_some).collect();
        let live = |b: usize| {
            (0..LANES).flat_map(move |l| (0..LANE).map(move |i| (l, lane(b, l).0, lane(b, l).1 + i)))
        };
        let byte = |m: usize, x: usize, j: usize| base[x] as usize + offsets[m] + step * j;
        // The bytes lane `l` of block `b` reads with a weight, as [first, last + 1).
        let reads = |b: usize, l: usize| {
            let (m, x0) = lane(b, l);
            let bytes = (x0..x0 + LANE).flat_map(|x| outs[x].1.iter().map(move |&(j, ..)| byte(m, x, j)));
            Some((bytes.clone().min()?, bytes.max()? + 1))
        };
        let mut pairs = 0;
        let mut pieces = 1;
        for b in (0..blocks).filter(|&b| whole[b]) {
            for l in 0..LANES {
                let (lo, hi) = reads(b, l)?;
                pieces = pieces.max((hi - lo).div_ceil(16));
            }
            pairs = pairs.max(live(b).map(|(_, _, x)| outs[x].1.len().div_ceil(2)).max()?);
        }
        if pieces > 4 || pairs == 0 || row_len < 16 * pieces {
            return None;
        }
        let span = 16 * pieces;
        let tie = |b: usize| live(b).any(|(_, _, x)| outs[x].1.iter().any(|&(.., n)| n != 0));
        let mut plan = Whole8 {
            done: LANE * per * blocks,
            pairs,
            pieces,
            bases: Vec::with_capacity(blocks),
            table: Vec::with_capacity(blocks),
            plain: (0..blocks).map(|b| whole[b] && !tie(b)).collect(),
            tied: (0..blocks).filter(|&b| whole[b] && tie(b)).map(|b| b as u32).collect(),
            whole,
            ctl: Vec::with_capacity(blocks * pairs * pieces),
            k: Vec::with_capacity(blocks * pairs),
            n: Vec::with_capacity(blocks * pairs),
            d: Vec::with_capacity(blocks),
            mul: Vec::with_capacity(blocks),
            shift: Vec::with_capacity(blocks),
            reach: 0,
            rest: Vec::new(),
        };
        // What a block computes relative to its windows, once per distinct table.
        let mut tables: HashMap<Table8, u32> = HashMap::new();
        for (b, &shift) in shifts.iter().enumerate() {
            let mut starts = [0u32; LANES];
            let (mut d, mut mul) = ([1u16; 16], [0u16; 16]);
            let shift = shift.unwrap_or(0);
            let mut ctl = vec![[0x80u8; 32]; pairs * pieces];
            let mut k = vec![[0i8; 32]; pairs];
            let mut n = vec![[0i8; 32]; pairs];
            if plan.whole[b] {
                for (l, start) in starts.iter_mut().enumerate() {
                    // Pulled back from the row's end: no load leaves the row.
                    *start = reads(b, l)?.0.min(row_len - span) as u32;
                }
                for (l, m, x) in live(b) {
                    let i = x - lane(b, l).1;
                    let w = 16 * l + 2 * i;
                    let dx = outs[x].0;
                    (d[8 * l + i], mul[8 * l + i]) = (dx as u16, divide(dx, shift)?);
                    for (at_tap, &(j, kx, nx)) in outs[x].1.iter().enumerate() {
                        let at = byte(m, x, j) - starts[l] as usize;
                        assert!(at < span, "the window holds every tap with a weight");
                        let (p, h) = (at_tap / 2, at_tap % 2);
                        ctl[p * pieces + at / 16][w + h] = (at % 16) as u8;
                        k[p][w + h] = i8::try_from(2 * kx).ok()?;
                        n[p][w + h] = nx;
                    }
                    for kp in &k {
                        if 255 * (kp[w] as i32 + kp[w + 1] as i32) > i16::MAX as i32 {
                            return None;
                        }
                    }
                }
                plan.reach = plan.reach.max(starts.iter().map(|&s| s as usize + span).max().unwrap_or(0));
            }
            plan.bases.push(starts);
            let id =
                *tables.entry((ctl, k, n, d, mul, shift)).or_insert_with_key(|(ctl, k, n, d, mul, shift)| {
                    plan.ctl.extend(ctl.iter().copied().map(Aligned32));
                    plan.k.extend(k.iter().copied().map(Aligned32));
                    plan.n.extend(n.iter().copied().map(Aligned32));
                    plan.d.push(Aligned32(*d));
                    plan.mul.push(Aligned32(*mul));
                    plan.shift.push(*shift as u64);
                    plan.d.len() as u32 - 1
                });
            plan.table.push(id);
        }
        // A block that is not whole covers the outputs of the 2^-22 plan's blocks 2b and 2b + 1
        // (eight dwords: eight outputs of one member, four of each of two). The 2^-22 blocks past
        // the last one here are in `rest` too (a row that does not end on sixteen outputs), so
        // that the scalar loops do no more than without this plan.
        plan.rest = (0..blocks as u32)
            .filter(|&b| !plan.whole[b as usize])
            .flat_map(|b| [2 * b, 2 * b + 1])
            .collect();
        plan.rest.extend(2 * blocks as u32..b8.targets.len() as u32);
        plan.done = plan.done.max(b8.done);
        let covered = plan.rest.iter().all(|&r| (r as usize) < b8.targets.len());
        (covered && plan.whole.iter().any(|&w| w)).then_some(plan)
    }
}
