use super::MissingSlot;
use crate::allocator::padding;
use crate::batch_meta::{BatchInfo, BatchMeta, BatchSlot, MAX_SLOTS, SLOT_FILLED, SLOT_REPEATED};
use crate::caps::{model_dims, TensorCaps, TENSORS_MEDIA_TYPE};
use crate::edgefirsttensor::frame;
use crate::meta::{dtype_code, TensorInfo, TensorMeta};
use crate::model::{self, ModelLayout, Settings};
use crate::video::pixel_format;
use edgefirst_tensor::convert::{ConvertSpec, Converter, DstLayout, SrcImage, Workers};
use edgefirst_tensor::preprocess::{Colorimetry, FitMode};
use edgefirst_tensor::{byte_strides, PixelFormat, PixelLayout, StrideSpec, TensorDyn};
use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::prelude::*;
use gst_base::subclass::prelude::*;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{LazyLock, Mutex};

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "edgefirsttensorbatch",
        gst::DebugColorFlags::empty(),
        Some("EdgeFirst cameras into one batch tensor"),
    )
});

#[derive(Debug, Clone, Default)]
struct BatchSettings {
    model: Settings,
    batch_size: u32,
    missing_slot: MissingSlot,
    /// ROI mode when non-zero: the slots are the regions of one source's frame.
    max_rois: u32,
    /// Fixed regions for ROI mode (x, y, width, height); the frame's ROI metas when empty.
    rois: Vec<edgefirst_tensor::Region>,
}

/// "x,y,w,h;x,y,w,h" → regions.
fn parse_rois(text: &str) -> Result<Vec<edgefirst_tensor::Region>, String> {
    text.split(';')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| model::parse_region(t).and_then(|r| r.ok_or_else(|| format!("`{t}` is empty"))))
        .collect()
}

/// One source's conversion into its slot.
struct Source {
    caps: gst::Caps,
    info: gst_video::VideoInfo,
    format: PixelFormat,
    converter: Converter,
    /// Its last converted slot, for `missing-slot=previous`.
    previous: Option<Vec<u8>>,
    /// Its fd frames imported once and kept mapped, as edgefirsttensor does: a camera's buffers
    /// read with no mmap, munmap or page fault per frame.
    cache: frame::Cache,
    types: frame::FsTypes,
}

/// Imported camera buffers kept per source (a driver's queue is 4-8 buffers).
const SOURCE_CACHE: usize = 16;

/// What the negotiated output is.
struct Output {
    n: usize,
    slot: DstLayout,
    tensor: TensorCaps,
    pool: gst::BufferPool,
    /// The fill colour as a slot, converted like a frame (every dtype and normalization).
    fill: Vec<u8>,
}

#[derive(Default)]
struct State {
    sources: HashMap<String, Source>,
    output: Option<Output>,
    /// When the next batch is due (running time): the last one's time plus a frame. A live
    /// batch leaves at this time plus the latency whether every source has a frame or not.
    next: Option<gst::ClockTime>,
    /// One frame at the negotiated rate.
    frame: gst::ClockTime,
    /// The threads the slots are converted on (`n-threads` bands, the aggregator's own thread
    /// the first; `kept_workers`).
    workers: Option<Workers>,
}

#[derive(Default)]
pub struct EdgeFirstTensorBatch {
    settings: Mutex<BatchSettings>,
    state: Mutex<State>,
    /// True from PAUSED -> PLAYING (the base time given) to PLAYING -> PAUSED. The base class's live
    /// deadline is base time + next_time + latency; before PLAYING the base time is still 0 (or a
    /// past run's), the deadline lies in the past, and the first batch left without the live
    /// source (seen under load: 1 run in 120, a clock wait to 0:00:02.03 against 3:05:27).
    playing: AtomicBool,
}

/// `sink_%u` → its index.
fn pad_index(pad: &gst::Pad) -> u32 {
    pad.name().trim_start_matches("sink_").parse().unwrap_or(u32::MAX)
}

impl EdgeFirstTensorBatch {
    /// The sink pads in index order.
    fn sink_pads(&self) -> Vec<gst_base::AggregatorPad> {
        let mut pads: Vec<gst_base::AggregatorPad> = self
            .obj()
            .sink_pads()
            .into_iter()
            .filter_map(|p| p.downcast::<gst_base::AggregatorPad>().ok())
            .collect();
        pads.sort_by_key(|p| pad_index(p.upcast_ref()));
        pads
    }

    /// The slot layout for the settings and a source of `w`x`h` (the model size, when unset,
    /// is the first source's).
    fn slot_layout(settings: &Settings, w: u32, h: u32) -> DstLayout {
        let (mw, mh) = settings.model_size(w, h);
        DstLayout::dense(
            mw as usize,
            mh as usize,
            settings.colorspace.convert(),
            settings.layout == ModelLayout::Chw,
            settings.dtype.dtype(),
        )
    }

    /// A converter for one source into `slot`, made when its caps are new.
    fn source_for<'a>(
        &self,
        sources: &'a mut HashMap<String, Source>,
        pad: &gst_base::AggregatorPad,
        settings: &Settings,
        slot: &DstLayout,
    ) -> Result<&'a mut Source, String> {
        let caps = pad.current_caps().ok_or_else(|| format!("{} has no caps", pad.name()))?;
        let name = pad.name().to_string();
        if sources.get(&name).is_none_or(|s| s.caps != caps) {
            let info = gst_video::VideoInfo::from_caps(&caps)
                .map_err(|_| format!("{}: not video: {caps}", pad.name()))?;
            let format = pixel_format(info.format())
                .ok_or_else(|| format!("{} is not an input format", info.format().to_str()))?;
            settings.check_region(info.width(), info.height())?;
            let converter = Converter::new(
                format,
                info.width() as usize,
                info.height() as usize,
                *slot,
                &settings.spec_for(&info),
                1,
            )
            .map_err(|e| format!("{}: cannot convert {caps}: {e}", pad.name()))?;
            sources.insert(
                name.clone(),
                Source {
                    caps,
                    info,
                    format,
                    converter,
                    previous: None,
                    cache: frame::Cache::new(SOURCE_CACHE),
                    types: frame::FsTypes::default(),
                },
            );
        }
        Ok(sources.get_mut(&name).expect("inserted above"))
    }

    fn fail(&self, msg: String) -> gst::FlowError {
        gst::element_imp_error!(self, gst::StreamError::Format, ("{}", msg));
        gst::FlowError::Error
    }
}

/// The fill colour through the model's conversion: a one-pixel RGB frame of it, stretched over
/// the slot, so normalization, quantization and dtype apply exactly as to a frame's padding.
fn fill_slot(settings: &Settings, slot: &DstLayout) -> Result<Vec<u8>, String> {
    let c = settings.fill_color;
    let pixel = [(c >> 24) as u8, (c >> 16) as u8, (c >> 8) as u8];
    let spec =
        ConvertSpec { fit: FitMode::Stretch, source_region: None, ..settings.spec(Colorimetry::default()) };
    let conv = Converter::new(PixelFormat::Rgb, 1, 1, *slot, &spec, 1).map_err(|e| e.to_string())?;
    let mut out = vec![0u8; slot.bytes()];
    let src = SrcImage {
        format: PixelFormat::Rgb,
        width: 1,
        height: 1,
        planes: [(&pixel[..], 3), (&[], 0), (&[], 0)],
    };
    conv.convert(&src, &mut out).map_err(|e| e.to_string())?;
    Ok(out)
}

#[glib::object_subclass]
impl ObjectSubclass for EdgeFirstTensorBatch {
    const NAME: &'static str = "GstEdgeFirstTensorBatch";
    type Type = super::EdgeFirstTensorBatch;
    type ParentType = gst_base::Aggregator;
}

impl ObjectImpl for EdgeFirstTensorBatch {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let mut props = model::properties();
            props.push(
                glib::ParamSpecUInt::builder("batch-size")
                    .nick("Batch size")
                    .blurb("Slots in the batch tensor (0: one per linked sink pad)")
                    .maximum(MAX_SLOTS as u32)
                    .mutable_ready()
                    .build(),
            );
            props.push(
                glib::ParamSpecUInt::builder("max-rois")
                    .nick("Maximum ROIs")
                    .blurb("ROI mode when non-zero: one source (sink_0), each region of interest of its frame (GstVideoRegionOfInterestMeta, or the rois property) cropped and converted into its own slot, this many slots (the rest filled)")
                    .maximum(MAX_SLOTS as u32)
                    .mutable_ready()
                    .build(),
            );
            props.push(
                glib::ParamSpecString::builder("rois")
                    .nick("ROIs")
                    .blurb("Fixed regions for ROI mode as \"x,y,w,h;x,y,w,h\" in source pixels (empty: the frame's GstVideoRegionOfInterestMeta)")
                    .mutable_ready()
                    .build(),
            );
            props.push(
                glib::ParamSpecEnum::builder_with_default("missing-slot", MissingSlot::Fill)
                    .nick("Missing slot")
                    .blurb("What a slot holds when its source has no frame as the batch leaves (a live source past latency, or one at EOS)")
                    .mutable_playing()
                    .build(),
            );
            props
        });
        PROPS.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        let mut s = self.settings.lock().unwrap();
        match pspec.name() {
            "batch-size" => s.batch_size = value.get().unwrap_or(0),
            "missing-slot" => s.missing_slot = value.get().unwrap_or_default(),
            "max-rois" => s.max_rois = value.get().unwrap_or(0),
            "rois" => {
                let text: Option<String> = value.get().ok().flatten();
                match parse_rois(text.as_deref().unwrap_or("")) {
                    Ok(r) => s.rois = r,
                    Err(e) => gst::element_imp_error!(
                        self,
                        gst::LibraryError::Settings,
                        (
                            "property rois: `{}` refused ({}); accepted: \"x,y,w,h;x,y,w,h\"",
                            text.unwrap_or_default(),
                            e
                        )
                    ),
                }
            }
            name => {
                s.model.set(name, value);
                if let Some(why) = s.model.refusal() {
                    gst::error!(CAT, imp = self, "{why}");
                }
            }
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        let s = self.settings.lock().unwrap();
        match pspec.name() {
            "batch-size" => s.batch_size.to_value(),
            "missing-slot" => s.missing_slot.to_value(),
            "max-rois" => s.max_rois.to_value(),
            "rois" => s
                .rois
                .iter()
                .map(|r| format!("{},{},{},{}", r.x, r.y, r.width, r.height))
                .collect::<Vec<_>>()
                .join(";")
                .to_value(),
            name => s.model.get(name).unwrap_or_else(|| pspec.default_value().clone()),
        }
    }
}

impl GstObjectImpl for EdgeFirstTensorBatch {}

impl ElementImpl for EdgeFirstTensorBatch {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static META: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "EdgeFirst cameras to batch tensor",
                "Filter/Converter/Video/Tensor",
                "Converts several video streams into the slots of one batch tensor",
                "gstedgefirst developers",
            )
        });
        Some(&*META)
    }

    fn change_state(
        &self,
        transition: gst::StateChange,
    ) -> Result<gst::StateChangeSuccess, gst::StateChangeError> {
        // Set before the base class's own PAUSED -> PLAYING, which wakes its thread: set after,
        // the thread could read none again and wait with nothing left to wake it (a stalled
        // live source, the other pads' queues full). The bin gives the base time before this.
        match transition {
            gst::StateChange::PausedToPlaying => self.playing.store(true, Ordering::SeqCst),
            gst::StateChange::PlayingToPaused => self.playing.store(false, Ordering::SeqCst),
            _ => {}
        }
        let result = self.parent_change_state(transition);
        if result.is_err() && transition == gst::StateChange::PausedToPlaying {
            self.playing.store(false, Ordering::SeqCst);
        }
        result
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(|| {
            let sink = crate::video::input_caps();
            let src = gst::Caps::builder(TENSORS_MEDIA_TYPE)
                .field("format", "static")
                .field("num_tensors", 1i32)
                .build();
            vec![
                gst::PadTemplate::with_gtype(
                    "src",
                    gst::PadDirection::Src,
                    gst::PadPresence::Always,
                    &src,
                    gst_base::AggregatorPad::static_type(),
                )
                .unwrap(),
                gst::PadTemplate::with_gtype(
                    "sink_%u",
                    gst::PadDirection::Sink,
                    gst::PadPresence::Request,
                    &sink,
                    gst_base::AggregatorPad::static_type(),
                )
                .unwrap(),
            ]
        });
        TEMPLATES.as_ref()
    }

    fn request_new_pad(
        &self,
        templ: &gst::PadTemplate,
        name: Option<&str>,
        caps: Option<&gst::Caps>,
    ) -> Option<gst::Pad> {
        let pad = self.parent_request_new_pad(templ, name, caps)?;
        // One slot more when the batch size follows the pads, asked for once the pad is the
        // element's: asked for in `create_new_pad`, before the base class adds the pad, the
        // aggregator's thread could renegotiate in between, count the pads without it and clear
        // the flag, and the batch stayed one slot short (the kernel lane: 1 run in 8 of
        // `pads_added_and_removed_while_playing`).
        self.obj().src_pad().mark_reconfigure();
        Some(pad)
    }

    fn release_pad(&self, pad: &gst::Pad) {
        self.state.lock().unwrap().sources.remove(pad.name().as_str());
        self.parent_release_pad(pad);
        // One slot fewer when the batch size follows the pads.
        self.obj().src_pad().mark_reconfigure();
    }
}

impl AggregatorImpl for EdgeFirstTensorBatch {
    fn start(&self) -> Result<(), gst::ErrorMessage> {
        if let Some(why) = self.settings.lock().unwrap().model.refusal() {
            return Err(gst::error_msg!(gst::LibraryError::Settings, ("{}", why)));
        }
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        let mut st = self.state.lock().unwrap();
        if let Some(out) = st.output.take() {
            let _ = out.pool.set_active(false);
        }
        st.sources.clear();
        st.workers = None;
        Ok(())
    }

    fn create_new_pad(
        &self,
        templ: &gst::PadTemplate,
        req_name: Option<&str>,
        caps: Option<&gst::Caps>,
    ) -> Option<gst_base::AggregatorPad> {
        let pad = self.parent_create_new_pad(templ, req_name, caps)?;
        if self.obj().sink_pads().len() >= MAX_SLOTS {
            gst::element_imp_error!(self, gst::CoreError::Pad, ("at most {} sources", MAX_SLOTS));
            return None;
        }
        Some(pad)
    }

    fn next_time(&self) -> Option<gst::ClockTime> {
        if !self.playing.load(Ordering::SeqCst) {
            return None;
        }
        Some(self.state.lock().unwrap().next.unwrap_or(gst::ClockTime::ZERO))
    }

    fn update_src_caps(&self, _caps: &gst::Caps) -> Result<gst::Caps, gst::FlowError> {
        let settings = self.settings.lock().unwrap().clone();
        let pads = self.sink_pads();
        let first = pads.iter().find_map(|p| p.current_caps()).ok_or(gst_base::AGGREGATOR_FLOW_NEED_DATA)?;
        let info =
            gst_video::VideoInfo::from_caps(&first).map_err(|_| self.fail(format!("not video: {first}")))?;
        let n = match (settings.max_rois, settings.batch_size) {
            (r, _) if r > 0 => r as usize,
            (_, b) if b > 0 => b as usize,
            _ => pads.len().max(1),
        };
        let (mw, mh) = settings.model.model_size(info.width(), info.height());
        let mut dims = model_dims(
            settings.model.colorspace.channels(),
            settings.model.layout == ModelLayout::Chw,
            mw as usize,
            mh as usize,
        );
        *dims.last_mut().expect("four dimensions") = n;
        let fps = info.fps();
        let tensor = TensorCaps {
            dtype: settings.model.dtype.dtype(),
            dims,
            framerate: (fps.numer() > 0).then_some(fps),
        };
        Ok(tensor.to_caps())
    }

    fn negotiated_src_caps(&self, caps: &gst::Caps) -> Result<(), gst::LoggableError> {
        let settings = self.settings.lock().unwrap().clone();
        let s = caps.structure(0).ok_or_else(|| gst::loggable_error!(CAT, "empty caps"))?;
        let tensor = TensorCaps::from_structure(s).map_err(|e| gst::loggable_error!(CAT, "{e}"))?;
        let n = *tensor.dims.last().unwrap_or(&1);
        if n == 0 || n > MAX_SLOTS {
            return Err(gst::loggable_error!(CAT, "a batch of {n} (at most {MAX_SLOTS})"));
        }
        let (w, h) = if tensor.dims.len() == 4 && settings.model.layout == ModelLayout::Chw {
            (tensor.dims[0], tensor.dims[1])
        } else {
            (tensor.dims[1], tensor.dims[2])
        };
        let mut model = settings.model.clone();
        (model.model_width, model.model_height) = (w as u32, h as u32);
        let slot = Self::slot_layout(&model, w as u32, h as u32);
        let bytes = slot.bytes().checked_mul(n).filter(|&b| b <= u32::MAX as usize).ok_or_else(|| {
            gst::loggable_error!(
                CAT,
                "a batch of {n} x {} bytes does not fit a GStreamer pool buffer",
                slot.bytes()
            )
        })?;
        let fill = fill_slot(&model, &slot).map_err(|e| gst::loggable_error!(CAT, "fill colour: {e}"))?;
        let (pool, _) = crate::BufferPool::configured(caps, bytes as u32, 1, 0)
            .map_err(|e| gst::loggable_error!(CAT, "edgefirst pool refused {caps}: {e}"))?;
        pool.set_active(true).map_err(|e| gst::loggable_error!(CAT, "pool activation: {e}"))?;
        let mut st = self.state.lock().unwrap();
        if let Some(old) = st.output.take() {
            let _ = old.pool.set_active(false);
        }
        st.sources.clear();
        st.frame = tensor
            .framerate
            .filter(|f| f.numer() > 0)
            .and_then(|f| gst::ClockTime::SECOND.mul_div_floor(f.denom() as u64, f.numer() as u64))
            .unwrap_or(gst::ClockTime::from_mseconds(33));
        gst::info!(CAT, imp = self, "batch of {n}: {caps}");
        st.output = Some(Output { n, slot, tensor, pool: pool.upcast(), fill });
        Ok(())
    }

    fn aggregate(&self, timeout: bool) -> Result<gst::FlowSuccess, gst::FlowError> {
        let settings = self.settings.lock().unwrap().clone();
        let pads = self.sink_pads();
        if pads.iter().all(|p| p.is_eos() && !p.has_buffer()) {
            return Err(gst::FlowError::Eos);
        }
        let mut st = self.state.lock().unwrap();
        let st = &mut *st;
        let Some(out) = st.output.as_ref() else {
            return Err(gst_base::AGGREGATOR_FLOW_NEED_DATA);
        };
        let (n, slot_bytes) = (out.n, out.slot.bytes());
        let slot_layout = out.slot;
        let mut model = settings.model.clone();
        (model.model_width, model.model_height) = (slot_layout.width as u32, slot_layout.height as u32);
        if settings.max_rois > 0 {
            let Some(pad) = pads.first() else { return Err(gst::FlowError::Eos) };
            let Some(frame) = pad.pop_buffer() else {
                return Err(if pad.is_eos() {
                    gst::FlowError::Eos
                } else {
                    gst_base::AGGREGATOR_FLOW_NEED_DATA
                });
            };
            let src =
                self.source_for(&mut st.sources, pad, &model, &slot_layout).map_err(|e| self.fail(e))?;
            let tensor = checked_import(src, &frame).map_err(|e| self.fail(e))?;
            let (info, format) = (src.info.clone(), src.format);
            let workers =
                kept_workers(&mut st.workers, settings.model.n_threads, n).map_err(|e| self.fail(e))?;
            let outbuf = roi_batch(&settings, &model, out, workers, &info, format, &frame, tensor.as_ref())
                .map_err(|e| self.fail(e))?;
            st.next = frame.pts().map(|t| t + st.frame);
            drop(pads);
            return self.obj().finish_buffer(outbuf);
        }
        // Each slot's input: a frame, or nothing (fill or repeat).
        let mut frames: Vec<Option<(gst::Buffer, String)>> = Vec::with_capacity(n);
        for i in 0..n {
            frames.push(pads.get(i).and_then(|p| p.pop_buffer().map(|b| (b, p.name().to_string()))));
        }
        for (pad, f) in pads.iter().zip(&frames) {
            if f.is_some() {
                self.source_for(&mut st.sources, pad, &model, &slot_layout).map_err(|e| self.fail(e))?;
            }
        }
        // Every frame checked, and its fds imported through its source's cache, before any slot
        // is converted (the caches are per source; the conversions then only read).
        let mut imported: Vec<Option<TensorDyn>> = Vec::with_capacity(n);
        for f in &frames {
            imported.push(match f {
                Some((buf, name)) => {
                    let src = st.sources.get_mut(name).expect("made above");
                    checked_import(src, buf).map_err(|e| self.fail(e))?
                }
                None => None,
            });
        }
        let mut outbuf = out.pool.acquire_buffer(None)?;
        let mut info = BatchInfo { n_slots: n as u32, slot_stride: slot_bytes as u32, ..Default::default() };
        let mut pts = None;
        // Each slot's writer: its converter, or none (filled or repeated, written whole). A batch
        // tensor whose slots were written by the same ones last time keeps their padding.
        let key = frames.iter().fold(n as u64, |k, f| {
            let id = f.as_ref().map_or(0, |(_, name)| st.sources[name].converter.id());
            (k.rotate_left(23) ^ id).wrapping_mul(0x9e37_79b9_7f4a_7c15)
        });
        let b = outbuf.get_mut().expect("a fresh pool buffer");
        let cannot_map = || self.fail("cannot map the batch buffer".into());
        padding::write_marked(b, key, cannot_map, |map, kept| {
            let workers =
                kept_workers(&mut st.workers, settings.model.n_threads, n).map_err(|e| self.fail(e))?;
            let sources = &st.sources;
            let work: Vec<_> = map.chunks_mut(slot_bytes).take(n).zip(frames.iter().zip(&imported)).collect();
            each_slot(workers, work, |(slot, (frame, tensor))| match frame {
                Some((buf, name)) => convert_into(&sources[name], buf, tensor.as_ref(), slot, kept),
                None => Ok(()),
            })
            .into_iter()
            .try_for_each(|r| r.map_err(|e| self.fail(e)))?;
            for i in 0..n {
                let slot = &mut map[i * slot_bytes..(i + 1) * slot_bytes];
                let pad = pads.get(i);
                let mut s = BatchSlot {
                    source: pad.map_or(i as u32, |p| pad_index(p.upcast_ref())),
                    pts: u64::MAX,
                    ..Default::default()
                };
                match (&frames[i], pad.and_then(|p| st.sources.get_mut(p.name().as_str()))) {
                    (Some((buf, _)), Some(src)) => {
                        s.pts = buf.pts().map_or(u64::MAX, |t| t.nseconds());
                        pts = pts.or(buf.pts());
                        let c = src.converter.content();
                        set_geometry(&mut s, c);
                        if settings.missing_slot == MissingSlot::Previous {
                            // The same Vec every batch: a slot's bytes, not an allocation, a frame.
                            let previous = src.previous.get_or_insert_with(Vec::new);
                            previous.clear();
                            previous.extend_from_slice(slot);
                        }
                    }
                    (None, Some(src))
                        if settings.missing_slot == MissingSlot::Previous && src.previous.is_some() =>
                    {
                        slot.copy_from_slice(src.previous.as_deref().expect("checked"));
                        s.flags = SLOT_REPEATED;
                        set_geometry(&mut s, src.converter.content());
                    }
                    _ => {
                        slot.copy_from_slice(&out.fill);
                        s.flags = SLOT_FILLED;
                    }
                }
                info.slots[i] = s;
            }
            Ok(())
        })?;
        let pts = pts.or(st.next);
        b.set_pts(pts);
        b.set_duration(st.frame);
        st.next = pts.map(|t| t + st.frame);
        add_metas(b, out, &info);
        gst::trace!(CAT, imp = self, "batch of {n} (timeout {timeout})");
        drop(pads);
        self.obj().finish_buffer(outbuf)
    }
}

fn set_geometry(s: &mut BatchSlot, c: &edgefirst_tensor::ContentRegion) {
    (s.content_x, s.content_y, s.content_width, s.content_height) =
        (c.rect.x as u32, c.rect.y as u32, c.rect.width as u32, c.rect.height as u32);
    (s.source_x, s.source_y, s.source_width, s.source_height) =
        (c.source.x as u32, c.source.y as u32, c.source.width as u32, c.source.height as u32);
    (s.scale_x, s.scale_y) = (c.scale_x, c.scale_y);
}

/// One frame into its slot, through its kept import or GStreamer's map of it (already checked);
/// the picture alone where the slot `kept` its converter's padding.
fn convert_into(
    src: &Source,
    buf: &gst::Buffer,
    tensor: Option<&TensorDyn>,
    slot: &mut [u8],
    kept: bool,
) -> Result<(), String> {
    let planes = frame::Planes::of(tensor, buf.as_ref(), &src.info)?;
    let image = SrcImage {
        format: src.format,
        width: src.info.width() as usize,
        height: src.info.height() as usize,
        planes: planes.get(src.format.num_planes())?,
    };
    match kept {
        true => src.converter.convert_picture(&image, slot),
        false => src.converter.convert(&image, slot),
    }
    .map_err(|e| format!("conversion failed: {e}"))
}

/// The element's slot threads for `n_threads` (at most one band a slot), started on first use and
/// kept while the count stays: spawned per batch, they cost a share of every batch and started
/// cold (n-threads=2 took as long as one thread; docs/benchmark-log.md, twenty-fifth session).
fn kept_workers(kept: &mut Option<Workers>, n_threads: u32, slots: usize) -> Result<&Workers, String> {
    let bands = (n_threads as usize).clamp(1, slots.max(1));
    if kept.as_ref().is_none_or(|w| w.bands() != bands) {
        *kept = None;
        let started =
            Workers::new(bands).map_err(|e| format!("cannot start {bands} conversion threads: {e}"))?;
        *kept = Some(started);
    }
    Ok(kept.as_ref().expect("started above"))
}

/// `make(work[i])` for every `i`, once each, on the workers' bands: whoever runs a band takes the
/// next item left, so a worker not yet awake when the aggregator's thread has taken the last one
/// does nothing (`Workers::run`). The results in `work`'s order; one that panicked is an error
/// like any other (posted by the element), not a panic through the aggregator.
fn each_slot<W: Send, R: Send>(
    workers: &Workers,
    work: Vec<W>,
    make: impl Fn(W) -> Result<R, String> + Sync,
) -> Vec<Result<R, String>> {
    let cells: Vec<Mutex<Option<W>>> = work.into_iter().map(|w| Mutex::new(Some(w))).collect();
    let results: Vec<Mutex<Option<Result<R, String>>>> = cells.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    workers.run(&|_band| loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(cell) = cells.get(i) else { break };
        if let Some(w) = cell.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| make(w)))
                .unwrap_or_else(|_| Err(format!("slot {i}: its conversion panicked")));
            *results[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
        }
    });
    results
        .into_iter()
        .map(|r| r.into_inner().unwrap_or_else(|p| p.into_inner()).expect("every item taken once"))
        .collect()
}

/// A frame checked and imported through its source's cache (`frame::checked_import`).
fn checked_import(src: &mut Source, buf: &gst::Buffer) -> Result<Option<TensorDyn>, String> {
    frame::checked_import(buf, &src.info, src.format, &mut src.cache, &mut src.types).map(|(_, t)| t)
}

/// ROI mode: each region of the frame (its GstVideoRegionOfInterestMetas, or the fixed `rois`)
/// cropped, fitted and converted into its own slot; the slots past the regions filled.
#[allow(clippy::too_many_arguments)]
fn roi_batch(
    settings: &BatchSettings,
    model: &Settings,
    out: &Output,
    workers: &Workers,
    info: &gst_video::VideoInfo,
    format: PixelFormat,
    frame: &gst::Buffer,
    tensor: Option<&TensorDyn>,
) -> Result<gst::Buffer, String> {
    let (fw, fh) = (info.width() as usize, info.height() as usize);
    let mut rois: Vec<(u32, edgefirst_tensor::Region)> = if settings.rois.is_empty() {
        frame
            .iter_meta::<gst_video::VideoRegionOfInterestMeta>()
            .map(|m| {
                let (x, y, w, h) = m.rect();
                (
                    m.id().max(0) as u32,
                    edgefirst_tensor::Region::new(x as usize, y as usize, w as usize, h as usize),
                )
            })
            .collect()
    } else {
        settings.rois.iter().enumerate().map(|(i, r)| (i as u32, *r)).collect()
    };
    // A detector's box may reach past the frame: clamp it, and drop what is left empty.
    rois.retain_mut(|(_, r)| {
        let x1 = (r.x.saturating_add(r.width)).min(fw);
        let y1 = (r.y.saturating_add(r.height)).min(fh);
        r.x = r.x.min(fw);
        r.y = r.y.min(fh);
        r.width = x1.saturating_sub(r.x);
        r.height = y1.saturating_sub(r.y);
        r.width > 0 && r.height > 0
    });
    let slot_bytes = out.slot.bytes();
    let mut outbuf = out.pool.acquire_buffer(None).map_err(|e| format!("no batch buffer: {e}"))?;
    let mut binfo = BatchInfo { n_slots: out.n as u32, slot_stride: slot_bytes as u32, ..Default::default() };
    {
        let b = outbuf.get_mut().expect("a fresh pool buffer");
        let mut map = b.map_writable().map_err(|_| "cannot map the batch buffer".to_string())?;
        let planes = frame::Planes::of(tensor, frame.as_ref(), info)?;
        let image = SrcImage { format, width: fw, height: fh, planes: planes.get(format.num_planes())? };
        let spec = model.spec_for(info);
        let pts = frame.pts().map_or(u64::MAX, |t| t.nseconds());
        // Each region's converter is made for this frame (a detector's boxes move), on the band
        // that converts it.
        let slots: Vec<_> = map.chunks_mut(slot_bytes).take(out.n).enumerate().collect();
        let made = each_slot(workers, slots, |(i, slot)| {
            let mut s = BatchSlot { source: i as u32, pts, ..Default::default() };
            match rois.get(i) {
                Some((id, r)) => {
                    let spec = ConvertSpec { source_region: Some(*r), ..spec };
                    let conv = Converter::new(format, fw, fh, out.slot, &spec, 1)
                        .map_err(|e| format!("ROI {id}: {e}"))?;
                    conv.convert(&image, slot).map_err(|e| format!("ROI {id}: {e}"))?;
                    s.source = *id;
                    set_geometry(&mut s, conv.content());
                }
                None => {
                    slot.copy_from_slice(&out.fill);
                    s.flags = SLOT_FILLED;
                }
            }
            Ok(s)
        });
        for (i, s) in made.into_iter().enumerate() {
            binfo.slots[i] = s?;
        }
    }
    let b = outbuf.get_mut().expect("a fresh pool buffer");
    b.set_pts(frame.pts());
    add_metas(b, out, &binfo);
    Ok(outbuf)
}

/// The batch tensor's meta (shape `[N, …]`, the batch stride one slot) and the slots' meta.
fn add_metas(b: &mut gst::BufferRef, out: &Output, slots: &BatchInfo) {
    let slot = &out.slot;
    let mut meta = TensorInfo { dtype: dtype_code(slot.dtype), ..Default::default() };
    let shape = out.tensor.shape();
    let spec = StrideSpec {
        layout: if slot.chw { PixelLayout::Planar } else { PixelLayout::Packed },
        row_stride: slot.row_stride,
        plane_stride: slot.chw.then_some(slot.plane_stride),
        batch_stride: Some(slot.bytes()),
    };
    // A batch of image tensors is rank 4, within the meta's eight dimensions.
    let _ = meta.set_layout(&shape, &byte_strides(&shape, slot.dtype.size(), Some(&spec)));
    TensorMeta::add(b, &meta);
    BatchMeta::add(b, slots);
}
