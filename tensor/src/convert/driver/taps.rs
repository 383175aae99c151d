//! The multi-tap filters' kernels per level, for the row driver (an exact box's rows-first plans
//! and byte quads: `boxes`): the packing of YUY2's and UYVY's rows (`plan::Compact`),
//! the horizontal and vertical passes of `multitap::multitap_row`, and a row of PIL's filters
//! through the byte ring or blended down first with a level's kernels.

#[cfg(target_arch = "x86_64")]
use super::super::avx2;
#[cfg(target_arch = "x86_64")]
use super::super::avx512;
use super::super::hint::{prefetch, Trickle};
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
use super::super::multitap;
use super::super::multitap::VTaps;
use super::super::multitap::MULTI_PREFETCH_AHEAD;
#[cfg(target_arch = "aarch64")]
use super::super::neon;
use super::super::plan::Comp;
use super::super::plan::MultiTap;
#[cfg(target_arch = "x86_64")]
use super::super::plan::{Blocks, Whole, Whole8};
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
use super::super::plan::{Compact, Halved, TapGroup, WholeRow};
#[cfg(target_arch = "aarch64")]
use super::super::plan::{Planar, WholeTaps};
use super::super::{Converter, Scratch, SrcImage};

/// PIL's filters straight into the output's own bytes (`FinishValues::interleaves_bytes`; AVX-512,
/// AVX2 and NEON): horizontal first through the byte ring (`ring`), every group by the level's
/// blocks (`planned`), and the three components the finish reads blended.
/// Through the f32 rows, the vertical pass's conversions and stores were a third of its samples
/// and the finish made the same bytes again (RGBA 1080p → 640, Zen 4).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(super) fn pil_bytes(c: &Converter, m: &MultiTap, ring: bool, planned: impl Fn(usize) -> bool) -> bool {
    m.round_between
        && !m.down_first
        && ring
        && c.finish.interleaves_bytes()
        && (0..m.groups.len()).all(planned)
        && m.blended[..3].iter().all(|&b| b)
}

/// PIL's filters blended down first (YUY2, UYVY) with a finish that reads the components' bytes
/// (`finish_yuv_bytes` at AVX-512, AVX2 and NEON): every group by the level's blocks
/// (`planned`), the three components the finish reads blended, and the fused finish for the
/// output.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(super) fn yuv_bytes(c: &Converter, m: &MultiTap, ring: bool, planned: impl Fn(usize) -> bool) -> bool {
    m.round_between
        && m.down_first
        && ring
        && c.fused_finish
        && c.finish.kind == super::super::finish::YUV
        && (0..m.groups.len()).all(planned)
        && m.blended[..3].iter().all(|&b| b)
}

/// Where PIL's filters go straight into an 8-bit RGB or BGR output's pixels (`pil_bytes`) from
/// one group of three- or four-byte pixels at AVX-512: its ten-output blocks with the members
/// side by side (`plan::Whole::ten_interleaved`) and, per output channel, the byte of a pixel of
/// the ring's row that is that channel's (`avx512::finish_side_by_side`), and that first member,
/// whose ring rows and component row are three content rows long for it (`build::band_scratch`).
#[cfg(target_arch = "x86_64")]
pub(super) fn side_by_side<'m>(
    c: &Converter,
    m: &'m MultiTap,
    bytes_out: bool,
) -> Option<(&'m Whole, [usize; 3], usize)> {
    let [g] = m.groups.as_slice() else { return None };
    let plan = g.whole10i.as_ref()?;
    let len = m.row_len[c.comps[g.members[0]].plane];
    // (Four-byte pixels: where the level's other plan is the ten-output one, no output blends
    // alpha; three-byte pixels have three members.)
    let ten = g.members.len() == 3 || whole_avx512(m, g).is_some_and(|w| w.ten);
    let order = super::super::finish::order(c.finish.cs);
    let pick: Option<Vec<usize>> =
        order.iter().take(3).map(|&k| g.members.iter().take(3).position(|&j| j == k)).collect();
    match (bytes_out && c.avx512() && !c.finish.chw && ten && plan.reach <= len && g.b16.is_some(), pick) {
        (true, Some(p)) => Some((plan, [p[0], p[1], p[2]], g.members[0])),
        _ => None,
    }
}

/// PIL's byte ring at AVX-512 for group `gi`: its whole-weight plan and the 2^-22 one for its
/// other blocks, over the rows as they are or packed (`plan::Compact`, returned).
#[cfg(target_arch = "x86_64")]
pub(super) fn avx512_pil8_plan<'m>(
    m: &'m MultiTap,
    comps: &[Comp],
    gi: usize,
) -> Option<(&'m Whole, &'m Blocks, Option<&'m Compact>)> {
    let g = &m.groups[gi];
    let len = m.row_len[comps[g.members[0]].plane];
    match g.compact.as_deref().filter(|p| p.whole.is_some()) {
        Some(p) => match (&p.whole, &p.b16) {
            (Some(w), Some(b)) => Some((w, b, Some(p))),
            _ => None,
        },
        None => match (whole_avx512(m, g), &g.b16) {
            (Some(w), Some(b)) if w.reach <= len && b.reach <= len => Some((w, b, None)),
            _ => None,
        },
    }
}

/// AVX-512: PIL's whole-weight blocks of a group (`plan::Whole`), ten outputs a member where the
/// group is four-byte pixels whose fourth member no output blends.
#[cfg(target_arch = "x86_64")]
pub(super) fn whole_avx512<'m>(m: &MultiTap, g: &'m TapGroup) -> Option<&'m Whole> {
    without_alpha(m, g, &g.whole10, &g.whole)
}

/// `pixels` (a plan that leaves a four-byte pixel's fourth member out) where group `g` has it
/// and no output blends that member, else `other`.
#[cfg(target_arch = "x86_64")]
pub(super) fn without_alpha<'m, P>(
    m: &MultiTap,
    g: &TapGroup,
    pixels: &'m Option<P>,
    other: &'m Option<P>,
) -> Option<&'m P> {
    match pixels {
        Some(p) if g.members.get(3).is_none_or(|&k| !m.blended[k]) => Some(p),
        _ => other.as_ref(),
    }
}

/// Source rows `rows` (up to `multitap::ROWS_AT_ONCE`) packed to every other byte from the
/// group's first (`plan::Compact`), each by the level's `pack(row, out)`, into `packed` (that
/// many rows of scratch): the packed rows, empty past `rows`.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[inline(always)]
pub(super) fn pack_rows<'p>(
    rows: &[&[u8]],
    p: &Compact,
    packed: &'p mut [u8],
    mut pack: impl FnMut(&[u8], &mut [u8]),
) -> [&'p [u8]; multitap::ROWS_AT_ONCE] {
    let stride = packed.len() / multitap::ROWS_AT_ONCE;
    for (i, row) in rows.iter().enumerate() {
        pack(row, &mut packed[i * stride..][..p.len]);
    }
    let packed: &'p [u8] = packed;
    std::array::from_fn(|i| if i < rows.len() { &packed[i * stride..][..p.len] } else { &[] })
}

/// Whether PIL's groups that `plans` takes are all packed, from byte 0 or 1 of the same plane's
/// rows (YUY2's and UYVY's luma and chroma), each packed row fitting half a slot of `slot` bytes:
/// then each row is packed once for both (`split_rows`).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(super) fn split_packs<'p, T, U>(
    m: &MultiTap,
    comps: &[Comp],
    plans: impl Fn(usize) -> Option<(T, U, Option<&'p Compact>)>,
    slot: usize,
) -> bool {
    let taken = (0..m.groups.len()).filter_map(|g| Some((comps[m.groups[g].members[0]].plane, plans(g)?.2)));
    let Some((plane, _)) = taken.clone().next() else { return false };
    m.row_len[plane].div_ceil(2) <= slot / 2
        && taken.clone().all(|(p, _)| p == plane)
        && Compact::split_pair(taken.map(|(_, c)| c), slot / 2)
}

/// PIL's byte ring at a level for a band: the groups it takes (bit `g`), whether YUY2's and
/// UYVY's rows are split once for both groups (`split_packs`), and the half halved
/// (`halved_half`). They are the converter's, worked out once a band: per output row they were
/// 2 % of a 1080p YUY2 `bilinear-antialias` frame at AVX2.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[derive(Clone, Copy)]
pub(super) struct RingPlan {
    pub(super) takes: u32,
    pub(super) split: bool,
    pub(super) halve: Option<usize>,
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
impl RingPlan {
    /// Over the groups `plans` takes (with the packed form each reads), halving where `runs`
    /// has the level's blocks; `slot`: the scratch bytes a packed row may take.
    fn of<'p, T, U>(
        m: &MultiTap,
        comps: &[Comp],
        plans: impl Fn(usize) -> Option<(T, U, Option<&'p Compact>)> + Copy,
        slot: usize,
        runs: impl Fn(&Halved) -> bool,
    ) -> RingPlan {
        let takes = (0..m.groups.len()).filter(|&g| plans(g).is_some()).fold(0, |t, g| t | 1 << g);
        let split = split_packs(m, comps, plans, slot);
        RingPlan { takes, split, halve: if split { halved_half(m, plans, runs) } else { None } }
    }

    /// AVX2's (`avx2_pil8_plan`).
    #[cfg(target_arch = "x86_64")]
    pub(super) fn avx2(m: &MultiTap, comps: &[Comp], slot: usize) -> RingPlan {
        let plans = |g: usize| avx2_pil8_plan(m, comps, g, slot > 0);
        RingPlan::of(m, comps, plans, slot, |h| h.b8.is_some())
    }

    /// NEON's (`neon_pil8_plan`).
    #[cfg(target_arch = "aarch64")]
    pub(super) fn neon(m: &MultiTap, comps: &[Comp], slot: usize) -> RingPlan {
        let plans = |g: usize| {
            neon_pil8_plan(m, comps, g, slot).map(|(_, rows)| match rows {
                NeonRows::Packed(p) => ((), (), Some(p)),
                _ => ((), (), None),
            })
        };
        RingPlan::of(m, comps, plans, slot, |h| h.whole_taps.is_some())
    }
}

/// With each row split once for both groups (`split_packs`), the half stored as two runs
/// (`plan::Halved`; `avx2::pack_bytes_split_halved`, `neon::pack_bytes_split`): that of the
/// group that `plans` takes packed and whose halved plan has the level's blocks (`runs`: YUY2's
/// and UYVY's chroma), if any.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn halved_half<'p, T, U>(
    m: &MultiTap,
    plans: impl Fn(usize) -> Option<(T, U, Option<&'p Compact>)>,
    runs: impl Fn(&Halved) -> bool,
) -> Option<usize> {
    (0..m.groups.len())
        .filter_map(|g| plans(g)?.2)
        .find(|c| c.halved.as_deref().is_some_and(&runs))
        .map(|c| c.from)
}

/// `pack_rows` for groups packed from byte 0 and 1 of the same rows (`split_packs`): a row not
/// packed yet (`packed_at[i]`, its slot's row, reset per output row) is packed into both halves
/// of slot `i` by `pack(row, even, odd)`; the group reads its half.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[inline(always)]
pub(super) fn split_rows<'p>(
    rows: &[&[u8]],
    p: &Compact,
    packed: &'p mut [u8],
    packed_at: &mut [*const u8; multitap::ROWS_AT_ONCE],
    mut pack: impl FnMut(&[u8], &mut [u8], &mut [u8]),
) -> [&'p [u8]; multitap::ROWS_AT_ONCE] {
    let stride = packed.len() / multitap::ROWS_AT_ONCE;
    let half = stride / 2;
    for (i, row) in rows.iter().enumerate() {
        if packed_at[i] != row.as_ptr() {
            let (even, odd) = packed[i * stride..][..stride].split_at_mut(half);
            pack(row, &mut even[..row.len().div_ceil(2)], &mut odd[..row.len() / 2]);
            packed_at[i] = row.as_ptr();
        }
    }
    let packed: &'p [u8] = packed;
    std::array::from_fn(|i| if i < rows.len() { &packed[i * stride + p.from * half..][..p.len] } else { &[] })
}

/// A multi-tap filter's horizontal pass over source rows `rows` for group `g` into its members'
/// rows `out[i]`: the outputs the level's blocks make (the widest plan the level has), 0 where
/// none applies. `packed`: scratch for `multitap::ROWS_AT_ONCE` packed rows (`plan::Compact`).
#[inline(always)]
pub(super) fn multitap_horizontal(
    c: &Converter,
    m: &MultiTap,
    gi: usize,
    rows: &[&[u8]],
    out: &[[*mut f32; 4]],
    ahead: usize,
    packed: &mut [u8],
) -> usize {
    let g = &m.groups[gi];
    let pil = m.round_between;
    let fits = |reach: usize| rows.iter().all(|r| reach <= r.len());
    // `multitap_row` gives each member's row at the content width, which `done` never passes.
    #[cfg(target_arch = "x86_64")]
    {
        // (PIL's whole-weight groups are the byte ring's, `driver::byte_ring_row`.)
        let b16 = g.b16.as_ref().filter(|p| c.avx512() && fits(p.reach));
        if let Some(plan) = b16 {
            return unsafe { avx512::multitap(rows, plan, pil, out, None, ahead) };
        }
        if let Some(plan) = g.px8.as_ref().filter(|p| c.avx2() && fits(p.reach)) {
            return unsafe { avx2::pixels(rows, plan, pil, g.members.len(), out, ahead) };
        }
        // Packed (`plan::Compact`): each row's every other byte from the group's first into
        // `packed`, the frame's lines asked for there. AVX2, YUY2, 8 frames, best of 8 runs in
        // alternation: triangle 1.28 → 1.12 ms (1600×900: 1.03 → 0.97), bicubic 2.02 → 1.81.
        // (The same before AVX-512's `b16` was slower: bicubic 1.15 → 1.30 ms, triangle at
        // 1600×900 0.70 either way.)
        let compact = g.compact.as_deref().filter(|_| c.avx2() && !packed.is_empty());
        if let Some((p, plan)) =
            compact.and_then(|p| p.b8.as_ref().filter(|b| b.reach <= p.len).map(|b| (p, b)))
        {
            let pack = |row: &[u8], out: &mut [u8]| unsafe { avx2::pack_bytes(row, p.from, out, ahead) };
            let packed_rows = pack_rows(rows, p, packed, pack);
            return unsafe { avx2::multitap(&packed_rows[..rows.len()], plan, pil, out, 0) };
        }
        // (PIL's groups with these blocks take the byte ring at AVX2, `avx2_pil8`.)
        if let Some(plan) = g.b8.as_ref().filter(|p| c.avx2() && fits(p.reach)) {
            return unsafe { avx2::multitap(rows, plan, pil, out, ahead) };
        }
    }
    #[cfg(target_arch = "aarch64")]
    if let Some(plan) = g.b8.as_ref().filter(|p| c.neon() && fits(p.reach)) {
        return unsafe { neon::multitap(rows, plan, pil, out, ahead) };
    }
    let _ = (c, rows, out, pil, g, fits, ahead, packed);
    0
}

/// PIL's byte ring over four-byte pixels split into channel rows (`plan::Planar`, channel rows of
/// `len` bytes; AVX2's and NEON's): slot `i` of `packed` holds row `i`'s channel rows, a quarter
/// each, by the level's `split(row, quarters)`, a null quarter for a channel no member blends
/// (an RGBA source's alpha: not written, 1080p RGBA `bilinear-antialias` hot at AVX2, Zen 2,
/// 1.26 → 1.18 ms; over rotating frames, which wait on the reads, no change); then
/// `blocks(rows, out)` for each member the vertical pass blends, as one member over its
/// channel's rows into its rows of `out`.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[allow(clippy::too_many_arguments)]
fn planar_members(
    m: &MultiTap,
    comps: &[Comp],
    g: &TapGroup,
    len: usize,
    rows: &[&[u8]],
    out: &[[*mut u8; 4]],
    packed: &mut [u8],
    mut split: impl FnMut(&[u8], [*mut u8; 4]),
    mut blocks: impl FnMut(&[&[u8]], &[[*mut u8; 4]]),
) {
    const ROWS: usize = multitap::ROWS_AT_ONCE;
    let (stride, n) = (packed.len() / ROWS, rows.len());
    let quarter = stride / 4;
    assert!(len <= quarter && n <= ROWS && out.len() == n, "channel rows fit their slots");
    let used: [bool; 4] =
        std::array::from_fn(|c| g.members.iter().any(|&k| m.blended[k] && comps[k].offset % 4 == c));
    for (i, row) in rows.iter().enumerate() {
        let slot = packed[i * stride..].as_mut_ptr();
        // Each quarter holds `len` bytes (asserted above).
        split(
            &row[..4 * len],
            std::array::from_fn(|c| match used[c] {
                true => slot.wrapping_add(c * quarter),
                false => std::ptr::null_mut(),
            }),
        );
    }
    let packed: &[u8] = packed;
    for (j, &k) in g.members.iter().enumerate().filter(|&(_, &k)| m.blended[k]) {
        let channel = comps[k].offset % 4;
        let src: [&[u8]; ROWS] =
            std::array::from_fn(
                |i| if i < n { &packed[i * stride + channel * quarter..][..len] } else { &[] },
            );
        let dst: [[*mut u8; 4]; ROWS] = std::array::from_fn(|i| match i < n {
            true => [out[i][j], std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut()],
            false => [std::ptr::null_mut(); 4],
        });
        blocks(&src[..n], &dst[..n]);
    }
}

/// What NEON's tap-by-tap blocks (`plan::WholeTaps`) of group `gi` read: the rows split into
/// channel rows (`plan::Planar`: four-byte pixels, each blended channel one member's rows), packed
/// to every other byte (`plan::Compact`: YUY2's and UYVY's groups) or as they are.
#[cfg(target_arch = "aarch64")]
pub(super) enum NeonRows<'m> {
    Planar(&'m Planar),
    Packed(&'m Compact),
    AsTheyAre,
}

/// Whether PIL's byte ring at NEON takes group `gi` (`neon_pil8`): its tap-by-tap plan, and the
/// rows it reads, where they fit (`stride`: bytes of scratch a packed row may take).
#[cfg(target_arch = "aarch64")]
pub(super) fn neon_pil8_plan<'m>(
    m: &'m MultiTap,
    comps: &[Comp],
    gi: usize,
    stride: usize,
) -> Option<(&'m WholeTaps, NeonRows<'m>)> {
    let g = &m.groups[gi];
    let len = m.row_len[comps[g.members[0]].plane];
    if let Some(p) = g.planar.as_deref().filter(|p| 4 * p.len <= stride.min(len)) {
        if let Some(plan) = p.whole_taps.as_ref().filter(|w| w.reach <= p.len) {
            return Some((plan, NeonRows::Planar(p)));
        }
    }
    if let Some(p) = g.compact.as_deref().filter(|p| p.len <= stride) {
        if let Some(plan) = p.whole_taps.as_ref().filter(|w| w.reach <= p.len) {
            return Some((plan, NeonRows::Packed(p)));
        }
    }
    g.whole_taps.as_ref().filter(|w| w.reach <= len).map(|w| (w, NeonRows::AsTheyAre))
}

/// PIL's horizontal pass at NEON into the byte ring (`multitap::pil8_row`) for the groups
/// `neon_pil8_plan` takes, over the rows it names, packed or split into `packed`
/// (`multitap::ROWS_AT_ONCE` rows of scratch); YUY2's rows split once for both groups where
/// `split` holds the slots' rows (`split_rows`), the half `split.1` halved, which its group reads
/// by its `plan::Halved` blocks. Returns the outputs each member has.
#[cfg(target_arch = "aarch64")]
#[allow(clippy::too_many_arguments)]
pub(super) fn neon_pil8(
    m: &MultiTap,
    comps: &[Comp],
    gi: usize,
    rows: &[&[u8]],
    out: &[[*mut u8; 4]],
    ahead: usize,
    packed: &mut [u8],
    split: Option<(&mut [*const u8; multitap::ROWS_AT_ONCE], Option<usize>)>,
) -> usize {
    const ROWS: usize = multitap::ROWS_AT_ONCE;
    let stride = packed.len() / ROWS;
    let Some((plan, from)) = neon_pil8_plan(m, comps, gi, stride) else { return 0 };
    let g = &m.groups[gi];
    let n = rows.len();
    assert!(n <= ROWS && out.len() == n, "a row's members' rows each");
    match from {
        NeonRows::Planar(p) => {
            let split = |row: &[u8], quarters| unsafe { neon::pack_planar(row, quarters, ahead) };
            planar_members(m, comps, g, p.len, rows, out, packed, split, |src, dst| unsafe {
                neon::whole_taps(src, plan, dst, 0);
            });
        }
        NeonRows::Packed(p) => {
            let halve = split.as_ref().and_then(|s| s.1);
            let src = match split {
                Some((at, halve)) => split_rows(rows, p, packed, at, |row, even, odd| {
                    neon::pack_bytes_split(row, even, odd, halve, ahead)
                }),
                None => pack_rows(rows, p, packed, |row, out| neon::pack_bytes(row, p.from, out, ahead)),
            };
            let plan = match p.halved.as_deref().filter(|_| halve == Some(p.from)) {
                // (`halved_half` names only a half whose group has the halved blocks.)
                Some(h) => h.whole_taps.as_ref().expect("the halved blocks"),
                None => plan,
            };
            // The packed rows are the scratch's: the frame's lines were asked for above.
            unsafe { neon::whole_taps(&src[..n], plan, out, 0) };
        }
        NeonRows::AsTheyAre => unsafe {
            neon::whole_taps(rows, plan, out, ahead);
        },
    }
    plan.done
}

/// Whether PIL's byte ring at AVX2 takes group `gi` (`avx2_pil8`): the level has byte blocks
/// for it (`packed`: the scratch for packed rows exists); with the packed form it reads, if any.
#[cfg(target_arch = "x86_64")]
pub(super) fn avx2_pil8_plan<'m>(
    m: &'m MultiTap,
    comps: &[Comp],
    gi: usize,
    packed: bool,
) -> Option<((), (), Option<&'m Compact>)> {
    let g = &m.groups[gi];
    let len = m.row_len[comps[g.members[0]].plane];
    if packed && g.planar.as_ref().is_some_and(|p| 4 * p.len <= len) {
        return Some(((), (), None));
    }
    if g.px8.as_ref().is_some_and(|p| p.reach <= len) {
        return Some(((), (), None));
    }
    if let Some(p) =
        g.compact.as_deref().filter(|p| packed && p.b8.as_ref().is_some_and(|b| b.reach <= p.len))
    {
        return Some(((), (), Some(p)));
    }
    g.b8.as_ref().filter(|p| p.reach <= len).map(|_| ((), (), None))
}

/// PIL's horizontal pass at AVX2 into the byte ring (`multitap::pil8_row`) for the groups
/// `avx2_pil8_plan` takes: four-byte pixels split into channel rows (`plan::Planar`), else their
/// pixel blocks (as `multitap_horizontal`),
/// else the blocks over the packed rows (each row packed once for both of YUY2's groups where
/// `split` holds the slots' rows, `split_rows`, and the half `split.1` halved, which its group
/// reads by its `plan::Halved` blocks), else over the rows; whole-weight blocks where the group
/// has them (`avx2_byte_blocks`). Returns the outputs each member has from the blocks.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
pub(super) fn avx2_pil8(
    m: &MultiTap,
    comps: &[Comp],
    gi: usize,
    rows: &[&[u8]],
    out: &[[*mut u8; 4]],
    ahead: usize,
    packed: &mut [u8],
    split: Option<(&mut [*const u8; multitap::ROWS_AT_ONCE], Option<usize>)>,
) -> usize {
    let g = &m.groups[gi];
    let fits = |reach: usize| rows.iter().all(|r| reach <= r.len());
    if let Some(p) = g.planar.as_deref().filter(|p| !packed.is_empty() && fits(4 * p.len)) {
        let split = |row: &[u8], quarters| unsafe { avx2::pack_planar(row, quarters, ahead) };
        planar_members(m, comps, g, p.len, rows, out, packed, split, |src, dst| unsafe {
            avx2_byte_blocks(src, &p.b8, Some(&p.whole8), dst, 0);
        });
        return p.whole8.done;
    }
    if let Some(plan) = g.px8.as_ref().filter(|p| fits(p.reach)) {
        return unsafe { avx2::pixels_bytes(rows, plan, g.members.len(), out, ahead) };
    }
    let compact = g.compact.as_deref().filter(|_| !packed.is_empty());
    if let Some((p, plan)) = compact.and_then(|p| p.b8.as_ref().filter(|b| b.reach <= p.len).map(|b| (p, b)))
    {
        let halve = split.as_ref().and_then(|s| s.1);
        let packed_rows = match split {
            Some((at, halve)) => split_rows(rows, p, packed, at, |row, even, odd| unsafe {
                match halve {
                    Some(h) => avx2::pack_bytes_split_halved(row, even, odd, h, ahead),
                    None => avx2::pack_bytes_split(row, even, odd, ahead),
                }
            }),
            None => {
                pack_rows(rows, p, packed, |row, out| unsafe { avx2::pack_bytes(row, p.from, out, ahead) })
            }
        };
        let (plan, whole) = match p.halved.as_deref().filter(|_| halve == Some(p.from)) {
            // (`halved_half` names only a half whose group has the halved blocks.)
            Some(h) => (h.b8.as_ref().expect("the halved blocks"), h.whole8.as_ref()),
            None => (plan, p.whole8.as_ref().filter(|w| w.reach <= p.len)),
        };
        // The packed rows are the scratch's: the frame's lines were asked for above.
        return unsafe { avx2_byte_blocks(&packed_rows[..rows.len()], plan, whole, out, 0) };
    }
    match g.b8.as_ref().filter(|p| fits(p.reach)) {
        Some(plan) => unsafe {
            avx2_byte_blocks(rows, plan, g.whole8.as_ref().filter(|w| fits(w.reach)), out, ahead)
        },
        None => 0,
    }
}

/// AVX2's blocks over bytes into rows of bytes: PIL's whole-weight blocks where the group has
/// them and the 2^-22 blocks for the outputs they leave (`plan::Whole8::rest`), else the 2^-22
/// blocks.
///
/// # Safety
/// As `avx2::multitap_bytes`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn avx2_byte_blocks(
    rows: &[&[u8]],
    plan: &Blocks,
    whole: Option<&Whole8>,
    out: &[[*mut u8; 4]],
    ahead: usize,
) -> usize {
    match whole {
        Some(w) if rows.len() <= 3 => unsafe {
            avx2::whole_bytes(rows, w, out, ahead);
            avx2::multitap_bytes(rows, plan, out, Some(&w.rest), 0);
            w.done
        },
        _ => unsafe { avx2::multitap_bytes(rows, plan, out, None, ahead) },
    }
}

/// A multi-tap filter's vertical pass into the first outputs of `out` (see `multitap_row`): the
/// outputs the level's kernel makes, 0 at the baseline.
#[inline(always)]
pub(super) fn multitap_vertical(
    c: &Converter,
    rows: &[*const f32],
    taps: VTaps<'_>,
    out: &mut [f32],
) -> usize {
    // `multitap_row` gives rows of the content width, as long as `out`.
    #[cfg(target_arch = "x86_64")]
    if c.avx512() {
        // (The last outputs, under 32, by the baseline loop.)
        return unsafe { avx512::multitap_vertical(rows, taps, out) };
    } else if c.avx2() {
        return unsafe { avx2::multitap_vertical(rows, taps, out) };
    }
    #[cfg(target_arch = "aarch64")]
    if c.neon() {
        return unsafe { neon::multitap_vertical(rows, taps, out) };
    }
    let _ = (c, rows, taps, out);
    0
}

/// `prefetch_ahead` for the multi-tap filters, which read every source row (a 3× downscale
/// jumps nowhere, but the hardware's prefetcher alone left NV12 area at 2× its hot time): the
/// source rows output row `cy + MULTI_PREFETCH_AHEAD` reads and the row before it did not, each
/// group's bytes, a line at a time, all before the row. Only where no vector level runs: the
/// levels' kernels ask for the same lines among their loads (`multitap::ahead_bytes`), which the
/// burst here cost on an Intel Xeon (docs/benchmark-log.md, 2026-12-02).
#[inline(always)]
pub(super) fn prefetch_multi(m: &MultiTap, comps: &[Comp], src: &SrcImage<'_>, cy: usize) {
    let ahead = MULTI_PREFETCH_AHEAD;
    for g in &m.groups {
        let lead = comps[g.members[0]];
        let axis = usize::from(lead.chroma);
        let (rows, cols) = (&m.rows[axis], &m.cols[axis]);
        let (at, n) = (cy + ahead, cols.first.len());
        if at >= rows.first.len() || n == 0 {
            continue;
        }
        let (first, kv) = (rows.first[at] as usize, rows.taps);
        let new = match at {
            0 => first,
            _ => first.max(rows.first[at - 1] as usize + kv),
        };
        let lo = g.members.iter().map(|&c| m.base[c][0] as usize).min().unwrap_or(0);
        let hi =
            g.members.iter().map(|&c| m.base[c][n - 1] as usize + lead.step * cols.taps).max().unwrap_or(0);
        let (bytes, stride) = src.planes[lead.plane];
        for r in new..first + kv {
            let end = (r * stride + hi).min(bytes.len());
            let mut p = (r * stride + lo).min(end);
            while p < end {
                prefetch(bytes.as_ptr().wrapping_add(p));
                p += 64;
            }
        }
    }
}

/// Output row `cy` of PIL's filters through the byte ring (`multitap::pil8_row`) with a level's
/// horizontal blocks (`horiz`, lent the scratch's rows for packed or split rows) and vertical pass
/// (`vert`), for the groups `takes` accepts (`pixels_ask`: as `pil8_row`): AVX-512's, AVX2's and
/// NEON's. Returns the groups done (bit `g`).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[inline(always)]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub(super) fn byte_ring_row<T: multitap::Sample>(
    c: &Converter,
    m: &MultiTap,
    src: &SrcImage<'_>,
    cy: usize,
    s: &mut Scratch,
    takes: impl Fn(usize) -> bool,
    pixels_ask: bool,
    side_by_side: u32,
    mut horiz: impl FnMut(usize, &[&[u8]], &[[*mut u8; 4]], usize, &mut [u8]) -> usize,
    vert: impl FnMut(&[*const u8], &[i32], Option<WholeRow<'_>>, &mut [T], Trickle) -> usize,
) -> u32 {
    let packed = &mut s.packed_rows;
    let lent =
        |g: usize, rows: &[&[u8]], out: &[[*mut u8; 4]], ahead: usize| horiz(g, rows, out, ahead, packed);
    let (groups, made) = multitap::pil8_row(
        m,
        &c.comps,
        &src.planes,
        cy,
        &mut s.ring,
        T::rows(&mut s.comps, &mut s.comp_bytes),
        takes,
        pixels_ask,
        side_by_side,
        lent,
        vert,
    );
    s.counts.sampled += made;
    groups
}

/// Output row `cy` of PIL's filters blended down first (`multitap::pil8_down_first`): the level's
/// `horiz` for the groups it `takes` (as `byte_ring_row`'s; the f32 ring's blocks take the
/// others), `vert` (0 where it has no kernel) and `widen` (`multitap::widen` where it has none);
/// with `bytes`, the components' bytes left in `Scratch::comp_bytes` for a finish that reads them
/// (`yuv_bytes`), nothing widened, and with `asks` too, some of the lines the vertical pass would
/// ask for left to that finish (`multitap::FINISH_ASKED_ROWS`). Returns the groups done and the
/// lines left to the finish.
/// (Inlined into the row driver's level function: called across modules, the call cost 1080p YUY2
/// `bilinear-antialias` 8 % at AVX-512, 0.374–0.390 → 0.412–0.422 ms on 8 frames.)
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn down_first_row(
    c: &Converter,
    m: &MultiTap,
    src: &SrcImage<'_>,
    cy: usize,
    s: &mut Scratch,
    takes: impl Fn(usize) -> bool,
    mut horiz: impl FnMut(usize, &[&[u8]], &[[*mut u8; 4]], usize, &mut [u8]) -> usize,
    vert: impl FnMut(&[*const u8], &[i16], (u8, (u16, u16)), &mut [u8], usize, usize) -> usize,
    widen: impl Fn(&[u8], &mut [f32]),
    bytes: bool,
    asks: bool,
) -> (u32, Trickle) {
    let into = bytes.then_some(&mut s.comp_bytes);
    let bytes_of = |g: usize, rows: &[&[u8]], out: &[[*mut u8; 4]], packed: &mut [u8]| match takes(g) {
        true => horiz(g, rows, out, 0, packed),
        false => 0,
    };
    let across = |g: usize, rows: &[&[u8]], out: &[[*mut f32; 4]], packed: &mut [u8]| {
        multitap_horizontal(c, m, g, rows, out, 0, packed)
    };
    let (ring, comps, packed) = (&mut s.ring, &mut s.comps, &mut s.packed_rows[..]);
    let (groups, made, later) = multitap::pil8_down_first(
        m,
        &c.comps,
        &src.planes,
        cy,
        ring,
        comps,
        packed,
        into,
        vert,
        bytes_of,
        across,
        widen,
        asks && bytes,
    );
    s.counts.sampled += made;
    (groups, later)
}

/// No vertical kernel: `multitap::pil8_down_first` blends every byte.
pub(super) fn no_down(
    _: &[*const u8],
    _: &[i16],
    _: (u8, (u16, u16)),
    _: &mut [u8],
    _: usize,
    _: usize,
) -> usize {
    0
}
