//! `edgefirstzenohsink`: publishes each buffer as one `edgefirsttensorpay` message (an inline
//! tensor blob with caps, timestamps and metas) on a Zenoh key expression, and holds a liveliness
//! token on that key while it runs, so subscribers see a producer leave even when it crashes.

mod imp;

use gst::glib;
use gst::prelude::*;

glib::wrapper! {
    pub struct EdgeFirstZenohSink(ObjectSubclass<imp::EdgeFirstZenohSink>)
        @extends gst_base::BaseSink, gst::Element, gst::Object;
}

pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    gst::Element::register(
        Some(plugin),
        "edgefirstzenohsink",
        gst::Rank::NONE,
        EdgeFirstZenohSink::static_type(),
    )
}
