//! `edgefirstzenohsrc`: subscribes to a Zenoh key expression and pushes the tensors that
//! `edgefirstzenohsink` (or any producer of tensor blobs) publishes there, with their caps,
//! timestamps and tensor meta. A slow pipeline loses the oldest messages, never stalls the
//! publisher.

mod imp;

use gst::glib;
use gst::prelude::*;

glib::wrapper! {
    pub struct EdgeFirstZenohSrc(ObjectSubclass<imp::EdgeFirstZenohSrc>)
        @extends gst_base::PushSrc, gst_base::BaseSrc, gst::Element, gst::Object;
}

pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    gst::Element::register(
        Some(plugin),
        "edgefirstzenohsrc",
        gst::Rank::NONE,
        EdgeFirstZenohSrc::static_type(),
    )
}
