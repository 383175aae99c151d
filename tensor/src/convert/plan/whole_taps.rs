//! PIL's horizontal pass with whole weights (`weights::pil_whole`, `pil_tied`) for the NEON level,
//! tap by tap. A block is sixteen consecutive outputs of one member; its window is one to four
//! 16-byte registers. Per tap, one `tbl` gathers the sixteen outputs' bytes and two `umlal`
//! multiply them by twice the whole weights (bytes: `2k ≤ 254`) into u16 sums started at `D`, so
//! the sum is `t = 2S + D` and PIL's byte is `⌊t / 2D⌋`: a multiply-high and a shift per lane.
//! NEON's 2^-22 blocks (`taps::Blocks`, `neon::multitap`) take one `tbl` and four `smlal` into
//! i32 per four outputs and tap pair, then split sums joined and shifted: about four times the
//! instructions per output (llvm-mca figures in docs/benchmark-log.md). Blocks whose indices and
//! weights are the same relative to their window share a table (at integer and most camera
//! factors every block between a row's ends does), which the kernel keeps in registers while it
//! lasts. Planned only where every block's outputs are whole (else the 2^-22 blocks make the
//! group): at the sizes scanned (Gray8, 200–2000 → 64–640) a plan had all its blocks whole or
//! a quarter of them not.

use super::weights::{whole_outputs, Tied};
use super::whole::divider;
use super::Taps;
use std::collections::HashMap;

/// Outputs a block makes.
pub(in crate::convert) const TBL_BLOCK: usize = 16;

/// The most taps with a weight an output may have (a 3× triangle has five, 4× seven).
pub(in crate::convert) const TBL_TAPS: usize = 8;

/// One table of `WholeTaps`: what a block computes relative to its window's first byte.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
pub(in crate::convert) struct TapTable {
    /// `[tap]`: each output's byte in the window (`0xff`, which `tbl` reads as zero, where the
    /// output has fewer taps) and twice its whole weight.
    pub(in crate::convert) idx: Vec<[u8; TBL_BLOCK]>,
    pub(in crate::convert) k: Vec<[u8; TBL_BLOCK]>,
    /// `[tap]`: the tied outputs' remainders (`weights::pil_tied`); empty where none is tied.
    pub(in crate::convert) n: Vec<[i8; TBL_BLOCK]>,
    /// Per output: `D`, and the multiplier and the negated shift (`ushl` shifts right by a
    /// negative count) of `⌊t / 2D⌋` (`whole::divider`).
    pub(in crate::convert) d: [u16; TBL_BLOCK],
    pub(in crate::convert) mul: [u16; TBL_BLOCK],
    pub(in crate::convert) shift: [i16; TBL_BLOCK],
}

/// Block `TapBlock`: member `member` (its index in the group) outputs `x..x + 16`, its window
/// from byte `base` of the row, through table `table`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
pub(in crate::convert) struct TapBlock {
    pub(in crate::convert) member: u32,
    pub(in crate::convert) x: u32,
    pub(in crate::convert) base: u32,
    pub(in crate::convert) table: u32,
}

/// An output's taps with a weight or a remainder: (byte in the row, twice `k`, `n`).
type Weighted = Vec<(usize, u8, i8)>;

/// A whole block's outputs' taps, and the bytes they span.
struct Span {
    lists: Vec<Weighted>,
    lo: usize,
    hi: usize,
}

/// A group's tap-by-tap whole-weight blocks (see the module).
#[derive(Debug, Clone)]
#[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
pub(in crate::convert) struct WholeTaps {
    /// Outputs every member has from the blocks (the scalar loops do the rest).
    pub(in crate::convert) done: usize,
    /// Taps every table holds (the most any output has) and registers a window takes.
    pub(in crate::convert) taps: usize,
    pub(in crate::convert) pieces: usize,
    pub(in crate::convert) blocks: Vec<TapBlock>,
    pub(in crate::convert) tables: Vec<TapTable>,
    /// Runs of consecutive blocks with the same table: blocks `from..to`, table (the kernel
    /// loads a table once a run; between a row's ends at 3× one run holds every block).
    pub(in crate::convert) runs: Vec<[u32; 3]>,
    /// Bytes from the row's start that every load stays below.
    pub(in crate::convert) reach: usize,
}

impl WholeTaps {
    /// The blocks for members at byte `offsets` from `base[x]` (output `x`'s first tap of the
    /// first member), taps `step` bytes apart, in rows of `row_len` bytes; `None` where a block's
    /// outputs are not all whole (`weights::whole_outputs`, with a divider) or its taps span more
    /// than four registers.
    pub(in crate::convert) fn new(
        base: &[u32],
        offsets: &[usize],
        step: usize,
        t: &Taps,
        row_len: usize,
    ) -> Option<WholeTaps> {
        let taps = t.taps;
        if t.d.is_empty() || base.len() < TBL_BLOCK {
            return None;
        }
        // Each output's `D`, weights and remainders, with its divider.
        let mut dividers = HashMap::new();
        let outs: Vec<Option<(Tied, (u16, u16))>> = whole_outputs(t)
            .into_iter()
            .map(|tied| {
                let tied = tied?;
                let div = (*dividers.entry(tied.0).or_insert_with(|| divider(tied.0 as u16)))?;
                Some((tied, div))
            })
            .collect();
        // An output's taps with a weight or a remainder, bytes from the member's first.
        let weighted = |x: usize| -> Option<Weighted> {
            let ((_, k, n), _) = outs.get(x)?.as_ref()?;
            let list: Vec<(usize, u8, i8)> = (0..taps)
                .filter(|&j| k[j] != 0 || n[j] != 0)
                .map(|j| (step * j, u8::try_from(2 * k[j]).unwrap_or(u8::MAX), n[j]))
                .collect();
            (list.len() <= TBL_TAPS && list.iter().all(|&(_, k, _)| k < u8::MAX)).then_some(list)
        };
        let per_member = base.len() / TBL_BLOCK;
        // Per block, its outputs' absolute taps where all are whole and their span fits four
        // registers, with the span.
        struct Planned {
            member: usize,
            x: usize,
            span: Option<Span>,
        }
        let planned: Vec<Planned> = (0..offsets.len())
            .flat_map(|m| (0..per_member).map(move |j| (m, TBL_BLOCK * j)))
            .map(|(member, x)| {
                let lists: Option<Vec<Weighted>> = (x..x + TBL_BLOCK)
                    .map(|o| {
                        let first = base[o] as usize + offsets[member];
                        Some(weighted(o)?.into_iter().map(|(at, k, n)| (first + at, k, n)).collect())
                    })
                    .collect();
                let span = lists.and_then(|lists| {
                    let lo = lists.iter().flatten().map(|&(at, ..)| at).min()?;
                    let hi = lists.iter().flatten().map(|&(at, ..)| at + 1).max()?;
                    (hi - lo <= 64).then_some(Span { lists, lo, hi })
                });
                Planned { member, x, span }
            })
            .collect();
        if planned.iter().any(|p| p.span.is_none()) {
            return None;
        }
        let widest = planned.iter().filter_map(|p| p.span.as_ref().map(|s| s.hi - s.lo)).max()?;
        let pieces = widest.div_ceil(16).max(1);
        let window = 16 * pieces;
        if row_len < window {
            return None;
        }
        let most = planned
            .iter()
            .filter_map(|p| p.span.as_ref())
            .flat_map(|s| s.lists.iter().map(Vec::len))
            .max()?;
        let mut tables: Vec<TapTable> = Vec::new();
        let mut known: HashMap<TapTable, u32> = HashMap::new();
        let mut blocks = Vec::with_capacity(planned.len());
        let mut reach = 0;
        for p in &planned {
            let (member, x) = (p.member as u32, p.x as u32);
            let Span { lists, lo, .. } = p.span.as_ref()?;
            let start = (*lo).min(row_len - window);
            reach = reach.max(start + window);
            let mut table = TapTable {
                idx: vec![[0xff; TBL_BLOCK]; most],
                k: vec![[0; TBL_BLOCK]; most],
                n: Vec::new(),
                d: [1; TBL_BLOCK],
                mul: [0; TBL_BLOCK],
                shift: [0; TBL_BLOCK],
            };
            let tied = lists.iter().flatten().any(|&(.., n)| n != 0);
            if tied {
                table.n = vec![[0; TBL_BLOCK]; most];
            }
            for (o, list) in lists.iter().enumerate() {
                let ((d, ..), (mul, shift)) = outs[p.x + o].as_ref()?;
                (table.d[o], table.mul[o], table.shift[o]) = (*d as u16, *mul, -(*shift as i16));
                for (j, &(at, k, n)) in list.iter().enumerate() {
                    table.idx[j][o] = (at - start) as u8;
                    table.k[j][o] = k;
                    if tied {
                        table.n[j][o] = n;
                    }
                }
            }
            let id = *known.entry(table.clone()).or_insert_with(|| {
                tables.push(table);
                (tables.len() - 1) as u32
            });
            blocks.push(TapBlock { member, x, base: start as u32, table: id });
        }
        let mut runs: Vec<[u32; 3]> = Vec::new();
        for (b, block) in blocks.iter().enumerate() {
            match runs.last_mut() {
                Some(run) if run[1] == b as u32 && run[2] == block.table => run[1] += 1,
                _ => runs.push([b as u32, b as u32 + 1, block.table]),
            }
        }
        Some(WholeTaps { done: TBL_BLOCK * per_member, taps: most, pieces, blocks, tables, runs, reach })
    }
}
