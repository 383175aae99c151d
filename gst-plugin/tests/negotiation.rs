//! edgefirsttensor negotiates like a GStreamer converter: properties that are set win, the rest
//! comes from downstream caps (NNStreamer `types` and `dimensions`, or `video/x-raw`), and what
//! neither says is fixated from the input. It links before the input size is known, renegotiates
//! when it changes, and converts straight into a downstream pool that can hold the tensor.

mod common;

use common::*;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The caps edgefirsttensor's src pad settled on in `launch`, after one buffer (or its error).
fn out_caps_of(launch: &str) -> Result<String, String> {
    init();
    let p = gst::parse::launch(launch).map_err(|e| e.to_string())?;
    let bin = p.downcast_ref::<gst::Bin>().unwrap();
    let t = bin.by_name("t").expect("the element is named t");
    let seen = std::sync::Arc::new(Mutex::new(None));
    {
        let seen = seen.clone();
        t.static_pad("src").unwrap().add_probe(gst::PadProbeType::EVENT_DOWNSTREAM, move |_, info| {
            if let Some(gst::EventView::Caps(c)) = info.event().map(|e| e.view()) {
                *seen.lock().unwrap() = Some(c.caps().to_string());
            }
            gst::PadProbeReturn::Ok
        });
    }
    run_to_eos(&p, 10)?;
    let caps = seen.lock().unwrap().clone();
    caps.ok_or_else(|| "no caps".into())
}

const SRC: &str = "videotestsrc num-buffers=2 ! video/x-raw,format=NV12,width=320,height=240,framerate=30/1";

fn tensor(types: &str, dims: &str) -> String {
    format!(
        "other/tensors, format=(string)static, num_tensors=(int)1, types=(string){types}, \
         dimensions=(string){dims}, framerate=(fraction)30/1"
    )
}

#[test]
fn model_size_dtype_layout_and_colour_come_from_downstream_caps() {
    for (filter, types, dims) in [
        ("other/tensors,types=float32,dimensions=3:320:320:1", "float32", "3:320:320:1"),
        ("other/tensors,types=int8,dimensions=3:224:160:1", "int8", "3:224:160:1"),
        // W:H:C:1 is chw.
        ("other/tensors,types=float32,dimensions=300:200:3:1", "float32", "300:200:3:1"),
        // One channel: gray; four: RGBA.
        ("other/tensors,types=uint8,dimensions=1:64:64:1", "uint8", "1:64:64:1"),
        ("other/tensors,types=uint8,dimensions=4:96:64:1", "uint8", "4:96:64:1"),
        // Three dimensions, no batch.
        ("other/tensors,types=uint8,dimensions=3:100:100", "uint8", "3:100:100"),
        // Only the size: the rest as the properties' defaults.
        ("other/tensors,dimensions=3:128:128:1", "uint8", "3:128:128:1"),
        // Only the type: the input's size.
        ("other/tensors,types=float16", "float16", "3:320:240:1"),
    ] {
        let caps = out_caps_of(&format!("{SRC} ! edgefirsttensor name=t ! {filter} ! fakesink")).unwrap();
        assert_eq!(caps, tensor(types, dims), "{filter}");
    }
}

#[test]
fn the_converted_tensor_is_what_the_caps_describe() {
    init();
    let p = gst::parse::launch(&format!(
        "{SRC} ! edgefirsttensor name=t ! other/tensors,types=float32,dimensions=160:128:3:1 ! appsink name=sink"
    ))
    .unwrap();
    let sink = p
        .downcast_ref::<gst::Bin>()
        .unwrap()
        .by_name("sink")
        .unwrap()
        .downcast::<gst_app::AppSink>()
        .unwrap();
    p.set_state(gst::State::Playing).unwrap();
    let sample = sink.pull_sample().unwrap();
    let b = sample.buffer().unwrap();
    assert_eq!(b.size(), 160 * 128 * 3 * 4, "float32 [1, 3, 128, 160]");
    let meta = b.meta::<gstedgefirst::TensorMeta>().unwrap();
    assert_eq!(meta.info().shape(), &[1, 3, 128, 160], "chw from the dimensions' order");
    assert_eq!(meta.info().dtype(), Some(edgefirst_tensor::DType::F32));
    p.set_state(gst::State::Null).unwrap();
}

#[test]
fn video_caps_downstream_set_the_model_size_and_colour() {
    let caps = out_caps_of(&format!(
        "{SRC} ! edgefirsttensor name=t ! video/x-raw,format=BGR,width=200,height=100 ! fakesink"
    ))
    .unwrap();
    assert_eq!(
        caps,
        "video/x-raw, format=(string)BGR, width=(int)200, height=(int)100, framerate=(fraction)30/1"
    );
    let caps = out_caps_of(&format!("{SRC} ! edgefirsttensor name=t ! video/x-raw,format=GRAY8 ! fakesink"))
        .unwrap();
    assert_eq!(
        caps,
        "video/x-raw, format=(string)GRAY8, width=(int)320, height=(int)240, framerate=(fraction)30/1"
    );
}

#[test]
fn set_properties_win_and_fixate_what_downstream_leaves_open() {
    let caps = out_caps_of(&format!(
        "{SRC} ! edgefirsttensor name=t model-width=64 model-height=32 model-dtype=int8 model-layout=chw \
         model-colorspace=gray ! other/tensors ! fakesink"
    ))
    .unwrap();
    assert_eq!(caps, tensor("int8", "64:32:1:1"));
    // Nothing set, nothing asked: the input's size, RGB, hwc, uint8.
    let caps = out_caps_of(&format!("{SRC} ! edgefirsttensor name=t ! fakesink")).unwrap();
    assert_eq!(caps, tensor("uint8", "3:320:240:1"));
}

#[test]
fn a_caps_filter_that_contradicts_a_set_property_names_both() {
    for (props, filter, words) in [
        ("model-dtype=uint8", "other/tensors,types=float32", ["float32", "model-dtype"]),
        ("model-width=640", "other/tensors,dimensions=3:320:320:1", ["3:320:320:1", "model-width"]),
        ("model-layout=hwc", "other/tensors,dimensions=320:320:3:1", ["320:320:3:1", "model-layout"]),
        ("model-colorspace=gray", "other/tensors,dimensions=3:32:32:1", ["3:32:32:1", "model-colorspace"]),
        ("model-colorspace=rgb", "video/x-raw,format=BGR", ["BGR", "model-colorspace"]),
        ("model-height=50", "video/x-raw,format=RGB,width=100,height=60", ["100x60", "model-height"]),
    ] {
        let e = out_caps_of(&format!("{SRC} ! edgefirsttensor name=t {props} ! {filter} ! fakesink"))
            .unwrap_err();
        for w in words {
            assert!(e.contains(w), "{props} ! {filter}: `{w}` not in: {e}");
        }
    }
}

#[test]
fn links_at_construction_before_the_input_size_is_known() {
    init();
    // gst_parse links with caps at construction: the src pad must offer other/tensors before any
    // input caps exist.
    for line in [
        "videotestsrc num-buffers=1 ! edgefirsttensor name=t ! other/tensors ! fakesink",
        "videotestsrc num-buffers=1 ! edgefirsttensor name=t ! other/tensors,types=float32,dimensions=3:32:32:1 ! fakesink",
        "appsrc caps=video/x-raw,format=RGB,width=64,height=48,framerate=30/1 ! edgefirsttensor name=t \
         ! other/tensors,types=float32 ! fakesink",
    ] {
        gst::parse::launch(line).unwrap_or_else(|e| panic!("{line}: {e}"));
    }
    let caps = out_caps_of("videotestsrc num-buffers=1 ! edgefirsttensor name=t ! other/tensors ! fakesink")
        .unwrap();
    assert!(caps.starts_with("other/tensors") && caps.contains("dimensions=(string)3:320:240:1"), "{caps}");
}

#[test]
fn renegotiates_when_the_input_size_changes() {
    init();
    let p = gst::parse::launch("appsrc name=src format=time ! edgefirsttensor ! appsink name=sink").unwrap();
    let bin = p.downcast_ref::<gst::Bin>().unwrap();
    let src = bin.by_name("src").unwrap().downcast::<gst_app::AppSrc>().unwrap();
    let sink = bin.by_name("sink").unwrap().downcast::<gst_app::AppSink>().unwrap();
    p.set_state(gst::State::Playing).unwrap();
    let mut seen = Vec::new();
    for (w, h) in [(64, 48), (32, 24), (64, 48)] {
        src.set_caps(Some(&video_caps(gst_video::VideoFormat::Rgb, w, h)));
        src.push_buffer(gst::Buffer::with_size((w * h * 3) as usize).unwrap()).unwrap();
        let sample = sink.pull_sample().unwrap();
        let caps = sample.caps().unwrap().to_string();
        assert!(caps.contains(&format!("dimensions=(string)3:{w}:{h}:1")), "{w}x{h}: {caps}");
        assert_eq!(sample.buffer().unwrap().size(), (w * h * 3) as usize);
        seen.push(caps);
    }
    p.set_state(gst::State::Null).unwrap();
    assert_ne!(seen[0], seen[1]);
}

/// A consumer written here, as an NPU or GPU element would be: it proposes a pool of its own input
/// buffers and counts which buffers it receives are its own.
mod poolsink {
    use super::*;

    glib::wrapper! {
        pub struct PoolSink(ObjectSubclass<imp::PoolSink>) @extends gst_base::BaseSink, gst::Element, gst::Object;
    }

    impl PoolSink {
        pub fn counts(&self) -> (usize, usize) {
            let i = self.imp();
            (i.own.load(Ordering::SeqCst), i.foreign.load(Ordering::SeqCst))
        }
    }

    pub mod imp {
        use super::*;

        #[derive(Default)]
        pub struct PoolSink {
            pool: Mutex<Option<gst::BufferPool>>,
            pub own: AtomicUsize,
            pub foreign: AtomicUsize,
            /// Propose an already active pool of 16-byte buffers: one that cannot hold a tensor.
            pub small: std::sync::atomic::AtomicBool,
        }

        #[glib::object_subclass]
        impl ObjectSubclass for PoolSink {
            const NAME: &'static str = "TestEdgeFirstPoolSink";
            type Type = super::PoolSink;
            type ParentType = gst_base::BaseSink;
        }

        impl ObjectImpl for PoolSink {}
        impl GstObjectImpl for PoolSink {}

        impl ElementImpl for PoolSink {
            fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
                static META: std::sync::LazyLock<gst::subclass::ElementMetadata> =
                    std::sync::LazyLock::new(|| {
                        gst::subclass::ElementMetadata::new(
                            "pool sink",
                            "Sink",
                            "Proposes its own pool",
                            "tests",
                        )
                    });
                Some(&META)
            }

            fn pad_templates() -> &'static [gst::PadTemplate] {
                static T: std::sync::LazyLock<Vec<gst::PadTemplate>> = std::sync::LazyLock::new(|| {
                    let caps = gst::Caps::builder("other/tensors").build();
                    vec![gst::PadTemplate::new(
                        "sink",
                        gst::PadDirection::Sink,
                        gst::PadPresence::Always,
                        &caps,
                    )
                    .unwrap()]
                });
                T.as_ref()
            }
        }

        impl BaseSinkImpl for PoolSink {
            fn propose_allocation(
                &self,
                query: &mut gst::query::Allocation,
            ) -> Result<(), gst::LoggableError> {
                let (Some(caps), _) = query.get() else {
                    return Err(gst::loggable_error!(gst::CAT_RUST, "no caps"));
                };
                let caps = caps.to_owned();
                let t = gstedgefirst::caps::TensorCaps::from_structure(caps.structure(0).unwrap())
                    .map_err(|e| gst::loggable_error!(gst::CAT_RUST, "{e}"))?;
                let small = self.small.load(Ordering::SeqCst);
                let size =
                    if small { 16 } else { (t.dims.iter().product::<usize>() * t.dtype.size()) as u32 };
                let pool = gst::BufferPool::new();
                let mut config = pool.config();
                config.set_params(Some(&caps), size, 2, 0);
                pool.set_config(config).map_err(|e| gst::loggable_error!(gst::CAT_RUST, "{e}"))?;
                if small {
                    pool.set_active(true).unwrap();
                }
                query.add_allocation_pool(Some(&pool), size, 2, 0);
                *self.pool.lock().unwrap() = Some(pool);
                Ok(())
            }

            fn render(&self, buffer: &gst::Buffer) -> Result<gst::FlowSuccess, gst::FlowError> {
                let ours = self.pool.lock().unwrap().as_ref().map(|p| p.as_ptr() as usize);
                // The pool a buffer came from is the GstBuffer's own `pool` field.
                let from = unsafe { (*buffer.as_ptr()).pool } as usize;
                let counter = if ours == Some(from) { &self.own } else { &self.foreign };
                counter.fetch_add(1, Ordering::SeqCst);
                assert!(buffer.meta::<gstedgefirst::TensorMeta>().is_some(), "the tensor meta rides along");
                Ok(gst::FlowSuccess::Ok)
            }
        }
    }
}

use gst::glib;

fn run_into_pool_sink(small: bool) -> (usize, usize) {
    init();
    static REGISTER: std::sync::Once = std::sync::Once::new();
    REGISTER.call_once(|| {
        gst::Element::register(None, "testpoolsink", gst::Rank::NONE, poolsink::PoolSink::static_type())
            .unwrap();
    });
    let p = gst::parse::launch(
        "videotestsrc num-buffers=10 ! video/x-raw,format=NV12,width=320,height=240 \
         ! edgefirsttensor model-width=160 model-height=160 model-dtype=float32 ! testpoolsink name=sink",
    )
    .unwrap();
    let sink = p
        .downcast_ref::<gst::Bin>()
        .unwrap()
        .by_name("sink")
        .unwrap()
        .downcast::<poolsink::PoolSink>()
        .unwrap();
    sink.imp().small.store(small, Ordering::SeqCst);
    run_to_eos(&p, 20).unwrap();
    sink.counts()
}

#[test]
fn tensors_are_converted_straight_into_a_downstream_pool() {
    assert_eq!(run_into_pool_sink(false), (10, 0), "every buffer the consumer received is one of its own");
}

#[test]
fn a_downstream_pool_that_cannot_hold_the_tensor_is_passed_over() {
    assert_eq!(run_into_pool_sink(true), (0, 10), "the edgefirst pool instead");
}

/// The launch lines of pipelines/generic.md that need no camera run as written.
#[test]
fn the_documented_launch_lines_without_a_camera_run() {
    init();
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../pipelines/generic.md")).unwrap();
    let mut lines = Vec::new();
    let mut current: Option<String> = None;
    for raw in doc.lines() {
        let l = raw.trim();
        match current.take() {
            Some(mut c) => {
                c.push(' ');
                c.push_str(l.trim_end_matches('\\').trim());
                if l.ends_with('\\') {
                    current = Some(c);
                } else {
                    lines.push(c);
                }
            }
            None if l.starts_with("gst-launch-1.0 videotestsrc") => {
                let c = l.trim_start_matches("gst-launch-1.0").trim_end_matches('\\').trim().to_string();
                if l.ends_with('\\') {
                    current = Some(c);
                } else {
                    lines.push(c);
                }
            }
            None => {}
        }
    }
    assert!(lines.len() >= 4, "the no-camera lines are found: {lines:?}");
    for line in lines {
        let p = gst::parse::launch(&line).unwrap_or_else(|e| panic!("{line}: {e}"));
        run_to_eos(&p, 20).unwrap_or_else(|e| panic!("{line}: {e}"));
    }
}
