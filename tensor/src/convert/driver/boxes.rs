//! An exact box's kernels per level, for the row driver: which rows-first plan each level runs
//! (`multitap::box_row`), which groups the byte quads take straight from the frame's rows
//! (`plan::Quads`), and a row made by the quads into the output's own bytes.

#[cfg(target_arch = "x86_64")]
use super::super::avx512;
use super::super::multitap;
#[cfg(target_arch = "aarch64")]
use super::super::neon;
use super::super::plan::MultiTap;
use super::super::plan::{Blocks, Compact, Quads, TapGroup};
#[cfg(target_arch = "x86_64")]
use super::super::plan::{EvenBox, Pixels};
use super::super::{Converter, Scratch, SrcImage};
#[cfg(target_arch = "x86_64")]
use super::taps::without_alpha;

/// A group's rows-first plan at a level (`multitap::box_row`): blocks over the sums, or (AVX2)
/// four-byte pixels' blocks.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub(super) enum Across<'a> {
    Blocks(&'a Blocks),
    Even(&'a EvenBox),
    Pixels(&'a Pixels),
}

/// A group's rows-first plan at a level, and its packed form.
#[cfg(target_arch = "x86_64")]
pub(super) type RowsFirst = for<'a> fn(&'a TapGroup) -> Option<(Across<'a>, Option<&'a Compact>)>;

/// AVX-512: the 16-dword word blocks, over the packed row where the group has one; an even
/// box's pixel blocks where it has them.
#[cfg(target_arch = "x86_64")]
pub(super) fn rows_first_avx512(g: &TapGroup) -> Option<(Across<'_>, Option<&Compact>)> {
    match g.compact.as_deref().filter(|p| p.w16.is_some()) {
        Some(p) => p.w16.as_ref().map(|w| (Across::Blocks(w), Some(p))),
        None => match &g.e16 {
            Some(e) => Some((Across::Even(e), None)),
            None => g.w16.as_ref().map(|w| (Across::Blocks(w), None)),
        },
    }
}

/// AVX-512 with VNNI: the byte quads (`plan::Quads`) of an exact box's group, five outputs a
/// member where the group is four-byte pixels whose fourth member no output blends.
#[cfg(target_arch = "x86_64")]
fn quads_avx512<'m>(m: &MultiTap, g: &'m TapGroup) -> Option<&'m Quads> {
    without_alpha(m, g, &g.q5, &g.q16)
}

/// An exact box's byte quads for group `g` at the converter's level: AVX-512 with VNNI
/// (`quads_avx512`), NEON with the dot product (`quads_neon`); none at the other levels. The
/// rows they make go to the f32 rows or (`quads_bytes`) the output's own bytes.
#[cfg_attr(target_arch = "aarch64", allow(unused_variables))]
pub(super) fn level_quads<'m>(c: &Converter, m: &MultiTap, g: &'m TapGroup) -> Option<&'m Quads> {
    #[cfg(target_arch = "x86_64")]
    let quads = c.avx512().then(|| quads_avx512(m, g)).flatten();
    #[cfg(target_arch = "aarch64")]
    let quads = c.neon().then(|| quads_neon(g)).flatten();
    quads.filter(|_| c.vnni)
}

/// An exact box straight into the output's own bytes (`FinishValues::interleaves_bytes`, AVX-512
/// with VNNI and NEON with the dot product): every group has byte quads, and they make the three
/// components the finish reads.
pub(super) fn quads_bytes(c: &Converter, m: &MultiTap) -> bool {
    let made = |k: usize| {
        m.groups.iter().any(|g| {
            level_quads(c, m, g)
                .is_some_and(|p| g.members[..if p.five { 3 } else { g.members.len() }].contains(&k))
        })
    };
    c.finish.interleaves_bytes()
        && m.groups.iter().all(|g| level_quads(c, m, g).is_some())
        && (0..3).all(made)
}

/// Output row `cy` of an exact box by the byte quads into the components' bytes
/// (`Scratch::comp_bytes`, `quads_bytes`): whether every group was made (where not, the caller
/// makes the row again through the f32 rows).
#[inline(always)]
pub(super) fn quads_bytes_row(
    c: &Converter,
    m: &MultiTap,
    src: &SrcImage<'_>,
    cy: usize,
    s: &mut Scratch,
) -> bool {
    let quads = |g| level_quads(c, m, g);
    let direct = |rows: &[*const u8], k: &[i16], plan: &Quads, inv, out: &[*mut u8; 4], ahead| unsafe {
        #[cfg(target_arch = "x86_64")]
        let made = avx512::box_quads(rows, k, plan, inv, out, ahead);
        #[cfg(target_arch = "aarch64")]
        let made = neon::box_quads(rows, k, plan, inv, out, ahead);
        made
    };
    let (done, made, all) =
        multitap::box_quads_row(m, &c.comps, &src.planes, cy, &mut s.comp_bytes, quads, direct);
    let every = done == (1u32 << m.groups.len()) - 1;
    if every {
        s.counts.sampled += made;
        s.counts.rows_first += all;
    }
    every
}

/// NEON with the dot product: an exact box's byte quads in lanes of 16-byte windows
/// (`plan::Quads::pieces`).
#[cfg(target_arch = "aarch64")]
fn quads_neon(g: &TapGroup) -> Option<&Quads> {
    g.q4.as_ref()
}

/// `plan_of`, but none for the groups of `groups` in `done` (bit `g`).
pub(super) fn unless_done<'m, P>(
    plan_of: impl Fn(&'m TapGroup) -> Option<P>,
    groups: &'m [TapGroup],
    done: u32,
) -> impl Fn(&'m TapGroup) -> Option<P> {
    move |g| match groups.iter().position(|o| std::ptr::eq(o, g)) {
        Some(i) if done & (1 << i) != 0 => None,
        _ => plan_of(g),
    }
}

/// AVX2: four-byte pixels' blocks where the group has them (RGBA's member-major word blocks
/// span too many pieces to be planned), else the 8-dword word blocks, over the packed row where
/// the group has one.
#[cfg(target_arch = "x86_64")]
pub(super) fn rows_first_avx2(g: &TapGroup) -> Option<(Across<'_>, Option<&Compact>)> {
    match (&g.pw8, g.compact.as_deref().filter(|p| p.w8.is_some())) {
        (Some(p), _) => Some((Across::Pixels(p), None)),
        (None, Some(p)) => p.w8.as_ref().map(|w| (Across::Blocks(w), Some(p))),
        (None, None) => g.w8.as_ref().map(|w| (Across::Blocks(w), None)),
    }
}

/// NEON: the 8-dword word blocks over the row as it is.
#[cfg(target_arch = "aarch64")]
pub(super) fn rows_first_w8(g: &TapGroup) -> Option<(&Blocks, Option<&Compact>)> {
    g.w8.as_ref().map(|w| (w, None))
}
