//! An exact box's row loops (`area` at the ratios `plan::EXACT_MAX` allows): the rows summed
//! down first, then across (`box_row`), or each group's outputs summed straight from the frame's
//! rows by the byte quads (`box_quads_row`).

// The plane loops index several parallel arrays at once (as the row loops').
#![allow(clippy::needless_range_loop)]

use super::super::hint::Trickle;
use super::super::lines::Lines;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
use super::super::plan::Quads;
use super::super::plan::{Comp, Compact, MultiTap, TapGroup, TAP_STEPS};
use super::{ahead_bytes, ahead_rows, box_asks, Sample};

/// Whose sums a buffer holds: plane, row weights, first row, span, and whether they were split
/// into the even and odd samples' (`box_row`'s `vsplit`).
type SumsOf<'a> = (usize, &'a [i16], usize, (usize, usize), bool);

/// Output row `cy` of the groups of an exact box that have rows-first blocks at the level
/// (`plan_of(g)`: `TapGroup::w16` or its packed form at AVX-512, `pw8` or `w8` at AVX2; see
/// `plan::EXACT_MAX`): per group, `sums(bytes, stride, first, k_y, (lo, hi), sums, ahead)` makes
/// the vertical sums `Σ k_y b` of the samples its taps read (asking for the lines `ahead` on);
/// where every group of the plane is packed from its first or second byte (YUY2, UYVY),
/// `vsplit(.., [even, odd], ahead)` makes them instead, split into the even and odd samples'
/// sums as the packed groups read them (false: it has none for these rows, and `sums` and
/// `pack(sums, from, out)` make them);
/// `blocks(g, sums, inv, out, ahead)` filters them across (whole blocks; it says how many outputs;
/// asking for the lines `ahead` through its blocks, `ahead_rows`, where `box_asks(.., ask_from)`), and
/// the loop here does the rest, each output
/// `Σ k_x · sum` times `inv`. The sums are exact integers, so this order gives the values of
/// `multitap_row` (across first) to the bit. Returns the groups done (bit `g`), the outputs the
/// blocks made and all the outputs made.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(in super::super) fn box_row<'m, P: Copy>(
    m: &'m MultiTap,
    comps: &[Comp],
    planes: &[(&[u8], usize); 3],
    cy: usize,
    ask_from: usize,
    (sums, packed): (&mut [u16], &mut [u16]),
    out: &mut [Lines<f32>; 4],
    plan_of: impl Fn(&'m TapGroup) -> Option<(P, Option<&'m Compact>)>,
    mut vsum: impl FnMut(&[u8], usize, usize, &[i16], (usize, usize), &mut [u16], usize),
    mut vsplit: impl FnMut(&[u8], usize, usize, &[i16], (usize, usize), [&mut [u16]; 2], usize) -> bool,
    mut pack: impl FnMut(&[u16], usize, &mut [u16]),
    mut blocks: impl FnMut(P, &[u16], f32, [*mut f32; 4], Trickle) -> usize,
) -> (u32, u64, u64) {
    let (mut groups, mut made, mut all) = (0, 0, 0);
    // The sums made last (plane, weights, span, split): YUY2's luma and chroma groups sum the
    // same rows.
    let mut made_sums: Option<SumsOf<'_>> = None;
    // Split sums: the even samples' in the first half of `packed`, the odd ones' in the second.
    let half = packed.len() / 2;
    for (gi, g) in m.groups.iter().enumerate() {
        let Some((plan, compact)) = plan_of(g) else { continue };
        let lead = comps[g.members[0]];
        let axis = usize::from(lead.chroma);
        let (cols, rows) = (&m.cols[axis], &m.rows[axis]);
        let (kv, kh, n) = (rows.taps, cols.taps, cols.first.len());
        let (bytes, stride) = planes[lead.plane];
        let step = lead.step;
        let lo = g.members.iter().map(|&c| m.base[c][0] as usize).min().unwrap_or(0);
        let hi =
            g.members.iter().map(|&c| m.base[c][n - 1] as usize + step * (kh - 1) + 1).max().unwrap_or(0);
        let (first, k) = (rows.first[cy] as usize, &rows.k[cy * kv..][..kv]);
        let reuse = made_sums.is_some_and(|(p, kk, f, (a, z), _)| {
            p == lead.plane && f == first && kk == k && a <= lo && hi <= z
        });
        if !reuse {
            // Over every group of the plane, which a later group of the same rows then reuses.
            let (mut lo, mut hi) = (lo, hi);
            for o in m.groups.iter().filter(|o| comps[o.members[0]].plane == lead.plane) {
                let (oc, step) = (&m.cols[usize::from(comps[o.members[0]].chroma)], comps[o.members[0]].step);
                let on = oc.first.len().min(n);
                if on == 0 {
                    continue;
                }
                lo = lo.min(o.members.iter().map(|&c| m.base[c][0] as usize).min().unwrap_or(lo));
                hi = hi.max(
                    o.members
                        .iter()
                        .map(|&c| m.base[c][on - 1] as usize + step * (oc.taps - 1) + 1)
                        .max()
                        .unwrap_or(hi),
                );
            }
            // YUY2's or UYVY's pair of packed groups (`Compact::split_pair`): the sums split as
            // they are made (`vsplit`), none stored whole.
            let packs =
                m.groups.iter().filter(|o| comps[o.members[0]].plane == lead.plane).filter_map(&plan_of);
            let split = Compact::split_pair(packs.map(|(_, c)| c), half) && {
                let ahead = ahead_bytes(rows, cy, stride, bytes.len());
                let (even, odd) = packed.split_at_mut(half);
                vsplit(bytes, stride, first, k, (lo, hi), [even, odd], ahead)
            };
            if !split {
                vsum(bytes, stride, first, k, (lo, hi), sums, ahead_bytes(rows, cy, stride, bytes.len()));
            }
            made_sums = Some((lead.plane, k, first, (lo, hi), split));
        }
        let split = made_sums.is_some_and(|s| s.4);
        // Packed: every other sum from the group's first byte (`plan::Compact`).
        let mut bases: [&[u32]; 4] = [&[]; 4];
        let (data, step): (&[u16], usize) = match compact {
            Some(c) if split => {
                for (b, cb) in bases.iter_mut().zip(&c.base) {
                    *b = cb;
                }
                (&packed[c.from * half..][..c.len], g.members.len())
            }
            Some(c) => {
                pack(sums, c.from, &mut packed[..c.len]);
                for (b, cb) in bases.iter_mut().zip(&c.base) {
                    *b = cb;
                }
                (&packed[..c.len], g.members.len())
            }
            None => {
                for (b, &k) in bases.iter_mut().zip(&g.members) {
                    *b = &m.base[k];
                }
                (&sums[..], step)
            }
        };
        let (inv, targets) = (box_scale(m, axis), member_rows(g, out));
        let ahead = match box_asks(rows, stride, ask_from) {
            true => Trickle::over(bytes, ahead_rows(rows, cy, stride)).part(g.part),
            false => Trickle::NONE,
        };
        let done = blocks(plan, data, inv, targets, ahead).min(n);
        made += (done * g.members.len()) as u64;
        for (&c, bases) in g.members.iter().zip(bases) {
            let weights = cols.k[done * kh..].chunks_exact(kh);
            for ((o, &base), w) in out[c][done..n].iter_mut().zip(&bases[done..n]).zip(weights) {
                let mut acc = 0i32;
                for j in 0..kh {
                    acc += w[j] as i32 * data[base as usize + step * j] as i32;
                }
                *o = acc as f32 * inv;
            }
        }
        groups |= 1 << gi;
        all += (n * g.members.len()) as u64;
    }
    (groups, made, all)
}

/// Output row `cy` of the groups of an exact box that `quads(g)` takes straight from the frame's
/// rows (`plan::Quads`): `kernel(rows, k_y, plan, inv, out, ahead)` sums each block's outputs over
/// the rows (whole blocks; it says how many outputs, `None`: not these rows), asking for each
/// window's lines again `ahead` bytes on (`ahead_bytes`), and the loop here does the rest from
/// the same bytes. The sums are the integers of `box_row`, so the values are its to the bit.
/// Returns what `box_row` does; a five-output plan (`Quads::five`) makes its three members only.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[inline(always)]
pub(in super::super) fn box_quads_row<'m, T: Sample>(
    m: &'m MultiTap,
    comps: &[Comp],
    planes: &[(&[u8], usize); 3],
    cy: usize,
    out: &mut [Lines<T>; 4],
    quads: impl Fn(&'m TapGroup) -> Option<&'m Quads>,
    mut kernel: impl FnMut(&[*const u8], &[i16], &Quads, f32, &[*mut T; 4], usize) -> Option<usize>,
) -> (u32, u64, u64) {
    let (mut groups, mut made, mut all) = (0, 0, 0);
    for (gi, g) in m.groups.iter().enumerate() {
        let Some(plan) = quads(g) else { continue };
        let lead = comps[g.members[0]];
        let axis = usize::from(lead.chroma);
        let (cols, rows) = (&m.cols[axis], &m.rows[axis]);
        let (kv, kh, n) = (rows.taps, cols.taps, cols.first.len());
        let (bytes, stride) = planes[lead.plane];
        let (first, k) = (rows.first[cy] as usize, &rows.k[cy * kv..][..kv]);
        if (first + kv - 1) * stride + plan.reach > bytes.len() {
            continue;
        }
        let at: [*const u8; MAX_QUAD_ROWS] =
            std::array::from_fn(|r| bytes.as_ptr().wrapping_add((first + r) * stride));
        let (inv, targets) = (box_scale(m, axis), member_rows(g, out));
        let ahead = ahead_bytes(rows, cy, stride, bytes.len());
        // The members' rows lent, not copied: the kernel's copy of the array (16-byte loads over
        // the 8-byte stores just made) stalled, 4 % of 1080p NV12 `area` (8 frames 0.184–0.186 →
        // 0.182–0.183 ms).
        let Some(done) =
            (kv <= MAX_QUAD_ROWS).then(|| kernel(&at[..kv], k, plan, inv, &targets, ahead)).flatten()
        else {
            continue;
        };
        let done = done.min(n);
        let members = &g.members[..if plan.five { 3 } else { g.members.len() }];
        made += (done * members.len()) as u64;
        for &c in members {
            let weights = cols.k[done * kh..].chunks_exact(kh);
            for ((o, &base), w) in out[c][done..n].iter_mut().zip(&m.base[c][done..n]).zip(weights) {
                let mut acc = 0i32;
                for (r, &ky) in k.iter().enumerate() {
                    let row = &bytes[(first + r) * stride..];
                    for j in 0..kh {
                        acc +=
                            i32::from(ky) * i32::from(w[j]) * i32::from(row[base as usize + lead.step * j]);
                    }
                }
                *o = T::of_f32(acc as f32 * inv);
            }
        }
        groups |= 1 << gi;
        all += (n * members.len()) as u64;
    }
    (groups, made, all)
}

/// An exact box's scale from its whole sums on axis `axis` back to sample values.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn box_scale(m: &MultiTap, axis: usize) -> f32 {
    m.scale[axis] * (1.0 / (TAP_STEPS * TAP_STEPS)) as f32
}

/// The rows of `out` of group `g`'s members, null past them.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn member_rows<T: Sample>(g: &TapGroup, out: &mut [Lines<T>; 4]) -> [*mut T; 4] {
    std::array::from_fn(|i| g.members.get(i).map_or(std::ptr::null_mut(), |&c| out[c].as_mut_ptr()))
}

/// The most rows `box_quads_row` hands its kernel.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
const MAX_QUAD_ROWS: usize = 4;
