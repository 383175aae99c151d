//! Camera frame → model tensor on the CPU: colour (rgb, bgr, gray, rgba from any supported pixel
//! format, YUV matrices from the input's colorimetry), geometry (stretch, letterbox, centre crop,
//! an optional source region; bilinear, nearest or the multi-tap filters of docs/resampling.md),
//! layout (hwc, chw), element type, per-channel mean/std and quantization, written straight into the destination's bytes at its row stride.
//!
//! The geometry is planned once (`Converter::new`: coordinate tables, shuffle controls, scratch
//! rows, worker threads) so a frame allocates nothing. Per destination row each colour component is
//! sampled at output width (bilinear: two taps on each of two source rows), straight from the
//! frame's bytes with AVX2 (byte shuffles where the taps are dense, see `Shuffle`; gathers where
//! not) or NEON (table lookups through the same shuffle plans), or from the rows blended
//! vertically into f32 first (baseline). The samples are then converted to RGB in f32, normalized
//! with one scale and bias per channel and stored as the output type, in one fused pass for uint8,
//! int8 and float32.

// The sampling plan and the finish values, pure layout math on every target.
mod finish;
mod hint;
mod lines;
mod plan;
// The row loop, and the only module that uses a level.
mod driver;
// The multi-tap filters' row loops, over the kernels the driver hands them.
mod multitap;
// The levels: each reads the plan and the finish values, none another level.
#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod baseline;
#[cfg(target_arch = "aarch64")]
mod neon;
mod workers;
// One frame through the plan: the checks, the bands, and whether the padding is stored.
mod run;
// `Converter::new`'s checks and plans, one function each.
mod build;

/// Row chunks per band when several threads convert: enough that a late worker's share moves to
/// the caller in small steps, few enough that a multi-tap filter's refill at each chunk's start
/// (its taps' source rows) stays a few percent.
const CHUNKS_PER_BAND: usize = 4;

use crate::dtype::DType;
use crate::format::{PixelFormat, PixelLayout};
use crate::preprocess::{
    ChromaSite, Colorimetry, ContentRegion, FitMode, Interpolation, LetterboxPlacement, Region,
};
use crate::{Error, Result};
use finish::{FinishValues, Padding};
use lines::Lines;
use plan::{axis, components, site_shift, weight_pairs, Axis, Comp, Group, MultiTap, SrcKind};
use std::sync::Mutex;
pub use workers::Workers;

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
    /// Where a subsampled YUV source's chroma samples sit (`ChromaSite::from_gst_flags` reads the
    /// caps' `chroma-site`); centred by default. It moves the chroma taps and weights of every
    /// filter, so every level still runs the same kernels on the plan.
    pub chroma_site: ChromaSite,
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
            chroma_site: ChromaSite::CENTRED,
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
        driver::cpu().min(cap)
    }
}

/// Outputs the level's explicit vector kernels made (see `Converter::kernel_counts`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelCounts {
    /// Component samples read straight from the frame's bytes by a vector sampling kernel (one
    /// per component and content column; columns after the last whole block are not counted).
    /// For the multi-tap filters: the horizontal pass's outputs made by the level's blocks, one
    /// per component, content column and filtered source row.
    pub sampled: u64,
    /// Content pixels coloured, normalized and stored by a fused vector finish loop.
    pub finished: u64,
    /// An exact box (`area` by a ratio of small whole numbers): outputs made by summing the
    /// source rows first and then filtering across (AVX-512), one per component and content
    /// pixel; these are also counted in `sampled` where the level's blocks made them.
    pub rows_first: u64,
    /// PIL's filters into 8-bit RGB or BGR from an RGB source: content pixels whose bytes went
    /// from the vertical pass to the output as they are, interleaved (also counted in
    /// `finished`).
    pub interleaved: u64,
    /// Of those, the pixels whose three bytes came from one row of the components side by side
    /// (four-byte pixels into interleaved RGB or BGR at AVX-512: `plan::Whole::ten_interleaved`).
    pub side_by_side: u64,
    /// PIL's filters blended down first (YUY2, UYVY): content pixels the fused finish coloured
    /// from the horizontal pass's bytes, widening them as it loaded them (also counted in
    /// `finished`).
    pub from_bytes: u64,
}
// The multi-tap filters (`Interpolation::Area`, `BilinearAntialias`, `Bicubic`, `BicubicOpencv`)
// sample with the level's blocks (`plan::TapGroup`) where the taps fit their windows and with the
// baseline loops elsewhere; both compute the same exact integer sums, so every level gives the
// same bytes.

/// Per band: the vertically interpolated plane rows and the per-channel rows of one output row.
struct Scratch {
    vrows: [Lines<f32>; 3],
    comps: [Lines<f32>; 4],
    chans: [Lines<f32>; 4],
    bytes: [Lines<u8>; 4],
    /// PIL's filters and an exact box's quads into bytes that are the output's
    /// (`FinishValues::interleaves_bytes`): the components' bytes, the rows `comps` holds as
    /// floats otherwise.
    comp_bytes: [Lines<u8>; 4],
    /// Multi-tap filters: the filtered rows (see `multitap::Ring`).
    ring: multitap::Ring,
    /// Up to `multitap::ROWS_AT_ONCE` packed source rows (`plan::Compact`, `plan::Planar`):
    /// beside the ring, so the kernels that pack borrow it while the ring is lent to the row
    /// loops.
    packed_rows: Lines<u8>,
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
    /// The same weights as integer pairs (see `plan::weight_pairs` and `plan::Shuffle`).
    wq_luma: Vec<u32>,
    wq_chroma: Vec<u32>,
    /// Every horizontal tap falls on a sample (all weights 0): one gather instead of two.
    luma_on_samples: bool,
    chroma_on_samples: bool,
    /// Per component: its largest tap index (bounds for the direct byte gathers).
    tap_max: Vec<u32>,
    /// Components gathered together from a plane's bytes (see `plan::Group`).
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
    /// An RGB source's one-tap blocks picked in the output's channel order, where the float32
    /// finish reads them itself (`avx512::PixelBlocks`): per block, `Permute::pixel_picks`.
    #[cfg(target_arch = "x86_64")]
    pixel_picks: Option<Vec<plan::Aligned64<[u8; 64]>>>,
    /// The output (uint8, int8, float32) has a fused colour-and-store kernel; the values of
    /// colour, normalization and store (every level's).
    fused_finish: bool,
    finish: FinishValues,
    /// The letterbox fill, stored as the output type.
    padding: Padding,
    /// The multi-tap filter's plan, where the interpolation has one.
    multi: Option<MultiTap>,
    /// The kernels rows run through.
    simd: Simd,
    /// The AVX-512 level (with VNNI) and NEON (with the dot product) sum an exact box straight
    /// from the rows (`plan::Quads`, `set_vnni`).
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    vnni: bool,
    workers: workers::Workers,
    scratch: Vec<Mutex<Scratch>>,
    /// Unique to this converter in the process (`Converter::id`).
    id: u64,
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
        let (mut kind, mut comps) = components(format)?;
        build::check_geometry(src_w, src_h, &dst)?;
        build::check_normalization(spec, dst.dtype)?;

        let content = build::placed_content(spec, src_w, src_h, &dst)?;
        let (src_rect, rect) = (content.source, content.rect);

        let (hdiv, vdiv) = format.subsampling().divisors();
        let grid = |start: usize, len: usize, div: usize| (start / div, (start + len).div_ceil(div) - 1);
        let (lx, hx) = grid(src_rect.x, src_rect.width, 1);
        let (cx0, cx1) = grid(src_rect.x, src_rect.width, hdiv);
        let (ly, hy) = grid(src_rect.y, src_rect.height, 1);
        let (cy0, cy1) = grid(src_rect.y, src_rect.height, vdiv);
        let interp = spec.interpolation;
        // The chroma grids' siting, in their samples (zero on an axis at full resolution).
        let (hshift, vshift) =
            (site_shift(hdiv, spec.chroma_site.h_cosited), site_shift(vdiv, spec.chroma_site.v_cosited));
        let cols_luma = axis(rect.width, src_rect.x, src_rect.width, 1, lx, hx, interp, 0.0);
        let cols_chroma = axis(rect.width, src_rect.x, src_rect.width, hdiv, cx0, cx1, interp, hshift);
        let rows_luma = axis(rect.height, src_rect.y, src_rect.height, 1, ly, hy, interp, 0.0);
        let rows_chroma = axis(rect.height, src_rect.y, src_rect.height, vdiv, cy0, cy1, interp, vshift);
        // OpenCV's INTER_AREA takes its box filter where neither axis grows.
        let area_down = src_rect.width >= rect.width && src_rect.height >= rect.height;
        // (outputs, source start, length, divisor, grid, siting) of luma and chroma columns and
        // rows.
        let axes = [
            (rect.width, src_rect.x, src_rect.width, 1, lx, hx, 0.0),
            (rect.width, src_rect.x, src_rect.width, hdiv, cx0, cx1, hshift),
            (rect.height, src_rect.y, src_rect.height, 1, ly, hy, 0.0),
            (rect.height, src_rect.y, src_rect.height, vdiv, cy0, cy1, vshift),
        ];
        let multi =
            build::multi_plan(format, &comps, &dst, src_w, interp, area_down, (src_rect, rect), axes)?;
        // Bilinear and nearest from an RGBA source into an output without alpha: the pixels
        // sampled as RGBx's, three members a block (the blocks blended and stored alpha for
        // nothing: 1600×900 → 640 at AVX-512, a quarter of the sampling).
        if multi.is_none() && kind == (SrcKind::Rgb { alpha: true }) && dst.colorspace != Colorspace::Rgba {
            comps.truncate(3);
            kind = SrcKind::Rgb { alpha: false };
        }

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

        let (scale, bias) = build::scale_bias(&dst, spec)?;
        let channels = dst.colorspace.channels();
        let f = spec.fill.map(|v| v as f32);
        let raw_fill = match dst.colorspace {
            Colorspace::Rgb | Colorspace::Rgba => f,
            Colorspace::Bgr => [f[2], f[1], f[0], f[3]],
            Colorspace::Gray => [finish::gray(f[0], f[1], f[2]), 0.0, 0.0, 0.0],
        };
        let fill = std::array::from_fn(|c| raw_fill[c] * scale[c] + bias[c]);
        // The matrix's offsets folded in: row i's value is `matrix[i] · yuv + yuv_bias[i]`.
        let yuv_bias: [f32; 3] =
            std::array::from_fn(|i| -(0..3).map(|j| matrix[i][j] * offsets[j]).sum::<f32>());
        // 8-bit output without normalization: uint8 as it is, int8 as value - 128.
        let raw8 = match dst.dtype {
            DType::U8 => scale == [1.0; 4] && bias == [0.0; 4],
            DType::I8 => scale == [1.0; 4] && bias[..channels] == [-128.0; 4][..channels],
            _ => false,
        };
        let finish = FinishValues::new(kind, &dst, rect, raw8, &matrix, &yuv_bias, &scale, &bias);

        let workers = workers::Workers::new(threads.clamp(1, 64))
            .map_err(|e| Error::io(format!("starting {} conversion threads", threads.clamp(1, 64)), e))?;
        let scratch = build::band_scratch(workers.bands(), &plane_window, rect.width, &comps, &multi);
        let mut conv = Converter {
            format,
            src_w,
            src_h,
            dst,
            content,
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
            #[cfg(target_arch = "x86_64")]
            pixel_picks: None,
            wq_luma: weight_pairs(&cols_luma.w),
            wq_chroma: weight_pairs(&cols_chroma.w),
            weights_luma: cols_luma.w,
            weights_chroma: cols_chroma.w,
            // The fused loops rely on the matrix's shape (see `finish::yuv_rows`).
            fused_finish: matches!(dst.dtype, DType::U8 | DType::I8 | DType::F32)
                && (kind != SrcKind::Yuv || finish::yuv_shaped(&matrix)),
            finish,
            padding: Padding::new(&dst, &fill),
            multi,
            simd: Simd::detect(),
            #[cfg(target_arch = "x86_64")]
            vnni: avx512::vnni(),
            #[cfg(target_arch = "aarch64")]
            vnni: neon::dotprod(),
            workers,
            scratch,
            id: run::next_id(),
        };
        conv.tap_max = conv.taps.iter().map(|(a, b)| a.iter().chain(b).copied().max().unwrap_or(0)).collect();
        // Made after the scratch rows: made before, the plans moved where the heap put the rows
        // (1080p NV12 → uint8 with AVX-512: 0.094 → 0.100 ms). NEON
        // plans the shuffles of groups whose taps are on samples from tap 0 alone (see
        // `plan::groups`).
        let on_samples = [conv.luma_on_samples, conv.chroma_on_samples];
        let wq = [&conv.wq_luma[..], &conv.wq_chroma[..]];
        conv.groups = plan::groups(&conv.comps, &conv.taps, on_samples, wq, cfg!(target_arch = "aarch64"));
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
        #[cfg(target_arch = "x86_64")]
        (conv.pixel_picks = build::pixel_picks(&conv));
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

    /// Run the kernels of `level`, or of the widest level below it the CPU has (the default is
    /// `Simd::detect()`): every level must give the same tensor, which the tests check.
    pub fn set_simd(&mut self, level: Simd) {
        self.simd = level.min(Simd::detect());
    }

    pub fn simd(&self) -> Simd {
        self.simd
    }

    /// Whether the AVX-512 level (with VNNI) and NEON (with the dot product) may sum an exact box
    /// (`area` at ratios of small whole numbers) straight from the frame's rows (by default where
    /// the CPU has it), or rows first as the other levels do: the same tensor, which the tests
    /// check.
    #[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(unused_variables))]
    pub fn set_vnni(&mut self, on: bool) {
        #[cfg(target_arch = "x86_64")]
        (self.vnni = on && avx512::vnni());
        #[cfg(target_arch = "aarch64")]
        (self.vnni = on && neon::dotprod());
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
            KernelCounts {
                sampled: sum.sampled + c.sampled,
                finished: sum.finished + c.finished,
                rows_first: sum.rows_first + c.rows_first,
                interleaved: sum.interleaved + c.interleaved,
                side_by_side: sum.side_by_side + c.side_by_side,
                from_bytes: sum.from_bytes + c.from_bytes,
            }
        })
    }

    pub fn threads(&self) -> usize {
        self.workers.bands()
    }
}

#[cfg(test)]
mod tests;
