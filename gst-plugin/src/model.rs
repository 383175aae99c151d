//! The model settings every element that makes tensors shares: the properties that describe the
//! model input (size, colour space, layout, element type, fit, resampling, normalization,
//! quantization, source region, threads), how their strings are parsed and refused, and what they
//! mean for caps and for the converter. One module, so two elements cannot drift apart.

use crate::caps::{model_dims, TensorCaps};
use crate::video::pixel_format;
use edgefirst_tensor::convert::ConvertSpec;
use edgefirst_tensor::preprocess::{parse_rgb_triplet, Colorimetry, Interpolation, Region};
use gst::glib;
use gst::prelude::*;
use gst_video::VideoFormat;
use std::collections::BTreeMap;

pub const DEFAULT_FILL: u32 = 0x8080_80ff;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstEdgeFirstModelColorspace")]
pub enum ModelColorspace {
    #[default]
    #[enum_value(name = "RGB", nick = "rgb")]
    Rgb = 0,
    #[enum_value(name = "BGR", nick = "bgr")]
    Bgr = 1,
    #[enum_value(name = "Grayscale", nick = "gray")]
    Gray = 2,
    #[enum_value(name = "RGBA", nick = "rgba")]
    Rgba = 3,
}

impl ModelColorspace {
    pub fn convert(self) -> edgefirst_tensor::convert::Colorspace {
        use edgefirst_tensor::convert::Colorspace as C;
        match self {
            ModelColorspace::Rgb => C::Rgb,
            ModelColorspace::Bgr => C::Bgr,
            ModelColorspace::Gray => C::Gray,
            ModelColorspace::Rgba => C::Rgba,
        }
    }

    pub fn channels(self) -> usize {
        match self {
            ModelColorspace::Gray => 1,
            ModelColorspace::Rgba => 4,
            _ => 3,
        }
    }

    /// The packed pixel format that already is this colourspace, byte for byte.
    pub fn pixel_format(self) -> edgefirst_tensor::PixelFormat {
        use edgefirst_tensor::PixelFormat as P;
        match self {
            ModelColorspace::Rgb => P::Rgb,
            ModelColorspace::Bgr => P::Bgr,
            ModelColorspace::Gray => P::Gray8,
            ModelColorspace::Rgba => P::Rgba,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstEdgeFirstModelLayout")]
pub enum ModelLayout {
    #[default]
    #[enum_value(name = "Height, width, channels (interleaved)", nick = "hwc")]
    Hwc = 0,
    #[enum_value(name = "Channels, height, width (planar)", nick = "chw")]
    Chw = 1,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstEdgeFirstModelDtype")]
pub enum ModelDtype {
    #[default]
    #[enum_value(name = "uint8", nick = "uint8")]
    Uint8 = 0,
    #[enum_value(name = "int8", nick = "int8")]
    Int8 = 1,
    #[enum_value(name = "uint16", nick = "uint16")]
    Uint16 = 2,
    #[enum_value(name = "int16", nick = "int16")]
    Int16 = 3,
    #[enum_value(name = "uint32", nick = "uint32")]
    Uint32 = 4,
    #[enum_value(name = "int32", nick = "int32")]
    Int32 = 5,
    #[enum_value(name = "uint64", nick = "uint64")]
    Uint64 = 6,
    #[enum_value(name = "int64", nick = "int64")]
    Int64 = 7,
    #[enum_value(name = "float16", nick = "float16")]
    Float16 = 8,
    #[enum_value(name = "float32", nick = "float32")]
    Float32 = 9,
    #[enum_value(name = "float64", nick = "float64")]
    Float64 = 10,
}

impl ModelDtype {
    pub const ALL: [ModelDtype; 11] = [
        ModelDtype::Uint8,
        ModelDtype::Int8,
        ModelDtype::Uint16,
        ModelDtype::Int16,
        ModelDtype::Uint32,
        ModelDtype::Int32,
        ModelDtype::Uint64,
        ModelDtype::Int64,
        ModelDtype::Float16,
        ModelDtype::Float32,
        ModelDtype::Float64,
    ];

    pub fn dtype(self) -> edgefirst_tensor::DType {
        edgefirst_tensor::DType::ALL[self as usize]
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstEdgeFirstModelFit")]
pub enum ModelFit {
    #[default]
    #[enum_value(name = "Keep the aspect ratio, pad with fill-color", nick = "letterbox")]
    Letterbox = 0,
    #[enum_value(name = "Scale each axis to the model size", nick = "stretch")]
    Stretch = 1,
    #[enum_value(name = "Keep the aspect ratio, crop the centre", nick = "center-crop")]
    CenterCrop = 2,
}

impl ModelFit {
    pub fn fit_mode(self) -> edgefirst_tensor::preprocess::FitMode {
        use edgefirst_tensor::preprocess::FitMode;
        match self {
            ModelFit::Letterbox => FitMode::Letterbox,
            ModelFit::Stretch => FitMode::Stretch,
            ModelFit::CenterCrop => FitMode::CenterCrop,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstEdgeFirstInterpolation")]
pub enum ModelInterpolation {
    #[default]
    #[enum_value(name = "Bilinear", nick = "bilinear")]
    Bilinear = 0,
    #[enum_value(name = "Nearest neighbour", nick = "nearest")]
    Nearest = 1,
    #[enum_value(
        name = "Area: OpenCV INTER_AREA (box average on downscale; TF/Keras area-style training)",
        nick = "area"
    )]
    Area = 2,
    #[enum_value(
        name = "Antialiased bilinear: PIL Image.resize(BILINEAR), torchvision antialias=True",
        nick = "bilinear-antialias"
    )]
    BilinearAntialias = 3,
    #[enum_value(
        name = "Bicubic a=-0.5, antialiased on downscale: PIL Image.resize(BICUBIC), torchvision",
        nick = "bicubic"
    )]
    Bicubic = 4,
    #[enum_value(name = "Bicubic a=-0.75, not antialiased: OpenCV INTER_CUBIC", nick = "bicubic-opencv")]
    BicubicOpencv = 5,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub model_width: u32,
    pub model_height: u32,
    pub colorspace: ModelColorspace,
    pub layout: ModelLayout,
    pub dtype: ModelDtype,
    pub fit: ModelFit,
    pub interpolation: ModelInterpolation,
    pub fill_color: u32,
    pub mean: [f32; 3],
    pub std: [f32; 3],
    pub quant_scale: f64,
    pub quant_zero_point: i32,
    pub n_threads: u32,
    /// The part of the frame to use (x, y, width, height); the whole frame when None.
    pub source_region: Option<Region>,
    /// Per property: why the last value given was refused. GObject setters cannot fail, so a
    /// refusal is kept here and stops the element at its start with this text.
    refused: BTreeMap<&'static str, String>,
    /// The properties the user set (with a value that was taken): these win over downstream caps.
    set_by_user: std::collections::BTreeSet<&'static str>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            model_width: 0,
            model_height: 0,
            colorspace: ModelColorspace::Rgb,
            layout: ModelLayout::Hwc,
            dtype: ModelDtype::Uint8,
            fit: ModelFit::Letterbox,
            interpolation: ModelInterpolation::Bilinear,
            fill_color: DEFAULT_FILL,
            mean: [0.0; 3],
            std: [1.0; 3],
            quant_scale: 0.0,
            quant_zero_point: 0,
            n_threads: 1,
            source_region: None,
            refused: BTreeMap::new(),
            set_by_user: Default::default(),
        }
    }
}

const TRIPLET_FORM: &str = "one or three finite numbers separated by commas";
const REGION_FORM: &str = "\"x,y,width,height\" in pixels, width and height non-zero, e.g. \"0,0,640,480\"";

const NAMES: [&str; 15] = [
    "model-width",
    "model-height",
    "model-colorspace",
    "model-layout",
    "model-dtype",
    "letterbox",
    "fit",
    "interpolation",
    "model-quant-scale",
    "model-quant-zero-point",
    "source-region",
    "n-threads",
    "fill-color",
    "model-mean",
    "model-std",
];

/// The model properties, as every tensor-making element installs them.
pub fn properties() -> Vec<glib::ParamSpec> {
    vec![
        glib::ParamSpecUInt::builder("model-width")
            .nick("Model width")
            .blurb("Width of the model input in pixels (0: from downstream caps, else the input's width)")
            .maximum(16384)
            .mutable_ready()
            .build(),
        glib::ParamSpecUInt::builder("model-height")
            .nick("Model height")
            .blurb("Height of the model input in pixels (0: from downstream caps, else the input's height)")
            .maximum(16384)
            .mutable_ready()
            .build(),
        glib::ParamSpecEnum::builder_with_default("model-colorspace", ModelColorspace::Rgb)
            .nick("Model colour space")
            .blurb("Channels the model expects (unset: from downstream caps — the channel count or video format — else rgb)")
            .mutable_ready()
            .build(),
        glib::ParamSpecEnum::builder_with_default("model-layout", ModelLayout::Hwc)
            .nick("Model layout")
            .blurb("Interleaved (hwc) or planar (chw) tensor (unset: from the order of downstream's dimensions, else hwc)")
            .mutable_ready()
            .build(),
        glib::ParamSpecEnum::builder_with_default("model-dtype", ModelDtype::Uint8)
            .nick("Model element type")
            .blurb("Element type of the tensor (unset: from downstream's types, else uint8)")
            .mutable_ready()
            .build(),
        glib::ParamSpecBoolean::builder("letterbox")
            .nick("Letterbox")
            .blurb("Keep the aspect ratio and pad with fill-color (true) or stretch (false); fit says the same with center-crop too")
            .default_value(true)
            .mutable_ready()
            .build(),
        glib::ParamSpecEnum::builder_with_default("fit", ModelFit::Letterbox)
            .nick("Fit")
            .blurb("How the picture fills the model input")
            .mutable_ready()
            .build(),
        glib::ParamSpecEnum::builder_with_default("interpolation", ModelInterpolation::Bilinear)
            .nick("Interpolation")
            .blurb("Resampling filter")
            .mutable_ready()
            .build(),
        glib::ParamSpecDouble::builder("model-quant-scale")
            .nick("Quantization scale")
            .blurb("Scale of an int8/uint8 model input: q = round(x / scale) + zero-point, x the normalized value (0: not quantized; int8 is then the pixel value - 128); 1/scale must be a finite float32")
            .minimum(0.0)
            .default_value(0.0)
            .mutable_ready()
            .build(),
        glib::ParamSpecInt::builder("model-quant-zero-point")
            .nick("Quantization zero point")
            .blurb("Zero point of an int8/uint8 model input")
            .minimum(-128)
            .maximum(255)
            .default_value(0)
            .mutable_ready()
            .build(),
        glib::ParamSpecString::builder("source-region")
            .nick("Source region")
            .blurb("Part of the frame to convert as \"x,y,width,height\" in pixels (empty: the whole frame); a value that does not parse stops the element at start")
            .mutable_ready()
            .build(),
        glib::ParamSpecUInt::builder("n-threads")
            .nick("Threads")
            .blurb("Threads converting: a frame's rows split between them (edgefirsttensorbatch: its slots)")
            .minimum(1)
            .maximum(64)
            .default_value(1)
            .mutable_ready()
            .build(),
        glib::ParamSpecUInt::builder("fill-color")
            .nick("Fill colour")
            .blurb("Letterbox padding as 0xRRGGBBAA")
            .default_value(DEFAULT_FILL)
            .mutable_ready()
            .build(),
        glib::ParamSpecString::builder("model-mean")
            .nick("Mean")
            .blurb("Per-channel mean subtracted from values scaled to 0..1: one finite value or three, e.g. \"0.485,0.456,0.406\"; a value that does not parse stops the element at start")
            .default_value(Some("0,0,0"))
            .mutable_ready()
            .build(),
        glib::ParamSpecString::builder("model-std")
            .nick("Standard deviation")
            .blurb("Per-channel divisor applied after the mean: one value or three, each with a finite float32 reciprocal, e.g. \"0.229,0.224,0.225\"; a value that does not parse stops the element at start")
            .default_value(Some("1,1,1"))
            .mutable_ready()
            .build(),
    ]
}

/// "x,y,width,height" → a region; empty → none. Bounds against the frame are checked at caps
/// time ([`Settings::check_region`]); here only what no frame could satisfy.
pub fn parse_region(text: &str) -> Result<Option<Region>, String> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    let v: Vec<usize> = text
        .split(',')
        .map(|p| p.trim().parse::<usize>().map_err(|_| format!("`{}` is not a pixel count", p.trim())))
        .collect::<Result<_, _>>()?;
    match v[..] {
        [x, y, width, height] if width > 0 && height > 0 => {
            if x.checked_add(width).is_none() || y.checked_add(height).is_none() {
                return Err("x + width or y + height overflows".into());
            }
            Ok(Some(Region { x, y, width, height }))
        }
        [_, _, _, _] => Err("width and height must be non-zero".into()),
        _ => Err(format!("{} values where four are needed", v.len())),
    }
}

/// Mean or std values: finite, and for std each reciprocal finite too (a std of 1e-45 would turn
/// every output into an infinity or -0.0).
pub fn parse_triplet(name: &str, text: &str) -> Result<[f32; 3], String> {
    let v = parse_rgb_triplet(text).map_err(|e| e.to_string())?;
    if name == "model-std" {
        if let Some(bad) = v.iter().find(|s| !(1.0 / **s).is_finite()) {
            return Err(format!("{bad} has no finite reciprocal"));
        }
    }
    Ok(v)
}

impl Settings {
    /// Set a model property. `false` when `name` is not one.
    pub fn set(&mut self, name: &str, value: &glib::Value) -> bool {
        let Some(&pspec_name) = NAMES.iter().find(|n| **n == name) else { return false };
        let text = || value.get::<Option<String>>().ok().flatten().unwrap_or_default();
        let outcome: Result<(), String> = match name {
            "model-width" => {
                self.model_width = value.get().unwrap_or(0);
                Ok(())
            }
            "model-height" => {
                self.model_height = value.get().unwrap_or(0);
                Ok(())
            }
            "model-colorspace" => {
                self.colorspace = value.get().unwrap_or_default();
                Ok(())
            }
            "model-layout" => {
                self.layout = value.get().unwrap_or_default();
                Ok(())
            }
            "model-dtype" => {
                self.dtype = value.get().unwrap_or_default();
                Ok(())
            }
            "letterbox" => {
                self.fit = if value.get().unwrap_or(true) { ModelFit::Letterbox } else { ModelFit::Stretch };
                Ok(())
            }
            "fit" => {
                self.fit = value.get().unwrap_or_default();
                Ok(())
            }
            "interpolation" => {
                self.interpolation = value.get().unwrap_or_default();
                Ok(())
            }
            "model-quant-scale" => {
                let s: f64 = value.get().unwrap_or(0.0);
                if s != 0.0 && !((s as f32).is_finite() && s as f32 > 0.0 && (1.0 / (s as f32)).is_finite()) {
                    Err(format!(
                        "`{s:e}` refused (as float32 it is {} with reciprocal {}); accepted: 0 (not quantized) or a positive scale between about 3e-38 and 3e38",
                        s as f32,
                        1.0 / (s as f32)
                    ))
                } else {
                    self.quant_scale = s;
                    Ok(())
                }
            }
            "model-quant-zero-point" => {
                self.quant_zero_point = value.get().unwrap_or(0);
                Ok(())
            }
            "n-threads" => {
                self.n_threads = value.get().unwrap_or(1);
                Ok(())
            }
            "fill-color" => {
                self.fill_color = value.get().unwrap_or(DEFAULT_FILL);
                Ok(())
            }
            "source-region" => {
                let t = text();
                parse_region(&t)
                    .map(|r| {
                        self.source_region = r;
                    })
                    .map_err(|e| format!("`{t}` refused ({e}); accepted: {REGION_FORM}"))
            }
            "model-mean" | "model-std" => {
                let t = value.get::<Option<String>>().ok().flatten();
                let t = t.unwrap_or_else(|| if name == "model-mean" { "0,0,0" } else { "1,1,1" }.into());
                let example = if name == "model-mean" { "0.485,0.456,0.406" } else { "0.229,0.224,0.225" };
                match parse_triplet(name, &t) {
                    Ok(v) if name == "model-mean" => {
                        self.mean = v;
                        Ok(())
                    }
                    Ok(v) => {
                        self.std = v;
                        Ok(())
                    }
                    Err(e) => {
                        Err(format!("`{t}` refused ({e}); accepted: {TRIPLET_FORM}, e.g. \"{example}\""))
                    }
                }
            }
            _ => return false,
        };
        match outcome {
            Ok(()) => {
                self.refused.remove(pspec_name);
                // `letterbox` and `fit` say the same thing.
                self.set_by_user.insert(if pspec_name == "letterbox" { "fit" } else { pspec_name });
            }
            Err(e) => {
                self.refused.insert(pspec_name, e);
            }
        }
        true
    }

    /// Whether the user set `name` (then it wins over what downstream caps say).
    pub fn is_set(&self, name: &str) -> bool {
        self.set_by_user.contains(name)
    }

    /// Why the element must not start: every property whose last value was refused.
    pub fn refusal(&self) -> Option<String> {
        (!self.refused.is_empty()).then(|| {
            self.refused
                .iter()
                .map(|(name, why)| format!("property {name}: {why}"))
                .collect::<Vec<_>>()
                .join("; ")
        })
    }

    /// Read a model property. None when `name` is not one.
    pub fn get(&self, name: &str) -> Option<glib::Value> {
        let triplet = |v: [f32; 3]| format!("{},{},{}", v[0], v[1], v[2]);
        Some(match name {
            "model-width" => self.model_width.to_value(),
            "model-height" => self.model_height.to_value(),
            "model-colorspace" => self.colorspace.to_value(),
            "model-layout" => self.layout.to_value(),
            "model-dtype" => self.dtype.to_value(),
            "letterbox" => (self.fit == ModelFit::Letterbox).to_value(),
            "fit" => self.fit.to_value(),
            "interpolation" => self.interpolation.to_value(),
            "model-quant-scale" => self.quant_scale.to_value(),
            "model-quant-zero-point" => self.quant_zero_point.to_value(),
            "n-threads" => self.n_threads.to_value(),
            "source-region" => {
                self.source_region.map(|r| format!("{},{},{},{}", r.x, r.y, r.width, r.height)).to_value()
            }
            "fill-color" => self.fill_color.to_value(),
            "model-mean" => triplet(self.mean).to_value(),
            "model-std" => triplet(self.std).to_value(),
            _ => return None,
        })
    }

    /// The source region inside a `w`x`h` frame, or why it is not.
    pub fn check_region(&self, w: u32, h: u32) -> Result<(), String> {
        let Some(r) = self.source_region else { return Ok(()) };
        let fits = |start: usize, len: usize, bound: u32| {
            start.checked_add(len).is_some_and(|e| e <= bound as usize)
        };
        if fits(r.x, r.width, w) && fits(r.y, r.height, h) {
            Ok(())
        } else {
            Err(format!(
                "source-region {},{},{},{} is out of bounds of the {w}x{h} frame",
                r.x, r.y, r.width, r.height
            ))
        }
    }

    pub fn model_size(&self, in_w: u32, in_h: u32) -> (u32, u32) {
        (
            if self.model_width == 0 { in_w } else { self.model_width },
            if self.model_height == 0 { in_h } else { self.model_height },
        )
    }

    pub fn tensor_caps(&self, in_w: u32, in_h: u32, framerate: Option<gst::Fraction>) -> TensorCaps {
        let (w, h) = self.model_size(in_w, in_h);
        TensorCaps {
            dtype: self.dtype.dtype(),
            dims: model_dims(
                self.colorspace.channels(),
                self.layout == ModelLayout::Chw,
                w as usize,
                h as usize,
            ),
            framerate,
        }
    }

    /// Why an input cannot become the model tensor without conversion, or None when the frame
    /// already is that tensor byte for byte (dense rows are checked per buffer).
    pub fn conversion_needed(&self, format: VideoFormat, w: u32, h: u32) -> Option<String> {
        let mut why = Vec::new();
        if pixel_format(format) != Some(self.colorspace.pixel_format()) {
            why.push(format!("{} → {:?} colour", format.to_str(), self.colorspace));
        }
        if self.model_size(w, h) != (w, h) {
            let (mw, mh) = self.model_size(w, h);
            let fit = match self.fit {
                ModelFit::Letterbox => "letterbox",
                ModelFit::Stretch => "stretch",
                ModelFit::CenterCrop => "center-crop",
            };
            why.push(format!("{w}x{h} → {mw}x{mh} {fit}"));
        }
        if self.layout == ModelLayout::Chw && self.colorspace.channels() > 1 {
            why.push("hwc → chw".into());
        }
        if self.dtype != ModelDtype::Uint8 {
            why.push(format!("uint8 → {}", self.dtype.dtype()));
        }
        if self.mean != [0.0; 3] || self.std != [1.0; 3] {
            why.push("mean/std normalization".into());
        }
        if self.quant_scale != 0.0 {
            why.push("quantization".into());
        }
        if let Some(r) = self.source_region {
            why.push(format!("crop to {}x{} at ({}, {})", r.width, r.height, r.x, r.y));
        }
        (!why.is_empty()).then(|| why.join(", "))
    }

    /// Whether the model input can also be offered as a video frame (8-bit interleaved, raw).
    pub fn image_output(&self) -> Option<VideoFormat> {
        let raw = self.dtype == ModelDtype::Uint8
            && (self.layout == ModelLayout::Hwc || self.colorspace.channels() == 1)
            && self.mean == [0.0; 3]
            && self.std == [1.0; 3]
            && self.quant_scale == 0.0;
        raw.then(|| crate::video::video_format(self.colorspace.pixel_format())).flatten()
    }

    /// The conversion for frames described by `info`: the settings, the input's YUV matrix (BT.601
    /// limited where the caps say nothing usable) and where its chroma sits, as GStreamer's
    /// VideoInfo reads the caps (their chroma-site where they carry a colorimetry, else the size's
    /// default: mpeg2 above 576 lines).
    pub fn spec_for(&self, info: &gst_video::VideoInfo) -> ConvertSpec {
        let colorimetry = Colorimetry::from_gst_str(&info.colorimetry().to_string()).unwrap_or_default();
        let chroma_site = edgefirst_tensor::preprocess::ChromaSite::from_gst_flags(info.chroma_site().bits());
        ConvertSpec { chroma_site, ..self.spec(colorimetry) }
    }

    pub fn spec(&self, colorimetry: Colorimetry) -> ConvertSpec {
        let c = self.fill_color;
        ConvertSpec {
            fit: self.fit.fit_mode(),
            interpolation: match self.interpolation {
                ModelInterpolation::Bilinear => Interpolation::Bilinear,
                ModelInterpolation::Nearest => Interpolation::Nearest,
                ModelInterpolation::Area => Interpolation::Area,
                ModelInterpolation::BilinearAntialias => Interpolation::BilinearAntialias,
                ModelInterpolation::Bicubic => Interpolation::Bicubic,
                ModelInterpolation::BicubicOpencv => Interpolation::BicubicOpencv,
            },
            colorimetry,
            mean: self.mean,
            std: self.std,
            quantization: (self.quant_scale != 0.0)
                .then_some((self.quant_scale as f32, self.quant_zero_point)),
            fill: [(c >> 24) as u8, (c >> 16) as u8, (c >> 8) as u8, c as u8],
            source_region: self.source_region,
            ..ConvertSpec::default()
        }
    }
}
