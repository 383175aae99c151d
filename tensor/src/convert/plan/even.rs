//! An exact box over four-byte pixels (RGBA, BGRA, RGBx…) whose every output sums the same
//! number of whole pixels, `f` of them, with one weight, outputs `f` pixels apart: an integer
//! downscale, such as 1080p → 640 at 3×. The word blocks (`taps::Blocks::words`) give such a row
//! an i32 lane per channel and output, four outputs of four channels a block, a permute and a
//! `pmaddwd` per tap pair: 1080p RGBA `area` at AVX-512 spent half of a hot frame there. Here the
//! vertical sums of a pixel's four channels move as one qword, the `f` pixels of eight outputs are
//! gathered by qword permutes and added as words (the unweighted sum of `f` sums fits a u16), and
//! sixteen outputs of every channel come out of two word permutes.

use super::pixels::pixel_members;
use super::Taps;

/// Outputs of every member a block makes.
pub(in crate::convert) const EVEN_BLOCK: usize = 16;

/// A group's even-box blocks: block `b` makes outputs `16b..16b + 16` of every member from the
/// sums `first + 64 f b ..` (four per pixel).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(in crate::convert) struct EvenBox {
    /// The sum (a sample of the row) of output 0's first tap, member 0.
    pub(in crate::convert) first: usize,
    /// Pixels an output sums, and pixels from one output's first to the next one's.
    pub(in crate::convert) f: usize,
    /// The whole weight every tap has (`Taps::k`).
    pub(in crate::convert) weight: u16,
    /// Outputs every member has from the blocks (the scalar loops do the rest).
    pub(in crate::convert) done: usize,
}

impl EvenBox {
    /// The blocks for members at byte `offsets` 0, 1, 2 (and 3) of pixels `step` = 4 samples
    /// apart, output `x`'s taps from sample `base[x]`, in rows of `row_len` samples whose
    /// vertical sums are of rows with whole weights summing to `k_rows` (`Taps::exact`); `None`
    /// where the group is not such pixels, the taps are not `f` = 2–4 even ones, or `f` sums of
    /// `255 · k_rows` could pass a u16.
    pub(in crate::convert) fn new(
        base: &[u32],
        offsets: &[usize],
        step: usize,
        t: &Taps,
        row_len: usize,
        k_rows: u32,
    ) -> Option<EvenBox> {
        let f = t.taps;
        if !pixel_members(offsets, step) || !(2..=4).contains(&f) {
            return None;
        }
        if f as u64 * u64::from(k_rows) * 255 > u64::from(u16::MAX) {
            return None;
        }
        let first = *base.first()? as usize;
        let weight = u16::try_from(*t.k.first()?).ok().filter(|&w| w > 0)?;
        // A block's loads: 16 outputs of `f` pixels, four samples each.
        let span = 4 * f * EVEN_BLOCK;
        let blocks = (base.len() / EVEN_BLOCK).min(row_len.saturating_sub(first) / span);
        let done = EVEN_BLOCK * blocks;
        let even = t.k.len() >= done * f
            && (0..done).all(|x| {
                base[x] as usize == first + 4 * f * x && t.k[x * f..][..f].iter().all(|&k| k == weight as i16)
            });
        (done > 0 && even).then_some(EvenBox { first, f, weight, done })
    }

    /// Samples from the row's start that every load stays below.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(in crate::convert) fn reach(&self) -> usize {
        self.first + 4 * self.f * self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The columns' taps of `n` outputs, output `x` summing `f` pixels from pixel `f x + shift`
    /// with whole weight `k` (`weights(x, j)` where given).
    fn taps(n: usize, f: usize, shift: u32, weights: impl Fn(usize, usize) -> i16) -> Taps {
        Taps {
            first: (0..n).map(|x| (f * x) as u32 + shift).collect(),
            taps: f,
            w: Vec::new(),
            wi: Vec::new(),
            exact: Some(f as u32),
            k: (0..n * f).map(|i| weights(i / f, i % f)).collect(),
            d: Vec::new(),
        }
    }

    fn plan(t: &Taps, members: usize, row_len: usize, k_rows: u32) -> Option<EvenBox> {
        let base: Vec<u32> = t.first.iter().map(|&p| 4 * p).collect();
        let offsets: Vec<usize> = (0..members).collect();
        EvenBox::new(&base, &offsets, 4, t, row_len, k_rows)
    }

    /// Planned for an integer downscale's pixels, as many blocks as the row holds; refused where
    /// an output's weights differ, its taps are not `f` pixels on from the last output's, the
    /// members are not a pixel's bytes, or `f` sums could pass a u16.
    #[test]
    fn even_boxes_only_where_every_output_sums_equal_pixels() {
        let t = taps(640, 3, 0, |_, _| 1);
        assert_eq!(plan(&t, 4, 7680, 3), Some(EvenBox { first: 0, f: 3, weight: 1, done: 640 }));
        assert_eq!(plan(&t, 3, 7680, 3).map(|p| p.done), Some(640));
        // A row one block short, and a first tap a pixel on: a block fewer.
        assert_eq!(plan(&t, 4, 7680 - 1, 3).map(|p| p.done), Some(624));
        let shifted = taps(640, 3, 1, |_, _| 2);
        assert_eq!(plan(&shifted, 4, 7680, 3), Some(EvenBox { first: 4, f: 3, weight: 2, done: 624 }));
        // One output in the blocks with another weight, or taps out of step: none.
        assert_eq!(plan(&taps(640, 3, 0, |x, j| if x == 100 && j == 2 { 2 } else { 1 }), 4, 7680, 3), None);
        let mut skew = t.clone();
        skew.first[200] += 1;
        assert_eq!(plan(&skew, 4, 7680, 3), None);
        // An output past the blocks may differ (the scalar loops make it).
        assert!(plan(&taps(650, 3, 0, |x, _| if x >= 640 { 2 } else { 1 }), 4, 7800, 3).is_some());
        // Not a pixel's bytes, too few or too many taps, or a vertical sum too large to add.
        let base: Vec<u32> = t.first.iter().map(|&p| 4 * p).collect();
        assert_eq!(EvenBox::new(&base, &[0, 2, 3], 4, &t, 7680, 3), None);
        assert_eq!(EvenBox::new(&base, &[0, 1], 4, &t, 7680, 3), None);
        assert_eq!(plan(&taps(640, 5, 0, |_, _| 1), 4, 12800, 5), None);
        assert_eq!(plan(&t, 4, 7680, 86), None);
        assert!(plan(&t, 4, 7680, 85).is_some());
    }
}
