//! PIL's horizontal pass with whole weights (`Taps::d`, `weights::pil_whole`) in blocks of 32
//! 16-bit lanes, for the AVX-512 level: per block and tap pair one byte permute puts each
//! output's two taps side by side and one `pmaddubsw` (bytes times signed-byte weights, pairs
//! added in i16) adds them, so a block makes twice the outputs of the 2^-22 blocks
//! (`taps::Blocks`, two `pmaddwd` per pair over dwords) with half the multiplies each. The sum
//! `S` becomes PIL's byte `⌊(2S + D) / 2D⌋` by a multiply-high and a shift per lane, checked here
//! for every sum it can meet. A block with an output whose weights are not whole (taps dropped
//! at an edge, renormalized to an even `D`) is made by the 2^-22 blocks that cover the same
//! outputs (`rest`). Outputs whose whole weights have an even `D` that is not exact
//! (`weights::pil_tied`) carry a second set of signed-byte weights, summed by a second
//! `pmaddubsw` in the blocks that have them, whose sign decides the ties.

use super::quads::Reads;
use super::taps::IDLE;
use super::weights::{whole_outputs, Tied};
use super::{Aligned64, Taps};
use std::collections::HashMap;

/// A group's whole-weight blocks. Lane `l` (128 bits) of block `b` holds outputs `x..x + 8` of
/// member `m` (`targets[b][l] = (m << 24) | x`, or `IDLE`): one member's 32 consecutive outputs,
/// two members' 16, or three or four members' 8; the kernel stores them by that rule.
#[derive(Debug, Clone)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(in crate::convert) struct Whole {
    pub(in crate::convert) done: usize,
    pub(in crate::convert) pairs: usize,
    /// Ten outputs of each of three members a block (`Whole::ten`), not the lanes of `targets`.
    pub(in crate::convert) ten: bool,
    /// The ten outputs' three members interleaved, pixel by pixel (`Whole::ten_interleaved`).
    pub(in crate::convert) interleaved: bool,
    pub(in crate::convert) targets: Vec<[u32; 4]>,
    /// Per block: the window's first byte (64 bytes when `narrow`, else 128) and whether every
    /// live output is whole.
    pub(in crate::convert) narrow: bool,
    pub(in crate::convert) bases: Vec<u32>,
    pub(in crate::convert) whole: Vec<bool>,
    /// Per block, its table: the index `t` of its `d`, `mul` and `shift`, and of its pairs
    /// `t · pairs + p` in `ctl`, `k` and `n`. Blocks that compute the same relative to their
    /// windows share one (at 3× every block between a row's ends): a table per block, 1080p
    /// RGBA's 37 KB of them came from L2 for every three rows, more than the rows' 23 KB, and
    /// the blocks ran 2.6 ns a row in L1 against 3.0 in the frame (Zen 5).
    pub(in crate::convert) table: Vec<u32>,
    /// `[table][pair]`: byte indices into the window (tap `2p` then `2p + 1` per 16-bit lane) and
    /// twice the matching whole weights, as signed bytes whose pair sums times 255 fit an i16
    /// (`pmaddubsw` saturates past it): a sum started at `D` is `2S + D` with no more adds.
    /// Two adds fewer per block of 32 outputs, as in the vertical pass (`avx512::vertical_bytes`):
    /// both together, engine, 1080p → 640 `bilinear-antialias`, AVX-512 (AMD EPYC Zen 4), best of
    /// 10 alternations: NV12 hot 0.383 → 0.377 ms, 8 rotating frames 0.471 → 0.457; YUY2 hot
    /// (best of 6) 0.569 → 0.548.
    pub(in crate::convert) ctl: Vec<Aligned64<[u8; 64]>>,
    pub(in crate::convert) k: Vec<Aligned64<[i8; 64]>>,
    /// The whole blocks with an output whose weights are tied (`weights::pil_tied`), and per
    /// block whether it is whole and not tied; `[table][pair]` the remainders `n` at the places
    /// of `k` (0 for the other outputs): a lane whose `2S + D` is a whole multiple of `2D` and
    /// whose `Σ n · b` is negative takes one less. 900p → 640 NV12 `bilinear-antialias` made its
    /// chroma in the 2^-22 blocks without them.
    pub(in crate::convert) tied: Vec<u32>,
    pub(in crate::convert) plain: Vec<bool>,
    pub(in crate::convert) n: Vec<Aligned64<[i8; 64]>>,
    /// `[table]`, per lane: `D`, and the multiplier and shift that make `⌊t / 2D⌋` of `t = 2S + D`.
    pub(in crate::convert) d: Vec<Aligned64<[u16; 32]>>,
    pub(in crate::convert) mul: Vec<Aligned64<[u16; 32]>>,
    pub(in crate::convert) shift: Vec<Aligned64<[u16; 32]>>,
    /// Bytes from the row's start that every load stays below.
    pub(in crate::convert) reach: usize,
    /// The blocks of the group's 2^-22 plan (`taps::Blocks`, 16 lanes) that make the outputs of
    /// the blocks here that are not whole (sorted, once each).
    pub(in crate::convert) rest: Vec<u32>,
}

/// A `ten` block's `targets` (its words are `Whole::words`).
const IDLE_BLOCK: [u32; 4] = [IDLE; 4];

/// `(m, s)` with `⌊⌊t · m / 2^16⌋ / 2^s⌋ = ⌊t / 2D⌋` for every `t = 2S + D`, `0 ≤ S ≤ 255 · D`.
pub(in crate::convert) fn divider(d: u16) -> Option<(u16, u16)> {
    (0..16u16).find_map(|s| divider_at(d, s).map(|m| (m, s)))
}

/// The multiplier `m` of `divider` for the shift `s`, where one does it.
pub(in crate::convert) fn divider_at(d: u16, s: u16) -> Option<u16> {
    let (d, top, s) = (d as u32, 255 * d as u32, s as u32);
    let m = ((1u64 << (16 + s)).div_ceil(2 * d as u64)) as u32;
    (m < 1 << 16
        && (0..=top).all(|v| {
            let t = 2 * v + d;
            (t * m) >> 16 >> s == t / (2 * d)
        }))
    .then_some(m as u16)
}

impl Whole {
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

    /// The blocks for members at byte `offsets` from `base[x]` (output `x`'s first tap of the
    /// first member), taps `step` bytes apart, in rows of `row_len` bytes, in the lanes of
    /// `targets`; `None` where the filter has no whole weights, twice a weight does not fit a
    /// signed byte (or a pair's sum times 255 an i16) or a window does not fit.
    pub(in crate::convert) fn new(
        base: &[u32],
        offsets: &[usize],
        step: usize,
        t: &Taps,
        row_len: usize,
    ) -> Option<Whole> {
        let members = offsets.len();
        if members > 4 {
            return None;
        }
        let per = 4 / members;
        let blocks = (base.len() / 8) / per;
        let targets: Vec<[u32; 4]> = (0..blocks)
            .map(|b| {
                std::array::from_fn(|l| match l / per < members {
                    true => (((l / per) as u32) << 24) | (8 * (b * per + l % per)) as u32,
                    false => IDLE,
                })
            })
            .collect();
        // A block that is not whole covers the outputs of blocks 2b and 2b + 1 of the 2^-22
        // plan (16 dwords: half the outputs per member), which the kernel runs for it.
        let rest = |b: usize| vec![2 * b as u32, 2 * b as u32 + 1];
        let reads = Reads { base, offsets, step, t, row_len };
        Whole::build(&reads, 8 * blocks * per, targets, (false, false), rest)
    }

    /// Ten outputs of each of three members a block (`ten`, words `10m..10m + 10`): four-byte
    /// pixels whose fourth channel no output blends (an RGBA source's alpha), where the lanes of
    /// `new` spend a quarter of every block on it. At 3× a block's taps span 32 pixels, 128 bytes,
    /// once the zero tap that ends PIL's window is left out. Engine, RGBA → RGB
    /// `bilinear-antialias`, Zen 5, best of 80 alternated twice: 1080p hot 0.398–0.404 →
    /// 0.343–0.358 ms, on 8 rotating frames 0.421–0.432 → 0.379–0.380, 1600×900 on 8 frames
    /// 0.340–0.362 → 0.324–0.328.
    pub(in crate::convert) fn ten(reads: &Reads<'_>) -> Option<Whole> {
        if !super::pixels::pixel_members(reads.offsets, reads.step) {
            return None;
        }
        let blocks = reads.base.len() / 10;
        // The 2^-22 blocks (`taps::Blocks`, four outputs of each member a block) that hold
        // outputs `10b..10b + 10`: their other outputs are written twice, the same bytes.
        let rest = |b: usize| ((10 * b / 4) as u32..=((10 * b + 9) / 4) as u32).collect();
        Whole::build(reads, 10 * blocks, vec![IDLE_BLOCK; blocks], (true, false), rest)
    }

    /// `ten` with each block's words in the order of the pixels (word `w`: output `10b + w / 3`,
    /// member `w % 3`), so that a block's 30 bytes are its ten pixels' three members one after
    /// another: one store a block and row, where `ten`'s members take three; three-byte pixels
    /// too. Only where every
    /// block is whole (no `rest`), for a ring row of the members side by side
    /// (`multitap::pil8_row`) that becomes an 8-bit RGB output's row as it is.
    pub(in crate::convert) fn ten_interleaved(reads: &Reads<'_>) -> Option<Whole> {
        // Four-byte pixels (`ten`'s), or three-byte ones (RGB, BGR), whose three members the
        // lanes of `new` hold eight outputs each: 24 of a block's 32 words.
        let three = reads.step == 3 && reads.offsets == [0, 1, 2];
        if !three && !super::pixels::pixel_members(reads.offsets, reads.step) {
            return None;
        }
        let blocks = reads.base.len() / 10;
        let plan = Whole::build(reads, 10 * blocks, vec![IDLE_BLOCK; blocks], (true, true), |_| Vec::new())?;
        (plan.done == reads.base.len() && plan.whole.iter().all(|&w| w)).then_some(plan)
    }

    /// Block `b`'s live words as (word, member, output).
    pub(in crate::convert) fn words(&self, b: usize) -> Vec<(usize, usize, usize)> {
        match self.ten {
            true if self.interleaved => (0..30).map(|w| (w, w % 3, 10 * b + w / 3)).collect(),
            true => (0..30).map(|w| (w, w / 10, 10 * b + w % 10)).collect(),
            false => (0..4)
                .filter(|&l| self.targets[b][l] != IDLE)
                .flat_map(|l| {
                    let t = self.targets[b][l];
                    (0..8).map(move |i| (8 * l + i, (t >> 24) as usize, (t & 0xff_ffff) as usize + i))
                })
                .collect(),
        }
    }

    /// The plan of `targets.len()` blocks making `done` outputs of every member, each block's
    /// words `Whole::words`; `rest(b)`: the 2^-22 blocks that make block `b`'s outputs.
    fn build(
        reads: &Reads<'_>,
        done: usize,
        targets: Vec<[u32; 4]>,
        (ten, interleaved): (bool, bool),
        rest: impl Fn(usize) -> Vec<u32>,
    ) -> Option<Whole> {
        let Reads { base, offsets, step, t, row_len } = *reads;
        let (taps, pairs) = (t.taps, t.taps.div_ceil(2));
        let blocks = targets.len();
        if t.d.is_empty() || blocks == 0 {
            return None;
        }
        // Each output's `D`, weights and remainders.
        let outs: Vec<Option<Tied>> = whole_outputs(t);
        if outs.iter().all(Option::is_none) {
            return None;
        }
        let tap = |m: usize, x: usize, j: usize| base[x] as usize + offsets[m] + step * j;
        let mut dividers = HashMap::new();
        let mut divide = |dx: u8| *dividers.entry(dx).or_insert_with(|| divider(dx as u16));
        let mut plan = Whole {
            done,
            pairs,
            ten,
            interleaved,
            targets,
            narrow: false,
            bases: Vec::with_capacity(blocks),
            table: Vec::with_capacity(blocks),
            whole: Vec::with_capacity(blocks),
            ctl: Vec::with_capacity(blocks * pairs),
            k: Vec::with_capacity(blocks * pairs),
            tied: Vec::new(),
            plain: Vec::with_capacity(blocks),
            n: Vec::with_capacity(blocks * pairs),
            d: Vec::with_capacity(blocks),
            mul: Vec::with_capacity(blocks),
            shift: Vec::with_capacity(blocks),
            reach: 0,
            rest: Vec::new(),
        };
        // Per block, whether every live output is whole with a divider for its `D` (all up to
        // 92 have one; a few larger ones, 93, 107, ..., 127, do not in 16 bits), and the bytes
        // its weighted taps span: a tap whose weight and remainder are 0 is read by no one
        // (PIL's window ends on a zero of the triangle at whole factors).
        let spans: Vec<Option<(usize, usize)>> = (0..blocks)
            .map(|b| {
                let words = plan.words(b);
                let whole =
                    words.iter().all(|&(_, _, x)| outs[x].as_ref().is_some_and(|o| divide(o.0).is_some()));
                let weighted = words.iter().flat_map(|&(_, m, x)| {
                    let (_, k, n) = outs[x].as_ref().expect("whole");
                    (0..taps).filter(move |&j| k[j] != 0 || n[j] != 0).map(move |j| tap(m, x, j))
                });
                let (lo, hi) = match whole {
                    true => weighted.fold((usize::MAX, 0), |(lo, hi), at| (lo.min(at), hi.max(at + 1))),
                    false => return None,
                };
                Some((lo.min(hi), hi))
            })
            .collect();
        // What a block computes relative to its window, once per distinct table.
        #[derive(Clone, PartialEq, Eq, Hash)]
        struct Table {
            d: [u16; 32],
            mul: [u16; 32],
            shift: [u16; 32],
            ctl: Vec<([u8; 64], [i8; 64], [i8; 64])>,
        }
        let mut tables: HashMap<Table, u32> = HashMap::new();
        let widest = spans.iter().flatten().map(|&(a, z)| z - a).max().unwrap_or(0);
        let window = [64, 128].into_iter().find(|&w| widest <= w && row_len >= w)?;
        plan.narrow = window == 64;
        for (b, span) in spans.iter().enumerate() {
            let start = span.map_or(0, |s| s.0).min(row_len - window);
            plan.reach = plan.reach.max(start + window);
            plan.bases.push(start as u32);
            let whole = span.is_some();
            plan.whole.push(whole);
            let words = plan.words(b);
            let of = |x: usize| outs[x].as_ref();
            let tie =
                whole && words.iter().any(|&(_, _, x)| of(x).is_some_and(|o| o.2.iter().any(|&n| n != 0)));
            if tie {
                plan.tied.push(b as u32);
            }
            plan.plain.push(whole && !tie);
            let (mut d, mut mul, mut shift) = ([1u16; 32], [0u16; 32], [0u16; 32]);
            if whole {
                for &(w, _, x) in &words {
                    let dx = of(x)?.0;
                    let (m, s) = divide(dx)?;
                    (d[w], mul[w], shift[w]) = (dx as u16, m, s);
                }
            }
            let mut table = Table { d, mul, shift, ctl: Vec::with_capacity(pairs) };
            for p in 0..pairs {
                let (mut ctl, mut k, mut n) = ([0u8; 64], [0i8; 64], [0i8; 64]);
                if whole {
                    for &(w, m, x) in &words {
                        let (_, kx, nx) = of(x)?;
                        for h in 0..2 {
                            let (j, at) = (2 * p + h, 2 * w + h);
                            if j >= taps || (kx[j] == 0 && nx[j] == 0) {
                                // Read by no one: any byte of the window.
                                continue;
                            }
                            ctl[at] = (tap(m, x, j) - start) as u8;
                            // Twice the weights: sums started at `D` are `2S + D` (see `k`).
                            k[at] = i8::try_from(2 * kx[j]).ok()?;
                            n[at] = nx[j];
                        }
                        if 255 * (k[2 * w] as i32 + k[2 * w + 1] as i32) > i16::MAX as i32 {
                            return None;
                        }
                    }
                }
                table.ctl.push((ctl, k, n));
            }
            let id = *tables.entry(table.clone()).or_insert_with(|| {
                plan.d.push(Aligned64(table.d));
                plan.mul.push(Aligned64(table.mul));
                plan.shift.push(Aligned64(table.shift));
                for &(ctl, k, n) in &table.ctl {
                    plan.ctl.push(Aligned64(ctl));
                    plan.k.push(Aligned64(k));
                    plan.n.push(Aligned64(n));
                }
                plan.d.len() as u32 - 1
            });
            plan.table.push(id);
        }
        let mut rests: Vec<u32> = (0..blocks).filter(|&b| !plan.whole[b]).flat_map(&rest).collect();
        rests.sort_unstable();
        rests.dedup();
        plan.rest = rests;
        Some(plan)
    }
}
