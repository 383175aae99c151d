//! `blob::import_with_fds`: a reference blob from another process, its fds received alongside
//! (as a transport does with SCM_RIGHTS). The other process is simulated by rewriting the blob's
//! `pid` and handing over dups of the fds, which is exactly what a receiver ends up holding.

use edgefirst_tensor::blob::{self, header, TransportMode};
use edgefirst_tensor::{DType, ImageDesc, PixelFormat, TensorDyn, TensorMemory};
use std::os::fd::{BorrowedFd, OwnedFd};

fn inode(fd: BorrowedFd<'_>) -> (u64, u64) {
    let id = edgefirst_tensor::import::file_identity(fd).unwrap();
    (id.dev, id.ino)
}

fn bytes_of(t: &TensorDyn) -> Vec<u8> {
    t.map_with::<u8>(edgefirst_tensor::CpuAccess::Read).unwrap().to_vec()
}

/// A blob as a producer in another process would have written it.
fn foreign(mut b: Vec<u8>) -> Vec<u8> {
    let other = std::process::id().wrapping_add(1);
    b[header::PID..header::PID + 4].copy_from_slice(&other.to_le_bytes());
    b
}

fn shm_tensor() -> TensorDyn {
    let t = TensorDyn::new(&[4, 100], DType::U8, Some(TensorMemory::Shm), None).unwrap();
    {
        let mut m = t.map_with::<u8>(edgefirst_tensor::CpuAccess::ReadWrite).unwrap();
        for (i, b) in m.as_mut_slice().unwrap().iter_mut().enumerate() {
            *b = (i * 7) as u8;
        }
    }
    t
}

#[test]
fn received_fds_stand_for_the_handles_and_the_pid_is_not_ours() {
    let t = shm_tensor();
    let b = foreign(blob::export(&t, TransportMode::Reference).unwrap());
    // Plain import keeps refusing: the handles are another process's numbers.
    let err = blob::import(&b).unwrap_err().to_string();
    assert!(err.contains("pid"), "{err}");
    let fds = vec![t.clone_fd().unwrap()];
    let u = blob::import_with_fds(&b, &fds).unwrap();
    assert_eq!(inode(u.fd().unwrap()), inode(t.fd().unwrap()), "the same object, not a copy");
    assert_eq!(bytes_of(&u), bytes_of(&t));
    assert_eq!(u.shape(), t.shape());
    // Import dups: the caller's fds are still its own and still open after the tensor is gone.
    drop(u);
    assert!(inode(fds[0].as_fd_borrowed()).1 > 0);
}

trait Borrow {
    fn as_fd_borrowed(&self) -> BorrowedFd<'_>;
}
impl Borrow for OwnedFd {
    fn as_fd_borrowed(&self) -> BorrowedFd<'_> {
        std::os::fd::AsFd::as_fd(self)
    }
}

#[test]
fn the_fd_count_must_match_the_distinct_handles() {
    let t = shm_tensor();
    let b = foreign(blob::export(&t, TransportMode::Reference).unwrap());
    let none: Vec<OwnedFd> = Vec::new();
    assert!(blob::import_with_fds(&b, &none).unwrap_err().to_string().contains("handle"));
    let two = vec![t.clone_fd().unwrap(), t.clone_fd().unwrap()];
    assert!(blob::import_with_fds(&b, &two).unwrap_err().to_string().contains("handle"));
    // An inline blob takes no fds, and refuses any.
    let inline = blob::export(&t, TransportMode::Inline).unwrap();
    assert!(blob::import_with_fds(&inline, &none).is_ok());
    assert!(blob::import_with_fds(&inline, &two[..1]).is_err());
}

#[test]
fn an_fd_of_the_wrong_kind_is_refused() {
    let t = shm_tensor();
    let b = foreign(blob::export(&t, TransportMode::Reference).unwrap());
    let (r, _w) = std::io::pipe().unwrap();
    let fds = vec![OwnedFd::from(r)];
    assert!(blob::import_with_fds(&b, &fds).is_err(), "a pipe is not the shm the blob claims");
    // A memfd too small for the planes the blob describes.
    let small = TensorDyn::new(&[8], DType::U8, Some(TensorMemory::Shm), None).unwrap();
    assert!(blob::import_with_fds(&b, &[small.clone_fd().unwrap()]).is_err());
}

#[test]
fn two_buffers_map_in_order_of_first_appearance() {
    let luma =
        TensorDyn::image_desc(&ImageDesc::new(64, 48, PixelFormat::Gray8).with_memory(TensorMemory::Shm))
            .unwrap();
    let chroma = TensorDyn::image_desc(
        &ImageDesc::new(64, 24, PixelFormat::Gray8).with_memory(TensorMemory::Shm).with_row_stride(256),
    )
    .unwrap();
    let t = TensorDyn::from_planes(&luma, &chroma, PixelFormat::Nv12).unwrap();
    let b = foreign(blob::export(&t, TransportMode::Reference).unwrap());
    let fds = vec![luma.clone_fd().unwrap(), chroma.clone_fd().unwrap()];
    let u = blob::import_with_fds(&b, &fds).unwrap();
    assert_eq!(inode(u.fd().unwrap()), inode(luma.fd().unwrap()));
    assert_eq!(inode(u.chroma().unwrap().fd().unwrap()), inode(chroma.fd().unwrap()));
    // Swapped, the luma buffer (3072 bytes) is too small for the chroma (64 x 24 at pitch 256 = 6144 bytes).
    let swapped = vec![chroma.clone_fd().unwrap(), luma.clone_fd().unwrap()];
    assert!(blob::import_with_fds(&b, &swapped).is_err());
}
