//! `edgefirsttensorsink`: serves the buffers it renders to every process connected to its unix
//! socket, by reference (the fds themselves), keeping each buffer out of its pool until every
//! consumer it was sent to has released it.

mod imp;

use gst::glib;
use gst::prelude::*;

/// What a consumer with `max-pending` unreleased buffers costs the producer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstEdgeFirstTensorSinkLeaky")]
pub enum Leaky {
    /// The producer waits for the consumer (lossless, but a stuck consumer stalls the camera).
    #[enum_value(name = "Wait for the slow consumer", nick = "none")]
    None = 0,
    /// The slow consumer misses frames; the producer and the other consumers go on.
    #[default]
    #[enum_value(name = "Drop frames for the slow consumer", nick = "downstream")]
    Downstream = 1,
}

glib::wrapper! {
    pub struct EdgeFirstTensorSink(ObjectSubclass<imp::EdgeFirstTensorSink>)
        @extends gst_base::BaseSink, gst::Element, gst::Object;
}

pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    gst::Element::register(
        Some(plugin),
        "edgefirsttensorsink",
        gst::Rank::NONE,
        EdgeFirstTensorSink::static_type(),
    )
}
