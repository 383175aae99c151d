//! Plain values and pure functions describing how a camera frame becomes a
//! model input tensor and how detections map back onto the frame. The
//! GStreamer element (forward) and the box decoder (inverse) both use this one
//! definition of the geometry so they cannot drift apart by a pixel.

use std::error::Error;
use std::fmt;

#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum PreprocessError {
    /// A parameter was malformed or out of range; the message names it.
    InvalidValue(String),
    /// A dimension was zero, which has no meaningful geometry.
    ZeroSize { what: &'static str, width: usize, height: usize },
}

impl fmt::Display for PreprocessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidValue(msg) => write!(f, "invalid value: {msg}"),
            Self::ZeroSize { what, width, height } => {
                write!(f, "{what} size {width}x{height} has a zero dimension")
            }
        }
    }
}

impl Error for PreprocessError {}

fn invalid(msg: String) -> PreprocessError {
    PreprocessError::InvalidValue(msg)
}

/// Affine quantization: `real = (q - zero_point) * scale`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Quantization {
    PerTensor { scale: f32, zero_point: i32 },
    PerChannel { axis: usize, scales: Vec<f32>, zero_points: Vec<i32> },
}

/// A one-entry table broadcasts, as TFLite stores degenerate per-channel
/// parameters that way. Otherwise an out-of-range channel is a shape bug in
/// the caller, so it panics like slice indexing.
fn pick<T: Copy>(table: &[T], channel: usize) -> T {
    table[if table.len() == 1 { 0 } else { channel }]
}

impl Quantization {
    /// Infallible because model metadata is trusted to carry a positive
    /// scale; [`Quantization::per_channel`] checks since tables can mismatch.
    pub fn per_tensor(scale: f32, zero_point: i32) -> Self {
        Self::PerTensor { scale, zero_point }
    }

    pub fn per_channel(
        axis: usize,
        scales: Vec<f32>,
        zero_points: Vec<i32>,
    ) -> Result<Self, PreprocessError> {
        if scales.is_empty() {
            return Err(invalid("per-channel quantization has no scales".into()));
        }
        if scales.len() != zero_points.len() {
            let (s, z) = (scales.len(), zero_points.len());
            return Err(invalid(format!("{s} scales but {z} zero points")));
        }
        if let Some(i) = scales.iter().position(|s| !(s.is_finite() && *s > 0.0)) {
            let s = scales[i];
            return Err(invalid(format!("scale[{i}] = {s} must be finite and > 0")));
        }
        Ok(Self::PerChannel { axis, scales, zero_points })
    }

    /// # Panics
    /// See [`pick`]: per-channel tables panic on an out-of-range channel.
    pub fn scale(&self, channel: usize) -> f32 {
        match self {
            Self::PerTensor { scale, .. } => *scale,
            Self::PerChannel { scales, .. } => pick(scales, channel),
        }
    }

    /// # Panics
    /// Same as [`Quantization::scale`].
    pub fn zero_point(&self, channel: usize) -> i32 {
        match self {
            Self::PerTensor { zero_point, .. } => *zero_point,
            Self::PerChannel { zero_points, .. } => pick(zero_points, channel),
        }
    }

    /// Rounds to nearest with ties to even, the rule of the conversion
    /// engine at every SIMD level, then saturates to `qmin..=qmax`. NaN
    /// lands on the zero point. (TFLite's reference kernels round ties away
    /// from zero: an exact half step can land one step from theirs.)
    pub fn quantize(&self, channel: usize, real: f32, qmin: i32, qmax: i32) -> i32 {
        // `as` saturates huge quotients; i64 keeps the add from wrapping.
        let steps = (real / self.scale(channel)).round_ties_even() as i64;
        let q = steps.saturating_add(i64::from(self.zero_point(channel)));
        q.clamp(i64::from(qmin), i64::from(qmax)) as i32
    }

    pub fn dequantize(&self, channel: usize, q: i32) -> f32 {
        let steps = i64::from(q) - i64::from(self.zero_point(channel));
        steps as f32 * self.scale(channel)
    }
}

/// The YUV matrix. Transfer and primaries do not enter YUV->RGB, so they are
/// not modelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ColorSpace {
    Bt601,
    Bt709,
    Bt2020,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ColorRange {
    /// 8-bit Y in 16..=235 and chroma in 16..=240.
    Limited,
    /// All components use 0..=255.
    Full,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Colorimetry {
    pub space: ColorSpace,
    pub range: ColorRange,
}

/// BT.601 limited: V4L2 and GStreamer fall back to it for SD YUV caps without
/// colorimetry, and camera ISPs emit limited range on YUV outputs. Callers
/// that know the frame is HD may prefer BT.709, as GStreamer's guess does.
impl Default for Colorimetry {
    fn default() -> Self {
        Self::BT601_LIMITED
    }
}

impl Colorimetry {
    pub const BT601_LIMITED: Self = Self::new(ColorSpace::Bt601, ColorRange::Limited);
    pub const BT601_FULL: Self = Self::new(ColorSpace::Bt601, ColorRange::Full);
    pub const BT709_LIMITED: Self = Self::new(ColorSpace::Bt709, ColorRange::Limited);
    pub const BT709_FULL: Self = Self::new(ColorSpace::Bt709, ColorRange::Full);
    pub const BT2020_LIMITED: Self = Self::new(ColorSpace::Bt2020, ColorRange::Limited);
    pub const BT2020_FULL: Self = Self::new(ColorSpace::Bt2020, ColorRange::Full);

    pub const fn new(space: ColorSpace, range: ColorRange) -> Self {
        Self { space, range }
    }

    /// `(Kr, Kb)` luma coefficients.
    pub fn matrix_weights(&self) -> (f64, f64) {
        match self.space {
            ColorSpace::Bt601 => (0.299, 0.114),
            ColorSpace::Bt709 => (0.2126, 0.0722),
            ColorSpace::Bt2020 => (0.2627, 0.0593),
        }
    }

    /// `(M, offsets)` with `rgb = M * ([y, u, v] - offsets)` for 8-bit samples
    /// and RGB in 0..=255. Not clamped: limited-range signals legitimately
    /// carry foot- and headroom, and the caller clamps once at the end.
    pub fn yuv_to_rgb_matrix(&self) -> ([[f64; 3]; 3], [f64; 3]) {
        let (kr, kb) = self.matrix_weights();
        let kg = 1.0 - kr - kb;
        let (y_span, c_span, y_off) = match self.range {
            ColorRange::Limited => (219.0, 224.0, 16.0),
            ColorRange::Full => (255.0, 255.0, 0.0),
        };
        let (ys, cs) = (255.0 / y_span, 255.0 / c_span);
        // The textbook inverse for Y' in 0..1 and Pb, Pr in -0.5..0.5,
        // rescaled per column for the 8-bit code ranges.
        let m = [
            [ys, 0.0, cs * 2.0 * (1.0 - kr)],
            [ys, cs * -2.0 * kb * (1.0 - kb) / kg, cs * -2.0 * kr * (1.0 - kr) / kg],
            [ys, cs * 2.0 * (1.0 - kb), 0.0],
        ];
        (m, [y_off, 128.0, 128.0])
    }

    /// Parses a GStreamer caps colorimetry string. `None` for the RGB
    /// (identity) matrix, unknown (`0`) fields and anything unrecognised, so
    /// the caller can apply its own fallback such as a resolution-based guess.
    pub fn from_gst_str(s: &str) -> Option<Colorimetry> {
        let s = s.trim();
        let named = [
            ("bt601", Self::BT601_LIMITED),
            ("bt709", Self::BT709_LIMITED),
            ("bt2020", Self::BT2020_LIMITED),
            ("bt2020-10", Self::BT2020_LIMITED),
            ("bt2100-pq", Self::BT2020_LIMITED),
            ("bt2100-hlg", Self::BT2020_LIMITED),
            ("smpte240m", Self::BT709_LIMITED),
            // On YUV caps, sRGB means full-range BT.709 in practice.
            ("srgb", Self::BT709_FULL),
            ("jpeg", Self::BT601_FULL),
        ];
        if let Some((_, c)) = named.iter().find(|(n, _)| n.eq_ignore_ascii_case(s)) {
            return Some(*c);
        }
        let fields: Vec<u32> = s.split(':').map(|f| f.trim().parse().ok()).collect::<Option<_>>()?;
        let [range, matrix, _transfer, _primaries] = fields[..] else {
            return None;
        };
        let range = match range {
            1 => ColorRange::Full,
            2 => ColorRange::Limited,
            _ => return None,
        };
        let space = match matrix {
            2 | 4 => ColorSpace::Bt601, // FCC is close enough to 601 to share it
            3 | 5 => ColorSpace::Bt709, // SMPTE 240M likewise to 709
            6 => ColorSpace::Bt2020,
            _ => return None,
        };
        Some(Self::new(space, range))
    }
}

/// Where a subsampled YUV frame's chroma samples sit relative to its luma samples, per axis
/// that is subsampled (an axis at full resolution has nothing to site). GStreamer's
/// `GstVideoChromaSite` names them: `jpeg` (both centred: a 4:2:0 chroma sample at the centre of
/// its 2×2 luma block), `mpeg2` (cosited horizontally, centred vertically: MPEG-2, H.264 and
/// HEVC's default), `dv` / `cosited` (both cosited). Cosited means chroma sample `k` lies on luma
/// sample `2k`; centred, half a luma sample further (`2k + 0.5`, in luma sample positions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ChromaSite {
    pub h_cosited: bool,
    pub v_cosited: bool,
}

impl ChromaSite {
    /// `jpeg` (and `none`): centred both ways, the default, what the converter did before sitings.
    pub const CENTRED: ChromaSite = ChromaSite { h_cosited: false, v_cosited: false };
    /// `mpeg2`: cosited horizontally, centred vertically.
    pub const MPEG2: ChromaSite = ChromaSite { h_cosited: true, v_cosited: false };
    /// `dv`, `cosited`: cosited both ways.
    pub const COSITED: ChromaSite = ChromaSite { h_cosited: true, v_cosited: true };

    /// From `GstVideoChromaSite`'s flag bits (what `VideoInfo::chroma_site().bits()` gives), as
    /// GStreamer publishes them: UNKNOWN = 0, NONE = 1 << 0 (= JPEG, centred), H_COSITED = 1 << 1,
    /// V_COSITED = 1 << 2, ALT_LINE = 1 << 3 (MPEG2 = H_COSITED, COSITED = H | V, DV = H | V |
    /// ALT_LINE). Unknown and none are centred, as GStreamer's own chroma resampler reads them
    /// (it tests the cosited bits alone); ALT_LINE (DV's alternating chroma lines in interlaced
    /// 4:2:0) is not modelled.
    pub fn from_gst_flags(bits: u32) -> ChromaSite {
        ChromaSite { h_cosited: bits & (1 << 1) != 0, v_cosited: bits & (1 << 2) != 0 }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum FitMode {
    /// Fill the destination, distorting the aspect ratio.
    Stretch,
    /// Fit inside preserving aspect ratio, padding the remainder.
    #[default]
    Letterbox,
    /// Cover the destination preserving aspect ratio, cropping the source.
    CenterCrop,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum LetterboxPlacement {
    #[default]
    Center,
    /// All padding goes right and bottom, as some exporters assume.
    TopLeft,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Interpolation {
    /// The source sample under each output pixel's centre.
    Nearest,
    /// Two taps per axis at the pixel-centre position, weights in 256ths, edges clamped: OpenCV's
    /// `INTER_LINEAR` (Ultralytics' letterbox) within its 1/2048 weights. Not antialiased.
    #[default]
    Bilinear,
    /// OpenCV `INTER_AREA`: on a downscale (both axes), each output is the mean of the source
    /// pixels its footprint covers, edge pixels weighted by the fraction covered; otherwise
    /// OpenCV's area upscale (the same coverage weights, which span at most two samples, on each
    /// axis that grows; OpenCV's two-tap formula on an axis that shrinks). See docs/resampling.md.
    Area,
    /// PIL `Image.resize(BILINEAR)` / torchvision `antialias=True`: a triangle filter whose support
    /// grows with the downscale factor, weights normalized per output, taps past the edge dropped;
    /// PIL's 8-bit rounding between its horizontal and vertical passes.
    BilinearAntialias,
    /// PIL `Image.resize(BICUBIC)` / torchvision bicubic with `antialias=True`: Keys' cubic with
    /// a = -0.5, antialiased on a downscale as PIL does, edges and 8-bit rounding as
    /// `BilinearAntialias`.
    Bicubic,
    /// OpenCV `INTER_CUBIC`: Keys' cubic with a = -0.75, four taps per axis whatever the scale
    /// (not antialiased), edge pixels replicated.
    BicubicOpencv,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum PadSpace {
    /// The pad is an 8-bit pixel and is normalized like content.
    #[default]
    Raw,
    /// The pad is written verbatim after normalization (0 = the mean).
    Normalized,
}

/// Per channel `(x / 255 - mean) / std`, mean and std in 0..1 units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Normalization {
    pub mean: [f32; 3],
    pub std: [f32; 3],
}

impl Normalization {
    pub fn new(mean: [f32; 3], std: [f32; 3]) -> Result<Self, PreprocessError> {
        if let Some(m) = mean.iter().find(|m| !m.is_finite()) {
            return Err(invalid(format!("mean {m} is not finite")));
        }
        if let Some(s) = std.iter().find(|s| !(s.is_finite() && **s != 0.0)) {
            return Err(invalid(format!("std {s} must be finite and non-zero")));
        }
        Ok(Self { mean, std })
    }

    /// torchvision's ImageNet statistics, the de-facto classifier default.
    pub fn imagenet() -> Self {
        let (mean, std) = ([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]);
        Self { mean, std }
    }

    /// Only rescales to 0..1, which is what YOLO-style detectors expect.
    pub fn identity() -> Self {
        let (mean, std) = ([0.0; 3], [1.0; 3]);
        Self { mean, std }
    }

    pub fn is_identity(&self) -> bool {
        self.mean == [0.0; 3] && self.std == [1.0; 3]
    }

    /// # Panics
    /// If `channel >= 3`.
    pub fn apply(&self, channel: usize, v8: f32) -> f32 {
        (v8 / 255.0 - self.mean[channel]) / self.std[channel]
    }
}

/// One value (broadcast, e.g. a grey mean) or three (R, G, B).
pub fn broadcast_rgb(values: &[f32]) -> Result<[f32; 3], PreprocessError> {
    if let Some(v) = values.iter().find(|v| !v.is_finite()) {
        return Err(invalid(format!("{v} is not a finite number")));
    }
    match *values {
        [v] => Ok([v; 3]),
        [r, g, b] => Ok([r, g, b]),
        _ => Err(invalid(format!("expected 1 or 3 values, got {}", values.len()))),
    }
}

/// Parses `"r,g,b"` or one broadcast value as typed into a gst-launch
/// property; errors quote the offending text so the user can find it.
pub fn parse_rgb_triplet(s: &str) -> Result<[f32; 3], PreprocessError> {
    let mut values = Vec::with_capacity(3);
    for part in s.split(',').map(str::trim) {
        let v: f32 = part.parse().map_err(|_| invalid(format!("'{part}' in \"{s}\" is not a number")))?;
        if !v.is_finite() {
            return Err(invalid(format!("'{part}' in \"{s}\" is not finite")));
        }
        values.push(v);
    }
    let n = values.len();
    broadcast_rgb(&values).map_err(|_| invalid(format!("expected 1 or 3 values in \"{s}\", got {n}")))
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PreprocessSpec {
    pub width: usize,
    pub height: usize,
    pub fit: FitMode,
    pub placement: LetterboxPlacement,
    pub interpolation: Interpolation,
    pub normalization: Normalization,
    pub pad: [u8; 3],
    pub pad_space: PadSpace,
}

impl PreprocessSpec {
    /// Defaults follow the most common consumer, an Ultralytics-style
    /// detector: centred letterbox, bilinear, 0..1 scaling, grey 114 pad.
    pub fn new(width: usize, height: usize) -> Self {
        Self {
            width,
            height,
            fit: FitMode::Letterbox,
            placement: LetterboxPlacement::Center,
            interpolation: Interpolation::Bilinear,
            normalization: Normalization::identity(),
            pad: [114; 3],
            pad_space: PadSpace::Raw,
        }
    }

    pub fn validate(&self) -> Result<(), PreprocessError> {
        if self.width == 0 || self.height == 0 {
            let (width, height) = (self.width, self.height);
            return Err(PreprocessError::ZeroSize { what: "model input", width, height });
        }
        Normalization::new(self.normalization.mean, self.normalization.std).map(drop)
    }

    /// The value written into padded tensor elements of `channel`.
    pub fn pad_value(&self, channel: usize) -> f32 {
        let raw = f32::from(self.pad[channel]);
        match self.pad_space {
            PadSpace::Raw => self.normalization.apply(channel, raw),
            PadSpace::Normalized => raw,
        }
    }

    pub fn content_region(&self, src_w: usize, src_h: usize) -> Result<ContentRegion, PreprocessError> {
        letterbox_rect(src_w, src_h, self.width, self.height, self.fit, self.placement)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Region {
    pub x: usize,
    pub y: usize,
    pub width: usize,
    pub height: usize,
}

impl Region {
    pub const fn new(x: usize, y: usize, width: usize, height: usize) -> Self {
        Self { x, y, width, height }
    }
}

/// Where source pixels land in the destination. It carries both sizes so
/// the inverse mapping needs nothing else.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContentRegion {
    /// Destination pixels covered by resampled source content.
    pub rect: Region,
    /// Source pixels resampled into `rect` (a sub-window for center crop).
    pub source: Region,
    /// `rect` normalized by the destination size.
    pub x0: f32,
    pub y0: f32,
    pub x1: f32,
    pub y1: f32,
    /// Nominal uniform scale: the min ratio for letterbox, the max for center
    /// crop, `dst_w / src_w` for stretch (whose axes differ: see `scale_y`).
    pub scale: f64,
    /// Effective per-axis scales after the rectangles were rounded.
    pub scale_x: f64,
    pub scale_y: f64,
    pub src_w: usize,
    pub src_h: usize,
    pub dst_w: usize,
    pub dst_h: usize,
}

impl ContentRegion {
    pub fn pad_left(&self) -> usize {
        self.rect.x
    }

    pub fn pad_top(&self) -> usize {
        self.rect.y
    }

    pub fn pad_right(&self) -> usize {
        self.dst_w - self.rect.x - self.rect.width
    }

    pub fn pad_bottom(&self) -> usize {
        self.dst_h - self.rect.y - self.rect.height
    }
}

/// `round(a * b / c)` in integers, halves up: a float product can land a
/// hair below an exact .5 and round the other way, and the element and the
/// decoder must agree on every pixel. The product of two usizes fits u128
/// (twice it need not), and the remainder is compared with what is left of
/// `c`, so nothing overflows; a quotient past usize saturates, though the
/// callers' never exceed one of their sizes.
fn mul_div_round(a: usize, b: usize, c: usize) -> usize {
    let (p, c) = (a as u128 * b as u128, c as u128);
    let (q, r) = (p / c, p % c);
    usize::try_from(q + u128::from(r >= c - r)).unwrap_or(usize::MAX)
}

/// Where a `src_w x src_h` image lands inside `dst_w x dst_h` under `fit`.
/// `placement` only matters for letterboxing; a center crop is centred.
pub fn letterbox_rect(
    src_w: usize,
    src_h: usize,
    dst_w: usize,
    dst_h: usize,
    fit: FitMode,
    placement: LetterboxPlacement,
) -> Result<ContentRegion, PreprocessError> {
    let zero = |what, width, height| PreprocessError::ZeroSize { what, width, height };
    if src_w == 0 || src_h == 0 {
        return Err(zero("source", src_w, src_h));
    }
    if dst_w == 0 || dst_h == 0 {
        return Err(zero("destination", dst_w, dst_h));
    }
    let (rx, ry) = (dst_w as f64 / src_w as f64, dst_h as f64 / src_h as f64);
    // Exact aspect comparison, so ties cannot flip on float noise.
    let dst_wider = dst_w as u128 * src_h as u128 >= dst_h as u128 * src_w as u128;
    let (whole_dst, whole_src) = (Region::new(0, 0, dst_w, dst_h), Region::new(0, 0, src_w, src_h));

    let (rect, source, scale) = match fit {
        FitMode::Stretch => (whole_dst, whole_src, rx),
        FitMode::CenterCrop => {
            let (w, h) = if dst_wider {
                (src_w, mul_div_round(dst_h, src_w, dst_w).clamp(1, src_h))
            } else {
                (mul_div_round(dst_w, src_h, dst_h).clamp(1, src_w), src_h)
            };
            let crop = Region::new((src_w - w) / 2, (src_h - h) / 2, w, h);
            (whole_dst, crop, rx.max(ry))
        }
        FitMode::Letterbox => {
            // Clamped to >= 1 so an extreme aspect ratio stays visible.
            let (w, h) = if dst_wider {
                (mul_div_round(src_w, dst_h, src_h).clamp(1, dst_w), dst_h)
            } else {
                (dst_w, mul_div_round(src_h, dst_w, src_w).clamp(1, dst_h))
            };
            let (x, y) = match placement {
                LetterboxPlacement::TopLeft => (0, 0),
                LetterboxPlacement::Center => ((dst_w - w) / 2, (dst_h - h) / 2),
            };
            (Region::new(x, y, w, h), whole_src, rx.min(ry))
        }
    };
    let (fw, fh) = (dst_w as f32, dst_h as f32);
    Ok(ContentRegion {
        rect,
        source,
        x0: rect.x as f32 / fw,
        y0: rect.y as f32 / fh,
        x1: (rect.x + rect.width) as f32 / fw,
        y1: (rect.y + rect.height) as f32 / fh,
        scale,
        scale_x: rect.width as f64 / source.width as f64,
        scale_y: rect.height as f64 / source.height as f64,
        src_w,
        src_h,
        dst_w,
        dst_h,
    })
}

/// Maps a coordinate linearly from span `(from_off, from_len)` onto span
/// `(to_off, to_len)`; used in both directions, per axis.
fn remap(p: f64, from_off: usize, from_len: usize, to_off: usize, to_len: usize) -> f64 {
    to_off as f64 + (p - from_off as f64) * to_len as f64 / from_len as f64
}

/// Destination pixel -> source pixel, unclamped, kept in f64 so the
/// normalized path does not lose precision through an f32 pixel.
fn unletter_f64(region: &ContentRegion, x: f64, y: f64) -> (f64, f64) {
    let (r, s) = (region.rect, region.source);
    let sx = remap(x, r.x, r.width, s.x, s.width);
    (sx, remap(y, r.y, r.height, s.y, s.height))
}

/// Destination pixel -> source pixel, clamped to the source so boxes that
/// reach into the padding stop at the image edge.
pub fn unletter_px(region: &ContentRegion, x: f32, y: f32) -> (f32, f32) {
    let (sx, sy) = unletter_f64(region, f64::from(x), f64::from(y));
    let (w, h) = (region.src_w as f64, region.src_h as f64);
    (sx.clamp(0.0, w) as f32, sy.clamp(0.0, h) as f32)
}

/// Normalized destination point -> normalized source point, in [0, 1].
pub fn unletter_norm(region: &ContentRegion, x: f32, y: f32) -> (f32, f32) {
    let px = f64::from(x) * region.dst_w as f64;
    let (sx, sy) = unletter_f64(region, px, f64::from(y) * region.dst_h as f64);
    let (nx, ny) = (sx / region.src_w as f64, sy / region.src_h as f64);
    (nx.clamp(0.0, 1.0) as f32, ny.clamp(0.0, 1.0) as f32)
}

/// `[x0, y0, x1, y1]` normalized destination box -> normalized source box.
pub fn unletter_box(region: &ContentRegion, b: [f32; 4]) -> [f32; 4] {
    let (x0, y0) = unletter_norm(region, b[0], b[1]);
    let (x1, y1) = unletter_norm(region, b[2], b[3]);
    [x0, y0, x1, y1]
}

/// Inverse of [`unletter_norm`]: normalized source point -> normalized
/// destination point. Unclamped, since cropped-away source falls outside.
pub fn letter_norm(region: &ContentRegion, x: f32, y: f32) -> (f32, f32) {
    let (r, s) = (region.rect, region.source);
    let px = f64::from(x) * region.src_w as f64;
    let py = f64::from(y) * region.src_h as f64;
    let dx = remap(px, s.x, s.width, r.x, r.width) / region.dst_w as f64;
    let dy = remap(py, s.y, s.height, r.y, r.height) / region.dst_h as f64;
    (dx as f32, dy as f32)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LB: FitMode = FitMode::Letterbox;
    const ST: FitMode = FitMode::Stretch;
    const CC: FitMode = FitMode::CenterCrop;
    const C: LetterboxPlacement = LetterboxPlacement::Center;
    const TL: LetterboxPlacement = LetterboxPlacement::TopLeft;

    fn close(a: impl Into<f64>, b: f64, tol: f64) -> bool {
        (a.into() - b).abs() <= tol
    }

    fn geom(src: (usize, usize), dst: usize, fit: FitMode) -> ContentRegion {
        letterbox_rect(src.0, src.1, dst, dst, fit, C).unwrap()
    }

    fn rect(x: usize, y: usize, w: usize, h: usize) -> Region {
        Region::new(x, y, w, h)
    }

    fn pads(r: &ContentRegion) -> [usize; 4] {
        [r.pad_left(), r.pad_top(), r.pad_right(), r.pad_bottom()]
    }

    #[test]
    fn letterbox_rects_and_pads() {
        let hd = geom((1920, 1080), 640, LB);
        assert_eq!(hd.rect, rect(0, 140, 640, 360));
        assert_eq!(hd.source, rect(0, 0, 1920, 1080));
        assert_eq!(pads(&hd), [0, 140, 0, 140]);
        assert!(close(hd.scale, 1.0 / 3.0, 1e-12));
        assert!(close(hd.y0, 140.0 / 640.0, 1e-7) && close(hd.y1, 500.0 / 640.0, 1e-7));
        assert_eq!((hd.x0, hd.x1), (0.0, 1.0));

        let vga = geom((640, 480), 640, LB);
        assert_eq!((vga.rect, vga.scale), (rect(0, 80, 640, 480), 1.0));
        let portrait = geom((480, 640), 640, LB);
        assert_eq!(portrait.rect, rect(80, 0, 480, 640));
        assert_eq!((portrait.x0, portrait.x1), (0.125, 0.875));

        let tl = letterbox_rect(1920, 1080, 640, 640, LB, TL).unwrap();
        assert_eq!(tl.rect, rect(0, 0, 640, 360));
        assert_eq!(pads(&tl), [0, 0, 0, 280]);

        // 479 * 320 / 641 = 239.13 -> 239 rows; the 81 left over split 40/41.
        let odd = geom((641, 479), 320, LB);
        assert_eq!(odd.rect, rect(0, 40, 320, 239));
        assert_eq!(pads(&odd), [0, 40, 0, 41]);
        // 568 * 320 / 1000 = 181.76 rounds up, not down.
        assert_eq!(geom((1000, 568), 320, LB).rect, rect(0, 69, 320, 182));
        // An aspect ratio that would round to zero rows stays one row tall.
        assert_eq!(geom((1000, 1), 13, LB).rect.height, 1);
    }

    #[test]
    fn geometry_invariants() {
        let sizes = [(7, 3, 5, 5), (1, 1000, 17, 13), (1000, 1, 13, 17), (3, 3, 64, 38)];
        for (sw, sh, dw, dh) in sizes {
            for (fit, placement) in [(LB, C), (LB, TL), (ST, C), (CC, C)] {
                let r = letterbox_rect(sw, sh, dw, dh, fit, placement).unwrap();
                assert_eq!(r.pad_left() + r.rect.width + r.pad_right(), dw);
                assert_eq!(r.pad_top() + r.rect.height + r.pad_bottom(), dh);
                let (d, s) = (r.rect, r.source);
                assert!(d.width >= 1 && d.height >= 1 && s.width >= 1 && s.height >= 1);
                assert!(s.x + s.width <= sw && s.y + s.height <= sh);
            }
        }
    }

    /// Sizes up to usize::MAX neither overflow nor break the invariants.
    #[test]
    fn extreme_sizes_do_not_overflow() {
        let m = usize::MAX;
        let sizes = [1, 2, 3, 641, m / 3, m / 2, m / 2 + 1, m - 1, m];
        for &sw in &sizes {
            for &sh in &sizes {
                for (dw, dh) in [(640, 640), (m, 1), (1, m), (m, m - 1), (m / 2, 3)] {
                    for (fit, placement) in [(LB, C), (LB, TL), (ST, C), (CC, C)] {
                        let r = letterbox_rect(sw, sh, dw, dh, fit, placement).unwrap();
                        let (d, s) = (r.rect, r.source);
                        let what = format!("{sw}x{sh} -> {dw}x{dh} {fit:?}: {d:?} from {s:?}");
                        assert!(d.width >= 1 && d.height >= 1 && s.width >= 1 && s.height >= 1, "{what}");
                        assert!(d.x.checked_add(d.width).is_some_and(|e| e <= dw), "{what}");
                        assert!(d.y.checked_add(d.height).is_some_and(|e| e <= dh), "{what}");
                        assert!(s.x.checked_add(s.width).is_some_and(|e| e <= sw), "{what}");
                        assert!(s.y.checked_add(s.height).is_some_and(|e| e <= sh), "{what}");
                    }
                }
            }
        }
        // The integer rounding: halves up, exact at the ends of the range.
        assert_eq!(mul_div_round(5, 1, 2), 3);
        assert_eq!(mul_div_round(7, 1, 2), 4);
        assert_eq!(mul_div_round(568, 320, 1000), 182);
        assert_eq!(mul_div_round(m, m, m), m);
        assert_eq!(mul_div_round(m, m - 1, m), m - 1);
        assert_eq!(mul_div_round(m, 1, 2), m / 2 + 1);
        for (a, b, c) in [(3, 7, 5), (1000, 568, 320), (479, 320, 641), (12, 1, 24), (11, 1, 24)] {
            assert_eq!(mul_div_round(a, b, c), (2 * a * b + c) / (2 * c), "{a} * {b} / {c}");
        }
    }

    #[test]
    fn stretch_and_center_crop() {
        let s = geom((1920, 1080), 640, ST);
        assert_eq!(s.rect, rect(0, 0, 640, 640));
        assert!(close(s.scale_x, 1.0 / 3.0, 1e-12));
        assert!(close(s.scale_y, 640.0 / 1080.0, 1e-12));
        assert_eq!(s.scale, s.scale_x);

        let c = geom((1920, 1080), 640, CC);
        assert_eq!(c.rect, rect(0, 0, 640, 640));
        assert_eq!(c.source, rect(420, 0, 1080, 1080));
        assert!(close(c.scale, 640.0 / 1080.0, 1e-12));
        let [x0, y0, x1, y1] = unletter_box(&c, [0.0, 0.0, 1.0, 1.0]);
        assert!(close(x0, 420.0 / 1920.0, 1e-6) && close(x1, 1500.0 / 1920.0, 1e-6));
        assert_eq!((y0, y1), (0.0, 1.0));
        let tall = letterbox_rect(480, 640, 320, 160, CC, C).unwrap();
        assert_eq!(tall.source, rect(0, 200, 480, 240));
    }

    #[test]
    fn zero_sizes_rejected() {
        let e = letterbox_rect(0, 10, 5, 5, LB, C).unwrap_err();
        let want = PreprocessError::ZeroSize { what: "source", width: 0, height: 10 };
        assert_eq!(e, want);
        assert_eq!(e.to_string(), "source size 0x10 has a zero dimension");
        assert!(letterbox_rect(10, 10, 5, 0, LB, C).is_err());
        assert!(PreprocessSpec::new(0, 640).validate().is_err());
        assert!(PreprocessSpec::new(640, 640).validate().is_ok());
    }

    #[test]
    fn unletter_corners_and_clamping() {
        for placement in [C, TL] {
            let r = letterbox_rect(1920, 1080, 640, 640, LB, placement).unwrap();
            let (a, b) = unletter_norm(&r, r.x0, r.y0);
            let (c, d) = unletter_norm(&r, r.x1, r.y1);
            for (got, want) in [(a, 0.0), (b, 0.0), (c, 1.0), (d, 1.0)] {
                assert!(close(got, want, 1e-6), "{got} vs {want}");
            }
        }
        let r = geom((1920, 1080), 640, LB);
        // The padding bands clamp to the image edge.
        assert_eq!(unletter_norm(&r, 0.5, 0.0), (0.5, 0.0));
        let b = [0.25, 0.0, 0.75, 1.0];
        assert_eq!(unletter_box(&r, b), b);
        assert_eq!(unletter_px(&r, 640.0, 500.0), (1920.0, 1080.0));
        let (mx, my) = unletter_px(&r, 320.0, 320.0);
        assert!(close(mx, 960.0, 1e-3) && close(my, 540.0, 1e-3));
    }

    #[test]
    fn round_trip_random_points() {
        let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            (seed >> 40) as f32 / (1u64 << 24) as f32
        };
        let sizes = [(1920, 1080, 640, 640), (641, 479, 320, 320), (480, 640, 416, 256)];
        for (sw, sh, dw, dh) in sizes {
            for (fit, placement) in [(LB, C), (LB, TL), (ST, C), (CC, C)] {
                let r = letterbox_rect(sw, sh, dw, dh, fit, placement).unwrap();
                for _ in 0..200 {
                    let (x, y) = (next(), next());
                    let (dx, dy) = letter_norm(&r, x, y);
                    if !((0.0..=1.0).contains(&dx) && (0.0..=1.0).contains(&dy)) {
                        assert_eq!(fit, CC, "only a crop may lose source points");
                        continue;
                    }
                    let (bx, by) = unletter_norm(&r, dx, dy);
                    let ok = close(bx, x.into(), 1e-5) && close(by, y.into(), 1e-5);
                    assert!(ok, "{fit:?} ({x}, {y}) came back as ({bx}, {by})");
                }
            }
        }
    }

    #[test]
    fn quantization_round_trips() {
        let q = Quantization::per_tensor(1.0 / 255.0, -128);
        for (real, want) in [(0.0, -128), (1.0, 127), (2.0, 127), (-1.0, -128)] {
            assert_eq!(q.quantize(0, real, -128, 127), want, "{real}");
        }
        assert_eq!(q.quantize(0, f32::NAN, -128, 127), -128);
        for v in -128..=127 {
            assert_eq!(q.quantize(7, q.dequantize(7, v), -128, 127), v);
        }
        let u = Quantization::per_tensor(0.5, 10);
        // Ties go to the even step: +-2.5 to +-2, +-1.5 to +-2, +-0.5 to 0.
        assert_eq!(u.quantize(0, 1.25, 0, 255), 12);
        assert_eq!(u.quantize(0, -1.25, 0, 255), 8);
        assert_eq!(u.quantize(0, 0.75, 0, 255), 12);
        assert_eq!(u.quantize(0, -0.75, 0, 255), 8);
        assert_eq!(u.quantize(0, 0.25, 0, 255), 10);
        assert_eq!(u.quantize(0, -0.25, 0, 255), 10);
        assert_eq!(u.quantize(0, 1.75, 0, 255), 14);
        assert_eq!(u.dequantize(0, 14), 2.0);
        let tiny = Quantization::per_tensor(1e-30, i32::MAX);
        assert_eq!(tiny.quantize(0, 1.0, i32::MIN, i32::MAX), i32::MAX);
        assert_eq!(tiny.quantize(0, -1.0, i32::MIN, i32::MAX), i32::MIN);

        let pc = Quantization::per_channel(3, vec![0.1, 0.2, 0.4], vec![0, 5, -5]).unwrap();
        assert_eq!((pc.scale(1), pc.zero_point(2)), (0.2, -5));
        assert_eq!(pc.quantize(1, 1.0, -128, 127), 10);
        // 1.0 / 0.4 is 2.5 in f32: the even step, 2.
        assert_eq!(pc.quantize(2, 1.0, -128, 127), -3);
        for c in 0..3 {
            for v in -100..=100 {
                assert_eq!(pc.quantize(c, pc.dequantize(c, v), -128, 127), v);
            }
        }
        let one = Quantization::per_channel(0, vec![0.25], vec![3]).unwrap();
        assert_eq!((one.scale(2), one.zero_point(2)), (0.25, 3));

        let err = |s, z| Quantization::per_channel(0, s, z).unwrap_err().to_string();
        assert!(err(vec![], vec![]).contains("no scales"));
        assert!(err(vec![0.1, 0.2], vec![0]).contains("2 scales but 1 zero points"));
        assert!(err(vec![0.1, 0.0], vec![0, 0]).contains("scale[1] = 0"));
        assert!(err(vec![f32::INFINITY], vec![0]).contains("scale[0] = inf"));
    }

    /// RGB -> YUV straight from the Kr/Kb definitions, independent of the
    /// matrix under test.
    fn rgb_to_yuv(c: Colorimetry, rgb: [f64; 3]) -> [f64; 3] {
        let (kr, kb) = c.matrix_weights();
        let [r, g, b] = rgb.map(|v| v / 255.0);
        let y = kr * r + (1.0 - kr - kb) * g + kb * b;
        let (pb, pr) = ((b - y) / (2.0 * (1.0 - kb)), (r - y) / (2.0 * (1.0 - kr)));
        let (ys, yo, cs) = match c.range {
            ColorRange::Limited => (219.0, 16.0, 224.0),
            _ => (255.0, 0.0, 255.0),
        };
        [yo + ys * y, 128.0 + cs * pb, 128.0 + cs * pr]
    }

    fn yuv_to_rgb(c: Colorimetry, yuv: [f64; 3]) -> [f64; 3] {
        let (m, off) = c.yuv_to_rgb_matrix();
        let d = [yuv[0] - off[0], yuv[1] - off[1], yuv[2] - off[2]];
        m.map(|row| row[0] * d[0] + row[1] * d[1] + row[2] * d[2])
    }

    fn assert_rgb(got: [f64; 3], want: [f64; 3], tol: f64) {
        let ok = (0..3).all(|i| close(got[i], want[i], tol));
        assert!(ok, "{got:?} vs {want:?}");
    }

    #[test]
    fn yuv_matrices() {
        let c = Colorimetry::default();
        assert_eq!(c, Colorimetry::BT601_LIMITED);
        assert_rgb(yuv_to_rgb(c, [16.0, 128.0, 128.0]), [0.0; 3], 1e-6);
        assert_rgb(yuv_to_rgb(c, [235.0, 128.0, 128.0]), [255.0; 3], 1e-6);
        let (m, off) = c.yuv_to_rgb_matrix();
        assert_eq!(off, [16.0, 128.0, 128.0]);
        // The widely published BT.601 studio-swing coefficients.
        let known = [(0, 1.164384), (2, 1.596027), (4, -0.391762), (5, -0.812968), (7, 2.017232)];
        for (k, want) in known {
            let got = m[k / 3][k % 3];
            assert!(close(got, want, 1e-6), "m[{}][{}] = {got}", k / 3, k % 3);
        }

        let (full709, red) = (Colorimetry::BT709_FULL, [255.0, 0.0, 0.0]);
        let yuv = rgb_to_yuv(full709, red);
        assert!(close(yuv[0], 0.2126 * 255.0, 1e-9));
        assert_rgb(yuv_to_rgb(full709, yuv), red, 1e-9);
        // Decoding BT.709 with the BT.601 matrix must visibly differ.
        assert!(yuv_to_rgb(Colorimetry::BT601_FULL, yuv)[1].abs() > 10.0);

        let colors = [red, [0.0, 255.0, 0.0], [0.0, 0.0, 255.0], [12.0, 200.0, 77.0]];
        for space in [ColorSpace::Bt601, ColorSpace::Bt709, ColorSpace::Bt2020] {
            for range in [ColorRange::Limited, ColorRange::Full] {
                let c = Colorimetry::new(space, range);
                for rgb in colors {
                    assert_rgb(yuv_to_rgb(c, rgb_to_yuv(c, rgb)), rgb, 1e-9);
                }
            }
        }
    }

    #[test]
    fn gst_colorimetry_strings() {
        use Colorimetry as K;
        let cases: [(Option<K>, &[&str]); 8] = [
            (Some(K::BT601_LIMITED), &["bt601", " bt601 ", "2:4:5:4", "2:2:5:4"]),
            (Some(K::BT601_FULL), &["jpeg", "1:4:0:0"]),
            (Some(K::BT709_LIMITED), &["bt709", "BT709", "smpte240m", "2:3:5:1", "2:5:6:6"]),
            (Some(K::BT709_FULL), &["sRGB", "1:3:5:1"]),
            (Some(K::BT2020_LIMITED), &["bt2020", "bt2100-pq", "bt2100-hlg", "2:6:14:9"]),
            (Some(K::BT2020_FULL), &["1:6:14:9"]),
            (None, &["1:1:5:1", "0:4:0:0", "2:0:0:0", "3:4:0:0", "2:4:0", "2:4:0:0:0"]),
            (None, &["a:b:c:d", "2:4:0:x", "", "bt999"]),
        ];
        for (want, strings) in cases {
            for s in strings {
                assert_eq!(K::from_gst_str(s), want, "{s:?}");
            }
        }
    }

    #[test]
    fn rgb_triplet_parsing() {
        let imagenet = [0.485, 0.456, 0.406];
        assert_eq!(parse_rgb_triplet("0.485,0.456,0.406").unwrap(), imagenet);
        assert_eq!(parse_rgb_triplet(" 0.5 ").unwrap(), [0.5; 3]);
        assert_eq!(parse_rgb_triplet("1, 2 ,3").unwrap(), [1.0, 2.0, 3.0]);
        let msg = |s: &str| parse_rgb_triplet(s).unwrap_err().to_string();
        let pre = "invalid value: ";
        assert_eq!(msg("1,2"), format!("{pre}expected 1 or 3 values in \"1,2\", got 2"));
        assert_eq!(msg("a,b,c"), format!("{pre}'a' in \"a,b,c\" is not a number"));
        assert_eq!(msg("nan"), format!("{pre}'nan' in \"nan\" is not finite"));
        assert!(msg("1,inf,3").contains("'inf'") && msg("1,,3").contains("''"));
        assert_eq!(broadcast_rgb(&[2.0]).unwrap(), [2.0; 3]);
        assert!(broadcast_rgb(&[1.0, 2.0, 3.0, 4.0]).is_err());
        assert!(broadcast_rgb(&[f32::NAN]).is_err());
    }

    #[test]
    fn normalization_and_pad_value() {
        let (id, inet) = (Normalization::identity(), Normalization::imagenet());
        assert!(id.is_identity() && !inet.is_identity());
        assert_eq!(id.apply(1, 255.0), 1.0);
        assert!(close(inet.apply(0, 255.0), (1.0 - 0.485) / 0.229, 1e-5));
        assert!(Normalization::new([0.0; 3], [1.0, 0.0, 1.0]).is_err());
        assert!(Normalization::new([f32::NAN, 0.0, 0.0], [1.0; 3]).is_err());

        let mut spec = PreprocessSpec::new(640, 640);
        assert!(close(spec.pad_value(0), 114.0 / 255.0, 1e-7));
        let region = spec.content_region(1920, 1080).unwrap();
        assert_eq!(region.rect, rect(0, 140, 640, 360));
        spec.normalization = inet;
        spec.pad = [0; 3];
        assert!(close(spec.pad_value(2), -0.406 / 0.225, 1e-5));
        spec.pad_space = PadSpace::Normalized;
        assert_eq!(spec.pad_value(2), 0.0);
        spec.normalization.std[1] = f32::INFINITY;
        assert!(spec.validate().is_err());
    }
}
