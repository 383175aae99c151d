use crate::transport::netmsg;
use crate::transport::zenohcfg::{self, SessionSettings};
use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::prelude::*;
use gst_base::subclass::base_src::CreateSuccess;
use gst_base::subclass::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};
use std::time::Duration;
use zenoh::handlers::{FifoChannelHandler, RingChannel, RingChannelHandler};
use zenoh::sample::{Sample, SampleKind};
use zenoh::Wait;

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "edgefirstzenohsrc",
        gst::DebugColorFlags::empty(),
        Some("EdgeFirst tensors subscribed on Zenoh"),
    )
});

/// How often a wait re-checks for a flush or stop.
const TICK: Duration = Duration::from_millis(100);

#[derive(Debug, Clone)]
struct Settings {
    session: SessionSettings,
    reconnect: bool,
    queue: u32,
    max_size: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            session: SessionSettings::default(),
            reconnect: false,
            queue: 2,
            max_size: netmsg::DEFAULT_MAX_SIZE,
        }
    }
}

struct Running {
    session: zenoh::Session,
    data: zenoh::pubsub::Subscriber<RingChannelHandler<Sample>>,
    live: zenoh::pubsub::Subscriber<FifoChannelHandler<Sample>>,
    /// Producers whose liveliness token is up now.
    producers: usize,
    /// Whether a producer was ever seen (its token or a message).
    seen: bool,
}

pub struct EdgeFirstZenohSrc {
    settings: Mutex<Settings>,
    running: Mutex<Option<Running>>,
    caps: Mutex<Option<gst::Caps>>,
    flushing: AtomicBool,
    received: AtomicU64,
    dropped: AtomicU64,
    fdmem: gst_allocators::FdAllocator,
}

impl Default for EdgeFirstZenohSrc {
    fn default() -> Self {
        EdgeFirstZenohSrc {
            settings: Mutex::default(),
            running: Mutex::default(),
            caps: Mutex::default(),
            flushing: AtomicBool::new(false),
            received: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            fdmem: gst_allocators::FdAllocator::new().downcast().expect("an FdAllocator"),
        }
    }
}

#[glib::object_subclass]
impl ObjectSubclass for EdgeFirstZenohSrc {
    const NAME: &'static str = "GstEdgeFirstZenohSrc";
    type Type = super::EdgeFirstZenohSrc;
    type ParentType = gst_base::PushSrc;
}

impl ObjectImpl for EdgeFirstZenohSrc {
    fn constructed(&self) {
        self.parent_constructed();
        let obj = self.obj();
        obj.set_live(true);
        obj.set_format(gst::Format::Time);
    }

    fn properties() -> &'static [glib::ParamSpec] {
        static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let mut v = zenohcfg::properties();
            v.extend([
                glib::ParamSpecBoolean::builder("reconnect")
                    .nick("Wait for the next producer")
                    .blurb("false: the producer's end of stream, or its leaving (its liveliness token gone), ends the stream; true: keep waiting for a producer on the key")
                    .default_value(false)
                    .mutable_playing()
                    .build(),
                glib::ParamSpecUInt::builder("queue-size")
                    .nick("Queue size")
                    .blurb("Messages held for a pipeline that is behind; when full the oldest is dropped (the publisher never waits)")
                    .minimum(1)
                    .maximum(64)
                    .default_value(2)
                    .build(),
                glib::ParamSpecUInt64::builder("max-size")
                    .nick("Largest message")
                    .blurb("Bytes one message may have; a larger one is dropped with a warning")
                    .minimum(edgefirst_tensor::blob::HEADER_LEN as u64)
                    .default_value(netmsg::DEFAULT_MAX_SIZE)
                    .mutable_playing()
                    .build(),
                crate::transport::counter("messages-received", "Messages decoded and pushed"),
                crate::transport::counter(
                    "messages-dropped",
                    "Messages that did not decode or were too large, each with a warning",
                ),
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
            "reconnect" => s.reconnect = value.get().unwrap_or(false),
            "queue-size" => s.queue = value.get().unwrap_or(2),
            "max-size" => s.max_size = value.get().unwrap_or(netmsg::DEFAULT_MAX_SIZE),
            other => gst::warning!(CAT, imp = self, "no writable property {other}"),
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        let s = self.settings.lock().unwrap();
        if let Some(v) = zenohcfg::get(&s.session, pspec.name()) {
            return v;
        }
        match pspec.name() {
            "reconnect" => s.reconnect.to_value(),
            "queue-size" => s.queue.to_value(),
            "max-size" => s.max_size.to_value(),
            "messages-received" => self.received.load(Ordering::Relaxed).to_value(),
            "messages-dropped" => self.dropped.load(Ordering::Relaxed).to_value(),
            other => {
                gst::warning!(CAT, imp = self, "no property {other}");
                pspec.default_value().clone()
            }
        }
    }
}

impl GstObjectImpl for EdgeFirstZenohSrc {}

impl ElementImpl for EdgeFirstZenohSrc {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static META: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            crate::transport::metadata(
                "EdgeFirst tensor source (Zenoh)",
                "Source/Network/Tensor",
                "Subscribes to a Zenoh key expression and pushes the tensors published there with their caps, timestamps and tensor meta",
            )
        });
        Some(&*META)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(|| {
            vec![crate::transport::always_pad("src", gst::PadDirection::Src, &gst::Caps::new_any())]
        });
        TEMPLATES.as_ref()
    }
}

enum Next {
    Buffer(gst::Buffer),
    End,
    Wait,
}

impl EdgeFirstZenohSrc {
    fn drop_message(&self, why: String) {
        self.dropped.fetch_add(1, Ordering::Relaxed);
        gst::element_imp_warning!(self, gst::StreamError::Decode, ["message dropped: {}", why]);
    }

    fn next(&self, r: &mut Running, s: &Settings) -> Result<Next, gst::FlowError> {
        while let Ok(Some(l)) = r.live.try_recv() {
            match l.kind() {
                SampleKind::Put => {
                    r.producers += 1;
                    r.seen = true;
                }
                SampleKind::Delete => r.producers = r.producers.saturating_sub(1),
            }
        }
        let sample = match r.data.recv_timeout(TICK) {
            Ok(Some(x)) => x,
            Ok(None) => {
                // Nothing queued: a producer that left without an end of stream is gone.
                let gone = r.seen && r.producers == 0;
                return Ok(if gone && !s.reconnect { Next::End } else { Next::Wait });
            }
            Err(e) => {
                gst::element_imp_error!(self, gst::ResourceError::Read, ["Zenoh subscriber: {}", e]);
                return Err(gst::FlowError::Error);
            }
        };
        r.seen = true;
        let bytes = sample.payload().to_bytes();
        if bytes.is_empty() {
            gst::info!(CAT, imp = self, "the producer ended its stream");
            return Ok(if s.reconnect { Next::Wait } else { Next::End });
        }
        if bytes.len() as u64 > s.max_size {
            self.drop_message(format!("{} bytes exceed max-size ({})", bytes.len(), s.max_size));
            return Ok(Next::Wait);
        }
        // Zenoh owns the payload; the one copy makes it a buffer the tensor can be a part of.
        let n = bytes.len();
        let msg = gst::Buffer::from_mut_slice(bytes.into_owned());
        let d = match netmsg::decode(&msg, &self.fdmem) {
            Ok(d) => d,
            Err(e) => {
                self.drop_message(format!("{n} bytes: {e}"));
                return Ok(Next::Wait);
            }
        };
        let mut caps = self.caps.lock().unwrap();
        if caps.as_ref() != Some(&d.caps) {
            if self.obj().set_caps(&d.caps).is_err() {
                gst::element_imp_error!(
                    self,
                    gst::CoreError::Negotiation,
                    ["downstream refused the producer's caps {}", d.caps]
                );
                return Err(gst::FlowError::NotNegotiated);
            }
            *caps = Some(d.caps);
        }
        Ok(Next::Buffer(d.buffer))
    }
}

impl BaseSrcImpl for EdgeFirstZenohSrc {
    fn start(&self) -> Result<(), gst::ErrorMessage> {
        self.flushing.store(false, Ordering::SeqCst);
        let s = self.settings.lock().unwrap().clone();
        let fail = |why: String| gst::error_msg!(gst::ResourceError::OpenRead, ["{}", why]);
        let session = zenohcfg::open(&s.session).map_err(fail)?;
        let data = session
            .declare_subscriber(s.session.key.clone())
            .with(RingChannel::new(s.queue.max(1) as usize))
            .wait()
            .map_err(|e| fail(format!("subscribing to {}: {e}", s.session.key)))?;
        let live = session
            .liveliness()
            .declare_subscriber(s.session.key.clone())
            .history(true)
            .wait()
            .map_err(|e| fail(format!("liveliness of {}: {e}", s.session.key)))?;
        gst::info!(CAT, imp = self, "subscribed to {} ({})", s.session.key, session.zid());
        *self.running.lock().unwrap() = Some(Running { session, data, live, producers: 0, seen: false });
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        if let Some(r) = self.running.lock().unwrap().take() {
            let Running { session, data, live, .. } = r;
            drop(data);
            drop(live);
            if let Err(e) = session.close().wait() {
                gst::warning!(CAT, imp = self, "closing the Zenoh session: {e}");
            }
        }
        *self.caps.lock().unwrap() = None;
        Ok(())
    }

    fn caps(&self, filter: Option<&gst::Caps>) -> Option<gst::Caps> {
        Some(crate::transport::offered_caps(self.caps.lock().unwrap().clone(), filter))
    }

    fn unlock(&self) -> Result<(), gst::ErrorMessage> {
        self.flushing.store(true, Ordering::SeqCst);
        Ok(())
    }

    fn unlock_stop(&self) -> Result<(), gst::ErrorMessage> {
        self.flushing.store(false, Ordering::SeqCst);
        Ok(())
    }
}

impl PushSrcImpl for EdgeFirstZenohSrc {
    fn create(&self, _buffer: Option<&mut gst::BufferRef>) -> Result<CreateSuccess, gst::FlowError> {
        let s = self.settings.lock().unwrap().clone();
        let mut running = self.running.lock().unwrap();
        let Some(r) = running.as_mut() else { return Err(gst::FlowError::Flushing) };
        loop {
            if self.flushing.load(Ordering::SeqCst) {
                return Err(gst::FlowError::Flushing);
            }
            match self.next(r, &s)? {
                Next::Buffer(b) => {
                    self.received.fetch_add(1, Ordering::Relaxed);
                    return Ok(CreateSuccess::NewBuffer(b));
                }
                Next::End => return Err(gst::FlowError::Eos),
                Next::Wait => continue,
            }
        }
    }
}
