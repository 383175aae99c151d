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
mod tests;
