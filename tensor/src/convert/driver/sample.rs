//! The row driver's helpers for the bilinear and nearest rows' sampling: a group's column
//! weights, AVX-512's two groups side by side, the gathered taps of a blended row, and two rows
//! of the components at once.

#[cfg(target_arch = "x86_64")]
use super::super::avx2;
#[cfg(target_arch = "x86_64")]
use super::super::avx512;
use super::super::baseline;
#[cfg(target_arch = "x86_64")]
use super::super::hint;
#[cfg(target_arch = "x86_64")]
use super::super::lines::Lines;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
use super::super::plan::Group;
use super::super::Converter;
#[cfg(target_arch = "x86_64")]
use super::ahead::DirectRows;

/// A group's column weights (`f32` and as `plan::weight_pairs`) and whether its taps are on
/// samples: the luma's or the chroma's.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(super) fn group_weights<'a>(c: &'a Converter, g: &Group) -> (&'a [f32], &'a [u32], bool) {
    match g.chroma {
        true => (&c.weights_chroma, &c.wq_chroma, c.chroma_on_samples),
        false => (&c.weights_luma, &c.wq_luma, c.luma_on_samples),
    }
}

/// Both groups of a two-group source (NV12's or YUY2's luma and chroma) at AVX-512, their
/// blocks side by side (`avx512::sample_pair`), where both read the frame straight (`direct`)
/// through `Permute` plans that fit, on the cores where that paid (`hint::blocks_paired`);
/// returns the values sampled, `None` (nothing done) otherwise (why AVX-512 only:
/// `avx512::sample_pair`).
#[cfg(target_arch = "x86_64")]
pub(super) fn pair(
    c: &Converter,
    direct: &[Option<DirectRows<'_>>; 3],
    out: &mut [Lines<f32>; 4],
) -> Option<u64> {
    let [a, b] = c.groups.as_slice() else { return None };
    let (a, b) = if a.members.len() == 1 { (a, b) } else { (b, a) };
    let (da, db) = (direct[a.plane]?, direct[b.plane]?);
    let db = if b.plane == a.plane { db.asked_already() } else { db };
    let (pa, pb) = (a.permute.as_ref()?, b.permute.as_ref()?);
    let fits = |reach: usize, d: &DirectRows<'_>| reach <= d.r0.len().min(d.r1.len());
    if !c.avx512() || !hint::blocks_paired() || !fits(pa.reach, &da) || !fits(pb.reach, &db) {
        return None;
    }
    let ((wxa, wqa, sa), (wxb, wqb, sb)) = (group_weights(c, a), group_weights(c, b));
    let (na, nb) =
        unsafe { avx512::sample_pair(da.row(a, pa, wqa, sa), wxa, db.row(b, pb, wqb, sb), wxb, out)? };
    Some((na + 2 * nb) as u64)
}

/// `out[x] = row[i0[x]] + w[x] * (row[i1[x]] - row[i0[x]])`: by AVX2 gathers where the level has
/// them, the rest by the baseline loop.
#[inline(always)]
pub(super) fn horizontal(
    avx2: bool,
    row: &[f32],
    i0: &[u32],
    i1: &[u32],
    w: &[f32],
    single: bool,
    out: &mut [f32],
) {
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
    let mut x = 0;
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        let n = out.len().min(i0.len()).min(i1.len()).min(w.len());
        // Eight gathered pairs at a time: scalar loads were most of a frame's time.
        x = unsafe { avx2::horizontal(row, &i0[..n], &i1[..n], &w[..n], single, &mut out[..n]) };
    }
    let _ = (avx2, single);
    baseline::horizontal(x, row, i0, i1, w, out);
}

/// Two distinct rows of `rows`, mutably: `[.., a, b]` are rows `ka` and `kb`.
#[cfg(target_arch = "x86_64")]
pub(super) fn pick2(rows: &mut [Lines<f32>; 4], ka: usize, kb: usize) -> [&mut Lines<f32>; 2] {
    assert_ne!(ka, kb);
    let [r0, r1, r2, r3] = rows;
    let mut all = [Some(r0), Some(r1), Some(r2), Some(r3)];
    [all[ka].take().unwrap(), all[kb].take().unwrap()]
}
