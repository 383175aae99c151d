use super::frame::{self, BufferLayout};
use super::ModelLayout;
use crate::allocator::padding;
use crate::caps::{TensorCaps, TENSORS_MEDIA_TYPE};
use crate::import_cache::ImportCache;
use crate::meta::{dtype_code, TensorInfo, TensorMeta};
use crate::model::{self, Settings};
use crate::video::pixel_format;
use edgefirst_tensor::convert::{Converter, DstLayout, SrcImage};
use edgefirst_tensor::preprocess::ContentRegion;
use edgefirst_tensor::{byte_strides, DType, PixelFormat, PixelLayout, StrideSpec, TensorDyn};
use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::prelude::*;
use gst_base::subclass::prelude::*;
use std::sync::{LazyLock, Mutex};

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "edgefirsttensor",
        gst::DebugColorFlags::empty(),
        Some("EdgeFirst camera frames into tensors"),
    )
});

const DEFAULT_CACHE: u32 = 32;

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

struct State {
    negotiated: Option<Negotiated>,
    cache: frame::Cache,
    fs_types: frame::FsTypes,
}

pub struct EdgeFirstTensor {
    settings: Mutex<Settings>,
    import_cache_size: Mutex<u32>,
    state: Mutex<State>,
}

impl Default for EdgeFirstTensor {
    fn default() -> Self {
        EdgeFirstTensor {
            settings: Mutex::new(Settings::default()),
            import_cache_size: Mutex::new(DEFAULT_CACHE),
            state: Mutex::new(State {
                negotiated: None,
                cache: ImportCache::new(DEFAULT_CACHE as usize),
                fs_types: frame::FsTypes::default(),
            }),
        }
    }
}

impl EdgeFirstTensor {
    fn refuse(&self, msg: String) -> gst::LoggableError {
        gst::element_imp_error!(self, gst::CoreError::Negotiation, ("{}", msg));
        gst::loggable_error!(CAT, "{}", msg)
    }

    /// The meta of a frame passed through: the input frame itself is the tensor.
    fn passthrough_info(
        neg: &Negotiated,
        layout: &BufferLayout,
        buffer_id: u64,
    ) -> Result<TensorInfo, String> {
        let (w, h) = (neg.info.width() as usize, neg.info.height() as usize);
        let rs = layout.strides[0] as usize;
        let pf = neg.format;
        let (shape, spec) = match neg.output {
            Output::Image => {
                let plane_stride = match pf {
                    PixelFormat::PlanarRgb => Some(planar_stride(layout)?),
                    _ => None,
                };
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
        Ok(info)
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

/// The one plane stride of a planar RGB frame passed through as a `[3, H, W]` tensor: its planes
/// must be evenly spaced, in order, with one row stride, or the meta could not describe them.
fn planar_stride(layout: &BufferLayout) -> Result<usize, String> {
    let o = &layout.offsets;
    let step = o[1].checked_sub(o[0]).filter(|&d| d > 0 && o[2].checked_sub(o[1]) == Some(d));
    match step {
        Some(d) if layout.strides.iter().all(|&s| s == layout.strides[0]) => Ok(d),
        _ => Err(format!(
            "planar RGB planes at offsets {o:?} with strides {:?} are not one evenly spaced tensor; set a model property so the frame is converted",
            layout.strides
        )),
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
            let mut props = model::properties();
            props.extend([
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
            ]);
            props
        });
        PROPS.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        if pspec.name() == "import-cache-size" {
            let n: u32 = value.get().unwrap_or(DEFAULT_CACHE);
            *self.import_cache_size.lock().unwrap() = n;
            self.state.lock().unwrap().cache.set_capacity(n as usize);
            return;
        }
        let mut s = self.settings.lock().unwrap();
        if !s.set(pspec.name(), value) {
            gst::warning!(CAT, imp = self, "no writable property {}", pspec.name());
        }
        if let Some(why) = s.refusal() {
            gst::error!(CAT, imp = self, "{why}");
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        if let Some(v) = self.settings.lock().unwrap().get(pspec.name()) {
            return v;
        }
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
            "import-cache-size" => self.import_cache_size.lock().unwrap().to_value(),
            "import-hits" => stats.hits.to_value(),
            "import-misses" => stats.misses.to_value(),
            "import-evictions" => stats.evictions.to_value(),
            "letterbox-scale" => content.map_or(0.0, |c| c.scale).to_value(),
            "letterbox-top" => pad(ContentRegion::pad_top).to_value(),
            "letterbox-bottom" => pad(ContentRegion::pad_bottom).to_value(),
            "letterbox-left" => pad(ContentRegion::pad_left).to_value(),
            "letterbox-right" => pad(ContentRegion::pad_right).to_value(),
            other => {
                gst::warning!(CAT, imp = self, "no property {other}");
                pspec.default_value().clone()
            }
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
            let sink = crate::video::input_caps();
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
        if let Some(why) = self.settings.lock().unwrap().refusal() {
            return Err(gst::error_msg!(gst::LibraryError::Settings, ("{}", why)));
        }
        let size = *self.import_cache_size.lock().unwrap() as usize;
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
                        // The model tensor first: a permissive downstream gets what a model needs.
                        for offer in crate::negotiate::offered(&settings, s) {
                            out.append_structure(offer);
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

    fn fixate_caps(
        &self,
        direction: gst::PadDirection,
        caps: &gst::Caps,
        mut othercaps: gst::Caps,
    ) -> gst::Caps {
        if direction == gst::PadDirection::Sink {
            let input = caps.structure(0);
            let side =
                |f: &str| input.and_then(|s| s.get::<i32>(f).ok()).filter(|&v| v > 0).unwrap_or(1) as u32;
            let settings = self.settings.lock().unwrap().clone();
            othercaps.truncate();
            if let Some(s) = othercaps.make_mut().structure_mut(0) {
                crate::negotiate::fixate(&settings, side("width"), side("height"), s);
            }
        }
        self.parent_fixate_caps(direction, caps, othercaps)
    }

    fn set_caps(&self, incaps: &gst::Caps, outcaps: &gst::Caps) -> Result<(), gst::LoggableError> {
        let info = gst_video::VideoInfo::from_caps(incaps)
            .map_err(|_| self.refuse(format!("not video: {incaps}")))?;
        let format = pixel_format(info.format())
            .ok_or_else(|| self.refuse(format!("{} is not an input format", info.format().to_str())))?;
        let s = outcaps.structure(0).ok_or_else(|| self.refuse("empty output caps".into()))?;
        // What the properties set, and the rest from the caps.
        let settings =
            crate::negotiate::resolve(&self.settings.lock().unwrap(), s).map_err(|e| self.refuse(e))?;
        let (w, h) = (info.width(), info.height());
        settings.check_region(w, h).map_err(|e| self.refuse(e))?;
        let spec = settings.spec_for(&info);
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
            // NNStreamer writes a batch of one or leaves it out; the meta always has it.
            let same_dims =
                asked.dims == ours.dims || (asked.dims.len() == 3 && asked.dims[..] == ours.dims[..3]);
            if asked.dtype != ours.dtype || !same_dims {
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
        if let Some(d) = &dst {
            // At most 16384 x 16384 x 4 channels x 8 bytes: no overflow on a 64-bit target.
            pool_size(d.bytes()).map_err(|e| self.refuse(format!("{outcaps}: {e}")))?;
        }
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

    /// Converted tensors go straight into downstream's buffers when its allocation answer carries a
    /// pool that can hold them (a DMA-BUF one first): an NPU or GPU element's own input buffers,
    /// which it would otherwise copy ours into. Otherwise, and for video frames (whose pitch the
    /// plan fixes), into an edgefirst pool buffer (a DMA-BUF where the machine has a heap).
    fn decide_allocation(&self, query: &mut gst::query::Allocation) -> Result<(), gst::LoggableError> {
        let (Some(caps), _) = query.get() else {
            return Err(gst::loggable_error!(CAT, "allocation query without caps"));
        };
        let caps = caps.to_owned();
        let size = output_size(&caps).ok_or_else(|| self.refuse(format!("no buffer size for {caps}")))?;
        let size = pool_size(size).map_err(|e| self.refuse(format!("{caps}: {e}")))?;
        let tensor = caps.structure(0).is_some_and(|s| s.name() == TENSORS_MEDIA_TYPE);
        let theirs = if tensor { downstream_pool(query, &caps, size) } else { None };
        let (pool, size, min, max) = match theirs {
            Some(p) => {
                gst::info!(CAT, imp = self, "converting into downstream's pool {}", p.0.name());
                p
            }
            None => {
                // One buffer made ready, more on demand: a tensor returned before the next frame
                // comes back still in cache (measured: float32 1080p → 640 at 0.42 ms a frame with
                // two made ready, 0.37 with one).
                let min_buffers = 1;
                let (pool, size) = crate::BufferPool::configured(&caps, size, min_buffers, 0)
                    .map_err(|e| gst::loggable_error!(CAT, "edgefirst pool refused {caps}: {e}"))?;
                (pool.upcast(), size, min_buffers, 0)
            }
        };
        while query.allocation_pools().len() > 0 {
            query.remove_nth_allocation_pool(0);
        }
        query.add_allocation_pool(Some(&pool), size, min, max);
        self.parent_decide_allocation(query)
    }

    fn transform_ip(&self, buf: &mut gst::BufferRef) -> Result<gst::FlowSuccess, gst::FlowError> {
        let mut st = self.state.lock().unwrap();
        let st = &mut *st;
        let Some(neg) = st.negotiated.as_ref() else {
            gst::element_imp_error!(self, gst::CoreError::Negotiation, ["buffer before caps"]);
            return Err(gst::FlowError::NotNegotiated);
        };
        let (layout, imported) = self.checked_frame(buf, neg, &mut st.cache, &mut st.fs_types)?;
        let buffer_id = imported.map_or(0, |t| t.buffer_identity().id());
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
        let info = Self::passthrough_info(neg, &layout, buffer_id).map_err(|e| {
            gst::element_imp_error!(self, gst::StreamError::Format, ["bad input frame: {}", e]);
            gst::FlowError::Error
        })?;
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
        let (_, imported) = self.checked_frame(inbuf, neg, &mut st.cache, &mut st.fs_types)?;
        let buffer_id = imported.as_ref().map_or(0, |t| t.buffer_identity().id());
        // checked_frame proved every plane inside its memory and every memory inside its object.
        let input = frame::Planes::of(imported.as_ref(), inbuf.as_ref(), &neg.info).map_err(|e| {
            gst::element_imp_error!(self, gst::StreamError::Format, ["{}", e]);
            gst::FlowError::Error
        })?;
        let planes = input.get(neg.format.num_planes()).map_err(|e| {
            gst::element_imp_error!(self, gst::StreamError::Format, ["{}", e]);
            gst::FlowError::Error
        })?;
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
        let cannot_map = || {
            gst::element_imp_error!(self, gst::CoreError::Failed, ["cannot map the output buffer"]);
            gst::FlowError::Error
        };
        let failed = |e: edgefirst_tensor::Error| {
            gst::element_imp_error!(self, gst::StreamError::Format, ["conversion failed: {}", e]);
            gst::FlowError::Error
        };
        // A tensor of our allocator still holding this converter's padding (written by it,
        // mapped for writing by nobody since): only the picture is written.
        let kept = padding::write_marked(outbuf, conv.id(), cannot_map, |map, kept| {
            match kept {
                true => conv.convert_picture(&src, map),
                false => conv.convert(&src, map),
            }
            .map_err(failed)?;
            Ok(kept)
        })?;
        gst::trace!(CAT, imp = self, "padding {}", if kept { "kept" } else { "written" });
        drop(input);
        // A downstream pool's buffer may be larger than the tensor; consumers read its size.
        if outbuf.size() > conv.dst().bytes() {
            outbuf.set_size(conv.dst().bytes());
        }
        let info = Self::converted_info(neg, conv, buffer_id, neg.quantization);
        TensorMeta::add(outbuf, &info);
        Ok(gst::FlowSuccess::Ok)
    }
}

/// Bytes of one output buffer for `caps`: a dense tensor, or a frame in the pool's layout. None
/// when the caps say no size, or one past usize.
fn output_size(caps: &gst::Caps) -> Option<usize> {
    let s = caps.structure(0)?;
    if s.name() == TENSORS_MEDIA_TYPE {
        let t = TensorCaps::from_structure(s).ok()?;
        return t.dims.iter().try_fold(t.dtype.size(), |acc, &d| acc.checked_mul(d));
    }
    let info = gst_video::VideoInfo::from_caps(caps).ok()?;
    crate::video::pool_layout(&info).ok().map(|l| l.size)
}

/// Downstream's pool from an allocation answer, when one can serve `size`-byte tensors: configured
/// for them (or, if already active, already big enough). DMA-BUF pools are tried first.
fn downstream_pool(
    query: &gst::query::Allocation,
    caps: &gst::Caps,
    size: u32,
) -> Option<(gst::BufferPool, u32, u32, u32)> {
    let mut offered: Vec<_> =
        query.allocation_pools().filter_map(|(p, s, min, max)| p.map(|p| (p, s, min, max))).collect();
    let dmabuf = |p: &gst::BufferPool| {
        p.is::<crate::BufferPool>()
            || p.config()
                .allocator()
                .and_then(|(a, _)| a)
                .is_some_and(|a| a.is::<gst_allocators::DmaBufAllocator>())
    };
    offered.sort_by_key(|(p, ..)| !dmabuf(p));
    offered.into_iter().find_map(|(pool, psize, min, max)| {
        if !pool.is_active() {
            let mut config = pool.config();
            config.set_params(Some(caps), size.max(psize), min, max);
            pool.set_config(config).ok()?;
        }
        let (_, got, min, max) = pool.config().params()?;
        (got >= size).then_some((pool, got, min, max))
    })
}

/// A GStreamer buffer pool's config states a buffer's size as a guint.
fn pool_size(size: usize) -> Result<u32, String> {
    u32::try_from(size).map_err(|_| {
        format!(
            "one output buffer needs {size} bytes; a GStreamer buffer pool holds at most {} bytes a buffer",
            u32::MAX
        )
    })
}

impl EdgeFirstTensor {
    /// The frame's checked layout and, where its planes are fds, its import: every failure is an
    /// element error naming what is wrong, before any byte of the frame is read.
    fn checked_frame(
        &self,
        buf: &gst::BufferRef,
        neg: &Negotiated,
        cache: &mut frame::Cache,
        types: &mut frame::FsTypes,
    ) -> Result<(BufferLayout, Option<TensorDyn>), gst::FlowError> {
        frame::checked_import(buf, &neg.info, neg.format, cache, types).map_err(|e| {
            gst::element_imp_error!(self, gst::StreamError::Format, ["bad input frame: {}", e]);
            gst::FlowError::Error
        })
    }
}
