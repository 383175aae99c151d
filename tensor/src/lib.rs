//! edgefirst-tensor: zero-copy tensors over the process heap, shared memory (memfd) and DMA-BUF
//! (Linux DMA heaps), with declared CPU access, buffer identity and import of foreign fds.
//! No GStreamer in here: the plugin crate builds on this one.

mod access;
mod backing;
pub mod blob;
pub mod convert;
pub mod desc;
mod dtype;
mod error;
pub mod format;
mod identity;
mod image;
pub mod import;
mod memory;
pub mod preprocess;
mod tensor;
mod view;

pub use access::CpuAccess;
pub use backing::dma::{heap_order, CMA_HEAP, CMA_UNCACHED_HEAP, HEAP_DIR, SYSTEM_HEAP};
pub use backing::Contiguity;
pub use blob::TransportMode;
pub use desc::{Registry, TensorDesc};
pub use dtype::{f16, DType, TensorElement};
pub use error::{Error, Result};
pub use format::{
    byte_strides, ChromaSubsampling, PixelFormat, PixelLayout, PlaneGeometry, PlaneSampling, StrideSpec,
};
pub use identity::BufferIdentity;
pub use image::{ImageDesc, Plane, PlaneDescriptor};
pub use memory::{force_mem, TensorMemory};
pub use preprocess::{Colorimetry, ContentRegion, Quantization, Region};
pub use tensor::{
    allocate_fd, OwnedMap, RawBuffer, Tensor, TensorDyn, TensorMap, TensorMapMut, TensorOptions,
};
pub use view::window_planes;
