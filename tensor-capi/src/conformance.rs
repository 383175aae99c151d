//! The conformance table (tests/conformance/cases.txt) through the C entry points, from Rust. The
//! C and Python runners print the same lines; the test command compares all three. Here each
//! result must also equal the table's expected column.

use crate::*;
use std::ffi::CStr;

fn status(code: i32) -> String {
    unsafe { CStr::from_ptr(ef_status_name(code)) }.to_string_lossy().into_owned()
}

fn dtype_code(name: &str) -> u32 {
    ["u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64", "f16", "f32", "f64"]
        .iter()
        .position(|n| *n == name)
        .unwrap() as u32
}

fn memory_code(name: &str) -> i32 {
    match name {
        "mem" => EF_MEMORY_MEM,
        "shm" => EF_MEMORY_SHM,
        _ => panic!("memory {name}"),
    }
}

const RW: u32 = 3;

fn format_code(name: &str) -> u32 {
    match name {
        "RGB" => 1,
        "RGBA" => 3,
        "NV12" => 9,
        _ => panic!("format {name}"),
    }
}

fn dims(s: &str) -> Vec<usize> {
    s.split(',').map(|d| d.parse().unwrap()).collect()
}

fn join<T: ToString>(v: &[T]) -> String {
    v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(",")
}

macro_rules! ck {
    ($e:expr) => {{
        #[allow(unused_unsafe)]
        let rc = unsafe { $e };
        if rc != 0 {
            return format!("err {}", status(rc));
        }
    }};
}

fn geometry(t: ef_tensor) -> (Vec<u64>, Vec<i64>, u64) {
    let (mut n, mut size) = (0usize, 0u64);
    unsafe {
        assert_eq!(ef_tensor_ndim(t, &mut n), 0);
        let mut shape = vec![0u64; n];
        let mut strides = vec![0i64; n];
        assert_eq!(ef_tensor_shape(t, shape.as_mut_ptr(), n), 0);
        assert_eq!(ef_tensor_strides(t, strides.as_mut_ptr(), n), 0);
        assert_eq!(ef_tensor_size(t, &mut size), 0);
        (shape, strides, size)
    }
}

/// Fill the tensor's bytes with i % 256 through a write map.
fn fill(t: ef_tensor) -> i32 {
    let mut m = ef_map { slot: 0, generation: 0, data: std::ptr::null_mut(), size: 0 };
    unsafe {
        let rc = ef_tensor_map(t, RW, &mut m);
        if rc != 0 {
            return rc;
        }
        for i in 0..m.size {
            *m.data.add(i) = i as u8;
        }
        ef_tensor_unmap(&mut m)
    }
}

fn byte_sum(t: ef_tensor) -> u64 {
    let mut m = ef_map { slot: 0, generation: 0, data: std::ptr::null_mut(), size: 0 };
    unsafe {
        assert_eq!(ef_tensor_map(t, 1, &mut m), 0);
        let s = (0..m.size).map(|i| *m.data.add(i) as u64).sum();
        assert_eq!(ef_tensor_unmap(&mut m), 0);
        s
    }
}

fn inode(t: ef_tensor) -> u64 {
    let mut fd = -1;
    unsafe {
        assert_eq!(ef_tensor_clone_fd(t, &mut fd), 0);
        let mut st = std::mem::zeroed::<libc::stat>();
        libc::fstat(fd, &mut st);
        libc::close(fd);
        st.st_ino
    }
}

fn identity(t: ef_tensor) -> u64 {
    let mut id = 0;
    unsafe { assert_eq!(ef_tensor_identity(t, &mut id), 0) };
    id
}

fn new(dtype: &str, shape: &str, memory: &str, access: u32, out: &mut ef_tensor) -> i32 {
    let d = dims(shape);
    unsafe { ef_tensor_new(d.as_ptr(), d.len(), dtype_code(dtype), memory_code(memory), access, out) }
}

/// A made tensor's shape, strides, size and one code (`code`'s, printed as `what`), then freed.
fn described(t: ef_tensor, what: &str, code: unsafe extern "C" fn(ef_tensor, *mut u32) -> c_int) -> String {
    let (shape, strides, size) = geometry(t);
    let mut c = 0;
    unsafe { code(t, &mut c) };
    ef_tensor_free(t);
    format!("ok shape={} strides={} size={size} {what}={c}", join(&shape), join(&strides))
}

fn run(op: &str, a: &[&str]) -> String {
    let mut t = ef_tensor::default();
    match op {
        "new" => {
            ck!(new(a[0], a[1], a[2], RW, &mut t));
            described(t, "dtype", ef_tensor_dtype)
        }
        "image" => {
            let (w, h) = (a[1].parse().unwrap(), a[2].parse().unwrap());
            ck!(ef_tensor_image(w, h, format_code(a[0]), 0, RW, memory_code(a[3]), &mut t));
            described(t, "format", ef_tensor_format)
        }
        "view" => {
            let n: Vec<u64> = a[1..].iter().map(|v| v.parse().unwrap()).collect();
            ck!(ef_tensor_image(n[0] as u32, n[1] as u32, format_code(a[0]), 0, RW, EF_MEMORY_MEM, &mut t));
            let mut v = ef_tensor::default();
            ck!(ef_tensor_view(t, n[2], n[3], n[4], n[5], &mut v));
            let (shape, strides, _) = geometry(v);
            let same = identity(v) == identity(t);
            ef_tensor_free(v);
            ef_tensor_free(t);
            format!("ok shape={} strides={} same_identity={}", join(&shape), join(&strides), same as u8)
        }
        "batch" => {
            ck!(new(a[0], a[1], a[2], RW, &mut t));
            assert_eq!(fill(t), 0);
            let mut e = ef_tensor::default();
            ck!(ef_tensor_batch(t, a[3].parse().unwrap(), &mut e));
            let (shape, strides, _) = geometry(e);
            let (s, same) = (byte_sum(e), identity(e) == identity(t));
            ef_tensor_free(e);
            ef_tensor_free(t);
            format!(
                "ok shape={} strides={} sum={s} same_identity={}",
                join(&shape),
                join(&strides),
                same as u8
            )
        }
        "map_sum" => {
            ck!(new(a[0], a[1], a[2], RW, &mut t));
            let rc = fill(t);
            if rc != 0 {
                return format!("err {}", status(rc));
            }
            let s = byte_sum(t);
            ef_tensor_free(t);
            format!("ok sum={s}")
        }
        "access_denied" => {
            ck!(new(a[0], a[1], a[2], 1, &mut t));
            let rc = fill(t);
            ef_tensor_free(t);
            format!("err {}", status(rc))
        }
        "stale" => {
            ck!(new("u8", "4", "mem", RW, &mut t));
            ef_tensor_free(t);
            let mut n = 0;
            ck!(ef_tensor_ndim(t, &mut n));
            "ok".into()
        }
        "double_free" => {
            ck!(new("u8", "4", "mem", RW, &mut t));
            ef_tensor_free(t);
            ck!(ef_tensor_free(t));
            "ok".into()
        }
        "forged" => {
            let mut n = 0;
            ck!(ef_tensor_ndim(ef_tensor { slot: 1 << 20, generation: 99 }, &mut n));
            "ok".into()
        }
        "blob" => {
            let mode = if a[0] == "inline" { 1 } else { 0 };
            ck!(new(a[1], a[2], a[3], RW, &mut t));
            assert_eq!(fill(t), 0);
            let mut len = 0usize;
            let rc = unsafe { ef_tensor_export_blob(t, mode, std::ptr::null_mut(), 0, &mut len) };
            if rc != EF_TOO_SMALL {
                ef_tensor_free(t);
                return format!("err {}", status(rc));
            }
            let mut buf = vec![0u8; len];
            ck!(ef_tensor_export_blob(t, mode, buf.as_mut_ptr(), len, &mut len));
            let mut back = ef_tensor::default();
            ck!(ef_tensor_import_blob(buf.as_ptr(), len, &mut back));
            let (shape, strides, _) = geometry(back);
            let s = byte_sum(back);
            let tail = if mode == 1 {
                format!("new_identity={}", (identity(back) != identity(t)) as u8)
            } else {
                format!("same_inode={}", (inode(back) == inode(t)) as u8)
            };
            ef_tensor_free(back);
            ef_tensor_free(t);
            format!("ok shape={} strides={} sum={s} {tail}", join(&shape), join(&strides))
        }
        "nv12_planes" => {
            let (w, h): (usize, usize) = (a[0].parse().unwrap(), a[1].parse().unwrap());
            let (mut luma, mut chroma) = (ef_tensor::default(), ef_tensor::default());
            ck!(new("u8", &format!("{h},{w}"), "shm", RW, &mut luma));
            ck!(new("u8", &format!("{},{w}", h / 2), "shm", RW, &mut chroma));
            let (mut fl, mut fc) = (-1, -1);
            ck!(ef_tensor_clone_fd(luma, &mut fl));
            ck!(ef_tensor_clone_fd(chroma, &mut fc));
            let mut p = ef_planes::default();
            ck!(ef_planes_init(&mut p));
            ck!(ef_planes_add(&mut p, fl, 0, w as u64));
            ck!(ef_planes_add(&mut p, fc, 0, w as u64));
            ck!(ef_tensor_from_planes(&p, w as u32, h as u32, 9, RW, &mut t));
            unsafe { (libc::close(fl), libc::close(fc)) };
            let (shape, _, _) = geometry(t);
            let mut f = 0;
            unsafe { ef_tensor_format(t, &mut f) };
            let mut len = 0usize;
            unsafe { ef_tensor_export_blob(t, 1, std::ptr::null_mut(), 0, &mut len) };
            let mut buf = vec![0u8; len];
            let mut back = ef_tensor::default();
            let rc = unsafe {
                match ef_tensor_export_blob(t, 1, buf.as_mut_ptr(), len, &mut len) {
                    0 => ef_tensor_import_blob(buf.as_ptr(), len, &mut back),
                    rc => rc,
                }
            };
            let inline = if rc == 0 { "ok".to_string() } else { status(rc) };
            ef_tensor_free(back);
            ef_tensor_free(t);
            ef_tensor_free(luma);
            ef_tensor_free(chroma);
            format!("ok shape={} format={f} planes_blob_inline={inline}", join(&shape))
        }
        "hostile_blob" => {
            let (word, value): (usize, u32) = (a[0].parse().unwrap(), a[1].parse().unwrap());
            ck!(new("u8", "4,4", "mem", RW, &mut t));
            let mut len = 0usize;
            unsafe { ef_tensor_export_blob(t, 1, std::ptr::null_mut(), 0, &mut len) };
            let mut buf = vec![0u8; len];
            ck!(ef_tensor_export_blob(t, 1, buf.as_mut_ptr(), len, &mut len));
            ef_tensor_free(t);
            buf[word * 4..word * 4 + 4].copy_from_slice(&value.to_le_bytes());
            let mut back = ef_tensor::default();
            ck!(ef_tensor_import_blob(buf.as_ptr(), len, &mut back));
            ef_tensor_free(back);
            "ok".into()
        }
        "desc" => {
            ck!(new("u8", "8,8", a[0], RW, &mut t));
            let mut d = unsafe { std::mem::zeroed::<ef_tensor_desc>() };
            ck!(ef_tensor_export_descriptor(t, &mut d));
            let mut back = ef_tensor::default();
            ck!(ef_tensor_import_descriptor(&d, 1, &mut back));
            let (shape, _, _) = geometry(back);
            let same = identity(back) == identity(t);
            let mut m = ef_map { slot: 0, generation: 0, data: std::ptr::null_mut(), size: 0 };
            let write = unsafe { ef_tensor_map(back, RW, &mut m) };
            let access = if write == EF_ACCESS_DENIED { 1 } else { 3 };
            ef_tensor_free(back);
            ef_tensor_free(t);
            format!("ok shape={} same_identity={} access={access}", join(&shape), same as u8)
        }
        "desc_stale" => {
            ck!(new("u8", "8,8", "shm", RW, &mut t));
            let mut d = unsafe { std::mem::zeroed::<ef_tensor_desc>() };
            ck!(ef_tensor_export_descriptor(t, &mut d));
            ef_tensor_free(t);
            let mut back = ef_tensor::default();
            ck!(ef_tensor_import_descriptor(&d, 1, &mut back));
            "ok".into()
        }
        other => panic!("unknown op {other}"),
    }
}

#[test]
fn the_conformance_table() {
    let table =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/conformance/cases.txt"))
            .unwrap();
    let mut lines = Vec::new();
    let mut failures = Vec::new();
    for l in table.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')) {
        let (case, want) = l.split_once('=').expect("name op args = expected");
        let words: Vec<&str> = case.split_whitespace().collect();
        let got = run(words[1], &words[2..]);
        let want = want.split_whitespace().collect::<Vec<_>>().join(" ");
        if got != want {
            failures.push(format!("{}: got `{got}`, want `{want}`", words[0]));
        }
        lines.push(format!("{}: {got}", words[0]));
    }
    if let Ok(path) = std::env::var("EDGEFIRST_CONFORMANCE_OUT") {
        std::fs::write(path, lines.join("\n") + "\n").unwrap();
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(lines.len() >= 20);
}
