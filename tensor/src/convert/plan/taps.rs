//! The multi-tap filters' horizontal pass as vector blocks, planned once with the filter's weights
//! (`Taps`) and the same on every target. The components of one plane read together (`TapGroup`:
//! RGBA's four, NV12's U and V) share each block: a block's result is lanes of four dwords, each
//! lane four consecutive outputs of one member, so that every lane's taps (a member's pixels a few
//! bytes apart) come from one window of the row. Per block and tap pair, a byte control moves each
//! output's two taps into the 16-bit halves of its dword, and the weights are the matching i16
//! pairs: one `pmaddwd` (NEON: two `smlal`) blends a pair for a whole block exactly in i32, the
//! arithmetic of the scalar loops (`multitap::multitap_row`) whatever the order, so every level
//! gives the same bytes.
//!
//! Measured (1080p → 640×640, one core, AVX-512): the scalar loops, a bounds-checked load and a
//! multiply-add per tap and output, took NV12 area 1.67 ms and the 7-tap triangle 4.5 ms; one
//! component per block (16 outputs, NV12's chroma in 128-byte windows) 0.29 and 0.52 ms, with
//! RGBA's per-component windows too wide for one permute (1.0 and 2.1 ms).

use super::{Aligned32, Aligned64, Comp, Taps, PIL_SHIFT, TAP_STEPS};

/// PIL's weights are split at this bit: an i16 holds neither a 2^-22 weight nor its product, so a
/// weight is `hi · 2^11 + lo` with `lo` in 0..2^11, and `(Σ hi·b) · 2^11 + Σ lo·b` is the integer
/// sum exactly. The OpenCV presets' 2^-14ths fit i16 as they are.
pub(in crate::convert) const PIL_SPLIT: u32 = 11;

/// The scale from the OpenCV presets' integer sums (2^-14ths) back to sample values: exact, as
/// the sums are below 2^24.
pub(in crate::convert) const TAP_UNIT: f32 = (1.0 / TAP_STEPS) as f32;

/// Half of PIL's fixed-point unit: its rounding.
pub(in crate::convert) const PIL_HALF: i32 = 1 << (PIL_SHIFT - 1);

/// A lane that holds no outputs (its weights are zero and it is not stored).
pub(in crate::convert) const IDLE: u32 = u32::MAX;

/// Components filtered together: one plane, one resolution, one step, their bytes within a dword.
#[derive(Debug, Clone)]
pub(in crate::convert) struct TapGroup {
    /// Component indices, lowest byte offset first.
    pub(in crate::convert) members: Vec<usize>,
    /// The vector blocks, 16 dwords (AVX-512) and 8 (AVX2, NEON), where the taps fit.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(in crate::convert) b16: Option<Blocks>,
    pub(in crate::convert) b8: Option<Blocks>,
    /// Four-byte pixels' blocks, a pixel's channels per lane (AVX2, `plan::Pixels`).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(in crate::convert) px8: Option<super::Pixels>,
    /// An exact box (`Taps::exact` on both axes): 16-dword blocks over the rows' vertical sums
    /// (`u16` samples, `Blocks::words`), for the AVX-512 level that sums rows first.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(in crate::convert) w16: Option<Blocks>,
    /// The same straight from the rows' bytes, for the AVX-512 level with VNNI (`plan::Quads`).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(in crate::convert) q16: Option<super::Quads>,
    /// ... and in five-output lanes, for four-byte pixels whose fourth channel no output blends.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(in crate::convert) q5: Option<super::Quads>,
    /// ... and in lanes of 16-byte windows, for NEON with the dot product (`Quads::pieces`).
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    pub(in crate::convert) q4: Option<super::Quads>,
    /// The same over four-byte pixels whose outputs sum equal whole pixels (AVX-512,
    /// `plan::EvenBox`).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(in crate::convert) e16: Option<super::EvenBox>,
    /// The same in 8-dword blocks (AVX2, NEON).
    pub(in crate::convert) w8: Option<Blocks>,
    /// Four-byte pixels' blocks over those sums (AVX2, `plan::Pixels::words`).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(in crate::convert) pw8: Option<super::Pixels>,
    /// PIL's whole weights (`Taps::d`): 32-lane blocks for the AVX-512 level (`plan::Whole`).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(in crate::convert) whole: Option<super::Whole>,
    /// ... and in ten-output lanes, for four-byte pixels whose fourth channel no output blends.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(in crate::convert) whole10: Option<super::Whole>,
    /// ... and with the members interleaved pixel by pixel (`Whole::ten_interleaved`), for the
    /// 8-bit RGB outputs whose row the ring's row becomes.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(in crate::convert) whole10i: Option<super::Whole>,
    /// ... and 16-lane blocks for the AVX2 level's byte ring (`plan::Whole8`), `b8` for the rest.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(in crate::convert) whole8: Option<super::Whole8>,
    /// ... and tap by tap, sixteen outputs of one member a block, for NEON (`plan::WholeTaps`).
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    pub(in crate::convert) whole_taps: Option<super::WholeTaps>,
    /// Four-byte pixels (RGBA, BGRA, RGBx…) under PIL's whole weights at AVX2: each row split
    /// into its channels' rows (`avx2::pack_planar`), the same plan for every channel.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(in crate::convert) planar: Option<Box<Planar>>,
    /// Members that fill every other byte of their span (YUY2's and UYVY's luma, and their U
    /// and V): the same plans over the row packed to those bytes (AVX-512, AVX2).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(in crate::convert) compact: Option<Box<Compact>>,
    /// The group's part of the later rows' lines its plane's kernels ask for (`hint::Trickle`):
    /// part `.0` of `.1`, one for each group of the plane. Set once here: worked out per output
    /// row (with the kernels' pacing in usize divisions), NV12 `bilinear-antialias`'s row loop
    /// outside the kernels grew from 145 k to 362 k TSC cycles a hot frame.
    pub(in crate::convert) part: (u32, u32),
}

/// A group of four-byte pixels split into one row per channel (`TapGroup::planar`): a channel's
/// row is `len` bytes, output `x`'s taps from its byte `first[x]`, made as one member's (the
/// 16-lane whole blocks, `Whole8`, and the 2^-22 blocks for the rest). The pixel blocks
/// (`plan::Pixels`), a lane per output pixel, took 1080p RGBA `bilinear-antialias` 1.2 ms of 1.8
/// at AVX2 (Zen 2): two 16-byte windows, two shuffles and a 32-bit divide per pixel.
#[derive(Debug, Clone)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(in crate::convert) struct Planar {
    pub(in crate::convert) len: usize,
    pub(in crate::convert) b8: Blocks,
    pub(in crate::convert) whole8: super::Whole8,
    /// NEON's tap-by-tap blocks over a channel's row (`plan::WholeTaps`).
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    pub(in crate::convert) whole_taps: Option<super::WholeTaps>,
}

/// A group packed (`TapGroup::compact`): sample `j` of the packed row is byte `from + 2j` of the
/// source row (or of its row of sums), `len` of them; member `m`'s outputs read from `base[m]`,
/// taps `members` apart. In the packed row YUY2's luma reads like NV12's and its U and V like
/// NV12's UV: 16 outputs of a 3× downscale span 48 samples instead of 96, which the word and
/// whole-weight blocks' windows (64 and 128) take; unpacked they took neither (YUY2 area and
/// triangle at 1.5–1.9× NV12's time). At AVX2 the packed row halves the 16-byte pieces of a
/// lane's window (`b8`: YUY2's 2 become NV12's 1 at 3×; `w8`: an exact box's 3 and 4 become 2,
/// which fit the registers with the run's tables, `avx2::box_blocks`). (Packed after the row
/// sums, AVX2's exact box gained nothing: the pass cost what the fewer pieces saved, 113 → 119 M
/// instructions over a 10-frame run; `avx2::box_sums_split` packs them as it sums.)
#[derive(Debug, Clone)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(in crate::convert) struct Compact {
    pub(in crate::convert) from: usize,
    pub(in crate::convert) len: usize,
    pub(in crate::convert) base: Vec<Vec<u32>>,
    pub(in crate::convert) w16: Option<Blocks>,
    pub(in crate::convert) b16: Option<Blocks>,
    pub(in crate::convert) whole: Option<super::Whole>,
    pub(in crate::convert) b8: Option<Blocks>,
    pub(in crate::convert) whole8: Option<super::Whole8>,
    /// An exact box's word blocks at AVX2 over the packed row sums.
    pub(in crate::convert) w8: Option<Blocks>,
    /// NEON's tap-by-tap blocks over the packed row (`plan::WholeTaps`).
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    pub(in crate::convert) whole_taps: Option<super::WholeTaps>,
    /// Two members (YUY2's and UYVY's U and V): the byte blocks over the packed row halved.
    pub(in crate::convert) halved: Option<Box<Halved>>,
}

/// A two-member packed row split again into a run of each member's samples
/// (`avx2::pack_bytes_split_halved`, `neon::pack_bytes_split`): the first member's
/// `len.div_ceil(2)` samples, then the second's, each member's taps one byte apart. A lane's
/// eight outputs of YUY2's chroma at 1.5× then span one 16-byte piece where the interleaved row
/// takes two (at AVX2 a `pshufb` and an `or` less a tap pair, and half the loads): 1080p YUY2
/// `bilinear-antialias` at AVX2 (engine, Zen 2) 0.97 → 0.93 ms hot, medians 1.13 → 1.10 ms over
/// 8 rotating frames. NEON's sixteen outputs of one member read two registers where they read
/// four (llvm-mca, docs/benchmark-log.md).
#[derive(Debug, Clone)]
#[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(dead_code))]
pub(in crate::convert) struct Halved {
    /// AVX2's: the 2^-22 blocks (`None`: the level has none here) and the whole-weight ones.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(in crate::convert) b8: Option<Blocks>,
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(in crate::convert) whole8: Option<super::Whole8>,
    /// NEON's tap-by-tap blocks.
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    pub(in crate::convert) whole_taps: Option<super::WholeTaps>,
}

impl Compact {
    /// Whether the packed forms `packs` of the groups a plane's kernels take (`None`: a group not
    /// packed) are YUY2's or UYVY's pair, each row or row of sums then split once for both
    /// (`avx512::box_sums_split`, `avx512::pack_bytes_split`): at least two, every one packed from
    /// byte 0 or 1, each within `half` samples.
    pub(in crate::convert) fn split_pair<'a>(
        packs: impl Iterator<Item = Option<&'a Compact>> + Clone,
        half: usize,
    ) -> bool {
        packs.clone().count() > 1 && { packs }.all(|c| c.is_some_and(|c| c.from <= 1 && c.len <= half))
    }
}

/// A group's blocks. Lane `l` of block `b` holds outputs `x..x + 4` of member `m`
/// (`targets[b][l] = (m << 24) | x`, or `IDLE`); the kernels store the lanes by the same rule
/// (see `Blocks::new`), without reading the targets per block.
#[derive(Debug, Clone)]
#[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(dead_code))]
pub(in crate::convert) struct Blocks {
    /// Outputs every member has from the blocks (the scalar loops do the rest).
    pub(in crate::convert) done: usize,
    pub(in crate::convert) pairs: usize,
    pub(in crate::convert) targets: Vec<[u32; 4]>,
    /// 16 dwords: per block, the window's first byte; `narrow` windows are 64 bytes (one load),
    /// else 128 (two loads, the dwords' odd bytes masked). `[block][pair]` controls: `vpermt2b`
    /// indices, tap `2p` in byte 0 and tap `2p + 1` in byte 2 of each dword (64, the zero
    /// register, elsewhere when narrow). With `words`, the row is of u16 samples: a base is a
    /// sample, a window holds 32 or 64 of them, and a tap's two bytes fill its half of the dword.
    pub(in crate::convert) narrow: bool,
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(in crate::convert) words: bool,
    pub(in crate::convert) bases: Vec<u32>,
    pub(in crate::convert) c64: Vec<Aligned64<[u8; 64]>>,
    /// 8 dwords: per block and lane, its window's first byte (a window of `pieces` 16-byte
    /// loads); `[block][pair]` `tbl` indices (0..16 · pieces, 0xff for a zero byte), lane 0 then
    /// lane 1, and `[block][pair][piece]` `pshufb` controls of the same (0x80 outside the piece).
    /// Where a lane's taps span more than four pieces (RGBA's 13-tap bicubic at 3×), the window
    /// `slide`s: one per block and pair, `lane_bases[block * pairs + pair]`, over that pair's taps
    /// only, loaded per pair (the scalar loops took 13 ms a 1080p RGBA frame there).
    pub(in crate::convert) pieces: usize,
    pub(in crate::convert) slide: bool,
    pub(in crate::convert) lane_bases: Vec<[u32; 2]>,
    pub(in crate::convert) tbl: Vec<Aligned32<[u8; 32]>>,
    pub(in crate::convert) shuf: Vec<Aligned32<[u8; 32]>>,
    /// `[block][pair]` weight pairs of each dword (as i16 halves of a u32): the whole weight for
    /// the OpenCV presets, PIL's `hi` part; `lo` PIL's low part (empty otherwise).
    pub(in crate::convert) hi: Vec<u32>,
    pub(in crate::convert) lo: Vec<u32>,
    /// Bytes from the row's start that every load stays below.
    pub(in crate::convert) reach: usize,
    /// Two lanes of words (`avx2::box_blocks`): per block, the end of its run of blocks with the
    /// same `shuf` and `hi` tables (at integer and most camera factors, every block but the row's
    /// ends), which the kernel holds in registers for the run; empty otherwise.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(in crate::convert) runs: Vec<u32>,
}

/// The groups of `comps` (each component in exactly one). `exact`: per axis (luma, chroma), the
/// rows' `K` (`Taps::exact`) where both the columns and the rows are an exact box.
pub(in crate::convert) fn tap_groups(
    comps: &[Comp],
    cols: &[Taps; 2],
    base: &[Vec<u32>],
    row_len: [usize; 3],
    pil: bool,
    exact: [Option<u32>; 2],
) -> Vec<TapGroup> {
    let mut done = vec![false; comps.len()];
    let mut order: Vec<usize> = (0..comps.len()).collect();
    order.sort_by_key(|&k| comps[k].offset);
    let mut groups = Vec::new();
    for &k in &order {
        if done[k] {
            continue;
        }
        let c = comps[k];
        let members: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&m| {
                let o = comps[m];
                !done[m]
                    && (o.plane, o.chroma, o.step) == (c.plane, c.chroma, c.step)
                    && o.offset >= c.offset
                    && o.offset - c.offset < 4
            })
            .collect();
        for &m in &members {
            done[m] = true;
        }
        let offsets: Vec<usize> = members.iter().map(|&m| comps[m].offset - c.offset).collect();
        let t = &cols[usize::from(c.chroma)];
        let len = row_len[c.plane];
        let plan = |lanes, words| Blocks::new(&base[k], &offsets, c.step, t, len, lanes, pil, words);
        let k_rows = exact[usize::from(c.chroma)];
        let exact = k_rows.is_some();
        let w16 = if exact && cfg!(target_arch = "x86_64") { plan(4, true) } else { None };
        let w8 = if exact { plan(2, true) } else { None };
        // (Planned on every target for the host tests; only the AVX-512 level runs them.)
        let b16 = plan(4, false);
        // (The lanes of any 16-dword blocks: `b16`'s, planned for the same outputs.)
        let reads = super::quads::Reads { base: &base[k], offsets: &offsets, step: c.step, t, row_len: len };
        let (q16, q5) = match (exact, cfg!(any(test, target_arch = "x86_64"))) {
            (true, true) => {
                (b16.as_ref().and_then(|b| super::Quads::new(b, &reads)), super::Quads::five(&reads))
            }
            _ => (None, None),
        };
        let q4 = match (exact, cfg!(any(test, target_arch = "aarch64"))) {
            (true, true) => b16.as_ref().and_then(|b| super::Quads::pieces(b, &reads)),
            _ => None,
        };
        // The blocks that are not whole take the 2^-22 blocks of the same outputs.
        let covered = |w: &super::Whole| {
            w.rest.iter().all(|&b| b16.as_ref().is_some_and(|p| (b as usize) < p.targets.len()))
        };
        let (whole, whole10, whole10i) = match pil && cfg!(any(test, target_arch = "x86_64")) {
            true => (
                super::Whole::new(&base[k], &offsets, c.step, t, len).filter(covered),
                super::Whole::ten(&reads).filter(covered),
                super::Whole::ten_interleaved(&reads),
            ),
            false => (None, None, None),
        };
        // Every other byte: members at 0, 2, 4... taps twice their count apart.
        let sparse = c.step == 2 * members.len() && offsets.iter().enumerate().all(|(m, &o)| o == 2 * m);
        let x86 = cfg!(any(test, target_arch = "x86_64"));
        let neon = cfg!(any(test, target_arch = "aarch64"));
        let compact = match sparse && (x86 || neon) && len > c.offset {
            true => {
                let from = c.offset;
                let packed = (len - from).div_ceil(2);
                let lead: Vec<u32> = base[k].iter().map(|&b| (b - from as u32) / 2).collect();
                let dense: Vec<usize> = (0..members.len()).collect();
                // (The blocks of the x86 levels; NEON has only `whole_taps` over packed rows.)
                let plan = |lanes, words| match x86 {
                    true => Blocks::new(&lead, &dense, members.len(), t, packed, lanes, pil, words),
                    false => None,
                };
                let b16 = plan(4, false);
                let covered = |w: &super::Whole| {
                    w.rest.iter().all(|&b| b16.as_ref().is_some_and(|p| (b as usize) < p.targets.len()))
                };
                let whole = match pil && x86 {
                    true => super::Whole::new(&lead, &dense, members.len(), t, packed).filter(covered),
                    false => None,
                };
                let w16 = if exact { plan(4, true) } else { None };
                let w8 = if exact { plan(2, true) } else { None };
                let b8 = plan(2, false);
                let whole8 = match pil && x86 {
                    true => super::Whole8::new(&lead, &dense, members.len(), t, packed, b8.as_ref()),
                    false => None,
                };
                let whole_taps = match pil && neon {
                    true => super::WholeTaps::new(&lead, &dense, members.len(), t, packed),
                    false => None,
                };
                let halved = match pil && members.len() == 2 {
                    true => {
                        // Member 0's samples are the packed row's even ones.
                        let half: Vec<u32> = lead.iter().map(|&b| b / 2).collect();
                        let at = [0, packed.div_ceil(2)];
                        let b8 =
                            if x86 { Blocks::new(&half, &at, 1, t, packed, 2, pil, false) } else { None };
                        let whole8 =
                            b8.as_ref().and_then(|b| super::Whole8::new(&half, &at, 1, t, packed, Some(b)));
                        let whole_taps =
                            if neon { super::WholeTaps::new(&half, &at, 1, t, packed) } else { None };
                        (b8.is_some() || whole_taps.is_some())
                            .then(|| Box::new(Halved { b8, whole8, whole_taps }))
                    }
                    false => None,
                };
                let base = (0..members.len()).map(|m| lead.iter().map(|&b| b + m as u32).collect()).collect();
                (w16.is_some() || w8.is_some() || whole.is_some() || b8.is_some() || whole_taps.is_some())
                    .then(|| {
                        Box::new(Compact {
                            from,
                            len: packed,
                            base,
                            w16,
                            b16,
                            whole,
                            b8,
                            whole8,
                            w8,
                            whole_taps,
                            halved,
                        })
                    })
            }
            false => None,
        };
        let px8 = super::Pixels::new(&base[k], &offsets, c.step, t, len, pil, false);
        let pw8 =
            if exact { super::Pixels::new(&base[k], &offsets, c.step, t, len, false, true) } else { None };
        let e16 = match (k_rows, cfg!(any(test, target_arch = "x86_64"))) {
            (Some(ky), true) => super::EvenBox::new(&base[k], &offsets, c.step, t, len, ky),
            _ => None,
        };
        let b8 = plan(2, false);
        let whole8 = match pil && cfg!(any(test, target_arch = "x86_64")) {
            true => super::Whole8::new(&base[k], &offsets, c.step, t, len, b8.as_ref()),
            false => None,
        };
        let whole_taps = match pil && neon {
            true => super::WholeTaps::new(&base[k], &offsets, c.step, t, len),
            false => None,
        };
        // Channels of four-byte pixels: pixel `p`'s channel at byte `p` of its row.
        let planar = match pil && (x86 || neon) && super::pixels::pixel_members(&offsets, c.step) {
            true => {
                let lead: Vec<u32> = base[k].iter().map(|&b| (b - c.offset as u32) / 4).collect();
                let len = len / 4;
                let whole_taps = match neon {
                    true => super::WholeTaps::new(&lead, &[0], 1, t, len),
                    false => None,
                };
                Blocks::new(&lead, &[0], 1, t, len, 2, true, false).and_then(|b8| {
                    let whole8 = super::Whole8::new(&lead, &[0], 1, t, len, Some(&b8))?;
                    Some(Box::new(Planar { len, b8, whole8, whole_taps }))
                })
            }
            false => None,
        };
        let part = (0, 1);
        groups.push(TapGroup {
            planar,
            members,
            b16,
            b8,
            whole8,
            whole_taps,
            px8,
            w16,
            q16,
            q5,
            q4,
            e16,
            w8,
            pw8,
            whole,
            whole10,
            whole10i,
            compact,
            part,
        });
    }
    let plane = |g: &TapGroup| comps[g.members[0]].plane;
    for i in 0..groups.len() {
        let of_plane = |g: &&TapGroup| plane(g) == plane(&groups[i]);
        let before = groups[..i].iter().filter(of_plane).count() as u32;
        groups[i].part = (before, groups.iter().filter(of_plane).count() as u32);
    }
    groups
}

/// The weight pair `p` of output `x` as (low, high) i16 halves of two u32 (whole or PIL's `hi`,
/// PIL's `lo`); `None` where a weight does not fit (no filter here makes one).
pub(super) fn pair(t: &Taps, pil: bool, x: usize, p: usize) -> Option<(u32, u32)> {
    let half = |v: i32| -> Option<u32> { i16::try_from(v).ok().map(|h| h as u16 as u32) };
    let (mut hi, mut lo) = (0, 0);
    for (s, j) in [(0, 2 * p), (16, 2 * p + 1)] {
        if j >= t.taps {
            continue;
        }
        let (h, l) = match pil {
            true => {
                let w = t.wi[x * t.taps + j];
                (half(w >> PIL_SPLIT)?, half(w & ((1 << PIL_SPLIT) - 1))?)
            }
            false => {
                let w = t.w[x * t.taps + j] as f64 * TAP_STEPS;
                (half(w as i32).filter(|_| w.fract() == 0.0)?, 0)
            }
        };
        hi |= h << s;
        lo |= l << s;
    }
    Some((hi, lo))
}

impl Blocks {
    /// The blocks of `lanes` lanes (4: AVX-512, 2: AVX2 and NEON) for members at byte `offsets`
    /// from `base[x]` (output `x`'s first tap of the first member), taps `step` bytes apart, in
    /// rows of `row_len` bytes. A window starts at its block's first byte, or earlier where it
    /// would pass the row's end: no load leaves the row. `None` where the windows do not fit.
    /// `words`: the same positions in a row of u16 samples (four lanes only).
    #[allow(clippy::too_many_arguments)]
    fn new(
        base: &[u32],
        offsets: &[usize],
        step: usize,
        t: &Taps,
        row_len: usize,
        lanes: usize,
        pil: bool,
        words: bool,
    ) -> Option<Blocks> {
        if words && pil {
            return None;
        }
        let size = if words { 2 } else { 1 };
        let (members, chunks, taps, pairs) = (offsets.len(), base.len() / 4, t.taps, t.taps.div_ceil(2));
        // Lane order: per block, member-major over `per` chunks (M ≤ lanes), or a chunk's members
        // over `split` blocks.
        let per = (lanes / members).max(1);
        let split = members.div_ceil(lanes);
        let blocks = if members <= lanes { chunks / per } else { chunks * split };
        if blocks == 0 {
            return None;
        }
        let targets: Vec<[u32; 4]> = (0..blocks)
            .map(|b| {
                std::array::from_fn(|l| {
                    let (m, chunk) = match members <= lanes {
                        true => (l / per, b * per + l % per),
                        false => ((b % split) * lanes + l, b / split),
                    };
                    match l < lanes && m < members {
                        true => ((m as u32) << 24) | (4 * chunk) as u32,
                        false => IDLE,
                    }
                })
            })
            .collect();
        let done = 4 * if members <= lanes { blocks * per } else { chunks };
        // Byte of tap `j` (the last for the missing odd one of a pair: its weight is 0) of lane
        // target `target`'s output `i`.
        let tap = |target: u32, i: usize, j: usize| {
            let x = (target & 0xff_ffff) as usize + i;
            base[x] as usize + offsets[(target >> 24) as usize] + step * j.min(taps - 1)
        };
        // The bytes taps `js` of `lanes` read, as [first, last + 1).
        let reads = |lanes: &[u32], js: std::ops::Range<usize>| {
            let live =
                || lanes.iter().copied().filter(|&l| l != IDLE).flat_map(|l| (0..4).map(move |i| (l, i)));
            let lo = live().map(|(l, i)| tap(l, i, js.start)).min();
            let hi = live().map(|(l, i)| tap(l, i, js.end - 1) + 1).max();
            (lo.unwrap_or(0), hi.unwrap_or(0))
        };
        let span = |lanes: &[u32]| reads(lanes, 0..taps);
        // Pair `p`'s taps (the odd one of the last pair repeats the last tap, weight 0).
        let pair_taps = |p: usize| 2 * p..(2 * p + 2).min(taps);
        let mut plan = Blocks {
            done,
            pairs,
            targets,
            narrow: false,
            words,
            bases: Vec::new(),
            c64: Vec::new(),
            pieces: 0,
            slide: false,
            lane_bases: Vec::new(),
            tbl: Vec::new(),
            shuf: Vec::new(),
            hi: Vec::with_capacity(blocks * pairs * 4 * lanes),
            lo: Vec::new(),
            reach: 0,
            runs: Vec::new(),
        };
        if lanes == 4 {
            let widest = plan.targets.iter().map(|t| span(t)).map(|(a, z)| z - a).max()?;
            // The window in samples (bytes, or u16 samples with `words`).
            let window = [64 / size, 128 / size].into_iter().find(|&w| widest <= w && row_len >= w)?;
            plan.narrow = window == 64 / size;
            for b in 0..blocks {
                let target = plan.targets[b];
                let start = span(&target).0.min(row_len - window);
                plan.reach = plan.reach.max(start + window);
                plan.bases.push(start as u32);
                for p in 0..pairs {
                    let mut ctl = [if plan.narrow && !words { 64 } else { 0 }; 64];
                    for (l, &lane) in target.iter().enumerate().filter(|(_, &l)| l != IDLE) {
                        for i in 0..4 {
                            let (a, z) = (tap(lane, i, 2 * p) - start, tap(lane, i, 2 * p + 1) - start);
                            let d = 16 * l + 4 * i;
                            match words {
                                false => (ctl[d], ctl[d + 2]) = (a as u8, z as u8),
                                true => ctl[d..d + 4]
                                    .copy_from_slice(&[2 * a, 2 * a + 1, 2 * z, 2 * z + 1].map(|v| v as u8)),
                            }
                        }
                    }
                    plan.c64.push(Aligned64(ctl));
                }
            }
        } else {
            let lanes_of = |t: &[u32; 4]| [t[0], t[1]];
            let pieces = |js: &dyn Fn(usize) -> std::ops::Range<usize>, n: usize| {
                let widest = plan
                    .targets
                    .iter()
                    .flat_map(lanes_of)
                    .flat_map(|l| (0..n).map(js).map(move |js| reads(&[l], js)).map(|(a, z)| z - a));
                widest.max().map(|w| (w * size).div_ceil(16).max(1))
            };
            plan.pieces = pieces(&|_| 0..taps, 1)?;
            // Sliding costs a load per pair: RGBA's 7-tap triangle at 3× (four pieces fixed,
            // three sliding) measured 1.61 ms fixed against 1.57, area 0.91 against 0.99.
            if plan.pieces > 4 && !words {
                plan.slide = true;
                plan.pieces = pieces(&pair_taps, pairs)?;
            }
            // In samples: a piece holds 16 bytes, or 8 u16 samples with `words`.
            let window = 16 * plan.pieces / size;
            if plan.pieces > 4 || row_len < window {
                return None;
            }
            for b in 0..blocks {
                let target = plan.targets[b];
                let starts = |js: std::ops::Range<usize>| {
                    [0, 1].map(|l| reads(&target[l..l + 1], js.clone()).0.min(row_len - window))
                };
                let fixed = starts(0..taps);
                if !plan.slide {
                    plan.reach = plan.reach.max(fixed[0].max(fixed[1]) + window);
                    plan.lane_bases.push(fixed.map(|s| s as u32));
                }
                for p in 0..pairs {
                    let starts = match plan.slide {
                        true => {
                            let at = starts(pair_taps(p));
                            plan.reach = plan.reach.max(at[0].max(at[1]) + window);
                            plan.lane_bases.push(at.map(|s| s as u32));
                            at
                        }
                        false => fixed,
                    };
                    let mut idx = [0xffu8; 32];
                    for l in (0..2).filter(|&l| target[l] != IDLE) {
                        for i in 0..4 {
                            let (a, z) = (
                                tap(target[l], i, 2 * p) - starts[l],
                                tap(target[l], i, 2 * p + 1) - starts[l],
                            );
                            let d = 16 * l + 4 * i;
                            match words {
                                false => (idx[d], idx[d + 2]) = (a as u8, z as u8),
                                true => idx[d..d + 4]
                                    .copy_from_slice(&[2 * a, 2 * a + 1, 2 * z, 2 * z + 1].map(|v| v as u8)),
                            }
                        }
                    }
                    plan.tbl.push(Aligned32(idx));
                    for q in 0..plan.pieces {
                        plan.shuf.push(Aligned32(idx.map(|i| match (i as usize).checked_sub(16 * q) {
                            Some(k) if i != 0xff && k < 16 => k as u8,
                            _ => 0x80,
                        })));
                    }
                }
            }
        }
        for b in 0..blocks {
            for p in 0..pairs {
                for &lane in &plan.targets[b][..lanes] {
                    for i in 0..4 {
                        let (hi, lo) = match lane {
                            IDLE => (0, 0),
                            _ => pair(t, pil, (lane & 0xff_ffff) as usize + i, p)?,
                        };
                        plan.hi.push(hi);
                        if pil {
                            plan.lo.push(lo);
                        }
                    }
                }
            }
        }
        // (Word blocks never slide.)
        if lanes == 2 && words {
            let shuf = |b: usize| &plan.shuf[b * pairs * plan.pieces..][..pairs * plan.pieces];
            let hi = |b: usize| &plan.hi[b * pairs * 8..][..pairs * 8];
            let same = |a: usize, b: usize| shuf(a) == shuf(b) && hi(a) == hi(b);
            plan.runs = vec![blocks as u32; blocks];
            for b in (0..blocks - 1).rev() {
                if !same(b, b + 1) {
                    plan.runs[b] = b as u32 + 1;
                } else {
                    plan.runs[b] = plan.runs[b + 1];
                }
            }
        }
        Some(plan)
    }
}
