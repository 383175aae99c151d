//! `edgefirsttensordepay`: cuts `edgefirsttensorpay`'s messages out of a byte stream
//! (`tcpclientsrc`: the blob's `total_len` prefix is the framing) or takes them one per buffer
//! (`rtpgstdepay`, a file), checks each as hostile input, and pushes the tensor with its caps,
//! timestamps and tensor meta, in fd memory.

mod imp;

use gst::glib;
use gst::prelude::*;

glib::wrapper! {
    pub struct EdgeFirstTensorDepay(ObjectSubclass<imp::EdgeFirstTensorDepay>)
        @extends gst::Element, gst::Object;
}

pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    gst::Element::register(
        Some(plugin),
        "edgefirsttensordepay",
        gst::Rank::NONE,
        EdgeFirstTensorDepay::static_type(),
    )
}
