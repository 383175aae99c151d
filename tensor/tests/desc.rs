//! `TensorDesc` and the registry's generations: round trips per memory kind, access never
//! widened, stale descriptors refused, ABA-safe slot reuse, view/materialize identities,
//! concurrency, and hostile descriptors.

use edgefirst_tensor::desc::{
    self, dtype_code, flags, format_code, Key, Registry, Status, TensorDesc, DESC_VERSION, MAX_DIMS,
};
use edgefirst_tensor::{CpuAccess, DType, Error, ImageDesc, PixelFormat, Region, TensorDyn, TensorMemory};
use std::mem::{align_of, offset_of, size_of};
use std::panic::{catch_unwind, AssertUnwindSafe};

fn fill(t: &TensorDyn, seed: u8) {
    let mut m = t.map_with::<u8>(CpuAccess::ReadWrite).unwrap();
    for (i, b) in m.as_mut_slice().unwrap().iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(31).wrapping_add(seed);
    }
}

fn bytes_of(t: &TensorDyn) -> Vec<u8> {
    t.map_with::<u8>(CpuAccess::Read).unwrap().to_vec()
}

const HOST_KINDS: [TensorMemory; 2] = [TensorMemory::Mem, TensorMemory::Shm];

#[test]
fn layout_is_the_c_layout() {
    assert_eq!(size_of::<TensorDesc>(), 200);
    assert_eq!(align_of::<TensorDesc>(), 8);
    let offsets = [
        (offset_of!(TensorDesc, generation), 0),
        (offset_of!(TensorDesc, handle), 8),
        (offset_of!(TensorDesc, offset), 16),
        (offset_of!(TensorDesc, size), 24),
        (offset_of!(TensorDesc, shape), 32),
        (offset_of!(TensorDesc, strides), 96),
        (offset_of!(TensorDesc, slot), 160),
        (offset_of!(TensorDesc, kind), 164),
        (offset_of!(TensorDesc, dtype), 168),
        (offset_of!(TensorDesc, ndim), 172),
        (offset_of!(TensorDesc, flags), 176),
        (offset_of!(TensorDesc, format), 180),
        (offset_of!(TensorDesc, width), 184),
        (offset_of!(TensorDesc, height), 188),
        (offset_of!(TensorDesc, pid), 192),
        (offset_of!(TensorDesc, version), 196),
    ];
    for (i, (got, want)) in offsets.into_iter().enumerate() {
        assert_eq!(got, want, "field {i}");
    }
    // Codes are recorded by other builds: pinned, and kind codes are TensorMemory's.
    let dtypes = [DType::U8, DType::I8, DType::U16, DType::I16, DType::U32, DType::I32];
    for (c, d) in
        dtypes.into_iter().chain([DType::U64, DType::I64, DType::F16, DType::F32, DType::F64]).enumerate()
    {
        assert_eq!(dtype_code(d), c as u32, "{d}");
        assert_eq!(desc::dtype_from_code(c as u32), Some(d));
    }
    assert_eq!(desc::dtype_from_code(11), None);
    for (i, &f) in PixelFormat::ALL.iter().enumerate() {
        assert_eq!(format_code(f), i as u32 + 1, "{f:?}");
        assert_eq!(desc::format_from_code(i as u32 + 1), Some(f));
    }
    assert_eq!(desc::format_from_code(0), None, "0 is 'not an image'");
    let t = TensorDyn::new(&[1], DType::U8, Some(TensorMemory::Shm), None).unwrap();
    assert_eq!(t.descriptor().unwrap().kind, TensorMemory::Shm.code());
}

#[test]
fn round_trip_for_each_host_memory_kind() {
    for memory in HOST_KINDS {
        let t = TensorDyn::new(&[4, 6, 5], DType::I16, Some(memory), None).unwrap();
        fill(&t, 1);
        let d = t.descriptor().unwrap();
        assert_eq!((d.kind, d.ndim, d.dtype), (memory.code(), 3, dtype_code(DType::I16)));
        assert_eq!(&d.shape[..4], &[4, 6, 5, 0]);
        assert_eq!(&d.strides[..3], &[60, 10, 2], "bytes, from byte_strides");
        assert_eq!(d.handle == -1, memory == TensorMemory::Mem);
        assert_eq!(d.size, 240);
        assert_eq!(t.descriptor().unwrap(), d, "one buffer, one registration");
        let u = TensorDyn::import_descriptor(&d).unwrap();
        assert_eq!(u.buffer_identity().id(), t.buffer_identity().id(), "{memory}: an alias, not a copy");
        assert_eq!((u.shape(), u.dtype(), u.memory()), (t.shape(), t.dtype(), memory));
        assert_eq!(bytes_of(&u), bytes_of(&t));
        u.map_with::<u8>(CpuAccess::ReadWrite).unwrap().as_mut_slice().unwrap()[7] = 0xa5;
        assert_eq!(bytes_of(&t)[7], 0xa5);
        assert_eq!(u.descriptor().unwrap(), d, "the alias describes the same buffer the same way");
    }
}

#[test]
fn images_carry_the_allocation_shape_and_pitch() {
    let t = TensorDyn::image_desc(
        &ImageDesc::new(30, 11, PixelFormat::Nv12).with_memory(TensorMemory::Shm).with_row_stride(64),
    )
    .unwrap();
    fill(&t, 2);
    let d = t.descriptor().unwrap();
    assert_eq!((d.format, d.width, d.height), (format_code(PixelFormat::Nv12), 30, 11));
    assert_eq!(&d.shape[..2], &[17, 30], "allocation shape: 11 luma + 6 chroma rows");
    assert_eq!(&d.strides[..2], &[64, 1]);
    let u = TensorDyn::import_descriptor(&d).unwrap();
    assert_eq!(
        (u.format(), u.width(), u.height(), u.row_stride()),
        (Some(PixelFormat::Nv12), Some(30), Some(11), Some(64))
    );
    assert_eq!(u.plane_table(), t.plane_table());
    assert_eq!(bytes_of(&u), bytes_of(&t));
    // A batch and a planar float image.
    let b = TensorDyn::image_desc(
        &ImageDesc::new(5, 4, PixelFormat::PlanarRgb)
            .with_dtype(DType::F32)
            .with_memory(TensorMemory::Mem)
            .with_batch(3),
    )
    .unwrap();
    let bd = b.descriptor().unwrap();
    assert_ne!(bd.flags & flags::BATCHED, 0);
    assert_eq!(&bd.shape[..4], &[3, 3, 4, 5]);
    assert_eq!(&bd.strides[..4], &b.byte_strides()[..].iter().map(|&s| s as i64).collect::<Vec<_>>()[..]);
    let bu = TensorDyn::import_descriptor(&bd).unwrap();
    assert_eq!(bu.batch_len(), Some(3));
    assert_eq!(bu.batch(2).unwrap().byte_offset(), b.batch(2).unwrap().byte_offset());
}

#[test]
fn an_alias_never_widens_its_producers_access() {
    for memory in HOST_KINDS {
        let t = TensorDyn::with_cpu_access(&[64], DType::U8, CpuAccess::Read, Some(memory), None).unwrap();
        let d = t.descriptor().unwrap();
        assert_eq!(
            d.flags & (flags::CPU_ACCESS_DECLARED | flags::CPU_READ | flags::CPU_WRITE),
            flags::CPU_ACCESS_DECLARED | flags::CPU_READ
        );
        for wider in [CpuAccess::Write, CpuAccess::ReadWrite] {
            let e = TensorDyn::import_descriptor_with_access(&d, wider).unwrap_err();
            assert!(
                matches!(e, Error::CpuAccessDenied { declared: CpuAccess::Read, .. }),
                "{memory} {wider:?}: {e}"
            );
            assert_eq!(Status::of(&e), Status::AccessDenied);
        }
        let narrower = TensorDyn::import_descriptor_with_access(&d, CpuAccess::None).unwrap();
        assert!(narrower.map_with::<u8>(CpuAccess::Read).is_err(), "narrowing is allowed and sticks");
        let alias = TensorDyn::import_descriptor(&d).unwrap();
        assert_eq!(alias.cpu_access(), CpuAccess::Read);
        assert!(matches!(alias.map_with::<u8>(CpuAccess::Write), Err(Error::CpuAccessDenied { .. })));
        // The alias's own descriptor carries the same declaration: nothing widens in a chain.
        let again = alias.descriptor().unwrap();
        assert_eq!(again.cpu_access(), CpuAccess::Read);
        assert!(TensorDyn::import_descriptor_with_access(&again, CpuAccess::ReadWrite).is_err());
        // A None-declared producer's descriptor refuses every CPU access on its aliases.
        let none = TensorDyn::with_cpu_access(&[8], DType::U8, CpuAccess::None, Some(memory), None).unwrap();
        let nd = none.descriptor().unwrap();
        assert!(TensorDyn::import_descriptor_with_access(&nd, CpuAccess::Read).is_err());
    }
}

#[test]
fn a_descriptor_of_a_dropped_tensor_is_stale() {
    for memory in HOST_KINDS {
        let t = TensorDyn::new(&[32], DType::F32, Some(memory), None).unwrap();
        let d = t.descriptor().unwrap();
        drop(t);
        let e = TensorDyn::import_descriptor(&d).unwrap_err();
        assert!(
            matches!(e, Error::StaleGeneration { slot, expected, current } if slot == d.slot && expected == d.generation && current > expected),
            "{memory}: {e}"
        );
        assert_eq!(Status::of(&e), Status::StaleGeneration);
        // Still stale however often it is asked, and whatever took the slot since.
        assert!(matches!(TensorDyn::import_descriptor(&d), Err(Error::StaleGeneration { .. })));
    }
    // A clone keeps the buffer alive, so the descriptor stays good until the last one goes.
    let t = TensorDyn::new(&[4], DType::U8, Some(TensorMemory::Mem), None).unwrap();
    let keep = t.clone();
    let d = t.descriptor().unwrap();
    drop(t);
    assert!(TensorDyn::import_descriptor(&d).is_ok());
    drop(keep);
    assert!(matches!(TensorDyn::import_descriptor(&d), Err(Error::StaleGeneration { .. })));
}

#[test]
fn an_explicit_release_makes_every_descriptor_of_the_buffer_stale() {
    let t = TensorDyn::new(&[4, 4], DType::U8, Some(TensorMemory::Shm), None).unwrap();
    let d = t.descriptor().unwrap();
    let v = t.batch(1).unwrap().descriptor().unwrap();
    assert_eq!((v.slot, v.generation), (d.slot, d.generation), "views share the buffer's slot");
    desc::release_descriptor(&d).unwrap();
    assert!(matches!(TensorDyn::import_descriptor(&d), Err(Error::StaleGeneration { .. })));
    assert!(matches!(TensorDyn::import_descriptor(&v), Err(Error::StaleGeneration { .. })));
    assert!(matches!(desc::release_descriptor(&d), Err(Error::StaleGeneration { .. })), "double release");
    // The buffer itself lives on and registers afresh.
    let d2 = t.descriptor().unwrap();
    assert!((d2.slot, d2.generation) != (d.slot, d.generation));
    assert!(TensorDyn::import_descriptor(&d2).is_ok());
}

#[test]
fn slot_reuse_bumps_the_generation() {
    let reg = Registry::new(1);
    let a = TensorDyn::new(&[8], DType::U8, Some(TensorMemory::Mem), None).unwrap();
    let da = reg.export_descriptor(&a).unwrap();
    assert_eq!((da.slot, da.generation), (0, 1));
    let b = TensorDyn::new(&[8], DType::U8, Some(TensorMemory::Mem), None).unwrap();
    assert!(matches!(reg.export_descriptor(&b), Err(Error::RegistryFull { capacity: 1 })), "bounded");
    drop(a);
    // The only slot is reused for b, one generation on: a's descriptor cannot reach b.
    let db = reg.export_descriptor(&b).unwrap();
    assert_eq!((db.slot, db.generation), (0, 2));
    let e = reg.import_descriptor(&da, CpuAccess::Read).unwrap_err();
    assert!(matches!(e, Error::StaleGeneration { slot: 0, expected: 1, current: 2 }), "{e}");
    assert_eq!(
        reg.import_descriptor(&db, CpuAccess::Read).unwrap().buffer_identity().id(),
        b.buffer_identity().id()
    );
    // Owned entries (an opaque handle): remove bumps too, and a double free is stale, not UB.
    let reg = Registry::new(2);
    let k = reg.insert(b.clone()).unwrap();
    assert_eq!(reg.get(k).unwrap().buffer_identity().id(), b.buffer_identity().id());
    let k2 = reg.replace(k, TensorDyn::new(&[1], DType::U8, Some(TensorMemory::Mem), None).unwrap()).unwrap();
    assert_eq!(k2.slot, k.slot);
    assert_eq!(k2.generation, k.generation + 1, "a reallocation behind the handle bumps it");
    assert!(matches!(reg.get(k), Err(Error::StaleGeneration { .. })));
    assert_eq!(reg.remove(k2).unwrap().shape(), &[1]);
    assert!(matches!(reg.remove(k2), Err(Error::StaleGeneration { .. })));
    let k3 = reg.insert(b.clone()).unwrap();
    assert_eq!((k3.slot, k3.generation), (k.slot, k2.generation + 1));
    assert_eq!(reg.live(), 1);
}

#[test]
fn keys_that_were_never_issued_are_not_registered() {
    let reg = Registry::new(4);
    let t = TensorDyn::new(&[8], DType::U8, Some(TensorMemory::Mem), None).unwrap();
    let k = reg.insert(t).unwrap();
    for bad in [
        Key { slot: 3, generation: 1 },
        Key { slot: u32::MAX, generation: 1 },
        Key { slot: k.slot, generation: k.generation + 1 },
        Key { slot: k.slot, generation: 0 },
    ] {
        let e = reg.validate(bad).unwrap_err();
        assert!(matches!(e, Error::NotRegistered { .. }), "{bad:?}: {e}");
        assert_eq!(Status::of(&e), Status::NotRegistered);
    }
    assert!(reg.validate(k).is_ok());
}

#[test]
fn a_view_shares_the_buffer_and_materialize_makes_a_new_one() {
    let t = TensorDyn::image_desc(&ImageDesc::new(20, 10, PixelFormat::Rgb).with_memory(TensorMemory::Shm))
        .unwrap();
    fill(&t, 3);
    let d = t.descriptor().unwrap();
    let r = Region { x: 4, y: 2, width: 8, height: 5 };
    let vd = desc::view_descriptor(&d, r).unwrap();
    assert!(vd.is_view() && !d.is_view());
    assert_eq!((vd.slot, vd.generation, vd.handle), (d.slot, d.generation, d.handle), "same buffer");
    assert_eq!(vd.offset, (2 * 60 + 4 * 3) as u64);
    assert_eq!(&vd.strides[..3], &d.strides[..3], "the parent's pitch");
    let v = TensorDyn::import_descriptor(&vd).unwrap();
    assert_eq!(v.buffer_identity().id(), t.buffer_identity().id());
    assert!(v.is_view());
    assert_eq!(v.write_access(), CpuAccess::ReadWrite, "a view's rows share cache lines");
    let direct = t.view(r).unwrap();
    assert_eq!(bytes_of(&v), bytes_of(&direct));
    let m = desc::materialize(&vd).unwrap();
    assert_ne!(m.buffer_identity().id(), t.buffer_identity().id(), "a new buffer");
    assert!(!m.is_view());
    assert_eq!(m.row_stride(), Some(24), "dense");
    let md = m.descriptor().unwrap();
    assert_ne!(md.slot, d.slot);
    assert_eq!(&md.strides[..3], &[24, 3, 1]);
    let mv = TensorDyn::import_descriptor(&md).unwrap();
    for row in 0..5 {
        let src = &bytes_of(&direct)[row * 60..row * 60 + 24];
        assert_eq!(&bytes_of(&mv)[row * 24..row * 24 + 24], src, "row {row}");
    }
    // Views of multi-plane layouts, and two-buffer images, cannot be carried by one handle.
    let nv = TensorDyn::image_desc(&ImageDesc::new(16, 8, PixelFormat::Nv12).with_memory(TensorMemory::Mem))
        .unwrap();
    assert!(nv.view(Region { x: 0, y: 0, width: 8, height: 4 }).unwrap().descriptor().is_err());
    let luma =
        TensorDyn::image(16, 8, PixelFormat::Gray8, DType::U8, CpuAccess::ReadWrite, Some(TensorMemory::Mem))
            .unwrap();
    let chroma =
        TensorDyn::image(16, 4, PixelFormat::Gray8, DType::U8, CpuAccess::ReadWrite, Some(TensorMemory::Mem))
            .unwrap();
    let two = TensorDyn::from_planes(&luma, &chroma, PixelFormat::Nv12).unwrap();
    assert!(matches!(two.descriptor(), Err(Error::InvalidOperation(_))));
}

#[test]
fn concurrent_registration_and_release() {
    const THREADS: usize = 8;
    const ROUNDS: usize = 400;
    let reg = Registry::new(4 * THREADS);
    let seen = std::sync::Mutex::new(std::collections::HashSet::new());
    std::thread::scope(|s| {
        for th in 0..THREADS {
            let (reg, seen) = (&reg, &seen);
            s.spawn(move || {
                for i in 0..ROUNDS {
                    let t = TensorDyn::new(&[th + 1, i % 7 + 1], DType::U8, Some(TensorMemory::Mem), None)
                        .unwrap();
                    let owned = reg.insert(t.clone()).unwrap();
                    let d = reg.export_descriptor(&t).unwrap();
                    assert!(
                        seen.lock().unwrap().insert((owned.slot, owned.generation)),
                        "a key issued twice"
                    );
                    assert!(seen.lock().unwrap().insert((d.slot, d.generation)), "a key issued twice");
                    let u = reg.import_descriptor(&d, CpuAccess::Read).unwrap();
                    assert_eq!(u.shape(), t.shape());
                    assert_eq!(reg.get(owned).unwrap().buffer_identity().id(), t.buffer_identity().id());
                    if i % 2 == 0 {
                        reg.release_descriptor(&d).unwrap();
                    }
                    drop((t, u));
                    reg.remove(owned).unwrap();
                    assert!(reg.import_descriptor(&d, CpuAccess::Read).is_err(), "gone with its buffer");
                }
            });
        }
    });
    assert_eq!(seen.lock().unwrap().len(), 2 * THREADS * ROUNDS);
    reg.sweep();
    assert_eq!(reg.live(), 0, "every entry released");
}

fn good() -> (TensorDyn, TensorDesc) {
    let t = TensorDyn::image_desc(
        &ImageDesc::new(6, 4, PixelFormat::Rgb).with_memory(TensorMemory::Shm).with_row_stride(20),
    )
    .unwrap();
    let d = t.descriptor().unwrap();
    (t, d)
}

fn refuse(d: &TensorDesc, what: &str) -> Error {
    match catch_unwind(AssertUnwindSafe(|| TensorDyn::import_descriptor(d))) {
        Err(_) => panic!("{what}: import panicked"),
        Ok(Ok(_)) => panic!("{what}: accepted"),
        Ok(Err(e)) => e,
    }
}

#[test]
fn hostile_descriptors_are_errors() {
    let (_t, d) = good();
    assert!(TensorDyn::import_descriptor(&d).is_ok());
    type Edit = fn(&mut TensorDesc);
    let cases: &[(&str, Edit, Status)] = &[
        ("bad kind", |d| d.kind = 99, Status::Invalid),
        ("wrong kind", |d| d.kind = TensorMemory::DmaBuf.code(), Status::Invalid),
        ("bad dtype", |d| d.dtype = 11, Status::Invalid),
        ("wrong dtype", |d| d.dtype = dtype_code(DType::U16), Status::Invalid),
        ("rank over max", |d| d.ndim = MAX_DIMS as u32 + 1, Status::Invalid),
        ("rank u32::MAX", |d| d.ndim = u32::MAX, Status::Invalid),
        ("rank short", |d| d.ndim = 2, Status::Invalid),
        ("junk past ndim", |d| d.shape[5] = 1, Status::Invalid),
        ("stride past ndim", |d| d.strides[7] = 4, Status::Invalid),
        ("strides not the pitch's", |d| d.strides[1] = 4, Status::Invalid),
        ("row stride too narrow", |d| d.strides[0] = 17, Status::Invalid),
        ("row stride negative", |d| d.strides[0] = -20, Status::Invalid),
        ("row stride huge", |d| d.strides[0] = i64::MAX, Status::Invalid),
        ("shape not the format's", |d| d.shape[2] = 4, Status::Invalid),
        ("huge shape", |d| d.shape[0] = u64::MAX, Status::Invalid),
        ("width 0", |d| d.width = 0, Status::Invalid),
        ("width huge", |d| d.width = u32::MAX, Status::Invalid),
        ("unknown format", |d| d.format = 0xffff, Status::Invalid),
        ("size mismatch", |d| d.size += 1, Status::Invalid),
        ("out-of-range slot", |d| d.slot = u32::MAX, Status::NotRegistered),
        ("future generation", |d| d.generation += 1000, Status::NotRegistered),
        ("generation 0", |d| d.generation = 0, Status::Invalid),
        ("unknown flag", |d| d.flags |= 1 << 20, Status::Invalid),
        ("undeclared access", |d| d.flags &= !flags::CPU_ACCESS_DECLARED, Status::Invalid),
        ("multi-plane view", |d| d.flags |= flags::VIEW | flags::BATCHED, Status::Invalid),
        ("another process", |d| d.pid ^= 0x4000_0000, Status::Invalid),
        ("version 0", |d| d.version = 0, Status::Invalid),
        ("version 2", |d| d.version = DESC_VERSION + 1, Status::Invalid),
        ("handle not the buffer's", |d| d.handle = 0, Status::Invalid),
        ("handle -1 on shm", |d| d.handle = -1, Status::Invalid),
        ("offset past the buffer", |d| d.offset = 1 << 20, Status::TooSmall),
        ("offset overflow", |d| d.offset = u64::MAX, Status::Invalid),
    ];
    for (what, edit, status) in cases {
        let mut h = d;
        edit(&mut h);
        let e = refuse(&h, what);
        assert_eq!(Status::of(&e), *status, "{what}: {e}");
    }
}

#[test]
fn every_descriptor_word_with_hostile_values_is_an_error() {
    // Gray f32: no other format has its geometry and no other dtype its width among the values
    // tried, so a swapped code is always detectable (RGB<->BGR or u8<->i8 would be valid).
    let t = TensorDyn::image_desc(
        &ImageDesc::new(6, 4, PixelFormat::Gray8)
            .with_dtype(DType::F32)
            .with_memory(TensorMemory::Shm)
            .with_row_stride(32),
    )
    .unwrap();
    let d = t.descriptor().unwrap();
    assert!(TensorDyn::import_descriptor(&d).is_ok());
    let words = size_of::<TensorDesc>() / 4;
    let mut failures = Vec::new();
    for w in 0..words {
        for v in [0u32, 1, 2, 3, 0x7fff_ffff, 0xffff_ffff, 0x8000_0000, 8, 9, 200, 0x0001_0000] {
            let mut raw = [0u32; 50];
            // Plain data of a repr(C) struct with no padding: copied word for word.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    (&d as *const TensorDesc).cast::<u32>(),
                    raw.as_mut_ptr(),
                    words,
                )
            };
            if raw[w] == v {
                continue;
            }
            raw[w] = v;
            let mut h = d;
            unsafe {
                std::ptr::copy_nonoverlapping(raw.as_ptr(), (&mut h as *mut TensorDesc).cast::<u32>(), words)
            };
            match catch_unwind(AssertUnwindSafe(|| TensorDyn::import_descriptor(&h))) {
                Err(_) => failures.push(format!("word {w} = {v:#x}: PANIC")),
                // Dropping bits from the declaration only narrows it, which is always allowed.
                Ok(Ok(t)) if w == offset_of!(TensorDesc, flags) / 4 && h.cpu_access() != d.cpu_access() => {
                    assert!(d.cpu_access().can_read() || !t.cpu_access().can_read());
                    assert!(d.cpu_access().can_write() || !t.cpu_access().can_write());
                }
                Ok(Ok(_)) => failures.push(format!("word {w} = {v:#x}: accepted")),
                Ok(Err(_)) => {}
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
