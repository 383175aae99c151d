//! `edgefirsttensor`: camera frames into model tensors. Imports upstream DMA-BUFs without copies
//! (cached by the kernel's (device, inode, plane offset)), passes frames through when no
//! conversion is asked, and tags every output buffer with a `GstEdgeFirstTensorMeta`.

mod imp;

use gst::glib;
use gst::prelude::*;

glib::wrapper! {
    pub struct EdgeFirstTensor(ObjectSubclass<imp::EdgeFirstTensor>)
        @extends gst_base::BaseTransform, gst::Element, gst::Object;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstEdgeFirstModelColorspace")]
pub enum ModelColorspace {
    #[default]
    #[enum_value(name = "RGB", nick = "rgb")]
    Rgb = 0,
    #[enum_value(name = "BGR", nick = "bgr")]
    Bgr = 1,
    #[enum_value(name = "Grayscale", nick = "gray")]
    Gray = 2,
    #[enum_value(name = "RGBA", nick = "rgba")]
    Rgba = 3,
}

impl ModelColorspace {
    pub fn convert(self) -> edgefirst_tensor::convert::Colorspace {
        use edgefirst_tensor::convert::Colorspace as C;
        match self {
            ModelColorspace::Rgb => C::Rgb,
            ModelColorspace::Bgr => C::Bgr,
            ModelColorspace::Gray => C::Gray,
            ModelColorspace::Rgba => C::Rgba,
        }
    }

    pub fn channels(self) -> usize {
        match self {
            ModelColorspace::Gray => 1,
            ModelColorspace::Rgba => 4,
            _ => 3,
        }
    }

    /// The packed pixel format that already is this colourspace, byte for byte.
    pub fn pixel_format(self) -> edgefirst_tensor::PixelFormat {
        use edgefirst_tensor::PixelFormat as P;
        match self {
            ModelColorspace::Rgb => P::Rgb,
            ModelColorspace::Bgr => P::Bgr,
            ModelColorspace::Gray => P::Gray8,
            ModelColorspace::Rgba => P::Rgba,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstEdgeFirstModelLayout")]
pub enum ModelLayout {
    #[default]
    #[enum_value(name = "Height, width, channels (interleaved)", nick = "hwc")]
    Hwc = 0,
    #[enum_value(name = "Channels, height, width (planar)", nick = "chw")]
    Chw = 1,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstEdgeFirstModelDtype")]
pub enum ModelDtype {
    #[default]
    #[enum_value(name = "uint8", nick = "uint8")]
    Uint8 = 0,
    #[enum_value(name = "int8", nick = "int8")]
    Int8 = 1,
    #[enum_value(name = "uint16", nick = "uint16")]
    Uint16 = 2,
    #[enum_value(name = "int16", nick = "int16")]
    Int16 = 3,
    #[enum_value(name = "uint32", nick = "uint32")]
    Uint32 = 4,
    #[enum_value(name = "int32", nick = "int32")]
    Int32 = 5,
    #[enum_value(name = "uint64", nick = "uint64")]
    Uint64 = 6,
    #[enum_value(name = "int64", nick = "int64")]
    Int64 = 7,
    #[enum_value(name = "float16", nick = "float16")]
    Float16 = 8,
    #[enum_value(name = "float32", nick = "float32")]
    Float32 = 9,
    #[enum_value(name = "float64", nick = "float64")]
    Float64 = 10,
}

impl ModelDtype {
    pub fn dtype(self) -> edgefirst_tensor::DType {
        edgefirst_tensor::DType::ALL[self as usize]
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstEdgeFirstModelFit")]
pub enum ModelFit {
    #[default]
    #[enum_value(name = "Keep the aspect ratio, pad with fill-color", nick = "letterbox")]
    Letterbox = 0,
    #[enum_value(name = "Scale each axis to the model size", nick = "stretch")]
    Stretch = 1,
    #[enum_value(name = "Keep the aspect ratio, crop the centre", nick = "center-crop")]
    CenterCrop = 2,
}

impl ModelFit {
    pub fn fit_mode(self) -> edgefirst_tensor::preprocess::FitMode {
        use edgefirst_tensor::preprocess::FitMode;
        match self {
            ModelFit::Letterbox => FitMode::Letterbox,
            ModelFit::Stretch => FitMode::Stretch,
            ModelFit::CenterCrop => FitMode::CenterCrop,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstEdgeFirstInterpolation")]
pub enum ModelInterpolation {
    #[default]
    #[enum_value(name = "Bilinear", nick = "bilinear")]
    Bilinear = 0,
    #[enum_value(name = "Nearest neighbour", nick = "nearest")]
    Nearest = 1,
}

pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    gst::Element::register(Some(plugin), "edgefirsttensor", gst::Rank::NONE, EdgeFirstTensor::static_type())
}
