use crate::transport::edgefirsttensorpay::MEDIA_TYPE;
use crate::transport::netmsg;
use edgefirst_tensor::blob;
use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "edgefirsttensordepay",
        gst::DebugColorFlags::empty(),
        Some("EdgeFirst tensors out of network messages"),
    )
});

#[derive(Default)]
struct State {
    adapter: gst_base::UniqueAdapter,
    /// Caps of the buffers pushed so far.
    caps: Option<gst::Caps>,
    /// A TIME segment to push before the next buffer (upstream's, or a default one in place of a
    /// byte stream's BYTES segment).
    segment: Option<gst::Event>,
    segment_sent: bool,
    /// A message was framed on this stream: from then on the lengths are the framing, and a
    /// damaged message (its magic included) is dropped, not the end of the stream.
    synced: bool,
}

pub struct EdgeFirstTensorDepay {
    sinkpad: gst::Pad,
    srcpad: gst::Pad,
    state: Mutex<State>,
    max_size: AtomicU64,
    received: AtomicU64,
    dropped: AtomicU64,
    fdmem: gst_allocators::FdAllocator,
}

#[glib::object_subclass]
impl ObjectSubclass for EdgeFirstTensorDepay {
    const NAME: &'static str = "GstEdgeFirstTensorDepay";
    type Type = super::EdgeFirstTensorDepay;
    type ParentType = gst::Element;

    fn with_class(klass: &Self::Class) -> Self {
        let sinkpad = gst::Pad::builder_from_template(&klass.pad_template("sink").expect("sink template"))
            .chain_function(|pad, parent, buffer| {
                EdgeFirstTensorDepay::catch_panic_pad_function(
                    parent,
                    || Err(gst::FlowError::Error),
                    |d| d.chain(pad, buffer),
                )
            })
            .event_function(|pad, parent, event| {
                EdgeFirstTensorDepay::catch_panic_pad_function(parent, || false, |d| d.sink_event(pad, event))
            })
            .build();
        let srcpad =
            gst::Pad::builder_from_template(&klass.pad_template("src").expect("src template")).build();
        EdgeFirstTensorDepay {
            sinkpad,
            srcpad,
            state: Mutex::default(),
            max_size: AtomicU64::new(netmsg::DEFAULT_MAX_SIZE),
            received: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            fdmem: gst_allocators::FdAllocator::new().downcast().expect("an FdAllocator"),
        }
    }
}

/// What one input buffer produced, pushed after the state lock is released.
enum Out {
    Caps(gst::Caps),
    Event(gst::Event),
    Buffer(gst::Buffer),
}

impl EdgeFirstTensorDepay {
    fn sink_event(&self, pad: &gst::Pad, event: gst::Event) -> bool {
        match event.view() {
            // The output's caps come from the messages.
            gst::EventView::Caps(_) => true,
            gst::EventView::Segment(s) => {
                // A byte stream's segment says nothing about the tensors' times.
                let ev = if s.segment().format() == gst::Format::Time {
                    event.clone()
                } else {
                    gst::event::Segment::new(&gst::FormattedSegment::<gst::ClockTime>::new())
                };
                let mut st = self.state.lock().unwrap();
                st.segment = Some(ev);
                true
            }
            gst::EventView::FlushStop(_) => {
                let mut st = self.state.lock().unwrap();
                st.adapter.clear();
                st.synced = false;
                drop(st);
                gst::Pad::event_default(pad, Some(&*self.obj()), event)
            }
            gst::EventView::Eos(_) => {
                let left = self.state.lock().unwrap().adapter.available();
                if left > 0 {
                    gst::element_imp_warning!(
                        self,
                        gst::StreamError::Decode,
                        ["the stream ended in the middle of a message ({} bytes dropped)", left]
                    );
                }
                gst::Pad::event_default(pad, Some(&*self.obj()), event)
            }
            _ => gst::Pad::event_default(pad, Some(&*self.obj()), event),
        }
    }

    fn chain(&self, _pad: &gst::Pad, buffer: gst::Buffer) -> Result<gst::FlowSuccess, gst::FlowError> {
        let max = self.max_size.load(Ordering::Relaxed);
        let mut out = Vec::new();
        let mut fatal = None;
        {
            let mut st = self.state.lock().unwrap();
            if buffer.flags().contains(gst::BufferFlags::DISCONT) && st.adapter.available() > 0 {
                // A gap in the bytes: the partial message cannot be completed.
                gst::element_imp_warning!(
                    self,
                    gst::StreamError::Decode,
                    ["discontinuity: {} bytes of a partial message dropped", st.adapter.available()]
                );
                st.adapter.clear();
            }
            if buffer.flags().contains(gst::BufferFlags::DISCONT) {
                st.synced = false;
            }
            st.adapter.push(buffer);
            while st.adapter.available() >= 8 {
                // The magic is checked as soon as it is there, so a stream that is not ours is
                // named as such rather than as an absurd length.
                let magic_end = blob::header::MAGIC + 4;
                let synced = st.synced;
                let len = {
                    let n = st.adapter.available().min(magic_end);
                    let head = st.adapter.map(n).map_err(|_| gst::FlowError::Error)?;
                    if !synced
                        && head.len() == magic_end
                        && head[blob::header::MAGIC..] != blob::MAGIC.to_le_bytes()
                    {
                        Err(format!("bytes {:02x?} are not a tensor blob's header", &head[..]))
                    } else {
                        blob::frame_len(&head).map_err(|e| e.to_string())
                    }
                };
                let len = match len {
                    Ok(Some(n)) if n as u64 <= max => n,
                    // Without a plausible length the next message's start is unknown.
                    Ok(Some(n)) => {
                        fatal = Some(format!("a message of {n} bytes exceeds max-size ({max})"));
                        break;
                    }
                    Ok(None) => break,
                    Err(e) => {
                        fatal = Some(format!("not a tensor message stream: {e}"));
                        break;
                    }
                };
                if st.adapter.available() < len {
                    break;
                }
                let msg = st.adapter.take_buffer(len).map_err(|_| gst::FlowError::Error)?;
                st.synced = true;
                let decoded = netmsg::decode(&msg, &self.fdmem);
                match decoded {
                    Ok(d) => {
                        if st.caps.as_ref() != Some(&d.caps) {
                            st.caps = Some(d.caps.clone());
                            out.push(Out::Caps(d.caps));
                        }
                        if !st.segment_sent || st.segment.is_some() {
                            let seg = st.segment.take().unwrap_or_else(|| {
                                gst::event::Segment::new(&gst::FormattedSegment::<gst::ClockTime>::new())
                            });
                            st.segment_sent = true;
                            out.push(Out::Event(seg));
                        }
                        out.push(Out::Buffer(d.buffer));
                    }
                    Err(e) => {
                        // Framed, so the stream goes on at the next message.
                        self.dropped.fetch_add(1, Ordering::Relaxed);
                        gst::element_imp_warning!(
                            self,
                            gst::StreamError::Decode,
                            ["message of {} bytes dropped: {}", len, e]
                        );
                    }
                }
            }
            if fatal.is_some() {
                st.adapter.clear();
            }
        }
        for o in out {
            match o {
                Out::Caps(c) => {
                    gst::debug!(CAT, imp = self, "caps {c}");
                    if !self.srcpad.push_event(gst::event::Caps::new(&c)) {
                        gst::element_imp_error!(
                            self,
                            gst::CoreError::Negotiation,
                            ["downstream refused the producer's caps {}", c]
                        );
                        return Err(gst::FlowError::NotNegotiated);
                    }
                }
                Out::Event(e) => {
                    self.srcpad.push_event(e);
                }
                Out::Buffer(b) => {
                    self.srcpad.push(b)?;
                    self.received.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        if let Some(why) = fatal {
            gst::element_imp_error!(self, gst::StreamError::Decode, ["{}", why]);
            return Err(gst::FlowError::Error);
        }
        Ok(gst::FlowSuccess::Ok)
    }
}

impl ObjectImpl for EdgeFirstTensorDepay {
    fn constructed(&self) {
        self.parent_constructed();
        let obj = self.obj();
        obj.add_pad(&self.sinkpad).expect("add sink pad");
        obj.add_pad(&self.srcpad).expect("add src pad");
    }

    fn properties() -> &'static [glib::ParamSpec] {
        static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            vec![
                glib::ParamSpecUInt64::builder("max-size")
                    .nick("Largest message")
                    .blurb("Bytes one message may claim; a larger claim is an error (the stream cannot be followed past it)")
                    .minimum(blob::HEADER_LEN as u64)
                    .default_value(netmsg::DEFAULT_MAX_SIZE)
                    .mutable_playing()
                    .build(),
                crate::transport::counter("messages-received", "Messages decoded and pushed"),
                crate::transport::counter(
                    "messages-dropped",
                    "Framed messages that did not decode (a forged or damaged blob), each with a warning",
                ),
            ]
        });
        PROPS.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        match pspec.name() {
            "max-size" => {
                self.max_size.store(value.get().unwrap_or(netmsg::DEFAULT_MAX_SIZE), Ordering::Relaxed)
            }
            other => gst::warning!(CAT, imp = self, "no writable property {other}"),
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        match pspec.name() {
            "max-size" => self.max_size.load(Ordering::Relaxed).to_value(),
            "messages-received" => self.received.load(Ordering::Relaxed).to_value(),
            "messages-dropped" => self.dropped.load(Ordering::Relaxed).to_value(),
            other => {
                gst::warning!(CAT, imp = self, "no property {other}");
                pspec.default_value().clone()
            }
        }
    }
}

impl GstObjectImpl for EdgeFirstTensorDepay {}

impl ElementImpl for EdgeFirstTensorDepay {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static META: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            crate::transport::metadata(
                "EdgeFirst tensor depayloader",
                "Codec/Depayloader/Network/Tensor",
                "Takes edgefirsttensorpay's messages out of a byte stream (tcpclientsrc) or one per buffer (rtpgstdepay) and pushes the tensors with their caps, timestamps and tensor meta; damaged messages are dropped with a warning",
            )
        });
        Some(&*META)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(|| {
            vec![
                crate::transport::always_pad(
                    "sink",
                    gst::PadDirection::Sink,
                    &gst::Caps::builder(MEDIA_TYPE).build(),
                ),
                crate::transport::always_pad("src", gst::PadDirection::Src, &gst::Caps::new_any()),
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
            *self.state.lock().unwrap() = State::default();
        }
        Ok(r)
    }
}
