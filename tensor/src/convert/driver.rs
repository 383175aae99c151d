//! The row driver: for each destination row of a band, the padding, the prefetch of the source rows
//! ahead, and the stages (sampling per plane, colour and store) dispatched to the converter's
//! level, whose kernels run where they apply and the baseline loops for the rest. The one place
//! that knows the levels: they share only the plan (`plan`) and the finish values (`finish`).
//! The bilinear rows' source lines (read straight, asked for ahead) are in `ahead.rs`, the
//! padding's blocks in `fill.rs`, the multi-tap filters' per-level plans and rows in
//! `taps.rs`, the sampling's helpers in `sample.rs`.

// The plane loops index several parallel arrays at once; iterating one of them would only hide
// the others.
#![allow(clippy::needless_range_loop)]

#[cfg(target_arch = "x86_64")]
use super::avx2;
#[cfg(target_arch = "x86_64")]
use super::avx512;
use super::baseline;
#[cfg(target_arch = "x86_64")]
use super::finish::YUV;
use super::finish::{SendPtr, RGB};
#[cfg(target_arch = "x86_64")]
use super::hint;
use super::multitap::{self, VTaps};
#[cfg(target_arch = "aarch64")]
use super::neon;
#[cfg(target_arch = "x86_64")]
use super::plan::{SampleRow, Shuffle};
use super::{Converter, Scratch, Simd, SrcImage};
use std::ops::Range;

mod ahead;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod boxes;
mod fill;
mod sample;
mod taps;
use ahead::{direct_rows, prefetch_multi_pages, prefetch_row_pages, Ahead, DirectRows, ROW_PAGES_AHEAD};
#[cfg(target_arch = "aarch64")]
use boxes::rows_first_w8;
#[cfg(target_arch = "x86_64")]
use boxes::{rows_first_avx2, rows_first_avx512, Across, RowsFirst};
use fill::padding;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
use sample::group_weights;
use sample::horizontal;
#[cfg(target_arch = "x86_64")]
use sample::{pair, pick2};
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
use taps::byte_ring_row;
#[cfg(target_arch = "aarch64")]
use taps::neon_pil8;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
use taps::RingPlan;
#[cfg(target_arch = "x86_64")]
use taps::{avx2_pil8, pack_rows, split_packs, split_rows};
use taps::{down_first_row, multitap_horizontal, multitap_vertical, no_down};

/// The widest level this CPU has.
#[cfg(target_arch = "x86_64")]
pub(super) fn cpu() -> Simd {
    if !avx2::detect() {
        Simd::Baseline
    } else if avx512::detect() {
        Simd::Avx512
    } else {
        Simd::Avx2
    }
}

/// Advanced SIMD is part of every AArch64 core (the target enables it): nothing to ask.
#[cfg(target_arch = "aarch64")]
pub(super) fn cpu() -> Simd {
    Simd::Neon
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(super) fn cpu() -> Simd {
    Simd::Baseline
}

/// What one call converts: destination rows `rows` of the tensor at `dst`, their padding too
/// where `pad`.
pub(super) struct Band {
    pub(super) dst: SendPtr,
    pub(super) rows: Range<usize>,
    pub(super) pad: bool,
}

/// Convert `band` of `src`, with the converter's level.
///
/// # Safety
/// `band.dst` points at `c.dst.bytes()` writable bytes, and no other thread writes these rows.
pub(super) unsafe fn rows(c: &Converter, src: &SrcImage<'_>, band: Band, s: &mut Scratch) {
    #[cfg(target_arch = "x86_64")]
    if c.avx2() {
        // Checked once per converter: the CPU has AVX2 and FMA.
        return unsafe { rows_avx2(c, src, band, s) };
    }
    rows_generic(c, src, band, s)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn rows_avx2(c: &Converter, src: &SrcImage<'_>, band: Band, s: &mut Scratch) {
    rows_generic(c, src, band, s)
}

/// Level `$level`'s PIL vertical pass over the byte ring as `byte_ring_row`'s closure, into rows
/// of `$t` (the components' floats, or the output's bytes: `multitap::Sample`). A macro: a
/// closure cannot be generic over the row type, and the levels' passes are `unsafe fn`s whose
/// CPU precondition the caller's level check meets.
macro_rules! vertical_bytes {
    ($level:ident, $t:ty) => {
        |rows: &[*const u8],
         wi: &[i32],
         whole: Option<crate::convert::plan::WholeRow<'_>>,
         out: &mut [$t],
         ahead| unsafe { $level::vertical_bytes(rows, wi, whole, out, ahead) }
    };
}

#[inline(always)]
fn rows_generic(c: &Converter, src: &SrcImage<'_>, band: Band, s: &mut Scratch) {
    let Band { dst, rows, pad } = band;
    let rect = c.content.rect;
    let content = rect.y..rect.y + rect.height;
    // A new frame: no filtered row of the last one is kept.
    for tags in s.ring.tags.iter_mut().chain(&mut s.ring.btags) {
        tags.fill(usize::MAX);
    }
    // Padding rows above and below the picture, each run as one fill.
    let store = pad;
    let pad = |y, rows, x0, n| {
        if store {
            padding(c, dst, y, rows, x0, n)
        }
    };
    pad(rows.start, rows.start.max(content.start).min(rows.end) - rows.start, 0, c.dst.width);
    let below = content.end.max(rows.start).min(rows.end);
    pad(below, rows.end - below, 0, c.dst.width);
    // PIL's byte ring: the scratch a packed row may take (every level), and at AVX2 and NEON the
    // groups it takes and how YUY2's rows are packed.
    let slot = s.packed_rows.len() / multitap::ROWS_AT_ONCE;
    #[cfg(target_arch = "x86_64")]
    let avx2_ring = c
        .multi
        .as_ref()
        .filter(|m| !c.avx512() && c.avx2() && m.round_between && !s.ring.btags[0].is_empty())
        .map(|m| RingPlan::avx2(m, &c.comps, slot));
    // At AVX-512, each group's plans, once a band: worked out per row, they and their calls
    // were 3 % of a 900p YUY2 `bilinear-antialias` frame's samples.
    #[cfg(target_arch = "x86_64")]
    let avx512_plans: [_; 4] = std::array::from_fn(|g| {
        c.multi
            .as_ref()
            .filter(|m| c.avx512() && g < m.groups.len())
            .and_then(|m| taps::avx512_pil8_plan(m, &c.comps, g))
    });
    #[cfg(target_arch = "x86_64")]
    let avx512_plan = |g: usize| avx512_plans.get(g).copied().flatten();
    // Where the output's bytes are the components' (RGB sources into 8-bit RGB or BGR): PIL's
    // vertical pass's bytes, or an exact box's quads rounded, go to the output as they are.
    #[cfg(target_arch = "x86_64")]
    let ring = !s.ring.btags[0].is_empty();
    #[cfg(target_arch = "x86_64")]
    let bytes_out = c.multi.as_ref().is_some_and(|m| match c.avx512() {
        true => taps::pil_bytes(c, m, ring, |g| avx512_plan(g).is_some()),
        false => avx2_ring.as_ref().is_some_and(|r| taps::pil_bytes(c, m, ring, |g| r.takes & (1 << g) != 0)),
    });
    // Those bytes side by side in one ring row that is the output's (one group of three- or
    // four-byte pixels).
    #[cfg(target_arch = "x86_64")]
    let side = c.multi.as_ref().and_then(|m| taps::side_by_side(c, m, bytes_out));
    // YUY2's PIL rows, blended down first, left as bytes for the finish to widen as it loads them.
    #[cfg(target_arch = "x86_64")]
    let yuv_bytes = c.multi.as_ref().is_some_and(|m| match c.avx512() {
        true => taps::yuv_bytes(c, m, ring, |g| avx512_plan(g).is_some()),
        false => avx2_ring.as_ref().is_some_and(|r| taps::yuv_bytes(c, m, ring, |g| r.takes & (1 << g) != 0)),
    });
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    let quads_bytes = c.multi.as_ref().is_some_and(|m| boxes::quads_bytes(c, m));
    // Whether every group is packed, from byte 0 or 1 of the same rows (YUY2, UYVY): each row
    // packed once into both halves of its slot (`split_rows`). (Worked out for every row, it
    // took 2.3 % of a 900p YUY2 `bilinear-antialias` frame.)
    #[cfg(target_arch = "x86_64")]
    let avx512_split =
        c.multi.as_ref().is_some_and(|m| c.avx512() && split_packs(m, &c.comps, avx512_plan, slot));
    #[cfg(target_arch = "aarch64")]
    let neon_ring = c
        .multi
        .as_ref()
        .filter(|m| c.neon() && m.round_between && !s.ring.btags[0].is_empty())
        .map(|m| RingPlan::neon(m, &c.comps, slot));
    #[cfg(target_arch = "aarch64")]
    let ring = !s.ring.btags[0].is_empty();
    #[cfg(target_arch = "aarch64")]
    let bytes_out = c.multi.as_ref().is_some_and(|m| {
        neon_ring.as_ref().is_some_and(|r| taps::pil_bytes(c, m, ring, |g| r.takes & (1 << g) != 0))
    });
    #[cfg(target_arch = "aarch64")]
    let yuv_bytes = c.multi.as_ref().is_some_and(|m| {
        neon_ring.as_ref().is_some_and(|r| taps::yuv_bytes(c, m, ring, |g| r.takes & (1 << g) != 0))
    });
    // PIL's filters over an RGB source's pixels through the byte ring: their pages asked for
    // ahead (`prefetch_multi_pages`; not the other multi-tap rows, where it measured slower).
    let pil_pixels = c.multi.as_ref().filter(|m| m.round_between && !m.down_first && c.finish.kind == RGB);
    // Where the finish may read the luma itself (`avx2::finish_luma`; at AVX-512 the chroma's
    // blocks with it: `avx512::finish_yuv`, else `finish_luma`), or an RGB source's pixels
    // (AVX-512's float32 finish: `avx512::finish_pixels`), the rows that take it known per row.
    #[cfg(target_arch = "x86_64")]
    let avx2_luma = !c.avx512() && c.avx2() && c.fused_finish && c.finish.kind == YUV;
    #[cfg(target_arch = "x86_64")]
    let avx512_luma = c.avx512()
        && c.fused_finish
        && c.finish.kind == YUV
        && c.groups.len() == 2
        && c.groups.iter().all(|g| g.permute.is_some())
        && c.luma_on_samples;
    // One plane (YUY2, UYVY): the chroma's blocks ask for the row's lines; else (NV12) the
    // luma's blocks ask for their own.
    #[cfg(target_arch = "x86_64")]
    let luma512_shared = c.groups.iter().all(|g| g.plane == 0);
    #[cfg(target_arch = "x86_64")]
    let avx512_pixels = c.pixel_picks.as_deref().filter(|_| c.avx512());
    for y in rows.start.max(content.start)..rows.end.min(content.end) {
        let cy = y - rect.y;
        // Bilinear and nearest: the planes the kernels read straight from the frame, which ask
        // for the next rows' lines among their loads (`direct_rows`); the other planes' lines in
        // parts (`Ahead`), one now.
        let mut direct: [Option<DirectRows<'_>>; 3] = [None; 3];
        #[cfg(target_arch = "x86_64")]
        let mut luma_row: Option<SampleRow<'_, Shuffle>> = None;
        #[cfg(target_arch = "x86_64")]
        let mut luma512: Option<avx512::LumaBlocks<'_>> = None;
        #[cfg(target_arch = "x86_64")]
        let mut pixels512: Option<avx512::PixelBlocks<'_>> = None;
        #[cfg(target_arch = "x86_64")]
        let mut chroma512: Option<avx512::ChromaBlocks<'_>> = None;
        if let Some(m) = pil_pixels {
            prefetch_multi_pages(c, m, src, cy);
        }
        if c.multi.is_none() {
            prefetch_row_pages(c, src, cy + ROW_PAGES_AHEAD);
            for (p, d) in direct.iter_mut().enumerate().take(c.format.num_planes()) {
                *d = direct_rows(c, src, p, cy);
            }
        }
        let skip = (0..3).filter(|&p| direct[p].is_some()).fold(0u8, |m, p| m | 1 << p);
        let blended = (0..c.format.num_planes()).any(|p| skip & (1 << p) == 0);
        let pieces = if c.multi.is_none() && blended { c.groups.len() + 1 } else { 0 };
        let mut ahead = Ahead { c, src, cy, next: 0, pieces, skip };
        ahead.piece();
        // The row's components are the output's bytes (`bytes_out`, `quads_bytes`).
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        let mut row_bytes = bytes_out;
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        let mut row_yuv_bytes = false;
        // The lines the finish of those bytes asks for (`multitap::FINISH_ASKED_ROWS`).
        #[cfg(target_arch = "x86_64")]
        let mut finish_asks = hint::Trickle::NONE;
        if let Some(m) = &c.multi {
            // The multi-tap filters: the horizontal pass by the level's blocks, the vertical by
            // the baseline loops (contiguous rows, vectorized at the driver's width).
            let vertical =
                |rows: &[*const f32], taps: VTaps<'_>, out: &mut [f32]| multitap_vertical(c, rows, taps, out);
            // An exact box at AVX-512: rows summed first, then across (`multitap::box_row`).
            #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
            let mut skip = 0;
            // PIL's filters at AVX-512 where a group has whole weights: a ring of bytes.
            #[cfg(target_arch = "x86_64")]
            if c.avx512() && m.round_between && !s.ring.btags[0].is_empty() {
                let takes = |g: usize| avx512_plan(g).is_some();
                let split = avx512_split;
                let mut packed_at = [std::ptr::null::<u8>(); multitap::ROWS_AT_ONCE];
                let horiz =
                    |g: usize, rows: &[&[u8]], out: &[[*mut u8; 4]], ahead: usize, packed: &mut [u8]| {
                        let planned = match side {
                            Some((whole, ..)) => m.groups[g].b16.as_ref().map(|rest| (whole, rest, None)),
                            None => avx512_plan(g),
                        };
                        let Some((plan, rest, compact)) = planned else { return 0 };
                        let mut rows = rows;
                        let packed_rows;
                        if let Some(p) = compact {
                            packed_rows = match split {
                                true => {
                                    split_rows(rows, p, packed, &mut packed_at, |row, even, odd| unsafe {
                                        avx512::pack_bytes_split(row, even, odd, ahead)
                                    })
                                }
                                false => pack_rows(rows, p, packed, |row, out| unsafe {
                                    avx512::pack_bytes(row, p.from, out, ahead)
                                }),
                            };
                            rows = &packed_rows[..rows.len()];
                        }
                        // The packed rows are the scratch's: the frame's lines were asked for above.
                        let ahead = if compact.is_some() { 0 } else { ahead };
                        let done = unsafe { avx512::whole_bytes(rows, plan, out, ahead) };
                        if !plan.rest.is_empty() {
                            unsafe { avx512::multitap_bytes(rows, rest, out, Some(&plan.rest)) };
                        }
                        done
                    };
                if m.down_first {
                    let down = |rows: &[*const u8], k: &[i16], whole, out: &mut [u8], ahead, asked| unsafe {
                        avx512::down_bytes(rows, k, whole, out, ahead, asked)
                    };
                    let widen = |bytes: &[u8], out: &mut [f32]| unsafe { avx512::widen(bytes, out) };
                    let asks = hint::finish_asks();
                    let (groups, asks) =
                        down_first_row(c, m, src, cy, s, takes, horiz, down, widen, yuv_bytes, asks);
                    (skip, row_yuv_bytes, finish_asks) = (skip | groups, yuv_bytes, asks);
                } else if bytes_out {
                    let wide = u32::from(side.is_some());
                    skip |= byte_ring_row(
                        c,
                        m,
                        src,
                        cy,
                        s,
                        takes,
                        true,
                        wide,
                        horiz,
                        vertical_bytes!(avx512, u8),
                    );
                } else {
                    skip |=
                        byte_ring_row(c, m, src, cy, s, takes, true, 0, horiz, vertical_bytes!(avx512, f32));
                }
            }
            // PIL's filters at AVX2: a ring of bytes too, for every group the level's blocks take
            // (`avx2_pil8_plan`, `avx2_ring` above). Over the f32 ring, 1080p NV12
            // `bilinear-antialias`'s vertical pass read four bytes a sample from L2 (a quarter of
            // the frame, Zen 2).
            #[cfg(target_arch = "x86_64")]
            if let Some(RingPlan { takes: taken, split, halve }) = avx2_ring {
                let takes = |g: usize| taken & (1 << g) != 0;
                // YUY2 and UYVY: each row packed once into both halves of its slot (`split_rows`).
                let mut packed_at = [std::ptr::null::<u8>(); multitap::ROWS_AT_ONCE];
                let horiz =
                    |g: usize, rows: &[&[u8]], out: &[[*mut u8; 4]], ahead: usize, packed: &mut [u8]| {
                        let split = split.then_some((&mut packed_at, halve));
                        avx2_pil8(m, &c.comps, g, rows, out, ahead, packed, split)
                    };
                if m.down_first {
                    let down = |rows: &[*const u8], k: &[i16], whole, out: &mut [u8], ahead, asked| unsafe {
                        avx2::down_bytes(rows, k, whole, out, ahead, asked)
                    };
                    // (Its finish not asking: `multitap::FINISH_ASKED_ROWS`.)
                    let widen = multitap::widen;
                    skip |= down_first_row(c, m, src, cy, s, takes, horiz, down, widen, yuv_bytes, false).0;
                    row_yuv_bytes = yuv_bytes;
                } else if bytes_out {
                    skip |=
                        byte_ring_row(c, m, src, cy, s, takes, false, 0, horiz, vertical_bytes!(avx2, u8));
                } else {
                    skip |=
                        byte_ring_row(c, m, src, cy, s, takes, false, 0, horiz, vertical_bytes!(avx2, f32));
                }
            }
            // PIL's filters at NEON: the byte ring for the groups with tap-by-tap blocks
            // (`neon_pil8_plan`, `neon_ring` above); the others through the f32 ring below.
            #[cfg(target_arch = "aarch64")]
            if let Some(RingPlan { takes: taken, split, halve }) = neon_ring {
                let takes = |g: usize| taken & (1 << g) != 0;
                let mut packed_at = [std::ptr::null::<u8>(); multitap::ROWS_AT_ONCE];
                let horiz =
                    |g: usize, rows: &[&[u8]], out: &[[*mut u8; 4]], ahead: usize, packed: &mut [u8]| {
                        let split = split.then_some((&mut packed_at, halve));
                        neon_pil8(m, &c.comps, g, rows, out, ahead, packed, split)
                    };
                if m.down_first {
                    let down = |rows: &[*const u8], k: &[i16], whole, out: &mut [u8], _, _| unsafe {
                        neon::down_bytes(rows, k, whole, out)
                    };
                    let widen = multitap::widen;
                    skip |= down_first_row(c, m, src, cy, s, takes, horiz, down, widen, yuv_bytes, false).0;
                    row_yuv_bytes = yuv_bytes;
                } else if bytes_out {
                    skip |=
                        byte_ring_row(c, m, src, cy, s, takes, false, 0, horiz, vertical_bytes!(neon, u8));
                } else {
                    skip |=
                        byte_ring_row(c, m, src, cy, s, takes, false, 0, horiz, vertical_bytes!(neon, f32));
                }
            }
            // Blended down first where no level above took the row (the baseline): every byte by
            // the loops of `multitap::pil8_down_first`.
            if m.down_first && skip == 0 {
                skip |= down_first_row(
                    c,
                    m,
                    src,
                    cy,
                    s,
                    |_| false,
                    |_, _, _, _, _| 0,
                    no_down,
                    multitap::widen,
                    false,
                    false,
                )
                .0;
            }
            #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
            if quads_bytes && boxes::quads_bytes_row(c, m, src, cy, s) {
                row_bytes = true;
                skip = (1 << m.groups.len()) - 1;
            }
            #[cfg(target_arch = "x86_64")]
            if c.avx2() && !s.ring.sums.is_empty() && !row_bytes {
                let wide = c.avx512();
                // AVX-512: the 16-dword word blocks, packed where the group is; AVX2: 8 dwords.
                let plan_of: RowsFirst = if wide { rows_first_avx512 } else { rows_first_avx2 };
                let vsum = |b: &[u8], stride, first, k: &[i16], span, sums: &mut [u16], ahead| unsafe {
                    match wide {
                        true => avx512::box_sums(b, stride, first, k, span, sums, ahead),
                        false => avx2::box_sums(b, stride, first, k, span, sums, ahead),
                    }
                };
                // (Only packed groups split their sums.)
                let vsplit = |b: &[u8], stride, first, k: &[i16], span, [e, o]: [&mut [u16]; 2], ahead| unsafe {
                    match wide {
                        true => avx512::box_sums_split(b, stride, first, k, span, e, o, ahead),
                        false => avx2::box_sums_split(b, stride, first, k, span, e, o, ahead),
                    }
                };
                // Where the sums could not be split (more than four rows): AVX2 packs them in
                // plain loops.
                let pack = |v: &[u16], from: usize, out: &mut [u16]| match wide {
                    true => unsafe { avx512::pack_words(v, from, out) },
                    false => out.iter_mut().enumerate().for_each(|(j, o)| *o = v[from + 2 * j]),
                };
                let blocks = |plan: Across<'_>, sums: &[u16], inv, out, ahead| unsafe {
                    match (plan, wide) {
                        (Across::Pixels(plan), _) => avx2::pixel_words(sums, plan, inv, out, ahead),
                        (Across::Blocks(plan), true) => avx512::box_blocks(sums, plan, inv, out, ahead),
                        (Across::Blocks(plan), false) => avx2::box_blocks(sums, plan, inv, out, ahead),
                        (Across::Even(plan), true) => avx512::box_even(sums, plan, inv, out, ahead),
                        // (Only AVX-512 plans them: the scalar loops would do every output.)
                        (Across::Even(_), false) => 0,
                    }
                };
                // With VNNI, the groups summed as they are in the rows straight from their bytes
                // (`plan::Quads`); the others, and rows the quads cannot take, as before.
                let quads = |g| boxes::level_quads(c, m, g);
                let direct = |rows: &[*const u8], k: &[i16], plan: &_, inv, out: &[*mut f32; 4], ahead| unsafe {
                    avx512::box_quads(rows, k, plan, inv, out, ahead)
                };
                let (done, made, all) =
                    multitap::box_quads_row(m, &c.comps, &src.planes, cy, &mut s.comps, quads, direct);
                skip |= done;
                s.counts.sampled += made;
                s.counts.rows_first += all;
                let plan_of = boxes::unless_done(plan_of, &m.groups, done);
                let buffers = (&mut s.ring.sums[..], &mut s.ring.packed[..]);
                let (groups, made, all) = multitap::box_row(
                    m,
                    &c.comps,
                    &src.planes,
                    cy,
                    // AVX-512 asks on every plane, AVX2 where the rows bring enough (`box_asks`).
                    if wide { 0 } else { multitap::TRICKLE_FROM },
                    buffers,
                    &mut s.comps,
                    plan_of,
                    vsum,
                    vsplit,
                    pack,
                    blocks,
                );
                skip |= groups;
                s.counts.sampled += made;
                s.counts.rows_first += all;
            }
            #[cfg(target_arch = "aarch64")]
            if c.neon() && !s.ring.sums.is_empty() && !row_bytes {
                // With the dot product, the groups whose lanes fit 16-byte windows straight from
                // the rows' bytes (`neon::box_quads`); the others as before.
                let quads = |g| boxes::level_quads(c, m, g);
                let direct = |rows: &[*const u8], k: &[i16], plan: &_, inv, out: &[*mut f32; 4], ahead| unsafe {
                    neon::box_quads(rows, k, plan, inv, out, ahead)
                };
                let (done, made, all) =
                    multitap::box_quads_row(m, &c.comps, &src.planes, cy, &mut s.comps, quads, direct);
                skip |= done;
                s.counts.sampled += made;
                s.counts.rows_first += all;
                let vsum = |b: &[u8], stride, first, k: &[i16], span, sums: &mut [u16], ahead| unsafe {
                    neon::box_sums(b, stride, first, k, span, sums, ahead)
                };
                // (Only packed groups call them; NEON plans none.)
                let vsplit = |_: &[u8], _, _, _: &[i16], _, _: [&mut [u16]; 2], _| false;
                let pack = |_: &[u16], _, _: &mut [u16]| {};
                let blocks = |plan: &_, sums: &[u16], inv, out, ahead| unsafe {
                    neon::box_blocks(sums, plan, inv, out, ahead)
                };
                let buffers = (&mut s.ring.sums[..], &mut s.ring.packed[..]);
                let (groups, made, all) = multitap::box_row(
                    m,
                    &c.comps,
                    &src.planes,
                    cy,
                    multitap::TRICKLE_FROM,
                    buffers,
                    &mut s.comps,
                    boxes::unless_done(rows_first_w8, &m.groups, done),
                    vsum,
                    vsplit,
                    pack,
                    blocks,
                );
                skip |= groups;
                s.counts.sampled += made;
                s.counts.rows_first += all;
            }
            // The loops below: the vector levels' blocks ask for their lines among their loads
            // (`multitap::ahead_bytes`); without them, the lines all at once, before the row.
            #[cfg(target_arch = "aarch64")]
            let vector_level = c.neon();
            #[cfg(not(target_arch = "aarch64"))]
            let vector_level = c.avx2();
            if !vector_level {
                taps::prefetch_multi(m, &c.comps, src, cy);
            }
            let packed = &mut s.packed_rows;
            let vector = |g: usize, rows: &[&[u8]], out: &[[*mut f32; 4]], ahead: usize| {
                multitap_horizontal(c, m, g, rows, out, ahead, packed)
            };
            s.counts.sampled += multitap::multitap_row(
                m,
                &c.comps,
                &src.planes,
                cy,
                &mut s.ring,
                &mut s.comps,
                skip,
                vector,
                vertical,
            );
        } else {
            // Per plane, one of two orders (`direct_rows`): read straight from the two source
            // rows' bytes by the level's kernels, or the two rows first blended at window width
            // into f32 and the taps gathered from that.
            for p in 0..c.format.num_planes() {
                let (lo, hi) = c.plane_window[p];
                if hi <= lo || direct[p].is_some() {
                    continue;
                }
                let axis = if c.plane_chroma_rows[p] { &c.rows_chroma } else { &c.rows_luma };
                let (bytes, stride) = src.planes[p];
                let (s0, s1) = (axis.i0[cy] * stride, axis.i1[cy] * stride);
                let (r0, r1) = (&bytes[s0 + lo..s0 + hi], &bytes[s1 + lo..s1 + hi]);
                baseline::blend_rows(r0, r1, axis.w[cy], &mut s.vrows[p][..hi - lo]);
            }
            // At AVX-512, the luma read by the float32 finish itself where it shares its one
            // source row with the chroma (YUY2, UYVY at 3×), whose blocks ask for the row's
            // lines; elsewhere the luma and chroma blocks side by side.
            #[cfg(target_arch = "x86_64")]
            let luma512_in_finish = avx512_luma && direct[0].is_some_and(|d| d.wy == 0.0);
            #[cfg(target_arch = "x86_64")]
            let paired = if luma512_in_finish { None } else { pair(c, &direct, &mut s.comps) };
            #[cfg(target_arch = "x86_64")]
            if let Some(made) = paired {
                // Both planes are read straight, so no part of `ahead` is left to ask for.
                s.counts.sampled += made;
            }
            // A plane's lines asked for by its first group alone (`DirectRows::first_asks`).
            let mut asked = 0u8;
            #[cfg(target_arch = "x86_64")]
            for g in c.groups.iter().filter(|_| paired.is_none()) {
                if let Some(d) = direct[g.plane] {
                    let d = d.first_asks(g.plane, &mut asked);
                    let DirectRows { r0, r1, wy, shuffled, next } = d;
                    let (wx, wq, single) = group_weights(c, g);
                    // The luma read by the finish itself (`avx2::finish_luma`): here only the
                    // columns past its blocks.
                    if let (Some(plan), true) = (&g.shuffle, shuffled && avx2_luma) {
                        let row = d.row(g, plan, wq, single);
                        if let Some(covered) = avx2::luma_in_finish(&row) {
                            let columns = row.tail(wx, 8, covered / 8, &mut s.comps);
                            luma_row = Some(row);
                            s.counts.sampled += columns as u64;
                            ahead.piece();
                            continue;
                        }
                    }
                    // An RGB source's pixels read by the float32 finish itself
                    // (`avx512::finish_pixels`): here only the columns past its blocks.
                    if let (Some(plan), Some(picks)) = (&g.permute, avx512_pixels) {
                        let row = d.row(g, plan, wq, single);
                        let width = (0..3).map(|k| s.comps[k].len()).min().unwrap_or(0);
                        if let Some(pb) = avx512::PixelBlocks::of(&row, picks, width) {
                            let columns = row.tail(wx, 16, pb.count, &mut s.comps);
                            pixels512 = Some(pb);
                            s.counts.sampled += (columns * g.members.len()) as u64;
                            ahead.piece();
                            continue;
                        }
                    }
                    // The chroma beside the luma the finish reads (`avx512::finish_yuv`).
                    if let (Some(plan), Some(lb)) = (&g.permute, &luma512) {
                        let row = d.row(g, plan, wq, single);
                        let width = s.comps[1].len().min(s.comps[2].len());
                        if let Some(cb) = avx512::ChromaBlocks::of(&row, width, lb) {
                            let columns = row.tail(wx, 16, cb.count, &mut s.comps);
                            chroma512 = Some(cb);
                            s.counts.sampled += (columns * 2) as u64;
                            ahead.piece();
                            continue;
                        }
                    }
                    if let (Some(plan), true) = (&g.permute, luma512_in_finish && g.members[0].0 == 0) {
                        let row = d.row(g, plan, wq, single);
                        if let Some(lb) = avx512::LumaBlocks::of(&row, s.comps[0].len(), !luma512_shared) {
                            let columns = row.tail(wx, 16, lb.count, &mut s.comps);
                            luma512 = Some(lb);
                            s.counts.sampled += columns as u64;
                            // The chroma's blocks ask for the rows' lines.
                            if luma512_shared {
                                asked &= !(1 << g.plane);
                            }
                            ahead.piece();
                            continue;
                        }
                    }
                    let columns = match (&g.permute, &g.shuffle) {
                        (Some(plan), _) if c.avx512() && plan.reach <= r0.len().min(r1.len()) => unsafe {
                            avx512::sample(d.row(g, plan, wq, single), wx, &mut s.comps)
                        },
                        (_, Some(plan)) if shuffled => unsafe {
                            avx2::sample(d.row(g, plan, wq, single), wx, &mut s.comps)
                        },
                        _ => {
                            assert!(
                                g.max as usize + 4 <= r0.len().min(r1.len()),
                                "dword gathers stay inside the rows"
                            );
                            unsafe { avx2::gather(r0, r1, wy, g, wx, single, &mut s.comps, next) }
                        }
                    };
                    s.counts.sampled += (columns * g.members.len()) as u64;
                }
                ahead.piece();
            }
            // The NEON sampling: every group of a direct plane has a shuffle plan (`direct_ok`).
            #[cfg(target_arch = "aarch64")]
            for g in &c.groups {
                if let (Some(d), Some(plan)) = (direct[g.plane], &g.shuffle) {
                    let d = d.first_asks(g.plane, &mut asked);
                    let (wx, wq, single) = group_weights(c, g);
                    let columns = neon::sample(d.row(g, plan, wq, single), wx, &mut s.comps);
                    s.counts.sampled += (columns * g.members.len()) as u64;
                }
                ahead.piece();
            }
            // Interleaved chroma (NV12's UV) blended into f32: each tap's U and V come as one 64-bit
            // pair, half the loads of gathering them apart.
            #[cfg(target_arch = "x86_64")]
            let paired = match c.chroma_pair {
                Some((ku, kv)) if c.avx2() && direct[c.comps[ku].plane].is_none() => {
                    let (i0, i1) = &c.taps[ku];
                    let [.., cu, cv] = pick2(&mut s.comps, ku, kv);
                    let row = &s.vrows[c.comps[ku].plane];
                    // The plan's largest U tap, and the V right after it, inside the blended row.
                    assert!(c.tap_max[ku] as usize + 2 <= row.len(), "pairs stay inside the row");
                    unsafe {
                        avx2::horizontal_pairs(row, i0, i1, &c.weights_chroma, c.chroma_on_samples, cu, cv)
                    };
                    Some((ku, kv))
                }
                _ => None,
            };
            #[cfg(not(target_arch = "x86_64"))]
            let paired: Option<(usize, usize)> = None;
            for (k, comp) in c.comps.iter().enumerate() {
                if direct[comp.plane].is_some() || paired.is_some_and(|(ku, kv)| k == ku || k == kv) {
                    continue;
                }
                let (i0, i1) = &c.taps[k];
                let w = if comp.chroma { &c.weights_chroma } else { &c.weights_luma };
                let single = if comp.chroma { c.chroma_on_samples } else { c.luma_on_samples };
                horizontal(c.avx2(), &s.vrows[comp.plane], i0, i1, w, single, &mut s.comps[k]);
            }
        }
        // Colour, normalization and the store in one pass where there is a fused kernel for the
        // output; the rest (and the last columns of a row) through the channel rows.
        ahead.rest();
        #[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(unused_mut))]
        let mut done = 0;
        #[cfg(target_arch = "x86_64")]
        if row_bytes {
            done = match (c.avx512(), side) {
                (true, Some((_, pick, k))) => {
                    let n = unsafe { avx512::finish_side_by_side(&c.finish, &s.comp_bytes[k], pick, dst, y) };
                    s.counts.side_by_side += n as u64;
                    n
                }
                (true, None) => unsafe { avx512::finish_bytes(&c.finish, &s.comp_bytes, dst, y) },
                (false, _) => unsafe { avx2::finish_bytes(&c.finish, &s.comp_bytes, dst, y) },
            };
            s.counts.interleaved += done as u64;
        } else if row_yuv_bytes {
            done = match c.avx512() {
                true => unsafe { avx512::finish_yuv_bytes(&c.finish, &s.comp_bytes, dst, y, finish_asks) },
                false => unsafe { avx2::finish_yuv_bytes(&c.finish, &s.comp_bytes, dst, y) },
            };
            s.counts.from_bytes += done as u64;
        } else if c.avx2() && c.fused_finish {
            done = if let Some(pb) = &pixels512 {
                unsafe { avx512::finish_pixels(&c.finish, &s.comps, dst, y, pb) }
            } else if let (Some(lb), Some(cb)) = (&luma512, &chroma512) {
                unsafe { avx512::finish_yuv(&c.finish, &s.comps, dst, y, lb, cb) }
            } else if let Some(lb) = &luma512 {
                unsafe { avx512::finish_luma(&c.finish, &s.comps, dst, y, lb) }
            } else if c.avx512() {
                unsafe { avx512::finish(&c.finish, &s.comps, dst, y) }
            } else if let Some(row) = &luma_row {
                unsafe { avx2::finish_luma(&c.finish, &s.comps, dst, y, row) }
            } else {
                unsafe { avx2::finish(&c.finish, &s.comps, dst, y) }
            };
        }
        #[cfg(target_arch = "aarch64")]
        if row_bytes {
            done = unsafe { neon::finish_bytes(&c.finish, &s.comp_bytes, dst, y) };
            s.counts.interleaved += done as u64;
        } else if row_yuv_bytes {
            done = unsafe { neon::finish_yuv_bytes(&c.finish, &s.comp_bytes, dst, y) };
            s.counts.from_bytes += done as u64;
        } else if c.neon() && c.fused_finish {
            // The band owns row y; the rows of `comps` hold the content width.
            done = unsafe { neon::finish(&c.finish, &s.comps, dst, y) };
        }
        // The columns a finish of the components' bytes left (AVX2's and NEON's last few) go
        // through the channel rows as their floats.
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        if row_yuv_bytes {
            let from = done.min(rect.width);
            for k in 0..3 {
                multitap::widen(&s.comp_bytes[k][from..rect.width], &mut s.comps[k][from..rect.width]);
            }
        }
        s.counts.finished += done as u64;
        let xs = done..rect.width;
        baseline::colour(&c.finish, &s.comps, &mut s.chans, xs.clone());
        baseline::store_content(&c.finish, dst, y, xs, &s.chans, &mut s.bytes);
        pad(y, 1, 0, rect.x);
        pad(y, 1, rect.x + rect.width, c.dst.width - rect.x - rect.width);
    }
}
