//! The multi-tap filters' horizontal pass over four-byte pixels (RGBA, BGRA, RGBx…) pixel by
//! pixel, for the eight-dword levels (AVX2): a 128-bit lane holds one output pixel's four
//! channels, so the pixel's taps are the same 16-byte windows of the row for every channel, the
//! byte controls that put two taps side by side in each dword are the same two for every pixel,
//! and a tap pair's weights are one i16 pair for the whole lane. Only the window's start and the
//! weights change per pixel. The member-major blocks (`taps::Blocks`: a lane is four outputs of
//! one channel) read each of a pixel's windows once per channel and spend a `pshufb` per 16-byte
//! piece and pair: 1080p RGBA → 640 `bilinear-antialias` at AVX2 spent 84 % of its time there.
//! Eight pixels (four registers) are summed, then turned into the members' rows by a 4×4
//! transpose per 128-bit half.

use super::taps::pair;
use super::{Aligned32, Taps};

/// The bytes of a row's end that a block past it reads from: a copy with zeros after it.
pub(in crate::convert) const TAIL_COPY: usize = 512;

/// A group's pixel blocks: block `b` makes outputs `8b..8b + 8` of every member.
#[derive(Debug, Clone)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(in crate::convert) struct Pixels {
    /// Outputs every member has from the blocks (the scalar loops do the rest).
    pub(in crate::convert) done: usize,
    pub(in crate::convert) pairs: usize,
    /// 16-byte windows per pixel: pair `p` is in window `p / 2`, picked by control `p % 2`.
    pub(in crate::convert) windows: usize,
    /// Per output: its window's first byte (member 0's first tap's).
    pub(in crate::convert) bases: Vec<u32>,
    /// `[block][i][pair]`: the weight pairs of outputs `8b + i` (dwords 0-3) and `8b + 4 + i`
    /// (dwords 4-7), as i16 halves: the whole weight for the OpenCV presets, PIL's `hi` part;
    /// `lo` PIL's low part (empty otherwise).
    pub(in crate::convert) hi: Vec<Aligned32<[u32; 8]>>,
    pub(in crate::convert) lo: Vec<Aligned32<[u32; 8]>>,
    /// Blocks from `edge` on have a window past the row's end (the row is `reach` bytes): they
    /// read a copy of bytes `tail..reach` followed by zeros, `TAIL_COPY` bytes in all. Their
    /// taps past the row's end have zero weights.
    pub(in crate::convert) edge: usize,
    pub(in crate::convert) tail: usize,
    pub(in crate::convert) reach: usize,
    /// Over u16 sums (bases, `tail` and `reach` still in bytes): a window is one tap pair.
    pub(in crate::convert) words: bool,
    /// PIL's whole weights (`Taps::d`, `weights::pil_whole`), per block: whether every output of
    /// it is whole (else it takes `hi` and `lo`). `[block][i][window]`: the signed-byte weights
    /// of the window's four taps, repeated per channel (a `pmaddubsw` adds the taps in pairs);
    /// `[block][i]`: per dword `D`, and the multiplier and `16 +` shift that make `⌊t / 2D⌋` of
    /// `t = 2S + D` (`whole::divider`).
    pub(in crate::convert) whole: Vec<bool>,
    pub(in crate::convert) wk: Vec<Aligned32<[i8; 32]>>,
    pub(in crate::convert) wd: Vec<Aligned32<[u32; 8]>>,
    pub(in crate::convert) wm: Vec<Aligned32<[u32; 8]>>,
    pub(in crate::convert) ws: Vec<Aligned32<[u32; 8]>>,
}

/// Whether members at byte `offsets`, taps `step` bytes apart, are the first three or all four
/// bytes of four-byte pixels, in order (RGBA, BGRA, RGBx…): what the pixel-major plans take
/// (`Pixels`, `EvenBox`).
pub(in crate::convert) fn pixel_members(offsets: &[usize], step: usize) -> bool {
    step == 4 && (3..=4).contains(&offsets.len()) && offsets.iter().enumerate().all(|(m, &o)| o == m)
}

impl Pixels {
    /// The blocks for members at byte `offsets` 0, 1, 2 (and 3) of pixels `step` = 4 bytes
    /// apart, output `x`'s taps from byte `base[x]`, in rows of `row_len` bytes; `None` where the
    /// group is not such pixels, a window does not fit four loads or the tail does not fit its copy.
    /// `words`: the same positions in a row of u16 sums (`multitap::box_row`), the OpenCV weights.
    pub(in crate::convert) fn new(
        base: &[u32],
        offsets: &[usize],
        step: usize,
        t: &Taps,
        row_len: usize,
        pil: bool,
        words: bool,
    ) -> Option<Pixels> {
        if !pixel_members(offsets, step) {
            return None;
        }
        if words && pil {
            return None;
        }
        let (pairs, blocks) = (t.taps.div_ceil(2), base.len() / 8);
        // A window holds four pixels' bytes (two pairs) or two pixels' sums (one pair).
        let windows = if words { pairs } else { pairs.div_ceil(2) };
        if windows > 4 || blocks == 0 {
            return None;
        }
        // In bytes from here on.
        let size = if words { 2 } else { 1 };
        let base: Vec<u32> = base[..8 * blocks].iter().map(|&b| size * b).collect();
        let row_len = size as usize * row_len;
        let span = 16 * windows;
        let fits = |b: usize| (8 * b..8 * b + 8).all(|x| base[x] as usize + span <= row_len);
        let edge = (0..blocks).find(|&b| !fits(b)).unwrap_or(blocks);
        let tail = (8 * edge..8 * blocks).map(|x| base[x] as usize).min().unwrap_or(row_len).min(row_len);
        let last = (8 * edge..8 * blocks).map(|x| base[x] as usize - tail.min(base[x] as usize) + span).max();
        if row_len - tail > TAIL_COPY || last.is_some_and(|l| l > TAIL_COPY) {
            return None;
        }
        let mut plan = Pixels {
            done: 8 * blocks,
            pairs,
            windows,
            bases: base.clone(),
            hi: Vec::with_capacity(blocks * 4 * pairs),
            lo: Vec::new(),
            edge,
            tail,
            reach: row_len,
            words,
            whole: Vec::new(),
            wk: Vec::new(),
            wd: Vec::new(),
            wm: Vec::new(),
            ws: Vec::new(),
        };
        for b in 0..blocks {
            for i in 0..4 {
                for p in 0..pairs {
                    let (a, z) = (pair(t, pil, 8 * b + i, p)?, pair(t, pil, 8 * b + 4 + i, p)?);
                    plan.hi.push(Aligned32([a.0, a.0, a.0, a.0, z.0, z.0, z.0, z.0]));
                    if pil {
                        plan.lo.push(Aligned32([a.1, a.1, a.1, a.1, z.1, z.1, z.1, z.1]));
                    }
                }
            }
        }
        if pil && t.d.iter().any(|&d| d != 0) {
            plan.whole_weights(t, blocks);
        }
        Some(plan)
    }

    /// The whole-weight tables of every block (`whole`, `wk`, `wd`, `wm`, `ws`).
    fn whole_weights(&mut self, t: &Taps, blocks: usize) {
        let mut dividers = std::collections::HashMap::new();
        let mut divide = |d: u8| *dividers.entry(d).or_insert_with(|| super::whole::divider(d as u16));
        for b in 0..blocks {
            let xs = 8 * b..8 * b + 8;
            // Whole where every output is, with a divider for its `D` (see `Whole::new`).
            let whole = xs.clone().all(|x| t.d[x] != 0 && divide(t.d[x]).is_some());
            self.whole.push(whole);
            for i in 0..4 {
                let (a, z) = (8 * b + i, 8 * b + 4 + i);
                let (mut d, mut m, mut s) = ([1u32; 8], [0u32; 8], [16u32; 8]);
                for q in 0..self.windows {
                    let mut k = [0i8; 32];
                    for (lane, x) in [a, z].into_iter().enumerate() {
                        for j in 0..4 {
                            let tap = 4 * q + j;
                            let w = match whole && tap < t.taps {
                                true => t.k[x * t.taps + tap] as i8,
                                false => 0,
                            };
                            for c in 0..4 {
                                k[16 * lane + 4 * c + j] = w;
                            }
                        }
                    }
                    self.wk.push(Aligned32(k));
                }
                if whole {
                    for (lane, x) in [a, z].into_iter().enumerate() {
                        let (mul, shift) = divide(t.d[x]).unwrap_or((0, 0));
                        for c in 0..4 {
                            (d[4 * lane + c], m[4 * lane + c], s[4 * lane + c]) =
                                (t.d[x] as u32, mul as u32, 16 + shift as u32);
                        }
                    }
                }
                self.wd.push(Aligned32(d));
                self.wm.push(Aligned32(m));
                self.ws.push(Aligned32(s));
            }
        }
    }

    /// The weight vectors (`hi`, `lo`) of block `b`, pixel pair `i`, tap pair `p`.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(in crate::convert) fn at(&self, b: usize, i: usize, p: usize) -> usize {
        (4 * b + i) * self.pairs + p
    }

    /// The whole-weight vector (`wk`) of block `b`, pixel pair `i`, window `q`.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(in crate::convert) fn window(&self, b: usize, i: usize, q: usize) -> usize {
        (4 * b + i) * self.windows + q
    }
}
