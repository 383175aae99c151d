//! DMA-BUF from the kernel's DMA heaps, mapped with DMA_BUF_IOCTL_SYNC brackets so the CPU sees
//! what devices wrote and devices see what the CPU wrote.

use super::{Backing, Contiguity, Persistent, RawMap};
use crate::{CpuAccess, Error, Result, TensorMemory};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

pub const HEAP_DIR: &str = "/dev/dma_heap";
pub const CMA_UNCACHED_HEAP: &str = "linux,cma-uncached";
pub const CMA_HEAP: &str = "linux,cma";
pub const SYSTEM_HEAP: &str = "system";

const SYNC_READ: u64 = 1;
const SYNC_WRITE: u64 = 2;
const SYNC_START: u64 = 0;
const SYNC_END: u64 = 4;
/// `_IOW('b', 0, struct dma_buf_sync)`; the struct is one u64 of flags.
const DMA_BUF_IOCTL_SYNC: libc::c_ulong = 0x4008_6200;

/// The heaps tried, in order, for a declaration. Buffers the CPU never reads (`None`, `Write`)
/// prefer the uncached CMA heap: a device touching them needs no cache maintenance, and CPU
/// writes to them are write-combined. A contiguous request never falls back to the system heap,
/// whose pages are scattered.
pub fn heap_order(access: CpuAccess, contiguous: bool) -> &'static [&'static str] {
    let uncached = !access.can_read();
    match (uncached, contiguous) {
        (true, false) => &[CMA_UNCACHED_HEAP, CMA_HEAP, SYSTEM_HEAP],
        (false, false) => &[CMA_HEAP, SYSTEM_HEAP],
        (true, true) => &[CMA_UNCACHED_HEAP, CMA_HEAP],
        (false, true) => &[CMA_HEAP],
    }
}

/// The sync flags that bracket a CPU map in `access`'s direction.
pub fn sync_direction(access: CpuAccess) -> u64 {
    (if access.can_read() { SYNC_READ } else { 0 }) | (if access.can_write() { SYNC_WRITE } else { 0 })
}

pub(crate) fn sync(fd: BorrowedFd<'_>, flags: u64) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let mut arg: u64 = flags;
    loop {
        let rc = unsafe { libc::ioctl(fd.as_raw_fd(), DMA_BUF_IOCTL_SYNC as _, &mut arg as *mut u64) };
        if rc == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        // The kernel returns EAGAIN/EINTR while a fence is pending; retrying is the documented use.
        if !matches!(e.raw_os_error(), Some(libc::EINTR) | Some(libc::EAGAIN)) {
            return Err(e);
        }
    }
}

fn heap_path(name: &str) -> std::path::PathBuf {
    std::path::Path::new(HEAP_DIR).join(name)
}

/// Whether any heap can be opened by this process now.
pub(crate) fn is_available() -> bool {
    [CMA_UNCACHED_HEAP, CMA_HEAP, SYSTEM_HEAP].iter().any(|h| std::fs::File::open(heap_path(h)).is_ok())
}

#[derive(Debug)]
pub(crate) struct DmaBacking {
    fd: OwnedFd,
    size: usize,
    /// The heap that served it; None for an import.
    heap: Option<&'static str>,
    kept: Persistent,
}

impl DmaBacking {
    pub(crate) fn new(size: usize, access: CpuAccess, contiguous: bool) -> Result<DmaBacking> {
        let order = heap_order(access, contiguous);
        let mut failures = Vec::new();
        for &heap in order {
            match allocate_from(heap, size) {
                Ok(fd) => return Ok(DmaBacking { fd, size, heap: Some(heap), kept: Persistent::default() }),
                Err(e) => failures.push((heap, e)),
            }
        }
        if contiguous {
            let (_, source) = failures.pop().expect("contiguous order names the CMA heap last");
            return Err(Error::ContiguousUnavailable {
                heap: heap_path(CMA_HEAP).display().to_string(),
                len: size,
                source,
            });
        }
        let tried: Vec<String> =
            failures.iter().map(|(h, e)| format!("{}: {e}", heap_path(h).display())).collect();
        Err(Error::Unavailable {
            memory: TensorMemory::DmaBuf,
            reason: format!("no DMA heap could serve {size} bytes ({})", tried.join("; ")),
        })
    }

    /// The fd and the heap that served it, for a caller that takes ownership of the buffer.
    pub(crate) fn into_parts(self) -> (OwnedFd, &'static str) {
        (self.fd, self.heap.unwrap_or("import"))
    }

    pub(crate) fn import(fd: OwnedFd, size: usize) -> DmaBacking {
        DmaBacking { fd, size, heap: None, kept: Persistent::default() }
    }
}

#[cfg(target_os = "linux")]
fn allocate_from(heap: &str, size: usize) -> std::io::Result<OwnedFd> {
    let h = dma_heap::Heap::new(dma_heap::HeapKind::Custom(heap_path(heap)))?;
    // Heaps refuse zero-length buffers; a zero-element tensor still gets a real, tiny buffer.
    h.allocate(size.max(1))
}

#[cfg(not(target_os = "linux"))]
fn allocate_from(_heap: &str, _size: usize) -> std::io::Result<OwnedFd> {
    Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "DMA heaps exist only on Linux"))
}

impl Backing for DmaBacking {
    fn memory(&self) -> TensorMemory {
        TensorMemory::DmaBuf
    }
    fn size(&self) -> usize {
        self.size
    }
    fn fd(&self) -> Option<BorrowedFd<'_>> {
        Some(self.fd.as_fd())
    }
    fn source(&self) -> &str {
        self.heap.unwrap_or("import")
    }
    fn contiguity(&self) -> Contiguity {
        match self.heap {
            Some(CMA_HEAP) | Some(CMA_UNCACHED_HEAP) => Contiguity::Contiguous,
            Some(_) => Contiguity::Scattered,
            None => Contiguity::Unknown,
        }
    }
    fn map(&self, offset: usize, len: usize, access: CpuAccess) -> Result<RawMap> {
        let map = match self.kept.window(self.fd.as_fd(), self.size, offset, len, access)? {
            Some(m) => m,
            None => RawMap::mmap(self.fd.as_fd(), offset, len, access)?,
        };
        let dir = sync_direction(access);
        sync(self.fd.as_fd(), SYNC_START | dir).map_err(|e| Error::io("DMA_BUF_IOCTL_SYNC start", e))?;
        Ok(map.with_sync_end(self.fd.as_fd(), SYNC_END | dir))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heap_order_follows_declaration() {
        assert_eq!(heap_order(CpuAccess::ReadWrite, false), &[CMA_HEAP, SYSTEM_HEAP]);
        assert_eq!(heap_order(CpuAccess::Read, false), &[CMA_HEAP, SYSTEM_HEAP]);
        assert_eq!(heap_order(CpuAccess::None, false), &[CMA_UNCACHED_HEAP, CMA_HEAP, SYSTEM_HEAP]);
        assert_eq!(heap_order(CpuAccess::Write, false), &[CMA_UNCACHED_HEAP, CMA_HEAP, SYSTEM_HEAP]);
        assert!(!heap_order(CpuAccess::ReadWrite, true).contains(&SYSTEM_HEAP));
        assert!(!heap_order(CpuAccess::None, true).contains(&SYSTEM_HEAP));
    }

    #[test]
    fn sync_flags() {
        assert_eq!(sync_direction(CpuAccess::Read), 1);
        assert_eq!(sync_direction(CpuAccess::Write), 2);
        assert_eq!(sync_direction(CpuAccess::ReadWrite), 3);
        assert_eq!(SYNC_END | sync_direction(CpuAccess::ReadWrite), 7);
    }
}
