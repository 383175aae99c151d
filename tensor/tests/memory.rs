//! Host tests of the memory core: every backing this host has, the CPU-access matrix, identity,
//! and fd import classification. DMA-BUF itself is exercised in kernel_dma.rs on a real kernel.

use edgefirst_tensor::import::{fs_magic, DMA_BUF_MAGIC, TMPFS_MAGIC};
use edgefirst_tensor::{Contiguity, CpuAccess, DType, Error, Tensor, TensorDyn, TensorMemory, TensorOptions};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

fn memfd(len: usize) -> OwnedFd {
    let fd = rustix_memfd();
    assert_eq!(unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) }, 0);
    fd
}

fn rustix_memfd() -> OwnedFd {
    let fd = unsafe { libc::memfd_create(c"test".as_ptr(), libc::MFD_CLOEXEC) };
    assert!(fd >= 0);
    unsafe { OwnedFd::from_raw_fd(fd) }
}

fn libc_magic(fd: &OwnedFd) -> u32 {
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::fstatfs(fd.as_raw_fd(), &mut st) }, 0);
    st.f_type as u32
}

fn round_trip(memory: TensorMemory) {
    let t = Tensor::<u32>::new(&[3, 5, 7], Some(memory), Some("rt")).unwrap();
    assert_eq!(t.memory(), memory);
    assert_eq!(t.shape(), &[3, 5, 7]);
    assert_eq!(t.len(), 105);
    assert_eq!(t.size(), 105 * 4);
    assert_eq!(t.name(), "rt");
    {
        let mut m = t.map().unwrap();
        assert_eq!(m.len(), 105);
        for (i, v) in m.iter_mut().enumerate() {
            *v = (i as u32).wrapping_mul(2_654_435_761);
        }
    }
    let m = t.map_read().unwrap();
    for (i, v) in m.iter().enumerate() {
        assert_eq!(*v, (i as u32).wrapping_mul(2_654_435_761), "{memory} element {i}");
    }
}

#[test]
fn heap_round_trip() {
    round_trip(TensorMemory::Mem);
    let t = Tensor::<u8>::new(&[4], Some(TensorMemory::Mem), None).unwrap();
    assert_eq!(t.heap_source(), "heap");
    assert!(t.fd().is_none());
    assert!(matches!(t.clone_fd(), Err(Error::InvalidOperation(_))));
}

#[test]
fn shm_round_trip_and_fd_is_tmpfs() {
    assert!(TensorMemory::Shm.is_available());
    round_trip(TensorMemory::Shm);
    let t = Tensor::<u8>::new(&[4096], Some(TensorMemory::Shm), None).unwrap();
    assert_eq!(t.heap_source(), "memfd");
    assert_eq!(t.contiguity(), Contiguity::Scattered);
    assert_eq!(fs_magic(t.fd().unwrap()).unwrap(), TMPFS_MAGIC);
}

#[test]
fn our_memfds_cannot_be_shrunk_by_a_holder() {
    let t = Tensor::<u8>::new(&[4096], Some(TensorMemory::Shm), None).unwrap();
    let fd = t.fd().unwrap();
    assert_eq!(
        rustix::fs::ftruncate(fd, 100).unwrap_err(),
        rustix::io::Errno::PERM,
        "F_SEAL_SHRINK: a truncation would SIGBUS every mapping"
    );
    rustix::fs::ftruncate(fd, 8192).expect("growing stays allowed");
    assert_eq!(t.map().unwrap().len(), 4096);
}

#[test]
fn unsupported_codes_are_errors_not_panics() {
    for m in [TensorMemory::IoSurface, TensorMemory::Pbo, TensorMemory::Cuda, TensorMemory::D3d11Texture] {
        let e = TensorDyn::new(&[4], DType::U8, Some(m), None).unwrap_err();
        assert!(matches!(e, Error::NotSupported(x) if x == m), "{e}");
        assert!(e.to_string().contains("not supported by this build"), "{e}");
    }
}

#[test]
fn dma_and_auto_chain_follow_availability() {
    let auto = Tensor::<u8>::new(&[64], None, None).unwrap();
    if TensorMemory::DmaBuf.is_available() {
        assert_eq!(auto.memory(), TensorMemory::DmaBuf);
    } else {
        let e = Tensor::<u8>::new(&[64], Some(TensorMemory::DmaBuf), None).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, Error::Unavailable { memory: TensorMemory::DmaBuf, .. }), "{msg}");
        assert!(msg.contains("/dev/dma_heap/system"), "names the heap it tried: {msg}");
        assert_eq!(auto.memory(), TensorMemory::Shm, "DMA → SHM → Mem lands on SHM here");
    }
}

#[test]
fn cpu_access_matrix_on_every_available_backing() {
    let mut memories = vec![TensorMemory::Mem, TensorMemory::Shm];
    if TensorMemory::DmaBuf.is_available() {
        memories.push(TensorMemory::DmaBuf); // in the kernel lane
    }
    for memory in memories {
        for declared in CpuAccess::ALL {
            let t = Tensor::<u8>::with_cpu_access(&[256], declared, Some(memory), None).unwrap();
            assert_eq!(t.cpu_access(), declared);
            for requested in [CpuAccess::Read, CpuAccess::Write, CpuAccess::ReadWrite, CpuAccess::None] {
                let r = t.map_with(requested);
                if declared.covers(requested) {
                    let m = r.unwrap_or_else(|e| panic!("{memory} {declared:?}/{requested:?}: {e}"));
                    assert_eq!(m.writable(), requested.can_write());
                } else {
                    match r {
                        Err(Error::CpuAccessDenied { declared: d, requested: q }) => {
                            assert_eq!((d, q), (declared, requested))
                        }
                        Err(e) => panic!("wrong error {e}"),
                        Ok(_) => panic!("{memory}: {declared:?} allowed {requested:?}"),
                    }
                }
            }
            assert_eq!(t.map().is_ok(), declared == CpuAccess::ReadWrite);
            assert_eq!(t.map_read().is_ok(), declared.can_read());
            assert_eq!(t.map_write().is_ok(), declared.can_write());
        }
    }
}

#[test]
fn read_map_refuses_mutable_access() {
    let t = Tensor::<u8>::new(&[8], Some(TensorMemory::Mem), None).unwrap();
    let mut m = t.map_read().unwrap();
    assert!(matches!(m.as_mut_slice(), Err(Error::InvalidOperation(_))));
    let mut w = t.map_with(CpuAccess::ReadWrite).unwrap();
    w.as_mut_slice().unwrap()[0] = 9;
    drop(w);
    assert_eq!(t.map_read().unwrap()[0], 9);
}

#[test]
fn dtype_is_checked_on_typed_maps() {
    let t = TensorDyn::new(&[4], DType::F32, Some(TensorMemory::Mem), None).unwrap();
    assert!(matches!(t.map_with::<u16>(CpuAccess::Read), Err(Error::DTypeMismatch { .. })));
    assert_eq!(t.map_with::<u8>(CpuAccess::Read).unwrap().len(), 16, "byte view");
    assert_eq!(t.map_with::<f32>(CpuAccess::Read).unwrap().len(), 4);
    assert!(t.clone().into_typed::<i32>().is_err());
    assert!(t.into_typed::<f32>().is_ok());
}

#[test]
fn identity_is_shared_by_clones_and_dies_with_the_last() {
    let a = Tensor::<u8>::new(&[16], Some(TensorMemory::Mem), None).unwrap();
    let b = Tensor::<u8>::new(&[16], Some(TensorMemory::Shm), None).unwrap();
    assert!(b.buffer_identity().id() > a.buffer_identity().id(), "monotonic");
    let weak = a.buffer_identity().weak();
    let a2 = a.clone();
    assert_eq!(a2.buffer_identity().id(), a.buffer_identity().id());
    drop(a);
    assert!(weak.upgrade().is_some(), "a clone still holds the buffer");
    drop(a2);
    assert!(weak.upgrade().is_none(), "liveness dies with the last clone");
}

#[test]
fn from_fd_memfd_is_shared_memory_and_sees_the_same_bytes() {
    let fd = memfd(4096);
    let t = Tensor::<u8>::from_fd(fd.as_fd(), &[64, 64], Some("import")).unwrap();
    assert_eq!(t.memory(), TensorMemory::Shm);
    assert_eq!(t.contiguity(), Contiguity::Unknown);
    assert_eq!(t.heap_source(), "import");
    assert_eq!(t.capacity_bytes(), 4096);
    assert_ne!(t.fd().unwrap().as_raw_fd(), fd.as_raw_fd(), "import dups what it keeps");
    t.map().unwrap()[100] = 0x5a;
    // A second import of the caller's fd, after the caller drops its own: the dup keeps it alive.
    let second = Tensor::<u8>::from_fd(fd.as_fd(), &[4096], None).unwrap();
    drop(fd);
    assert_eq!(second.map_read().unwrap()[100], 0x5a);
    assert_ne!(second.buffer_identity().id(), t.buffer_identity().id());
    // clone_fd exports another dup of the same file.
    let exported = t.clone_fd().unwrap();
    let key = |f: BorrowedFd<'_>| {
        let id = edgefirst_tensor::import::file_identity(f).unwrap();
        (id.dev, id.ino)
    };
    assert_eq!(key(exported.as_fd()), key(t.fd().unwrap()));
}

#[test]
fn from_fd_of_shm_open_file_is_shared_memory() {
    let name = std::ffi::CString::new(format!("/ef-test-{}", std::process::id())).unwrap();
    let raw = unsafe { libc::shm_open(name.as_ptr(), libc::O_RDWR | libc::O_CREAT | libc::O_EXCL, 0o600) };
    assert!(raw >= 0);
    unsafe { libc::shm_unlink(name.as_ptr()) };
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    assert_eq!(unsafe { libc::ftruncate(raw, 256) }, 0);
    let t = TensorDyn::from_fd(fd.as_fd(), &[256], DType::U8, None).unwrap();
    assert_eq!(t.memory(), TensorMemory::Shm);
}

#[test]
fn from_fd_of_a_pipe_is_unknown_buffer_type() {
    let mut fds = [0; 2];
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    let (r, _w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let e = TensorDyn::from_fd(r.as_fd(), &[16], DType::U8, None).unwrap_err();
    assert!(matches!(e, Error::UnknownBufferType(0x5049_5045)), "pipefs magic: {e}");
    assert!(e.to_string().contains("0x50495045"), "{e}");
}

#[test]
fn from_fd_of_a_regular_file_carries_its_filesystem_magic() {
    let path = std::env::temp_dir().join(format!("ef-regular-{}", std::process::id()));
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(4096).unwrap();
    let fd = OwnedFd::from(file);
    let expected = libc_magic(&fd);
    std::fs::remove_file(&path).unwrap();
    if expected == TMPFS_MAGIC {
        // /tmp on tmpfs is shared memory by definition; the classification must say so.
        assert_eq!(
            TensorDyn::from_fd(fd.as_fd(), &[16], DType::U8, None).unwrap().memory(),
            TensorMemory::Shm
        );
        return;
    }
    let e = TensorDyn::from_fd(fd.as_fd(), &[16], DType::U8, None).unwrap_err();
    match e {
        Error::UnknownBufferType(m) => assert_eq!(m, expected),
        e => panic!("expected UnknownBufferType, got {e}"),
    }
    assert_ne!(expected, DMA_BUF_MAGIC);
}

#[test]
fn from_fd_smaller_than_the_shape_is_refused() {
    let fd = memfd(1000);
    let e = Tensor::<u16>::from_fd(fd.as_fd(), &[501], None).unwrap_err();
    match e {
        Error::BufferTooSmall { needed, available, .. } => assert_eq!((needed, available), (1002, 1000)),
        e => panic!("expected BufferTooSmall, got {e}"),
    }
    assert!(Tensor::<u16>::from_fd(fd.as_fd(), &[500], None).is_ok());
}

#[test]
fn contiguous_request_without_cma_fails_loudly() {
    if std::path::Path::new("/dev/dma_heap/linux,cma").exists() {
        return; // a CMA heap can serve it; the failure case cannot be produced here
    }
    let opts = TensorOptions { contiguous: true, ..Default::default() };
    let e = TensorDyn::with_options(&[4096], DType::U8, &opts).unwrap_err();
    assert!(matches!(e, Error::ContiguousUnavailable { .. }), "{e}");
    assert!(e.to_string().contains("/dev/dma_heap/linux,cma"), "{e}");
}

#[test]
fn oversized_shapes_are_errors() {
    let e = TensorDyn::new(&[usize::MAX, 2], DType::U8, Some(TensorMemory::Mem), None).unwrap_err();
    assert!(matches!(e, Error::InvalidShape { .. }), "{e}");
}

fn minor_faults() -> i64 {
    let mut u = unsafe { std::mem::zeroed::<libc::rusage>() };
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) }, 0);
    u.ru_minflt
}

#[test]
fn fd_tensors_keep_one_mapping_for_their_life() {
    // 1 MiB of shared memory, read whole 50 times after a first pass: the same address every
    // time and not one page fault (a map per access faulted every page every time).
    let t = Tensor::<u8>::new(&[1 << 20], Some(TensorMemory::Shm), None).unwrap();
    t.map().unwrap().fill(7);
    let first = t.map_read().unwrap().as_ptr();
    let before = minor_faults();
    let mut sum = 0u64;
    for _ in 0..50 {
        let m = t.map_read().unwrap();
        assert_eq!(m.as_ptr(), first, "one mapping, borrowed by every map");
        sum += m.iter().step_by(4096).map(|&b| b as u64).sum::<u64>();
    }
    // Skipped where something else faults pages in: AddressSanitizer its shadow (scripts/asan.sh),
    // qemu-user its translation buffers (the aarch64 lane).
    if std::env::var_os("EDGEFIRST_NO_FAULT_COUNT").is_none() {
        assert_eq!(minor_faults() - before, 0, "no page fault once the mapping is populated");
    }
    assert_eq!(sum, 50 * 256 * 7);
    // A view maps a window of the same mapping.
    let ro = Tensor::<u8>::with_cpu_access(&[4096], CpuAccess::Read, Some(TensorMemory::Shm), None).unwrap();
    assert!(ro.map_write().is_err(), "the declaration is still enforced");
}

#[test]
fn an_imported_memfd_truncated_after_its_import_is_refused_not_read() {
    let fd = rustix::fs::memfd_create("frame", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    rustix::fs::ftruncate(&fd, 8192).unwrap();
    let t = TensorDyn::from_fd(fd.as_fd(), &[8192], DType::U8, None).unwrap();
    assert_eq!(t.map_with::<u8>(CpuAccess::Read).unwrap().len(), 8192);
    rustix::fs::ftruncate(&fd, 100).unwrap();
    let Err(e) = t.map_with::<u8>(CpuAccess::Read) else { panic!("a truncated import was mapped") };
    assert!(matches!(e, Error::BufferTooSmall { needed: 8192, available: 100, .. }), "{e}");
}

#[test]
fn a_read_only_import_maps_for_reading() {
    let fd = rustix::fs::memfd_create("frame", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    rustix::fs::ftruncate(&fd, 4096).unwrap();
    rustix::io::write(&fd, &[9u8; 16]).unwrap();
    let path = format!("/proc/self/fd/{}", fd.as_raw_fd());
    let ro = std::fs::File::open(path).unwrap(); // O_RDONLY
    let t = TensorDyn::from_fd(ro.as_fd(), &[4096], DType::U8, None).unwrap();
    assert_eq!(t.map_with::<u8>(CpuAccess::Read).unwrap()[..16], [9u8; 16]);
    assert!(t.map_with::<u8>(CpuAccess::Write).is_err(), "a read-only fd cannot be mapped for writing");
}
