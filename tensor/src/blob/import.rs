//! Import: parsing a blob is parsing hostile input. Every count and length is checked against the
//! real buffer before anything is allocated or trusted; a malformed field is an error naming it.

use super::*;
use crate::desc::{dtype_from_code, image_span};
use crate::format::{PixelFormat, PixelLayout};
use crate::image::{check_image, check_row_stride, ImageDesc};
use crate::preprocess::Colorimetry;
use crate::tensor::{byte_count, import_storage, TensorOptions};
use std::os::fd::{FromRawFd, OwnedFd};

/// Rebuild a tensor from a blob; an inline blob lands in the process heap.
pub fn import(bytes: &[u8]) -> Result<TensorDyn> {
    import_with_memory(bytes, TensorMemory::Mem)
}

/// Rebuild a tensor from a blob; an inline blob's new allocation comes from `memory`. A
/// reference blob's tensor is over the producer's own buffers (dup'd fds), whatever `memory`.
pub fn import_with_memory(bytes: &[u8], memory: TensorMemory) -> Result<TensorDyn> {
    build(parse(bytes)?, memory, None)
}

/// Rebuild a reference blob that came from another process together with its fds (`SCM_RIGHTS`,
/// `pidfd_getfd`): the blob's handles are the producer's fd numbers, meaningless here, so each
/// distinct handle, in order of first appearance in the plane records, stands for the next of
/// `fds`. The counts must agree exactly: a spare fd or a missing one means the blob and the fds
/// did not travel together. The `pid` is not checked (it is the producer's, by construction);
/// everything else is, as in [`import`]. The import dups what it keeps; `fds` stay the caller's.
pub fn import_with_fds(bytes: &[u8], fds: &[OwnedFd]) -> Result<TensorDyn> {
    build(parse(bytes)?, TensorMemory::Mem, Some(fds))
}

/// The regions appended after the plane records, each `(tag, bytes)`, in order. The whole blob
/// is validated first (as [`import`] does, without building anything), then the regions' own
/// framing: a tag, a `u32` length, the bytes and zero padding to 8, back to back up to
/// `total_len`. A region that overruns, a non-zero pad or a gap is refused.
pub fn appended_regions(blob: &[u8]) -> Result<Vec<([u8; 4], &[u8])>> {
    let p = parse(blob)?;
    let mut out = Vec::new();
    let mut at = p.records_end;
    while at < blob.len() {
        if blob.len() - at < APPENDED_HEADER_LEN {
            return Err(malformed(
                "appended",
                format!("{} bytes at {at} are not a region header", blob.len() - at),
            ));
        }
        let tag: [u8; 4] = bytes(blob, at, "appended tag")?;
        let len = u32_at(blob, at + 4, "appended len")? as usize;
        let start = at + APPENDED_HEADER_LEN;
        let end = start.checked_add(len).filter(|&e| e <= blob.len()).ok_or_else(|| {
            malformed("appended", format!("a {len}-byte region at {at} runs past total_len"))
        })?;
        let next = align(end, 8);
        if next > blob.len() {
            return Err(malformed("appended", "a region's padding runs past total_len"));
        }
        zero_padding(blob, end, next, "appended")?;
        out.push((tag, &blob[start..end]));
        at = next;
    }
    Ok(out)
}

struct Header {
    planes_bytes: u64,
    storage_kind: u32,
    pid: u32,
    fence_fd: i32,
    dtype: u32,
    quant_axis: i32,
    cpu_access: u16,
}

struct Record<'a> {
    handle: i64,
    offset: u64,
    stride: u64,
    size: u64,
    used: u64,
    modifier: u64,
    handle_bytes: &'a [u8],
    data: &'a [u8],
}

struct Parsed<'a> {
    h: Header,
    shape: Vec<u64>,
    strides: Vec<i64>,
    scales: Vec<f32>,
    zps: Vec<i32>,
    strings: [&'a str; 5],
    /// Where the plane records end: appended regions lie between here and `total_len`.
    records_end: usize,
    planes: Vec<Record<'a>>,
}

fn bytes<const N: usize>(b: &[u8], at: usize, field: &'static str) -> Result<[u8; N]> {
    at.checked_add(N)
        .and_then(|end| b.get(at..end))
        .map(|s| s.try_into().expect("N bytes"))
        .ok_or_else(|| malformed(field, format!("{N} bytes at {at} run past the end of the blob")))
}

fn u64_at(b: &[u8], at: usize, f: &'static str) -> Result<u64> {
    bytes(b, at, f).map(u64::from_le_bytes)
}
fn i64_at(b: &[u8], at: usize, f: &'static str) -> Result<i64> {
    bytes(b, at, f).map(i64::from_le_bytes)
}
fn u32_at(b: &[u8], at: usize, f: &'static str) -> Result<u32> {
    bytes(b, at, f).map(u32::from_le_bytes)
}
fn i32_at(b: &[u8], at: usize, f: &'static str) -> Result<i32> {
    bytes(b, at, f).map(i32::from_le_bytes)
}
fn u16_at(b: &[u8], at: usize, f: &'static str) -> Result<u16> {
    bytes(b, at, f).map(u16::from_le_bytes)
}

fn zero_padding(b: &[u8], from: usize, to: usize, field: &'static str) -> Result<()> {
    match b.get(from..to) {
        Some(pad) if pad.iter().all(|&x| x == 0) => Ok(()),
        Some(_) => Err(malformed(field, format!("padding bytes {from}..{to} are not zero"))),
        None => Err(malformed(field, format!("padding {from}..{to} runs past the end of the blob"))),
    }
}

/// Structural parse: every region located and bounded by the real buffer before anything is
/// allocated from a count. Semantic checks are `build`'s.
fn parse(b: &[u8]) -> Result<Parsed<'_>> {
    if b.len() < HEADER_LEN {
        return Err(malformed("total_len", format!("{} bytes, the header alone is {HEADER_LEN}", b.len())));
    }
    // Before any other field is trusted: a set bit may change what the rest of the blob means.
    let required = u64_at(b, header::REQUIRED_MASK, "required_mask")?;
    if required & !SUPPORTED_REQUIRED_MASK != 0 {
        return Err(Error::UnsupportedRequired { mask: required, supported: SUPPORTED_REQUIRED_MASK });
    }
    let magic = u32_at(b, header::MAGIC, "magic")?;
    if magic != MAGIC {
        return Err(malformed("magic", format!("{magic:#010x} is not a tensor blob's {MAGIC:#010x}")));
    }
    let version = u16_at(b, header::VERSION, "version")?;
    if version != VERSION {
        return Err(malformed("version", format!("{version}; this reader reads {VERSION}")));
    }
    let total = u64_at(b, header::TOTAL_LEN, "total_len")?;
    if total != b.len() as u64 {
        return Err(malformed("total_len", format!("{total}, but the blob is {} bytes", b.len())));
    }
    let h = Header {
        planes_bytes: u64_at(b, header::PLANES_BYTES, "planes_bytes")?,
        storage_kind: u32_at(b, header::STORAGE_KIND, "storage_kind")?,
        pid: u32_at(b, header::PID, "pid")?,
        fence_fd: i32_at(b, header::FENCE_FD, "fence_fd")?,
        dtype: u32_at(b, header::DTYPE, "dtype")?,
        quant_axis: i32_at(b, header::QUANT_AXIS, "quant_axis")?,
        cpu_access: u16_at(b, header::CPU_ACCESS, "cpu_access")?,
    };
    let shape_len = u64::from(u16_at(b, header::SHAPE_LEN, "shape_len")?);
    let strides_len = u64::from(u16_at(b, header::STRIDES_LEN, "strides_len")?);
    let scales_len = u64::from(u32_at(b, header::QUANT_SCALES_LEN, "quant_scales_len")?);
    let zps_len = u64::from(u32_at(b, header::QUANT_ZERO_POINTS_LEN, "quant_zero_points_len")?);
    let strings_bytes = u64::from(u32_at(b, header::STRINGS_BYTES, "strings_bytes")?);
    let plane_count = u64::from(u32_at(b, header::PLANE_COUNT, "plane_count")?);

    // Each region's end, derived from the header alone and bounded by the buffer. The checks
    // overlap (a later end bounds an earlier one) but each names the field that overran.
    let len = b.len() as u64;
    let region = |start: u64, count: u64, width: u64, field: &'static str| -> Result<u64> {
        count.checked_mul(width).and_then(|n| start.checked_add(n)).filter(|&end| end <= len).ok_or_else(
            || malformed(field, format!("{count} x {width} bytes from {start} overrun a {len}-byte blob")),
        )
    };
    let shape_end = region(HEADER_LEN as u64, shape_len, 8, "shape_len")?;
    let strides_end = region(shape_end, strides_len, 8, "strides_len")?;
    let scales_end = region(strides_end, scales_len, 4, "quant_scales_len")?;
    let zps_end = region(scales_end, zps_len, 4, "quant_zero_points_len")?;
    let strings_end = region(zps_end, strings_bytes, 1, "strings_bytes")?;
    let planes_start = region(strings_end.next_multiple_of(8), 0, 1, "strings_bytes")?;
    let planes_end = region(planes_start, h.planes_bytes, 1, "planes_bytes")?;
    // Beyond `planes_end` and within `total_len`: regions appended by later producers, which
    // this reader skips, as append-only evolution requires.
    if plane_count > h.planes_bytes / PLANE_RECORD_LEN as u64 {
        return Err(malformed(
            "plane_count",
            format!("{plane_count} records cannot fit in {} plane bytes", h.planes_bytes),
        ));
    }
    // Every region lies inside the buffer, so these conversions and the allocations sized by the
    // counts below are bounded by what was really received.
    let (shape_end, strides_end, scales_end, zps_end) =
        (shape_end as usize, strides_end as usize, scales_end as usize, zps_end as usize);
    let (strings_end, planes_start, planes_end) =
        (strings_end as usize, planes_start as usize, planes_end as usize);
    zero_padding(b, strings_end, planes_start, "strings_bytes")?;

    let shape = (HEADER_LEN..shape_end).step_by(8).map(|at| u64_at(b, at, "shape")).collect::<Result<_>>()?;
    let strides =
        (shape_end..strides_end).step_by(8).map(|at| i64_at(b, at, "strides")).collect::<Result<_>>()?;
    let scales = (strides_end..scales_end)
        .step_by(4)
        .map(|at| bytes(b, at, "quant_scales").map(f32::from_le_bytes))
        .collect::<Result<_>>()?;
    let zps = (scales_end..zps_end)
        .step_by(4)
        .map(|at| i32_at(b, at, "quant_zero_points"))
        .collect::<Result<_>>()?;

    let mut strings = [""; 5];
    let mut at = zps_end;
    for (slot, name) in strings.iter_mut().zip(STRINGS) {
        let n = u32_at(b, at, name)? as usize;
        let start = at + 4;
        let end = start
            .checked_add(n)
            .filter(|&e| e <= strings_end)
            .ok_or_else(|| malformed(name, format!("{n} bytes run past the strings region")))?;
        *slot =
            std::str::from_utf8(&b[start..end]).map_err(|e| malformed(name, format!("not UTF-8: {e}")))?;
        let padded = align(end, 4);
        if padded > strings_end {
            return Err(malformed(name, "padding runs past the strings region"));
        }
        zero_padding(b, end, padded, name)?;
        at = padded;
    }
    if at != strings_end {
        return Err(malformed(
            "strings_bytes",
            format!("the five strings end at {at}, the region at {strings_end}"),
        ));
    }

    let mut planes = Vec::with_capacity(plane_count as usize);
    let mut at = planes_start;
    for _ in 0..plane_count {
        if planes_end - at < PLANE_RECORD_LEN {
            return Err(malformed("planes_bytes", "a plane record runs past the plane region"));
        }
        let hb_len = u32_at(b, at + plane::HANDLE_BYTES_LEN, "handle_bytes_len")? as usize;
        let data_len = u32_at(b, at + plane::DATA_LEN, "data_len")? as usize;
        let hb_start = at + PLANE_RECORD_LEN;
        let hb_end = hb_start.checked_add(hb_len).filter(|&e| e <= planes_end).ok_or_else(|| {
            malformed("handle_bytes_len", format!("{hb_len} bytes run past the plane region"))
        })?;
        let data_end = hb_end
            .checked_add(data_len)
            .filter(|&e| e <= planes_end)
            .ok_or_else(|| malformed("data_len", format!("{data_len} bytes run past the plane region")))?;
        let next = align(data_end, 8);
        if next > planes_end {
            return Err(malformed("planes_bytes", "a plane record's padding runs past the plane region"));
        }
        zero_padding(b, data_end, next, "data_len")?;
        planes.push(Record {
            handle: i64_at(b, at + plane::HANDLE, "handle")?,
            offset: u64_at(b, at + plane::OFFSET, "offset")?,
            stride: u64_at(b, at + plane::STRIDE, "stride")?,
            size: u64_at(b, at + plane::SIZE, "size")?,
            used: u64_at(b, at + plane::USED, "used")?,
            modifier: u64_at(b, at + plane::MODIFIER, "modifier")?,
            handle_bytes: &b[hb_start..hb_end],
            data: &b[hb_end..data_end],
        });
        at = next;
    }
    if at != planes_end {
        return Err(malformed(
            "planes_bytes",
            format!("the records end at {at}, the region at {planes_end}"),
        ));
    }
    Ok(Parsed { h, shape, strides, scales, zps, strings, records_end: planes_end, planes })
}

pub(super) fn quantization(
    shape: &[usize],
    axis: i32,
    scales: &[f32],
    zps: &[i32],
) -> Result<Option<Quantization>> {
    let positive = |s: f32| s.is_finite() && s > 0.0;
    match axis {
        QUANT_NONE => {
            if !scales.is_empty() || !zps.is_empty() {
                return Err(malformed("quant_scales", "scales or zero points without a quantization axis"));
            }
            Ok(None)
        }
        QUANT_PER_TENSOR => {
            let [scale] = scales else {
                return Err(malformed(
                    "quant_scales",
                    format!("per-tensor needs 1 scale, got {}", scales.len()),
                ));
            };
            if zps.len() > 1 {
                return Err(malformed(
                    "quant_zero_points",
                    format!("per-tensor has {} zero points", zps.len()),
                ));
            }
            if !positive(*scale) {
                return Err(malformed("quant_scales", format!("scale {scale} must be finite and > 0")));
            }
            Ok(Some(Quantization::PerTensor { scale: *scale, zero_point: zps.first().copied().unwrap_or(0) }))
        }
        a if a >= 0 => {
            let axis = a as usize;
            let Some(&n) = shape.get(axis) else {
                return Err(malformed("quant_axis", format!("axis {axis} of a rank-{} tensor", shape.len())));
            };
            if scales.len() != n {
                return Err(malformed(
                    "quant_scales",
                    format!("{} scales for a dimension of {n}", scales.len()),
                ));
            }
            let zero_points = match zps.len() {
                0 => vec![0; n],
                m if m == n => zps.to_vec(),
                m => return Err(malformed("quant_zero_points", format!("{m} zero points for {n} scales"))),
            };
            Quantization::per_channel(axis, scales.to_vec(), zero_points)
                .map(Some)
                .map_err(|e| malformed("quant_scales", e.to_string()))
        }
        a => Err(malformed("quant_axis", format!("{a} is neither an axis, -1 nor -2"))),
    }
}

fn colorimetry(encoding: &str, range: &str) -> Result<Option<Colorimetry>> {
    let space = match encoding {
        "" => None,
        "bt601" => Some(ColorSpace::Bt601),
        "bt709" => Some(ColorSpace::Bt709),
        "bt2020" => Some(ColorSpace::Bt2020),
        other => return Err(malformed("color_encoding", format!("unknown matrix {other:?}"))),
    };
    let range = match range {
        "" => None,
        "limited" => Some(ColorRange::Limited),
        "full" => Some(ColorRange::Full),
        other => return Err(malformed("color_range", format!("unknown range {other:?}"))),
    };
    match (space, range) {
        (None, None) => Ok(None),
        (Some(s), Some(r)) => Ok(Some(Colorimetry::new(s, r))),
        _ => Err(malformed("color_range", "color_encoding and color_range are set together or not at all")),
    }
}

/// (width, height) of an image whose addressing shape is `shape`.
fn grid_size(format: PixelFormat, shape: &[usize]) -> Option<(usize, usize)> {
    let (w, h) = match (format.layout(), shape) {
        (PixelLayout::Bitstream, &[len]) => (len, 1),
        (PixelLayout::Planar, &[3, h, w]) if format == PixelFormat::PlanarRgb => (w, h),
        (PixelLayout::Packed, &[h, w]) if format.channels() == 1 => (w, h),
        (PixelLayout::Packed, &[h, w, _]) if format.channels() > 1 => (w, h),
        (PixelLayout::Planar | PixelLayout::SemiPlanar, &[h, w]) if format != PixelFormat::PlanarRgb => {
            (w, h)
        }
        _ => return None,
    };
    (format.addressing_shape(w, h) == shape).then_some((w, h))
}

fn to_usize(v: u64, field: &'static str) -> Result<usize> {
    usize::try_from(v).map_err(|_| malformed(field, format!("{v} does not fit usize")))
}

/// Dup an fd named by number in this process. The number comes off the wire, so it is never
/// turned into a `BorrowedFd` (which would promise it is open): `F_DUPFD_CLOEXEC` on a closed
/// number is just EBADF.
fn dup_raw(handle: i64) -> Result<OwnedFd> {
    let raw = i32::try_from(handle).map_err(|_| malformed("handle", format!("{handle} is not an fd")))?;
    let fd = unsafe { libc::fcntl(raw, libc::F_DUPFD_CLOEXEC, 0) };
    if fd < 0 {
        return Err(Error::io(format!("dup of plane handle {raw}"), std::io::Error::last_os_error()));
    }
    // A fresh descriptor this process now owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A tensor over the buffer a reference record names, checked to be the storage kind the
/// header claims.
fn over_handle(
    r: &Record<'_>,
    handles: &Handles<'_>,
    kind: TensorMemory,
    shape: Vec<usize>,
    dtype: DType,
    access: CpuAccess,
) -> Result<TensorDyn> {
    let fd = match handles {
        Handles::Local => dup_raw(r.handle)?,
        Handles::Received(map) => {
            let (_, fd) = map.iter().find(|(h, _)| *h == r.handle).expect("every record's handle is mapped");
            fd.try_clone().map_err(|e| Error::io(format!("dup of received fd for handle {}", r.handle), e))?
        }
    };
    let storage = import_storage(fd)?;
    let actual = storage.backing.memory();
    if actual != kind {
        return Err(malformed("storage_kind", format!("{kind}, but handle {} is {actual}", r.handle)));
    }
    Ok(TensorDyn::over(storage, shape, dtype, access, None))
}

/// Where a reference record's handle is resolved: in this process's fd table, or among fds
/// received with the blob (handle, fd) in the order the handles first appear.
enum Handles<'a> {
    Local,
    Received(Vec<(i64, &'a OwnedFd)>),
}

/// What `build` checks of the header and the records before it builds anything.
struct Checked {
    access: CpuAccess,
    dtype: DType,
    kind: TensorMemory,
    inline: bool,
}

fn check(p: &Parsed<'_>, fds: Option<&[OwnedFd]>) -> Result<Checked> {
    let h = &p.h;
    let access = cpu_access_from_code(h.cpu_access)
        .ok_or_else(|| malformed("cpu_access", format!("unknown code {}", h.cpu_access)))?;
    let dtype =
        dtype_from_code(h.dtype).ok_or_else(|| malformed("dtype", format!("unknown code {}", h.dtype)))?;
    let kind = TensorMemory::from_code(h.storage_kind)
        .map_err(|_| malformed("storage_kind", format!("unknown code {}", h.storage_kind)))?;
    if h.fence_fd != NO_FENCE {
        return Err(malformed(
            "fence_fd",
            format!("{}: this reader cannot wait on an acquire fence", h.fence_fd),
        ));
    }
    let Some(first) = p.planes.first() else {
        return Err(malformed("plane_count", "0: a tensor needs its bytes in at least one plane"));
    };
    let inline = first.handle == INLINE_HANDLE;
    for r in &p.planes {
        if r.handle < INLINE_HANDLE {
            return Err(malformed("handle", format!("{} is neither an fd nor -1", r.handle)));
        }
        if (r.handle == INLINE_HANDLE) != inline {
            return Err(malformed("handle", "planes are all inline or none"));
        }
        if r.modifier != 0 {
            return Err(malformed(
                "modifier",
                format!("{:#x}: only linear (0) layouts are read", r.modifier),
            ));
        }
        if !r.handle_bytes.is_empty() {
            return Err(malformed("handle_bytes", "no storage kind this reader knows has handle bytes"));
        }
        if r.used != r.size {
            return Err(malformed(
                "used",
                format!("{} of {}: a tensor's planes are always full", r.used, r.size),
            ));
        }
        if inline {
            if r.offset != 0 {
                return Err(malformed("offset", "an inline plane has no handle to be offset into"));
            }
            if r.data.len() as u64 != r.size {
                return Err(malformed(
                    "data_len",
                    format!("{} bytes for a plane of {}", r.data.len(), r.size),
                ));
            }
        } else if !r.data.is_empty() {
            return Err(malformed("data_len", "a referenced plane carries no bytes"));
        }
    }
    if inline {
        if h.pid != 0 {
            return Err(malformed("pid", "an inline blob names no process"));
        }
        if kind != TensorMemory::Mem {
            return Err(malformed(
                "storage_kind",
                format!("{kind}: an inline blob's bytes are in the blob (mem)"),
            ));
        }
    } else if fds.is_none() && h.pid != std::process::id() {
        return Err(malformed(
            "pid",
            format!(
                "{}: a reference blob's handles are fds of its producer's process; this is {}",
                h.pid,
                std::process::id()
            ),
        ));
    }
    if !inline && !matches!(kind, TensorMemory::Shm | TensorMemory::DmaBuf) {
        return Err(malformed("storage_kind", format!("{kind} has no fd to reference")));
    }
    Ok(Checked { access, dtype, kind, inline })
}

fn build(p: Parsed<'_>, memory: TensorMemory, fds: Option<&[OwnedFd]>) -> Result<TensorDyn> {
    let Checked { access, dtype, kind, inline } = check(&p, fds)?;
    let handles = match fds {
        None => Handles::Local,
        Some(fds) => {
            let mut distinct: Vec<i64> = Vec::new();
            for r in p.planes.iter().filter(|r| r.handle != INLINE_HANDLE) {
                if !distinct.contains(&r.handle) {
                    distinct.push(r.handle);
                }
            }
            if distinct.len() != fds.len() {
                return Err(malformed(
                    "handle",
                    format!("{} distinct handles but {} fds came with the blob", distinct.len(), fds.len()),
                ));
            }
            Handles::Received(distinct.into_iter().zip(fds).collect())
        }
    };
    let shape = p.shape.iter().map(|&d| to_usize(d, "shape")).collect::<Result<Vec<_>>>()?;
    let quant = quantization(&shape, p.h.quant_axis, &p.scales, &p.zps)?;
    let color = colorimetry(p.strings[3], p.strings[4])?;
    let format = match p.strings[0] {
        "" => None,
        name => Some(
            PixelFormat::from_name(name)
                .ok_or_else(|| malformed("format", format!("unknown format {name:?}")))?,
        ),
    };
    let ctx = Ctx { kind, dtype, access, inline, memory, handles };
    let mut t = match format {
        None => ctx.plain(shape, &p.strides, &p.planes)?,
        Some(f) => ctx.image(f, &shape, &p.strides, &p.planes)?,
    };
    t.quantization = quant;
    t.colorimetry = color;
    Ok(t)
}

/// A plain tensor's one record against its shape: dense strides, its row pitch, its size.
fn plain_checks(shape: &[usize], dtype: DType, strides: &[i64], r: &Record<'_>) -> Result<usize> {
    let bytes = byte_count(shape, dtype).map_err(|e| malformed("shape", e.to_string()))?;
    let dense = byte_strides(shape, dtype.size(), None);
    if !strides.is_empty() && !strides.iter().copied().eq(dense.iter().map(|&s| s as i64)) {
        return Err(malformed("strides", format!("{strides:?}: a plain tensor is dense, {dense:?}")));
    }
    let row = plain_row_stride(shape, dtype).ok_or_else(|| malformed("shape", "the row stride overflows"))?;
    if r.stride != row as u64 {
        return Err(malformed("stride", format!("{}, but rows of {shape:?} are {row} bytes", r.stride)));
    }
    if r.size != bytes as u64 {
        return Err(malformed("size", format!("{}, but {shape:?} {dtype} is {bytes} bytes", r.size)));
    }
    Ok(bytes)
}

/// An inline blob of a plain tensor, read where it lies: everything [`import`] checks, checked,
/// and the tensor's bytes borrowed from the blob instead of copied (a receiver that already
/// holds the message, e.g. a network buffer, hands them on as they are).
#[derive(Debug, Clone, PartialEq)]
pub struct DenseView<'a> {
    pub shape: Vec<usize>,
    pub dtype: DType,
    pub quantization: Option<Quantization>,
    pub cpu_access: CpuAccess,
    /// The tensor's bytes, dense in C order.
    pub data: &'a [u8],
    /// Where `data` starts in the blob.
    pub data_offset: usize,
}

/// Read an inline plain-tensor blob without copying its bytes. An image blob or a reference
/// blob is refused (`import` reads those).
pub fn dense_view(blob: &[u8]) -> Result<DenseView<'_>> {
    let p = parse(blob)?;
    let c = check(&p, None)?;
    if !c.inline {
        return Err(Error::InvalidOperation("a reference blob has no bytes to view: import it".into()));
    }
    if !p.strings[0].is_empty() {
        return Err(Error::InvalidOperation(format!(
            "a {} image is not a plain tensor: import it",
            p.strings[0]
        )));
    }
    colorimetry(p.strings[3], p.strings[4])?;
    let shape = p.shape.iter().map(|&d| to_usize(d, "shape")).collect::<Result<Vec<_>>>()?;
    let quantization = quantization(&shape, p.h.quant_axis, &p.scales, &p.zps)?;
    let [r] = &p.planes[..] else {
        return Err(malformed("plane_count", format!("{}: a plain tensor is one plane", p.planes.len())));
    };
    plain_checks(&shape, c.dtype, &p.strides, r)?;
    let data = r.data;
    // Both slices are of `blob`, so the offset is their distance.
    let data_offset = data.as_ptr() as usize - blob.as_ptr() as usize;
    Ok(DenseView { shape, dtype: c.dtype, quantization, cpu_access: c.access, data, data_offset })
}

struct Ctx<'a> {
    handles: Handles<'a>,
    kind: TensorMemory,
    dtype: DType,
    access: CpuAccess,
    inline: bool,
    memory: TensorMemory,
}

impl Ctx<'_> {
    fn plain(&self, shape: Vec<usize>, strides: &[i64], planes: &[Record<'_>]) -> Result<TensorDyn> {
        let [r] = planes else {
            return Err(malformed("plane_count", format!("{}: a plain tensor is one plane", planes.len())));
        };
        let bytes = plain_checks(&shape, self.dtype, strides, r)?;
        if !self.inline {
            let mut t = over_handle(r, &self.handles, self.kind, shape, self.dtype, self.access)?;
            t.plane_offset = Some(to_usize(r.offset, "offset")?).filter(|&o| o != 0);
            t.check_extent("the blob's plane")?;
            return Ok(t);
        }
        let opts = TensorOptions {
            memory: Some(self.memory),
            cpu_access: CpuAccess::ReadWrite,
            ..Default::default()
        };
        let mut t = TensorDyn::with_options(&shape, self.dtype, &opts)?;
        if bytes > 0 {
            t.map_with::<u8>(CpuAccess::ReadWrite)?.as_mut_slice()?.copy_from_slice(r.data);
        }
        t.access = self.access;
        Ok(t)
    }

    fn image(
        &self,
        format: PixelFormat,
        shape: &[usize],
        strides: &[i64],
        planes: &[Record<'_>],
    ) -> Result<TensorDyn> {
        let (w, h) = grid_size(format, shape).ok_or_else(|| {
            malformed("shape", format!("{shape:?} is not the addressing shape of a {} image", format.name()))
        })?;
        check_image(format, self.dtype, w, h).map_err(|e| malformed("shape", e.to_string()))?;
        if planes.len() != format.num_planes() {
            return Err(malformed(
                "plane_count",
                format!("{} for a {} image of {} planes", planes.len(), format.name(), format.num_planes()),
            ));
        }
        let esz = self.dtype.size();
        let rs = to_usize(planes[0].stride, "stride")?;
        check_row_stride(format, w, esz, rs, None).map_err(|e| malformed("stride", e.to_string()))?;
        if format.layout() == PixelLayout::Bitstream && rs != w {
            return Err(malformed("stride", format!("{rs}: a bitstream's one row is its {w} bytes")));
        }
        if image_span(format, h, rs, 1).is_none() {
            return Err(malformed("stride", format!("{rs}: the image's byte span overflows")));
        }
        let full = ImageMeta::full(format, w, h, rs, None);
        let want = byte_strides(shape, esz, Some(&full.stride_spec()));
        // Empty strides mean dense C order, which is only true of an unpadded image.
        let agrees = if strides.is_empty() {
            want == byte_strides(shape, esz, None)
        } else {
            strides.iter().copied().eq(want.iter().map(|&s| s as i64))
        };
        if !agrees {
            return Err(malformed(
                "strides",
                format!("{strides:?}, but a {} image at pitch {rs} has {want:?}", format.name()),
            ));
        }
        // Every plane, in every layout, is whole rows at its stride (the plane table's rule), so
        // a record's size is exactly stride x rows; anything else is a different geometry.
        let mut geo = Vec::with_capacity(planes.len());
        for (i, r) in planes.iter().enumerate() {
            let s = format.plane_sampling(i, esz);
            let (rows, row_bytes) = (s.rows(h), s.row_bytes(w));
            let stride = to_usize(r.stride, "stride")?;
            let size = to_usize(r.size, "size")?;
            if stride < row_bytes {
                return Err(malformed(
                    "stride",
                    format!("plane {i}: {stride} is narrower than its {row_bytes}-byte rows"),
                ));
            }
            let full = stride
                .checked_mul(rows)
                .ok_or_else(|| malformed("stride", format!("plane {i}: {rows} rows of {stride} overflow")))?;
            if size != full {
                return Err(malformed(
                    "size",
                    format!("plane {i}: {size} bytes, but {rows} rows at {stride} are {full}"),
                ));
            }
            geo.push((rows, row_bytes, stride, size));
        }
        if self.inline {
            return self.image_inline(format, w, h, rs, planes, &geo);
        }
        let table = &full.planes;
        let base = planes[0].offset;
        let one_buffer = planes.iter().zip(table).all(|(r, g)| {
            r.handle == planes[0].handle
                && r.stride == g.stride as u64
                && r.size == g.size as u64
                && base.checked_add(g.offset as u64) == Some(r.offset)
        });
        if one_buffer {
            let mut t =
                over_handle(&planes[0], &self.handles, self.kind, Vec::new(), self.dtype, self.access)?;
            t.set_image(full);
            t.plane_offset = Some(to_usize(base, "offset")?).filter(|&o| o != 0);
            t.check_extent(&format!("a {w}x{h} {} image at row stride {rs}", format.name()))?;
            return Ok(t);
        }
        let separate = format.layout() == PixelLayout::SemiPlanar
            && geo.iter().all(|&(rows, _, stride, size)| Some(size) == stride.checked_mul(rows));
        if !separate {
            return Err(malformed(
                "offset",
                format!(
                    "the {} planes neither follow its plane table in one buffer nor are separate semi-planar planes",
                    format.name()
                ),
            ));
        }
        let plane = |i: usize| -> Result<TensorDyn> {
            let (rows, row_bytes, stride, _) = geo[i];
            let mut p =
                over_handle(&planes[i], &self.handles, self.kind, Vec::new(), DType::U8, self.access)?;
            p.set_image(ImageMeta::full(PixelFormat::Gray8, row_bytes, rows, stride, None));
            p.plane_offset = Some(to_usize(planes[i].offset, "offset")?).filter(|&o| o != 0);
            p.check_extent(&format!("plane {i} of the blob"))?;
            Ok(p)
        };
        TensorDyn::from_planes(&plane(0)?, &plane(1)?, format)
    }

    /// A new allocation at the wire's pitch where this memory allows that pitch (else the
    /// format's own), filled row by row from each plane's bytes.
    fn image_inline(
        &self,
        format: PixelFormat,
        w: usize,
        h: usize,
        rs: usize,
        planes: &[Record<'_>],
        geo: &[(usize, usize, usize, usize)],
    ) -> Result<TensorDyn> {
        let esz = self.dtype.size();
        let mut desc = ImageDesc::new(w, h, format)
            .with_dtype(self.dtype)
            .with_memory(self.memory)
            .with_cpu_access(CpuAccess::ReadWrite);
        if check_row_stride(format, w, esz, rs, Some(self.memory)).is_ok() {
            desc = desc.with_row_stride(rs);
        }
        let mut t = TensorDyn::image_desc(&desc)?;
        let dst = t.plane_table();
        {
            let mut map = t.map_with::<u8>(CpuAccess::ReadWrite)?;
            let out = map.as_mut_slice()?;
            for ((r, &(rows, row_bytes, stride, _)), d) in planes.iter().zip(geo).zip(&dst) {
                let dstride = d.stride as usize;
                for row in 0..rows {
                    let src = &r.data[row * stride..row * stride + row_bytes];
                    let at = d.offset + row * dstride;
                    out[at..at + row_bytes].copy_from_slice(src);
                }
            }
        }
        t.access = self.access;
        Ok(t)
    }
}
