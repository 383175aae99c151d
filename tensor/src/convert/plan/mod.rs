//! The sampling plan, pure layout math made once per converter and the same on every target (the
//! tests here run on any host): the source's components, each axis' taps and weights, the groups
//! of components read together, and each group's byte-shuffle (`Shuffle`) and byte-permute
//! (`Permute`) plans; with the scalar columns after the vector kernels' last block, which every
//! vector level shares. A new filter adds its tables here and its kernels to the level files.

use super::lines::Lines;
use crate::format::PixelFormat;
use crate::preprocess::Interpolation;
use crate::{Error, Result};
use std::ops::Range;

mod even;
mod pixels;
pub(super) mod quads;
mod sums;
mod taps;
mod weights;
mod whole;
mod whole8;
mod whole_taps;
pub(super) use even::EvenBox;
#[cfg(target_arch = "x86_64")]
pub(super) use even::EVEN_BLOCK;
pub(super) use pixels::Pixels;
#[cfg(any(test, target_arch = "x86_64"))]
pub(super) use pixels::TAIL_COPY;
pub(super) use quads::{Quads, ROWS_FOLD, ROWS_ONE, ROWS_TIMES};
#[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(unused_imports))]
pub(super) use sums::box_rows;
#[cfg_attr(not(target_arch = "x86_64"), allow(unused_imports))]
pub(super) use sums::{split_rows, SplitSums};
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(super) use taps::Halved;
#[cfg(target_arch = "aarch64")]
pub(super) use taps::Planar;
#[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(unused_imports))]
pub(super) use taps::{Blocks, PIL_HALF, PIL_SPLIT, TAP_UNIT};
pub(super) use taps::{Compact, TapGroup};
#[cfg(test)]
use weights::PIL_STEPS;
pub(super) use weights::{multi_axis, Filter, MultiTap, Taps, WholeRow, MAX_TAPS, PIL_SHIFT, TAP_STEPS};
#[cfg(all(test, any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(super) use whole::divider;
pub(super) use whole::Whole;
pub(super) use whole8::Whole8;
#[cfg(test)]
pub(super) use whole_taps::TBL_BLOCK;
#[cfg_attr(not(target_arch = "aarch64"), allow(unused_imports))]
pub(super) use whole_taps::{TapBlock, WholeTaps};

/// One colour component of the source: which plane, where in a granule, and its resolution.
#[derive(Debug, Clone, Copy)]
pub(super) struct Comp {
    pub(super) plane: usize,
    /// Byte offset of the component in its granule, and bytes from one granule to the next.
    pub(super) offset: usize,
    pub(super) step: usize,
    pub(super) chroma: bool,
}

/// Components gathered together: `members` are (component index, byte offset from the base), the
/// taps are the base's.
#[derive(Debug, Clone)]
// The plan is made on every target; only the x86_64 kernels read all of it.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(super) struct Group {
    pub(super) plane: usize,
    pub(super) chroma: bool,
    pub(super) members: Vec<(usize, usize)>,
    pub(super) i0: Vec<u32>,
    pub(super) i1: Vec<u32>,
    /// The largest tap: a dword there must be inside the row.
    pub(super) max: u32,
    /// Where the taps are dense enough, the byte shuffles that replace the gathers.
    pub(super) shuffle: Option<Shuffle>,
    /// ... and the AVX-512 byte permutes.
    pub(super) permute: Option<Permute>,
}

impl Group {
    /// The output rows of the first `M` members (the sampling kernels' stores) and the values
    /// every member's row holds, which bounds the blocks they write.
    #[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(dead_code))]
    pub(super) fn member_rows<const M: usize>(&self, out: &mut [Lines<f32>; 4]) -> ([*mut f32; M], usize) {
        let width = self.members.iter().map(|&(k, _)| out[k].len()).min().unwrap_or(0);
        (std::array::from_fn(|j| out[self.members[j].0].as_mut_ptr()), width)
    }
}

/// A vector control aligned to its width: control loads that straddle two cache lines cost ~10 %
/// of a whole conversion here (1920×1080 → 640×640: YUY2 float32 0.19 ms against 0.173, NV12
/// uint8 0.165–0.175 against 0.150), and whether they did depended on where the heap happened to
/// put the plan (the engine example was lucky, the element was not).
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
pub(super) struct Aligned64<T>(T);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C, align(32))]
pub(super) struct Aligned32<T>(T);

// The kernels load a control from the element's address: it must be the bytes, at their width.
const _: () = assert!(size_of::<Aligned64<[u8; 64]>>() == 64 && align_of::<Aligned64<[u8; 64]>>() == 64);
const _: () = assert!(size_of::<Aligned32<[u8; 32]>>() == 32 && align_of::<Aligned32<[u8; 32]>>() == 32);

/// A group's taps as byte shuffles. Each block of eight outputs reads its source bytes as 16-byte
/// windows, one per 128-bit lane: two windows of four outputs each, or, for sparser taps, four
/// windows of two (YUY2's luma) or eight of one (four-byte pixels with both taps past 2×: RGBA at
/// 2.5×), the lanes of two or four vectors whose shuffles are OR-ed. One `pshufb` per tap, member
/// and vector then moves every output's byte into a zero-extended dword. Gathers were most of an
/// NV12 frame's time (measured: the pair gathers and luma gathers ~40 % of 1080p → 640 letterbox
/// on one core), and RGBA 1600×900 → 640 took 0.66 ms on them against 0.25 at 1080p; a shuffle
/// (two or four with sparser windows) does eight taps in single-cycle instructions.
#[derive(Debug, Clone)]
// The plan is made on every target; only the x86_64 kernels read all of it.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(super) struct Shuffle {
    /// Windows per block: 2, 4 or 8 (the kernels' vectors of windows are half of it).
    pub(super) windows: usize,
    /// Per block, the windows' first bytes (the first `windows` used).
    pub(super) bases: Vec<[u32; 8]>,
    /// Per block and member (members in order): tap 0 (`i0`) alone as dwords (for taps on
    /// samples), then taps 0 and 1 as the two words of each dword (for `pmaddwd` with the weight
    /// pair in 256ths: the horizontal blend in one exact integer instruction); each of them once per
    /// vector of windows.
    pub(super) controls: Vec<Aligned32<[u8; 32]>>,
    /// Bytes from the row's window start that every load stays below.
    pub(super) reach: usize,
    /// With one vector of windows (`windows` 2), per block and member: the two-tap control with
    /// each tap byte `i` made the byte pair `2i, 2i + 1` (0xff, 0xff for none): NEON's `tbl` of
    /// the window's bytes blended down as u16 (`neon::rows_first_blocks`).
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    pub(super) words: Vec<Aligned32<[u8; 32]>>,
    /// With one vector of windows, per block and pair of members (members `2p`, `2p + 1`): each
    /// output's two tap bytes side by side, member `2p`'s four outputs of a lane in its bytes
    /// 0..8 and member `2p + 1`'s in 8..16 (0x80, a zero, where the pair has one member): the
    /// AVX2 rows-first blocks' one `pshufb` a row and pair (`avx2::rows_first_blocks`).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(super) pairs: Vec<Aligned32<[u8; 32]>>,
    /// Where `pairs` are made, per block: the column weights in quarters of 256ths as the byte
    /// pairs `((256 - w) / 4, w / 4)` of a lane's four outputs, twice (once for each member of a
    /// pair): `pmaddubsw`'s second operand over `pairs`' bytes.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(super) across: Vec<Aligned32<[u8; 32]>>,
}

/// Interpolation weights are whole 256ths. A byte blended by two of them has at most 8 + 8 + 8
/// significant bits, so every bilinear sample is exact in f32 whichever way a kernel computes it
/// (rows or columns first, with or without FMA, through `pmaddwd` on integer pairs): the levels
/// cannot differ by a rounding, and an output that lands on .5 is a true tie, not an accident of
/// the order. A weight is off by at most 1/512 of the tap distance; finer steps would need more
/// bits than f32 has.
const WEIGHT_STEPS: f64 = 256.0;

/// The kernels' scale from integer blends (weights times `WEIGHT_STEPS`) back to sample values.
pub(super) const WEIGHT_UNIT: f32 = (1.0 / WEIGHT_STEPS) as f32;

/// The float whose last mantissa bit is worth `unit` (a power of two): `unit · 2^23`. Its bits
/// or-ed with a whole `a` in `0..2^23` are the float `unit · 2^23 + a · unit` exactly, and
/// subtracting it leaves `a · unit` exactly: the floats a conversion and a multiply by `unit`
/// make (both exact: `a` has at most 23 bits, `unit` one), in one integer and one float
/// operation where those are two float ones (the x86 levels' `Scaled`).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(super) fn whole_base(unit: f32) -> f32 {
    assert!(unit.is_normal() && unit.to_bits() & 0x7f_ffff == 0, "a power of two");
    unit * (1u32 << 23) as f32
}

/// A row weight `wy` as whole 256ths strictly between 0 and 256: a blend of two rows, which the
/// kernels that blend the rows first (`avx512::rows_first_blocks`, `neon::rows_first_blocks`)
/// take by their integer blends; `None` for one row.
#[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(dead_code))]
pub(super) fn row_steps(wy: f32) -> Option<u32> {
    let k = wy * WEIGHT_STEPS as f32;
    (k > 0.0 && k < WEIGHT_STEPS as f32 && k.fract() == 0.0).then_some(k as u32)
}

/// Weights `w` as `(1 - w, w)` in 256ths, the two i16 halves of a u32 (their sum is exactly 256).
pub(super) fn weight_pairs(w: &[f32]) -> Vec<u32> {
    let one = WEIGHT_STEPS as u32;
    w.iter()
        .map(|&w| {
            let b = (w * WEIGHT_STEPS as f32).clamp(0.0, WEIGHT_STEPS as f32) as u32;
            (one - b) | (b << 16)
        })
        .collect()
}

/// `Shuffle::across` from the weight pairs `wq` (`weight_pairs`), `None` unless every weight is
/// whole quarters of 256ths (`(256 - w) / 4` and `w / 4` then fit a signed byte). Every camera
/// factor here has them (3× and 2.5×, luma and chroma at any siting: taps at eighths of a sample).
fn quarter_weights(wq: &[u32]) -> Option<Vec<Aligned32<[u8; 32]>>> {
    wq.iter().all(|&p| p & 0x0003_0003 == 0).then(|| {
        wq.chunks_exact(8)
            .map(|block| {
                Aligned32(std::array::from_fn(|i| {
                    let pair = block[4 * (i / 16) + (i % 8) / 2] >> 2;
                    (if i % 2 == 0 { pair & 0xff } else { pair >> 16 }) as u8
                }))
            })
            .collect()
    })
}

/// The first byte of the window that holds both taps of outputs `outs` and `top` bytes past the
/// last (the members' offsets), or `None` where they span `window` bytes or more.
fn window_start(i0: &[u32], i1: &[u32], outs: Range<usize>, top: u32, window: u32) -> Option<u32> {
    let taps = || i0[outs.clone()].iter().chain(&i1[outs.clone()]).copied();
    let first = taps().min()?;
    (taps().max()? + top - first < window).then_some(first)
}

/// Shuffle controls for blocks of eight outputs whose taps (plus member offsets) fit 16-byte
/// windows of four outputs, else of two, else of one; `None` where even one does not (a tap pair
/// of four-byte pixels more than 12 bytes apart), which keeps the gathers.
fn shuffle_plan(i0: &[u32], i1: &[u32], members: &[(usize, usize)]) -> Option<Shuffle> {
    [2, 4, 8].into_iter().find_map(|windows| shuffle_windows(i0, i1, members, windows))
}

fn shuffle_windows(i0: &[u32], i1: &[u32], members: &[(usize, usize)], windows: usize) -> Option<Shuffle> {
    let blocks = i0.len().min(i1.len()) / 8;
    if blocks == 0 {
        return None;
    }
    let per = 8 / windows;
    // Vectors of windows: window w is lane w / parts of vector w % parts.
    let parts = windows / 2;
    let top = members.iter().map(|&(_, shift)| shift as u32).max().unwrap_or(0);
    let mut bases = Vec::with_capacity(blocks);
    let mut controls = Vec::with_capacity(blocks * members.len() * windows);
    let mut reach = 0;
    for b in 0..blocks {
        let mut base = [0u32; 8];
        for (w, first) in base.iter_mut().enumerate().take(windows) {
            *first = window_start(i0, i1, 8 * b + per * w..8 * b + per * (w + 1), top, 16)?;
            reach = reach.max(*first as usize + 16);
        }
        // Output j is in window j / per, so in vector (j / per) % parts, lane j / 4.
        let part = |j: usize| (j / per) % parts;
        for &(_, shift) in members {
            let at = |taps: &[u32], j: usize| (taps[8 * b + j] + shift as u32 - base[j / per]) as u8;
            for two in [false, true] {
                for p in 0..parts {
                    let mut ctl = [0x80u8; 32];
                    for j in (0..8).filter(|&j| part(j) == p) {
                        ctl[4 * j] = at(i0, j);
                        if two {
                            ctl[4 * j + 2] = at(i1, j);
                        }
                    }
                    controls.push(Aligned32(ctl));
                }
            }
        }
        bases.push(base);
    }
    // The two-tap controls' u16 lanes `(i, 0x80)` as `(2i, 2i + 1)`.
    let words = match windows {
        2 => controls
            .chunks_exact(2)
            .map(|forms| {
                let c = &forms[1].0;
                Aligned32(std::array::from_fn(|k| match c[k & !1] {
                    i if i < 16 => 2 * i + (k & 1) as u8,
                    _ => 0xff,
                }))
            })
            .collect(),
        _ => Vec::new(),
    };
    let pairs = match windows {
        2 => {
            let (m, controls) = (members.len(), &controls);
            (0..blocks)
                .flat_map(|b| {
                    (0..m.div_ceil(2)).map(move |p| {
                        let mut ctl = [0x80u8; 32];
                        for (half, j) in (2 * p..m.min(2 * p + 2)).enumerate() {
                            // The member's two-tap control: output `4 * lane + o`'s taps at
                            // bytes `4o` and `4o + 2` of its lane.
                            let c = &controls[(b * m + j) * 2 + 1].0;
                            for lane in 0..2 {
                                for o in 0..4 {
                                    let at = 16 * lane + 8 * half + 2 * o;
                                    ctl[at] = c[16 * lane + 4 * o];
                                    ctl[at + 1] = c[16 * lane + 4 * o + 2];
                                }
                            }
                        }
                        Aligned32(ctl)
                    })
                })
                .collect()
        }
        _ => Vec::new(),
    };
    Some(Shuffle { windows, bases, controls, reach, words, pairs, across: Vec::new() })
}

/// A group's taps for the AVX-512 kernels: blocks of sixteen outputs whose bytes (every tap of
/// every member) lie in windows of the row (`Windows`); per member and block a control puts each
/// output's byte (or its two taps' bytes, as the words for `pmaddwd`) in a dword, the other bytes
/// zeroed by a mask. Sixteen outputs per instruction where the AVX2 shuffles do eight (measured:
/// NV12 → uint8 0.207 → 0.193 ms, YUY2 0.201 → 0.160; narrow windows, no mask and one load:
/// 0.193 → 0.177 ms, float32 0.230 → 0.217).
#[derive(Debug, Clone)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(super) struct Permute {
    pub(super) windows: Windows,
    /// Per block, the window's first byte; `Halves` and `Split` two per block, outputs 0..8 from
    /// the first and 8..16 from the second (`bases[2b]`, `bases[2b + 1]`), each control's indices
    /// relative to its half's window.
    pub(super) bases: Vec<u32>,
    /// Per block and member (members in order): tap 0 alone (byte 0 of each dword), then taps 0
    /// and 1 (bytes 0 and 2; bytes 1 and 3 the same taps, from the second table where the
    /// windows are 64 bytes).
    pub(super) controls: Vec<Aligned64<[u8; 64]>>,
    /// Bytes from the row's window start that every load stays below.
    pub(super) reach: usize,
}

/// Where a `Permute` block's bytes lie, the first that fits: one 64-byte window (`Narrow`: one
/// load a row, a one-table `vpermb` a member); a 64-byte window per half block (`Halves`: two
/// loads, two `vpermb`; YUY2 at 2.5× and 3×, whose sixteen outputs span up to 100 bytes); a
/// 128-byte window per half block (`Split`: four loads, two two-table `vpermt2b`; RGBA at 3×, 16
/// pixels every 12 bytes, and at 2.5×, which took the AVX2 shuffles of one or two outputs a
/// window: 1600×900 RGBA → 640 uint8 0.27 ms against 0.19 for 1080p). On this Xeon a
/// `vpermt2b` costs as much as two `vpermb` and more (a loop of NV12's two-member rows-first
/// blocks, 16 outputs: 10.2–11.1 cycles with one `vpermt2b` a member, 9.2–9.7 with two masked
/// `vpermb`), so two halves of 64 bytes replaced one window of 128 (which no uniform step
/// needs once the halves are tried: eight outputs past 64 bytes put sixteen past 128).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(super) enum Windows {
    Narrow,
    Halves,
    Split,
}

impl Windows {
    /// Bytes a window holds.
    pub(super) fn bytes(self) -> u32 {
        if self == Windows::Split {
            128
        } else {
            64
        }
    }

    /// Windows a block reads from each row.
    pub(super) fn per_block(self) -> usize {
        if self == Windows::Narrow {
            1
        } else {
            2
        }
    }
}

impl Permute {
    /// Per block, three controls that pick its sixteen pixels' channels `comps` (members of
    /// `members`, in the output's order) from the block's windows by their first tap, as one
    /// interleaved run of 48 values: control `v`'s dword `l` (byte 0) picks value `16v + l`,
    /// pixel `(16v + l) / 3`, from its half's window as the member's own control does. `None`
    /// where a channel is not a member. (`avx512::PixelBlocks`: an RGB source's one-tap blocks
    /// straight into a float32 RGB tensor.)
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(super) fn pixel_picks(
        &self,
        members: &[(usize, usize)],
        comps: [usize; 3],
    ) -> Option<Vec<Aligned64<[u8; 64]>>> {
        let m: Vec<usize> =
            comps.iter().map(|&k| members.iter().position(|&(c, _)| c == k)).collect::<Option<_>>()?;
        let blocks = self.controls.len() / (2 * members.len());
        let mut picks = Vec::with_capacity(3 * blocks);
        for b in 0..blocks {
            for v in 0..3 {
                let mut ctl = [0u8; 64];
                for l in 0..16 {
                    let (p, i) = ((16 * v + l) / 3, (16 * v + l) % 3);
                    ctl[4 * l] = self.controls[2 * (b * members.len() + m[i])].0[4 * p];
                }
                picks.push(Aligned64(ctl));
            }
        }
        Some(picks)
    }
}

/// The `Permute` plan of a group, `None` where even eight outputs span more than 128 bytes.
fn permute_plan(i0: &[u32], i1: &[u32], members: &[(usize, usize)]) -> Option<Permute> {
    [Windows::Narrow, Windows::Halves, Windows::Split]
        .into_iter()
        .find_map(|w| permute_windows(i0, i1, members, w))
}

fn permute_windows(i0: &[u32], i1: &[u32], members: &[(usize, usize)], windows: Windows) -> Option<Permute> {
    let blocks = i0.len().min(i1.len()) / 16;
    if blocks == 0 {
        return None;
    }
    let window = windows.bytes();
    let top = members.iter().map(|&(_, shift)| shift as u32).max().unwrap_or(0);
    let per_block = windows.per_block();
    let mut bases = Vec::with_capacity(blocks * per_block);
    let mut controls = Vec::with_capacity(blocks * members.len() * 2);
    let mut reach = 0;
    let per = 16 / per_block;
    for b in 0..blocks {
        let mut base = [0u32; 2];
        for (h, base) in base.iter_mut().enumerate().take(per_block) {
            let start = 16 * b + per * h;
            *base = window_start(i0, i1, start..start + per, top, window)?;
            reach = reach.max((*base + window) as usize);
            bases.push(*base);
        }
        for &(_, shift) in members {
            let at = |taps: &[u32], j: usize| (taps[16 * b + j] + shift as u32 - base[j / per]) as u8;
            for two in [false, true] {
                // With two taps each tap's index again in the byte after it, from the second
                // table where a window is 64 bytes: a second row's window there pairs the rows'
                // bytes (`avx512::rows_first_blocks`). The kernels mask every other byte.
                let second = if window == 64 { 64 } else { 0 };
                let mut ctl = [second; 64];
                for j in 0..16 {
                    ctl[4 * j] = at(i0, j);
                    if two {
                        ctl[4 * j + 1] = at(i0, j) | second;
                        ctl[4 * j + 2] = at(i1, j);
                        ctl[4 * j + 3] = at(i1, j) | second;
                    }
                }
                controls.push(Aligned64(ctl));
            }
        }
    }
    Some(Permute { windows, bases, controls, reach })
}

/// What the source components are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SrcKind {
    Yuv,
    /// R, G, B (and A when present), in that order in `comps`.
    Rgb {
        alpha: bool,
    },
    Gray,
}

pub(super) fn components(format: PixelFormat) -> Result<(SrcKind, Vec<Comp>)> {
    use PixelFormat as P;
    let c = |plane, offset, step, chroma| Comp { plane, offset, step, chroma };
    let rgb = |order: [usize; 3], bpp: usize, alpha: Option<usize>| {
        let mut v: Vec<Comp> = order.iter().map(|&o| c(0, o, bpp, false)).collect();
        if let Some(a) = alpha {
            v.push(c(0, a, bpp, false));
        }
        (SrcKind::Rgb { alpha: alpha.is_some() }, v)
    };
    Ok(match format {
        P::Rgb => rgb([0, 1, 2], 3, None),
        P::Bgr => rgb([2, 1, 0], 3, None),
        P::Rgba => rgb([0, 1, 2], 4, Some(3)),
        P::Bgra => rgb([2, 1, 0], 4, Some(3)),
        P::Rgbx => rgb([0, 1, 2], 4, None),
        P::Bgrx => rgb([2, 1, 0], 4, None),
        P::Gray8 => (SrcKind::Gray, vec![c(0, 0, 1, false)]),
        P::PlanarRgb => {
            (SrcKind::Rgb { alpha: false }, vec![c(0, 0, 1, false), c(1, 0, 1, false), c(2, 0, 1, false)])
        }
        // Y, U, V.
        P::Nv12 | P::Nv16 => (SrcKind::Yuv, vec![c(0, 0, 1, false), c(1, 0, 2, true), c(1, 1, 2, true)]),
        P::Nv21 => (SrcKind::Yuv, vec![c(0, 0, 1, false), c(1, 1, 2, true), c(1, 0, 2, true)]),
        P::I420 => (SrcKind::Yuv, vec![c(0, 0, 1, false), c(1, 0, 1, true), c(2, 0, 1, true)]),
        P::Yv12 => (SrcKind::Yuv, vec![c(0, 0, 1, false), c(2, 0, 1, true), c(1, 0, 1, true)]),
        P::Yuy2 => (SrcKind::Yuv, vec![c(0, 0, 2, false), c(0, 1, 4, true), c(0, 3, 4, true)]),
        P::Uyvy => (SrcKind::Yuv, vec![c(0, 1, 2, false), c(0, 0, 4, true), c(0, 2, 4, true)]),
        other => {
            return Err(Error::InvalidArgument(format!("{} frames have no pixels to convert", other.name())));
        }
    })
}

/// Sampling positions along one axis for the content pixels: for output index i, taps `i0[i]` and
/// `i1[i]` with weight `w[i]` on `i1`.
#[derive(Debug, Clone, Default)]
pub(super) struct Axis {
    pub(super) i0: Vec<usize>,
    pub(super) i1: Vec<usize>,
    pub(super) w: Vec<f32>,
}

impl Axis {
    /// The source rows output `on` reads (`i0`, and `i1` where its weight is not 0) that output
    /// `on - 1` does not: each row the outputs read appears at the first output that reads it
    /// (and again only where an output between skips it). `None` past the outputs.
    pub(super) fn new_rows(&self, on: usize) -> [Option<usize>; 2] {
        let n = self.i0.len().min(self.i1.len()).min(self.w.len());
        let read = |i: usize| [self.i0[i], if self.w[i] != 0.0 { self.i1[i] } else { self.i0[i] }];
        if on >= n {
            return [None; 2];
        }
        let now = read(on);
        let before = if on == 0 { None } else { Some(read(on - 1)) };
        let new = |r: usize| !before.is_some_and(|b| b.contains(&r));
        [Some(now[0]).filter(|&r| new(r)), Some(now[1]).filter(|&r| r != now[0] && new(r))]
    }

    /// How far past output `i`'s first tap row (`i0[i]`) lie the rows output `i + ahead` reads
    /// and output `i + ahead - 1` did not, in bytes of a plane of `len` bytes, rows `stride`
    /// apart: `[first, second]`, the second only where that output blends two rows; 0 where there
    /// is no such output, it reads the rows the one before it read, or a row is past the plane.
    /// What a kernel reading output `i`'s rows asks for again (`driver::direct_rows`). Inlined:
    /// called, its pair came back through the stack as two 8-byte stores that the caller read
    /// as one 16-byte load, a store-forwarding stall on every plane of every row.
    #[inline(always)]
    pub(super) fn ahead(&self, i: usize, ahead: usize, stride: usize, len: usize) -> [usize; 2] {
        let on = i + ahead;
        if ahead == 0 || on >= self.i0.len().min(self.i1.len()).min(self.w.len()) {
            return [0; 2];
        }
        let (i0, i1, w, at) = (self.i0[on], self.i1[on], self.w[on], self.i0[i]);
        if self.i0[on - 1] == i0 && self.i1[on - 1] == i1 {
            return [0; 2];
        }
        let two = w != 0.0 && i1 != i0;
        let last = if two { i0.max(i1) } else { i0 };
        if last * stride >= len || i0 < at {
            return [0; 2];
        }
        [(i0 - at) * stride, if two && i1 > at { (i1 - at) * stride } else { 0 }]
    }
}

/// How far a grid's samples sit from the centred siting, in samples: 0 where centred (sample `j`'s
/// centre at pixel `(j + 0.5) · div`, the middle of the pixels it covers), `(div - 1) / (2 · div)`
/// where cosited (on its first pixel's centre, `j · div + 0.5`): a quarter sample for 2:1 chroma.
/// A position `p` in samples of the centred grid is `p + site_shift` in samples of the cosited
/// one. Luma grids (`div` 1) are the same either way.
pub(super) fn site_shift(div: usize, cosited: bool) -> f64 {
    match cosited {
        true => (div - 1) as f64 / (2 * div) as f64,
        false => 0.0,
    }
}

/// Pixel-centre mapping of `n` outputs onto source samples `[start, start + len)` of a grid whose
/// samples each cover `div` pixels (chroma: 2), clamped to the grid's samples `[lo, hi]`; `shift`
/// the grid's siting (`site_shift`), which moves the taps and weights only.
#[allow(clippy::too_many_arguments)]
pub(super) fn axis(
    n: usize,
    src_start: usize,
    src_len: usize,
    div: usize,
    lo: usize,
    hi: usize,
    interp: Interpolation,
    shift: f64,
) -> Axis {
    let scale = src_len as f64 / n as f64;
    let mut a = Axis { i0: Vec::with_capacity(n), i1: Vec::with_capacity(n), w: Vec::with_capacity(n) };
    for i in 0..n {
        // Position in source pixels, then in this grid's samples (sample j's centre at j).
        let px = src_start as f64 + (i as f64 + 0.5) * scale;
        match interp {
            Interpolation::Nearest => {
                // The source pixel under the output's centre, then the sample nearest to that
                // pixel's centre, a tie to the lower one (a cosited 2:1 grid's odd pixels lie
                // midway: replicating decoders give them sample k, not k + 1). At 2:1 both
                // sitings therefore pick `pixel / 2`; the siting matters to the filters that
                // weigh samples by distance.
                let at = (px.floor() + 0.5) / div as f64 - 0.5 + shift;
                let s = ((at - 0.5).ceil().max(0.0) as usize).clamp(lo, hi);
                a.i0.push(s);
                a.i1.push(s);
                a.w.push(0.0);
            }
            _ => {
                let s = (px / div as f64 - 0.5 + shift).clamp(lo as f64, hi as f64);
                let s0 = s.floor() as usize;
                a.i0.push(s0);
                a.i1.push((s0 + 1).min(hi));
                a.w.push(((s - s0 as f64) * WEIGHT_STEPS).round_ties_even() as f32 * WEIGHT_UNIT);
            }
        }
    }
    a
}

/// Components of one plane at one resolution whose bytes sit within a dword of each other at
/// every tap (RGB's three, RGBA's four, NV12's U and V, YUY2's U and V), so one gather per tap
/// brings them all. `taps[k]` are component `k`'s two taps (bytes from its plane's window);
/// `on_samples` says, for luma and for chroma, that every tap falls on a sample; with
/// `tap0_on_samples` such groups' shuffles are planned from tap 0 alone. `wq` are the luma's and
/// the chroma's column weight pairs (`weight_pairs`): `Shuffle::pairs` and `Shuffle::across`
/// only where they are whole quarters (`quarter_weights`).
pub(super) fn groups(
    comps: &[Comp],
    taps: &[(Vec<u32>, Vec<u32>)],
    on_samples: [bool; 2],
    wq: [&[u32]; 2],
    tap0_on_samples: bool,
) -> Vec<Group> {
    let across = wq.map(quarter_weights);
    let mut done = vec![false; comps.len()];
    let mut groups = Vec::new();
    // Lowest byte offset first, so each group's base is its first byte.
    let mut order: Vec<usize> = (0..comps.len()).collect();
    order.sort_by_key(|&k| comps[k].offset);
    for &k in &order {
        if done[k] {
            continue;
        }
        let base = comps[k];
        let members: Vec<(usize, usize)> = order
            .iter()
            .copied()
            .filter(|&m| {
                let c = comps[m];
                !done[m]
                    && c.plane == base.plane
                    && c.chroma == base.chroma
                    && c.step == base.step
                    && c.offset >= base.offset
                    && c.offset - base.offset < 4
            })
            .map(|m| (m, comps[m].offset - base.offset))
            .collect();
        for &(m, _) in &members {
            done[m] = true;
        }
        let (i0, i1) = taps[k].clone();
        let max = i0.iter().chain(&i1).copied().max().unwrap_or(0);
        // NEON has no gathers to fall back on, and where every tap is on a sample its kernel
        // reads tap 0 alone: planned from tap 0, RGBA at 3× (1080p → 640, two pixels 12
        // bytes apart with their right neighbours span 20) fits windows of two outputs.
        let mut shuffle = match tap0_on_samples && on_samples[usize::from(base.chroma)] {
            true => shuffle_plan(&i0, &i0, &members),
            false => shuffle_plan(&i0, &i1, &members),
        };
        if let Some(plan) = shuffle.as_mut().filter(|p| !p.pairs.is_empty()) {
            match &across[usize::from(base.chroma)] {
                Some(weights) => plan.across = weights.clone(),
                None => plan.pairs = Vec::new(),
            }
        }
        let permute = permute_plan(&i0, &i1, &members);
        groups.push(Group { plane: base.plane, chroma: base.chroma, members, i0, i1, max, shuffle, permute });
    }
    groups
}

/// One group's source rows at an output row, as a level's sampling kernels read them straight
/// from the frame (`avx512::sample`, `avx2::sample`, `neon::sample`): the two rows from the
/// window's first byte and the second one's weight, the group and its plan (`P`: the level's),
/// the column weight pairs (`weight_pairs`), whether every tap is on a sample, and how far on
/// lie the lines a later output row reads (`Axis::ahead`).
#[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(dead_code))]
pub(super) struct SampleRow<'a, P> {
    pub(super) r0: &'a [u8],
    pub(super) r1: &'a [u8],
    pub(super) wy: f32,
    pub(super) g: &'a Group,
    pub(super) plan: &'a P,
    pub(super) wq: &'a [u32],
    pub(super) single: bool,
    pub(super) ahead: [usize; 2],
}

// (Derived, `Clone` and `Copy` would ask the same of `P`.)
impl<P> Clone for SampleRow<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<P> Copy for SampleRow<'_, P> {}

#[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(dead_code))]
impl<P> SampleRow<'_, P> {
    /// The columns after the first `blocks` blocks of `width` outputs that the level's kernels
    /// wrote, by `group_tail`; returns the columns the blocks wrote. Inline, and `group_tail`
    /// only where a column is left: a call a group and row with none left (every row at 3×) was
    /// a tenth of the row driver's samples on Zen 5.
    #[inline(always)]
    pub(super) fn tail(&self, wx: &[f32], width: usize, blocks: usize, out: &mut [Lines<f32>; 4]) -> usize {
        let g = self.g;
        let n = g.i0.len().min(g.i1.len()).min(wx.len());
        let blocks = blocks.min(n / width);
        if width * blocks < n {
            group_tail(self.r0, self.r1, self.wy, g, wx, width * blocks..n, out);
        }
        width * blocks
    }
}

/// A group's outputs `xs` one at a time, straight from the two source rows' bytes: the columns
/// the vector kernels leave after their last full block.
#[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(dead_code))]
pub(super) fn group_tail(
    r0: &[u8],
    r1: &[u8],
    wy: f32,
    g: &Group,
    wx: &[f32],
    xs: Range<usize>,
    out: &mut [Lines<f32>; 4],
) {
    for x in xs {
        for &(k, shift) in &g.members {
            let at = |r: &[u8], i: u32| r[i as usize + shift] as f32;
            let (i0, i1) = (g.i0[x], g.i1[x]);
            let top = at(r0, i0) + wx[x] * (at(r0, i1) - at(r0, i0));
            let bottom = at(r1, i0) + wx[x] * (at(r1, i1) - at(r1, i0));
            out[k][x] = top + wy * (bottom - top);
        }
    }
}

/// One loop per (window variant, members, single tap, two rows) of a group's block kernel for
/// `$row` (a `SampleRow`): `$f::<VARIANT, MEMBERS, SINGLE, TWO>(&row, $out)`, the variant
/// given or (`windows`) its shuffle plan's vectors of windows (1, 2 or 4), members 1 to 4,
/// SINGLE the row's, TWO where it has a second row's weight. No branch, member loop or bounds
/// check per block (measured: NV12 → uint8 0.248 → 0.225 ms with the AVX2 shuffles; callgrind
/// counted ~90 instructions per 8 outputs before, for ~35 vector ones).
#[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(unused_macros))]
macro_rules! group_dispatch {
    ($f:ident, windows, $row:expr, $out:expr) => {{
        let row = &$row;
        match row.plan.windows {
            2 => group_dispatch!($f, 1, row, $out),
            4 => group_dispatch!($f, 2, row, $out),
            _ => group_dispatch!($f, 4, row, $out),
        }
    }};
    ($f:ident, $v:tt, $row:expr, $out:expr) => {{
        let row = $row;
        macro_rules! taps {
            ($m:tt) => {
                match (row.single, row.wy != 0.0) {
                    (true, false) => unsafe { $f::<$v, $m, true, false>(row, $out) },
                    (true, true) => unsafe { $f::<$v, $m, true, true>(row, $out) },
                    (false, false) => unsafe { $f::<$v, $m, false, false>(row, $out) },
                    (false, true) => unsafe { $f::<$v, $m, false, true>(row, $out) },
                }
            };
        }
        match row.g.members.len() {
            1 => taps!(1),
            2 => taps!(2),
            3 => taps!(3),
            _ => taps!(4),
        }
    }};
}
#[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(unused_imports))]
pub(super) use group_dispatch;

#[cfg(test)]
mod axis_tests;
#[cfg(test)]
mod permute_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod whole_tests;
#[cfg(all(test, any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(super) use whole_tests::{check_tied_rows, check_tied_rows_of};
