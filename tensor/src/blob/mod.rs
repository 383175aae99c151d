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
use crate::desc::dtype_code;
use crate::dtype::DType;
use crate::format::{byte_strides, PlaneGeometry};
use crate::image::ImageMeta;
use crate::memory::TensorMemory;
use crate::preprocess::{ColorRange, ColorSpace, Quantization};
use crate::tensor::TensorDyn;
use crate::{Error, Result};
use std::os::fd::AsRawFd;

/// Tag and length before each appended region.
pub const APPENDED_HEADER_LEN: usize = 8;

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
mod import;
pub use import::{appended_regions, dense_view, import, import_with_fds, import_with_memory, DenseView};

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

fn quant_fields(shape: &[usize], q: Option<&Quantization>) -> Result<(i32, Vec<f32>, Vec<i32>)> {
    let (axis, scales, zps) = match q {
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
    import::quantization(shape, axis, &scales, &zps)
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
    let quant = quant_fields(&t.shape, t.quantization.as_ref())?;
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

    let pid = if reference { std::process::id() } else { 0 };
    let blob = write(&Parts {
        shape: &t.shape,
        strides: &strides,
        quant,
        strings,
        storage_kind,
        pid,
        dtype: t.dtype,
        access: t.access,
        planes,
    });
    drop(maps);
    blob
}

/// Everything a blob says, ready to be written.
struct Parts<'a> {
    shape: &'a [usize],
    strides: &'a [i64],
    quant: (i32, Vec<f32>, Vec<i32>),
    strings: [&'a str; 5],
    storage_kind: TensorMemory,
    pid: u32,
    dtype: DType,
    access: CpuAccess,
    planes: Vec<OutPlane<'a>>,
}

fn write(p: &Parts<'_>) -> Result<Vec<u8>> {
    let (axis, scales, zps) = (&p.quant.0, &p.quant.1, &p.quant.2);
    let (planes, strides) = (&p.planes, p.strides);
    let too_many = |what: &str, n: usize| Error::InvalidOperation(format!("{n} {what} do not fit a blob"));
    let shape_len = u16::try_from(p.shape.len()).map_err(|_| too_many("dimensions", p.shape.len()))?;
    let strides_len = u16::try_from(strides.len()).map_err(|_| too_many("strides", strides.len()))?;
    let scales_len = u32::try_from(scales.len()).map_err(|_| too_many("scales", scales.len()))?;
    let zps_len = u32::try_from(zps.len()).map_err(|_| too_many("zero points", zps.len()))?;
    let plane_count = u32::try_from(planes.len()).map_err(|_| too_many("planes", planes.len()))?;

    let mut o = Out(Vec::with_capacity(
        HEADER_LEN + 256 + planes.iter().map(|pl| PLANE_RECORD_LEN + pl.data.len() + 8).sum::<usize>(),
    ));
    o.put(&[0; HEADER_LEN]);
    for &d in p.shape {
        o.put(&(d as u64).to_le_bytes());
    }
    for s in strides {
        o.put(&s.to_le_bytes());
    }
    for s in scales {
        o.put(&s.to_le_bytes());
    }
    for z in zps {
        o.put(&z.to_le_bytes());
    }
    let strings_start = o.0.len();
    for s in p.strings {
        o.put(&(s.len() as u32).to_le_bytes());
        o.put(s.as_bytes());
        o.pad(4);
    }
    let strings_bytes = (o.0.len() - strings_start) as u32;
    o.pad(8);
    let planes_start = o.0.len();
    for pl in planes {
        o.put(&pl.handle.to_le_bytes());
        o.put(&pl.offset.to_le_bytes());
        o.put(&pl.stride.to_le_bytes());
        o.put(&pl.size.to_le_bytes());
        o.put(&pl.size.to_le_bytes()); // used: a tensor's planes are always full
        o.put(&0u64.to_le_bytes()); // modifier: linear
        o.put(&0u32.to_le_bytes()); // handle_bytes: no storage kind has any today
        o.put(&(pl.data.len() as u32).to_le_bytes());
        o.put(pl.data);
        o.pad(8);
    }
    let planes_bytes = (o.0.len() - planes_start) as u64;

    let total = o.0.len() as u64;
    o.set(header::TOTAL_LEN, &total.to_le_bytes());
    o.set(header::REQUIRED_MASK, &0u64.to_le_bytes());
    o.set(header::PLANES_BYTES, &planes_bytes.to_le_bytes());
    o.set(header::MAGIC, &MAGIC.to_le_bytes());
    o.set(header::STORAGE_KIND, &p.storage_kind.code().to_le_bytes());
    o.set(header::PID, &p.pid.to_le_bytes());
    o.set(header::FENCE_FD, &NO_FENCE.to_le_bytes());
    o.set(header::DTYPE, &dtype_code(p.dtype).to_le_bytes());
    o.set(header::QUANT_AXIS, &axis.to_le_bytes());
    o.set(header::QUANT_SCALES_LEN, &scales_len.to_le_bytes());
    o.set(header::QUANT_ZERO_POINTS_LEN, &zps_len.to_le_bytes());
    o.set(header::STRINGS_BYTES, &strings_bytes.to_le_bytes());
    o.set(header::PLANE_COUNT, &plane_count.to_le_bytes());
    o.set(header::VERSION, &VERSION.to_le_bytes());
    o.set(header::CPU_ACCESS, &cpu_access_code(p.access).to_le_bytes());
    o.set(header::SHAPE_LEN, &shape_len.to_le_bytes());
    o.set(header::STRIDES_LEN, &strides_len.to_le_bytes());
    Ok(o.0)
}

/// An inline blob of a dense C-order plain tensor straight from its bytes, for a producer whose
/// tensor is not a [`TensorDyn`] (a GStreamer buffer, a C array): the same blob `export` writes
/// for such a tensor inline, without first copying the bytes into one. `data` must be exactly
/// the tensor's bytes; the declaration written is read-write.
pub fn export_dense(
    shape: &[usize],
    dtype: DType,
    quantization: Option<&Quantization>,
    data: &[u8],
) -> Result<Vec<u8>> {
    let (mut blob, tail) = export_dense_split(shape, dtype, quantization, data.len(), &[])?;
    blob.reserve(data.len() + tail.len());
    blob.extend_from_slice(data);
    blob.extend_from_slice(&tail);
    Ok(blob)
}

/// The blob of [`export_dense`] followed by `regions` (as [`append_region`] adds them), in two
/// parts that go around the tensor's bytes: `head ++ data ++ tail` is that blob byte for byte.
/// A sender that writes its buffers with scatter-gather I/O (a GStreamer buffer of several
/// memories on a socket) then sends the tensor without copying it into a message first.
pub fn export_dense_split(
    shape: &[usize],
    dtype: DType,
    quantization: Option<&Quantization>,
    data_len: usize,
    regions: &[([u8; 4], &[u8])],
) -> Result<(Vec<u8>, Vec<u8>)> {
    let need = shape.iter().try_fold(dtype.size(), |a, &d| a.checked_mul(d));
    if need != Some(data_len) {
        return Err(Error::InvalidArgument(format!(
            "{data_len} bytes for a {dtype} tensor of shape {shape:?}"
        )));
    }
    let len32 = u32::try_from(data_len).map_err(|_| {
        Error::InvalidOperation(format!(
            "an inline plane of {data_len} bytes exceeds the 4 GiB a plane record can carry"
        ))
    })?;
    let stride = plain_row_stride(shape, dtype)
        .ok_or_else(|| Error::InvalidOperation(format!("the row stride of shape {shape:?} overflows")))?;
    // The blob as if the plane were empty, then its lengths made the real ones: the record is
    // the last thing written and already 8-aligned, so the bytes go right after it.
    let mut head = write(&Parts {
        shape,
        strides: &[],
        quant: quant_fields(shape, quantization)?,
        strings: [""; 5],
        storage_kind: TensorMemory::Mem,
        pid: 0,
        dtype,
        access: CpuAccess::ReadWrite,
        planes: vec![OutPlane {
            handle: INLINE_HANDLE,
            offset: 0,
            stride: stride as u64,
            size: data_len as u64,
            data: &[],
        }],
    })?;
    let record = head.len() - PLANE_RECORD_LEN;
    head[record + plane::DATA_LEN..record + plane::DATA_LEN + 4].copy_from_slice(&len32.to_le_bytes());
    let pad = align(data_len, 8) - data_len;
    let planes_bytes = (PLANE_RECORD_LEN + data_len + pad) as u64;
    head[header::PLANES_BYTES..header::PLANES_BYTES + 8].copy_from_slice(&planes_bytes.to_le_bytes());
    let mut tail = vec![0u8; pad];
    for (tag, bytes) in regions {
        let n = u32::try_from(bytes.len())
            .map_err(|_| Error::InvalidOperation(format!("an appended region of {} bytes", bytes.len())))?;
        tail.extend_from_slice(tag);
        tail.extend_from_slice(&n.to_le_bytes());
        tail.extend_from_slice(bytes);
        // Aligned in the whole blob: the head is, so the data and the tail together must be.
        tail.resize(align(data_len + tail.len(), 8) - data_len, 0);
    }
    let total = (head.len() + data_len + tail.len()) as u64;
    head[header::TOTAL_LEN..header::TOTAL_LEN + 8].copy_from_slice(&total.to_le_bytes());
    Ok((head, tail))
}

/// Append a tagged region to a finished blob (after the plane records, or after the regions
/// appended before it) and update `total_len`. Readers that do not know `tag` skip it.
pub fn append_region(blob: &mut Vec<u8>, tag: [u8; 4], bytes: &[u8]) -> Result<()> {
    let len = u32::try_from(bytes.len())
        .map_err(|_| Error::InvalidOperation(format!("an appended region of {} bytes", bytes.len())))?;
    if blob.len() < HEADER_LEN || !blob.len().is_multiple_of(8) {
        return Err(Error::InvalidArgument(format!("{} bytes are not a finished blob", blob.len())));
    }
    blob.extend_from_slice(&tag);
    blob.extend_from_slice(&len.to_le_bytes());
    blob.extend_from_slice(bytes);
    blob.resize(align(blob.len(), 8), 0);
    let total = blob.len() as u64;
    blob[header::TOTAL_LEN..header::TOTAL_LEN + 8].copy_from_slice(&total.to_le_bytes());
    Ok(())
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
