//! The tensor blob: a size-prefixed, append-only serialization of one tensor, for sending it to
//! another library, process or host. The layout is documented field by field in `docs/blob.md`;
//! the constants here are that table.
//!
//! **Export borrows, import dups, nobody shares.** A reference-mode export writes the tensor's own
//! fds and makes no fd syscalls (no dup, no fstat, no map), so the blob is valid only while the
//! tensor lives. Import dups every fd it keeps, so the result is independent of the producer.
//!
//! **Parsing is parsing hostile input.** Every count and length is checked against the real
//! buffer before anything is allocated from it, all arithmetic on wire values is checked, strings
//! are `from_utf8` (never lossy), and each refusal names the field that carried the bad value.

use crate::access::CpuAccess;
use crate::desc::{dtype_code, dtype_from_code, image_span};
use crate::dtype::DType;
use crate::format::{byte_strides, PixelFormat, PixelLayout, PlaneGeometry};
use crate::image::{check_image, check_row_stride, ImageDesc, ImageMeta};
use crate::memory::TensorMemory;
use crate::preprocess::{ColorRange, ColorSpace, Colorimetry, Quantization};
use crate::tensor::{byte_count, import_storage, TensorDyn, TensorOptions};
use crate::{Error, Result};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `magic` field value: the bytes "EFTB" read as a little-endian u32.
pub const MAGIC: u32 = u32::from_le_bytes(*b"EFTB");
/// `version` this build writes and reads. Appending a region does not change it.
pub const VERSION: u16 = 1;
pub const HEADER_LEN: usize = 72;
/// The fixed scalar block of one plane record (the schemas' `TensorPlane` minimum).
pub const PLANE_RECORD_LEN: usize = 56;
/// `required_mask` bits this reader implements. None yet: any bit set is refused.
pub const SUPPORTED_REQUIRED_MASK: u64 = 0;
/// `handle` of an inline plane.
pub const INLINE_HANDLE: i64 = -1;
/// `fence_fd` meaning "no fence".
pub const NO_FENCE: i32 = -1;
/// `quant_axis` values below zero.
pub const QUANT_NONE: i32 = -2;
pub const QUANT_PER_TENSOR: i32 = -1;
/// The five strings, in wire order.
pub const STRINGS: [&str; 5] = ["format", "color_space", "color_transfer", "color_encoding", "color_range"];

/// Byte offsets of the header fields.
pub mod header {
    pub const TOTAL_LEN: usize = 0;
    pub const REQUIRED_MASK: usize = 8;
    pub const PLANES_BYTES: usize = 16;
    pub const MAGIC: usize = 24;
    pub const STORAGE_KIND: usize = 28;
    pub const PID: usize = 32;
    pub const FENCE_FD: usize = 36;
    pub const DTYPE: usize = 40;
    pub const QUANT_AXIS: usize = 44;
    pub const QUANT_SCALES_LEN: usize = 48;
    pub const QUANT_ZERO_POINTS_LEN: usize = 52;
    pub const STRINGS_BYTES: usize = 56;
    pub const PLANE_COUNT: usize = 60;
    pub const VERSION: usize = 64;
    pub const CPU_ACCESS: usize = 66;
    pub const SHAPE_LEN: usize = 68;
    pub const STRIDES_LEN: usize = 70;
}

/// Byte offsets inside one plane record's scalar block.
pub mod plane {
    pub const HANDLE: usize = 0;
    pub const OFFSET: usize = 8;
    pub const STRIDE: usize = 16;
    pub const SIZE: usize = 24;
    pub const USED: usize = 32;
    pub const MODIFIER: usize = 40;
    pub const HANDLE_BYTES_LEN: usize = 48;
    pub const DATA_LEN: usize = 52;
}

/// How the planes travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransportMode {
    /// fds, the producer's pid and plane offsets: zero-copy, valid while the producer's tensor
    /// lives, meaningful only on the same host.
    Reference,
    /// The plane bytes themselves: works anywhere; the import is a new allocation.
    Inline,
}

/// `cpu_access` wire code. 0 is not a code, so a zeroed field is refused rather than read as
/// "no access".
pub const fn cpu_access_code(a: CpuAccess) -> u16 {
    match a {
        CpuAccess::None => 1,
        CpuAccess::Read => 2,
        CpuAccess::Write => 3,
        CpuAccess::ReadWrite => 4,
    }
}

pub fn cpu_access_from_code(code: u16) -> Option<CpuAccess> {
    CpuAccess::ALL.into_iter().find(|&a| cpu_access_code(a) == code)
}

/// Bytes of the blob that starts `prefix`, once its first 8 bytes are there (`None` before):
/// what a stream reader needs to cut blobs out of a byte stream.
pub fn frame_len(prefix: &[u8]) -> Result<Option<usize>> {
    let Some(head) = prefix.get(..8) else { return Ok(None) };
    let n = u64::from_le_bytes(head.try_into().expect("8 bytes"));
    if n < HEADER_LEN as u64 {
        return Err(malformed("total_len", format!("{n} is shorter than the {HEADER_LEN}-byte header")));
    }
    usize::try_from(n).map(Some).map_err(|_| malformed("total_len", format!("{n} does not fit usize")))
}

fn malformed(field: &'static str, reason: impl Into<String>) -> Error {
    Error::MalformedBlob { field, reason: reason.into() }
}

const fn align(v: usize, to: usize) -> usize {
    v.next_multiple_of(to)
}

struct Out(Vec<u8>);

impl Out {
    fn put(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }
    fn pad(&mut self, to: usize) {
        let n = align(self.0.len(), to);
        self.0.resize(n, 0);
    }
    fn set(&mut self, at: usize, b: &[u8]) {
        self.0[at..at + b.len()].copy_from_slice(b);
    }
}

/// One plane as it is written.
struct OutPlane<'a> {
    handle: i64,
    offset: u64,
    stride: u64,
    size: u64,
    data: &'a [u8],
}

fn encoding_name(s: ColorSpace) -> &'static str {
    match s {
        ColorSpace::Bt601 => "bt601",
        ColorSpace::Bt709 => "bt709",
        ColorSpace::Bt2020 => "bt2020",
    }
}

fn range_name(r: ColorRange) -> &'static str {
    match r {
        ColorRange::Limited => "limited",
        ColorRange::Full => "full",
    }
}

fn quant_fields(t: &TensorDyn) -> Result<(i32, Vec<f32>, Vec<i32>)> {
    let (axis, scales, zps) = match &t.quantization {
        None => (QUANT_NONE, Vec::new(), Vec::new()),
        Some(Quantization::PerTensor { scale, zero_point }) => {
            (QUANT_PER_TENSOR, vec![*scale], vec![*zero_point])
        }
        Some(Quantization::PerChannel { axis, scales, zero_points }) => {
            let a = i32::try_from(*axis)
                .map_err(|_| Error::InvalidArgument(format!("quantization axis {axis} does not fit i32")))?;
            (a, scales.clone(), zero_points.clone())
        }
    };
    // What import would refuse is refused here, so a blob this exports always imports.
    quantization(&t.shape, axis, &scales, &zps)
        .map_err(|e| Error::InvalidArgument(format!("the tensor's quantization cannot be carried: {e}")))?;
    Ok((axis, scales, zps))
}

/// Serialize `t`. Refused: a batched image (one blob is one image; export `batch(n)` elements),
/// a reference export of a tensor whose buffer has no fd (`mem`: a caller who asked for a
/// reference would otherwise get a copy without being told), and a reference export of a view
/// (its planes are windows whose positions depend on the parent's geometry). A view exports
/// inline as its window alone, repacked at the format's natural pitch.
pub fn export(t: &TensorDyn, mode: TransportMode) -> Result<Vec<u8>> {
    if let Some(n) = t.batch_len() {
        return Err(Error::InvalidOperation(format!(
            "a blob carries one image, not a batch of {n}: export batch(i) elements one by one"
        )));
    }
    let reference = mode == TransportMode::Reference;
    if t.is_view() {
        if reference {
            return Err(Error::InvalidOperation(
                "a view's planes are windows of its parent's buffer: export it inline, or export the parent"
                    .into(),
            ));
        }
        // Its rows at the parent's pitch would carry the parent's pixels between them.
        let mut window = t.copy_to_flat()?;
        window.access = t.access;
        window.quantization = t.quantization.clone();
        window.colorimetry = t.colorimetry;
        return export(&window, mode);
    }
    let esz = t.dtype.size();
    let img = t.image.as_deref();
    let strides: Vec<i64> = match img {
        None => Vec::new(),
        Some(i) => {
            let full = ImageMeta::full(i.format, i.width, i.height, i.row_stride, None);
            byte_strides(&t.shape, esz, Some(&full.stride_spec())).into_iter().map(|s| s as i64).collect()
        }
    };
    let (axis, scales, zps) = quant_fields(t)?;
    let (encoding, range) = match t.colorimetry {
        Some(c) => (encoding_name(c.space), range_name(c.range)),
        None => ("", ""),
    };
    let strings = [img.map_or("", |i| i.format.name()), "", "", encoding, range];

    // The tensors holding bytes: the tensor itself, and a multi-plane image's chroma buffer.
    let mut parts: Vec<(&TensorDyn, Vec<PlaneGeometry>)> = vec![(t, own_planes(t)?)];
    if let Some(c) = t.chroma() {
        parts.push((c, own_planes(c)?));
    }
    let storage_kind = if reference {
        for (p, _) in &parts {
            if p.fd().is_none() {
                return Err(Error::InvalidOperation(format!(
                    "tensor `{}` lives in {} memory, which has no handle to reference: export it inline",
                    t.name(),
                    p.memory()
                )));
            }
            if p.memory() != t.memory() {
                return Err(Error::InvalidOperation(format!(
                    "planes in {} and {} memory: one blob has one storage kind",
                    t.memory(),
                    p.memory()
                )));
            }
        }
        t.memory()
    } else {
        // Inline bytes live in the blob itself.
        TensorMemory::Mem
    };

    let maps = if reference {
        Vec::new()
    } else {
        parts
            .iter()
            .map(
                |(p, _)| if p.extent() == 0 { Ok(None) } else { p.map_with::<u8>(CpuAccess::Read).map(Some) },
            )
            .collect::<Result<Vec<_>>>()?
    };
    let mut planes = Vec::new();
    for (i, (p, table)) in parts.iter().enumerate() {
        for g in table {
            let stride = u64::try_from(g.stride)
                .map_err(|_| Error::InvalidOperation(format!("negative plane stride {}", g.stride)))?;
            planes.push(if reference {
                let fd = p.fd().expect("checked above");
                OutPlane {
                    handle: i64::from(fd.as_raw_fd()),
                    offset: (p.byte_offset() + g.offset) as u64,
                    stride,
                    size: g.size as u64,
                    data: &[],
                }
            } else {
                if u32::try_from(g.size).is_err() {
                    return Err(Error::InvalidOperation(format!(
                        "an inline plane of {} bytes exceeds the 4 GiB a plane record can carry",
                        g.size
                    )));
                }
                let data = match &maps[i] {
                    Some(m) => &m[g.offset..g.offset + g.size],
                    None => &[][..],
                };
                OutPlane { handle: INLINE_HANDLE, offset: 0, stride, size: g.size as u64, data }
            });
        }
    }

    let too_many = |what: &str, n: usize| Error::InvalidOperation(format!("{n} {what} do not fit a blob"));
    let shape_len = u16::try_from(t.shape.len()).map_err(|_| too_many("dimensions", t.shape.len()))?;
    let strides_len = u16::try_from(strides.len()).map_err(|_| too_many("strides", strides.len()))?;
    let scales_len = u32::try_from(scales.len()).map_err(|_| too_many("scales", scales.len()))?;
    let zps_len = u32::try_from(zps.len()).map_err(|_| too_many("zero points", zps.len()))?;
    let plane_count = u32::try_from(planes.len()).map_err(|_| too_many("planes", planes.len()))?;

    let mut o = Out(Vec::with_capacity(
        HEADER_LEN + 256 + planes.iter().map(|p| PLANE_RECORD_LEN + p.data.len() + 8).sum::<usize>(),
    ));
    o.put(&[0; HEADER_LEN]);
    for &d in &t.shape {
        o.put(&(d as u64).to_le_bytes());
    }
    for s in &strides {
        o.put(&s.to_le_bytes());
    }
    for s in &scales {
        o.put(&s.to_le_bytes());
    }
    for z in &zps {
        o.put(&z.to_le_bytes());
    }
    let strings_start = o.0.len();
    for s in strings {
        o.put(&(s.len() as u32).to_le_bytes());
        o.put(s.as_bytes());
        o.pad(4);
    }
    let strings_bytes = (o.0.len() - strings_start) as u32;
    o.pad(8);
    let planes_start = o.0.len();
    for p in &planes {
        o.put(&p.handle.to_le_bytes());
        o.put(&p.offset.to_le_bytes());
        o.put(&p.stride.to_le_bytes());
        o.put(&p.size.to_le_bytes());
        o.put(&p.size.to_le_bytes()); // used: a tensor's planes are always full
        o.put(&0u64.to_le_bytes()); // modifier: linear
        o.put(&0u32.to_le_bytes()); // handle_bytes: no storage kind has any today
        o.put(&(p.data.len() as u32).to_le_bytes());
        o.put(p.data);
        o.pad(8);
    }
    let planes_bytes = (o.0.len() - planes_start) as u64;
    drop(maps);

    let total = o.0.len() as u64;
    let pid = if reference { std::process::id() } else { 0 };
    o.set(header::TOTAL_LEN, &total.to_le_bytes());
    o.set(header::REQUIRED_MASK, &0u64.to_le_bytes());
    o.set(header::PLANES_BYTES, &planes_bytes.to_le_bytes());
    o.set(header::MAGIC, &MAGIC.to_le_bytes());
    o.set(header::STORAGE_KIND, &storage_kind.code().to_le_bytes());
    o.set(header::PID, &pid.to_le_bytes());
    o.set(header::FENCE_FD, &NO_FENCE.to_le_bytes());
    o.set(header::DTYPE, &dtype_code(t.dtype).to_le_bytes());
    o.set(header::QUANT_AXIS, &axis.to_le_bytes());
    o.set(header::QUANT_SCALES_LEN, &scales_len.to_le_bytes());
    o.set(header::QUANT_ZERO_POINTS_LEN, &zps_len.to_le_bytes());
    o.set(header::STRINGS_BYTES, &strings_bytes.to_le_bytes());
    o.set(header::PLANE_COUNT, &plane_count.to_le_bytes());
    o.set(header::VERSION, &VERSION.to_le_bytes());
    o.set(header::CPU_ACCESS, &cpu_access_code(t.access).to_le_bytes());
    o.set(header::SHAPE_LEN, &shape_len.to_le_bytes());
    o.set(header::STRIDES_LEN, &strides_len.to_le_bytes());
    Ok(o.0)
}

/// The planes of `t`'s own buffer, offsets from its first byte. A plain tensor's row stride is
/// computed checked here: a shape with a zero dimension can have an unrepresentable row.
fn own_planes(t: &TensorDyn) -> Result<Vec<PlaneGeometry>> {
    if t.image.is_some() {
        return Ok(t.plane_table());
    }
    let stride = plain_row_stride(&t.shape, t.dtype)
        .ok_or_else(|| Error::InvalidOperation(format!("the row stride of shape {:?} overflows", t.shape)))?;
    Ok(vec![PlaneGeometry { offset: 0, stride: stride as isize, size: t.extent() }])
}

fn plain_row_stride(shape: &[usize], dtype: DType) -> Option<usize> {
    shape
        .iter()
        .skip(1)
        .try_fold(dtype.size(), |a, &d| a.checked_mul(d))
        .filter(|&s| s <= isize::MAX as usize)
}

/// Rebuild a tensor from a blob; an inline blob lands in the process heap.
pub fn import(bytes: &[u8]) -> Result<TensorDyn> {
    import_with_memory(bytes, TensorMemory::Mem)
}

/// Rebuild a tensor from a blob; an inline blob's new allocation comes from `memory`. A
/// reference blob's tensor is over the producer's own buffers (dup'd fds), whatever `memory`.
pub fn import_with_memory(bytes: &[u8], memory: TensorMemory) -> Result<TensorDyn> {
    build(parse(bytes)?, memory)
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
    Ok(Parsed { h, shape, strides, scales, zps, strings, planes })
}

fn quantization(shape: &[usize], axis: i32, scales: &[f32], zps: &[i32]) -> Result<Option<Quantization>> {
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
    kind: TensorMemory,
    shape: Vec<usize>,
    dtype: DType,
    access: CpuAccess,
) -> Result<TensorDyn> {
    let storage = import_storage(dup_raw(r.handle)?)?;
    let actual = storage.backing.memory();
    if actual != kind {
        return Err(malformed("storage_kind", format!("{kind}, but handle {} is {actual}", r.handle)));
    }
    Ok(TensorDyn::over(storage, shape, dtype, access, None))
}

fn build(p: Parsed<'_>, memory: TensorMemory) -> Result<TensorDyn> {
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
    } else {
        if h.pid != std::process::id() {
            return Err(malformed(
                "pid",
                format!(
                    "{}: a reference blob's handles are fds of its producer's process; this is {}",
                    h.pid,
                    std::process::id()
                ),
            ));
        }
        if !matches!(kind, TensorMemory::Shm | TensorMemory::DmaBuf) {
            return Err(malformed("storage_kind", format!("{kind} has no fd to reference")));
        }
    }
    let shape = p.shape.iter().map(|&d| to_usize(d, "shape")).collect::<Result<Vec<_>>>()?;
    let quant = quantization(&shape, h.quant_axis, &p.scales, &p.zps)?;
    let color = colorimetry(p.strings[3], p.strings[4])?;
    let format = match p.strings[0] {
        "" => None,
        name => Some(
            PixelFormat::from_name(name)
                .ok_or_else(|| malformed("format", format!("unknown format {name:?}")))?,
        ),
    };
    let ctx = Ctx { kind, dtype, access, inline, memory };
    let mut t = match format {
        None => ctx.plain(shape, &p.strides, &p.planes)?,
        Some(f) => ctx.image(f, &shape, &p.strides, &p.planes)?,
    };
    t.quantization = quant;
    t.colorimetry = color;
    Ok(t)
}

struct Ctx {
    kind: TensorMemory,
    dtype: DType,
    access: CpuAccess,
    inline: bool,
    memory: TensorMemory,
}

impl Ctx {
    fn plain(&self, shape: Vec<usize>, strides: &[i64], planes: &[Record<'_>]) -> Result<TensorDyn> {
        let [r] = planes else {
            return Err(malformed("plane_count", format!("{}: a plain tensor is one plane", planes.len())));
        };
        let bytes = byte_count(&shape, self.dtype).map_err(|e| malformed("shape", e.to_string()))?;
        let dense = byte_strides(&shape, self.dtype.size(), None);
        if !strides.is_empty() && !strides.iter().copied().eq(dense.iter().map(|&s| s as i64)) {
            return Err(malformed("strides", format!("{strides:?}: a plain tensor is dense, {dense:?}")));
        }
        let row = plain_row_stride(&shape, self.dtype)
            .ok_or_else(|| malformed("shape", "the row stride overflows"))?;
        if r.stride != row as u64 {
            return Err(malformed("stride", format!("{}, but rows of {shape:?} are {row} bytes", r.stride)));
        }
        if r.size != bytes as u64 {
            return Err(malformed(
                "size",
                format!("{}, but {shape:?} {} is {bytes} bytes", r.size, self.dtype),
            ));
        }
        if !self.inline {
            let mut t = over_handle(r, self.kind, shape, self.dtype, self.access)?;
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
            let mut t = over_handle(&planes[0], self.kind, Vec::new(), self.dtype, self.access)?;
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
            let mut p = over_handle(&planes[i], self.kind, Vec::new(), DType::U8, self.access)?;
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
