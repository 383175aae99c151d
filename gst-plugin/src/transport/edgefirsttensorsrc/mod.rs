//! `edgefirsttensorsrc`: connects to an `edgefirsttensorsink`'s unix socket and pushes buffers
//! that wrap the producer's own fds (same DMA-BUF / memfd), with the caps, timestamps and
//! `GstEdgeFirstTensorMeta` they were sent with; a buffer is released back to the producer when
//! its last memory is freed here.

mod imp;

use gst::glib;
use gst::prelude::*;

glib::wrapper! {
    pub struct EdgeFirstTensorSrc(ObjectSubclass<imp::EdgeFirstTensorSrc>)
        @extends gst_base::PushSrc, gst_base::BaseSrc, gst::Element, gst::Object;
}

pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    gst::Element::register(
        Some(plugin),
        "edgefirsttensorsrc",
        gst::Rank::NONE,
        EdgeFirstTensorSrc::static_type(),
    )
}
