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
