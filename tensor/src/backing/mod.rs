//! One file per memory backing, all behind the `Backing` trait. What a backing knows is its bytes
//! (size, fd, how to map them with the right cache maintenance); shape, dtype, views and image
//! geometry live above it in `TensorDyn`, so they behave the same on every backing.

pub(crate) mod dma;
pub(crate) mod mem;
pub(crate) mod shm;

use crate::{CpuAccess, Result, TensorMemory};
use std::fmt::Debug;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::ptr::NonNull;

/// Where the bytes came from, as far as can be known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Contiguity {
    /// Served by a CMA heap: physically contiguous.
    Contiguous,
    /// Served by a heap that scatters pages (the system DMA heap, memfd, the process heap).
    Scattered,
    /// Imported from a foreign fd: the serving heap cannot be known.
    Unknown,
}

pub(crate) trait Backing: Send + Sync + Debug {
    fn memory(&self) -> TensorMemory;
    /// Real size of the buffer in bytes (for an import, what the kernel reports, not what the
    /// caller claimed).
    fn size(&self) -> usize;
    fn fd(&self) -> Option<BorrowedFd<'_>>;
    /// Which heap served the buffer ("linux,cma", "system", "memfd", "heap", "import").
    fn source(&self) -> &str;
    fn contiguity(&self) -> Contiguity;
    /// Map `len` bytes at `offset`. The declaration has been checked by the caller; a backing
    /// only brackets the map with the cache maintenance of `access`.
    fn map(&self, offset: usize, len: usize, access: CpuAccess) -> Result<RawMap>;
}

/// A live CPU mapping. Dropping it ends the DMA-BUF sync bracket (if any) and unmaps.
pub(crate) struct RawMap {
    pub(crate) ptr: NonNull<u8>,
    pub(crate) len: usize,
    mmap: Option<(NonNull<u8>, usize)>,
    sync_end: Option<(RawFd, u64)>,
}

// The mapping is plain memory owned by this value; nothing in it is tied to a thread.
unsafe impl Send for RawMap {}
unsafe impl Sync for RawMap {}

impl RawMap {
    pub(crate) fn borrowed(ptr: NonNull<u8>, len: usize) -> RawMap {
        RawMap { ptr, len, mmap: None, sync_end: None }
    }

    /// mmap `len` bytes at `offset` of `fd`. mmap wants a page-aligned file offset, so the map
    /// starts at the page below `offset` and the pointer is advanced to it.
    pub(crate) fn mmap(fd: BorrowedFd<'_>, offset: usize, len: usize, access: CpuAccess) -> Result<RawMap> {
        use rustix::mm::{MapFlags, ProtFlags};
        if len == 0 {
            return Ok(RawMap::borrowed(NonNull::dangling(), 0));
        }
        let page = rustix::param::page_size();
        let base = offset - offset % page;
        let map_len = len + (offset - base);
        let mut prot = ProtFlags::empty();
        if access.can_read() {
            prot |= ProtFlags::READ;
        }
        if access.can_write() {
            // Write-only mappings are not a thing on most MMUs; asking for WRITE alone still
            // gives a readable page, which is harmless since the declaration is enforced above.
            prot |= ProtFlags::WRITE;
        }
        let ptr = unsafe {
            rustix::mm::mmap(std::ptr::null_mut(), map_len, prot, MapFlags::SHARED, fd, base as u64)
        }
        .map_err(|e| crate::Error::io(format!("mmap of {map_len} bytes at offset {base}"), e))?;
        let base_ptr = NonNull::new(ptr.cast::<u8>()).expect("mmap never returns null on success");
        let ptr = unsafe { NonNull::new_unchecked(base_ptr.as_ptr().add(offset - base)) };
        Ok(RawMap { ptr, len, mmap: Some((base_ptr, map_len)), sync_end: None })
    }

    pub(crate) fn with_sync_end(mut self, fd: BorrowedFd<'_>, flags: u64) -> RawMap {
        self.sync_end = Some((fd.as_raw_fd(), flags));
        self
    }
}

impl Drop for RawMap {
    fn drop(&mut self) {
        if let Some((fd, flags)) = self.sync_end.take() {
            // The fd belongs to the backing, which outlives every map (maps borrow the tensor).
            let fd = unsafe { BorrowedFd::borrow_raw(fd) };
            if let Err(e) = dma::sync(fd, flags) {
                // Drop cannot fail; the kernel only refuses SYNC_END on a bad fd, which the
                // borrow rules make impossible, so this is a loud bug report, not a path.
                eprintln!("edgefirst-tensor: DMA_BUF_IOCTL_SYNC end failed: {e}");
            }
        }
        if let Some((base, len)) = self.mmap.take() {
            unsafe {
                let _ = rustix::mm::munmap(base.as_ptr().cast(), len);
            }
        }
    }
}

/// The whole object mapped once, on first use, and kept until the backing goes. Mapping a frame
/// per access costs page-table population and teardown every time (measured ~0.4 ms a 1080p NV12
/// frame on memfd, one fault per page on a CMA heap); a kept mapping costs nothing after its
/// first pass. Maps borrow windows of it; DMA-BUF sync brackets stay per map.
#[derive(Debug, Default)]
pub(crate) struct Persistent {
    whole: std::sync::Mutex<Option<Whole>>,
}

#[derive(Debug)]
struct Whole {
    base: NonNull<u8>,
    len: usize,
    writable: bool,
}

// A shared mapping of an object the backing owns; the pointer is not tied to a thread.
unsafe impl Send for Whole {}

impl Persistent {
    /// `len` bytes at `offset` through the kept mapping, made now if it is the first use. `None`
    /// where it cannot serve: a write through an fd that only maps read-only, or a window past
    /// the object's size at mapping time (the caller then maps that access on its own).
    pub(crate) fn window(
        &self,
        fd: BorrowedFd<'_>,
        size: usize,
        offset: usize,
        len: usize,
        access: CpuAccess,
    ) -> Result<Option<RawMap>> {
        if len == 0 {
            return Ok(Some(RawMap::borrowed(NonNull::dangling(), 0)));
        }
        let mut whole = self.whole.lock().unwrap_or_else(|p| p.into_inner());
        if whole.is_none() {
            *whole = Whole::map(fd, size)?;
        }
        let Some(w) = whole.as_ref() else { return Ok(None) };
        if (access.can_write() && !w.writable) || offset.checked_add(len).is_none_or(|end| end > w.len) {
            return Ok(None);
        }
        let ptr = unsafe { NonNull::new_unchecked(w.base.as_ptr().add(offset)) };
        Ok(Some(RawMap::borrowed(ptr, len)))
    }
}

impl Whole {
    /// Read-write where the fd allows it, else read-only (a producer's O_RDONLY export, a memfd
    /// sealed against writes); None for an empty object.
    fn map(fd: BorrowedFd<'_>, size: usize) -> Result<Option<Whole>> {
        use rustix::mm::{MapFlags, ProtFlags};
        if size == 0 {
            return Ok(None);
        }
        let rw = ProtFlags::READ | ProtFlags::WRITE;
        let attempt =
            |prot| unsafe { rustix::mm::mmap(std::ptr::null_mut(), size, prot, MapFlags::SHARED, fd, 0) };
        let (ptr, writable) = match attempt(rw) {
            Ok(p) => (p, true),
            Err(rustix::io::Errno::ACCESS | rustix::io::Errno::PERM) => (
                attempt(ProtFlags::READ)
                    .map_err(|e| crate::Error::io(format!("mmap of {size} bytes (read-only)"), e))?,
                false,
            ),
            Err(e) => return Err(crate::Error::io(format!("mmap of {size} bytes"), e)),
        };
        let base = NonNull::new(ptr.cast::<u8>()).expect("mmap never returns null on success");
        Ok(Some(Whole { base, len: size, writable }))
    }
}

impl Drop for Persistent {
    fn drop(&mut self) {
        let whole = self.whole.get_mut().unwrap_or_else(|p| p.into_inner());
        if let Some(w) = whole.take() {
            unsafe {
                let _ = rustix::mm::munmap(w.base.as_ptr().cast(), w.len);
            }
        }
    }
}

/// Bytes of the file behind `fd`: fstat's size, or the end offset where fstat reports none (some
/// exporters leave i_size at zero but answer SEEK_END).
pub(crate) fn fd_size(fd: BorrowedFd<'_>) -> Result<usize> {
    let st = rustix::fs::fstat(fd).map_err(|e| crate::Error::io("fstat", e))?;
    if st.st_size > 0 {
        return Ok(st.st_size as usize);
    }
    match rustix::fs::seek(fd, rustix::fs::SeekFrom::End(0)) {
        Ok(end) => {
            let _ = rustix::fs::seek(fd, rustix::fs::SeekFrom::Start(0));
            Ok(end as usize)
        }
        Err(_) => Ok(0),
    }
}

pub(crate) fn dup(fd: BorrowedFd<'_>) -> Result<std::os::fd::OwnedFd> {
    rustix::io::fcntl_dupfd_cloexec(fd, 0).map_err(|e| crate::Error::io("dup of the fd", e))
}
