use super::{ModelColorspace, ModelDtype, ModelFit, ModelInterpolation, ModelLayout};
use crate::caps::{model_dims, TensorCaps, TENSORS_MEDIA_TYPE};
use crate::import_cache::{ImportCache, ImportKey};
use crate::meta::{dtype_code, TensorInfo, TensorMeta};
use crate::video::pixel_format;
use edgefirst_tensor::convert::{ConvertSpec, Converter, DstLayout, SrcImage};
use edgefirst_tensor::preprocess::{parse_rgb_triplet, Colorimetry, ContentRegion, Interpolation, Region};
use edgefirst_tensor::{
    byte_strides, CpuAccess, DType, PixelFormat, PixelLayout, PlaneDescriptor, StrideSpec, TensorDyn,
};
use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::prelude::*;
use gst_base::subclass::prelude::*;
use gst_video::prelude::*;
use gst_video::VideoFormat;
use std::os::fd::BorrowedFd;
use std::sync::{LazyLock, Mutex};

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "edgefirsttensor",
        gst::DebugColorFlags::empty(),
        Some("EdgeFirst camera frames into tensors"),
    )
});

const DEFAULT_FILL: u32 = 0x8080_80ff;
const DEFAULT_CACHE: u32 = 32;

#[derive(Debug, Clone, PartialEq)]
struct Settings {
    model_width: u32,
    model_height: u32,
    colorspace: ModelColorspace,
    layout: ModelLayout,
    dtype: ModelDtype,
    fit: ModelFit,
    interpolation: ModelInterpolation,
    fill_color: u32,
    mean: [f32; 3],
    std: [f32; 3],
    quant_scale: f64,
    quant_zero_point: i32,
    n_threads: u32,
    import_cache_size: u32,
    /// The part of the frame to use (x, y, width, height); the whole frame when None.
    source_region: Option<Region>,
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
            import_cache_size: DEFAULT_CACHE,
            source_region: None,
        }
    }
}

impl Settings {
    fn model_size(&self, in_w: u32, in_h: u32) -> (u32, u32) {
        (
            if self.model_width == 0 { in_w } else { self.model_width },
            if self.model_height == 0 { in_h } else { self.model_height },
        )
    }

    fn tensor_caps(&self, in_w: u32, in_h: u32, framerate: Option<gst::Fraction>) -> TensorCaps {
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
    fn conversion_needed(&self, format: VideoFormat, w: u32, h: u32) -> Option<String> {
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
    fn image_output(&self) -> Option<VideoFormat> {
        let raw = self.dtype == ModelDtype::Uint8
            && (self.layout == ModelLayout::Hwc || self.colorspace.channels() == 1)
            && self.mean == [0.0; 3]
            && self.std == [1.0; 3]
            && self.quant_scale == 0.0;
        raw.then(|| crate::video::video_format(self.colorspace.pixel_format())).flatten()
    }

    fn spec(&self, colorimetry: Colorimetry) -> ConvertSpec {
        let c = self.fill_color;
        ConvertSpec {
            fit: self.fit.fit_mode(),
            interpolation: match self.interpolation {
                ModelInterpolation::Bilinear => Interpolation::Bilinear,
                ModelInterpolation::Nearest => Interpolation::Nearest,
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Output {
    /// video/x-raw out, the input frame itself.
    Image,
    /// other/tensors out, the input frame itself (it already is the model tensor).
    Tensor,
}

struct Negotiated {
    info: gst_video::VideoInfo,
    format: PixelFormat,
    output: Output,
    tensor: Option<TensorCaps>,
    /// Present when the output is converted (not the input frame itself).
    converter: Option<Converter>,
    /// The quantization the converter applies, reported in every buffer's meta.
    quantization: Option<(f32, i32)>,
}

/// What must match for a cached import to be served for this frame.
#[derive(Debug, Clone, PartialEq)]
struct ImportGeometry {
    format: VideoFormat,
    width: u32,
    height: u32,
    /// Per plane: the kernel's key of the bytes and the row stride.
    planes: Vec<(ImportKey, i32)>,
    /// Per plane: the size of its file, which a recycled key could not fake.
    sizes: Vec<u64>,
}

struct State {
    negotiated: Option<Negotiated>,
    cache: ImportCache<ImportGeometry, TensorDyn>,
}

pub struct EdgeFirstTensor {
    settings: Mutex<Settings>,
    state: Mutex<State>,
}

impl Default for EdgeFirstTensor {
    fn default() -> Self {
        EdgeFirstTensor {
            settings: Mutex::new(Settings::default()),
            state: Mutex::new(State { negotiated: None, cache: ImportCache::new(DEFAULT_CACHE as usize) }),
        }
    }
}

/// Plane offsets and strides of one buffer, from its GstVideoMeta or the caps.
struct BufferLayout {
    offsets: Vec<usize>,
    strides: Vec<i32>,
}

impl EdgeFirstTensor {
    /// Offsets and strides this buffer really has, checked against its size: a GstVideoMeta that
    /// describes bytes the buffer does not hold is an error, never a read past the end.
    fn buffer_layout(&self, buf: &gst::BufferRef, neg: &Negotiated) -> Result<BufferLayout, String> {
        let info = &neg.info;
        let (offsets, strides) = match buf.meta::<gst_video::VideoMeta>() {
            Some(m) => {
                if (m.format(), m.width(), m.height()) != (info.format(), info.width(), info.height()) {
                    return Err(format!(
                        "GstVideoMeta describes {} {}x{} but the caps say {} {}x{}",
                        m.format().to_str(),
                        m.width(),
                        m.height(),
                        info.format().to_str(),
                        info.width(),
                        info.height()
                    ));
                }
                (m.offset().to_vec(), m.stride().to_vec())
            }
            None => (info.offset().to_vec(), info.stride().to_vec()),
        };
        let n = neg.format.num_planes();
        if offsets.len() < n || strides.len() < n {
            return Err(format!(
                "{} needs {n} planes, the buffer describes {}",
                neg.format.name(),
                offsets.len()
            ));
        }
        let (w, h) = (info.width() as usize, info.height() as usize);
        let size = buf.size();
        for i in 0..n {
            let s = neg.format.plane_sampling(i, 1);
            let (row, rows) = (s.row_bytes(w), s.rows(h));
            let stride = strides[i];
            if stride <= 0 || (stride as usize) < row {
                return Err(format!("plane {i} stride {stride} is shorter than its {row}-byte rows"));
            }
            let end = offsets[i].checked_add((rows - 1) * stride as usize + row);
            if end.is_none_or(|e| e > size) {
                return Err(format!(
                    "plane {i} at offset {} with stride {stride} needs {} bytes but the buffer holds {size}",
                    offsets[i],
                    end.map_or("more than usize".to_string(), |e| e.to_string())
                ));
            }
        }
        Ok(BufferLayout { offsets: offsets[..n].to_vec(), strides: strides[..n].to_vec() })
    }

    /// Import the frame's planes as a tensor without copying, through the cache. `Ok(None)` when
    /// the memory has no fd (system memory is read in place instead).
    fn import(
        cache: &mut ImportCache<ImportGeometry, TensorDyn>,
        buf: &gst::BufferRef,
        neg: &Negotiated,
        layout: &BufferLayout,
    ) -> Result<Option<u64>, String> {
        struct PlaneFd {
            fd: i32,
            offset: usize,
            key: ImportKey,
            size: u64,
        }
        let mut planes = Vec::new();
        for (i, &off) in layout.offsets.iter().enumerate() {
            let (range, skip) = buf
                .find_memory(off..off + 1)
                .ok_or_else(|| format!("plane {i} offset {off} is outside the buffer"))?;
            let mem = buf.peek_memory(range.start);
            let Some(fdmem) = mem.downcast_memory_ref::<gst_allocators::FdMemory>() else {
                return Ok(None);
            };
            let fd = fdmem.fd();
            let offset = mem.offset() + skip;
            let id = edgefirst_tensor::import::file_identity(unsafe { BorrowedFd::borrow_raw(fd) })
                .map_err(|e| format!("plane {i}: {e}"))?;
            planes.push(PlaneFd {
                fd,
                offset,
                key: ImportKey { dev: id.dev, ino: id.ino, offset },
                size: id.size,
            });
        }
        let info = &neg.info;
        let (w, h) = (info.width() as usize, info.height() as usize);
        let geometry = ImportGeometry {
            format: info.format(),
            width: info.width(),
            height: info.height(),
            planes: planes.iter().zip(&layout.strides).map(|(p, &s)| (p.key, s)).collect(),
            sizes: planes.iter().map(|p| p.size).collect(),
        };
        let pf = neg.format;
        let make = || -> Result<TensorDyn, String> {
            let fd0 = unsafe { BorrowedFd::borrow_raw(planes[0].fd) };
            let s0 = layout.strides[0] as usize;
            let table = pf.plane_table(w, h, s0);
            let one_file =
                planes.iter().all(|p| (p.key.dev, p.key.ino) == (planes[0].key.dev, planes[0].key.ino));
            let standard =
                one_file
                    && planes.iter().zip(&table).zip(&layout.strides).all(|((p, t), &s)| {
                        p.offset == planes[0].offset + t.offset && s as isize == t.stride
                    });
            let desc = |p: &PlaneFd, stride: i32| -> Result<PlaneDescriptor, String> {
                let fd = unsafe { BorrowedFd::borrow_raw(p.fd) };
                Ok(PlaneDescriptor::new(fd)
                    .map_err(|e| e.to_string())?
                    .with_stride(stride as usize)
                    .with_offset(p.offset))
            };
            let descs = if standard {
                vec![PlaneDescriptor::new(fd0)
                    .map_err(|e| e.to_string())?
                    .with_stride(s0)
                    .with_offset(planes[0].offset)]
            } else if pf.layout() == PixelLayout::SemiPlanar {
                vec![desc(&planes[0], layout.strides[0])?, desc(&planes[1], layout.strides[1])?]
            } else {
                return Err(format!(
                    "{} planes at offsets {:?} are not a layout this build imports",
                    pf.name(),
                    layout.offsets
                ));
            };
            TensorDyn::import_image(descs, w, h, pf, CpuAccess::Read).map_err(|e| e.to_string())
        };
        let key = planes[0].key;
        match cache.get_or_try_insert(key, geometry, make) {
            Ok(t) => Ok(Some(t.buffer_identity().id())),
            Err(e) => {
                gst::warning!(CAT, "frame not imported zero-copy: {e}");
                Ok(None)
            }
        }
    }

    fn refuse(&self, msg: String) -> gst::LoggableError {
        gst::element_imp_error!(self, gst::CoreError::Negotiation, ["{}", msg]);
        gst::loggable_error!(CAT, "{}", msg)
    }

    /// The meta of a frame passed through: the input frame itself is the tensor.
    fn passthrough_info(neg: &Negotiated, layout: &BufferLayout, buffer_id: u64) -> TensorInfo {
        let (w, h) = (neg.info.width() as usize, neg.info.height() as usize);
        let rs = layout.strides[0] as usize;
        let pf = neg.format;
        let (shape, spec) = match neg.output {
            Output::Image => {
                let plane_stride =
                    (pf == PixelFormat::PlanarRgb).then(|| layout.offsets[1] - layout.offsets[0]);
                (
                    pf.addressing_shape(w, h),
                    StrideSpec { layout: pf.layout(), row_stride: rs, plane_stride, batch_stride: None },
                )
            }
            Output::Tensor => {
                let shape = neg.tensor.as_ref().expect("tensor output has tensor caps").shape();
                // A one-channel CHW tensor is the gray frame itself: planar with one plane.
                let planar = shape.len() == 4 && shape[1] == 1 && shape[3] != 1;
                let layout = if planar { PixelLayout::Planar } else { PixelLayout::Packed };
                (shape, StrideSpec { layout, row_stride: rs, plane_stride: None, batch_stride: Some(rs * h) })
            }
        };
        let mut info = TensorInfo {
            dtype: dtype_code(DType::U8),
            offset: layout.offsets[0] as u64,
            buffer_id,
            ..Default::default()
        };
        info.set_layout(&shape, &byte_strides(&shape, 1, Some(&spec))).expect("image tensors have rank <= 4");
        set_content(&mut info, &passthrough_content(w, h));
        info
    }

    /// The meta of a converted frame: the destination layout and where the picture went.
    fn converted_info(
        neg: &Negotiated,
        conv: &Converter,
        buffer_id: u64,
        quant: Option<(f32, i32)>,
    ) -> TensorInfo {
        let d = conv.dst();
        let esz = d.dtype.size();
        let (shape, spec) = match &neg.tensor {
            Some(t) => {
                let shape = t.shape();
                let layout = if d.chw { PixelLayout::Planar } else { PixelLayout::Packed };
                let plane_stride = d.chw.then_some(d.plane_stride);
                (
                    shape,
                    StrideSpec {
                        layout,
                        row_stride: d.row_stride,
                        plane_stride,
                        batch_stride: Some(d.bytes()),
                    },
                )
            }
            None => (
                vec![d.height, d.width, d.colorspace.channels()],
                StrideSpec {
                    layout: PixelLayout::Packed,
                    row_stride: d.row_stride,
                    plane_stride: None,
                    batch_stride: None,
                },
            ),
        };
        let mut info = TensorInfo { dtype: dtype_code(d.dtype), buffer_id, ..Default::default() };
        info.set_layout(&shape, &byte_strides(&shape, esz, Some(&spec)))
            .expect("model tensors have rank <= 4");
        if let Some((scale, zp)) = quant {
            info.quant_channels = 1;
            info.quant_scales[0] = scale;
            info.quant_zero_points[0] = zp;
        }
        set_content(&mut info, conv.content());
        info
    }
}

/// "x,y,width,height" → a region; empty → none. Bounds are checked against the frame at caps time.
fn parse_region(text: &str) -> Result<Option<Region>, String> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    let v: Vec<usize> = text
        .split(',')
        .map(|p| p.trim().parse::<usize>().map_err(|_| format!("`{p}` in `{text}` is not a pixel count")))
        .collect::<Result<_, _>>()?;
    match v[..] {
        [x, y, width, height] if width > 0 && height > 0 => Ok(Some(Region { x, y, width, height })),
        _ => Err(format!("`{text}` is not x,y,width,height with a non-zero size")),
    }
}

/// The geometry of a frame that is its own tensor: the picture fills it, scale 1.
fn passthrough_content(w: usize, h: usize) -> ContentRegion {
    edgefirst_tensor::preprocess::letterbox_rect(
        w,
        h,
        w,
        h,
        edgefirst_tensor::preprocess::FitMode::Stretch,
        edgefirst_tensor::preprocess::LetterboxPlacement::Center,
    )
    .expect("non-zero negotiated sizes")
}

fn set_content(info: &mut TensorInfo, c: &ContentRegion) {
    (info.content_x, info.content_y, info.content_width, info.content_height) =
        (c.rect.x as u32, c.rect.y as u32, c.rect.width as u32, c.rect.height as u32);
    info.content_norm = [c.x0, c.y0, c.x1, c.y1];
    (info.scale_x, info.scale_y) = (c.scale_x, c.scale_y);
    (info.source_x, info.source_y, info.source_width, info.source_height) =
        (c.source.x as u32, c.source.y as u32, c.source.width as u32, c.source.height as u32);
}

#[glib::object_subclass]
impl ObjectSubclass for EdgeFirstTensor {
    const NAME: &'static str = "GstEdgeFirstTensor";
    type Type = super::EdgeFirstTensor;
    type ParentType = gst_base::BaseTransform;
}

impl ObjectImpl for EdgeFirstTensor {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let ro_u64 = |name: &str, blurb: &str| {
                glib::ParamSpecUInt64::builder(name).blurb(blurb).read_only().build()
            };
            let ro_u32 =
                |name: &str, blurb: &str| glib::ParamSpecUInt::builder(name).blurb(blurb).read_only().build();
            vec![
                glib::ParamSpecUInt::builder("model-width")
                    .nick("Model width")
                    .blurb("Width of the model input in pixels (0: the input's width)")
                    .maximum(16384)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("model-height")
                    .nick("Model height")
                    .blurb("Height of the model input in pixels (0: the input's height)")
                    .maximum(16384)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecEnum::builder_with_default("model-colorspace", ModelColorspace::Rgb)
                    .nick("Model colour space")
                    .blurb("Channels the model expects")
                    .mutable_ready()
                    .build(),
                glib::ParamSpecEnum::builder_with_default("model-layout", ModelLayout::Hwc)
                    .nick("Model layout")
                    .blurb("Interleaved (hwc) or planar (chw) tensor")
                    .mutable_ready()
                    .build(),
                glib::ParamSpecEnum::builder_with_default("model-dtype", ModelDtype::Uint8)
                    .nick("Model element type")
                    .blurb("Element type of the tensor")
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
                    .blurb("Scale of an int8/uint8 model input: q = round(x / scale) + zero-point, x the normalized value (0: not quantized; int8 is then the pixel value - 128)")
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
                    .blurb("Part of the frame to convert as \"x,y,width,height\" in pixels (empty: the whole frame)")
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("n-threads")
                    .nick("Threads")
                    .blurb("Threads converting each frame (rows are split between them)")
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
                    .blurb("Per-channel mean subtracted from values scaled to 0..1: one value or three, e.g. \"0.485,0.456,0.406\"")
                    .default_value(Some("0,0,0"))
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("model-std")
                    .nick("Standard deviation")
                    .blurb("Per-channel divisor applied after the mean: one value or three, e.g. \"0.229,0.224,0.225\"")
                    .default_value(Some("1,1,1"))
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("import-cache-size")
                    .nick("Import cache size")
                    .blurb("Imported upstream buffers kept, keyed by (device, inode, plane offset); 0 disables the cache")
                    .maximum(1024)
                    .default_value(DEFAULT_CACHE)
                    .mutable_playing()
                    .build(),
                ro_u64("import-hits", "Frames whose buffer was already imported"),
                ro_u64("import-misses", "Frames whose buffer had to be imported"),
                ro_u64("import-evictions", "Imports dropped to keep the cache within import-cache-size"),
                glib::ParamSpecDouble::builder("letterbox-scale")
                    .blurb("Model pixels per input pixel of the last negotiated geometry (the per-buffer meta is authoritative)")
                    .read_only()
                    .build(),
                ro_u32("letterbox-top", "Padding rows above the picture in the last negotiated geometry"),
                ro_u32("letterbox-bottom", "Padding rows below the picture in the last negotiated geometry"),
                ro_u32("letterbox-left", "Padding columns left of the picture in the last negotiated geometry"),
                ro_u32("letterbox-right", "Padding columns right of the picture in the last negotiated geometry"),
            ]
        });
        PROPS.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        let mut s = self.settings.lock().unwrap();
        match pspec.name() {
            "model-width" => s.model_width = value.get().unwrap(),
            "model-height" => s.model_height = value.get().unwrap(),
            "model-colorspace" => s.colorspace = value.get().unwrap(),
            "model-layout" => s.layout = value.get().unwrap(),
            "model-dtype" => s.dtype = value.get().unwrap(),
            "letterbox" => s.fit = if value.get().unwrap() { ModelFit::Letterbox } else { ModelFit::Stretch },
            "fit" => s.fit = value.get().unwrap(),
            "interpolation" => s.interpolation = value.get().unwrap(),
            "model-quant-scale" => s.quant_scale = value.get().unwrap(),
            "model-quant-zero-point" => s.quant_zero_point = value.get().unwrap(),
            "n-threads" => s.n_threads = value.get().unwrap(),
            "source-region" => {
                let text: Option<String> = value.get().unwrap();
                match parse_region(text.as_deref().unwrap_or("")) {
                    Ok(r) => s.source_region = r,
                    Err(e) => gst::error!(CAT, imp = self, "source-region refused: {e}"),
                }
            }
            "fill-color" => s.fill_color = value.get().unwrap(),
            name @ ("model-mean" | "model-std") => {
                let text: Option<String> = value.get().unwrap();
                let default = if name == "model-mean" { "0,0,0" } else { "1,1,1" };
                match parse_rgb_triplet(text.as_deref().unwrap_or(default)) {
                    Ok(v) if name == "model-std" && v.contains(&0.0) => {
                        gst::error!(
                            CAT,
                            imp = self,
                            "model-std {v:?} has a zero: refused, keeping {:?}",
                            s.std
                        )
                    }
                    Ok(v) if name == "model-mean" => s.mean = v,
                    Ok(v) => s.std = v,
                    Err(e) => {
                        gst::error!(CAT, imp = self, "{name} `{}` refused: {e}", text.unwrap_or_default())
                    }
                }
            }
            "import-cache-size" => {
                s.import_cache_size = value.get().unwrap();
                self.state.lock().unwrap().cache.set_capacity(s.import_cache_size as usize);
            }
            other => unreachable!("no writable property {other}"),
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        let s = self.settings.lock().unwrap();
        let triplet = |v: [f32; 3]| format!("{},{},{}", v[0], v[1], v[2]);
        let (stats, content) = {
            let st = self.state.lock().unwrap();
            let content = st.negotiated.as_ref().map(|n| match &n.converter {
                Some(c) => *c.content(),
                None => passthrough_content(n.info.width() as usize, n.info.height() as usize),
            });
            (st.cache.stats(), content)
        };
        let pad = |f: fn(&ContentRegion) -> usize| content.as_ref().map_or(0, |c| f(c) as u32);
        match pspec.name() {
            "model-width" => s.model_width.to_value(),
            "model-height" => s.model_height.to_value(),
            "model-colorspace" => s.colorspace.to_value(),
            "model-layout" => s.layout.to_value(),
            "model-dtype" => s.dtype.to_value(),
            "letterbox" => (s.fit == ModelFit::Letterbox).to_value(),
            "fit" => s.fit.to_value(),
            "interpolation" => s.interpolation.to_value(),
            "model-quant-scale" => s.quant_scale.to_value(),
            "model-quant-zero-point" => s.quant_zero_point.to_value(),
            "n-threads" => s.n_threads.to_value(),
            "source-region" => {
                s.source_region.map(|r| format!("{},{},{},{}", r.x, r.y, r.width, r.height)).to_value()
            }
            "fill-color" => s.fill_color.to_value(),
            "model-mean" => triplet(s.mean).to_value(),
            "model-std" => triplet(s.std).to_value(),
            "import-cache-size" => s.import_cache_size.to_value(),
            "import-hits" => stats.hits.to_value(),
            "import-misses" => stats.misses.to_value(),
            "import-evictions" => stats.evictions.to_value(),
            // Passthrough is the only geometry this build negotiates: the picture fills the tensor.
            "letterbox-scale" => content.map_or(0.0, |c| c.scale).to_value(),
            "letterbox-top" => pad(ContentRegion::pad_top).to_value(),
            "letterbox-bottom" => pad(ContentRegion::pad_bottom).to_value(),
            "letterbox-left" => pad(ContentRegion::pad_left).to_value(),
            "letterbox-right" => pad(ContentRegion::pad_right).to_value(),
            other => unreachable!("no property {other}"),
        }
    }
}

impl GstObjectImpl for EdgeFirstTensor {}

impl ElementImpl for EdgeFirstTensor {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static META: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "EdgeFirst camera to tensor",
                "Filter/Converter/Video/Tensor",
                "Imports camera frames (DMA-BUF, zero-copy, cached by inode) into model-ready tensors",
                "gstedgefirst developers",
            )
        });
        Some(&*META)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(|| {
            let mut sink = gst_video::VideoCapsBuilder::new().format_list(crate::video::FORMATS).build();
            sink.merge(
                gst_video::VideoCapsBuilder::new()
                    .features([gst_allocators::CAPS_FEATURE_MEMORY_DMABUF])
                    .format_list(crate::video::FORMATS)
                    .build(),
            );
            let mut src = gst::Caps::builder(TENSORS_MEDIA_TYPE)
                .field("format", "static")
                .field("num_tensors", 1i32)
                .field(
                    "framerate",
                    gst::FractionRange::new(gst::Fraction::new(0, 1), gst::Fraction::new(i32::MAX, 1)),
                )
                .build();
            src.merge(sink.clone());
            vec![
                gst::PadTemplate::new("sink", gst::PadDirection::Sink, gst::PadPresence::Always, &sink)
                    .unwrap(),
                gst::PadTemplate::new("src", gst::PadDirection::Src, gst::PadPresence::Always, &src).unwrap(),
            ]
        });
        TEMPLATES.as_ref()
    }
}

impl BaseTransformImpl for EdgeFirstTensor {
    const MODE: gst_base::subclass::BaseTransformMode = gst_base::subclass::BaseTransformMode::Both;
    const PASSTHROUGH_ON_SAME_CAPS: bool = false;
    const TRANSFORM_IP_ON_PASSTHROUGH: bool = false;

    fn start(&self) -> Result<(), gst::ErrorMessage> {
        let size = self.settings.lock().unwrap().import_cache_size as usize;
        self.state.lock().unwrap().cache.set_capacity(size);
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        let mut st = self.state.lock().unwrap();
        st.cache.flush();
        st.negotiated = None;
        Ok(())
    }

    fn transform_caps(
        &self,
        direction: gst::PadDirection,
        caps: &gst::Caps,
        filter: Option<&gst::Caps>,
    ) -> Option<gst::Caps> {
        let settings = self.settings.lock().unwrap().clone();
        let mut out = gst::Caps::new_empty();
        {
            let out = out.get_mut().unwrap();
            for (s, features) in caps.iter_with_features() {
                match direction {
                    gst::PadDirection::Sink => {
                        let (w, h) = (s.get::<i32>("width").ok(), s.get::<i32>("height").ok());
                        let framerate = s.get::<gst::Fraction>("framerate").ok();
                        let model = match (settings.model_width, settings.model_height, w, h) {
                            (mw, mh, _, _) if mw > 0 && mh > 0 => Some((mw, mh)),
                            (_, _, Some(w), Some(h)) => Some(settings.model_size(w as u32, h as u32)),
                            _ => None,
                        };
                        // The model tensor first: a permissive downstream gets what a model needs.
                        if let Some((mw, mh)) = model {
                            out.append(settings.tensor_caps(mw, mh, framerate).to_caps());
                            if let Some(f) = settings.image_output() {
                                let mut b = gst_video::VideoCapsBuilder::new()
                                    .format(f)
                                    .width(mw as i32)
                                    .height(mh as i32);
                                if let Some(r) = framerate {
                                    b = b.framerate(r);
                                }
                                out.append(b.build());
                            }
                        }
                        // Then the frame itself, untouched.
                        out.append_structure_full(s.to_owned(), Some(features.to_owned()));
                    }
                    gst::PadDirection::Src => {
                        out.append(self.obj().static_pad("sink").unwrap().pad_template_caps());
                    }
                    _ => {}
                }
            }
        }
        Some(match filter {
            Some(f) => f.intersect_with_mode(&out, gst::CapsIntersectMode::First),
            None => out,
        })
    }

    fn set_caps(&self, incaps: &gst::Caps, outcaps: &gst::Caps) -> Result<(), gst::LoggableError> {
        let info = gst_video::VideoInfo::from_caps(incaps)
            .map_err(|_| self.refuse(format!("not video: {incaps}")))?;
        let format = pixel_format(info.format())
            .ok_or_else(|| self.refuse(format!("{} is not an input format", info.format().to_str())))?;
        let settings = self.settings.lock().unwrap().clone();
        let s = outcaps.structure(0).ok_or_else(|| self.refuse("empty output caps".into()))?;
        let (w, h) = (info.width(), info.height());
        // The input's YUV matrix; BT.601 limited where the caps say nothing usable.
        let colorimetry = Colorimetry::from_gst_str(&info.colorimetry().to_string()).unwrap_or_default();
        let spec = settings.spec(colorimetry);
        let threads = settings.n_threads as usize;
        let (output, tensor, dst) = if s.name() == "video/x-raw" {
            let out = gst_video::VideoInfo::from_caps(outcaps)
                .map_err(|_| self.refuse(format!("bad {outcaps}")))?;
            if (out.format(), out.width(), out.height()) == (info.format(), w, h) {
                (Output::Image, None, None)
            } else {
                let colorspace = settings.colorspace;
                if settings.image_output() != Some(out.format()) {
                    return Err(self.refuse(format!(
                        "video output {} is not the model input ({:?}, uint8, hwc, no normalization)",
                        out.format().to_str(),
                        colorspace
                    )));
                }
                let layout = crate::video::pool_layout(&out).map_err(|e| self.refuse(e))?;
                let mut d = DstLayout::dense(
                    out.width() as usize,
                    out.height() as usize,
                    colorspace.convert(),
                    false,
                    DType::U8,
                );
                d.row_stride = layout.strides[0] as usize;
                (Output::Image, None, Some(d))
            }
        } else {
            let asked = TensorCaps::from_structure(s).map_err(|e| self.refuse(e))?;
            let ours = settings.tensor_caps(w, h, asked.framerate);
            if (asked.dtype, &asked.dims) != (ours.dtype, &ours.dims) {
                return Err(self.refuse(format!(
                    "downstream asked for {} {} but the properties describe {} {}",
                    asked.dtype,
                    asked.dims_string(),
                    ours.dtype,
                    ours.dims_string()
                )));
            }
            let (mw, mh) = settings.model_size(w, h);
            let dst = settings.conversion_needed(info.format(), w, h).map(|_| {
                DstLayout::dense(
                    mw as usize,
                    mh as usize,
                    settings.colorspace.convert(),
                    settings.layout == ModelLayout::Chw,
                    settings.dtype.dtype(),
                )
            });
            (Output::Tensor, Some(ours), dst)
        };
        let converter = match dst {
            Some(d) => Some(
                Converter::new(format, w as usize, h as usize, d, &spec, threads)
                    .map_err(|e| self.refuse(format!("cannot convert {incaps} → {outcaps}: {e}")))?,
            ),
            None => None,
        };
        gst::info!(
            CAT,
            imp = self,
            "{incaps} → {outcaps}: {}",
            if converter.is_some() { "converting" } else { "passthrough" }
        );
        let obj = self.obj();
        obj.set_passthrough(false);
        obj.set_in_place(converter.is_none());
        let mut st = self.state.lock().unwrap();
        // A new geometry or producer: cached imports must not keep its old buffers pinned.
        st.cache.flush();
        let quantization = spec.quantization;
        st.negotiated = Some(Negotiated { info, format, output, tensor, converter, quantization });
        Ok(())
    }

    fn transform_size(
        &self,
        _direction: gst::PadDirection,
        _caps: &gst::Caps,
        _size: usize,
        othercaps: &gst::Caps,
    ) -> Option<usize> {
        output_size(othercaps)
    }

    fn propose_allocation(
        &self,
        decide_query: Option<&gst::query::Allocation>,
        query: &mut gst::query::Allocation,
    ) -> Result<(), gst::LoggableError> {
        // The parent may fail when downstream answers nothing (fakesink); our answer stands anyway.
        if let Err(e) = self.parent_propose_allocation(decide_query, query) {
            gst::debug!(CAT, imp = self, "parent allocation proposal: {e}");
        }
        crate::pool::propose(query);
        Ok(())
    }

    /// Converted frames are always written into an edgefirst pool buffer (a DMA-BUF where the
    /// machine has a heap), whatever downstream offered: the tensor is never copied afterwards.
    fn decide_allocation(&self, query: &mut gst::query::Allocation) -> Result<(), gst::LoggableError> {
        let (Some(caps), _) = query.get() else {
            return Err(gst::loggable_error!(CAT, "allocation query without caps"));
        };
        let caps = caps.to_owned();
        let size = output_size(&caps).ok_or_else(|| gst::loggable_error!(CAT, "no size for {caps}"))?;
        // One buffer made ready, more on demand: a tensor returned before the next frame comes
        // back still in cache (measured: float32 1080p → 640 at 0.42 ms a frame with two made
        // ready, 0.37 with one).
        let min_buffers = 1;
        let (pool, size) = crate::BufferPool::configured(&caps, size as u32, min_buffers, 0)
            .map_err(|e| gst::loggable_error!(CAT, "edgefirst pool refused {caps}: {e}"))?;
        while query.allocation_pools().len() > 0 {
            query.remove_nth_allocation_pool(0);
        }
        query.add_allocation_pool(Some(&pool), size, min_buffers, 0);
        self.parent_decide_allocation(query)
    }

    fn transform_ip(&self, buf: &mut gst::BufferRef) -> Result<gst::FlowSuccess, gst::FlowError> {
        let mut st = self.state.lock().unwrap();
        let st = &mut *st;
        let Some(neg) = st.negotiated.as_ref() else {
            gst::element_imp_error!(self, gst::CoreError::Negotiation, ["buffer before caps"]);
            return Err(gst::FlowError::NotNegotiated);
        };
        let layout = self.checked_layout(buf, neg)?;
        if neg.output == Output::Tensor {
            let dense = neg.format.min_row_stride(neg.info.width() as usize, 1);
            if layout.strides[0] as usize != dense {
                gst::element_imp_error!(
                    self,
                    gst::StreamError::Format,
                    [
                        "frame rows are padded (stride {} for {} bytes of pixels) and other/tensors consumers expect dense rows; set model-width/model-height or another model property so the frame is converted",
                        layout.strides[0],
                        dense
                    ]
                );
                return Err(gst::FlowError::Error);
            }
        }
        let buffer_id = self.import_frame(&mut st.cache, buf, neg, &layout)?;
        let info = Self::passthrough_info(neg, &layout, buffer_id);
        TensorMeta::add(buf, &info);
        Ok(gst::FlowSuccess::Ok)
    }

    fn transform(
        &self,
        inbuf: &gst::Buffer,
        outbuf: &mut gst::BufferRef,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        let mut st = self.state.lock().unwrap();
        let st = &mut *st;
        let Some(neg) = st.negotiated.as_ref() else {
            gst::element_imp_error!(self, gst::CoreError::Negotiation, ["buffer before caps"]);
            return Err(gst::FlowError::NotNegotiated);
        };
        let Some(conv) = neg.converter.as_ref() else {
            gst::element_imp_error!(self, gst::CoreError::Failed, ["converting without a converter"]);
            return Err(gst::FlowError::Error);
        };
        let layout = self.checked_layout(inbuf, neg)?;
        let buffer_id = self.import_frame(&mut st.cache, inbuf, neg, &layout)?;
        // The frame is read in place (DMA-BUF or system memory) through its GstVideoMeta planes.
        let frame =
            gst_video::VideoFrameRef::from_buffer_ref_readable(inbuf.as_ref(), &neg.info).map_err(|e| {
                gst::element_imp_error!(
                    self,
                    gst::StreamError::Format,
                    ["cannot map the input frame: {}", e]
                );
                gst::FlowError::Error
            })?;
        let mut planes: [(&[u8], usize); 3] = [(&[], 0); 3];
        for (p, plane) in planes.iter_mut().enumerate().take(neg.format.num_planes()) {
            let data = frame.plane_data(p as u32).map_err(|e| {
                gst::element_imp_error!(self, gst::StreamError::Format, ["input plane {}: {}", p, e]);
                gst::FlowError::Error
            })?;
            *plane = (data, frame.plane_stride()[p] as usize);
        }
        let src = SrcImage {
            format: neg.format,
            width: neg.info.width() as usize,
            height: neg.info.height() as usize,
            planes,
        };
        if let Some(m) = outbuf.meta::<gst_video::VideoMeta>() {
            if m.stride()[0] as usize != conv.dst().row_stride {
                gst::element_imp_error!(
                    self,
                    gst::CoreError::Failed,
                    ["output stride {} is not the planned {}", m.stride()[0], conv.dst().row_stride]
                );
                return Err(gst::FlowError::Error);
            }
        }
        {
            let mut map = outbuf.map_writable().map_err(|_| {
                gst::element_imp_error!(self, gst::CoreError::Failed, ["cannot map the output buffer"]);
                gst::FlowError::Error
            })?;
            conv.convert(&src, &mut map).map_err(|e| {
                gst::element_imp_error!(self, gst::StreamError::Format, ["conversion failed: {}", e]);
                gst::FlowError::Error
            })?;
        }
        drop(frame);
        let info = Self::converted_info(neg, conv, buffer_id, neg.quantization);
        TensorMeta::add(outbuf, &info);
        Ok(gst::FlowSuccess::Ok)
    }
}

/// Bytes of one output buffer for `caps`: a dense tensor, or a frame in the pool's layout.
fn output_size(caps: &gst::Caps) -> Option<usize> {
    let s = caps.structure(0)?;
    if s.name() == TENSORS_MEDIA_TYPE {
        let t = TensorCaps::from_structure(s).ok()?;
        return Some(t.dims.iter().product::<usize>() * t.dtype.size());
    }
    let info = gst_video::VideoInfo::from_caps(caps).ok()?;
    crate::video::pool_layout(&info).ok().map(|l| l.size)
}

impl EdgeFirstTensor {
    fn checked_layout(&self, buf: &gst::BufferRef, neg: &Negotiated) -> Result<BufferLayout, gst::FlowError> {
        self.buffer_layout(buf, neg).map_err(|e| {
            gst::element_imp_error!(self, gst::StreamError::Format, ["bad input frame: {}", e]);
            gst::FlowError::Error
        })
    }

    fn import_frame(
        &self,
        cache: &mut ImportCache<ImportGeometry, TensorDyn>,
        buf: &gst::BufferRef,
        neg: &Negotiated,
        layout: &BufferLayout,
    ) -> Result<u64, gst::FlowError> {
        Self::import(cache, buf, neg, layout).map(|id| id.unwrap_or(0)).map_err(|e| {
            gst::element_imp_error!(self, gst::StreamError::Format, ["cannot import the frame: {}", e]);
            gst::FlowError::Error
        })
    }
}
