//! `GstEdgeFirstTensorMeta` (API type `GstEdgeFirstTensorMetaAPI`): what the tensor in a buffer
//! is and where the camera picture sits inside it, per buffer, so a downstream decoder maps boxes
//! back with the geometry of that very frame rather than a property that may have changed since.
//!
//! The payload is the plain C struct [`TensorInfo`] (layout in `docs/tensor-meta.md`); C code
//! finds it with `gst_buffer_get_meta(buf, g_type_from_name("GstEdgeFirstTensorMetaAPI"))` and
//! reads the struct that follows the `GstMeta` header.

use edgefirst_tensor::DType;
use gst::glib;
use gst::glib::translate::{from_glib, IntoGlib};
use gst::prelude::*;
use std::sync::LazyLock;

pub const MAX_DIMS: usize = 8;
pub const MAX_QUANT_CHANNELS: usize = 4;

/// The meta's payload. `#[repr(C)]` and plain data: this is the C ABI.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TensorInfo {
    /// `dtype_code(DType)`: uint8 0, int8 1, uint16 2, int16 3, uint32 4, int32 5, uint64 6,
    /// int64 7, float16 8, float32 9, float64 10.
    pub dtype: u32,
    pub rank: u32,
    /// Outermost first (`[1, H, W, C]` for HWC).
    pub shape: [u64; MAX_DIMS],
    /// Signed byte strides, same order as `shape`.
    pub strides: [i64; MAX_DIMS],
    /// Byte offset of the first element inside the buffer's memory.
    pub offset: u64,
    /// 0: not quantized; 1: per tensor (index 0); n > 1: per channel along the last axis.
    pub quant_channels: u32,
    pub quant_zero_points: [i32; MAX_QUANT_CHANNELS],
    pub quant_scales: [f32; MAX_QUANT_CHANNELS],
    /// Where the picture sits in the tensor's image, in pixels.
    pub content_x: u32,
    pub content_y: u32,
    pub content_width: u32,
    pub content_height: u32,
    /// The same box normalized to the tensor's image: x0, y0, x1, y1.
    pub content_norm: [f32; 4],
    /// Tensor pixels per source pixel, horizontally and vertically.
    pub scale_x: f64,
    pub scale_y: f64,
    /// The region of the camera frame that was used (the whole frame unless cropped).
    pub source_x: u32,
    pub source_y: u32,
    pub source_width: u32,
    pub source_height: u32,
    /// Stable identity of the physical input buffer: the same DMA-BUF gives the same id every
    /// frame (0 when the input had no fd), so downstream caches can key on it.
    pub buffer_id: u64,
}

impl Default for TensorInfo {
    fn default() -> Self {
        TensorInfo {
            dtype: 0,
            rank: 0,
            shape: [0; MAX_DIMS],
            strides: [0; MAX_DIMS],
            offset: 0,
            quant_channels: 0,
            quant_zero_points: [0; MAX_QUANT_CHANNELS],
            quant_scales: [0.0; MAX_QUANT_CHANNELS],
            content_x: 0,
            content_y: 0,
            content_width: 0,
            content_height: 0,
            content_norm: [0.0; 4],
            scale_x: 1.0,
            scale_y: 1.0,
            source_x: 0,
            source_y: 0,
            source_width: 0,
            source_height: 0,
            buffer_id: 0,
        }
    }
}

pub fn dtype_code(d: DType) -> u32 {
    DType::ALL.iter().position(|&x| x == d).expect("every dtype is listed") as u32
}

impl TensorInfo {
    pub fn dtype(&self) -> Option<DType> {
        DType::ALL.get(self.dtype as usize).copied()
    }

    pub fn shape(&self) -> &[u64] {
        &self.shape[..(self.rank as usize).min(MAX_DIMS)]
    }

    pub fn strides(&self) -> &[i64] {
        &self.strides[..(self.rank as usize).min(MAX_DIMS)]
    }

    /// Fill shape and strides; more than `MAX_DIMS` dimensions is refused.
    pub fn set_layout(&mut self, shape: &[usize], strides: &[isize]) -> Result<(), String> {
        if shape.len() > MAX_DIMS || strides.len() != shape.len() {
            return Err(format!("a rank-{} tensor does not fit the meta (at most {MAX_DIMS})", shape.len()));
        }
        self.rank = shape.len() as u32;
        for (i, (&d, &s)) in shape.iter().zip(strides).enumerate() {
            self.shape[i] = d as u64;
            self.strides[i] = s as i64;
        }
        Ok(())
    }
}

#[repr(C)]
pub struct TensorMeta {
    parent: gst::ffi::GstMeta,
    info: TensorInfo,
}

// Plain data.
unsafe impl Send for TensorMeta {}
unsafe impl Sync for TensorMeta {}

unsafe impl MetaAPI for TensorMeta {
    type GstType = TensorMeta;
    fn meta_api() -> glib::Type {
        *API_TYPE
    }
}

impl TensorMeta {
    pub const API_NAME: &'static str = "GstEdgeFirstTensorMetaAPI";
    pub const IMPL_NAME: &'static str = "GstEdgeFirstTensorMeta";

    pub fn add<'a>(
        buffer: &'a mut gst::BufferRef,
        info: &TensorInfo,
    ) -> gst::MetaRefMut<'a, Self, gst::meta::Standalone> {
        unsafe {
            let meta = gst::ffi::gst_buffer_add_meta(buffer.as_mut_ptr(), meta_info(), std::ptr::null_mut())
                as *mut TensorMeta;
            (*meta).info = *info;
            Self::from_mut_ptr(buffer, meta)
        }
    }

    pub fn info(&self) -> &TensorInfo {
        &self.info
    }
}

static API_TYPE: LazyLock<glib::Type> = LazyLock::new(|| unsafe {
    let tags: [*const std::ffi::c_char; 1] = [std::ptr::null()];
    let name = std::ffi::CString::new(TensorMeta::API_NAME).unwrap();
    let t: glib::Type =
        from_glib(gst::ffi::gst_meta_api_type_register(name.as_ptr(), tags.as_ptr() as *mut _));
    assert_ne!(t, glib::Type::INVALID);
    t
});

unsafe extern "C" fn meta_init(
    meta: *mut gst::ffi::GstMeta,
    _params: glib::ffi::gpointer,
    _buffer: *mut gst::ffi::GstBuffer,
) -> glib::ffi::gboolean {
    unsafe { std::ptr::write(&mut (*(meta as *mut TensorMeta)).info, TensorInfo::default()) };
    true.into_glib()
}

unsafe extern "C" fn meta_free(_meta: *mut gst::ffi::GstMeta, _buffer: *mut gst::ffi::GstBuffer) {}

/// Copied with the buffer; any other transform (a scale, a crop) invalidates the geometry, so the
/// meta is dropped rather than carried wrong.
unsafe extern "C" fn meta_transform(
    dest: *mut gst::ffi::GstBuffer,
    meta: *mut gst::ffi::GstMeta,
    _buffer: *mut gst::ffi::GstBuffer,
    type_: glib::ffi::GQuark,
    _data: glib::ffi::gpointer,
) -> glib::ffi::gboolean {
    // GST_META_TRANSFORM_IS_COPY: the quark GStreamer registers as "gst-copy".
    let copy = glib::Quark::from_str("gst-copy");
    if unsafe { from_glib::<_, glib::Quark>(type_) } != copy {
        return false.into_glib();
    }
    unsafe {
        let info = (*(meta as *const TensorMeta)).info;
        let new = gst::ffi::gst_buffer_add_meta(dest, meta_info(), std::ptr::null_mut()) as *mut TensorMeta;
        if new.is_null() {
            return false.into_glib();
        }
        (*new).info = info;
    }
    true.into_glib()
}

struct MetaInfoPtr(*const gst::ffi::GstMetaInfo);
unsafe impl Send for MetaInfoPtr {}
unsafe impl Sync for MetaInfoPtr {}

static META_INFO_PTR: LazyLock<MetaInfoPtr> = LazyLock::new(|| unsafe {
    let name = std::ffi::CString::new(TensorMeta::IMPL_NAME).unwrap();
    MetaInfoPtr(gst::ffi::gst_meta_register(
        API_TYPE.into_glib(),
        name.as_ptr(),
        std::mem::size_of::<TensorMeta>(),
        Some(meta_init),
        Some(meta_free),
        Some(meta_transform),
    ) as *const _)
});

fn meta_info() -> *const gst::ffi::GstMetaInfo {
    META_INFO_PTR.0
}

/// Registers the meta with GStreamer (idempotent); done at plugin load so C code can look the API
/// type up by name.
pub fn register() {
    let _ = meta_info();
}
