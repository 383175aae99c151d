//! edgefirst-tensor: zero-copy tensors over the process heap, shared memory (memfd) and DMA-BUF
//! (Linux DMA heaps), with declared CPU access, buffer identity and import of foreign fds.
//! No GStreamer in here: the plugin crate builds on this one.

mod access;
mod backing;
mod dtype;
mod error;
pub mod format;
mod identity;
pub mod import;
mod memory;
pub mod preprocess;
mod tensor;

pub use access::CpuAccess;
pub use backing::dma::{heap_order, CMA_HEAP, CMA_UNCACHED_HEAP, HEAP_DIR, SYSTEM_HEAP};
pub use backing::Contiguity;
pub use dtype::{f16, DType, TensorElement};
pub use error::{Error, Result};
pub use format::{byte_strides, ChromaSubsampling, PixelFormat, PixelLayout, PlaneGeometry};
pub use identity::BufferIdentity;
pub use memory::{force_mem, TensorMemory};
pub use tensor::{Tensor, TensorDyn, TensorMap, TensorMapMut, TensorOptions};
