//! `edgefirsttensorbatch`: several cameras into one batch tensor. A GstAggregator with request
//! sink pads (`sink_%u`, any input format and size each) and one `other/tensors` src pad whose
//! outermost dimension is the batch; every source's frame is converted straight into its slot of
//! one pool buffer with the model settings edgefirsttensor uses (`crate::model`), and a
//! `GstEdgeFirstBatchMeta` says what each slot holds.

mod imp;

use gst::glib;
use gst::prelude::*;

glib::wrapper! {
    pub struct EdgeFirstTensorBatch(ObjectSubclass<imp::EdgeFirstTensorBatch>)
        @extends gst_base::Aggregator, gst::Element, gst::Object;
}

/// What a slot holds when its source has no frame when the batch leaves (a live source late
/// past the aggregator's latency, or a source at EOS).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstEdgeFirstMissingSlot")]
pub enum MissingSlot {
    #[default]
    #[enum_value(name = "The fill colour, converted as the model input", nick = "fill")]
    Fill = 0,
    #[enum_value(name = "The source's previous frame (the fill colour before its first)", nick = "previous")]
    Previous = 1,
}

pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    gst::Element::register(
        Some(plugin),
        "edgefirsttensorbatch",
        gst::Rank::NONE,
        EdgeFirstTensorBatch::static_type(),
    )
}
