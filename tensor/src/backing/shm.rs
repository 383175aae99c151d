//! Shared memory: a memfd (or, where memfd is missing, an unlinked POSIX shm object), mapped per
//! map. Exists to hand a buffer to another process when no DMA heap can be had.

use super::{Backing, Contiguity, Persistent, RawMap};
use crate::{CpuAccess, Error, Result, TensorMemory};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

#[derive(Debug)]
pub(crate) struct ShmBacking {
    fd: OwnedFd,
    size: usize,
    imported: bool,
    kept: Persistent,
}

fn create_fd() -> std::io::Result<OwnedFd> {
    use rustix::fs::MemfdFlags;
    match rustix::fs::memfd_create("edgefirst-tensor", MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING) {
        Ok(fd) => Ok(fd),
        Err(rustix::io::Errno::NOSYS) => shm_open_unlinked(),
        Err(e) => Err(e.into()),
    }
}

fn shm_open_unlinked() -> std::io::Result<OwnedFd> {
    use std::os::fd::FromRawFd;
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = std::ffi::CString::new(format!("/edgefirst-tensor-{}-{n}", std::process::id()))
        .expect("no interior NUL");
    let fd = unsafe {
        libc::shm_open(name.as_ptr(), libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC, 0o600)
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // Unlinked at once: the fd is the only handle, so nothing is left in /dev/shm on a crash.
    unsafe { libc::shm_unlink(name.as_ptr()) };
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A memfd we hand out can never be shrunk under a mapping: any holder (a consumer process, a
/// downstream element) that truncated it would SIGBUS every other reader. Growing stays allowed
/// and harmless. The shm_open fallback cannot be sealed (EINVAL), and is left as it is.
fn seal_size(fd: &OwnedFd) {
    let _ = rustix::fs::fcntl_add_seals(fd, rustix::fs::SealFlags::SHRINK);
}

pub(crate) fn is_available() -> bool {
    create_fd().is_ok()
}

impl ShmBacking {
    pub(crate) fn new(size: usize) -> Result<ShmBacking> {
        let unavailable = |e: std::io::Error| Error::Unavailable {
            memory: TensorMemory::Shm,
            reason: format!("memfd_create/shm_open failed: {e}"),
        };
        let fd = create_fd().map_err(unavailable)?;
        rustix::fs::ftruncate(&fd, size as u64)
            .map_err(|e| Error::io(format!("ftruncate of shared memory to {size} bytes"), e))?;
        seal_size(&fd);
        Ok(ShmBacking { fd, size, imported: false, kept: Persistent::default() })
    }

    pub(crate) fn into_fd(self) -> OwnedFd {
        self.fd
    }

    /// Takes ownership of an already dup'd fd whose size was read from the kernel.
    pub(crate) fn import(fd: OwnedFd, size: usize) -> ShmBacking {
        ShmBacking { fd, size, imported: true, kept: Persistent::default() }
    }
}

impl Backing for ShmBacking {
    fn memory(&self) -> TensorMemory {
        TensorMemory::Shm
    }
    fn size(&self) -> usize {
        self.size
    }
    fn fd(&self) -> Option<BorrowedFd<'_>> {
        Some(self.fd.as_fd())
    }
    fn source(&self) -> &str {
        if self.imported {
            "import"
        } else {
            "memfd"
        }
    }
    fn contiguity(&self) -> Contiguity {
        if self.imported {
            Contiguity::Unknown
        } else {
            Contiguity::Scattered
        }
    }
    fn map(&self, offset: usize, len: usize, access: CpuAccess) -> Result<RawMap> {
        if self.imported {
            // A foreign memfd may have been truncated since its import; a read past its end
            // would be SIGBUS, so the kernel's size is asked again (one fstat).
            let now = super::fd_size(self.fd.as_fd())?;
            let needed = offset.saturating_add(len);
            if needed > now {
                return Err(Error::BufferTooSmall {
                    what: "the shared-memory object (truncated since its import)".into(),
                    needed,
                    available: now,
                });
            }
        }
        match self.kept.window(self.fd.as_fd(), self.size, offset, len, access)? {
            Some(m) => Ok(m),
            None => RawMap::mmap(self.fd.as_fd(), offset, len, access),
        }
    }
}
