//! Process heap: no syscalls to allocate or map. 64-byte aligned so any element type and any
//! SIMD load of a row start is aligned, as it is on the page-aligned fd backings.

use super::{Backing, Contiguity, RawMap};
use crate::{CpuAccess, Result, TensorMemory};
use std::alloc::Layout;
use std::os::fd::BorrowedFd;
use std::ptr::NonNull;

#[derive(Debug)]
pub(crate) struct MemBacking {
    ptr: NonNull<u8>,
    layout: Layout,
    size: usize,
}

// The allocation is owned exclusively by this value and shared only through `Arc<Storage>`;
// concurrent maps alias it exactly like a DMA-BUF shared with a device.
unsafe impl Send for MemBacking {}
unsafe impl Sync for MemBacking {}

impl MemBacking {
    pub(crate) fn new(size: usize) -> Result<MemBacking> {
        let layout = Layout::from_size_align(size.max(1), 64).map_err(|_| {
            crate::Error::InvalidArgument(format!("{size} bytes is too large for a heap tensor"))
        })?;
        let ptr = NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) }).ok_or_else(|| {
            crate::Error::Unavailable {
                memory: TensorMemory::Mem,
                reason: format!("the process heap refused {size} bytes"),
            }
        })?;
        Ok(MemBacking { ptr, layout, size })
    }
}

impl Drop for MemBacking {
    fn drop(&mut self) {
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

impl Backing for MemBacking {
    fn memory(&self) -> TensorMemory {
        TensorMemory::Mem
    }
    fn size(&self) -> usize {
        self.size
    }
    fn fd(&self) -> Option<BorrowedFd<'_>> {
        None
    }
    fn source(&self) -> &str {
        "heap"
    }
    fn contiguity(&self) -> Contiguity {
        Contiguity::Scattered
    }
    fn map(&self, offset: usize, len: usize, _access: CpuAccess) -> Result<RawMap> {
        debug_assert!(offset + len <= self.size);
        let ptr = unsafe { NonNull::new_unchecked(self.ptr.as_ptr().add(offset)) };
        Ok(RawMap::borrowed(ptr, len))
    }
}
