//! `edgefirsttensorpay`: each buffer (a tensor, or any buffer) as one self-contained network
//! message — an inline tensor blob with its caps, timestamps and metas appended
//! (`transport::netmsg`) — for `tcpserversink`, `rtpgstpay ! udpsink`, a file, or anything that
//! moves bytes. `edgefirsttensordepay` undoes it.

mod imp;

use gst::glib;
use gst::prelude::*;

/// The caps of a stream of messages.
pub const MEDIA_TYPE: &str = "application/x-edgefirst-tensor";

glib::wrapper! {
    pub struct EdgeFirstTensorPay(ObjectSubclass<imp::EdgeFirstTensorPay>)
        @extends gst::Element, gst::Object;
}

pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    gst::Element::register(
        Some(plugin),
        "edgefirsttensorpay",
        gst::Rank::NONE,
        EdgeFirstTensorPay::static_type(),
    )
}
