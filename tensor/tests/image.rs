//! Image layout on every backing this machine has (the kernel lane runs this same binary, where
//! DMA-BUF joins the list): strides, plane tables, views, batches, multi-plane, reconfiguration.

use edgefirst_tensor::{
    CpuAccess, DType, Error, ImageDesc, PixelFormat, PlaneDescriptor, PlaneGeometry, Region, Tensor,
    TensorDyn, TensorMemory,
};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};

fn memories() -> Vec<TensorMemory> {
    let mut m = vec![TensorMemory::Mem, TensorMemory::Shm];
    if TensorMemory::DmaBuf.is_available() {
        m.push(TensorMemory::DmaBuf);
    }
    m
}

fn memfd(len: usize) -> OwnedFd {
    let fd = unsafe { libc::memfd_create(c"plane".as_ptr(), libc::MFD_CLOEXEC) };
    assert!(fd >= 0);
    assert_eq!(unsafe { libc::ftruncate(fd, len as libc::off_t) }, 0);
    unsafe { OwnedFd::from_raw_fd(fd) }
}

fn pattern(i: usize) -> u8 {
    (i.wrapping_mul(131) ^ (i >> 7)) as u8
}

/// Fill every byte of the tensor's span with pattern(byte index).
fn fill(t: &TensorDyn) {
    let mut m = t.map_with::<u8>(CpuAccess::ReadWrite).unwrap();
    for (i, b) in m.as_mut_slice().unwrap().iter_mut().enumerate() {
        *b = pattern(i);
    }
}

#[test]
fn nv12_addresses_the_luma_grid_inside_a_larger_buffer() {
    let t = Tensor::<u8>::image(640, 480, PixelFormat::Nv12, CpuAccess::ReadWrite, Some(TensorMemory::Mem))
        .unwrap();
    assert_eq!(t.shape(), &[480, 640]);
    assert_eq!(t.row_stride(), Some(640));
    assert_eq!(t.size(), 460_800, "extent from the plane table, not the shape");
    assert_eq!(t.len(), 307_200);
    let planes = t.plane_table();
    assert_eq!(planes[1], PlaneGeometry { offset: 307_200, stride: 640, size: 153_600 });
    let odd = Tensor::<u8>::image(640, 483, PixelFormat::Nv12, CpuAccess::ReadWrite, Some(TensorMemory::Mem))
        .unwrap();
    assert_eq!(odd.size(), 640 * 725);
    assert_eq!(odd.map_read().unwrap().len(), 640 * 725, "the map covers the chroma rows too");
}

#[test]
fn host_backings_keep_the_tight_pitch_and_semi_planar_is_aligned_everywhere() {
    for memory in [TensorMemory::Mem, TensorMemory::Shm] {
        for (w, rs) in [(321, 1284), (322, 1288), (640, 2560)] {
            let t = TensorDyn::image(w, 10, PixelFormat::Rgba, DType::U8, CpuAccess::ReadWrite, Some(memory))
                .unwrap();
            assert_eq!(t.row_stride(), Some(rs), "{memory} RGBA {w}");
            assert!(t.capacity_bytes() >= rs * 10);
        }
        let nv = TensorDyn::image(321, 11, PixelFormat::Nv12, DType::U8, CpuAccess::ReadWrite, Some(memory))
            .unwrap();
        assert_eq!(
            nv.row_stride(),
            Some(384),
            "{memory}: semi-planar takes the aligned pitch on every backing"
        );
        assert_eq!(nv.size(), 384 * (11 + 6));
        let planar =
            TensorDyn::image(321, 5, PixelFormat::PlanarRgb, DType::F32, CpuAccess::ReadWrite, Some(memory))
                .unwrap();
        assert_eq!(planar.row_stride(), Some(1284));
        assert_eq!(planar.shape(), &[3, 5, 321]);
        assert_eq!(planar.byte_strides(), vec![1284 * 5, 1284, 4]);
    }
}

#[test]
fn automatic_image_memory_skips_shared_memory() {
    let t = Tensor::<u8>::image(64, 64, PixelFormat::Rgb, CpuAccess::ReadWrite, None).unwrap();
    if TensorMemory::DmaBuf.is_available() {
        assert_eq!(t.memory(), TensorMemory::DmaBuf);
        assert_eq!(t.row_stride(), Some(192));
    } else {
        assert_eq!(t.memory(), TensorMemory::Mem, "DMA → Mem for images, never SHM");
    }
}

#[test]
fn explicit_strides_are_checked() {
    let narrow =
        ImageDesc::new(321, 4, PixelFormat::Rgba).with_row_stride(1280).with_memory(TensorMemory::Mem);
    assert!(matches!(TensorDyn::image_desc(&narrow), Err(Error::InvalidArgument(_))));
    let wide = ImageDesc::new(321, 4, PixelFormat::Rgba).with_row_stride(1300).with_memory(TensorMemory::Mem);
    assert_eq!(TensorDyn::image_desc(&wide).unwrap().row_stride(), Some(1300));
    let nv = ImageDesc::new(320, 4, PixelFormat::Nv12).with_row_stride(330).with_memory(TensorMemory::Shm);
    let e = TensorDyn::image_desc(&nv).unwrap_err();
    assert!(e.to_string().contains("not a multiple of 64"), "{e}");
    assert!(matches!(
        TensorDyn::image(4, 4, PixelFormat::Nv12, DType::F32, CpuAccess::ReadWrite, Some(TensorMemory::Mem)),
        Err(Error::InvalidArgument(_))
    ));
    assert!(TensorDyn::image(0, 4, PixelFormat::Rgb, DType::U8, CpuAccess::ReadWrite, None).is_err());
}

#[test]
fn byte_strides_of_every_layout() {
    let mem = TensorMemory::Mem;
    let img = |w, h, f, dt| TensorDyn::image(w, h, f, dt, CpuAccess::ReadWrite, Some(mem)).unwrap();
    let desc = |w, h, f| ImageDesc::new(w, h, f).with_memory(mem);
    // Packed with a recorded pitch.
    let rgb = TensorDyn::image_desc(&desc(321, 240, PixelFormat::Rgb).with_row_stride(1024)).unwrap();
    assert_eq!(rgb.byte_strides(), vec![1024, 3, 1]);
    // Semi-planar luma grid.
    assert_eq!(img(641, 480, PixelFormat::Nv12, DType::U8).byte_strides(), vec![704, 1]);
    // Planar, padded.
    let p = TensorDyn::image_desc(
        &desc(321, 240, PixelFormat::PlanarRgb).with_dtype(DType::F32).with_row_stride(1344),
    )
    .unwrap();
    assert_eq!(p.byte_strides(), vec![1344 * 240, 1344, 4]);
    // Batched: N steps over one padded image (chroma included for NV12).
    let b = TensorDyn::image_desc(&desc(641, 480, PixelFormat::Nv12).with_batch(2)).unwrap();
    assert_eq!(b.shape(), &[2, 480, 641]);
    assert_eq!(b.byte_strides(), vec![704 * 720, 704, 1]);
    assert_eq!(b.size(), 2 * 704 * 720);
    let g = TensorDyn::image_desc(&desc(5, 3, PixelFormat::Gray8).with_batch(4)).unwrap();
    assert_eq!(g.byte_strides(), vec![15, 5, 1], "a batch of gray is not mistaken for [H, W, C]");
    // A plain tensor is dense.
    let plain = TensorDyn::new(&[2, 3, 4], DType::F32, Some(mem), None).unwrap();
    assert_eq!(plain.byte_strides(), vec![48, 16, 4]);
}

#[test]
fn views_map_exactly_their_bytes_on_every_backing() {
    for memory in memories() {
        let parent =
            TensorDyn::image(64, 48, PixelFormat::Rgb, DType::U8, CpuAccess::ReadWrite, Some(memory))
                .unwrap();
        fill(&parent);
        let rs = parent.row_stride().unwrap();
        let v = parent.view(Region::new(5, 7, 10, 9)).unwrap();
        assert_eq!(v.shape(), &[9, 10, 3]);
        assert_eq!(v.buffer_identity().id(), parent.buffer_identity().id());
        assert!(v.is_view());
        assert_eq!(v.byte_offset(), 7 * rs + 15);
        let m = v.map_with::<u8>(CpuAccess::Read).unwrap();
        assert_eq!(m.len(), 8 * rs + 30, "{memory}: up to the last byte of the last row");
        for y in 0..9 {
            for x in 0..30 {
                assert_eq!(m[y * rs + x], pattern((y + 7) * rs + 15 + x), "{memory} ({x},{y})");
            }
        }
        drop(m);
        // A view of a view adds offsets.
        let vv = v.view(Region::new(2, 3, 4, 4)).unwrap();
        assert_eq!(vv.byte_offset(), (7 + 3) * rs + (5 + 2) * 3);
        assert_eq!(vv.map_with::<u8>(CpuAccess::Read).unwrap()[0], pattern(10 * rs + 21));
        // Out of bounds is an error, not a clamp.
        for r in [Region::new(60, 0, 5, 1), Region::new(0, 40, 1, 9), Region::new(usize::MAX, 0, 2, 1)] {
            assert!(matches!(parent.view(r), Err(Error::RegionOutOfBounds { .. })), "{memory} {r:?}");
        }
        assert!(matches!(
            v.view(Region::new(0, 0, 11, 1)),
            Err(Error::RegionOutOfBounds { bound_width: 10, .. })
        ));
    }
}

#[test]
fn planar_and_semi_planar_views() {
    for memory in memories() {
        let p =
            TensorDyn::image(33, 20, PixelFormat::PlanarRgb, DType::F32, CpuAccess::ReadWrite, Some(memory))
                .unwrap();
        fill(&p);
        let rs = p.row_stride().unwrap();
        let v = p.view(Region::new(3, 4, 5, 6)).unwrap();
        assert_eq!(v.shape(), &[3, 6, 5]);
        assert_eq!(
            v.byte_strides(),
            vec![(rs * 20) as isize, rs as isize, 4],
            "planes step over the parent's rows"
        );
        let m = v.map_with::<u8>(CpuAccess::Read).unwrap();
        let base = 4 * rs + 12;
        for c in 0..3 {
            for y in 0..6 {
                let at = c * rs * 20 + y * rs;
                assert_eq!(m[at], pattern(base + at), "{memory} c{c} y{y}");
                assert_eq!(m[at + 19], pattern(base + at + 19));
            }
        }
        drop(m);

        let nv = TensorDyn::image(64, 32, PixelFormat::Nv12, DType::U8, CpuAccess::ReadWrite, Some(memory))
            .unwrap();
        fill(&nv);
        let rs = nv.row_stride().unwrap();
        let v = nv.view(Region::new(6, 4, 9, 7)).unwrap();
        let planes = v.plane_table();
        assert_eq!(planes[0], PlaneGeometry { offset: 0, stride: rs as isize, size: 6 * rs + 9 });
        // Chroma rows 2..=5 (4 rows), columns 6..16 (pairs 3..=7).
        let chroma_start = rs * 32 + 2 * rs + 6;
        assert_eq!(planes[1].offset, chroma_start - (4 * rs + 6));
        assert_eq!(planes[1].size, 3 * rs + 10);
        let m = v.map_with::<u8>(CpuAccess::Read).unwrap();
        assert_eq!(m[planes[1].offset], pattern(chroma_start));
        assert_eq!(m[planes[1].offset + 3 * rs + 9], pattern(chroma_start + 3 * rs + 9));
        drop(m);
        assert!(
            matches!(nv.view(Region::new(1, 0, 2, 2)), Err(Error::InvalidArgument(_))),
            "odd x splits chroma"
        );
        assert!(
            matches!(nv.view(Region::new(0, 1, 2, 2)), Err(Error::InvalidArgument(_))),
            "odd y splits chroma"
        );
    }
}

#[test]
fn batches_select_padded_images() {
    for memory in memories() {
        let desc = ImageDesc::new(21, 5, PixelFormat::Rgba).with_batch(3).with_memory(memory);
        let t = TensorDyn::image_desc(&desc).unwrap();
        fill(&t);
        let rs = t.row_stride().unwrap();
        assert_eq!(t.byte_strides()[0], (rs * 5) as isize);
        let b1 = t.batch(1).unwrap();
        assert_eq!(b1.shape(), &[5, 21, 4]);
        assert_eq!(b1.width(), Some(21));
        assert_eq!(b1.buffer_identity().id(), t.buffer_identity().id());
        assert_eq!(b1.map_with::<u8>(CpuAccess::Read).unwrap()[0], pattern(rs * 5));
        assert!(matches!(t.batch(3), Err(Error::BatchIndexOutOfBounds { index: 3, len: 3 })));
        // A view of a batched tensor addresses the leading frame.
        let v = t.view(Region::new(1, 1, 2, 2)).unwrap();
        assert_eq!(v.byte_offset(), rs + 4);
        let v2 = b1.view(Region::new(1, 1, 2, 2)).unwrap();
        assert_eq!(v2.map_with::<u8>(CpuAccess::Read).unwrap()[0], pattern(rs * 5 + rs + 4), "{memory}");
    }
    // batch(0) of an unbatched image is the whole tensor, byte and identity.
    let one =
        TensorDyn::image(8, 8, PixelFormat::Gray8, DType::U8, CpuAccess::ReadWrite, Some(TensorMemory::Mem))
            .unwrap();
    let b0 = one.batch(0).unwrap();
    assert_eq!((b0.byte_offset(), b0.size(), b0.shape()), (0, one.size(), one.shape()));
    assert_eq!(b0.buffer_identity().id(), one.buffer_identity().id());
    assert!(!b0.is_view());
    assert!(matches!(one.batch(1), Err(Error::BatchIndexOutOfBounds { index: 1, len: 1 })));
    // A plain tensor's leading dimension is its batch.
    let plain = Tensor::<u16>::new(&[4, 3], Some(TensorMemory::Mem), None).unwrap();
    plain.map().unwrap().iter_mut().enumerate().for_each(|(i, v)| *v = i as u16);
    assert_eq!(&*plain.batch(2).unwrap().map_read().unwrap(), &[6, 7, 8]);
}

#[test]
fn views_are_written_read_write() {
    let t =
        Tensor::<u8>::image(16, 16, PixelFormat::Gray8, CpuAccess::Write, Some(TensorMemory::Mem)).unwrap();
    assert_eq!(t.write_access(), CpuAccess::Write);
    assert!(t.map_for_write().is_ok());
    let v = t.view(Region::new(0, 0, 4, 4)).unwrap();
    assert_eq!(v.write_access(), CpuAccess::ReadWrite);
    assert!(matches!(v.map_for_write(), Err(Error::CpuAccessDenied { declared: CpuAccess::Write, .. })));
    let rw = Tensor::<u8>::image(16, 16, PixelFormat::Gray8, CpuAccess::ReadWrite, Some(TensorMemory::Mem))
        .unwrap();
    let v = rw.view(Region::new(2, 2, 4, 4)).unwrap();
    v.map_for_partial_write().unwrap()[0] = 7;
    assert_eq!(rw.map_read().unwrap()[2 * 16 + 2], 7);
}

#[test]
fn copy_to_flat_materializes_with_a_new_identity() {
    for memory in memories() {
        let t = TensorDyn::image(40, 10, PixelFormat::Rgba, DType::U8, CpuAccess::ReadWrite, Some(memory))
            .unwrap();
        fill(&t);
        let rs = t.row_stride().unwrap();
        let v = t.view(Region::new(3, 2, 5, 4)).unwrap();
        let flat = v.copy_to_flat().unwrap();
        assert_eq!(flat.memory(), TensorMemory::Mem);
        assert_eq!(flat.row_stride(), Some(20));
        assert_eq!(flat.shape(), &[4, 5, 4]);
        assert_ne!(flat.buffer_identity().id(), t.buffer_identity().id());
        let m = flat.map_with::<u8>(CpuAccess::Read).unwrap();
        assert_eq!(m.len(), 80);
        for y in 0..4 {
            for x in 0..20 {
                assert_eq!(m[y * 20 + x], pattern((y + 2) * rs + 12 + x), "{memory}");
            }
        }
        drop(m);
        // NV12 view: luma and chroma rows land at the flat plane table.
        let nv = TensorDyn::image(64, 16, PixelFormat::Nv12, DType::U8, CpuAccess::ReadWrite, Some(memory))
            .unwrap();
        fill(&nv);
        let nrs = nv.row_stride().unwrap();
        let flat = nv.view(Region::new(8, 2, 6, 4)).unwrap().copy_to_flat().unwrap();
        let planes = flat.plane_table();
        let m = flat.map_with::<u8>(CpuAccess::Read).unwrap();
        assert_eq!(m[0], pattern(2 * nrs + 8));
        assert_eq!(m[planes[1].offset + planes[1].stride as usize + 5], pattern(16 * nrs + 2 * nrs + 8 + 5));
    }
}

#[test]
fn from_planes_keeps_each_planes_fd_stride_and_offset() {
    let (w, h) = (20, 6);
    let luma_fd = memfd(4096);
    let chroma_fd = memfd(4096);
    let luma = TensorDyn::import_image(
        vec![PlaneDescriptor::new(luma_fd.as_fd()).unwrap().with_stride(64)],
        64,
        h,
        PixelFormat::Gray8,
        CpuAccess::ReadWrite,
    )
    .unwrap()
    .view(Region::new(0, 0, w, h))
    .unwrap();
    let mut chroma = TensorDyn::new(&[4, 128], DType::U8, Some(TensorMemory::Shm), None).unwrap();
    chroma.reshape(&[3, 128]).unwrap();
    chroma.set_plane_offset(128).unwrap();
    assert!(TensorDyn::from_planes(&luma, &chroma, PixelFormat::I420).is_err(), "I420 is not semi-planar");
    let nv = TensorDyn::from_planes(&luma, &chroma, PixelFormat::Nv12).unwrap();
    assert!(nv.is_multiplane());
    assert_eq!((nv.width(), nv.height(), nv.row_stride()), (Some(w), Some(h), Some(64)));
    let planes = nv.planes();
    assert_eq!(planes.len(), 2);
    assert_eq!(planes[0].fd.unwrap().as_raw_fd(), luma.fd().unwrap().as_raw_fd());
    assert_eq!(planes[1].fd.unwrap().as_raw_fd(), chroma.fd().unwrap().as_raw_fd());
    assert_eq!((planes[1].offset, planes[1].stride), (128, 128));
    // Content through the combined tensor and its copy.
    chroma.map_with::<u8>(CpuAccess::ReadWrite).unwrap().as_mut_slice().unwrap()[128 + 3] = 0xcc;
    luma.map_with::<u8>(CpuAccess::ReadWrite).unwrap().as_mut_slice().unwrap()[64 + 1] = 0x11;
    let flat = nv.copy_to_flat().unwrap();
    let fp = flat.plane_table();
    let m = flat.map_with::<u8>(CpuAccess::Read).unwrap();
    assert_eq!(m[fp[0].stride as usize + 1], 0x11);
    assert_eq!(m[fp[1].offset + fp[1].stride as usize + 3], 0xcc);
    drop((m, chroma_fd));
    // A chroma plane of the wrong height is refused with the numbers.
    let short = TensorDyn::new(&[2, 20], DType::U8, Some(TensorMemory::Mem), None).unwrap();
    let e = TensorDyn::from_planes(&luma, &short, PixelFormat::Nv12).unwrap_err();
    assert!(e.to_string().contains("3 rows x 20 bytes"), "{e}");
}

#[test]
fn import_image_single_fd_and_two_descriptors_over_one_fd() {
    let (w, h) = (32, 8);
    let fd = memfd(64 * 8 + 64 * 4 + 512);
    // Single fd, chroma found through the plane table at the stated stride.
    let one = TensorDyn::import_image(
        vec![PlaneDescriptor::new(fd.as_fd()).unwrap().with_stride(64)],
        w,
        h,
        PixelFormat::Nv12,
        CpuAccess::ReadWrite,
    )
    .unwrap();
    assert_eq!(one.plane_table()[1].offset, 64 * 8);
    // The producer put chroma 512 bytes further (as a GstVideoMeta can say): two descriptors.
    let two = TensorDyn::import_image(
        vec![
            PlaneDescriptor::new(fd.as_fd()).unwrap().with_stride(64),
            PlaneDescriptor::new(fd.as_fd()).unwrap().with_stride(64).with_offset(64 * 8 + 512),
        ],
        w,
        h,
        PixelFormat::Nv12,
        CpuAccess::ReadWrite,
    )
    .unwrap();
    assert_eq!(two.planes()[1].offset, 64 * 8 + 512);
    // A buffer that cannot hold the stated geometry is refused, not mapped past its end.
    let small = memfd(100);
    let e = TensorDyn::import_image(
        vec![PlaneDescriptor::new(small.as_fd()).unwrap()],
        w,
        h,
        PixelFormat::Nv12,
        CpuAccess::ReadWrite,
    )
    .unwrap_err();
    assert!(matches!(e, Error::BufferTooSmall { available: 100, .. }), "{e}");
}

#[test]
fn plane_offset_is_cleared_by_set_format_and_reshape() {
    let fd = memfd(8192);
    let mut t = TensorDyn::from_fd(fd.as_fd(), &[16, 16], DType::U8, None).unwrap();
    {
        let mut whole = TensorDyn::from_fd(fd.as_fd(), &[8192], DType::U8, None).unwrap();
        let mut m = whole.map_with::<u8>(CpuAccess::ReadWrite).unwrap();
        let s = m.as_mut_slice().unwrap();
        s[0] = 1;
        s[4096] = 2;
        drop(m);
        whole.reshape(&[2, 4096]).unwrap();
    }
    t.set_plane_offset(4096).unwrap();
    assert_eq!(t.plane_offset(), Some(4096));
    assert_eq!(t.map_with::<u8>(CpuAccess::Read).unwrap()[0], 2);
    assert!(matches!(t.set_plane_offset(8000), Err(Error::BufferTooSmall { .. })));
    assert_eq!(t.plane_offset(), Some(4096), "a refused offset leaves the old one");
    t.set_format(PixelFormat::Gray8).unwrap();
    assert_eq!(t.plane_offset(), None, "setting a format clears the plane offset");
    assert_eq!(t.map_with::<u8>(CpuAccess::Read).unwrap()[0], 1);
    t.reshape(&[256]).unwrap();
    t.set_plane_offset(4096).unwrap();
    t.reshape(&[16, 16]).unwrap();
    assert_eq!(t.plane_offset(), None, "reshaping clears it too");
    assert_eq!(t.format(), None);
    // set_format reads the allocation shape of semi-planar formats.
    let mut nv = TensorDyn::new(&[725, 640], DType::U8, Some(TensorMemory::Mem), None).unwrap();
    nv.set_format(PixelFormat::Nv12).unwrap();
    assert_eq!((nv.width(), nv.height(), nv.shape()), (Some(640), Some(483), &[483usize, 640][..]));
    let mut bad = TensorDyn::new(&[10, 10, 3], DType::U8, Some(TensorMemory::Mem), None).unwrap();
    assert!(matches!(bad.set_format(PixelFormat::Rgba), Err(Error::InvalidShape { .. })));
}

#[test]
fn configure_image_reuses_only_good_strides() {
    for memory in memories() {
        let dma = memory == TensorMemory::DmaBuf;
        let mut t =
            Tensor::<u8>::image(640, 480, PixelFormat::Rgba, CpuAccess::ReadWrite, Some(memory)).unwrap();
        let cap = t.capacity_bytes();
        // 2560 is 64-aligned, wide enough and inside: kept.
        t.configure_image(321, 200, PixelFormat::Rgba).unwrap();
        assert_eq!(t.row_stride(), Some(2560), "{memory}");
        assert_eq!((t.width(), t.height(), t.shape()), (Some(321), Some(200), &[200usize, 321, 4][..]));
        // 2560 is too narrow for 700 RGBA (2800): recomputed (aligned on DMA only).
        t.configure_image(700, 100, PixelFormat::Rgba).unwrap();
        assert_eq!(t.row_stride(), Some(if dma { 2816 } else { 2800 }), "{memory}");
        // A tight 1284 pitch (Mem/Shm) is not 64-aligned: never kept, recomputed for 322.
        let mut odd =
            Tensor::<u8>::image(321, 10, PixelFormat::Rgba, CpuAccess::ReadWrite, Some(memory)).unwrap();
        odd.configure_image(322, 9, PixelFormat::Rgba).unwrap();
        assert_eq!(odd.row_stride(), Some(if dma { 1344 } else { 1288 }), "{memory}");
        // Semi-planar is re-aligned on every backing.
        t.configure_image(321, 100, PixelFormat::Nv12).unwrap();
        // DMA's 2816 is kept (aligned, wide, inside); the heap's 2800 is not aligned: recomputed.
        assert_eq!(t.row_stride(), Some(if dma { 2816 } else { 384 }), "{memory}");
        // A geometry that does not fit the allocation is refused.
        let e = t.configure_image(4000, 4000, PixelFormat::Rgba).unwrap_err();
        assert!(matches!(e, Error::BufferTooSmall { available, .. } if available == cap), "{e}");
    }
}

#[test]
fn hostile_geometry_is_an_error() {
    let t =
        Tensor::<u8>::image(16, 16, PixelFormat::Rgb, CpuAccess::ReadWrite, Some(TensorMemory::Mem)).unwrap();
    assert!(t.view(Region::new(0, 0, 0, 4)).is_err());
    let plain = TensorDyn::new(&[4, 4], DType::U8, Some(TensorMemory::Mem), None).unwrap();
    assert!(matches!(plain.view(Region::new(0, 0, 1, 1)), Err(Error::InvalidOperation(_))));
    let big = ImageDesc::new(usize::MAX / 8, 9, PixelFormat::Rgba).with_memory(TensorMemory::Mem);
    assert!(TensorDyn::image_desc(&big).is_err());
}
