//! `libedgefirst_tensor`: the tensor crate for C (and anything with a C FFI: Python's ctypes).
//!
//! Handles are values, not pointers: a registry slot and the generation it had. Every call
//! validates the pair, so a freed, stale or made-up handle is an error code, never a dangling
//! dereference. Every function returns a fail-closed status (0 only for success), writes its
//! outputs only on success, and leaves the reason in a thread-local message (`ef_last_error`).
//! A panic inside is caught and reported as `EF_OTHER`. The header is
//! `include/edgefirst/tensor.h`; the API is documented there and in docs/c-api.md.

#![allow(non_camel_case_types)]
#![allow(clippy::missing_safety_doc)] // the safety contract is the C header's, per function

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CString};
use std::os::fd::{BorrowedFd, IntoRawFd};
use std::sync::Mutex;
use tensor::blob::{self, TransportMode};
use tensor::desc::{self, registry::Key, Status};
use tensor::{
    CpuAccess, DType, Error, OwnedMap, PixelFormat, PlaneDescriptor, Region, Registry, TensorDyn,
    TensorMemory,
};

pub const EF_OK: c_int = 0;
pub const EF_INVALID: c_int = Status::Invalid as c_int;
pub const EF_NOT_REGISTERED: c_int = Status::NotRegistered as c_int;
pub const EF_STALE: c_int = Status::StaleGeneration as c_int;
pub const EF_ACCESS_DENIED: c_int = Status::AccessDenied as c_int;
pub const EF_UNSUPPORTED: c_int = Status::Unsupported as c_int;
pub const EF_TOO_SMALL: c_int = Status::TooSmall as c_int;
pub const EF_REGISTRY_FULL: c_int = Status::RegistryFull as c_int;
pub const EF_IO: c_int = Status::Io as c_int;
pub const EF_OTHER: c_int = Status::Other as c_int;
pub const EF_MEMORY_MEM: i32 = 0;
pub const EF_MEMORY_SHM: i32 = 1;

/// The descriptor, as C sees it (`ef_tensor_desc`).
pub use tensor::TensorDesc as ef_tensor_desc;

/// A tensor handle: a registry slot and its generation. `{0, 0}` is never a live handle.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ef_tensor {
    pub slot: u64,
    pub generation: u64,
}

/// A live CPU map: its own handle (for `ef_tensor_unmap`), the bytes, and their count.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ef_map {
    pub slot: u64,
    pub generation: u64,
    pub data: *mut u8,
    pub size: usize,
}

/// One plane of a foreign image: its fd (borrowed; dup'd by the import), where the plane starts
/// in it, and its row stride (0: the format's natural pitch).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ef_plane {
    pub fd: i32,
    pub reserved: u32,
    pub offset: u64,
    pub stride: u64,
}

/// Up to four planes, filled by `ef_planes_add`: the builder of `ef_tensor_from_planes`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ef_planes {
    pub plane: [ef_plane; 4],
    pub count: u32,
    pub reserved: u32,
}

type Outcome<T> = std::result::Result<T, (c_int, String)>;

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn fail(e: Error) -> (c_int, String) {
    (Status::of(&e) as c_int, e.to_string())
}

fn invalid(msg: impl Into<String>) -> (c_int, String) {
    (EF_INVALID, msg.into())
}

/// Run `f`, turning its error or a panic into a status and the thread's message.
fn call(f: impl FnOnce() -> Outcome<()>) -> c_int {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or_else(|_| Err((EF_OTHER, "internal error (a panic was caught)".into())));
    match outcome {
        Ok(()) => EF_OK,
        Err((code, msg)) => {
            let msg = CString::new(msg.replace('\0', " ")).unwrap_or_default();
            LAST_ERROR.with(|l| *l.borrow_mut() = msg);
            code
        }
    }
}

fn out<'a, T>(p: *mut T, what: &str) -> Outcome<&'a mut T> {
    unsafe { p.as_mut() }.ok_or_else(|| invalid(format!("{what} is NULL")))
}

fn key(t: ef_tensor) -> Outcome<Key> {
    let slot =
        u32::try_from(t.slot).map_err(|_| (EF_NOT_REGISTERED, format!("slot {} out of range", t.slot)))?;
    Ok(Key { slot, generation: t.generation })
}

fn tensor(t: ef_tensor) -> Outcome<TensorDyn> {
    Registry::global().get(key(t)?).map_err(fail)
}

fn register(t: TensorDyn) -> Outcome<ef_tensor> {
    let k = Registry::global().insert(t).map_err(fail)?;
    Ok(ef_tensor { slot: k.slot as u64, generation: k.generation })
}

fn access(code: u32) -> Outcome<CpuAccess> {
    CpuAccess::ALL
        .get(code as usize)
        .copied()
        .ok_or_else(|| invalid(format!("cpu access code {code} (0..=3)")))
}

fn dtype(code: u32) -> Outcome<DType> {
    desc::dtype_from_code(code).ok_or_else(|| invalid(format!("dtype code {code}")))
}

fn memory(code: i32) -> Outcome<Option<TensorMemory>> {
    if code < 0 {
        return Ok(None);
    }
    TensorMemory::from_code(code as u32).map(Some).map_err(fail)
}

fn format(code: u32) -> Outcome<PixelFormat> {
    desc::format_from_code(code).ok_or_else(|| invalid(format!("pixel format code {code}")))
}

fn dims<'a>(shape: *const usize, ndim: usize) -> Outcome<&'a [usize]> {
    if ndim == 0 {
        return Ok(&[]);
    }
    if shape.is_null() {
        return Err(invalid("shape is NULL"));
    }
    if ndim > desc::MAX_DIMS {
        return Err(invalid(format!("{ndim} dimensions (at most {})", desc::MAX_DIMS)));
    }
    Ok(unsafe { std::slice::from_raw_parts(shape, ndim) })
}

/// Live maps, with generations like the tensors' so a double or forged unmap is refused.
struct Maps {
    slots: Vec<(u64, Option<OwnedMap>)>,
    free: Vec<usize>,
}

static MAPS: Mutex<Maps> = Mutex::new(Maps { slots: Vec::new(), free: Vec::new() });

/// At most this many maps live at once: a leak fails loudly before memory does.
const MAX_MAPS: usize = 1 << 16;

fn map_with(t: ef_tensor, want: Option<DType>, access_code: u32, m: *mut ef_map) -> c_int {
    call(|| {
        let m = out(m, "map")?;
        let t = tensor(t)?;
        if let Some(d) = want {
            if d != t.dtype() && d != DType::U8 {
                return Err(fail(Error::DTypeMismatch { actual: t.dtype(), requested: d }));
            }
            if !t.byte_offset().is_multiple_of(d.size()) {
                return Err(invalid(format!(
                    "byte offset {} is not aligned to {}",
                    t.byte_offset(),
                    d.size()
                )));
            }
        }
        let map = t.map_owned(access(access_code)?).map_err(fail)?;
        let (data, size) = (map.as_ptr(), map.len());
        let mut maps = MAPS.lock().unwrap_or_else(|p| p.into_inner());
        let slot = match maps.free.pop() {
            Some(i) => i,
            None if maps.slots.len() < MAX_MAPS => {
                maps.slots.push((0, None));
                maps.slots.len() - 1
            }
            None => return Err((EF_REGISTRY_FULL, format!("{MAX_MAPS} maps are live"))),
        };
        let entry = &mut maps.slots[slot];
        entry.0 += 1;
        entry.1 = Some(map);
        *m = ef_map { slot: slot as u64, generation: entry.0, data, size };
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn ef_last_error() -> *const c_char {
    LAST_ERROR.with(|l| l.borrow().as_ptr())
}

#[no_mangle]
pub extern "C" fn ef_status_name(status: c_int) -> *const c_char {
    let s: &'static [u8] = match status {
        EF_OK => b"EF_OK\0",
        EF_INVALID => b"EF_INVALID\0",
        EF_NOT_REGISTERED => b"EF_NOT_REGISTERED\0",
        EF_STALE => b"EF_STALE\0",
        EF_ACCESS_DENIED => b"EF_ACCESS_DENIED\0",
        EF_UNSUPPORTED => b"EF_UNSUPPORTED\0",
        EF_TOO_SMALL => b"EF_TOO_SMALL\0",
        EF_REGISTRY_FULL => b"EF_REGISTRY_FULL\0",
        EF_IO => b"EF_IO\0",
        EF_OTHER => b"EF_OTHER\0",
        _ => b"EF_UNKNOWN_STATUS\0",
    };
    s.as_ptr().cast()
}

#[no_mangle]
pub unsafe extern "C" fn ef_tensor_new(
    shape: *const usize,
    ndim: usize,
    dtype_code: u32,
    memory_code: i32,
    access_code: u32,
    t: *mut ef_tensor,
) -> c_int {
    call(|| {
        let t = out(t, "tensor")?;
        let shape = dims(shape, ndim)?;
        let made = TensorDyn::with_cpu_access(
            shape,
            dtype(dtype_code)?,
            access(access_code)?,
            memory(memory_code)?,
            None,
        )
        .map_err(fail)?;
        *t = register(made)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn ef_tensor_image(
    width: u32,
    height: u32,
    format_code: u32,
    dtype_code: u32,
    access_code: u32,
    memory_code: i32,
    t: *mut ef_tensor,
) -> c_int {
    call(|| {
        let t = out(t, "tensor")?;
        let made = TensorDyn::image(
            width as usize,
            height as usize,
            format(format_code)?,
            dtype(dtype_code)?,
            access(access_code)?,
            memory(memory_code)?,
        )
        .map_err(fail)?;
        *t = register(made)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn ef_tensor_from_fd(
    fd: c_int,
    shape: *const usize,
    ndim: usize,
    dtype_code: u32,
    access_code: u32,
    t: *mut ef_tensor,
) -> c_int {
    call(|| {
        let t = out(t, "tensor")?;
        if fd < 0 {
            return Err(invalid(format!("fd {fd}")));
        }
        let shape = dims(shape, ndim)?;
        // Borrowed for the import, which dups it: the caller's fd stays the caller's.
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        let made = TensorDyn::from_fd_with_access(fd, shape, dtype(dtype_code)?, access(access_code)?, None)
            .map_err(fail)?;
        *t = register(made)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn ef_planes_init(planes: *mut ef_planes) -> c_int {
    call(|| {
        *out(planes, "planes")? = ef_planes::default();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn ef_planes_add(planes: *mut ef_planes, fd: c_int, offset: u64, stride: u64) -> c_int {
    call(|| {
        let p = out(planes, "planes")?;
        let n = p.count as usize;
        if n >= p.plane.len() {
            return Err(invalid(format!("already {n} planes (at most {})", p.plane.len())));
        }
        if fd < 0 {
            return Err(invalid(format!("fd {fd}")));
        }
        p.plane[n] = ef_plane { fd, reserved: 0, offset, stride };
        p.count += 1;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn ef_tensor_from_planes(
    planes: *const ef_planes,
    width: u32,
    height: u32,
    format_code: u32,
    access_code: u32,
    t: *mut ef_tensor,
) -> c_int {
    call(|| {
        let t = out(t, "tensor")?;
        let p = unsafe { planes.as_ref() }.ok_or_else(|| invalid("planes is NULL"))?;
        let n = p.count as usize;
        if n == 0 || n > p.plane.len() {
            return Err(invalid(format!("{n} planes")));
        }
        let mut descs = Vec::with_capacity(n);
        for pl in &p.plane[..n] {
            let fd = unsafe { BorrowedFd::borrow_raw(pl.fd) };
            let mut d = PlaneDescriptor::new(fd).map_err(fail)?;
            let usize_of =
                |v: u64, what: &str| usize::try_from(v).map_err(|_| invalid(format!("{what} {v}")));
            if pl.stride != 0 {
                d = d.with_stride(usize_of(pl.stride, "stride")?);
            }
            d = d.with_offset(usize_of(pl.offset, "offset")?);
            descs.push(d);
        }
        let made = TensorDyn::import_image(
            descs,
            width as usize,
            height as usize,
            format(format_code)?,
            access(access_code)?,
        )
        .map_err(fail)?;
        *t = register(made)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn ef_tensor_view(
    t: ef_tensor,
    x: u64,
    y: u64,
    width: u64,
    height: u64,
    view: *mut ef_tensor,
) -> c_int {
    call(|| {
        let view = out(view, "view")?;
        let to = |v: u64| usize::try_from(v).map_err(|_| invalid(format!("{v} is past usize")));
        let region = Region::new(to(x)?, to(y)?, to(width)?, to(height)?);
        *view = register(tensor(t)?.view(region).map_err(fail)?)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn ef_tensor_batch(t: ef_tensor, index: u64, element: *mut ef_tensor) -> c_int {
    call(|| {
        let element = out(element, "element")?;
        let i = usize::try_from(index).map_err(|_| invalid(format!("index {index}")))?;
        *element = register(tensor(t)?.batch(i).map_err(fail)?)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn ef_tensor_map(t: ef_tensor, access_code: u32, map: *mut ef_map) -> c_int {
    map_with(t, None, access_code, map)
}

#[no_mangle]
pub unsafe extern "C" fn ef_tensor_map_typed(
    t: ef_tensor,
    dtype_code: u32,
    access_code: u32,
    map: *mut ef_map,
) -> c_int {
    match desc::dtype_from_code(dtype_code) {
        Some(d) => map_with(t, Some(d), access_code, map),
        None => call(|| Err(invalid(format!("dtype code {dtype_code}")))),
    }
}

#[no_mangle]
pub unsafe extern "C" fn ef_tensor_unmap(map: *mut ef_map) -> c_int {
    call(|| {
        let m = out(map, "map")?;
        let mut maps = MAPS.lock().unwrap_or_else(|p| p.into_inner());
        let i = usize::try_from(m.slot).ok().filter(|&i| i < maps.slots.len());
        let Some(i) = i else {
            return Err((EF_NOT_REGISTERED, format!("map slot {} was never issued", m.slot)));
        };
        let entry = &mut maps.slots[i];
        if entry.0 != m.generation || entry.1.is_none() {
            return Err((EF_STALE, format!("map slot {i} generation {} is not live", m.generation)));
        }
        let gone = entry.1.take();
        entry.0 += 1;
        maps.free.push(i);
        drop(maps);
        drop(gone);
        *m = ef_map { slot: 0, generation: 0, data: std::ptr::null_mut(), size: 0 };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn ef_tensor_clone_fd(t: ef_tensor, fd: *mut c_int) -> c_int {
    call(|| {
        let fd = out(fd, "fd")?;
        *fd = tensor(t)?.clone_fd().map_err(fail)?.into_raw_fd();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn ef_tensor_ndim(t: ef_tensor, ndim: *mut usize) -> c_int {
    call(|| {
        let n = out(ndim, "ndim")?;
        *n = tensor(t)?.shape().len();
        Ok(())
    })
}

/// Copy up to `capacity` values; `EF_TOO_SMALL` (and nothing written) when they do not fit.
fn copy_out<T: Copy>(src: &[T], dst: *mut T, capacity: usize) -> Outcome<()> {
    if src.len() > capacity {
        return Err((EF_TOO_SMALL, format!("{} values do not fit in {capacity}", src.len())));
    }
    if src.is_empty() {
        return Ok(());
    }
    if dst.is_null() {
        return Err(invalid("output array is NULL"));
    }
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) };
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn ef_tensor_shape(t: ef_tensor, shape: *mut u64, capacity: usize) -> c_int {
    call(|| {
        let s: Vec<u64> = tensor(t)?.shape().iter().map(|&d| d as u64).collect();
        copy_out(&s, shape, capacity)
    })
}

#[no_mangle]
pub unsafe extern "C" fn ef_tensor_strides(t: ef_tensor, strides: *mut i64, capacity: usize) -> c_int {
    call(|| {
        let s: Vec<i64> = tensor(t)?.byte_strides().iter().map(|&d| d as i64).collect();
        copy_out(&s, strides, capacity)
    })
}

#[no_mangle]
pub unsafe extern "C" fn ef_tensor_dtype(t: ef_tensor, code: *mut u32) -> c_int {
    call(|| {
        let c = out(code, "dtype")?;
        *c = desc::dtype_code(tensor(t)?.dtype());
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn ef_tensor_format(t: ef_tensor, code: *mut u32) -> c_int {
    call(|| {
        let c = out(code, "format")?;
        *c = tensor(t)?.format().map_or(0, desc::format_code);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn ef_tensor_memory(t: ef_tensor, code: *mut u32) -> c_int {
    call(|| {
        let c = out(code, "memory")?;
        *c = tensor(t)?.memory().code();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn ef_tensor_size(t: ef_tensor, bytes: *mut u64) -> c_int {
    call(|| {
        let b = out(bytes, "size")?;
        *b = tensor(t)?.size() as u64;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn ef_tensor_identity(t: ef_tensor, id: *mut u64) -> c_int {
    call(|| {
        let i = out(id, "identity")?;
        *i = tensor(t)?.buffer_identity().id();
        Ok(())
    })
}

/// Write the blob into `buf` (`capacity` bytes) and its length into `len`. With a buffer too
/// small (NULL and 0 included) the status is `EF_TOO_SMALL` and `len` still says how many bytes
/// are needed: call once to size, once to fill.
#[no_mangle]
pub unsafe extern "C" fn ef_tensor_export_blob(
    t: ef_tensor,
    mode: u32,
    buf: *mut u8,
    capacity: usize,
    len: *mut usize,
) -> c_int {
    call(|| {
        let len = out(len, "len")?;
        let mode = match mode {
            0 => TransportMode::Reference,
            1 => TransportMode::Inline,
            m => return Err(invalid(format!("transport mode {m} (0 reference, 1 inline)"))),
        };
        let bytes = blob::export(&tensor(t)?, mode).map_err(fail)?;
        *len = bytes.len();
        copy_out(&bytes, buf, capacity)
    })
}

#[no_mangle]
pub unsafe extern "C" fn ef_tensor_import_blob(bytes: *const u8, len: usize, t: *mut ef_tensor) -> c_int {
    call(|| {
        let t = out(t, "tensor")?;
        if bytes.is_null() {
            return Err(invalid("blob is NULL"));
        }
        let b = unsafe { std::slice::from_raw_parts(bytes, len) };
        *t = register(blob::import(b).map_err(fail)?)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn ef_tensor_export_descriptor(t: ef_tensor, d: *mut ef_tensor_desc) -> c_int {
    call(|| {
        let d = out(d, "descriptor")?;
        *d = desc::export_descriptor(&tensor(t)?).map_err(fail)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn ef_tensor_import_descriptor(
    d: *const ef_tensor_desc,
    access_code: u32,
    t: *mut ef_tensor,
) -> c_int {
    call(|| {
        let t = out(t, "tensor")?;
        let d = unsafe { d.as_ref() }.ok_or_else(|| invalid("descriptor is NULL"))?;
        *t = register(desc::import_descriptor(d, access(access_code)?).map_err(fail)?)?;
        Ok(())
    })
}

/// Release the handle. Its generation moves on: the handle, and every copy of it, is refused from
/// now on. The buffer goes when nothing else (a view, a map, an import) holds it.
#[no_mangle]
pub extern "C" fn ef_tensor_free(t: ef_tensor) -> c_int {
    call(|| {
        let gone = Registry::global().remove(key(t)?).map_err(fail)?;
        drop(gone);
        Ok(())
    })
}

#[cfg(test)]
mod conformance;
