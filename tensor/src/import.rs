//! Recognising what a foreign fd is. Decided by filesystem magic, never by st_dev: the device
//! number of the kernel's dma-buf mount is an accident of boot order, the magic is ABI.

use crate::{Error, Result, TensorMemory};
use std::os::fd::BorrowedFd;

pub const DMA_BUF_MAGIC: u32 = 0x444d_4142;
pub const TMPFS_MAGIC: u32 = 0x0102_1994;

/// `f_type` of the filesystem behind `fd`, truncated to u32. Its C type is signed on some targets;
/// widening a magic with bit 31 set would sign-extend it into a number no header lists, while
/// truncation is lossless for every magic.
pub fn fs_magic(fd: BorrowedFd<'_>) -> Result<u32> {
    let st = rustix::fs::fstatfs(fd).map_err(|e| Error::io("fstatfs", e))?;
    Ok(normalize_magic(st.f_type as i64))
}

/// The truncation itself, separate so it is testable with values no local filesystem has.
pub const fn normalize_magic(raw: i64) -> u32 {
    raw as u32
}

/// Positive identification only: anything that is not a DMA-BUF or tmpfs (memfd, /dev/shm) is an
/// error carrying its magic. A pipe imported as "shared memory" would be a zero-length tensor,
/// and a DMA-BUF imported as shared memory would silently stop being DMA.
pub fn classify(magic: u32) -> Result<TensorMemory> {
    match magic {
        DMA_BUF_MAGIC => Ok(TensorMemory::DmaBuf),
        TMPFS_MAGIC => Ok(TensorMemory::Shm),
        other => Err(Error::UnknownBufferType(other)),
    }
}

/// What the kernel says a file is: its (device, inode) identity and its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileIdentity {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
}

pub fn file_identity(fd: BorrowedFd<'_>) -> Result<FileIdentity> {
    let st = rustix::fs::fstat(fd).map_err(|e| Error::io("fstat", e))?;
    // One fstat per plane per frame: only an exporter that reports no size costs a second call.
    let size = if st.st_size > 0 { st.st_size as u64 } else { crate::backing::fd_size(fd)? as u64 };
    Ok(FileIdentity { dev: st.st_dev, ino: st.st_ino, size })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification() {
        assert_eq!(classify(DMA_BUF_MAGIC).unwrap(), TensorMemory::DmaBuf);
        assert_eq!(classify(TMPFS_MAGIC).unwrap(), TensorMemory::Shm);
        assert!(matches!(classify(0x5049_5045), Err(Error::UnknownBufferType(0x5049_5045))));
    }

    #[test]
    fn negative_magic_is_not_sign_extended() {
        // hugetlbfs 0x958458f6 as a signed 32-bit f_type, then widened.
        let signed = 0x9584_58f6u32 as i32 as i64;
        assert!(signed < 0);
        assert_eq!(normalize_magic(signed), 0x9584_58f6);
        let msg = classify(normalize_magic(signed)).unwrap_err().to_string();
        assert!(msg.contains("0x958458f6"), "{msg}");
    }
}
