//! `edgefirsttensor`: camera frames into model tensors. Imports upstream DMA-BUFs without copies
//! (cached by the kernel's (device, inode, plane offset)), passes frames through when no
//! conversion is asked, and tags every output buffer with a `GstEdgeFirstTensorMeta`.

pub(crate) mod frame;
mod imp;

use gst::glib;
use gst::prelude::*;

pub use crate::model::{ModelColorspace, ModelDtype, ModelFit, ModelInterpolation, ModelLayout};

glib::wrapper! {
    pub struct EdgeFirstTensor(ObjectSubclass<imp::EdgeFirstTensor>)
        @extends gst_base::BaseTransform, gst::Element, gst::Object;
}

pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    gst::Element::register(Some(plugin), "edgefirsttensor", gst::Rank::NONE, EdgeFirstTensor::static_type())
}
