//! The tensor blob: round trips in both transport modes, the pinned layout, and hostile input
//! (every header and plane-record word, every truncation, a bounded mutation fuzz).

use edgefirst_tensor::blob::{self, header, plane, TransportMode, HEADER_LEN, PLANE_RECORD_LEN};
use edgefirst_tensor::import::file_identity;
use edgefirst_tensor::preprocess::Quantization;
use edgefirst_tensor::{
    Colorimetry, CpuAccess, DType, Error, ImageDesc, PixelFormat, Region, TensorDyn, TensorMemory,
};
use std::collections::BTreeMap;
use std::os::fd::BorrowedFd;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// splitmix64: deterministic, so a failing case is reproducible from its index.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn fill(t: &TensorDyn, seed: u64) {
    let mut rng = Rng(seed);
    for part in std::iter::once(t).chain(t.chroma()) {
        let mut m = part.map_with::<u8>(CpuAccess::ReadWrite).unwrap();
        for b in m.as_mut_slice().unwrap() {
            *b = rng.next() as u8;
        }
    }
}

fn bytes_of(t: &TensorDyn) -> Vec<u8> {
    t.map_with::<u8>(CpuAccess::Read).unwrap().to_vec()
}

/// Every visible row of every plane, padding excluded: what an image's content is.
fn content(t: &TensorDyn) -> Vec<Vec<u8>> {
    let f = t.format().unwrap();
    let esz = t.dtype().size();
    let (w, h) = (t.width().unwrap(), t.height().unwrap());
    let mut out = Vec::new();
    let mut plane_index = 0;
    for part in std::iter::once(t).chain(t.chroma()) {
        let m = part.map_with::<u8>(CpuAccess::Read).unwrap();
        for p in part.plane_table() {
            let s = f.plane_sampling(plane_index, esz);
            for r in 0..s.rows(h) {
                let at = p.offset + r * p.stride as usize;
                out.push(m[at..at + s.row_bytes(w)].to_vec());
            }
            plane_index += 1;
        }
    }
    out
}

fn inode(fd: BorrowedFd<'_>) -> (u64, u64) {
    let id = file_identity(fd).unwrap();
    (id.dev, id.ino)
}

fn word(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn set_word(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// Where the strings region starts: after the header and the four arrays.
fn strings_at(b: &[u8]) -> usize {
    let u16_at = |at: usize| u16::from_le_bytes([b[at], b[at + 1]]) as usize;
    HEADER_LEN
        + 8 * (u16_at(header::SHAPE_LEN) + u16_at(header::STRIDES_LEN))
        + 4 * (word(b, header::QUANT_SCALES_LEN) + word(b, header::QUANT_ZERO_POINTS_LEN)) as usize
}

/// Where plane record `i` starts, walked the way a reader would.
fn record_at(b: &[u8], i: usize) -> usize {
    let strings_end = strings_at(b) + word(b, header::STRINGS_BYTES) as usize;
    let mut at = strings_end.next_multiple_of(8);
    for _ in 0..i {
        let n = PLANE_RECORD_LEN
            + word(b, at + plane::HANDLE_BYTES_LEN) as usize
            + word(b, at + plane::DATA_LEN) as usize;
        at += n.next_multiple_of(8);
    }
    at
}

fn image(w: usize, h: usize, f: PixelFormat, dtype: DType, memory: TensorMemory) -> TensorDyn {
    TensorDyn::image_desc(&ImageDesc::new(w, h, f).with_dtype(dtype).with_memory(memory)).unwrap()
}

#[test]
fn layout_is_pinned() {
    let t = TensorDyn::new(&[2], DType::U8, Some(TensorMemory::Mem), None).unwrap();
    t.map_with::<u8>(CpuAccess::ReadWrite).unwrap().as_mut_slice().unwrap().copy_from_slice(&[7, 9]);
    let b = blob::export(&t, TransportMode::Inline).unwrap();
    // header 72 + shape 8 + five empty strings 20 (+4 padding to 8) + record 56 + 2 data (+6).
    assert_eq!(b.len(), 168);
    let mut want = Vec::new();
    want.extend(168u64.to_le_bytes()); // total_len
    want.extend(0u64.to_le_bytes()); // required_mask
    want.extend(64u64.to_le_bytes()); // planes_bytes
    want.extend(b"EFTB"); // magic
    want.extend(0u32.to_le_bytes()); // storage_kind: inline bytes are mem
    want.extend(0u32.to_le_bytes()); // pid
    want.extend((-1i32).to_le_bytes()); // fence_fd
    want.extend(0u32.to_le_bytes()); // dtype uint8
    want.extend((-2i32).to_le_bytes()); // quant_axis: none
    want.extend(0u32.to_le_bytes()); // quant_scales_len
    want.extend(0u32.to_le_bytes()); // quant_zero_points_len
    want.extend(20u32.to_le_bytes()); // strings_bytes
    want.extend(1u32.to_le_bytes()); // plane_count
    want.extend(1u16.to_le_bytes()); // version
    want.extend(4u16.to_le_bytes()); // cpu_access ReadWrite
    want.extend(1u16.to_le_bytes()); // shape_len
    want.extend(0u16.to_le_bytes()); // strides_len: dense
    assert_eq!(want.len(), HEADER_LEN);
    want.extend(2u64.to_le_bytes()); // shape
    for _ in 0..5 {
        want.extend(0u32.to_le_bytes());
    }
    want.extend([0; 4]);
    want.extend((-1i64).to_le_bytes()); // handle: inline
    want.extend(0u64.to_le_bytes()); // offset
    want.extend(1u64.to_le_bytes()); // stride
    want.extend(2u64.to_le_bytes()); // size
    want.extend(2u64.to_le_bytes()); // used
    want.extend(0u64.to_le_bytes()); // modifier
    want.extend(0u32.to_le_bytes()); // handle_bytes_len
    want.extend(2u32.to_le_bytes()); // data_len
    want.extend([7, 9, 0, 0, 0, 0, 0, 0]);
    assert_eq!(b, want);
    assert_eq!(bytes_of(&blob::import(&b).unwrap()), [7, 9]);
}

#[test]
fn plain_tensors_of_every_dtype_round_trip_inline() {
    for &memory in &[TensorMemory::Mem, TensorMemory::Shm] {
        for (k, &dtype) in DType::ALL.iter().enumerate() {
            let t = TensorDyn::new(&[3, 5, 7], dtype, Some(memory), Some("src")).unwrap();
            fill(&t, k as u64);
            let b = blob::export(&t, TransportMode::Inline).unwrap();
            let u = blob::import(&b).unwrap();
            assert_eq!((u.dtype(), u.shape()), (dtype, t.shape()), "{memory} {dtype}");
            assert_eq!(bytes_of(&u), bytes_of(&t), "{memory} {dtype}");
            assert_eq!(u.memory(), TensorMemory::Mem, "inline lands in the heap");
            assert_ne!(u.buffer_identity().id(), t.buffer_identity().id(), "a new allocation");
            assert_eq!(u64_at(&b, header::PID) as u32, 0);
        }
    }
    // A rank-0 tensor and an empty one are tensors too.
    for shape in [&[][..], &[4, 0, 3][..]] {
        let t = TensorDyn::new(shape, DType::F32, Some(TensorMemory::Mem), None).unwrap();
        let u = blob::import(&blob::export(&t, TransportMode::Inline).unwrap()).unwrap();
        assert_eq!(u.shape(), shape);
    }
}

#[test]
fn quantization_and_cpu_access_survive() {
    let mut t =
        TensorDyn::with_cpu_access(&[4, 3], DType::I8, CpuAccess::Read, Some(TensorMemory::Shm), None)
            .unwrap();
    let q = Quantization::per_channel(1, vec![0.5, 0.25, 2.0], vec![-3, 0, 7]).unwrap();
    t.set_quantization(Some(q.clone()));
    for mode in [TransportMode::Inline, TransportMode::Reference] {
        let u = blob::import(&blob::export(&t, mode).unwrap()).unwrap();
        assert_eq!(u.quantization(), Some(&q), "{mode:?}");
        assert_eq!(u.cpu_access(), CpuAccess::Read, "{mode:?}");
        assert!(matches!(u.map_with::<u8>(CpuAccess::Write), Err(Error::CpuAccessDenied { .. })));
    }
    t.set_quantization(Some(Quantization::per_tensor(0.125, 9)));
    let u = blob::import(&blob::export(&t, TransportMode::Inline).unwrap()).unwrap();
    assert_eq!(u.quantization(), Some(&Quantization::per_tensor(0.125, 9)));
    // What import would refuse is refused at export, so an exported blob always imports.
    t.set_quantization(Some(Quantization::per_tensor(f32::NAN, 0)));
    assert!(matches!(blob::export(&t, TransportMode::Inline), Err(Error::InvalidArgument(_))));
    let q4 = Quantization::per_channel(1, vec![1.0; 4], vec![0; 4]).unwrap();
    t.set_quantization(Some(q4));
    assert!(matches!(blob::export(&t, TransportMode::Inline), Err(Error::InvalidArgument(_))));
    // A declaration without read access cannot be exported inline: the export would read it.
    let w =
        TensorDyn::with_cpu_access(&[8], DType::U8, CpuAccess::Write, Some(TensorMemory::Mem), None).unwrap();
    assert!(matches!(blob::export(&w, TransportMode::Inline), Err(Error::CpuAccessDenied { .. })));
}

#[test]
fn reference_mode_borrows_on_export_and_dups_on_import() {
    let t = TensorDyn::new(&[16, 16], DType::U16, Some(TensorMemory::Shm), None).unwrap();
    fill(&t, 1);
    let b = blob::export(&t, TransportMode::Reference).unwrap();
    use std::os::fd::AsRawFd;
    let rec = record_at(&b, 0);
    assert_eq!(u64_at(&b, rec + plane::HANDLE) as i64, i64::from(t.fd().unwrap().as_raw_fd()), "its own fd");
    assert_eq!(word(&b, header::PID), std::process::id());
    assert_eq!(word(&b, header::STORAGE_KIND), TensorMemory::Shm.code());
    let u = blob::import(&b).unwrap();
    assert_ne!(u.fd().unwrap().as_raw_fd(), t.fd().unwrap().as_raw_fd(), "a dup");
    assert_eq!(inode(u.fd().unwrap()), inode(t.fd().unwrap()), "the same buffer");
    assert_eq!(bytes_of(&u), bytes_of(&t));
    // The same buffer: a write through the import shows in the source.
    u.map_with::<u16>(CpuAccess::ReadWrite).unwrap().as_mut_slice().unwrap()[0] = 0xbeef;
    assert_eq!(t.map_with::<u16>(CpuAccess::Read).unwrap()[0], 0xbeef);
    // Re-exporting the import gives the same blob but for the handle (a dup of the same file).
    let again = blob::export(&u, TransportMode::Reference).unwrap();
    let (mut x, mut y) = (b.clone(), again.clone());
    x[rec..rec + 8].fill(0);
    y[rec..rec + 8].fill(0);
    assert_eq!(x, y);
    // The source may die: the import holds its own fd.
    let before = bytes_of(&u);
    let source = inode(t.fd().unwrap());
    drop(t);
    assert_eq!(bytes_of(&u), before);
    // ...but the blob borrowed the source's fd, which is closed now. Tests run on parallel threads,
    // so the number may already name another test's object: then the import is of that object
    // (a reference blob is only good while its producer keeps the fd), never of the dropped one.
    match blob::import(&b) {
        Err(_) => {}
        Ok(other) => assert_ne!(inode(other.fd().unwrap()), source, "a closed fd imported as the old buffer"),
    }
}

#[test]
fn reference_export_of_heap_memory_is_refused() {
    let t = TensorDyn::new(&[64], DType::F32, Some(TensorMemory::Mem), None).unwrap();
    let e = blob::export(&t, TransportMode::Reference).unwrap_err();
    assert!(matches!(e, Error::InvalidOperation(_)), "{e}");
    assert!(e.to_string().contains("inline"), "{e}");
    assert!(blob::export(&t, TransportMode::Inline).is_ok());
}

#[test]
fn a_batch_is_refused_and_its_elements_are_not() {
    let t = TensorDyn::image_desc(
        &ImageDesc::new(8, 4, PixelFormat::Rgb).with_memory(TensorMemory::Mem).with_batch(3),
    )
    .unwrap();
    fill(&t, 3);
    for mode in [TransportMode::Inline, TransportMode::Reference] {
        assert!(matches!(blob::export(&t, mode), Err(Error::InvalidOperation(_))), "{mode:?}");
    }
    let e1 = t.batch(1).unwrap();
    let u = blob::import(&blob::export(&e1, TransportMode::Inline).unwrap()).unwrap();
    assert_eq!(content(&u), content(&e1));
    assert!(u.batch_len().is_none() && !u.is_view());
}

#[test]
fn images_keep_format_size_stride_and_colorimetry() {
    // Padded row stride on both backings, and every layout family.
    let cases: &[(PixelFormat, DType, usize, usize, Option<usize>)] = &[
        (PixelFormat::Rgb, DType::U8, 37, 11, Some(128)),
        (PixelFormat::Rgba, DType::U8, 5, 3, None),
        (PixelFormat::Gray8, DType::U8, 33, 7, Some(40)),
        (PixelFormat::PlanarRgb, DType::F32, 9, 5, Some(48)),
        (PixelFormat::Yuy2, DType::U8, 7, 5, Some(32)),
        (PixelFormat::I420, DType::U8, 11, 7, Some(16)),
        (PixelFormat::Nv16, DType::U8, 20, 6, None),
        (PixelFormat::H264, DType::U8, 1000, 1, None),
    ];
    for &(f, dtype, w, h, rs) in cases {
        for memory in [TensorMemory::Mem, TensorMemory::Shm] {
            let mut d = ImageDesc::new(w, h, f).with_dtype(dtype).with_memory(memory);
            if let Some(rs) = rs {
                d = d.with_row_stride(rs);
            }
            let mut t = TensorDyn::image_desc(&d).unwrap();
            fill(&t, w as u64);
            t.set_colorimetry(Some(Colorimetry::BT709_FULL));
            let modes: &[TransportMode] = if memory == TensorMemory::Shm {
                &[TransportMode::Inline, TransportMode::Reference]
            } else {
                &[TransportMode::Inline]
            };
            for &mode in modes {
                let b = blob::export(&t, mode).unwrap();
                assert_eq!(word(&b, header::PLANE_COUNT) as usize, f.num_planes());
                let u = blob::import(&b).unwrap();
                let what = format!("{} {dtype} {w}x{h} rs {rs:?} {memory} {mode:?}", f.name());
                assert_eq!(u.format(), Some(f), "{what}");
                assert_eq!((u.width(), u.height()), (Some(w), Some(h)), "{what}");
                assert_eq!(u.row_stride(), t.row_stride(), "{what}");
                assert_eq!(u.shape(), t.shape(), "{what}");
                assert_eq!(u.byte_strides(), t.byte_strides(), "{what}");
                assert_eq!(u.colorimetry(), Some(Colorimetry::BT709_FULL), "{what}");
                assert_eq!(content(&u), content(&t), "{what}");
            }
        }
    }
}

#[test]
fn nv12_in_one_buffer_round_trips_in_both_modes() {
    let t = image(64, 48, PixelFormat::Nv12, DType::U8, TensorMemory::Shm);
    fill(&t, 12);
    let b = blob::export(&t, TransportMode::Reference).unwrap();
    assert_eq!(word(&b, header::PLANE_COUNT), 2);
    let (r0, r1) = (record_at(&b, 0), record_at(&b, 1));
    assert_eq!(u64_at(&b, r0 + plane::HANDLE), u64_at(&b, r1 + plane::HANDLE), "one buffer");
    assert_eq!(u64_at(&b, r1 + plane::OFFSET), 64 * 48, "chroma follows luma");
    let u = blob::import(&b).unwrap();
    assert!(!u.is_multiplane());
    assert_eq!(inode(u.fd().unwrap()), inode(t.fd().unwrap()));
    assert_eq!(u.plane_table(), t.plane_table());
    assert_eq!(content(&u), content(&t));
    let i = blob::import(&blob::export(&t, TransportMode::Inline).unwrap()).unwrap();
    assert_eq!(content(&i), content(&t));
    assert_eq!(i.row_stride(), Some(64));
}

/// Luma and chroma in separate memfds, chroma at a wider pitch than luma.
fn two_fd_nv12(memory: TensorMemory) -> TensorDyn {
    let luma = image(64, 48, PixelFormat::Gray8, DType::U8, memory);
    let chroma = TensorDyn::image_desc(
        &ImageDesc::new(64, 24, PixelFormat::Gray8).with_memory(memory).with_row_stride(128),
    )
    .unwrap();
    let t = TensorDyn::from_planes(&luma, &chroma, PixelFormat::Nv12).unwrap();
    fill(&t, 77);
    t
}

#[test]
fn nv12_from_two_fds_round_trips_in_both_modes() {
    let t = two_fd_nv12(TensorMemory::Shm);
    let chroma = t.chroma().unwrap();
    let b = blob::export(&t, TransportMode::Reference).unwrap();
    assert_eq!(word(&b, header::PLANE_COUNT), 2);
    let (r0, r1) = (record_at(&b, 0), record_at(&b, 1));
    assert_ne!(u64_at(&b, r0 + plane::HANDLE), u64_at(&b, r1 + plane::HANDLE), "each plane its own fd");
    assert_eq!(u64_at(&b, r1 + plane::STRIDE), 128);
    let u = blob::import(&b).unwrap();
    assert!(u.is_multiplane());
    assert_eq!(inode(u.fd().unwrap()), inode(t.fd().unwrap()));
    assert_eq!(inode(u.chroma().unwrap().fd().unwrap()), inode(chroma.fd().unwrap()));
    assert_eq!(content(&u), content(&t));
    let i = blob::import(&blob::export(&t, TransportMode::Inline).unwrap()).unwrap();
    assert!(!i.is_multiplane(), "inline is rebuilt in one new buffer");
    assert_eq!(content(&i), content(&t));
    // Heap planes have no fd: inline only.
    let m = two_fd_nv12(TensorMemory::Mem);
    assert!(blob::export(&m, TransportMode::Reference).is_err());
    assert_eq!(
        content(&blob::import(&blob::export(&m, TransportMode::Inline).unwrap()).unwrap()),
        content(&m)
    );
}

#[test]
fn a_view_exports_inline_as_its_window_and_refuses_reference() {
    let t = image(40, 30, PixelFormat::Rgb, DType::U8, TensorMemory::Shm);
    fill(&t, 5);
    let v = t.view(Region { x: 3, y: 4, width: 10, height: 6 }).unwrap();
    assert!(matches!(blob::export(&v, TransportMode::Reference), Err(Error::InvalidOperation(_))));
    let b = blob::export(&v, TransportMode::Inline).unwrap();
    let u = blob::import(&b).unwrap();
    assert_eq!((u.width(), u.height()), (Some(10), Some(6)));
    assert_eq!(content(&u), content(&v));
    // Only the window travels, at its own pitch, not the parent's rows in between.
    assert_eq!(u64_at(&b, record_at(&b, 0) + plane::SIZE), 30 * 6);
    let nv = image(32, 16, PixelFormat::Nv12, DType::U8, TensorMemory::Mem);
    fill(&nv, 6);
    let nvv = nv.view(Region { x: 8, y: 4, width: 16, height: 8 }).unwrap();
    assert_eq!(
        content(&blob::import(&blob::export(&nvv, TransportMode::Inline).unwrap()).unwrap()),
        content(&nvv)
    );
    let p = TensorDyn::new(&[4, 8], DType::F32, Some(TensorMemory::Shm), None).unwrap();
    fill(&p, 8);
    let row = p.batch(2).unwrap();
    assert!(blob::export(&row, TransportMode::Reference).is_err());
    let u = blob::import(&blob::export(&row, TransportMode::Inline).unwrap()).unwrap();
    assert_eq!(bytes_of(&u), bytes_of(&row));
}

#[test]
fn required_mask_is_checked_before_anything_else() {
    let t = TensorDyn::new(&[4], DType::U8, Some(TensorMemory::Mem), None).unwrap();
    let mut b = blob::export(&t, TransportMode::Inline).unwrap();
    b[header::REQUIRED_MASK] = 1;
    b[header::MAGIC..header::MAGIC + 4].copy_from_slice(b"XXXX");
    b[header::TOTAL_LEN] ^= 0xff;
    assert!(matches!(blob::import(&b), Err(Error::UnsupportedRequired { mask: 1, supported: 0 })));
    for bit in 0..64 {
        let mut c = blob::export(&t, TransportMode::Inline).unwrap();
        c[header::REQUIRED_MASK..header::REQUIRED_MASK + 8].copy_from_slice(&(1u64 << bit).to_le_bytes());
        assert!(matches!(blob::import(&c), Err(Error::UnsupportedRequired { .. })), "bit {bit}");
    }
}

#[test]
fn strings_are_utf8_and_known() {
    let t = image(8, 8, PixelFormat::Rgb, DType::U8, TensorMemory::Mem);
    let b = blob::export(&t, TransportMode::Inline).unwrap();
    let format_at = strings_at(&b);
    assert_eq!(&b[format_at..format_at + 4], &3u32.to_le_bytes());
    let mut bad = b.clone();
    bad[format_at + 4] = 0xff;
    match blob::import(&bad) {
        Err(Error::MalformedBlob { field: "format", reason }) => {
            assert!(reason.contains("UTF-8"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    let mut unknown = b.clone();
    unknown[format_at + 4..format_at + 7].copy_from_slice(b"RGX");
    assert!(matches!(blob::import(&unknown), Err(Error::MalformedBlob { field: "format", .. })));
}

#[test]
fn frame_len_cuts_a_stream() {
    let a = TensorDyn::new(&[3], DType::U8, Some(TensorMemory::Mem), None).unwrap();
    let b = image(4, 2, PixelFormat::Gray8, DType::U8, TensorMemory::Mem);
    fill(&a, 1);
    fill(&b, 2);
    let mut stream = blob::export(&a, TransportMode::Inline).unwrap();
    stream.extend(blob::export(&b, TransportMode::Inline).unwrap());
    assert_eq!(blob::frame_len(&stream[..7]).unwrap(), None);
    let n = blob::frame_len(&stream).unwrap().unwrap();
    let first = blob::import(&stream[..n]).unwrap();
    let second = blob::import(&stream[n..n + blob::frame_len(&stream[n..]).unwrap().unwrap()]).unwrap();
    assert_eq!(bytes_of(&first), bytes_of(&a));
    assert_eq!(content(&second), content(&b));
    assert!(blob::frame_len(&5u64.to_le_bytes()).is_err());
}

/// Blobs covering both modes, plain and image, one and two records, quantized and not.
fn base_blobs() -> Vec<(&'static str, Vec<u8>, Vec<TensorDyn>)> {
    let mut plain = TensorDyn::new(&[3, 5, 7], DType::F32, Some(TensorMemory::Mem), None).unwrap();
    plain.set_quantization(Some(Quantization::per_tensor(0.5, 3)));
    fill(&plain, 9);
    // f32, so no other dtype has the same element size and a dtype swap is always detectable.
    let rgb = TensorDyn::image_desc(
        &ImageDesc::new(13, 7, PixelFormat::Rgb)
            .with_dtype(DType::F32)
            .with_memory(TensorMemory::Shm)
            .with_row_stride(192),
    )
    .unwrap();
    fill(&rgb, 10);
    let mut nv12 = image(16, 8, PixelFormat::Nv12, DType::U8, TensorMemory::Mem);
    nv12.set_colorimetry(Some(Colorimetry::BT601_LIMITED));
    fill(&nv12, 11);
    let two = two_fd_nv12(TensorMemory::Shm);
    vec![
        ("inline f32 plain", blob::export(&plain, TransportMode::Inline).unwrap(), vec![plain]),
        ("reference rgb", blob::export(&rgb, TransportMode::Reference).unwrap(), vec![rgb]),
        ("inline nv12", blob::export(&nv12, TransportMode::Inline).unwrap(), vec![nv12]),
        ("reference two-fd nv12", blob::export(&two, TransportMode::Reference).unwrap(), vec![two]),
    ]
}

fn fd_is_open(n: u32) -> bool {
    i32::try_from(n).is_ok_and(|fd| unsafe { libc::fcntl(fd, libc::F_GETFD) } >= 0)
}

fn import_no_panic(b: &[u8]) -> Result<edgefirst_tensor::Result<TensorDyn>, String> {
    catch_unwind(AssertUnwindSafe(|| blob::import(b))).map_err(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })
}

/// Set every 4-byte word in `words` (offsets) to each hostile value and require `Err`.
fn blanket(name: &str, b: &[u8], words: &[(String, usize)], failures: &mut Vec<String>) {
    let len = b.len() as u32;
    let values = [
        0,
        1,
        2,
        0x7fff_ffff,
        0xffff_ffff,
        0x8000_0000,
        0xffff_fffe,
        len,
        len - 1,
        len + 1,
        len / 2,
        len.wrapping_mul(8),
        HEADER_LEN as u32,
        PLANE_RECORD_LEN as u32,
        0x0001_0000,
    ];
    for (what, at) in words {
        let orig = word(b, *at);
        for &v in &values {
            // A handle word set to an fd this process really has open names a real buffer.
            if v == orig || (what.contains("handle") && fd_is_open(v)) {
                continue;
            }
            let mut m = b.to_vec();
            set_word(&mut m, *at, v);
            match import_no_panic(&m) {
                Err(p) => failures.push(format!("{name}: {what} = {v:#x}: PANIC {p}")),
                Ok(Ok(_)) => failures.push(format!("{name}: {what} = {v:#x}: accepted")),
                Ok(Err(_)) => {}
            }
        }
    }
}

#[test]
fn every_header_word_with_hostile_values_is_an_error() {
    let mut failures = Vec::new();
    for (name, b, _keep) in base_blobs() {
        let words: Vec<(String, usize)> =
            (0..HEADER_LEN / 4).map(|i| (format!("header word {i}"), 4 * i)).collect();
        blanket(name, &b, &words, &mut failures);
    }
    assert!(
        failures.is_empty(),
        "{} hostile header words not refused:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_plane_record_word_with_hostile_values_is_an_error() {
    let mut failures = Vec::new();
    for (name, b, _keep) in base_blobs() {
        let names = [
            "handle lo",
            "handle hi",
            "offset lo",
            "offset hi",
            "stride lo",
            "stride hi",
            "size lo",
            "size hi",
        ];
        let names2 = ["used lo", "used hi", "modifier lo", "modifier hi", "handle_bytes_len", "data_len"];
        let mut words = Vec::new();
        for r in 0..word(&b, header::PLANE_COUNT) as usize {
            let at = record_at(&b, r);
            for (i, n) in names.iter().chain(&names2).enumerate() {
                words.push((format!("record {r} {n}"), at + 4 * i));
            }
        }
        assert!(!words.is_empty());
        blanket(name, &b, &words, &mut failures);
    }
    assert!(
        failures.is_empty(),
        "{} hostile record words not refused:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_truncation_is_an_error() {
    for (name, b, _keep) in base_blobs() {
        assert!(blob::import(&b).is_ok(), "{name} imports whole");
        for n in 0..b.len() {
            let cut = &b[..n];
            assert!(matches!(import_no_panic(cut), Ok(Err(_))), "{name} cut at {n}");
            // Also with the size prefix claiming the cut length, so the region checks are reached.
            if n >= 8 {
                let mut c = cut.to_vec();
                c[..8].copy_from_slice(&(n as u64).to_le_bytes());
                assert!(matches!(import_no_panic(&c), Ok(Err(_))), "{name} cut at {n}, total_len patched");
            }
        }
    }
}

#[test]
fn bounded_mutation_fuzz() {
    let cases: usize =
        std::env::var("EDGEFIRST_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000);
    let bases = base_blobs();
    let started = std::time::Instant::now();
    let mut rng = Rng(0x5eed);
    let (mut accepted, mut refused) = (0usize, 0usize);
    let mut reasons = BTreeMap::new();
    for case in 0..cases {
        let (name, base, _) = &bases[rng.below(bases.len())];
        let mut m = base.clone();
        for _ in 0..1 + rng.below(4) {
            let len = m.len();
            match rng.below(6) {
                0 => {
                    let i = rng.below(len);
                    m[i] ^= 1 << rng.below(8);
                }
                1 => {
                    let i = rng.below(len);
                    m[i] = rng.next() as u8;
                }
                2 => {
                    // Splice: copy a run of the blob over another place in it.
                    let n = 1 + rng.below(16);
                    let (from, to) = (rng.below(len), rng.below(len));
                    let run: Vec<u8> = m[from..(from + n).min(len)].to_vec();
                    let end = (to + run.len()).min(len);
                    m[to..end].copy_from_slice(&run[..end - to]);
                }
                3 => {
                    // A length or count field set to something plausible or hostile.
                    let fields = [0, 16, 48, 52, 56, 60, 68];
                    let at = fields[rng.below(fields.len())];
                    let v = [0, 1, 2, 7, 56, 72, len as u32, u32::MAX, rng.next() as u32][rng.below(9)];
                    if at + 4 > len {
                        continue;
                    }
                    if at == 68 {
                        m[at..at + 2].copy_from_slice(&(v as u16).to_le_bytes());
                    } else {
                        set_word(&mut m, at, v);
                    }
                }
                4 => {
                    let keep = rng.below(len);
                    m.truncate(keep.max(1));
                }
                _ => {
                    let n = rng.below(32);
                    let at = rng.below(len);
                    let extra: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                    m.splice(at..at, extra);
                }
            }
        }
        // Half the time the size prefix agrees with the mutated length, so parsing goes deeper.
        if rng.below(2) == 0 && m.len() >= 8 {
            let n = m.len() as u64;
            m[..8].copy_from_slice(&n.to_le_bytes());
        }
        match import_no_panic(&m) {
            Err(p) => panic!("case {case} ({name}): import panicked: {p}"),
            Ok(Err(e)) => {
                refused += 1;
                let why = match &e {
                    Error::MalformedBlob { field, .. } => field.to_string(),
                    other => format!("{other:?}").split([' ', '(', '{']).next().unwrap_or("").to_string(),
                };
                *reasons.entry(why).or_insert(0usize) += 1;
            }
            Ok(Ok(t)) => {
                accepted += 1;
                // Whatever was accepted must be a coherent tensor: it exports and re-imports.
                if t.cpu_access().can_read() {
                    let again = blob::export(&t, TransportMode::Inline).unwrap_or_else(|e| {
                        panic!("case {case} ({name}): accepted tensor does not export: {e}")
                    });
                    blob::import(&again)
                        .unwrap_or_else(|e| panic!("case {case} ({name}): its export does not import: {e}"));
                }
            }
        }
    }
    println!(
        "fuzz: {cases} cases in {:.2?}: {refused} refused, {accepted} accepted; refused by {reasons:?}",
        started.elapsed()
    );
    assert_eq!(accepted + refused, cases);
}
