use super::MEDIA_TYPE;
use crate::transport::netmsg;
use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "edgefirsttensorpay",
        gst::DebugColorFlags::empty(),
        Some("EdgeFirst tensors into network messages"),
    )
});

pub struct EdgeFirstTensorPay {
    sinkpad: gst::Pad,
    srcpad: gst::Pad,
    caps: Mutex<Option<gst::Caps>>,
    sent: AtomicU64,
    bytes: AtomicU64,
}

#[glib::object_subclass]
impl ObjectSubclass for EdgeFirstTensorPay {
    const NAME: &'static str = "GstEdgeFirstTensorPay";
    type Type = super::EdgeFirstTensorPay;
    type ParentType = gst::Element;

    fn with_class(klass: &Self::Class) -> Self {
        let sinkpad = gst::Pad::builder_from_template(&klass.pad_template("sink").expect("sink template"))
            .chain_function(|pad, parent, buffer| {
                EdgeFirstTensorPay::catch_panic_pad_function(
                    parent,
                    || Err(gst::FlowError::Error),
                    |p| p.chain(pad, buffer),
                )
            })
            .event_function(|pad, parent, event| {
                EdgeFirstTensorPay::catch_panic_pad_function(parent, || false, |p| p.sink_event(pad, event))
            })
            .build();
        let srcpad =
            gst::Pad::builder_from_template(&klass.pad_template("src").expect("src template")).build();
        EdgeFirstTensorPay {
            sinkpad,
            srcpad,
            caps: Mutex::new(None),
            sent: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
        }
    }
}

impl EdgeFirstTensorPay {
    fn sink_event(&self, pad: &gst::Pad, event: gst::Event) -> bool {
        match event.view() {
            gst::EventView::Caps(c) => {
                // The input caps travel inside every message; the stream itself is messages.
                *self.caps.lock().unwrap() = Some(c.caps_owned());
                let out = gst::Caps::builder(MEDIA_TYPE).build();
                self.srcpad.push_event(gst::event::Caps::new(&out))
            }
            _ => gst::Pad::event_default(pad, Some(&*self.obj()), event),
        }
    }

    fn chain(&self, _pad: &gst::Pad, buffer: gst::Buffer) -> Result<gst::FlowSuccess, gst::FlowError> {
        let Some(caps) = self.caps.lock().unwrap().clone() else {
            gst::element_imp_error!(self, gst::CoreError::Negotiation, ["a buffer before any caps"]);
            return Err(gst::FlowError::NotNegotiated);
        };
        let mut out = match netmsg::encode_buffer(&buffer, &caps) {
            Ok(m) => m,
            Err(e) => {
                gst::element_imp_error!(
                    self,
                    gst::StreamError::Encode,
                    ["cannot describe the buffer as a tensor message: {}", e]
                );
                return Err(gst::FlowError::Error);
            }
        };
        let len = out.size() as u64;
        {
            let o = out.make_mut();
            o.set_pts(buffer.pts());
            o.set_dts(buffer.dts());
            o.set_duration(buffer.duration());
            o.set_offset(buffer.offset());
            // Every message stands alone: a receiver may start at any of them.
            o.unset_flags(gst::BufferFlags::all());
            o.set_flags(buffer.flags() & (gst::BufferFlags::DISCONT | gst::BufferFlags::LIVE));
        }
        gst::trace!(CAT, imp = self, "message of {len} bytes");
        let r = self.srcpad.push(out);
        if r.is_ok() {
            self.sent.fetch_add(1, Ordering::Relaxed);
            self.bytes.fetch_add(len, Ordering::Relaxed);
        }
        r
    }
}

impl ObjectImpl for EdgeFirstTensorPay {
    fn constructed(&self) {
        self.parent_constructed();
        let obj = self.obj();
        obj.add_pad(&self.sinkpad).expect("add sink pad");
        obj.add_pad(&self.srcpad).expect("add src pad");
    }

    fn properties() -> &'static [glib::ParamSpec] {
        static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            vec![
                crate::transport::counter("messages-sent", "Messages pushed downstream"),
                crate::transport::counter("bytes-sent", "Bytes of the messages pushed downstream"),
            ]
        });
        PROPS.as_ref()
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        match pspec.name() {
            "messages-sent" => self.sent.load(Ordering::Relaxed).to_value(),
            "bytes-sent" => self.bytes.load(Ordering::Relaxed).to_value(),
            other => {
                gst::warning!(CAT, imp = self, "no property {other}");
                pspec.default_value().clone()
            }
        }
    }
}

impl GstObjectImpl for EdgeFirstTensorPay {}

impl ElementImpl for EdgeFirstTensorPay {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static META: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            crate::transport::metadata(
                "EdgeFirst tensor payloader",
                "Codec/Payloader/Network/Tensor",
                "Makes each buffer one self-contained message (an inline tensor blob with its caps, timestamps and tensor meta) for tcpserversink, rtpgstpay or any byte transport",
            )
        });
        Some(&*META)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(|| {
            vec![
                crate::transport::always_pad("sink", gst::PadDirection::Sink, &gst::Caps::new_any()),
                crate::transport::always_pad(
                    "src",
                    gst::PadDirection::Src,
                    &gst::Caps::builder(MEDIA_TYPE).build(),
                ),
            ]
        });
        TEMPLATES.as_ref()
    }

    fn change_state(
        &self,
        transition: gst::StateChange,
    ) -> Result<gst::StateChangeSuccess, gst::StateChangeError> {
        let r = self.parent_change_state(transition)?;
        if transition == gst::StateChange::PausedToReady {
            *self.caps.lock().unwrap() = None;
        }
        Ok(r)
    }
}
