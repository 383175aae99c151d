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
