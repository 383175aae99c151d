//! Camera frame → model tensor on the CPU: colour (rgb, bgr, gray, rgba from any supported pixel
//! format, YUV matrices from the input's colorimetry), geometry (stretch, letterbox, centre crop,
//! an optional source region; bilinear or nearest), layout (hwc, chw), element type, per-channel
//! mean/std and quantization, written straight into the destination's bytes at its row stride.
//!
//! The geometry is planned once (`Converter::new`: coordinate tables, shuffle controls, scratch
//! rows, worker threads) so a frame allocates nothing. Per destination row each colour component is
//! sampled at output width (bilinear: two taps on each of two source rows), straight from the
//! frame's bytes with AVX2 (byte shuffles where the taps are dense, see `Shuffle`; gathers where
//! not) or NEON (table lookups through the same shuffle plans), or from the rows blended
//! vertically into f32 first (baseline). The samples are then converted to RGB in f32, normalized
//! with one scale and bias per channel and stored as the output type, in one fused pass for uint8,
//! int8 and float32.

#[cfg(target_arch = "x86_64")]
mod avx512;
mod kernels;
#[cfg(target_arch = "aarch64")]
mod neon;
mod workers;

use crate::dtype::DType;
use crate::format::{PixelFormat, PixelLayout};
use crate::image::MAX_IMAGE_SIDE;
use crate::preprocess::{
    letterbox_rect, Colorimetry, ContentRegion, FitMode, Interpolation, LetterboxPlacement, Region,
};
use crate::{Error, Result};
use std::ops::Range;
use std::sync::Mutex;

/// The channels a model takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Colorspace {
    Rgb,
    Bgr,
    Gray,
    Rgba,
}

impl Colorspace {
    pub fn channels(self) -> usize {
        match self {
            Colorspace::Gray => 1,
            Colorspace::Rgba => 4,
            _ => 3,
        }
    }
}

/// Where the tensor's bytes go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DstLayout {
    pub width: usize,
    pub height: usize,
    pub colorspace: Colorspace,
    /// Planar `[C, H, W]` rather than interleaved `[H, W, C]`.
    pub chw: bool,
    pub dtype: DType,
    /// Bytes from one row to the next (of one plane for chw).
    pub row_stride: usize,
    /// Bytes from one channel plane to the next (chw only).
    pub plane_stride: usize,
}

impl DstLayout {
    /// Dense rows: the layout other/tensors consumers assume. Strides too large for usize
    /// saturate at `usize::MAX`, which `Converter::new` refuses.
    pub fn dense(width: usize, height: usize, colorspace: Colorspace, chw: bool, dtype: DType) -> Self {
        let pixel = if chw { dtype.size() } else { colorspace.channels() * dtype.size() };
        let row_stride = width.saturating_mul(pixel);
        DstLayout {
            width,
            height,
            colorspace,
            chw,
            dtype,
            row_stride,
            plane_stride: row_stride.saturating_mul(height),
        }
    }

    /// Bytes the layout spans, or `None` where that count overflows usize.
    pub fn checked_bytes(&self) -> Option<usize> {
        let rows = self.row_stride.checked_mul(self.height)?;
        if self.chw {
            self.plane_stride.checked_mul(self.colorspace.channels() - 1)?.checked_add(rows)
        } else {
            Some(rows)
        }
    }

    /// Bytes the layout spans; `usize::MAX` where the count overflows (no buffer is that long).
    pub fn bytes(&self) -> usize {
        self.checked_bytes().unwrap_or(usize::MAX)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ConvertSpec {
    pub fit: FitMode,
    pub placement: LetterboxPlacement,
    pub interpolation: Interpolation,
    /// The part of the source frame to use (whole frame when `None`).
    pub source_region: Option<Region>,
    /// How the source's YUV codes map to RGB (ignored for RGB and gray sources).
    pub colorimetry: Colorimetry,
    /// Per-channel mean and std on values scaled to 0..1: `(v / 255 - mean) / std`. Applied to
    /// float outputs and quantized outputs; identity (0, 1) leaves 8-bit outputs raw.
    pub mean: [f32; 3],
    pub std: [f32; 3],
    /// `(scale, zero_point)` of an int8/uint8 model input: `q = round(x / scale) + zero_point`
    /// with `x` the normalized value, rounded to nearest with ties to even (as every integer
    /// output is) and saturated to the type.
    pub quantization: Option<(f32, i32)>,
    /// Letterbox padding as RGBA bytes (a raw pixel, normalized like the picture).
    pub fill: [u8; 4],
}

impl Default for ConvertSpec {
    fn default() -> Self {
        ConvertSpec {
            fit: FitMode::Letterbox,
            placement: LetterboxPlacement::Center,
            interpolation: Interpolation::Bilinear,
            source_region: None,
            colorimetry: Colorimetry::default(),
            mean: [0.0; 3],
            std: [1.0; 3],
            quantization: None,
            fill: [114, 114, 114, 255],
        }
    }
}

/// A source frame: each plane's bytes (starting at the plane) and row stride, in the format's plane
/// order. Unused planes are empty.
#[derive(Debug, Clone, Copy)]
pub struct SrcImage<'a> {
    pub format: PixelFormat,
    pub width: usize,
    pub height: usize,
    pub planes: [(&'a [u8], usize); 3],
}

/// One colour component of the source: which plane, where in a granule, and its resolution.
#[derive(Debug, Clone, Copy)]
struct Comp {
    plane: usize,
    /// Byte offset of the component in its granule, and bytes from one granule to the next.
    offset: usize,
    step: usize,
    chroma: bool,
}

/// Components gathered together: `members` are (component index, byte offset from the base), the
/// taps are the base's.
#[derive(Debug, Clone)]
// The plan is made on every target; only the x86_64 kernels read all of it.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
struct Group {
    plane: usize,
    chroma: bool,
    members: Vec<(usize, usize)>,
    i0: Vec<u32>,
    i1: Vec<u32>,
    /// The largest tap: a dword there must be inside the row.
    max: u32,
    /// Where the taps are dense enough, the byte shuffles that replace the gathers.
    shuffle: Option<Shuffle>,
    /// ... and the AVX-512 byte permutes.
    permute: Option<Permute>,
}

/// A vector control aligned to its width: control loads that straddle two cache lines cost ~10 %
/// of a whole conversion here (1920×1080 → 640×640: YUY2 float32 0.19 ms against 0.173, NV12
/// uint8 0.165–0.175 against 0.150), and whether they did depended on where the heap happened to
/// put the plan (the engine example was lucky, the element was not).
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
struct Aligned64<T>(T);

#[derive(Debug, Clone, Copy)]
#[repr(C, align(32))]
struct Aligned32<T>(T);

// The kernels load a control from the element's address: it must be the bytes, at their width.
const _: () = assert!(size_of::<Aligned64<[u8; 64]>>() == 64 && align_of::<Aligned64<[u8; 64]>>() == 64);
const _: () = assert!(size_of::<Aligned32<[u8; 32]>>() == 32 && align_of::<Aligned32<[u8; 32]>>() == 32);

/// A group's taps as byte shuffles. Each block of eight outputs reads its source bytes as 16-byte
/// windows, one per 128-bit lane: two windows of four outputs each, or (`quarters`, for sparser
/// taps such as YUY2's) four windows of two outputs, the lanes of two vectors whose shuffles are
/// OR-ed. One `pshufb` per tap and member then moves every output's byte into a zero-extended
/// dword. Gathers were most of an NV12 frame's time (measured: the pair gathers and luma gathers
/// ~40 % of 1080p → 640 letterbox on one core); a shuffle (two with `quarters`) does eight taps
/// in single-cycle instructions.
#[derive(Debug, Clone)]
// The plan is made on every target; only the x86_64 kernels read all of it.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
struct Shuffle {
    quarters: bool,
    /// Per block, the windows' first bytes (two used without `quarters`).
    bases: Vec<[u32; 4]>,
    /// Per block and member (members in order): tap 0 (`i0`) alone as dwords (for taps on
    /// samples), then taps 0 and 1 as the two words of each dword (for `pmaddwd` with the weight
    /// pair in 256ths: the horizontal blend in one exact integer instruction); each of them once per
    /// vector of windows (twice with `quarters`).
    controls: Vec<Aligned32<[u8; 32]>>,
    /// Bytes from the row's window start that every load stays below.
    reach: usize,
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

/// Weights `w` as `(1 - w, w)` in 256ths, the two i16 halves of a u32 (their sum is exactly 256).
fn weight_pairs(w: &[f32]) -> Vec<u32> {
    let one = WEIGHT_STEPS as u32;
    w.iter()
        .map(|&w| {
            let b = (w * WEIGHT_STEPS as f32).clamp(0.0, WEIGHT_STEPS as f32) as u32;
            (one - b) | (b << 16)
        })
        .collect()
}

/// The first byte of the window that holds both taps of outputs `outs` and `top` bytes past the
/// last (the members' offsets), or `None` where they span `window` bytes or more.
fn window_start(i0: &[u32], i1: &[u32], outs: Range<usize>, top: u32, window: u32) -> Option<u32> {
    let taps = || i0[outs.clone()].iter().chain(&i1[outs.clone()]).copied();
    let first = taps().min()?;
    (taps().max()? + top - first < window).then_some(first)
}

/// Shuffle controls for blocks of eight outputs whose taps (plus member offsets) fit 16-byte
/// windows of four outputs, else of two; `None` where even two do not (a 6× downscale of YUY2,
/// four-byte pixels at 4×), which keep the gathers.
fn shuffle_plan(i0: &[u32], i1: &[u32], members: &[(usize, usize)]) -> Option<Shuffle> {
    shuffle_windows(i0, i1, members, false).or_else(|| shuffle_windows(i0, i1, members, true))
}

fn shuffle_windows(i0: &[u32], i1: &[u32], members: &[(usize, usize)], quarters: bool) -> Option<Shuffle> {
    let blocks = i0.len().min(i1.len()) / 8;
    if blocks == 0 {
        return None;
    }
    let (windows, per) = if quarters { (4, 2) } else { (2, 4) };
    let top = members.iter().map(|&(_, shift)| shift as u32).max().unwrap_or(0);
    let mut bases = Vec::with_capacity(blocks);
    let mut controls = Vec::with_capacity(blocks * members.len() * windows);
    let mut reach = 0;
    for b in 0..blocks {
        let mut base = [0u32; 4];
        for (w, first) in base.iter_mut().enumerate().take(windows) {
            *first = window_start(i0, i1, 8 * b + per * w..8 * b + per * (w + 1), top, 16)?;
            reach = reach.max(*first as usize + 16);
        }
        // Output j is in window j / per; with quarters, windows 0 and 2 are the lanes of the
        // first vector, 1 and 3 of the second.
        let part = |j: usize| if quarters { (j / per) % 2 } else { 0 };
        for &(_, shift) in members {
            let at = |taps: &[u32], j: usize| (taps[8 * b + j] + shift as u32 - base[j / per]) as u8;
            for two in [false, true] {
                for p in 0..windows / 2 {
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
    Some(Shuffle { quarters, bases, controls, reach })
}

/// A group's taps for the AVX-512 kernel: blocks of sixteen outputs whose bytes (every tap of
/// every member) lie in one 64-byte window (`narrow`: one load per source row) or else one
/// 128-byte window (two loads); one `vpermt2b` per member then puts each output's byte (or its two
/// taps' bytes, as the words for `pmaddwd`) in a dword. The other bytes of a dword are zero: in a
/// narrow window they index the second table, a zero register; in a wide one a mask clears them.
/// Sixteen outputs per instruction where the AVX2 shuffles do eight (measured: NV12 → uint8
/// 0.207 → 0.193 ms, YUY2 0.201 → 0.160; narrow windows, no mask and one load: 0.193 → 0.177 ms,
/// float32 0.230 → 0.217).
#[derive(Debug, Clone)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
struct Permute {
    narrow: bool,
    /// Per block, the window's first byte.
    bases: Vec<u32>,
    /// Per block and member (members in order): tap 0 alone (byte 0 of each dword), then taps 0
    /// and 1 (bytes 0 and 2).
    controls: Vec<Aligned64<[u8; 64]>>,
    /// Bytes from the row's window start that every load stays below.
    reach: usize,
}

/// The `Permute` plan of a group: narrow windows where every block fits one, else wide; `None`
/// where a block's bytes span more than 128 (RGBA at 3×: 16 pixels every 12 bytes), which keeps
/// the AVX2 kernels.
fn permute_plan(i0: &[u32], i1: &[u32], members: &[(usize, usize)]) -> Option<Permute> {
    permute_windows(i0, i1, members, 64).or_else(|| permute_windows(i0, i1, members, 128))
}

fn permute_windows(i0: &[u32], i1: &[u32], members: &[(usize, usize)], window: u32) -> Option<Permute> {
    let blocks = i0.len().min(i1.len()) / 16;
    if blocks == 0 {
        return None;
    }
    let narrow = window == 64;
    let top = members.iter().map(|&(_, shift)| shift as u32).max().unwrap_or(0);
    let mut bases = Vec::with_capacity(blocks);
    let mut controls = Vec::with_capacity(blocks * members.len() * 2);
    let mut reach = 0;
    for b in 0..blocks {
        let base = window_start(i0, i1, 16 * b..16 * (b + 1), top, window)?;
        reach = reach.max((base + window) as usize);
        for &(_, shift) in members {
            let at = |taps: &[u32], j: usize| (taps[16 * b + j] + shift as u32 - base) as u8;
            for two in [false, true] {
                // Index 64 is the zero register's first byte (narrow); wide windows mask.
                let mut ctl = [if narrow { 64 } else { 0 }; 64];
                for j in 0..16 {
                    ctl[4 * j] = at(i0, j);
                    if two {
                        ctl[4 * j + 2] = at(i1, j);
                    }
                }
                controls.push(Aligned64(ctl));
            }
        }
        bases.push(base);
    }
    Some(Permute { narrow, bases, controls, reach })
}

/// What the source components are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SrcKind {
    Yuv,
    /// R, G, B (and A when present), in that order in `comps`.
    Rgb {
        alpha: bool,
    },
    Gray,
}

fn components(format: PixelFormat) -> Result<(SrcKind, Vec<Comp>)> {
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
struct Axis {
    i0: Vec<usize>,
    i1: Vec<usize>,
    w: Vec<f32>,
}

/// Pixel-centre mapping of `n` outputs onto source samples `[start, start + len)` of a grid whose
/// samples each cover `div` pixels (chroma: 2), clamped to the grid's samples `[lo, hi]`.
fn axis(
    n: usize,
    src_start: usize,
    src_len: usize,
    div: usize,
    lo: usize,
    hi: usize,
    interp: Interpolation,
) -> Axis {
    let scale = src_len as f64 / n as f64;
    let mut a = Axis { i0: Vec::with_capacity(n), i1: Vec::with_capacity(n), w: Vec::with_capacity(n) };
    for i in 0..n {
        // Position in source pixels, then in this grid's samples (centre-sited).
        let px = src_start as f64 + (i as f64 + 0.5) * scale;
        match interp {
            Interpolation::Nearest => {
                let s = ((px.floor() as usize) / div).clamp(lo, hi);
                a.i0.push(s);
                a.i1.push(s);
                a.w.push(0.0);
            }
            _ => {
                let s = (px / div as f64 - 0.5).clamp(lo as f64, hi as f64);
                let s0 = s.floor() as usize;
                a.i0.push(s0);
                a.i1.push((s0 + 1).min(hi));
                a.w.push(((s - s0 as f64) * WEIGHT_STEPS).round_ties_even() as f32 * WEIGHT_UNIT);
            }
        }
    }
    a
}

/// The vector kernels a converter runs: every level stores the same bytes (the same operations in
/// the same order, one rounding rule: to nearest, ties to even) and the tests run every level the
/// CPU has. Ordered by width within an architecture; a level of another architecture is never
/// detected, so `set_simd` caps it to what this CPU has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Simd {
    /// What the compiler makes of the plain loops (SSE2 on x86_64, NEON on aarch64).
    Baseline,
    /// Explicit NEON kernels (aarch64, where NEON is architectural): sampling by table lookups
    /// through the groups' shuffle plans, and the fused finish for uint8, int8 and float32 (see
    /// `neon`).
    #[cfg(target_arch = "aarch64")]
    Neon,
    /// AVX2 and FMA.
    Avx2,
    /// AVX-512 F, BW, VL and VBMI on top of AVX2 (sixteen-wide sampling and finish).
    Avx512,
}

impl Simd {
    /// The widest level this CPU has, capped by `EDGEFIRST_CONVERT_SIMD` (`baseline`, `avx2`,
    /// `avx512`, `neon`: to compare the kernels, or to rule one out).
    pub fn detect() -> Simd {
        let cap = match std::env::var("EDGEFIRST_CONVERT_SIMD").as_deref() {
            Ok("baseline") => Simd::Baseline,
            #[cfg(target_arch = "aarch64")]
            Ok("neon") => Simd::Neon,
            Ok("avx2") => Simd::Avx2,
            _ => Simd::Avx512,
        };
        Self::cpu().min(cap)
    }

    #[cfg(target_arch = "x86_64")]
    fn cpu() -> Simd {
        if !(std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")) {
            Simd::Baseline
        } else if avx512::detect() {
            Simd::Avx512
        } else {
            Simd::Avx2
        }
    }

    /// Advanced SIMD is part of every AArch64 core (the target enables it): nothing to ask.
    #[cfg(target_arch = "aarch64")]
    fn cpu() -> Simd {
        Simd::Neon
    }

    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    fn cpu() -> Simd {
        Simd::Baseline
    }
}

/// Outputs the level's explicit vector kernels made (see `Converter::kernel_counts`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelCounts {
    /// Component samples read straight from the frame's bytes by a vector sampling kernel (one
    /// per component and content column; columns after the last whole block are not counted).
    pub sampled: u64,
    /// Content pixels coloured, normalized and stored by a fused vector finish loop.
    pub finished: u64,
}

/// Per band: the vertically interpolated plane rows and the per-channel rows of one output row.
struct Scratch {
    vrows: [Vec<f32>; 3],
    comps: [Vec<f32>; 4],
    chans: [Vec<f32>; 4],
    bytes: [Vec<u8>; 4],
    counts: KernelCounts,
}

/// The planned conversion of one source geometry into one destination layout.
// The plan is made on every target; only the x86_64 kernels read all of it.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub struct Converter {
    format: PixelFormat,
    src_w: usize,
    src_h: usize,
    dst: DstLayout,
    content: ContentRegion,
    kind: SrcKind,
    comps: Vec<Comp>,
    /// Per plane: its vertical axis (luma or chroma rows) and the byte window a row needs.
    rows_luma: Axis,
    rows_chroma: Axis,
    plane_window: [(usize, usize); 3],
    plane_chroma_rows: [bool; 3],
    /// Per component: byte indices (relative to its plane's window) of the two taps, and weights.
    taps: Vec<(Vec<u32>, Vec<u32>)>,
    weights_luma: Vec<f32>,
    weights_chroma: Vec<f32>,
    /// The same weights as integer pairs (see `weight_pairs` and `Shuffle`).
    wq_luma: Vec<u32>,
    wq_chroma: Vec<u32>,
    /// Every horizontal tap falls on a sample (all weights 0): one gather instead of two.
    luma_on_samples: bool,
    chroma_on_samples: bool,
    /// Per component: its largest tap index (bounds for the direct byte gathers).
    tap_max: Vec<u32>,
    /// Components gathered together from a plane's bytes (see `Group`).
    groups: Vec<Group>,
    /// Per plane: the taps are at most a quarter of the window's bytes, so gathering them from
    /// both source rows beats blending the whole window first. (Measured: at half, NV12's chroma
    /// — 1280 taps over a 1920-byte window — was 10 % slower gathered than blended.)
    plane_downscaled: [bool; 3],
    /// Per plane: every group on it has a shuffle plan; the bytes past the window start its
    /// loads reach.
    plane_shuffled: [Option<usize>; 3],
    /// Interleaved chroma: the components (U-or-V first in memory, then the other) whose taps are
    /// one f32 apart in the same plane, gathered as pairs.
    chroma_pair: Option<(usize, usize)>,
    /// YUV → RGB matrix (f32).
    matrix: [[f32; 3]; 3],
    /// The matrix's offsets folded in: row i's value is `matrix[i] · yuv + yuv_bias[i]`.
    yuv_bias: [f32; 3],
    /// The output (uint8, int8, float32) has a fused colour-and-store kernel, and its values.
    fused_finish: bool,
    finish: kernels::FinishValues,
    /// 8-bit output without normalization: uint8 as it is, int8 as value - 128.
    raw8: bool,
    /// Per output channel: value = v * scale + bias, then stored.
    scale: [f32; 4],
    bias: [f32; 4],
    fill: [f32; 4],
    padding: kernels::Padding,
    /// The kernels rows run through.
    simd: Simd,
    workers: workers::Workers,
    scratch: Vec<Mutex<Scratch>>,
}

impl Converter {
    pub fn new(
        format: PixelFormat,
        src_w: usize,
        src_h: usize,
        dst: DstLayout,
        spec: &ConvertSpec,
        threads: usize,
    ) -> Result<Converter> {
        let (kind, comps) = components(format)?;
        // The bound keeps every plan table and tap offset small: a plane window's bytes stay far
        // below the i32 offsets the gathers take.
        if [src_w, src_h, dst.width, dst.height].iter().any(|&side| side == 0 || side > MAX_IMAGE_SIDE) {
            return Err(Error::InvalidArgument(format!(
                "cannot convert {src_w}x{src_h} into {}x{}: sides must be in 1..={MAX_IMAGE_SIDE}",
                dst.width, dst.height
            )));
        }
        let esz = dst.dtype.size();
        let channels = dst.colorspace.channels();
        let pixel = if dst.chw { esz } else { channels * esz };
        let holds_rows = dst.width.checked_mul(pixel).is_some_and(|row| dst.row_stride >= row);
        let holds_planes = !dst.chw
            || channels == 1
            || dst.row_stride.checked_mul(dst.height).is_some_and(|plane| dst.plane_stride >= plane);
        let addressable = dst.checked_bytes().is_some_and(|bytes| bytes <= isize::MAX as usize);
        let flaw = match (holds_rows, holds_planes, addressable) {
            (false, _, _) => Some("a row stride shorter than a row of pixels"),
            (_, false, _) => Some("a plane stride shorter than a plane of rows"),
            (_, _, false) => Some("more bytes than a buffer can hold"),
            _ => None,
        };
        if let Some(flaw) = flaw {
            return Err(Error::InvalidArgument(format!(
                "destination {}x{} {:?} {} at row stride {} / plane stride {} has {flaw}",
                dst.width, dst.height, dst.colorspace, dst.dtype, dst.row_stride, dst.plane_stride
            )));
        }
        let identity = spec.mean == [0.0; 3] && spec.std == [1.0; 3];
        if spec.std.contains(&0.0) || spec.mean.iter().chain(&spec.std).any(|v| !v.is_finite()) {
            return Err(Error::InvalidArgument(format!(
                "mean {:?} / std {:?} must be finite, std non-zero",
                spec.mean, spec.std
            )));
        }
        match (dst.dtype, spec.quantization) {
            (DType::U8 | DType::I8, Some((s, _))) if !(s.is_finite() && s > 0.0) => {
                return Err(Error::InvalidArgument(format!("quantization scale {s} must be positive")));
            }
            (DType::U8 | DType::I8, Some(_)) => {}
            (d, Some(_)) => {
                return Err(Error::InvalidArgument(format!(
                    "quantization applies to int8/uint8 outputs, not {d}"
                )));
            }
            (d, None) if !d.is_float() && !identity => {
                return Err(Error::InvalidArgument(format!(
                    "mean/std on a {d} output needs the model's quantization (scale, zero point)"
                )));
            }
            _ => {}
        }

        let region = spec.source_region.unwrap_or(Region::new(0, 0, src_w, src_h));
        if region.width == 0
            || region.height == 0
            || region.x.checked_add(region.width).is_none_or(|right| right > src_w)
            || region.y.checked_add(region.height).is_none_or(|bottom| bottom > src_h)
        {
            return Err(Error::RegionOutOfBounds {
                x: region.x,
                y: region.y,
                width: region.width,
                height: region.height,
                bound_width: src_w,
                bound_height: src_h,
            });
        }
        let mut content =
            letterbox_rect(region.width, region.height, dst.width, dst.height, spec.fit, spec.placement)
                .map_err(|e| Error::InvalidArgument(e.to_string()))?;
        content.source.x += region.x;
        content.source.y += region.y;
        let (src_rect, rect) = (content.source, content.rect);

        let (hdiv, vdiv) = format.subsampling().divisors();
        let grid = |start: usize, len: usize, div: usize| (start / div, (start + len).div_ceil(div) - 1);
        let (lx, hx) = grid(src_rect.x, src_rect.width, 1);
        let (cx0, cx1) = grid(src_rect.x, src_rect.width, hdiv);
        let (ly, hy) = grid(src_rect.y, src_rect.height, 1);
        let (cy0, cy1) = grid(src_rect.y, src_rect.height, vdiv);
        let interp = spec.interpolation;
        let cols_luma = axis(rect.width, src_rect.x, src_rect.width, 1, lx, hx, interp);
        let cols_chroma = axis(rect.width, src_rect.x, src_rect.width, hdiv, cx0, cx1, interp);
        let rows_luma = axis(rect.height, src_rect.y, src_rect.height, 1, ly, hy, interp);
        let rows_chroma = axis(rect.height, src_rect.y, src_rect.height, vdiv, cy0, cy1, interp);

        // Each plane's byte window: from the leftmost to the rightmost tap of its components.
        let mut plane_window = [(usize::MAX, 0usize); 3];
        let mut plane_chroma_rows = [false; 3];
        for comp in &comps {
            let cols = if comp.chroma { &cols_chroma } else { &cols_luma };
            let (lo, hi) = (cols.i0[0].min(cols.i0[cols.i0.len() - 1]), *cols.i1.iter().max().unwrap());
            let w = &mut plane_window[comp.plane];
            w.0 = w.0.min(comp.offset + comp.step * lo);
            w.1 = w.1.max(comp.offset + comp.step * hi + 1);
            // A plane holding chroma only (NV12's UV, I420's U and V) steps by chroma rows.
            plane_chroma_rows[comp.plane] = comp.chroma && format.layout() != PixelLayout::Packed;
        }
        let taps = comps
            .iter()
            .map(|comp| {
                let cols = if comp.chroma { &cols_chroma } else { &cols_luma };
                let lo = plane_window[comp.plane].0;
                let idx =
                    |v: &Vec<usize>| v.iter().map(|&s| (comp.offset + comp.step * s - lo) as u32).collect();
                (idx(&cols.i0), idx(&cols.i1))
            })
            .collect();

        let (m, off) = spec.colorimetry.yuv_to_rgb_matrix();
        let matrix = m.map(|r| r.map(|v| v as f32));
        let offsets = off.map(|v| v as f32);

        // Fused per-channel scale and bias on 0..255 values, in output channel order.
        let order: [usize; 4] = match dst.colorspace {
            Colorspace::Bgr => [2, 1, 0, 3],
            _ => [0, 1, 2, 3],
        };
        let (mut scale, mut bias) = ([1.0f32; 4], [0.0f32; 4]);
        for ch in 0..channels {
            // Gray takes the mean/std of its first entry; alpha is never normalized.
            let (mean, std) = match ch {
                3 => (0.0, 1.0),
                _ => (spec.mean[order[ch]], spec.std[order[ch]]),
            };
            let (s, b) = match (dst.dtype, spec.quantization) {
                (_, Some((qs, zp))) => (1.0 / (255.0 * std * qs), -mean / (std * qs) + zp as f32),
                (DType::I8, None) => (1.0, -128.0),
                (d, None) if d.is_float() => (1.0 / (255.0 * std), -mean / std),
                _ => (1.0, 0.0),
            };
            scale[ch] = s;
            // A zero bias is +0.0 (a zero mean gives -0.0): then `v * scale + bias` is never -0.0,
            // whatever the sign of the product, at every level.
            bias[ch] = b + 0.0;
        }
        if scale.iter().chain(&bias).any(|v| !v.is_finite()) {
            return Err(Error::InvalidArgument(format!(
                "mean {:?} / std {:?} / quantization {:?} give a per-channel scale {scale:?} and \
                 bias {bias:?} that f32 cannot hold",
                spec.mean, spec.std, spec.quantization
            )));
        }
        let f = spec.fill.map(|v| v as f32);
        let raw_fill = match dst.colorspace {
            Colorspace::Rgb | Colorspace::Rgba => f,
            Colorspace::Bgr => [f[2], f[1], f[0], f[3]],
            Colorspace::Gray => [kernels::gray(f[0], f[1], f[2]), 0.0, 0.0, 0.0],
        };
        let fill = std::array::from_fn(|c| raw_fill[c] * scale[c] + bias[c]);

        let workers = workers::Workers::new(threads.clamp(1, 64))
            .map_err(|e| Error::io(format!("starting {} conversion threads", threads.clamp(1, 64)), e))?;
        let scratch = (0..workers.bands())
            .map(|_| {
                Mutex::new(Scratch {
                    vrows: std::array::from_fn(|p| {
                        vec![0.0; plane_window[p].1.saturating_sub(plane_window[p].0)]
                    }),
                    comps: std::array::from_fn(|_| vec![0.0; rect.width]),
                    chans: std::array::from_fn(|_| vec![0.0; rect.width]),
                    bytes: std::array::from_fn(|_| vec![0; rect.width]),
                    counts: KernelCounts::default(),
                })
            })
            .collect();
        let mut conv = Converter {
            format,
            src_w,
            src_h,
            dst,
            content,
            kind,
            comps,
            rows_luma,
            rows_chroma,
            plane_window,
            plane_chroma_rows,
            taps,
            luma_on_samples: cols_luma.w.iter().all(|&w| w == 0.0),
            chroma_on_samples: cols_chroma.w.iter().all(|&w| w == 0.0),
            tap_max: Vec::new(),
            groups: Vec::new(),
            plane_downscaled: [false; 3],
            plane_shuffled: [None; 3],
            chroma_pair: None,
            wq_luma: weight_pairs(&cols_luma.w),
            wq_chroma: weight_pairs(&cols_chroma.w),
            weights_luma: cols_luma.w,
            weights_chroma: cols_chroma.w,
            matrix,
            yuv_bias: std::array::from_fn(|i| -(0..3).map(|j| matrix[i][j] * offsets[j]).sum::<f32>()),
            // The fused loops rely on the matrix's shape (see `kernels::yuv_rows`).
            fused_finish: matches!(dst.dtype, DType::U8 | DType::I8 | DType::F32)
                && (kind != SrcKind::Yuv || kernels::yuv_shaped(&matrix)),
            finish: kernels::FinishValues::default(),
            raw8: match dst.dtype {
                DType::U8 => scale == [1.0; 4] && bias == [0.0; 4],
                DType::I8 => scale == [1.0; 4] && bias[..channels] == [-128.0; 4][..channels],
                _ => false,
            },
            scale,
            bias,
            fill,
            padding: kernels::Padding::default(),
            simd: Simd::detect(),
            workers,
            scratch,
        };
        conv.padding = kernels::padding(&conv);
        conv.finish = kernels::finish_values(&conv);
        conv.tap_max = conv.taps.iter().map(|(a, b)| a.iter().chain(b).copied().max().unwrap_or(0)).collect();
        conv.groups = conv.make_groups();
        for p in 0..3 {
            let (lo, hi) = conv.plane_window[p];
            let taps: usize = conv.groups.iter().filter(|g| g.plane == p).map(|g| g.i0.len()).sum();
            conv.plane_downscaled[p] = hi > lo && 4 * taps <= hi - lo;
            let on_plane = || conv.groups.iter().filter(|g| g.plane == p);
            conv.plane_shuffled[p] = match on_plane().all(|g| g.shuffle.is_some()) {
                true => on_plane().map(|g| g.shuffle.as_ref().map_or(0, |s| s.reach)).max(),
                false => None,
            };
        }
        conv.chroma_pair = conv.comps.iter().enumerate().find_map(|(ka, a)| {
            let kb = conv.comps.iter().position(|b| {
                b.chroma
                    && a.chroma
                    && b.plane == a.plane
                    && a.step == 2
                    && b.step == 2
                    && b.offset == a.offset + 1
            })?;
            Some((ka, kb))
        });
        Ok(conv)
    }

    /// Where the picture sits in the destination, and which source pixels it came from.
    pub fn content(&self) -> &ContentRegion {
        &self.content
    }

    pub fn dst(&self) -> &DstLayout {
        &self.dst
    }

    /// Components of one plane at one resolution whose bytes sit within a dword of each other at
    /// every tap (RGB's three, RGBA's four, NV12's U and V, YUY2's U and V), so one gather per tap
    /// brings them all.
    fn make_groups(&self) -> Vec<Group> {
        let mut done = vec![false; self.comps.len()];
        let mut groups = Vec::new();
        // Lowest byte offset first, so each group's base is its first byte.
        let mut order: Vec<usize> = (0..self.comps.len()).collect();
        order.sort_by_key(|&k| self.comps[k].offset);
        for &k in &order {
            if done[k] {
                continue;
            }
            let base = self.comps[k];
            let members: Vec<(usize, usize)> = order
                .iter()
                .copied()
                .filter(|&m| {
                    let c = self.comps[m];
                    !done[m]
                        && c.plane == base.plane
                        && c.chroma == base.chroma
                        && c.step == base.step
                        && c.offset >= base.offset
                        && c.offset - base.offset < 4
                })
                .map(|m| (m, self.comps[m].offset - base.offset))
                .collect();
            for &(m, _) in &members {
                done[m] = true;
            }
            let (i0, i1) = self.taps[k].clone();
            let max = i0.iter().chain(&i1).copied().max().unwrap_or(0);
            // NEON has no gathers to fall back on, and where every tap is on a sample its kernel
            // reads tap 0 alone: planned from tap 0, RGBA at 3× (1080p → 640, two pixels 12
            // bytes apart with their right neighbours span 20) fits windows of two outputs.
            let on_samples = if base.chroma { self.chroma_on_samples } else { self.luma_on_samples };
            let shuffle = match cfg!(target_arch = "aarch64") && on_samples {
                true => shuffle_plan(&i0, &i0, &members),
                false => shuffle_plan(&i0, &i1, &members),
            };
            let permute = permute_plan(&i0, &i1, &members);
            groups.push(Group {
                plane: base.plane,
                chroma: base.chroma,
                members,
                i0,
                i1,
                max,
                shuffle,
                permute,
            });
        }
        groups
    }

    /// Run the kernels of `level`, or of the widest level below it the CPU has (the default is
    /// `Simd::detect()`): every level must give the same tensor, which the tests check.
    pub fn set_simd(&mut self, level: Simd) {
        self.simd = level.min(Simd::detect());
    }

    pub fn simd(&self) -> Simd {
        self.simd
    }

    /// Rows run through the AVX2 kernels (and `avx512`: the sixteen-wide ones where there are).
    fn avx2(&self) -> bool {
        self.simd >= Simd::Avx2
    }

    #[cfg(target_arch = "x86_64")]
    fn avx512(&self) -> bool {
        self.simd >= Simd::Avx512
    }

    /// Rows run through the NEON kernels.
    #[cfg(target_arch = "aarch64")]
    fn neon(&self) -> bool {
        self.simd >= Simd::Neon
    }

    /// What the level's explicit vector kernels have made since the converter was built, over
    /// every band: the baseline counts nothing, so a level that silently ran the plain loops
    /// shows zeros (the tests check that each level's kernels are taken).
    pub fn kernel_counts(&self) -> KernelCounts {
        self.scratch.iter().fold(KernelCounts::default(), |sum, s| {
            let c = s.lock().unwrap().counts;
            KernelCounts { sampled: sum.sampled + c.sampled, finished: sum.finished + c.finished }
        })
    }

    pub fn threads(&self) -> usize {
        self.workers.bands()
    }

    /// Convert one frame. The source must have the planned format and size; every plane and the
    /// destination are checked to hold what the layout says before a byte is touched.
    pub fn convert(&self, src: &SrcImage<'_>, dst: &mut [u8]) -> Result<()> {
        if (src.format, src.width, src.height) != (self.format, self.src_w, self.src_h) {
            return Err(Error::InvalidArgument(format!(
                "planned for {} {}x{}, given {} {}x{}",
                self.format.name(),
                self.src_w,
                self.src_h,
                src.format.name(),
                src.width,
                src.height
            )));
        }
        for p in 0..self.format.num_planes() {
            let s = self.format.plane_sampling(p, 1);
            let (bytes, stride) = src.planes[p];
            let (rows, row) = (s.rows(src.height), s.row_bytes(src.width));
            let Some(need) = (rows - 1).checked_mul(stride).and_then(|steps| steps.checked_add(row)) else {
                return Err(Error::InvalidArgument(format!(
                    "source plane {p}: {rows} rows of {row} bytes at stride {stride} span more than \
                     usize::MAX bytes"
                )));
            };
            if stride < row || bytes.len() < need {
                return Err(Error::BufferTooSmall {
                    what: format!("source plane {p} ({rows} rows of {row} bytes at stride {stride})"),
                    needed: need,
                    available: bytes.len(),
                });
            }
        }
        if dst.len() < self.dst.bytes() {
            return Err(Error::BufferTooSmall {
                what: "the destination tensor".into(),
                needed: self.dst.bytes(),
                available: dst.len(),
            });
        }
        let bands = self.workers.bands();
        let h = self.dst.height;
        let out = kernels::SendPtr(dst.as_mut_ptr());
        self.workers.run(&|band| {
            let (r0, r1) = (h * band / bands, h * (band + 1) / bands);
            let mut scratch = self.scratch[band].lock().unwrap();
            // Bands write disjoint destination rows of a buffer that outlives `run`.
            unsafe { kernels::rows(self, src, out, r0..r1, &mut scratch) };
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the AVX2 kernel does with a plan, in scalar: per block, each output's dword from its
    /// window through the controls (`pshufb` semantics: index bit 7 gives zero, lanes of 16).
    fn apply(plan: &Shuffle, row: &[u8], members: usize, two: bool) -> Vec<Vec<[u8; 4]>> {
        let parts = if plan.quarters { 2 } else { 1 };
        let mut out = vec![Vec::new(); members];
        for (b, base) in plan.bases.iter().enumerate() {
            for (m, out) in out.iter_mut().enumerate() {
                let first = (b * members + m) * 2 * parts + usize::from(two) * parts;
                for j in 0..8 {
                    let mut dword = [0u8; 4];
                    for p in 0..parts {
                        let ctl = &plan.controls[first + p].0;
                        // Lane j / 4 of vector p is window p + parts * (j / 4).
                        let window = &row[base[p + parts * (j / 4)] as usize..][..16];
                        for (k, byte) in dword.iter_mut().enumerate() {
                            let c = ctl[4 * j + k];
                            *byte |= if c & 0x80 != 0 { 0 } else { window[(c & 15) as usize] };
                        }
                    }
                    out.push(dword);
                }
            }
        }
        out
    }

    /// Over a row of `reach` distinct-ish bytes, a plan's picks (`picks(row, two)`, per member
    /// per output) give every output of its whole blocks (`block` outputs each) tap 0 alone in
    /// byte 0, or both taps in bytes 0 and 2, the other bytes zero.
    fn assert_picks(
        i0: &[u32],
        i1: &[u32],
        members: &[(usize, usize)],
        block: usize,
        reach: usize,
        picks: impl Fn(&[u8], bool) -> Vec<Vec<[u8; 4]>>,
    ) {
        let row: Vec<u8> = (0..reach).map(|i| (i * 7 + 3) as u8).collect();
        let (one, two) = (picks(&row, false), picks(&row, true));
        for (m, &(_, shift)) in members.iter().enumerate() {
            for x in 0..i0.len() / block * block {
                let (a, b) = (row[i0[x] as usize + shift], row[i1[x] as usize + shift]);
                assert_eq!(one[m][x], [a, 0, 0, 0], "member {m} output {x}: tap 0 alone");
                assert_eq!(two[m][x], [a, 0, b, 0], "member {m} output {x}: both taps as words");
            }
        }
    }

    fn check(i0: &[u32], i1: &[u32], members: &[(usize, usize)], quarters: bool) {
        let plan = shuffle_plan(i0, i1, members).expect("a plan");
        assert_eq!(plan.quarters, quarters);
        assert_picks(i0, i1, members, 8, plan.reach, |row, two| apply(&plan, row, members.len(), two));
    }

    /// The AVX-512 kernel's picks in scalar: `vpermt2b` indexes a 128-byte table (7 bits), the
    /// window's bytes then (narrow) zeros.
    fn permute(plan: &Permute, row: &[u8], members: usize, two: bool) -> Vec<Vec<[u8; 4]>> {
        let mut out = vec![Vec::new(); members];
        for (b, &base) in plan.bases.iter().enumerate() {
            // Narrow: a 64-byte window, then 64 zero bytes; no mask.
            let mut table = [0u8; 128];
            let width = if plan.narrow { 64 } else { 128 };
            table[..width].copy_from_slice(&row[base as usize..][..width]);
            for (m, out) in out.iter_mut().enumerate() {
                let ctl = &plan.controls[(b * members + m) * 2 + usize::from(two)].0;
                for j in 0..16 {
                    let pick = |k: usize| table[(ctl[4 * j + k] & 127) as usize];
                    let mut dword = [0, 1, 2, 3].map(pick);
                    if !plan.narrow {
                        // The mask keeps byte 0, and byte 2 with two taps.
                        dword = [dword[0], 0, if two { dword[2] } else { 0 }, 0];
                    }
                    out.push(dword);
                }
            }
        }
        out
    }

    fn check_permute(i0: &[u32], i1: &[u32], members: &[(usize, usize)], narrow: bool) {
        let plan = permute_plan(i0, i1, members).expect("a plan");
        assert_eq!(plan.narrow, narrow);
        assert_picks(i0, i1, members, 16, plan.reach, |row, two| permute(&plan, row, members.len(), two));
    }

    #[test]
    fn every_yuv_matrix_takes_the_fused_finish() {
        use crate::preprocess::Colorimetry as C;
        for colorimetry in [
            C::BT601_LIMITED,
            C::BT601_FULL,
            C::BT709_LIMITED,
            C::BT709_FULL,
            C::BT2020_LIMITED,
            C::BT2020_FULL,
        ] {
            let spec = ConvertSpec { colorimetry, ..Default::default() };
            let dst = DstLayout::dense(32, 32, Colorspace::Rgb, false, DType::U8);
            let c = Converter::new(PixelFormat::Nv12, 64, 48, dst, &spec, 1).unwrap();
            assert!(kernels::yuv_shaped(&c.matrix) && c.fused_finish, "{colorimetry:?}");
        }
    }

    #[test]
    fn permute_plans_pick_every_tap() {
        let luma: Vec<u32> = (0..40).map(|i| 3 * i + 1).collect();
        check_permute(&luma, &luma, &[(0, 0)], true);
        let c0: Vec<u32> = (0..40).map(|i| 2 * ((3 * i) / 2)).collect();
        let c1: Vec<u32> = c0.iter().map(|&t| t + 2).collect();
        check_permute(&c0, &c1, &[(1, 0), (2, 1)], true);
        // YUY2's luma every sixth byte: sixteen outputs in 92 bytes, a wide window.
        let y: Vec<u32> = (0..40).map(|i| 6 * i + 2).collect();
        check_permute(&y, &y, &[(0, 0)], false);
        // RGBA at 3×: sixteen pixels span 184 bytes, past any window; the AVX2 kernels stay.
        let rgba: Vec<u32> = (0..40).map(|i| 12 * i + 4).collect();
        assert!(permute_plan(&rgba, &rgba, &[(0, 0), (1, 1), (2, 2), (3, 3)]).is_none());
        // Fewer than sixteen outputs: no block.
        assert!(permute_plan(&luma[..15], &luma[..15], &[(0, 0)]).is_none());
    }

    #[test]
    fn shuffle_plans_pick_every_tap() {
        // NV12 1080p → 640: luma every third byte; chroma (U, V) pairs 1.5 samples apart.
        let luma: Vec<u32> = (0..40).map(|i| 3 * i + 1).collect();
        check(&luma, &luma, &[(0, 0)], false);
        let c0: Vec<u32> = (0..40).map(|i| 2 * ((3 * i) / 2)).collect();
        let c1: Vec<u32> = c0.iter().map(|&t| t + 2).collect();
        check(&c0, &c1, &[(1, 0), (2, 1)], false);
        // YUY2 at the same scale: luma every sixth byte needs windows of two outputs.
        let y: Vec<u32> = (0..40).map(|i| 6 * i + 2).collect();
        check(&y, &y, &[(0, 0)], true);
        // RGBA at 3×: whole pixels every 12 bytes with their right neighbours fit no window of
        // two outputs; gathers stay. Without the neighbours (taps on one side) they do.
        let rgba: Vec<u32> = (0..40).map(|i| 12 * i + 4).collect();
        let right: Vec<u32> = rgba.iter().map(|&t| t + 4).collect();
        let pixel = [(0, 0), (1, 1), (2, 2), (3, 3)];
        assert!(shuffle_plan(&rgba, &right, &pixel).is_none());
        check(&rgba, &rgba, &pixel, true);
    }
}
