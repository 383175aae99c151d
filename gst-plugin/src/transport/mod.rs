//! Tensors to another process on the same machine without a copy: `edgefirsttensorsink` listens
//! on a unix socket and sends each buffer's fds (`SCM_RIGHTS`) as reference-mode tensor blobs with
//! its caps, timestamps and `GstEdgeFirstTensorMeta`; `edgefirsttensorsrc` connects and pushes
//! buffers over the very same DMA-BUFs / memfds. The framing is [`wire`], documented in
//! `docs/transport.md`.
//!
//! Between machines, `edgefirsttensorpay` / `edgefirsttensordepay` make each buffer one
//! self-contained message ([`netmsg`]: an inline blob with caps and metas appended) for
//! GStreamer's own network elements, and (feature `zenoh`) `edgefirstzenohsink` /
//! `edgefirstzenohsrc` publish the same messages on a Zenoh key expression.

pub mod edgefirsttensordepay;
pub mod edgefirsttensorpay;
pub mod edgefirsttensorsink;
pub mod edgefirsttensorsrc;
#[cfg(feature = "zenoh")]
pub mod edgefirstzenohsink;
#[cfg(feature = "zenoh")]
pub mod edgefirstzenohsrc;
pub mod netmsg;
pub mod wire;
#[cfg(feature = "zenoh")]
pub mod zenohcfg;

pub use edgefirsttensorsink::{EdgeFirstTensorSink, Leaky};
pub use edgefirsttensorsrc::EdgeFirstTensorSrc;

/// What a source that learns its caps from its producer offers: those caps once known, anything
/// before, narrowed by the query's filter.
pub(crate) fn offered_caps(known: Option<gst::Caps>, filter: Option<&gst::Caps>) -> gst::Caps {
    let caps = known.unwrap_or_else(gst::Caps::new_any);
    match filter {
        Some(f) => f.intersect_with_mode(&caps, gst::CapsIntersectMode::First),
        None => caps,
    }
}

/// A transport element's metadata, the project its author.
pub(crate) fn metadata(
    long_name: &str,
    classification: &str,
    description: &str,
) -> gst::subclass::ElementMetadata {
    gst::subclass::ElementMetadata::new(long_name, classification, description, "gstedgefirst developers")
}

/// An always-present pad of `caps`.
pub(crate) fn always_pad(name: &str, direction: gst::PadDirection, caps: &gst::Caps) -> gst::PadTemplate {
    gst::PadTemplate::new(name, direction, gst::PadPresence::Always, caps)
        .expect("a pad template of fixed name")
}

/// A read-only running count (frames, messages or bytes) as a `guint64` property.
pub(crate) fn counter(name: &str, blurb: &str) -> gst::glib::ParamSpec {
    use gst::glib::prelude::ParamSpecBuilderExt;
    gst::glib::ParamSpecUInt64::builder(name).blurb(blurb).read_only().build()
}
