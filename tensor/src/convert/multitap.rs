//! The multi-tap filters' row loops, for every level: per output row, the source rows each
//! group needs filtered across into a ring (the level's horizontal kernels, the loops here for
//! the columns they leave), then the ring's rows blended down (`multitap_row`, OpenCV's order and
//! PIL's i32 sums); PIL's filters over a ring of bytes (`pil8_row`, which AVX-512 drives); an
//! exact box's in `boxes.rs` (`box_row`, `box_quads_row`).

// The plane loops index several parallel arrays at once; iterating one of them would only hide
// the others.
#![allow(clippy::needless_range_loop)]

use super::hint::Trickle;
use super::lines::Lines;
use super::plan::{Comp, MultiTap, Taps, WholeRow, PIL_HALF, PIL_SHIFT};

mod ahead;
mod boxes;
pub(super) use ahead::{
    ahead_bytes, ahead_rows, ahead_rows_by, box_asks, MULTI_PREFETCH_AHEAD, TRICKLE_FROM,
};
use ahead::{ahead_bytes_by, down_asks, TRICKLED_AHEAD};
pub(super) use ahead::{DOWN_AHEAD, FINISH_ASKED_ROWS, NV12_DOWN_ASKS};
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(super) use boxes::box_quads_row;
pub(super) use boxes::box_row;

/// Slots of a ring that holds `taps` consecutive source rows: a power of two at or above it, so
/// a row's slot is a mask. As `row % taps`, the driver's multi-tap bookkeeping made a division
/// per row, tap and member (about 60 per output row of NV12 `bilinear-antialias`; `div` was the
/// driver's hottest instruction there). With the mask and `next_rows` filling the caller's
/// array: engine, uint8, AVX-512, 8 rotating frames, min of 1000, three runs each: 0.403–0.407
/// → 0.386–0.395 ms (`area`, whose exact box keeps no ring: unchanged). With room for
/// `ROWS_AT_ONCE - 1` rows past them, which `pil8_row` fills ahead (`fill_end`).
pub(super) fn ring_slots(taps: usize) -> usize {
    (taps + ROWS_AT_ONCE - 1).next_power_of_two()
}

/// The slot of source row `row` in a ring of `taps` rows (`ring_slots`): consecutive rows, up to
/// `taps` of them, have distinct slots.
#[inline(always)]
pub(super) fn slot(row: usize, taps: usize) -> usize {
    row & (ring_slots(taps) - 1)
}

/// A band's multi-tap state: per component, the last `taps` source rows filtered horizontally
/// (in `ring_slots(taps)` slots, `slot`) and the row each slot holds; the PIL filters' integer sums of
/// one output row.
pub(super) struct Ring {
    pub(super) rows: [Lines<f32>; 4],
    pub(super) tags: [Vec<usize>; 4],
    pub(super) acc: Lines<i32>,
    /// An exact box's vertical sums of one output row (`box_row`), a plane's row long.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(super) sums: Lines<u16>,
    /// The sums packed (`plan::Compact`).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(super) packed: Lines<u16>,
    /// PIL's first pass as bytes (`pil8_row`): per component, rows and tags as `rows`/`tags`.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(super) bytes: [Lines<u8>; 4],
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(super) btags: [Vec<usize>; 4],
    /// Per plane, one row of PIL's vertical pass over the source rows, and its sums where no
    /// kernel makes it (`pil8_down_first`).
    pub(super) down: [Lines<u8>; 3],
    pub(super) down_sums: Lines<i32>,
}

/// Output row `cy` of PIL's filters for the groups `takes(g)` accepts, through a ring of bytes:
/// the first pass's results are bytes (PIL stores them so), and the i32 ring of `multitap_row`
/// made the vertical pass read four times the bytes (a quarter of a 1080p NV12 frame's
/// `bilinear-antialias` time at AVX-512). `horiz(g, rows, out, ahead)` filters source rows into
/// the members' byte rows (`out[i][j]`, the content width; whole blocks, it says how many;
/// asking for the lines `ahead` on); `vert(rows, wi, whole, out, ahead)` blends byte rows into a
/// component's row (whole steps; asking for the lines `ahead` through its steps, `ahead_rows`);
/// the loops here do the rest with PIL's sums. Returns the groups done (bit `g`) and the outputs
/// `horiz` made.
///
/// With `pixels_ask` (AVX-512), the vertical pass asks for nothing for groups of four-byte pixels
/// read as they are (more than two members, no `TapGroup::compact`), whose `horiz` asks for the
/// same lines: RGBA faster on every camera row, NV12, YUY2 and AVX2 slower without the asking
/// (docs/benchmark-log.md, eighteenth session).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[inline(always)]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub(super) fn pil8_row<T: Sample>(
    m: &MultiTap,
    comps: &[Comp],
    planes: &[(&[u8], usize); 3],
    cy: usize,
    ring: &mut Ring,
    out: &mut [Lines<T>; 4],
    takes: impl Fn(usize) -> bool,
    pixels_ask: bool,
    side_by_side: u32,
    mut horiz: impl FnMut(usize, &[&[u8]], &[[*mut u8; 4]], usize) -> usize,
    mut vert: impl FnMut(&[*const u8], &[i32], Option<WholeRow<'_>>, &mut [T], Trickle) -> usize,
) -> (u32, u64) {
    let (mut groups, mut made) = (0u32, 0u64);
    let Ring { bytes: ring, btags: tags, .. } = ring;
    for (gi, g) in m.groups.iter().enumerate().filter(|&(gi, _)| takes(gi)) {
        let lead = comps[g.members[0]];
        let axis = usize::from(lead.chroma);
        let (cols, rows) = (&m.cols[axis], &m.rows[axis]);
        let (kv, n) = (rows.taps, cols.first.len());
        // The group's three members side by side in its first member's rows (`side_by_side`:
        // `horiz` makes every output), blended down as one row three times as long.
        let wide = side_by_side & (1 << gi) != 0;
        if wide {
            let k = g.members[0];
            assert!(g.members.len() >= 3 && ring[k].len() >= ring_slots(kv) * 3 * n && out[k].len() >= 3 * n);
        }
        let first = rows.first[cy] as usize;
        let (bytes, stride) = planes[lead.plane];
        let len = m.row_len[lead.plane];
        // The pixels' blocks ask for themselves (`pixels_ask`: AVX-512's RGB and RGBA), the
        // others through the vertical pass's trickle too.
        let asks = pixels_ask && g.compact.is_none() && g.members.len() > 2;
        let by = if asks { MULTI_PREFETCH_AHEAD } else { TRICKLED_AHEAD };
        let ahead = ahead_bytes_by(rows, cy, by, stride, bytes.len());
        let end = fill_end(rows, cy);
        let mut r = first;
        while r < first + kv {
            let mut batch = [0usize; ROWS_AT_ONCE];
            let count = next_rows(&tags[g.members[0]], first, kv, end, &mut r, &mut batch);
            if count == 0 {
                continue;
            }
            // A loop, not `array::from_fn`: that was a call whose result came back through
            // memory, and the 32-byte copy of it stalled on the call's 16-byte stores (the row
            // driver's hottest instruction in 1080p NV12 `bilinear-antialias`, 7 % of its time).
            let mut src: [&[u8]; ROWS_AT_ONCE] = [&[]; ROWS_AT_ONCE];
            for (s, &row) in src.iter_mut().zip(&batch[..count]) {
                *s = &bytes[row * stride..][..len];
            }
            let mut targets = [[std::ptr::null_mut(); 4]; ROWS_AT_ONCE];
            for (i, &row) in batch[..count].iter().enumerate() {
                let at_slot = slot(row, kv);
                for (t, &k) in targets[i].iter_mut().zip(&g.members) {
                    tags[k][at_slot] = row;
                    *t = match wide {
                        false => ring[k][at_slot * n..][..n].as_mut_ptr(),
                        true if k == g.members[0] => ring[k][at_slot * 3 * n..][..3 * n].as_mut_ptr(),
                        true => std::ptr::null_mut(),
                    };
                }
            }
            let done = horiz(gi, &src[..count], &targets[..count], ahead).min(n);
            made += (done * g.members.len() * count) as u64;
            if wide {
                assert_eq!(done, n, "the blocks make a side-by-side row's every output");
                continue;
            }
            for (&row, src) in batch[..count].iter().zip(src) {
                let at_slot = slot(row, kv);
                for &k in &g.members {
                    pil_across(&m.base[k], cols, comps[k].step, src, &mut ring[k][at_slot * n..][..n], done);
                }
            }
        }
        let asked = if asks { 0..0 } else { ahead_rows(rows, cy, stride) };
        let ahead = Trickle::over(bytes, asked).part(g.part);
        let blended = g.members.iter().filter(|&&k| m.blended[k]).count() as u32;
        let (blended, n) = if wide { (1, 3 * n) } else { (blended, n) };
        let members = g.members.iter().filter(|&&k| m.blended[k]).take(blended as usize);
        for (i, &k) in members.enumerate() {
            let ring = &ring[k];
            let mut at = [std::ptr::null(); VTAPS];
            for (j, at) in at.iter_mut().enumerate().take(kv) {
                *at = ring[slot(first + j, kv) * n..][..n].as_ptr();
            }
            let wi = &rows.wi[cy * kv..][..kv];
            let whole = m.whole_row(axis, cy);
            let o = &mut out[k][..n];
            let done = match kv <= at.len() {
                true => vert(&at[..kv], wi, whole, o, ahead.part((i as u32, blended))).min(n),
                false => 0,
            };
            for x in done..n {
                let mut acc = PIL_HALF;
                for (j, &w) in wi.iter().enumerate() {
                    acc += w * ring[slot(first + j, kv) * n + x] as i32;
                }
                o[x] = T::of_f32((acc >> PIL_SHIFT).clamp(0, 255) as f32);
            }
        }
        groups |= 1 << gi;
    }
    (groups, made)
}

/// A component's value as the multi-tap passes store it: as a float for the finish, or the
/// output's byte where the finish only interleaves the bytes (`Scratch::comp_bytes`,
/// `FinishValues::interleaves_bytes`).
pub(super) trait Sample: Copy + super::lines::Zeroed + 'static {
    /// The output's bytes, not the components' floats (the levels' kernels choose their stores
    /// by it).
    const BYTES: bool;
    /// A value the finish would round: as it is, or the 8-bit output's byte (nearest, ties to
    /// even, saturated: the finish's `cvtps2dq` and pack).
    fn of_f32(v: f32) -> Self;
    /// Of a band's rows, the ones for this type: the components' floats or their bytes.
    fn rows<'a>(floats: &'a mut [Lines<f32>; 4], bytes: &'a mut [Lines<u8>; 4]) -> &'a mut [Lines<Self>; 4];
}

impl Sample for f32 {
    const BYTES: bool = false;
    #[inline(always)]
    fn of_f32(v: f32) -> f32 {
        v
    }
    fn rows<'a>(floats: &'a mut [Lines<f32>; 4], _: &'a mut [Lines<u8>; 4]) -> &'a mut [Lines<f32>; 4] {
        floats
    }
}

impl Sample for u8 {
    const BYTES: bool = true;
    #[inline(always)]
    fn of_f32(v: f32) -> u8 {
        super::finish::round_even(v) as u8
    }
    fn rows<'a>(_: &'a mut [Lines<f32>; 4], bytes: &'a mut [Lines<u8>; 4]) -> &'a mut [Lines<u8>; 4] {
        bytes
    }
}

/// Output row `cy` of PIL's filters blended down first (`MultiTap::down_first`): per plane, the
/// output row's source rows blended into one row of bytes, by PIL's vertical pass (`vert(rows,
/// k, (d, div), out, ahead, asked)`: whole steps of the whole weights, asking for the lines
/// `ahead` on in the last `asked` rows; the sums here for the rest), then that row filtered
/// across into the members' bytes by PIL's horizontal pass (`horiz(g, rows, out, packed)`, whole
/// blocks; where it has none for the group, `across(g, rows, out, packed)`, the f32 ring's
/// blocks, into the components' rows; the loops here for the rest), which become the
/// components' floats (by `widen`), or (`into`, the finish reading bytes) are left in those rows
/// as the components' bytes. `packed`: scratch for the kernels' packed rows. Every group, and
/// every level by the same integer passes: the same bytes. Groups of one plane with the same
/// rows and weights share the row (YUY2's luma and chroma). Returns the groups (bit `g`), the
/// outputs `horiz` made and the lines the vertical pass left to a finish that asks
/// (`finish_asks`: `ahead::down_asks`).
#[inline(always)]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub(super) fn pil8_down_first(
    m: &MultiTap,
    comps: &[Comp],
    planes: &[(&[u8], usize); 3],
    cy: usize,
    ring: &mut Ring,
    out: &mut [Lines<f32>; 4],
    packed: &mut [u8],
    into: Option<&mut [Lines<u8>; 4]>,
    mut vert: impl FnMut(&[*const u8], &[i16], (u8, (u16, u16)), &mut [u8], usize, usize) -> usize,
    mut horiz: impl FnMut(usize, &[&[u8]], &[[*mut u8; 4]], &mut [u8]) -> usize,
    mut across: impl FnMut(usize, &[&[u8]], &[[*mut f32; 4]], &mut [u8]) -> usize,
    widen: impl Fn(&[u8], &mut [f32]),
    finish_asks: bool,
) -> (u32, u64, Trickle) {
    let (mut groups, mut made, mut later) = (0u32, 0u64, Trickle::NONE);
    let Ring { bytes: ring, down, down_sums, .. } = ring;
    let floats = into.is_none();
    let ring = into.unwrap_or(ring);
    // The plane and axis whose blended row `down` holds for this output row.
    let mut held: Option<(usize, usize)> = None;
    for (gi, g) in m.groups.iter().enumerate() {
        let lead = comps[g.members[0]];
        let axis = usize::from(lead.chroma);
        let (cols, rows) = (&m.cols[axis], &m.rows[axis]);
        let (kv, n) = (rows.taps, cols.first.len());
        let first = rows.first[cy] as usize;
        let (bytes, stride) = planes[lead.plane];
        let len = m.row_len[lead.plane];
        let wi = &rows.wi[cy * kv..][..kv];
        let same = |(plane, a): (usize, usize)| plane == lead.plane && (a == axis || m.same_rows);
        let v = &mut down[lead.plane][..len];
        if !held.is_some_and(same) {
            let mut at = [std::ptr::null(); VTAPS];
            for (j, at) in at.iter_mut().enumerate().take(kv) {
                *at = bytes[(first + j) * stride..][..len].as_ptr();
            }
            let (on, finish_rows) = m.down_asks;
            let ahead = ahead_bytes_by(rows, cy, on, stride, bytes.len());
            // The lines asked for: of every row `on` output rows on brings new. By T0
            // (the kernels' hint before), all but the first measured best (1080p YUY2 → 640,
            // AVX-512, Intel Xeon, three alternations, best of 200, two rows on: all three
            // 0.410–0.424 ms on 8 rotating frames, 0.382–0.388 at 900p, 0.488–0.515 on 32; two
            // 0.371–0.397, 0.371–0.374, 0.515–0.560; none 0.386–0.578 and 0.64–0.67 on 32); by
            // T1, all of them (best of 1000, four rows on, all three against two: 32 frames
            // 0.429–0.477 against 0.441–0.504, 8 frames 0.337–0.362 against 0.349–0.365, 900p
            // level; AVX2 32 frames 0.476–0.513 against 0.513–0.540).
            let new = rows.first.get(cy + 1).map_or(kv, |&f| (f as usize - first).min(kv));
            // (The finish takes one plane's rows: the first's; the others ask for all of theirs.)
            let leave = if finish_asks && later.is_empty() { finish_rows } else { 0 };
            let (finish, asked, ahead) = down_asks(rows, (cy, on), stride, new.max(1), ahead, leave);
            if !finish.is_empty() {
                later = Trickle::over(bytes, finish);
            }
            // (A tied row, `WholeRow::n`, by the sums here.)
            let done = match m.whole_row(axis, cy).and_then(WholeRow::untied) {
                Some(WholeRow { k, d, div, .. }) if kv <= VTAPS => {
                    vert(&at[..kv], k, (d, div), v, ahead, asked).min(len)
                }
                _ => 0,
            };
            // The rest row by row (contiguous, so vectorized at the driver's level).
            let sums = &mut down_sums[..len - done];
            sums.fill(PIL_HALF);
            for (j, &w) in wi.iter().enumerate() {
                for (s, &b) in sums.iter_mut().zip(&bytes[(first + j) * stride + done..][..len - done]) {
                    *s += w * b as i32;
                }
            }
            for (o, &s) in v[done..].iter_mut().zip(sums.iter()) {
                *o = (s >> PIL_SHIFT).clamp(0, 255) as u8;
            }
            held = Some((lead.plane, axis));
        }
        let v: &[u8] = v;
        let mut targets = [std::ptr::null_mut(); 4];
        for (t, &k) in targets.iter_mut().zip(&g.members) {
            *t = ring[k][..n].as_mut_ptr();
        }
        // (`from_ref`, not `&[targets]`: that copy's 32-byte load stalled on the four 8-byte
        // stores just made, a tenth of the row driver's time in 1080p YUY2 `bilinear-antialias`.)
        let mut done = horiz(gi, &[v], std::slice::from_ref(&targets), packed).min(n);
        // No byte blocks for the group at this level: the blocks of the f32 ring (PIL's bytes
        // as i32 bits, `pil_byte`) straight into the components' rows.
        let into_bytes = done != 0 || !floats;
        if !into_bytes {
            let mut rows_out = [std::ptr::null_mut(); 4];
            for (t, &k) in rows_out.iter_mut().zip(&g.members) {
                *t = out[k][..n].as_mut_ptr();
            }
            done = across(gi, &[v], &[rows_out], packed).min(n);
            for &k in &g.members {
                for o in &mut out[k][..done] {
                    *o = o.to_bits() as i32 as f32;
                }
            }
        }
        made += (done * g.members.len()) as u64;
        for &k in &g.members {
            let filtered = &mut ring[k][..n];
            pil_across(&m.base[k], cols, comps[k].step, v, filtered, done);
            let from = if into_bytes { 0 } else { done };
            if m.blended[k] && floats {
                widen(&filtered[from..], &mut out[k][from..n]);
            }
        }
        groups |= 1 << gi;
    }
    (groups, made, later)
}

/// A row of bytes as the components' floats, by the loop: `pil8_down_first`'s `widen` where the
/// level has no kernel for it.
#[inline(always)]
pub(super) fn widen(bytes: &[u8], out: &mut [f32]) {
    for (o, &b) in out.iter_mut().zip(bytes) {
        *o = b as f32;
    }
}

/// PIL's horizontal pass of one member by the loops: `out[x]` for `x` from `from` on, from
/// `src`, the member's samples `step` bytes apart from `base[x]`.
#[inline(always)]
fn pil_across(base: &[u32], cols: &Taps, step: usize, src: &[u8], out: &mut [u8], from: usize) {
    let kh = cols.taps;
    for x in from..out.len() {
        let at = base[x] as usize;
        let mut acc = PIL_HALF;
        for j in 0..kh {
            acc += cols.wi[x * kh + j] * src[at + step * j] as i32;
        }
        out[x] = (acc >> PIL_SHIFT).clamp(0, 255) as u8;
    }
}

/// Output row `cy` of a multi-tap filter into `out` (one row per component, content width): each
/// source row the vertical taps read is filtered horizontally once into the component's ring
/// (straight from the frame's bytes), then the ring's rows are blended. Horizontal first, as PIL
/// and OpenCV do: PIL rounds and clamps that pass to bytes (`round_between`), which only this
/// order can repeat. `vector(g, rows, out, ahead)` is the level's horizontal kernel for the group
/// `g` (`plan::TapGroup`) over source rows `rows` (one to `ROWS_AT_ONCE`): it writes the first
/// outputs of each member's filtered row (`out[i][j]` for row `i` and member `j`, each holding the
/// content width) and says how many, asking for the lines `ahead` bytes on (`ahead_bytes`); the
/// loops here do the rest.
/// `vertical(rows, taps, out)` likewise blends the first outputs of `out` from the filtered rows
/// `rows` (each the content width), in the order of the loops here: for the OpenCV presets
/// `w0 · r0`, then `+ wj · rj` per tap, each product and sum rounded (no FMA); PIL's in i32.
/// Groups in `skip` (bit `g`) were made by `box_row` and are left alone.
/// Returns the outputs the horizontal vector kernel made, over every component.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn multitap_row(
    m: &MultiTap,
    comps: &[Comp],
    planes: &[(&[u8], usize); 3],
    cy: usize,
    ring: &mut Ring,
    out: &mut [Lines<f32>; 4],
    skip: u32,
    mut vector: impl FnMut(usize, &[&[u8]], &[[*mut f32; 4]], usize) -> usize,
    mut vertical: impl FnMut(&[*const f32], VTaps<'_>, &mut [f32]) -> usize,
) -> u64 {
    let Ring { rows: ring, tags: ring_rows, acc, .. } = ring;
    let mut made = 0;
    // Components whose group `box_row` made (bit `g` of `skip`).
    let mut done_before = [false; 4];
    for (gi, g) in m.groups.iter().enumerate() {
        if skip & (1 << gi) != 0 {
            for &k in &g.members {
                done_before[k] = true;
            }
            continue;
        }
        let lead = comps[g.members[0]];
        let axis = usize::from(lead.chroma);
        let (cols, rows) = (&m.cols[axis], &m.rows[axis]);
        let (kv, kh, n) = (rows.taps, cols.taps, cols.first.len());
        let first = rows.first[cy] as usize;
        let (bytes, stride) = planes[lead.plane];
        let len = m.row_len[lead.plane];
        let ahead = ahead_bytes(rows, cy, stride, bytes.len());
        // The rows not in the ring yet, up to `ROWS_AT_ONCE` per call: the blocks' controls and
        // weights are then loaded once for them all.
        let mut r = first;
        while r < first + kv {
            let mut batch = [0usize; ROWS_AT_ONCE];
            let count = next_rows(&ring_rows[g.members[0]], first, kv, first + kv, &mut r, &mut batch);
            if count == 0 {
                continue;
            }
            let rows_bytes: [&[u8]; ROWS_AT_ONCE] =
                std::array::from_fn(|i| if i < count { &bytes[batch[i] * stride..][..len] } else { &[] });
            let mut targets = [[std::ptr::null_mut(); 4]; ROWS_AT_ONCE];
            for (i, &row) in batch[..count].iter().enumerate() {
                // Distinct slots: the batch's rows lie within `kv` consecutive rows.
                let at_slot = slot(row, kv);
                for (t, &k) in targets[i].iter_mut().zip(&g.members) {
                    ring_rows[k][at_slot] = row;
                    *t = ring[k][at_slot * n..][..n].as_mut_ptr();
                }
            }
            let done = vector(gi, &rows_bytes[..count], &targets[..count], ahead).min(n);
            made += (done * g.members.len() * count) as u64;
            for (&r, row) in batch[..count].iter().zip(rows_bytes) {
                let at_slot = slot(r, kv);
                for &k in &g.members {
                    let comp = comps[k];
                    let filtered = &mut ring[k][at_slot * n..][..n];
                    let at = |base: u32, j: usize| row[base as usize + comp.step * j];
                    let bases = m.base[k][done..].iter();
                    if m.round_between {
                        let weights = cols.wi[done * kh..].chunks_exact(kh);
                        for ((o, &base), w) in filtered[done..].iter_mut().zip(bases).zip(weights) {
                            let mut acc = PIL_HALF;
                            for j in 0..kh {
                                acc += w[j] * at(base, j) as i32;
                            }
                            *o = pil_byte((acc >> PIL_SHIFT).clamp(0, 255));
                        }
                    } else {
                        let weights = cols.w[done * kh..].chunks_exact(kh);
                        for ((o, &base), w) in filtered[done..].iter_mut().zip(bases).zip(weights) {
                            let mut acc = w[0] * at(base, 0) as f32;
                            for j in 1..kh {
                                acc += w[j] * at(base, j) as f32;
                            }
                            *o = acc;
                        }
                    }
                }
            }
        }
    }
    for (k, comp) in comps.iter().enumerate().filter(|&(k, _)| m.blended[k] && !done_before[k]) {
        let axis = usize::from(comp.chroma);
        let rows = &m.rows[axis];
        let (kv, n) = (rows.taps, m.cols[axis].first.len());
        let first = rows.first[cy] as usize;
        let o = &mut out[k][..n];
        let ring = &ring[k];
        let mut rows_at = [std::ptr::null(); VTAPS];
        let done = match kv <= VTAPS {
            true => {
                for (j, at) in rows_at.iter_mut().enumerate().take(kv) {
                    *at = ring[slot(first + j, kv) * n..][..n].as_ptr();
                }
                let taps = match m.round_between {
                    true => VTaps::Pil(
                        &rows.wi[cy * kv..][..kv],
                        (rows.d[cy] != 0).then(|| (&rows.k[cy * kv..][..kv], rows.d[cy])),
                    ),
                    false => VTaps::Float(&rows.w[cy * kv..][..kv], m.scale[axis]),
                };
                vertical(&rows_at[..kv], taps, o).min(n)
            }
            false => 0,
        };
        if m.round_between {
            // Row by row into the integer sums (contiguous, vectorized), then the shift.
            let acc = &mut acc[done..n];
            acc.fill(PIL_HALF);
            for (j, &w) in rows.wi[cy * kv..][..kv].iter().enumerate() {
                let filtered = &ring[slot(first + j, kv) * n + done..][..n - done];
                for (a, &v) in acc.iter_mut().zip(filtered) {
                    *a += w * v.to_bits() as i32;
                }
            }
            for (o, &a) in o[done..].iter_mut().zip(acc.iter()) {
                *o = (a >> PIL_SHIFT).clamp(0, 255) as f32;
            }
            continue;
        }
        for (j, &w) in rows.w[cy * kv..][..kv].iter().enumerate() {
            let filtered = &ring[slot(first + j, kv) * n + done..][..n - done];
            if j == 0 {
                for (o, &v) in o[done..].iter_mut().zip(filtered) {
                    *o = w * v;
                }
            } else {
                for (o, &v) in o[done..].iter_mut().zip(filtered) {
                    *o += w * v;
                }
            }
        }
        let scale = m.scale[axis];
        if scale != 1.0 {
            for o in &mut o[done..] {
                *o *= scale;
            }
        }
    }
    made
}

/// Where `pil8_row`'s calls for output row `cy` may fill the ring to (the source rows it reads,
/// `first..first + kv`, then the next output row's, as many as the ring's spare slots hold): a
/// call short of `ROWS_AT_ONCE` rows takes the next row's first too, so that NV12's chroma at
/// 1.5× (one row and two by turns) filters three rows a call. One row a call took 4.8 ns a block
/// of 16 outputs, three 3.0 a row (AVX2, Zen 2): 1080p NV12 `bilinear-antialias` 0.75 → 0.72
/// ms (engine, hot).
fn fill_end(rows: &Taps, cy: usize) -> usize {
    let (first, kv) = (rows.first[cy] as usize, rows.taps);
    let next = rows.first.get(cy + 1).map_or(0, |&f| f as usize + kv);
    next.min(first + ring_slots(kv)).max(first + kv)
}

/// The next source rows (up to `ROWS_AT_ONCE`) of `first..first + kv` from `*r` on that a ring
/// (`tags`: the row each slot holds) does not hold yet, then of `first + kv..end` to fill the
/// batch, into `batch`, and how many; `*r` moves past them. The byte ring of `pil8_row` and the
/// filtered rows of `multitap_row` fill alike.
/// (Into the caller's array: returned with the count, the array came back through a copy whose
/// 16-byte load spanned two 8-byte stores, a store-forwarding stall per call, the driver's
/// hottest instruction after the ring's divisions went.)
#[inline(always)]
fn next_rows(
    tags: &[usize],
    first: usize,
    kv: usize,
    end: usize,
    r: &mut usize,
    batch: &mut [usize; ROWS_AT_ONCE],
) -> usize {
    let mut count = 0;
    while *r < first + kv && count < ROWS_AT_ONCE {
        if tags[slot(*r, kv)] != *r {
            batch[count] = *r;
            count += 1;
        }
        *r += 1;
    }
    // Past the rows needed now, up to `end` (at most the ring's slots from `first`), only to
    // fill a call that filters some.
    while count > 0 && count < ROWS_AT_ONCE && *r < end {
        if tags[slot(*r, kv)] != *r {
            batch[count] = *r;
            count += 1;
        }
        *r += 1;
    }
    count
}

/// Source rows the horizontal kernels filter per call (three: a 3× downscale's new rows per
/// output row). Measured (1080p → 640, AVX-512): one row per call RGBA area 0.62 ms, triangle
/// 1.03, NV12 0.30 and 0.50; three 0.44, 0.71, 0.26 and 0.40.
pub(super) const ROWS_AT_ONCE: usize = 3;

/// PIL's first pass stores its bytes in the ring as i32 bit patterns in the f32 slots, at every
/// level: the vertical pass reads them as integers without a conversion per value (as floats,
/// a conversion each way cost a frame 4–6 %: 1080p → 640 triangle, NV12 0.388 → 0.374 ms, RGBA
/// 0.643 → 0.606), and `as` from f32 had tested each value for NaN and range in scalar code (1.65
/// → 0.52 ms).
#[inline(always)]
fn pil_byte(v: i32) -> f32 {
    f32::from_bits(v as u32)
}

/// The most taps the level's vertical kernels take (more go row by row here).
const VTAPS: usize = 64;

/// One output row's vertical weights: the OpenCV presets' floats, then the sum times a scale
/// (`MultiTap::scale`: 1, or an exact box's `2^14 / K` per axis), or PIL's 2^-22ths with, where
/// the row has them, the same as whole weights over `D` (`plan::Taps::d`: the same bytes).
#[derive(Clone, Copy)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(super) enum VTaps<'a> {
    Float(&'a [f32], f32),
    Pil(&'a [i32], Option<(&'a [i16], u8)>),
}

#[cfg(test)]
mod tests;
