use crate::transport::netmsg;
use crate::transport::zenohcfg::{self, SessionSettings};
use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::prelude::*;
use gst_base::subclass::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};
use zenoh::Wait;

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "edgefirstzenohsink",
        gst::DebugColorFlags::empty(),
        Some("EdgeFirst tensors published on Zenoh"),
    )
});

#[derive(Debug, Clone, Default)]
struct Settings {
    session: SessionSettings,
    block: bool,
}

struct Running {
    session: zenoh::Session,
    publisher: zenoh::pubsub::Publisher<'static>,
    _token: zenoh::liveliness::LivelinessToken,
}

#[derive(Default)]
pub struct EdgeFirstZenohSink {
    settings: Mutex<Settings>,
    running: Mutex<Option<Running>>,
    caps: Mutex<Option<gst::Caps>>,
    sent: AtomicU64,
    bytes: AtomicU64,
}

#[glib::object_subclass]
impl ObjectSubclass for EdgeFirstZenohSink {
    const NAME: &'static str = "GstEdgeFirstZenohSink";
    type Type = super::EdgeFirstZenohSink;
    type ParentType = gst_base::BaseSink;
}

impl ObjectImpl for EdgeFirstZenohSink {
    fn constructed(&self) {
        self.parent_constructed();
        // A network sink paces nothing: frames go out as they come.
        self.obj().set_sync(false);
    }

    fn properties() -> &'static [glib::ParamSpec] {
        static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let mut v = zenohcfg::properties();
            v.extend([
                glib::ParamSpecBoolean::builder("block")
                    .nick("Block when congested")
                    .blurb("false: a message the network cannot take now is dropped (the camera never waits); true: the pipeline waits for the network")
                    .default_value(false)
                    .build(),
                crate::transport::counter("messages-sent", "Messages published"),
                crate::transport::counter("bytes-sent", "Bytes of the messages published"),
            ]);
            v
        });
        PROPS.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        let mut s = self.settings.lock().unwrap();
        if zenohcfg::set(&mut s.session, pspec.name(), value) {
            return;
        }
        match pspec.name() {
            "block" => s.block = value.get().unwrap_or(false),
            other => gst::warning!(CAT, imp = self, "no writable property {other}"),
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        let s = self.settings.lock().unwrap();
        if let Some(v) = zenohcfg::get(&s.session, pspec.name()) {
            return v;
        }
        match pspec.name() {
            "block" => s.block.to_value(),
            "messages-sent" => self.sent.load(Ordering::Relaxed).to_value(),
            "bytes-sent" => self.bytes.load(Ordering::Relaxed).to_value(),
            other => {
                gst::warning!(CAT, imp = self, "no property {other}");
                pspec.default_value().clone()
            }
        }
    }
}

impl GstObjectImpl for EdgeFirstZenohSink {}

impl ElementImpl for EdgeFirstZenohSink {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static META: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            crate::transport::metadata(
                "EdgeFirst tensor sink (Zenoh)",
                "Sink/Network/Tensor",
                "Publishes each buffer as an inline tensor blob with its caps, timestamps and tensor meta on a Zenoh key expression",
            )
        });
        Some(&*META)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(|| {
            vec![crate::transport::always_pad("sink", gst::PadDirection::Sink, &gst::Caps::new_any())]
        });
        TEMPLATES.as_ref()
    }
}

impl BaseSinkImpl for EdgeFirstZenohSink {
    fn start(&self) -> Result<(), gst::ErrorMessage> {
        let s = self.settings.lock().unwrap().clone();
        let fail = |why: String| gst::error_msg!(gst::ResourceError::OpenWrite, ["{}", why]);
        let session = zenohcfg::open(&s.session).map_err(fail)?;
        let cc =
            if s.block { zenoh::qos::CongestionControl::Block } else { zenoh::qos::CongestionControl::Drop };
        let publisher = session
            .declare_publisher(s.session.key.clone())
            .congestion_control(cc)
            .wait()
            .map_err(|e| fail(format!("publishing on {}: {e}", s.session.key)))?;
        let token = session
            .liveliness()
            .declare_token(s.session.key.clone())
            .wait()
            .map_err(|e| fail(format!("liveliness token on {}: {e}", s.session.key)))?;
        gst::info!(CAT, imp = self, "publishing on {} ({})", s.session.key, session.zid());
        *self.running.lock().unwrap() = Some(Running { session, publisher, _token: token });
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        if let Some(r) = self.running.lock().unwrap().take() {
            let Running { session, publisher, _token } = r;
            drop(_token);
            drop(publisher);
            if let Err(e) = session.close().wait() {
                gst::warning!(CAT, imp = self, "closing the Zenoh session: {e}");
            }
        }
        *self.caps.lock().unwrap() = None;
        Ok(())
    }

    fn set_caps(&self, caps: &gst::Caps) -> Result<(), gst::LoggableError> {
        *self.caps.lock().unwrap() = Some(caps.clone());
        Ok(())
    }

    fn event(&self, event: gst::Event) -> bool {
        if let gst::EventView::Eos(_) = event.view() {
            // The end of the stream is an empty message: subscribers end theirs (a producer that
            // vanishes without one is seen by its liveliness token instead).
            if let Some(r) = self.running.lock().unwrap().as_ref() {
                if let Err(e) = r.publisher.put(Vec::<u8>::new()).wait() {
                    gst::warning!(CAT, imp = self, "publishing end of stream: {e}");
                }
            }
        }
        self.parent_event(event)
    }

    fn render(&self, buffer: &gst::Buffer) -> Result<gst::FlowSuccess, gst::FlowError> {
        let Some(caps) = self.caps.lock().unwrap().clone() else {
            gst::element_imp_error!(self, gst::CoreError::Negotiation, ["a buffer before any caps"]);
            return Err(gst::FlowError::NotNegotiated);
        };
        let msg = netmsg::encode(buffer, &caps).map_err(|e| {
            gst::element_imp_error!(
                self,
                gst::StreamError::Encode,
                ["cannot describe the buffer as a tensor message: {}", e]
            );
            gst::FlowError::Error
        })?;
        let len = msg.len() as u64;
        let running = self.running.lock().unwrap();
        let Some(r) = running.as_ref() else { return Err(gst::FlowError::Flushing) };
        r.publisher.put(msg).wait().map_err(|e| {
            gst::element_imp_error!(self, gst::ResourceError::Write, ["publishing on Zenoh: {}", e]);
            gst::FlowError::Error
        })?;
        self.sent.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(len, Ordering::Relaxed);
        Ok(gst::FlowSuccess::Ok)
    }
}
