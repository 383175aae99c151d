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

/// A GstMeta whose payload is one plain `#[repr(C)]` value (`$info`): the struct, its API type
/// registered by name (so C finds it without linking the plugin), init/free, and a transform that
/// carries it on copies only — any other transform (a scale, a crop) would make it describe bytes
/// the buffer no longer has, so it is dropped rather than carried wrong.
macro_rules! plain_meta {
    ($meta:ident, $info:ty, $api:expr, $impl_name:expr, $register:ident) => {
        #[repr(C)]
        pub struct $meta {
            parent: gst::ffi::GstMeta,
            info: $info,
        }

        // Plain data.
        unsafe impl Send for $meta {}
        unsafe impl Sync for $meta {}

        unsafe impl MetaAPI for $meta {
            type GstType = $meta;
            fn meta_api() -> glib::Type {
                static API_TYPE: LazyLock<glib::Type> = LazyLock::new(|| unsafe {
                    let tags: [*const std::ffi::c_char; 1] = [std::ptr::null()];
                    let name = std::ffi::CString::new($api).unwrap();
                    let t: glib::Type = from_glib(gst::ffi::gst_meta_api_type_register(
                        name.as_ptr(),
                        tags.as_ptr() as *mut _,
                    ));
                    assert_ne!(t, glib::Type::INVALID);
                    t
                });
                *API_TYPE
            }
        }

        impl $meta {
            pub const API_NAME: &'static str = $api;
            pub const IMPL_NAME: &'static str = $impl_name;

            pub fn add<'a>(
                buffer: &'a mut gst::BufferRef,
                info: &$info,
            ) -> gst::MetaRefMut<'a, Self, gst::meta::Standalone> {
                unsafe {
                    let meta = gst::ffi::gst_buffer_add_meta(
                        buffer.as_mut_ptr(),
                        Self::meta_info(),
                        std::ptr::null_mut(),
                    ) as *mut $meta;
                    (*meta).info = *info;
                    Self::from_mut_ptr(buffer, meta)
                }
            }

            pub fn info(&self) -> &$info {
                &self.info
            }

            fn meta_info() -> *const gst::ffi::GstMetaInfo {
                struct MetaInfoPtr(*const gst::ffi::GstMetaInfo);
                unsafe impl Send for MetaInfoPtr {}
                unsafe impl Sync for MetaInfoPtr {}

                unsafe extern "C" fn init(
                    meta: *mut gst::ffi::GstMeta,
                    _params: glib::ffi::gpointer,
                    _buffer: *mut gst::ffi::GstBuffer,
                ) -> glib::ffi::gboolean {
                    unsafe { std::ptr::write(&mut (*(meta as *mut $meta)).info, <$info>::default()) };
                    true.into_glib()
                }

                unsafe extern "C" fn free(_meta: *mut gst::ffi::GstMeta, _buffer: *mut gst::ffi::GstBuffer) {}

                unsafe extern "C" fn transform(
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
                        let info = (*(meta as *const $meta)).info;
                        let new =
                            gst::ffi::gst_buffer_add_meta(dest, $meta::meta_info(), std::ptr::null_mut())
                                as *mut $meta;
                        if new.is_null() {
                            return false.into_glib();
                        }
                        (*new).info = info;
                    }
                    true.into_glib()
                }

                static INFO: LazyLock<MetaInfoPtr> = LazyLock::new(|| unsafe {
                    let name = std::ffi::CString::new($impl_name).unwrap();
                    MetaInfoPtr(gst::ffi::gst_meta_register(
                        <$meta as MetaAPI>::meta_api().into_glib(),
                        name.as_ptr(),
                        std::mem::size_of::<$meta>(),
                        Some(init),
                        Some(free),
                        Some(transform),
                    ) as *const _)
                });
                INFO.0
            }
        }

        /// Registers the meta with GStreamer (idempotent); done at plugin load so C code can look
        /// the API type up by name.
        pub fn $register() {
            let _ = $meta::meta_info();
        }
    };
}
pub(crate) use plain_meta;

plain_meta!(TensorMeta, TensorInfo, "GstEdgeFirstTensorMetaAPI", "GstEdgeFirstTensorMeta", register);
