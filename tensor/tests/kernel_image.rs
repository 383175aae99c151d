//! Image layout on real DMA-BUFs (kernel lane): the 64-byte rule at allocation and
//! reconfiguration, and multi-plane imports over two heap fds.

use edgefirst_tensor::import::{fs_magic, DMA_BUF_MAGIC};
use edgefirst_tensor::{
    CpuAccess, DType, Error, ImageDesc, PixelFormat, PixelLayout, PlaneDescriptor, Region, Tensor, TensorDyn,
    TensorMemory,
};
use std::os::fd::AsFd;

#[test]
fn every_dma_image_plane_is_64_byte_aligned() {
    let mut checked = 0;
    for &f in PixelFormat::ALL {
        if f.layout() == PixelLayout::Bitstream {
            continue;
        }
        for (w, h) in [(321, 241), (322, 240), (640, 480), (1920, 1080)] {
            let t = TensorDyn::image(w, h, f, DType::U8, CpuAccess::ReadWrite, Some(TensorMemory::DmaBuf))
                .unwrap();
            assert_eq!(t.memory(), TensorMemory::DmaBuf);
            for p in t.plane_table() {
                assert_eq!(p.stride % 64, 0, "{f:?} {w}x{h}: {p:?}");
            }
            let rs = t.row_stride().unwrap();
            let bytes = rs * f.combined_plane_height(h);
            assert_eq!(t.size(), bytes, "{f:?} {w}x{h}: aligned stride x total rows");
            assert!(t.capacity_bytes() >= bytes && t.capacity_bytes() < bytes + 4096, "{f:?} {w}x{h}");
            checked += 1;
        }
    }
    assert_eq!(checked, 15 * 4, "every non-bitstream format at four sizes");
    let r321 =
        Tensor::<u8>::image(321, 4, PixelFormat::Rgba, CpuAccess::ReadWrite, Some(TensorMemory::DmaBuf))
            .unwrap();
    let r322 =
        Tensor::<u8>::image(322, 4, PixelFormat::Rgba, CpuAccess::ReadWrite, Some(TensorMemory::DmaBuf))
            .unwrap();
    assert_eq!((r321.row_stride(), r322.row_stride()), (Some(1344), Some(1344)));
    let f32p = Tensor::<f32>::image(
        321,
        4,
        PixelFormat::PlanarRgb,
        CpuAccess::ReadWrite,
        Some(TensorMemory::DmaBuf),
    )
    .unwrap();
    assert_eq!(f32p.row_stride(), Some(1344));
    let bad =
        ImageDesc::new(321, 4, PixelFormat::Rgba).with_row_stride(1300).with_memory(TensorMemory::DmaBuf);
    let e = TensorDyn::image_desc(&bad).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    println!("kernel lane: RGBA 321 and 322 on a DMA-BUF both get row stride 1344; 1300 is refused: {e}");
}

#[test]
fn strided_dma_rows_round_trip() {
    let t = Tensor::<u8>::image(321, 7, PixelFormat::Rgba, CpuAccess::ReadWrite, Some(TensorMemory::DmaBuf))
        .unwrap();
    let rs = t.row_stride().unwrap();
    {
        let mut m = t.map_write().unwrap();
        for y in 0..7 {
            for x in 0..321 * 4 {
                m[y * rs + x] = (x ^ y) as u8;
            }
        }
    }
    let v = t.view(Region::new(300, 3, 21, 4)).unwrap();
    let m = v.map_read().unwrap();
    for y in 0..4 {
        for x in 0..21 * 4 {
            assert_eq!(m[y * rs + x], ((1200 + x) ^ (y + 3)) as u8);
        }
    }
}

#[test]
fn from_planes_over_two_heap_fds() {
    let heap = dma_heap::Heap::new(dma_heap::HeapKind::System).unwrap();
    let (w, h) = (640, 480);
    let luma_fd = heap.allocate(640 * 480).unwrap();
    let chroma_fd = heap.allocate(640 * 240).unwrap();
    let nv = TensorDyn::import_image(
        vec![
            PlaneDescriptor::new(luma_fd.as_fd()).unwrap().with_stride(640),
            PlaneDescriptor::new(chroma_fd.as_fd()).unwrap().with_stride(640),
        ],
        w,
        h,
        PixelFormat::Nv12,
        CpuAccess::ReadWrite,
    )
    .unwrap();
    assert!(nv.is_multiplane());
    let planes = nv.planes();
    for p in &planes {
        assert_eq!(fs_magic(p.fd.unwrap()).unwrap(), DMA_BUF_MAGIC);
    }
    assert_eq!((planes[0].size, planes[1].size), (307_200, 153_600));
    nv.map_with::<u8>(CpuAccess::ReadWrite).unwrap().as_mut_slice().unwrap()[640 * 479] = 0x42;
    nv.chroma().unwrap().map_with::<u8>(CpuAccess::ReadWrite).unwrap().as_mut_slice().unwrap()
        [640 * 239 + 1] = 0x99;
    let flat = nv.copy_to_flat().unwrap();
    let fp = flat.plane_table();
    let m = flat.map_with::<u8>(CpuAccess::Read).unwrap();
    assert_eq!((m[640 * 479], m[fp[1].offset + 640 * 239 + 1]), (0x42, 0x99));
    println!("kernel lane: NV12 from two DMA-BUF planes ({} + {} bytes)", planes[0].size, planes[1].size);
}

#[test]
fn configure_image_on_a_pooled_dma_tensor() {
    let mut t =
        Tensor::<u8>::image(1920, 1080, PixelFormat::Rgba, CpuAccess::ReadWrite, Some(TensorMemory::DmaBuf))
            .unwrap();
    let id = t.buffer_identity().id();
    t.configure_image(321, 240, PixelFormat::Rgba).unwrap();
    assert_eq!(t.row_stride(), Some(7680), "the old aligned pitch is reused");
    t.configure_image(2000, 100, PixelFormat::Rgba).unwrap();
    assert_eq!(t.row_stride(), Some(8000), "8000 = 2000*4 is 64-aligned by luck: recomputed, not 7680");
    t.configure_image(2001, 100, PixelFormat::Rgba).unwrap();
    assert_eq!(t.row_stride(), Some(8064), "re-aligned to 64");
    assert_eq!(t.buffer_identity().id(), id, "same allocation");
}
