//! Where the bilinear and nearest rows' source lines come from: the planes the kernels read
//! straight from the frame (`direct_rows`, which ask for the next rows' lines among their loads),
//! the other planes' lines asked for in parts between the stages (`Ahead`), and each row's pages
//! and last lines (`prefetch_row_pages`; the multi-tap filters' pages: `prefetch_multi_pages`).

use super::super::hint::{narrow_rows_asked, prefetch, prefetch_pages, prefetch_span, PAGE};
use super::super::multitap::ahead_rows_by;
use super::super::plan::MultiTap;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
use super::super::plan::{Group, SampleRow};
use super::super::{Converter, SrcImage};

/// A plane's two source rows (from the window start), the vertical weight of the second,
/// whether its groups are read by shuffles (else by gathers), and how far past the first lie the
/// rows output row `cy + PREFETCH_AHEAD` reads that the row before it did not (`Axis::ahead`).
/// A named struct rather than a tuple: as `Option<tuple>` the fields were laid out and copied
/// through unaligned stack slots, and the row loop stalled on the store forwarding (5 % of a
/// hot 1080p NV12 bilinear frame in its profile).
#[derive(Clone, Copy)]
pub(super) struct DirectRows<'a> {
    pub(super) r0: &'a [u8],
    pub(super) r1: &'a [u8],
    pub(super) next: [usize; 2],
    pub(super) wy: f32,
    #[cfg_attr(target_arch = "aarch64", allow(dead_code))]
    pub(super) shuffled: bool,
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
impl<'a> DirectRows<'a> {
    /// The same rows for a second group of the plane (YUY2's chroma beside its luma): the first
    /// group's blocks ask for the lines both read, so this one asks for none. Intel Xeon, engine,
    /// uint8, 1080p YUY2, one binary both ways, three rounds (asked twice → once, ms): AVX2 level
    /// hot 0.216 → 0.211–0.213, 8 rotating frames 0.234–0.238 → 0.224–0.225; AVX-512 hot 0.134 →
    /// 0.133, 8 frames 0.144–0.145 → 0.143, 32 frames 0.151–0.156 → 0.143–0.170 (in a first
    /// build, switched inside the paired kernel, hot 0.137–0.138 → 0.131–0.132, 8 frames 0.141 →
    /// 0.134–0.135).
    pub(super) fn asked_already(self) -> Self {
        Self { next: [0; 2], ..self }
    }

    /// These rows for a group of `plane`, asking for their lines only where no group before it
    /// on the plane did (`asked`: a bit per plane, set here).
    #[inline(always)]
    pub(super) fn first_asks(self, plane: usize, asked: &mut u8) -> Self {
        let before = *asked & (1 << plane) != 0;
        *asked |= 1 << plane;
        if before {
            self.asked_already()
        } else {
            self
        }
    }

    /// The rows as group `g`'s kernels take them, with the level's `plan` and the group's weight
    /// pairs `wq`, `single` where its taps are on samples.
    pub(super) fn row<P>(&self, g: &'a Group, plan: &'a P, wq: &'a [u32], single: bool) -> SampleRow<'a, P> {
        SampleRow { r0: self.r0, r1: self.r1, wy: self.wy, g, plan, wq, single, ahead: self.next }
    }
}

/// Output rows ahead whose source rows are asked for while this one is converted. Measured on 32
/// rotating 1080p frames (uint8, 640 letterbox): none 0.27 / 0.20 / 0.60 ms (NV12 / YUY2 / RGBA),
/// 1 row 0.150 / 0.150 / 0.341, 2 rows 0.154 / 0.151 / 0.332, 4 rows 0.162 / 0.148 / 0.343,
/// 8 rows 0.155 / 0.156 / 0.357.
pub(super) const PREFETCH_AHEAD: usize = 2;

/// How far past a row's window the kernels' loads reach at most: a window of 64 or 128 bytes
/// loaded at the row's last taps (`plan::Permute::reach`, `plan::Shuffle::reach`).
const END_REACH: usize = 128;

/// Output rows ahead whose source rows' pages and last lines are asked for (`prefetch_row_pages`).
/// The kernels ask for each block's line `PREFETCH_AHEAD` rows on among their loads, but the last
/// block's window runs on past the line it asks for, and the row's tail asks for nothing: on
/// Zen 4 every row of a cold frame ended in a wait for its last line (bilinear's camera rows at
/// 32 frames 1.4× the hot frame). Engine, uint8, AVX-512, Zen 4, best of 1000, the same binary
/// with a switch, three alternations (ms), none / 6 / 12 rows on: 32 frames NV12 0.221–0.226 /
/// 0.186–0.203 / 0.187–0.238, YUY2 0.220–0.227 / 0.182–0.186 / 0.185–0.195, RGBA 0.239–0.246 /
/// 0.233–0.246 / 0.224–0.233; 8 frames and hot level. (Two rows on, with the kernels' asks, was
/// less steady: NV12 0.187–0.237.)
pub(super) const ROW_PAGES_AHEAD: usize = 12;

/// Output rows ahead whose new source rows' pages PIL's filters over an RGB source ask for
/// (`prefetch_multi_pages`). Engine, uint8, AVX-512, Zen 4, 8 rotating 1080p frames, each
/// distance in turn frame by frame in one run (best / first quartile of 800, ms), none / 4 / 8
/// / 16: RGBA `bilinear-antialias` 0.487 / 0.437 / 0.435 / 0.439 (0.543 / 0.465 / 0.461 /
/// 0.468). The other multi-tap rows measured slower with them (two binaries alternated, 32
/// frames: YUY2 `area` 0.288–0.341 → 0.306–0.350, NV12 0.230–0.288 → 0.252–0.313, RGBA
/// 0.422–0.457 → 0.444–0.446; YUY2 `bilinear-antialias` 0.371–0.379 → 0.377–0.404): their
/// kernels' own asks (`hint::prefetch_window_once`, the trickle) already take the walks where
/// they cost less, is the likely reason (not measured further). Four rows on, not eight: on the
/// Intel Xeon (the thirty-fourth session, the same kind of run, three rounds, none / 2 / 4 / 8 /
/// 16) RGBA `bilinear-antialias` on 8 frames 0.431–0.440 / 0.433–0.446 / 0.423–0.430 /
/// 0.433–0.456 / 0.435–0.451, on 32 frames 0.717–0.731 / 0.714–0.740 / 0.703–0.728 /
/// 0.773–0.798 / 0.757–0.765, 1600×900 level; on Zen 4 four and eight were level (above).
const MULTI_PAGES_AHEAD: usize = 4;

/// A camera frame arrives cold: its rows are in DRAM, and a downscale jumps between them, so the
/// hardware's stream prefetcher restarts on every row. The source rows that output row `cy +
/// PREFETCH_AHEAD` will read (each plane's window, both taps) are requested while row `cy` is
/// converted, one line at a time, in `pieces` parts (`Ahead`); a chroma row shared with the
/// output row before it was requested then. This call asks for part `piece`: the same share of
/// every row's lines, of the planes not in `skip` (those whose kernels ask for their lines
/// themselves, `direct_rows`).
#[inline(always)]
fn prefetch_ahead(c: &Converter, src: &SrcImage<'_>, cy: usize, piece: usize, pieces: usize, skip: u8) {
    let ahead = cy + PREFETCH_AHEAD;
    if ahead >= c.content.rect.height {
        return;
    }
    for p in (0..c.format.num_planes()).filter(|&p| skip & (1 << p) == 0) {
        let (lo, hi) = c.plane_window[p];
        if hi <= lo {
            continue;
        }
        let axis = if c.plane_chroma_rows[p] { &c.rows_chroma } else { &c.rows_luma };
        let (i0, i1, w) = (axis.i0[ahead], axis.i1[ahead], axis.w[ahead]);
        if axis.i0[ahead - 1] == i0 && axis.i1[ahead - 1] == i1 {
            continue;
        }
        let (bytes, stride) = src.planes[p];
        let second = (w != 0.0 && i1 != i0).then_some(i1);
        for r in std::iter::once(i0).chain(second) {
            let start = (r * stride + lo).min(bytes.len());
            let end = (r * stride + hi).min(bytes.len());
            let lines = (end - start).div_ceil(64);
            let mut at = start + lines * piece / pieces * 64;
            let end = (start + lines * (piece + 1) / pieces * 64).min(end);
            while at < end {
                prefetch(bytes.as_ptr().wrapping_add(at));
                at += 64;
            }
        }
    }
}

/// A line in each 4 KiB page of the window of each source row output row `on` reads and the row
/// before it does not (`Axis::new_rows`, `hint::prefetch_pages`: each page's walk done here,
/// between the kernels), then the row's last line and the lines past it the kernels' loads
/// reach (`END_REACH`), in every plane (bilinear and nearest; `ROW_PAGES_AHEAD`; a plane whose
/// window fits a page only where `hint::narrow_rows_asked`). The pages
/// added to the last lines, engine, uint8, AVX-512, Zen 4, each in turn frame by frame in one
/// run (best / first quartile of 800, ms): RGBA 8 rotating frames 0.192 → 0.185 (0.217 →
/// 0.205), 32 frames 0.250 → 0.238 (0.295 → 0.264); YUY2 8 frames 0.178 → 0.172 (0.183 →
/// 0.176), 32 frames 0.191 → 0.187 (0.219 → 0.208); NV12 level, and every hot frame within 1 %.
#[inline(always)]
pub(super) fn prefetch_row_pages(c: &Converter, src: &SrcImage<'_>, on: usize) {
    let narrow = narrow_rows_asked();
    for p in 0..c.format.num_planes() {
        let (lo, hi) = c.plane_window[p];
        let (bytes, stride) = src.planes[p];
        if hi <= lo || bytes.is_empty() || (!narrow && hi - lo <= PAGE) {
            continue;
        }
        let axis = if c.plane_chroma_rows[p] { &c.rows_chroma } else { &c.rows_luma };
        for r in axis.new_rows(on).into_iter().flatten() {
            let last = (r * stride + hi - 1).min(bytes.len() - 1);
            prefetch_pages(bytes.as_ptr(), (r * stride + lo).min(last), last);
            prefetch_span(bytes.as_ptr(), last, (last + END_REACH).min(bytes.len() - 1));
        }
    }
}

/// `prefetch_row_pages` for PIL's filters over an RGB source (the caller's choice): a line in
/// each 4 KiB page of the source rows output row `cy + MULTI_PAGES_AHEAD` reads and the row
/// before it does not (`multitap::ahead_rows_by`), once per plane. Their blocks ask for the lines themselves
/// (`multitap::ahead`), but the pages' walks then came inside the horizontal blocks: frames on
/// 2 MiB pages took RGBA `bilinear-antialias` a fifth less time (`hint::prefetch_pages`).
#[inline(always)]
pub(super) fn prefetch_multi_pages(c: &Converter, m: &MultiTap, src: &SrcImage<'_>, cy: usize) {
    let mut planes = 0u8;
    for g in &m.groups {
        let lead = c.comps[g.members[0]];
        if planes & (1 << lead.plane) != 0 {
            continue;
        }
        planes |= 1 << lead.plane;
        let (bytes, stride) = src.planes[lead.plane];
        let span = ahead_rows_by(&m.rows[usize::from(lead.chroma)], cy, MULTI_PAGES_AHEAD, stride);
        prefetch_pages(bytes.as_ptr(), span.start.min(bytes.len()), span.end.min(bytes.len()));
    }
}

/// Plane `p`'s two source rows for output row `cy` where the level's kernels read them straight
/// (from the window's first byte, with the vertical weight and whether the plane's shuffle plans
/// fit): with AVX2, where the taps are dense (shuffle plan) or sparse (a quarter of the window or
/// less) — by byte shuffles, or a dword gather per tap bringing every component of a pixel or U
/// and V together, blended at output width; with NEON, by its shuffle plans. `None`: the rows are
/// blended first.
///
/// The kernels that read a row straight ask for each block's lines again at the distances
/// (`DirectRows`): the next rows' lines come a few at a time among the loads. In parts between
/// the kernels (`Ahead`) they still held the line-fill buffers on the Intel Xeon of
/// docs/benchmark-log.md; engine, uint8, AVX-512, NV12 / YUY2 / RGBA, in parts → among the loads:
/// hot 0.253 → 0.227 / 0.227 → 0.218 / 0.277 → 0.257 ms, 8 rotating frames 0.253 → 0.237 /
/// 0.229 → 0.221 / 0.293 → 0.258, 32 rotating 0.296 → 0.283 / 0.288 → 0.269 / 0.453 → 0.378.
#[inline(always)]
pub(super) fn direct_rows<'a>(
    c: &Converter,
    src: &SrcImage<'a>,
    p: usize,
    cy: usize,
) -> Option<DirectRows<'a>> {
    let (lo, hi) = c.plane_window[p];
    if hi <= lo {
        return None;
    }
    let axis = if c.plane_chroma_rows[p] { &c.rows_chroma } else { &c.rows_luma };
    let (bytes, stride) = src.planes[p];
    let (s0, s1) = (axis.i0[cy] * stride, axis.i1[cy] * stride);
    let w = axis.w[cy];
    // Dword gathers read up to 3 bytes past a plane's last tap, shuffles up to 15: only where
    // the rows have them.
    let end = s0.max(s1) + lo;
    let shuffled = c.plane_shuffled[p].is_some_and(|reach| end + reach <= bytes.len());
    // NEON has no gathers: only the shuffle plans read the frame straight.
    #[cfg(target_arch = "aarch64")]
    let direct_ok = c.neon() && shuffled;
    #[cfg(not(target_arch = "aarch64"))]
    let direct_ok =
        c.avx2() && (shuffled || (end + (hi - lo) + 3 <= bytes.len() && (w == 0.0 || c.plane_downscaled[p])));
    let next = axis.ahead(cy, PREFETCH_AHEAD, stride, bytes.len());
    direct_ok.then(|| DirectRows { r0: &bytes[s0 + lo..], r1: &bytes[s1 + lo..], next, wy: w, shuffled })
}

/// The next output row's source lines of the planes blended first (`direct_rows` gives the
/// others to kernels that ask for their own) asked for in parts, one before each group's
/// sampling and the last before the finish, rather than all at once before the row. A request
/// that misses the first-level cache holds a line-fill buffer until its line arrives; a whole
/// row's worth at once (up to 240 lines for RGBA) cost the kernels behind it on an Intel Xeon
/// (AVX-512 FP16 kind, 2 MiB L2 a core, frames mostly in its L3). Engine, uint8, NV12 / YUY2 / RGBA, two runs each:
/// hot frame, one burst (T0) 0.204 / 0.178–0.180 / 0.249–0.251 ms, in parts (T0) 0.190–0.193 /
/// 0.166 / 0.229–0.231, in parts (T1, `prefetch`) 0.187–0.191 / 0.163–0.169 / 0.215–0.218; 32
/// rotating frames 0.274–0.300 / 0.265–0.274 / 0.418–0.428, 0.242–0.248 / 0.235–0.236 /
/// 0.393–0.397, 0.240–0.247 / 0.218–0.220 / 0.380–0.383 (no prefetch: 0.357 / 0.289 / 0.442).
pub(super) struct Ahead<'a> {
    pub(super) c: &'a Converter,
    pub(super) src: &'a SrcImage<'a>,
    pub(super) cy: usize,
    pub(super) next: usize,
    pub(super) pieces: usize,
    /// Planes whose kernels ask for their lines themselves (bit `p`).
    pub(super) skip: u8,
}

impl Ahead<'_> {
    /// The next part, if any is left.
    #[inline(always)]
    pub(super) fn piece(&mut self) {
        if self.next < self.pieces {
            prefetch_ahead(self.c, self.src, self.cy, self.next, self.pieces, self.skip);
            self.next += 1;
        }
    }

    /// Every part not yet asked for.
    #[inline(always)]
    pub(super) fn rest(&mut self) {
        while self.next < self.pieces {
            self.piece();
        }
    }
}
