//! Storage codes and the runtime availability probes behind them.
//!
//! Every code exists on every build: a descriptor recorded on one machine must stay nameable on
//! another, so "can this build allocate it" is a runtime question (`is_available`), never a cfg.

use crate::{Error, Result};
use std::fmt;

#[non_exhaustive]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TensorMemory {
    Mem = 0,
    Shm = 1,
    DmaBuf = 2,
    IoSurface = 3,
    Pbo = 4,
    Cuda = 5,
    D3d11Texture = 6,
}

impl TensorMemory {
    pub const ALL: &'static [TensorMemory] = &[
        TensorMemory::Mem,
        TensorMemory::Shm,
        TensorMemory::DmaBuf,
        TensorMemory::IoSurface,
        TensorMemory::Pbo,
        TensorMemory::Cuda,
        TensorMemory::D3d11Texture,
    ];

    pub const fn code(self) -> u32 {
        self as u32
    }

    pub fn from_code(code: u32) -> Result<TensorMemory> {
        TensorMemory::ALL.iter().copied().find(|m| m.code() == code).ok_or(Error::UnknownMemoryCode(code))
    }

    pub const fn name(self) -> &'static str {
        match self {
            TensorMemory::Mem => "mem",
            TensorMemory::Shm => "shm",
            TensorMemory::DmaBuf => "dmabuf",
            TensorMemory::IoSurface => "iosurface",
            TensorMemory::Pbo => "pbo",
            TensorMemory::Cuda => "cuda",
            TensorMemory::D3d11Texture => "d3d11texture",
        }
    }

    /// Whether this process can allocate this backing now. Probed every call, not cached: a heap
    /// node can exist while this process lacks permission on it, and that can change.
    pub fn is_available(self) -> bool {
        match self {
            TensorMemory::Mem => true,
            TensorMemory::Shm => crate::backing::shm::is_available(),
            TensorMemory::DmaBuf => crate::backing::dma::is_available(),
            TensorMemory::IoSurface | TensorMemory::Pbo | TensorMemory::Cuda | TensorMemory::D3d11Texture => {
                false
            }
        }
    }
}

impl fmt::Display for TensorMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `EDGEFIRST_TENSOR_FORCE_MEM=1` sends every automatic choice straight to the heap, for hosts
/// (and tests) where DMA or shared memory must not be touched.
pub fn force_mem() -> bool {
    std::env::var_os("EDGEFIRST_TENSOR_FORCE_MEM").is_some_and(|v| v == "1")
}

/// The automatic selection chain for plain tensors (`Tensor::new` with no memory named).
pub(crate) fn plain_chain() -> &'static [TensorMemory] {
    if force_mem() {
        &[TensorMemory::Mem]
    } else {
        &[TensorMemory::DmaBuf, TensorMemory::Shm, TensorMemory::Mem]
    }
}

/// Images skip shared memory: it is not GPU-importable, and the heap always succeeds.
pub(crate) fn image_chain() -> &'static [TensorMemory] {
    if force_mem() {
        &[TensorMemory::Mem]
    } else {
        &[TensorMemory::DmaBuf, TensorMemory::Mem]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_fixed() {
        let expect = [
            (TensorMemory::Mem, 0),
            (TensorMemory::Shm, 1),
            (TensorMemory::DmaBuf, 2),
            (TensorMemory::IoSurface, 3),
            (TensorMemory::Pbo, 4),
            (TensorMemory::Cuda, 5),
            (TensorMemory::D3d11Texture, 6),
        ];
        assert_eq!(TensorMemory::ALL.len(), expect.len());
        for (m, c) in expect {
            assert_eq!(m.code(), c);
            assert_eq!(TensorMemory::from_code(c).unwrap(), m);
        }
        assert!(matches!(TensorMemory::from_code(7), Err(Error::UnknownMemoryCode(7))));
    }

    #[test]
    fn codes_without_backing_are_unavailable() {
        for m in [TensorMemory::IoSurface, TensorMemory::Pbo, TensorMemory::Cuda, TensorMemory::D3d11Texture]
        {
            assert!(!m.is_available(), "{m}");
        }
        assert!(TensorMemory::Mem.is_available());
    }
}
