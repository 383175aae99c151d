//! The multi-tap filters' weights (`area`, `bilinear-antialias`, the two bicubics): per axis,
//! each output's taps and weights (`Taps`), as OpenCV and PIL compute them, and the plan that
//! holds both axes (`MultiTap`). Pure math, the same on every target.

use super::taps::{tap_groups, TapGroup};
use super::Comp;
use crate::preprocess::Interpolation;

/// Multi-tap weights (`Taps`) are whole 2^-14ths that sum to exactly one per output. Every
/// product of a byte and a weight then has at most 8 + 14 bits and a first pass's sums at most 23
/// (the cubic's lobes keep the weights' absolute sum below 2), so f32 holds them exactly: a flat
/// source stays exactly flat whatever the filter, and the quantization moves an output by at most
/// taps × 255 / 2^15 levels (0.05 for the 7-tap triangle of a 3× downscale). OpenCV quantizes its
/// linear and cubic weights to 2^-11, PIL to 2^-22; the golden tests (tests/golden) hold every
/// preset within one level of both libraries.
pub(in crate::convert) const TAP_STEPS: f64 = (1 << 14) as f64;

/// The PIL filters (`Filter::round_between`) take PIL's own weights instead: each rounded (half
/// away from zero) to 2^-22ths on its own, blended in 32-bit integers with half added and the
/// sum shifted down and clamped to a byte after each pass, as Pillow's 8-bit resampler does. A
/// byte times the weights' absolute sum (below 1.3) times 2^22 fits i32; the result is PIL's to
/// the byte (tests/golden: no content pixel differs), where 2^-14 float weights rounded a value
/// PIL's put just past .5 the other way in the first pass and moved two outputs by 2 levels.
pub(in crate::convert) const PIL_SHIFT: u32 = 22;
pub(in crate::convert) const PIL_STEPS: f64 = (1u64 << PIL_SHIFT) as f64;

/// The most taps one output may read on one axis: a 256× bicubic downscale, a 1000× area one.
/// Past it `Converter::new` refuses the plan (a filter that wide belongs to a pyramid, not to one
/// pass), which also bounds the weight tables and the rows a band keeps.
pub(in crate::convert) const MAX_TAPS: usize = 1024;

/// The shape of a multi-tap filter along one axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(in crate::convert) enum Shape {
    /// Coverage of the output's footprint (OpenCV `INTER_AREA` on a downscale).
    Box,
    /// OpenCV's `INTER_AREA` when some axis grows: `sx = floor(left)`, `fx = (right - (sx + 1)) /
    /// step`, `fx <= 0 ? 0 : frac(fx)` on `sx` and `sx + 1` — coverage weights where the step is
    /// below one sample, OpenCV's own two taps where it is above.
    AreaUp,
    /// `1 - |x|`.
    Triangle,
    /// Keys' cubic with parameter a.
    Cubic(f64),
}

/// A multi-tap filter: its shape and what the library it matches does at scale and at the edges.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(in crate::convert) struct Filter {
    pub(in crate::convert) shape: Shape,
    /// The support (and the kernel's argument) scaled by the downscale factor, PIL's antialias.
    antialias: bool,
    /// Taps past the source's edge read the edge sample (OpenCV); else they are dropped and the
    /// rest renormalized (PIL).
    replicate: bool,
    /// PIL's arithmetic (`PIL_STEPS`): each pass rounded (half up) and clamped to 0..=255, as
    /// PIL stores its horizontal pass in an 8-bit image and then its result.
    pub(in crate::convert) round_between: bool,
}

impl Filter {
    /// The multi-tap filter of `interp`, `None` for the two-tap ones. `area_down`: the picture
    /// shrinks (or keeps) on both axes, where OpenCV's `INTER_AREA` takes its box filter.
    pub(in crate::convert) fn of(interp: Interpolation, area_down: bool) -> Option<Filter> {
        let f = |shape, antialias, replicate, round_between| Filter {
            shape,
            antialias,
            replicate,
            round_between,
        };
        Some(match interp {
            Interpolation::Area if area_down => f(Shape::Box, false, true, false),
            Interpolation::Area => f(Shape::AreaUp, false, true, false),
            Interpolation::BilinearAntialias => f(Shape::Triangle, true, false, true),
            Interpolation::Bicubic => f(Shape::Cubic(-0.5), true, false, true),
            Interpolation::BicubicOpencv => f(Shape::Cubic(-0.75), false, true, false),
            _ => return None,
        })
    }

    fn kernel(self, x: f64) -> f64 {
        let x = x.abs();
        match self.shape {
            Shape::Triangle => (1.0 - x).max(0.0),
            Shape::Cubic(a) if x < 1.0 => ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0,
            Shape::Cubic(a) if x < 2.0 => (((x - 5.0) * x + 8.0) * x - 4.0) * a,
            _ => 0.0,
        }
    }

    /// Half the kernel's width in samples at a step of `step` samples per output.
    fn reach(self, step: f64) -> f64 {
        let scale = if self.antialias { step.max(1.0) } else { 1.0 };
        match self.shape {
            Shape::Box => step / 2.0,
            Shape::AreaUp => step.max(1.0),
            Shape::Triangle => scale,
            Shape::Cubic(_) => 2.0 * scale,
        }
    }

    /// An upper bound of the taps one output reads from a grid of `samples`, before any weight
    /// is made (`Converter::new` refuses a plan past `MAX_TAPS` with it).
    pub(in crate::convert) fn max_taps(self, n: usize, src_len: usize, div: usize, samples: usize) -> usize {
        let step = src_len as f64 / (n as f64 * div as f64);
        let span = (2.0 * self.reach(step)).ceil() + 2.0;
        if span >= samples as f64 {
            samples
        } else {
            span as usize
        }
    }
}

/// One axis of a multi-tap filter: output `i` reads samples `first[i]..first[i] + taps`, all on
/// the grid's samples, weighted by `w[i * taps..][..taps]` (zeros where it reads fewer), or for
/// the PIL filters by `wi[i * taps..][..taps]` in 2^-22ths. `exact`: the box's weights are
/// whole numbers `k` over one denominator `K` for every output (see `EXACT_MAX`), stored as
/// `k · 2^-14` (not normalized: the vertical pass scales the sum by `2^14 / K`).
#[derive(Debug, Clone, Default)]
pub(in crate::convert) struct Taps {
    pub(in crate::convert) first: Vec<u32>,
    pub(in crate::convert) taps: usize,
    pub(in crate::convert) w: Vec<f32>,
    pub(in crate::convert) wi: Vec<i32>,
    pub(in crate::convert) exact: Option<u32>,
    /// An exact box's whole weights `k` (as `w`), for the levels that sum rows first; for the PIL
    /// filters, each output's weights as whole `k / d[i]` where that gives PIL's bytes
    /// (`pil_whole`; `d[i]` 0 where not).
    pub(in crate::convert) k: Vec<i16>,
    pub(in crate::convert) d: Vec<u8>,
}

/// The largest denominator of an exact box (`Taps::exact`). A downscale by a ratio of small
/// whole numbers (1080p → 640 is 3/1 for luma, 3/2 for 4:2:0 chroma; 900p → 640 is 5/2) covers
/// every source pixel by a multiple of `1/K` of an output: the weights are `k/K` exactly, and a
/// whole box sum `Σ k_y Σ k_x b` stays below `EXACT_MAX² · 255 < 2^24` — exact in f32 and in any
/// order. That lets a level sum the rows first (a 3× downscale then filters a third of the
/// rows across) and still give the bytes of the levels that filter across first; a vertical
/// sum `Σ k_y b` stays below 2^15, an i16.
pub(in crate::convert) const EXACT_MAX: u32 = 128;

/// `K` and the unit `M` (a weight is `cover · M`) of a box over `step = num / den` samples from
/// `t0`, where every footprint edge `t0 + i · step` is a whole multiple of `1/M` and `K = step · M`
/// is at most `EXACT_MAX`.
fn exact_unit(num: usize, den: usize, t0: f64) -> Option<(u32, f64)> {
    let gcd = |mut a: usize, mut b: usize| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    let g = gcd(num, den).max(1);
    let (p, q) = (num / g, den / g);
    [1, 2, 4, 8]
        .into_iter()
        .map(|d| (p * d, (q * d) as f64))
        .find_map(|(k, m)| (k as u32 <= EXACT_MAX && (t0 * m).fract() == 0.0).then_some((k as u32, m)))
}

/// The weights of `filter` for `n` outputs over source pixels `[start, start + len)` of a grid of
/// samples `[lo, hi]` covering `div` pixels each, in the pixel-centre convention (output `i`'s
/// footprint is `[start + i * step, start + (i + 1) * step)` with `step = len / n`, sample `j`'s
/// is `[j, j + 1)` in samples: OpenCV's and PIL's). `shift` is the grid's siting (`site_shift`):
/// the footprint and centre move by it, in samples. The caller checked `max_taps`.
#[allow(clippy::too_many_arguments)]
pub(in crate::convert) fn multi_axis(
    n: usize,
    src_start: usize,
    src_len: usize,
    div: usize,
    lo: usize,
    hi: usize,
    filter: Filter,
    shift: f64,
) -> Taps {
    axis_taps(n, src_start, src_len, div, lo, hi, filter, shift, true)
}

/// `multi_axis`, the box `exact` where it can be (`try_exact`).
#[allow(clippy::too_many_arguments)]
fn axis_taps(
    n: usize,
    src_start: usize,
    src_len: usize,
    div: usize,
    lo: usize,
    hi: usize,
    filter: Filter,
    shift: f64,
    try_exact: bool,
) -> Taps {
    let exact = match filter.shape {
        Shape::Box if try_exact => exact_unit(src_len, n * div, src_start as f64 / div as f64 + shift),
        _ => None,
    };
    let div = div as f64;
    let step = src_len as f64 / (n as f64 * div);
    let t0 = src_start as f64 / div + shift;
    let (lo_f, hi_f) = (lo as f64, hi as f64);
    let mut raw: Vec<Vec<(usize, f64)>> = Vec::with_capacity(n);
    let mut taps = 1;
    for i in 0..n {
        let (left, right) = (t0 + i as f64 * step, t0 + (i + 1) as f64 * step);
        let centre = t0 + (i as f64 + 0.5) * step;
        let mut w: Vec<(i64, f64)> = Vec::new();
        match filter.shape {
            Shape::Box => {
                for j in left.floor() as i64..right.ceil() as i64 {
                    let cover = right.min(j as f64 + 1.0) - left.max(j as f64);
                    if cover > 0.0 {
                        w.push((j, cover));
                    }
                }
            }
            Shape::AreaUp => {
                // OpenCV's arithmetic as it is: its scale is the inverse of the inverse scale, and
                // `fx` an f32. Where a footprint's edge meets a sample's, that rounding decides
                // between a sample and its neighbour (natural 960x720 -> 1200x400: 255 levels).
                let (sx, fx) = match t0.fract() == 0.0 {
                    true => {
                        let inv = n as f64 * div / src_len as f64;
                        let sx = (i as f64 * (1.0 / inv)).floor();
                        (t0 + sx, ((i + 1) as f64 - (sx + 1.0) * inv) as f32 as f64)
                    }
                    // A chroma grid starting mid-sample (an odd region): the same from the edges.
                    false => (left.floor(), (right - (left.floor() + 1.0)) / step),
                };
                let fx = if fx <= 0.0 { 0.0 } else { fx - fx.floor() };
                match sx >= hi_f {
                    true => w.push((hi as i64, 1.0)),
                    false => w.extend([(sx as i64, 1.0 - fx), (sx as i64 + 1, fx)]),
                }
            }
            Shape::Triangle | Shape::Cubic(_) => {
                let scale = if filter.antialias { step.max(1.0) } else { 1.0 };
                let reach = filter.reach(step);
                for j in (centre - reach - 1.0).floor() as i64..=(centre + reach).ceil() as i64 {
                    // PIL's operations, in its order: the reciprocal, then a product.
                    let v = filter.kernel((j as f64 + 0.5 - centre) * (1.0 / scale));
                    if v != 0.0 {
                        w.push((j, v));
                    }
                }
            }
        }
        // The edges: past them, the edge sample (replicate) or nothing (renormalize).
        let mut on: Vec<(usize, f64)> = Vec::with_capacity(w.len());
        for (j, v) in w {
            let j = match (filter.replicate, (j as f64).clamp(lo_f, hi_f)) {
                (true, c) => c as usize,
                (false, c) if c == j as f64 => j as usize,
                _ => continue,
            };
            match on.last_mut() {
                Some((last, sum)) if *last == j => *sum += v,
                _ => on.push((j, v)),
            }
        }
        let sum: f64 = on.iter().map(|&(_, v)| v).sum();
        if on.is_empty() || sum == 0.0 {
            on = vec![(centre.floor().clamp(lo_f, hi_f) as usize, 1.0)];
        }
        let sum: f64 = on.iter().map(|&(_, v)| v).sum();
        let unit = if filter.round_between { PIL_STEPS } else { TAP_STEPS };
        let mut q: Vec<(usize, f64)> = on.iter().map(|&(j, v)| (j, (v / sum * unit).round())).collect();
        if let Some((k, m)) = exact {
            // The exact box: each cover a whole multiple of 1/M, K of them per output.
            let whole: Vec<(usize, f64)> = on.iter().map(|&(j, v)| (j, (v * m).round())).collect();
            let fits = on.iter().zip(&whole).all(|(a, b)| (a.1 * m - b.1).abs() < 1e-6);
            match fits && whole.iter().map(|&(_, v)| v).sum::<f64>() == k as f64 {
                true => q = whole,
                false => return axis_taps(n, src_start, src_len, div as usize, lo, hi, filter, shift, false),
            }
        } else if !filter.round_between {
            // Whole 2^-14ths summing to exactly one: the rounding's remainder to the largest.
            let rest = TAP_STEPS - q.iter().map(|&(_, v)| v).sum::<f64>();
            let big = (0..q.len()).max_by(|&a, &b| q[a].1.abs().total_cmp(&q[b].1.abs())).unwrap_or(0);
            q[big].1 += rest;
        }
        // Zero weights at the ends read nothing.
        while q.len() > 1 && q[q.len() - 1].1 == 0.0 {
            q.pop();
        }
        while q.len() > 1 && q[0].1 == 0.0 {
            q.remove(0);
        }
        taps = taps.max(q[q.len() - 1].0 - q[0].0 + 1);
        raw.push(q);
    }
    let taps = taps.min(hi - lo + 1);
    let pil = filter.round_between;
    let mut out = Taps {
        first: Vec::with_capacity(n),
        taps,
        w: vec![0.0; if pil { 0 } else { n * taps }],
        wi: vec![0; if pil { n * taps } else { 0 }],
        exact: exact.map(|(k, _)| k),
        k: Vec::new(),
        d: Vec::new(),
    };
    for (i, q) in raw.iter().enumerate() {
        // Every output reads `taps` samples inside the grid, its own weights where they fall.
        let first = q[0].0.min(hi + 1 - taps).max(lo);
        out.first.push(first as u32);
        for &(j, v) in q {
            match pil {
                true => out.wi[i * taps + j - first] = v as i32,
                false => out.w[i * taps + j - first] = (v / TAP_STEPS) as f32,
            }
        }
    }
    if out.exact.is_some() {
        out.k = out.w.iter().map(|&w| (w as f64 * TAP_STEPS) as i16).collect();
    }
    if pil {
        out.d = vec![0; n];
        out.k = vec![0; n * taps];
        for i in 0..n {
            if let Some((d, k)) = pil_whole(&out.wi[i * taps..][..taps]) {
                out.d[i] = d;
                out.k[i * taps..][..taps].copy_from_slice(&k[..taps]);
            }
        }
    }
    out
}

/// The largest denominator of PIL's whole weights (`Taps::d`): a sum `Σ k · b` then fits an i16
/// with room for `2S + D` in a u16, and a pair of weights a signed byte each (`pmaddubsw`).
pub(in crate::convert) const WHOLE_MAX: u8 = 127;

/// PIL's weights `wi` (2^-22ths) of one output as whole `k_j / D` (`k_j ≥ 0`, `Σ k_j = D ≤
/// WHOLE_MAX`), where that gives PIL's byte for every input: PIL's `⌊(Σ wi_j b_j + 2^21) / 2^22⌋`
/// is `⌊S/D + 1/2 + E/2^22⌋` with `S = Σ k_j b_j` and `E = Σ (wi_j − 2^22 k_j / D) b_j`. With
/// `|wi_j − 2^22 k_j / D| ≤ 1/2`, `|E| ≤ taps · 255 / 2` moves the value by under `2^-13`; for an
/// odd `D`, `S/D + 1/2` is an odd multiple of `1/(2D)`, at least that far from a whole number, so
/// the result is `⌊(2S + D) / 2D⌋`; for an even `D` only where `E` is 0 (every weight exact: `D`
/// a power of two), where the ties go up as PIL's half does. At 3× the triangle's weights are
/// 1, 2, 3, 2, 1 over 9, at 2.5× 1, 5, 9, 7, 3 over 25.
pub(in crate::convert) fn pil_whole(wi: &[i32]) -> Option<(u8, Vec<i16>)> {
    let unit = PIL_STEPS;
    (1..=WHOLE_MAX).find_map(|d| {
        let k: Vec<i16> = wi.iter().map(|&w| (w as f64 * d as f64 / unit).round() as i16).collect();
        let err = |j: usize| wi[j] as f64 - unit * k[j] as f64 / d as f64;
        let close = (0..wi.len()).all(|j| k[j] >= 0 && err(j).abs() <= 0.5);
        let sum: i32 = k.iter().map(|&k| k as i32).sum();
        let exact = (0..wi.len()).all(|j| err(j) == 0.0);
        (close && sum == d as i32 && (d % 2 == 1 || exact)).then_some((d, k))
    })
}

/// One output's whole weights: `D`, the `k_j` and the remainders `n_j` (`pil_tied`).
pub(in crate::convert) type Tied = (u8, Vec<i16>, Vec<i8>);

/// PIL's weights `wi` of one output that `pil_whole` does not take, as whole `k_j / D` with an
/// even `D` that is not exact, and the remainders `n_j = D · wi_j − 2^22 k_j` (`|n_j| ≤ D / 2`):
/// then `Σ wi_j b_j = (2^22 S + N) / D` with `N = Σ n_j b_j`, and PIL's byte is `⌊(2S + D) / 2D +
/// N / (2^22 D)⌋`. The second term is under `taps · 255 / 2^23`, less than the `1/D` that `t = 2S
/// + D` (even) keeps from a whole multiple of `2D` unless it is one; there the byte is `t / 2D`,
/// less one where `N < 0`. So the byte is `⌊(t − 2[N < 0]) / 2D⌋` for every input (off a
/// multiple, the even `t − 2` has `t`'s quotient): the kernels take two from `t` where `N` is
/// negative instead of testing the quotient for a tie. Two, not one: `t − 2` is again some
/// `2S + D` (or below `D`, quotient 0), which `whole::divider` divides exactly; an odd `t − 1`
/// it need not. The 1.25× triangle (900p chroma → 640) is 7, 5 over 12 on every
/// other pair of outputs, with `n` −4, 4: those outputs are whole only this way. `N` is summed in
/// an i16 (`Σ |n_j| · 255` fits).
pub(in crate::convert) fn pil_tied(wi: &[i32]) -> Option<Tied> {
    let unit = PIL_STEPS as i64;
    (2..=WHOLE_MAX).step_by(2).find_map(|d| {
        let k: Vec<i16> = wi.iter().map(|&w| (w as f64 * d as f64 / PIL_STEPS).round() as i16).collect();
        let n: Vec<i64> = wi.iter().zip(&k).map(|(&w, &k)| d as i64 * w as i64 - unit * k as i64).collect();
        let close = k.iter().zip(&n).all(|(&k, &n)| k >= 0 && 2 * n.abs() <= d as i64);
        let sum: i32 = k.iter().map(|&k| k as i32).sum();
        let fits = n.iter().map(|n| n.abs()).sum::<i64>() * 255 <= i16::MAX as i64;
        (close && sum == d as i32 && fits).then(|| (d, k, n.iter().map(|&n| n as i8).collect()))
    })
}

/// Each output's whole weights (`Tied`) on axis `t`: `Taps::d` and `k` where PIL's weights have
/// them (`pil_whole`, no remainders needed), else the tied ones where those exist (`pil_tied`).
pub(in crate::convert) fn whole_outputs(t: &Taps) -> Vec<Option<Tied>> {
    let taps = t.taps;
    (0..t.d.len())
        .map(|x| match t.d[x] {
            0 => pil_tied(&t.wi[x * taps..][..taps]),
            d => Some((d, t.k[x * taps..][..taps].to_vec(), vec![0; taps])),
        })
        .collect()
}

/// A multi-tap filter's plan: per axis (luma, chroma) the columns' and rows' taps.
#[derive(Debug, Clone)]
pub(in crate::convert) struct MultiTap {
    pub(in crate::convert) cols: [Taps; 2],
    pub(in crate::convert) rows: [Taps; 2],
    /// Per component: the byte of each output's first tap in a source row.
    pub(in crate::convert) base: Vec<Vec<u32>>,
    pub(in crate::convert) round_between: bool,
    /// The components filtered together by the horizontal pass's vector blocks.
    pub(in crate::convert) groups: Vec<TapGroup>,
    /// Per plane, the bytes of one row (what the horizontal pass may read of a row).
    pub(in crate::convert) row_len: [usize; 3],
    /// Per component: the output uses it, so the vertical pass blends it (an RGBA source's alpha
    /// into RGB is filtered horizontally with its pixel's other bytes, which costs nothing with
    /// the blocks' lanes, and then dropped: 1080p RGBA → 640 RGB area 0.43 → 0.41 ms, triangle
    /// 0.70 → 0.64).
    pub(in crate::convert) blended: [bool; 4],
    /// Per axis (luma, chroma): what the vertical pass multiplies its sums by, `2^14 / K` for
    /// each of the columns and rows that are an exact box (`Taps::exact`), else 1.
    pub(in crate::convert) scale: [f32; 2],
    /// Per axis and output row, PIL's whole rows (`Taps::d`, or tied: `row_ties`): the
    /// multiplier and shift of `whole::divider` for that row's `D`, (0, 0) where the row is
    /// neither or `D` has none.
    pub(in crate::convert) row_div: [Vec<(u16, u16)>; 2],
    /// Per axis and output row, the rows whole only with ties (`pil_tied`: 900p NV12's chroma
    /// rows at 1.25×, every other one).
    pub(in crate::convert) row_ties: [Vec<Option<Tied>>; 2],
    /// PIL's filters blended down before across (`multitap::pil8_down_first`): set by the
    /// converter for sources whose every row is packed before it is filtered across.
    pub(in crate::convert) down_first: bool,
    /// Blended down first, the rows asked for ahead: of the output row this many on
    /// (`multitap::ahead::DOWN_AHEAD`, `NV12_DOWN_ASKS`), and how many of its new rows the
    /// finish that reads the bytes asks for (`FINISH_ASKED_ROWS`).
    pub(in crate::convert) down_asks: (usize, usize),
    /// The luma and chroma rows take the same source rows by the same weights (4:2:2, 4:4:4).
    pub(in crate::convert) same_rows: bool,
}

impl MultiTap {
    /// The plan of `cols` and `rows` (luma, chroma) for `comps`, whose planes' rows hold
    /// `row_len[plane]` bytes.
    pub(in crate::convert) fn new(
        cols: [Taps; 2],
        rows: [Taps; 2],
        comps: &[Comp],
        row_len: [usize; 3],
        round_between: bool,
    ) -> MultiTap {
        let base: Vec<Vec<u32>> = comps
            .iter()
            .map(|comp| {
                let c = &cols[usize::from(comp.chroma)];
                c.first.iter().map(|&s| (comp.offset + comp.step * s as usize) as u32).collect()
            })
            .collect();
        let exact = [0, 1].map(|a| rows[a].exact.filter(|_| cols[a].exact.is_some()));
        let groups = tap_groups(comps, &cols, &base, row_len, round_between, exact);
        let scale = [0, 1].map(|a| {
            let unit = |t: &Taps| t.exact.map_or(1.0, |k| TAP_STEPS / k as f64);
            (unit(&cols[a]) * unit(&rows[a])) as f32
        });
        // PIL's rows with whole weights, tied or not: the divider of each output row's `D`
        // ((0, 0): none).
        let row_ties: [Vec<Option<Tied>>; 2] = [0, 1].map(|a| {
            let t = &rows[a];
            whole_outputs(t).into_iter().zip(&t.d).map(|(w, &d)| w.filter(|_| d == 0)).collect()
        });
        let row_div = [0, 1].map(|a| {
            let mut known = std::collections::HashMap::new();
            let mut div = |d: u8| *known.entry(d).or_insert_with(|| super::whole::divider(d as u16));
            let tied = |y: usize| row_ties[a][y].as_ref().map_or(0, |t| t.0);
            let ds = rows[a].d.iter().enumerate().map(|(y, &d)| if d == 0 { tied(y) } else { d });
            ds.map(|d| if d == 0 { (0, 0) } else { div(d).unwrap_or((0, 0)) }).collect()
        });
        let same_rows =
            rows[0].taps == rows[1].taps && rows[0].first == rows[1].first && rows[0].wi == rows[1].wi;
        MultiTap {
            cols,
            rows,
            base,
            round_between,
            groups,
            row_len,
            blended: [true; 4],
            scale,
            row_div,
            row_ties,
            down_first: false,
            down_asks: (0, 0),
            same_rows,
        }
    }

    /// Whether every output row on both axes has whole weights that are not tied and a divider
    /// (`whole_row`'s `WholeRow::untied`): the rows the byte kernels blend down by themselves,
    /// none left to the i32 loops.
    pub(in crate::convert) fn rows_whole(&self) -> bool {
        (0..2).all(|a| {
            let rows = &self.rows[a];
            rows.d.iter().zip(&self.row_div[a]).all(|(&d, &div)| d != 0 && div != (0, 0))
        })
    }

    /// PIL's whole weights of output row `cy` on `axis` (tied ones too: `WholeRow::n`); none
    /// where the row is neither or `D` has no divider (`row_div`).
    /// (Inlined: called, its result came back through memory and the row driver's 32-byte copy
    /// of it stalled on the call's narrower stores, a tenth of the driver's time in 1080p NV12
    /// `bilinear-antialias`.)
    #[inline(always)]
    pub(in crate::convert) fn whole_row(&self, axis: usize, cy: usize) -> Option<WholeRow<'_>> {
        let rows = &self.rows[axis];
        match (rows.d[cy], self.row_div[axis][cy], &self.row_ties[axis][cy]) {
            (_, (0, 0), _) | (0, _, None) => None,
            (0, div, Some((d, k, n))) => Some(WholeRow { k, d: *d, div, n }),
            (d, div, _) => Some(WholeRow { k: &rows.k[cy * rows.taps..][..rows.taps], d, div, n: &[] }),
        }
    }
}

/// One output row's whole weights for the vertical passes (`MultiTap::whole_row`): `k / D`,
/// `D`'s divider (`whole::divider`) and, for a row whole only with ties (`pil_tied`), the
/// remainders `n`. The passes straight over the frame's rows (`down_bytes`, PIL's filters
/// blended down first) take no ties: such a row goes to PIL's sums there.
#[derive(Debug, Clone, Copy)]
pub(in crate::convert) struct WholeRow<'a> {
    pub(in crate::convert) k: &'a [i16],
    pub(in crate::convert) d: u8,
    pub(in crate::convert) div: (u16, u16),
    /// Empty where the row is whole without ties.
    pub(in crate::convert) n: &'a [i8],
}

impl WholeRow<'_> {
    /// Whole without ties: what the passes that take no remainders need.
    pub(in crate::convert) fn untied(self) -> Option<Self> {
        self.n.is_empty().then_some(self)
    }
}
