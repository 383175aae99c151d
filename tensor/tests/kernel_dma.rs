//! DMA-BUF on a real kernel (run by tests/kernel/run.sh inside the qemu guest, where
//! /dev/dma_heap/system exists and no CMA heap does). Prints what it reads from the kernel so the
//! lane's log shows it.

use edgefirst_tensor::import::{fs_magic, DMA_BUF_MAGIC};
use edgefirst_tensor::{Contiguity, CpuAccess, DType, Error, Tensor, TensorDyn, TensorMemory, TensorOptions};
use std::os::fd::AsFd;

fn lane_has_no_cma() -> bool {
    !std::path::Path::new("/dev/dma_heap/linux,cma").exists()
}

#[test]
fn dma_allocation_is_a_real_dmabuf() {
    assert!(TensorMemory::DmaBuf.is_available(), "the lane must expose /dev/dma_heap/system");
    let t = Tensor::<u8>::new(&[480, 640, 3], Some(TensorMemory::DmaBuf), Some("dma")).unwrap();
    assert_eq!(t.memory(), TensorMemory::DmaBuf);
    let magic = fs_magic(t.fd().unwrap()).unwrap();
    println!("kernel lane: DMA heap tensor fd fstatfs f_type = {magic:#010x} (DMA_BUF_MAGIC = {DMA_BUF_MAGIC:#010x})");
    assert_eq!(magic, DMA_BUF_MAGIC);
    assert!(t.capacity_bytes() >= 480 * 640 * 3);
}

#[test]
fn cma_fallback_to_system_is_recorded() {
    assert!(lane_has_no_cma(), "this lane is expected to have no CMA heap");
    let t = Tensor::<u8>::new(&[4096], Some(TensorMemory::DmaBuf), None).unwrap();
    assert_eq!(t.heap_source(), "system");
    assert_eq!(t.contiguity(), Contiguity::Scattered);
    // Write-declared buffers try the uncached CMA heap first, then fall back the same way.
    let w =
        Tensor::<u8>::with_cpu_access(&[4096], CpuAccess::Write, Some(TensorMemory::DmaBuf), None).unwrap();
    assert_eq!(w.heap_source(), "system");
    println!("kernel lane: no linux,cma heap, allocation served by `{}`", t.heap_source());
}

#[test]
fn contiguous_request_names_the_cma_heap() {
    assert!(lane_has_no_cma());
    let opts = TensorOptions { memory: Some(TensorMemory::DmaBuf), contiguous: true, ..Default::default() };
    let e = TensorDyn::with_options(&[4096], DType::U8, &opts).unwrap_err();
    assert!(matches!(e, Error::ContiguousUnavailable { .. }), "{e}");
    assert!(e.to_string().contains("/dev/dma_heap/linux,cma"), "{e}");
    println!("kernel lane: contiguous request refused: {e}");
}

#[test]
fn sync_bracketed_map_round_trip() {
    let t = Tensor::<u32>::new(&[1024], Some(TensorMemory::DmaBuf), None).unwrap();
    {
        let mut w = t.map_write().unwrap();
        for (i, v) in w.iter_mut().enumerate() {
            *v = 0xdead_0000 | i as u32;
        }
    }
    let r = t.map_read().unwrap();
    assert!(r.iter().enumerate().all(|(i, v)| *v == 0xdead_0000 | i as u32));
    drop(r);
    // Read through a second, independent import of the exported fd.
    let fd = t.clone_fd().unwrap();
    let other = Tensor::<u32>::from_fd(fd.as_fd(), &[1024], None).unwrap();
    assert_eq!(other.map_read().unwrap()[1023], 0xdead_0000 | 1023);
}

#[test]
fn from_fd_of_a_heap_fd_is_dmabuf() {
    let heap = dma_heap::Heap::new(dma_heap::HeapKind::System).unwrap();
    let fd = heap.allocate(8192).unwrap();
    let t = TensorDyn::from_fd(fd.as_fd(), &[8192], DType::U8, None).unwrap();
    assert_eq!(t.memory(), TensorMemory::DmaBuf);
    assert_eq!(t.contiguity(), Contiguity::Unknown);
    assert_eq!(t.capacity_bytes(), 8192, "size read from the kernel");
    let e = TensorDyn::from_fd(fd.as_fd(), &[8193], DType::U8, None).unwrap_err();
    assert!(matches!(e, Error::BufferTooSmall { needed: 8193, available: 8192, .. }), "{e}");
    println!("kernel lane: heap fd imported as {} ({} bytes)", t.memory(), t.capacity_bytes());
}

#[test]
fn auto_chain_lands_on_dmabuf() {
    let t = Tensor::<f32>::new(&[16, 16], None, None).unwrap();
    assert_eq!(t.memory(), TensorMemory::DmaBuf);
}

#[test]
fn undeclared_direction_is_refused_before_mapping() {
    let t = Tensor::<u8>::with_cpu_access(&[64], CpuAccess::None, Some(TensorMemory::DmaBuf), None).unwrap();
    assert!(matches!(t.map_read(), Err(Error::CpuAccessDenied { declared: CpuAccess::None, .. })));
    let r = Tensor::<u8>::with_cpu_access(&[64], CpuAccess::Read, Some(TensorMemory::DmaBuf), None).unwrap();
    assert!(r.map_read().is_ok());
    assert!(matches!(r.map_write(), Err(Error::CpuAccessDenied { .. })));
}

/// Every visible row of every plane (padding excluded), chroma buffer included.
fn image_rows(t: &TensorDyn) -> Vec<Vec<u8>> {
    let f = t.format().unwrap();
    let (w, h) = (t.width().unwrap(), t.height().unwrap());
    let mut out = Vec::new();
    let mut i = 0;
    for part in std::iter::once(t).chain(t.chroma()) {
        let m = part.map_with::<u8>(CpuAccess::Read).unwrap();
        for p in part.plane_table() {
            let s = f.plane_sampling(i, 1);
            for r in 0..s.rows(h) {
                let at = p.offset + r * p.stride as usize;
                out.push(m[at..at + s.row_bytes(w)].to_vec());
            }
            i += 1;
        }
    }
    out
}

fn scribble(t: &TensorDyn, seed: u8) {
    for part in std::iter::once(t).chain(t.chroma()) {
        let mut m = part.map_with::<u8>(CpuAccess::ReadWrite).unwrap();
        for (i, b) in m.as_mut_slice().unwrap().iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(13).wrapping_add(seed);
        }
    }
}

fn dev_ino(fd: std::os::fd::BorrowedFd<'_>) -> (u64, u64) {
    let id = edgefirst_tensor::import::file_identity(fd).unwrap();
    (id.dev, id.ino)
}

#[test]
fn blob_over_dma_heap_buffers_in_both_modes() {
    use edgefirst_tensor::blob::{self, TransportMode};
    use edgefirst_tensor::{PixelFormat, PlaneDescriptor};

    // One DMA-heap tensor: reference mode names the same kernel buffer through a dup.
    let t = Tensor::<u8>::new(&[48, 96], Some(TensorMemory::DmaBuf), None).unwrap().into_dyn();
    scribble(&t, 1);
    let u = blob::import(&blob::export(&t, TransportMode::Reference).unwrap()).unwrap();
    assert_eq!(u.memory(), TensorMemory::DmaBuf);
    assert_eq!(dev_ino(u.fd().unwrap()), dev_ino(t.fd().unwrap()));
    let src = t.map_with::<u8>(CpuAccess::Read).unwrap().to_vec();
    assert_eq!(u.map_with::<u8>(CpuAccess::Read).unwrap().to_vec(), src);
    let i = blob::import(&blob::export(&t, TransportMode::Inline).unwrap()).unwrap();
    assert_eq!(i.memory(), TensorMemory::Mem);
    assert_eq!(i.map_with::<u8>(CpuAccess::Read).unwrap().to_vec(), src);
    println!(
        "kernel lane: blob of a DMA-heap tensor: (dev, ino) {:?} survives reference mode",
        dev_ino(t.fd().unwrap())
    );

    // NV12 from two heap fds: two plane records, each its own fd.
    let (w, h, rs) = (96, 48, 128);
    let heap = dma_heap::Heap::new(dma_heap::HeapKind::System).unwrap();
    let luma_fd = heap.allocate(rs * h).unwrap();
    let chroma_fd = heap.allocate(rs * h / 2).unwrap();
    let nv = TensorDyn::import_image(
        vec![
            PlaneDescriptor::new(luma_fd.as_fd()).unwrap().with_stride(rs),
            PlaneDescriptor::new(chroma_fd.as_fd()).unwrap().with_stride(rs),
        ],
        w,
        h,
        PixelFormat::Nv12,
        CpuAccess::ReadWrite,
    )
    .unwrap();
    assert!(nv.is_multiplane());
    scribble(&nv, 7);
    let b = blob::export(&nv, TransportMode::Reference).unwrap();
    let r = blob::import(&b).unwrap();
    assert!(r.is_multiplane());
    assert_eq!(r.memory(), TensorMemory::DmaBuf);
    assert_eq!(dev_ino(r.fd().unwrap()), dev_ino(luma_fd.as_fd()), "luma: the same heap buffer");
    assert_eq!(
        dev_ino(r.chroma().unwrap().fd().unwrap()),
        dev_ino(chroma_fd.as_fd()),
        "chroma: the same heap buffer"
    );
    assert_ne!(dev_ino(luma_fd.as_fd()), dev_ino(chroma_fd.as_fd()));
    assert_eq!(image_rows(&r), image_rows(&nv));
    // The producer's fds may close: the import holds dups.
    drop((nv, luma_fd, chroma_fd));
    let rows = image_rows(&r);
    let i = blob::import(&blob::export(&r, TransportMode::Inline).unwrap()).unwrap();
    assert!(!i.is_multiplane());
    assert_eq!(image_rows(&i), rows);
    println!("kernel lane: two-fd NV12 from the system heap round-trips by reference (2 fds) and inline");
}
