//! Blobs written straight from bytes (`export_dense`, what a GStreamer buffer or a C array
//! exports through) and the tagged regions a producer appends after the plane records.

use edgefirst_tensor::blob::{self, header, TransportMode, APPENDED_HEADER_LEN};
use edgefirst_tensor::preprocess::Quantization;
use edgefirst_tensor::{CpuAccess, DType, Error, TensorDyn, TensorMemory};
use std::panic::{catch_unwind, AssertUnwindSafe};

fn filled(shape: &[usize], dtype: DType, seed: u8) -> TensorDyn {
    let t = TensorDyn::new(shape, dtype, Some(TensorMemory::Mem), None).unwrap();
    let mut m = t.map_with::<u8>(CpuAccess::ReadWrite).unwrap();
    for (i, b) in m.as_mut_slice().unwrap().iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(31).wrapping_add(seed);
    }
    drop(m);
    t
}

fn bytes_of(t: &TensorDyn) -> Vec<u8> {
    t.map_with::<u8>(CpuAccess::Read).unwrap().to_vec()
}

fn set_total(b: &mut [u8]) {
    let n = b.len() as u64;
    b[header::TOTAL_LEN..header::TOTAL_LEN + 8].copy_from_slice(&n.to_le_bytes());
}

#[test]
fn export_dense_writes_the_blob_export_writes() {
    let quants = [
        None,
        Some(Quantization::per_tensor(0.5, 3)),
        Some(Quantization::per_channel(2, vec![0.25; 7], vec![1; 7]).unwrap()),
    ];
    for (k, &dtype) in DType::ALL.iter().enumerate() {
        for q in &quants {
            let mut t = filled(&[3, 5, 7], dtype, k as u8);
            t.set_quantization(q.clone());
            let from_tensor = blob::export(&t, TransportMode::Inline).unwrap();
            let from_bytes = blob::export_dense(&[3, 5, 7], dtype, q.as_ref(), &bytes_of(&t)).unwrap();
            assert_eq!(from_bytes, from_tensor, "{dtype} {q:?}");
        }
    }
    // Rank 0 and a zero dimension are tensors too.
    let t = filled(&[], DType::F32, 1);
    assert_eq!(
        blob::export_dense(&[], DType::F32, None, &bytes_of(&t)).unwrap(),
        blob::export(&t, TransportMode::Inline).unwrap()
    );
    let z = blob::export_dense(&[4, 0, 3], DType::U16, None, &[]).unwrap();
    assert_eq!(blob::import(&z).unwrap().shape(), &[4, 0, 3]);
}

#[test]
fn export_dense_refuses_what_it_cannot_describe() {
    let e = blob::export_dense(&[2, 3], DType::F32, None, &[0; 23]).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    assert!(e.to_string().contains("23 bytes"), "{e}");
    // A shape whose byte count overflows is a length mismatch, not an overflow panic.
    assert!(blob::export_dense(&[usize::MAX, 2], DType::U8, None, &[]).is_err());
    // What import would refuse (a NaN scale, a scale table of the wrong length) is refused here.
    let nan = Quantization::per_tensor(f32::NAN, 0);
    assert!(blob::export_dense(&[4], DType::I8, Some(&nan), &[0; 4]).is_err());
    let wrong = Quantization::per_channel(0, vec![1.0; 3], vec![0; 3]).unwrap();
    assert!(blob::export_dense(&[4], DType::I8, Some(&wrong), &[0; 4]).is_err());
}

#[test]
fn appended_regions_round_trip_and_readers_skip_them() {
    let t = filled(&[2, 9], DType::U8, 5);
    let plain = blob::export(&t, TransportMode::Inline).unwrap();
    assert!(blob::appended_regions(&plain).unwrap().is_empty());
    let mut b = plain.clone();
    blob::append_region(&mut b, *b"GSTM", b"caps and times").unwrap();
    blob::append_region(&mut b, *b"XTRA", &[1, 2, 3]).unwrap();
    blob::append_region(&mut b, *b"NONE", &[]).unwrap();
    assert_eq!(b.len() % 8, 0);
    assert_eq!(blob::frame_len(&b).unwrap(), Some(b.len()), "total_len follows the appends");
    let regions = blob::appended_regions(&b).unwrap();
    assert_eq!(
        regions,
        vec![(*b"GSTM", &b"caps and times"[..]), (*b"XTRA", &[1u8, 2, 3][..]), (*b"NONE", &[][..])]
    );
    // A reader that knows nothing of them imports the same tensor.
    let u = blob::import(&b).unwrap();
    assert_eq!((u.shape(), bytes_of(&u)), (t.shape(), bytes_of(&t)));
    // Appending needs a finished blob.
    assert!(blob::append_region(&mut vec![0; 12], *b"GSTM", &[]).is_err());
}

#[test]
fn hostile_appended_regions_are_errors_never_panics() {
    let t = filled(&[4, 4], DType::U8, 9);
    let mut b = blob::export(&t, TransportMode::Inline).unwrap();
    let records_end = b.len();
    blob::append_region(&mut b, *b"GSTM", &[7; 13]).unwrap();
    blob::append_region(&mut b, *b"XTRA", &[8; 8]).unwrap();

    // A length that overruns total_len, and one that overflows when added.
    for len in [17u32, 1000, u32::MAX] {
        let mut x = b.clone();
        x[records_end + 4..records_end + 8].copy_from_slice(&len.to_le_bytes());
        let e = blob::appended_regions(&x).unwrap_err();
        assert!(matches!(e, Error::MalformedBlob { field: "appended", .. }), "{len}: {e}");
    }
    // A non-zero padding byte (the first region's 13 bytes are padded with 3).
    let mut x = b.clone();
    x[records_end + APPENDED_HEADER_LEN + 13] = 1;
    assert!(blob::appended_regions(&x).is_err());
    // Bytes after the last region that are not a region header.
    let mut x = b.clone();
    x.extend_from_slice(&[0; 4]);
    set_total(&mut x);
    assert!(blob::appended_regions(&x).is_err());
    // Every truncation inside the appended area (total_len rewritten to match), and every byte
    // of it set to hostile values: an error or a parse, never a panic, and the import of the
    // tensor itself is unaffected whenever the records are intact.
    for cut in records_end..b.len() {
        let mut x = b[..cut].to_vec();
        set_total(&mut x);
        let r = catch_unwind(AssertUnwindSafe(|| blob::appended_regions(&x).map(|v| v.len())));
        let r = r.unwrap_or_else(|_| panic!("panic at cut {cut}"));
        if cut != records_end {
            assert!(r.is_err() || cut % 8 == 0, "cut {cut}: {r:?}");
        }
        assert!(blob::import(&x).is_ok(), "cut {cut}: the records are intact");
    }
    for at in records_end..b.len() {
        for v in [0x00, 0x01, 0x7f, 0x80, 0xff] {
            let mut x = b.clone();
            x[at] = v;
            catch_unwind(AssertUnwindSafe(|| {
                let _ = blob::appended_regions(&x);
            }))
            .unwrap_or_else(|_| panic!("panic at byte {at} = {v:#x}"));
        }
    }
    // A blob whose records are bad is refused before its regions are looked at.
    let mut x = b.clone();
    x[header::MAGIC] ^= 0xff;
    assert!(matches!(blob::appended_regions(&x), Err(Error::MalformedBlob { field: "magic", .. })));
}

#[test]
fn the_split_blob_goes_around_the_bytes_and_equals_the_whole_one() {
    let regions: [([u8; 4], &[u8]); 2] = [(*b"GSTM", b"caps and times"), (*b"XTRA", &[9; 5])];
    for (k, (shape, dtype)) in [
        (&[3usize, 5, 7][..], DType::U8),
        (&[1, 4, 4, 3][..], DType::F32),
        (&[2, 3][..], DType::F16),
        (&[0, 4][..], DType::I32),
    ]
    .into_iter()
    .enumerate()
    {
        for q in [None, Some(Quantization::per_tensor(0.5, 2))] {
            let t = filled(shape, dtype, k as u8);
            let data = bytes_of(&t);
            let mut whole = blob::export_dense(shape, dtype, q.as_ref(), &data).unwrap();
            for (tag, b) in &regions {
                blob::append_region(&mut whole, *tag, b).unwrap();
            }
            let (head, tail) =
                blob::export_dense_split(shape, dtype, q.as_ref(), data.len(), &regions).unwrap();
            let joined = [head.clone(), data.clone(), tail].concat();
            assert_eq!(joined, whole, "{shape:?} {dtype} {q:?}");
            // The view reads it in place: the bytes right after the head.
            let v = blob::dense_view(&joined).unwrap();
            assert_eq!(
                (v.shape.as_slice(), v.dtype, v.data_offset, v.data),
                (shape, dtype, head.len(), &data[..])
            );
            assert_eq!(v.quantization, q);
        }
    }
    assert!(blob::export_dense_split(&[2, 2], DType::F32, None, 15, &[]).is_err());
}

#[test]
fn a_dense_view_checks_what_import_checks() {
    let t = filled(&[4, 6], DType::U16, 3);
    let b = blob::export(&t, TransportMode::Inline).unwrap();
    let v = blob::dense_view(&b).unwrap();
    assert_eq!(v.data, &bytes_of(&t)[..]);
    assert_eq!(v.cpu_access, t.cpu_access());
    // Every single-byte corruption: the view refuses exactly what import refuses.
    for at in 0..b.len() {
        for x in [0x01u8, 0x80, 0xff] {
            let mut m = b.clone();
            m[at] ^= x;
            let (iv, ii) = (blob::dense_view(&m).is_ok(), blob::import(&m).is_ok());
            assert_eq!(iv, ii, "byte {at} ^ {x:#x}: view {iv}, import {ii}");
        }
    }
    // An image or a reference blob is not viewed.
    let img = TensorDyn::image(
        4,
        2,
        edgefirst_tensor::PixelFormat::Gray8,
        DType::U8,
        CpuAccess::ReadWrite,
        Some(TensorMemory::Mem),
    )
    .unwrap();
    assert!(blob::dense_view(&blob::export(&img, TransportMode::Inline).unwrap()).is_err());
    let shm = TensorDyn::new(&[8], DType::U8, Some(TensorMemory::Shm), None).unwrap();
    assert!(blob::dense_view(&blob::export(&shm, TransportMode::Reference).unwrap()).is_err());
}
