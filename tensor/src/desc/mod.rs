//! `TensorDesc`: a fixed `#[repr(C)]` description of one tensor in this process, for handing a
//! tensor across a library boundary (another `.so`, the C API, a second copy of this crate linked
//! through the C library) without handing over a Rust value.
//!
//! A descriptor names a slot of the process-wide [`Registry`] and the generation that slot had
//! when the descriptor was made. Importing it resolves the slot, so a descriptor of a buffer that
//! has since been freed, released or reallocated is refused with `Error::StaleGeneration`
//! instead of reaching freed memory. It has one handle and no plane table: a multi-plane frame,
//! or a tensor travelling to another process, is the blob's job (`crate::blob`).

pub mod registry;

use crate::access::CpuAccess;
use crate::dtype::DType;
use crate::format::{byte_strides, PixelFormat, PixelLayout};
use crate::image::{check_image, check_row_stride, ImageMeta};
use crate::memory::TensorMemory;
use crate::preprocess::Region;
use crate::tensor::TensorDyn;
use crate::{Error, Result};
use std::os::fd::AsRawFd;

pub use registry::{Key, Registry, DEFAULT_CAPACITY};

/// Dimensions a descriptor can carry.
pub const MAX_DIMS: usize = 8;
/// `TensorDesc::version` this build writes and accepts.
pub const DESC_VERSION: u32 = 1;

/// `TensorDesc::flags` bits. An unknown bit is refused: it may change what the other fields mean.
pub mod flags {
    /// The tensor is a window of a larger buffer (`view`/`batch`): its rows may share cache lines
    /// with bytes outside it, so a whole-buffer write-only map is not allowed on the alias.
    pub const VIEW: u32 = 1 << 0;
    /// The producer declared its CPU access; `CPU_READ`/`CPU_WRITE` say what it declared. A
    /// descriptor without it is refused, since there is no safe access to assume.
    pub const CPU_ACCESS_DECLARED: u32 = 1 << 1;
    pub const CPU_READ: u32 = 1 << 2;
    pub const CPU_WRITE: u32 = 1 << 3;
    /// `shape[0]` is a batch `N` of images stacked at the padded pitch.
    pub const BATCHED: u32 = 1 << 4;
    pub const ALL: u32 = VIEW | CPU_ACCESS_DECLARED | CPU_READ | CPU_WRITE | BATCHED;
}

/// One tensor of this process, as plain data. Widest fields first, so the layout has no interior
/// padding and is the same in C (`size_of == 200`, align 8).
///
/// `shape` is the **allocation** shape (NV12 is `[h + ceil(h/2), w]`), because without a plane
/// table the shape is the only carrier of extent; `strides` are signed bytes from
/// [`byte_strides`] over that shape. Entries past `ndim` are zero.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TensorDesc {
    /// The registry slot's generation when this descriptor was made; never 0.
    pub generation: u64,
    /// The buffer's fd for `shm`/`dmabuf` (borrowed: valid while the tensor lives, never to be
    /// closed by the reader), -1 for `mem`.
    pub handle: i64,
    /// Byte offset of the tensor's first byte inside the buffer.
    pub offset: u64,
    /// Bytes the tensor spans from `offset` (an image's from its plane table).
    pub size: u64,
    pub shape: [u64; MAX_DIMS],
    pub strides: [i64; MAX_DIMS],
    /// The registry slot.
    pub slot: u32,
    /// `TensorMemory` code of the buffer.
    pub kind: u32,
    /// `dtype_code` of the element type.
    pub dtype: u32,
    pub ndim: u32,
    pub flags: u32,
    /// `format_code` of the pixel format; 0 = not an image.
    pub format: u32,
    /// Image width and height (of one batch element); 0 when not an image.
    pub width: u32,
    pub height: u32,
    /// The process the descriptor was made in: slots and handles mean nothing in another one.
    pub pid: u32,
    pub version: u32,
}

const _: () = assert!(std::mem::size_of::<TensorDesc>() == 200);
const _: () = assert!(std::mem::align_of::<TensorDesc>() == 8);

/// Wire code of an element type, shared by descriptors and blobs. Fixed forever: a code is
/// recorded by other processes and other builds.
pub const fn dtype_code(d: DType) -> u32 {
    match d {
        DType::U8 => 0,
        DType::I8 => 1,
        DType::U16 => 2,
        DType::I16 => 3,
        DType::U32 => 4,
        DType::I32 => 5,
        DType::U64 => 6,
        DType::I64 => 7,
        DType::F16 => 8,
        DType::F32 => 9,
        DType::F64 => 10,
    }
}

pub fn dtype_from_code(code: u32) -> Option<DType> {
    DType::ALL.iter().copied().find(|&d| dtype_code(d) == code)
}

/// Descriptor code of a pixel format; 0 means "not an image", so codes start at 1.
pub const fn format_code(f: PixelFormat) -> u32 {
    match f {
        PixelFormat::Rgb => 1,
        PixelFormat::Bgr => 2,
        PixelFormat::Rgba => 3,
        PixelFormat::Bgra => 4,
        PixelFormat::Rgbx => 5,
        PixelFormat::Bgrx => 6,
        PixelFormat::Gray8 => 7,
        PixelFormat::PlanarRgb => 8,
        PixelFormat::Nv12 => 9,
        PixelFormat::Nv21 => 10,
        PixelFormat::Nv16 => 11,
        PixelFormat::I420 => 12,
        PixelFormat::Yv12 => 13,
        PixelFormat::Yuy2 => 14,
        PixelFormat::Uyvy => 15,
        PixelFormat::H264 => 16,
        PixelFormat::H265 => 17,
    }
}

pub fn format_from_code(code: u32) -> Option<PixelFormat> {
    PixelFormat::ALL.iter().copied().find(|&f| format_code(f) == code)
}

/// The `flags` bits that state a CPU access declaration.
pub const fn access_flags(a: CpuAccess) -> u32 {
    flags::CPU_ACCESS_DECLARED
        | if a.can_read() { flags::CPU_READ } else { 0 }
        | if a.can_write() { flags::CPU_WRITE } else { 0 }
}

fn access_of(f: u32) -> CpuAccess {
    match (f & flags::CPU_READ != 0, f & flags::CPU_WRITE != 0) {
        (false, false) => CpuAccess::None,
        (true, false) => CpuAccess::Read,
        (false, true) => CpuAccess::Write,
        (true, true) => CpuAccess::ReadWrite,
    }
}

/// Fail-closed status codes for a C caller: one per kind of refusal, never 0 for a failure.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    Ok = 0,
    /// A field is malformed (kind, dtype, rank, strides, flags, version, pid, blob fields).
    Invalid = 1,
    /// The slot is out of range, empty, or names a generation never issued.
    NotRegistered = 2,
    /// The slot was released, freed or reallocated since the key was made.
    StaleGeneration = 3,
    /// A CPU access wider than the declaration was asked for.
    AccessDenied = 4,
    /// Well-formed, but this build or process cannot serve it (a backing, a required feature).
    Unsupported = 5,
    /// The buffer is smaller than the described tensor.
    TooSmall = 6,
    /// The registry holds as many entries as it may.
    RegistryFull = 7,
    /// A system call failed.
    Io = 8,
    /// Anything else (an operation the tensor does not allow, an allocation refused).
    Other = 9,
}

impl Status {
    pub fn of(e: &Error) -> Status {
        match e {
            Error::InvalidDescriptor { .. }
            | Error::MalformedBlob { .. }
            | Error::InvalidShape { .. }
            | Error::InvalidArgument(_)
            | Error::UnknownMemoryCode(_)
            | Error::DTypeMismatch { .. } => Status::Invalid,
            Error::NotRegistered { .. } => Status::NotRegistered,
            Error::StaleGeneration { .. } => Status::StaleGeneration,
            Error::CpuAccessDenied { .. } => Status::AccessDenied,
            Error::NotSupported(_) | Error::UnsupportedRequired { .. } | Error::UnknownBufferType(_) => {
                Status::Unsupported
            }
            Error::BufferTooSmall { .. } => Status::TooSmall,
            Error::RegistryFull { .. } => Status::RegistryFull,
            Error::Io { .. } | Error::ContiguousUnavailable { .. } => Status::Io,
            Error::Unavailable { .. }
            | Error::RegionOutOfBounds { .. }
            | Error::BatchIndexOutOfBounds { .. }
            | Error::InvalidOperation(_) => Status::Other,
        }
    }
}

/// An upper bound on the bytes `n` images of `format` at pitch `rs` span, or `None` when it
/// overflows. Checked before any plane table is computed from untrusted numbers: the plane
/// table's own arithmetic is unchecked, and every plane of every layout lies within
/// `rs * combined_plane_height(h)` bytes of its image's start.
pub(crate) fn image_span(format: PixelFormat, h: usize, rs: usize, n: usize) -> Option<usize> {
    rs.max(1).checked_mul(format.combined_plane_height(h))?.checked_mul(n)
}

fn invalid(field: &'static str, reason: impl Into<String>) -> Error {
    Error::InvalidDescriptor { field, reason: reason.into() }
}

/// The allocation shape and its byte strides, the geometry a descriptor carries.
fn geometry(t: &TensorDyn) -> (Vec<usize>, Vec<isize>) {
    let esz = t.dtype.size();
    match t.image.as_deref() {
        None => (t.shape.clone(), byte_strides(&t.shape, esz, None)),
        Some(img) => {
            let mut shape = img.format.allocation_shape(img.width, img.height);
            if let Some((n, _)) = img.batch {
                shape.insert(0, n);
            }
            let strides = byte_strides(&shape, esz, Some(&img.stride_spec()));
            (shape, strides)
        }
    }
}

/// Geometry a descriptor claims, rebuilt and checked against the one stride function.
struct Claimed {
    shape: Vec<usize>,
    image: Option<ImageMeta>,
    extent: usize,
}

fn to_usize(v: u64, field: &'static str) -> Result<usize> {
    usize::try_from(v).map_err(|_| invalid(field, format!("{v} does not fit this platform's usize")))
}

fn claimed_geometry(d: &TensorDesc, dtype: DType) -> Result<Claimed> {
    let ndim = d.ndim as usize;
    if ndim > MAX_DIMS {
        return Err(invalid("ndim", format!("{ndim} dimensions, at most {MAX_DIMS}")));
    }
    if d.shape[ndim..].iter().any(|&v| v != 0) || d.strides[ndim..].iter().any(|&v| v != 0) {
        return Err(invalid("shape", "entries past ndim must be zero"));
    }
    let shape = d.shape[..ndim].iter().map(|&v| to_usize(v, "shape")).collect::<Result<Vec<_>>>()?;
    let strides: Vec<isize> = d.strides[..ndim]
        .iter()
        .map(|&v| isize::try_from(v).map_err(|_| invalid("strides", format!("{v} does not fit isize"))))
        .collect::<Result<_>>()?;
    let esz = dtype.size();
    let batched = d.flags & flags::BATCHED != 0;
    let view = d.flags & flags::VIEW != 0;
    if d.format == 0 {
        if d.width != 0 || d.height != 0 || batched {
            return Err(invalid("format", "width, height and BATCHED describe images; format is 0"));
        }
        let extent = crate::tensor::byte_count(&shape, dtype)
            .map_err(|e| invalid("shape", format!("{shape:?}: {e}")))?;
        if strides != byte_strides(&shape, esz, None) {
            return Err(invalid("strides", format!("{strides:?} are not the dense strides of {shape:?}")));
        }
        return Ok(Claimed { shape, image: None, extent });
    }
    let format =
        format_from_code(d.format).ok_or_else(|| invalid("format", format!("unknown code {}", d.format)))?;
    let (w, h) = (d.width as usize, d.height as usize);
    check_image(format, dtype, w, h).map_err(|e| invalid("width", e.to_string()))?;
    let mut expect = format.allocation_shape(w, h);
    let n = if batched {
        let n = *shape.first().ok_or_else(|| invalid("shape", "BATCHED with no dimensions"))?;
        if n == 0 {
            return Err(invalid("shape", "a batch of zero images"));
        }
        expect.insert(0, n);
        Some(n)
    } else {
        None
    };
    if shape != expect {
        return Err(invalid(
            "shape",
            format!("{shape:?} is not the allocation shape {expect:?} of a {w}x{h} {}", format.name()),
        ));
    }
    if view && (batched || format.layout() != PixelLayout::Packed) {
        // A window of a multi-plane layout has plane offsets that depend on its parent's
        // geometry, which a descriptor does not carry.
        return Err(invalid("flags", format!("a VIEW of a {} image cannot be described", format.name())));
    }
    let rs = if format.layout() == PixelLayout::Bitstream {
        format.min_row_stride(w, esz)
    } else {
        let row_dim = usize::from(batched) + usize::from(format == PixelFormat::PlanarRgb);
        let rs = strides[row_dim];
        usize::try_from(rs).map_err(|_| invalid("strides", format!("row stride {rs} is negative")))?
    };
    check_row_stride(format, w, esz, rs, None).map_err(|e| invalid("strides", e.to_string()))?;
    if image_span(format, h, rs, n.unwrap_or(1)).is_none() {
        return Err(invalid("strides", format!("row stride {rs} makes the image's byte span overflow")));
    }
    let mut meta = ImageMeta::full(format, w, h, rs, n);
    if view {
        meta.planes[0].size = (h - 1) * rs + format.min_row_stride(w, esz);
        meta.is_view = true;
    }
    let want = byte_strides(&shape, esz, Some(&meta.stride_spec()));
    if strides != want {
        return Err(invalid("strides", format!("{strides:?}, but the layout gives {want:?}")));
    }
    let extent = meta.extent();
    Ok(Claimed { shape, image: Some(meta), extent })
}

impl Registry {
    /// Describe `t`, registering its buffer (once per buffer; the registry does not keep it
    /// alive). Refuses what a descriptor cannot carry: a multi-plane image, a view of a
    /// multi-plane layout, more than `MAX_DIMS` dimensions.
    pub fn export_descriptor(&self, t: &TensorDyn) -> Result<TensorDesc> {
        if t.is_multiplane() {
            return Err(Error::InvalidOperation(
                "a multi-plane image has one buffer per plane and a descriptor one handle: use the blob"
                    .into(),
            ));
        }
        let view = t.is_view();
        if let Some(img) = t.image.as_deref() {
            if view && img.format.layout() != PixelLayout::Packed {
                return Err(Error::InvalidOperation(format!(
                    "a view of a {} image has plane offsets that depend on its parent; materialize it \
                     or use the blob's inline mode",
                    img.format.name()
                )));
            }
        }
        let (shape, strides) = geometry(t);
        if shape.len() > MAX_DIMS {
            return Err(Error::InvalidOperation(format!(
                "{} dimensions do not fit a descriptor (at most {MAX_DIMS})",
                shape.len()
            )));
        }
        let key = self.watch(t)?;
        let mut d = TensorDesc {
            generation: key.generation,
            handle: t.fd().map_or(-1, |fd| i64::from(fd.as_raw_fd())),
            offset: t.byte_offset() as u64,
            size: t.extent() as u64,
            shape: [0; MAX_DIMS],
            strides: [0; MAX_DIMS],
            slot: key.slot,
            kind: t.memory().code(),
            dtype: dtype_code(t.dtype),
            ndim: shape.len() as u32,
            flags: access_flags(t.access),
            format: 0,
            width: 0,
            height: 0,
            pid: std::process::id(),
            version: DESC_VERSION,
        };
        for (i, (&s, &st)) in shape.iter().zip(&strides).enumerate() {
            d.shape[i] = s as u64;
            d.strides[i] = st as i64;
        }
        if view {
            d.flags |= flags::VIEW;
        }
        if let Some(img) = t.image.as_deref() {
            d.format = format_code(img.format);
            // MAX_IMAGE_SIDE keeps both within u32.
            d.width = img.width as u32;
            d.height = img.height as u32;
            if img.batch.is_some() {
                d.flags |= flags::BATCHED;
            }
        }
        Ok(d)
    }

    /// Rebuild the tensor `d` describes, over the same buffer (same `BufferIdentity`), declared
    /// `access`. Every field is checked before the registry is consulted; `access` wider than
    /// the descriptor's declaration is `CpuAccessDenied`, so an alias refuses what its producer
    /// refuses.
    pub fn import_descriptor(&self, d: &TensorDesc, access: CpuAccess) -> Result<TensorDyn> {
        if d.version != DESC_VERSION {
            return Err(invalid("version", format!("{} (this build reads {DESC_VERSION})", d.version)));
        }
        if d.pid != std::process::id() {
            return Err(invalid(
                "pid",
                format!(
                    "made in process {}, this is {}: a descriptor's slot and handle only mean something \
                     in its own process (send a blob instead)",
                    d.pid,
                    std::process::id()
                ),
            ));
        }
        if d.flags & !flags::ALL != 0 {
            return Err(invalid("flags", format!("unknown bits {:#x}", d.flags & !flags::ALL)));
        }
        if d.flags & flags::CPU_ACCESS_DECLARED == 0 {
            return Err(invalid("flags", "no CPU access declaration (CPU_ACCESS_DECLARED unset)"));
        }
        let kind = TensorMemory::from_code(d.kind)
            .map_err(|_| invalid("kind", format!("unknown code {}", d.kind)))?;
        let dtype =
            dtype_from_code(d.dtype).ok_or_else(|| invalid("dtype", format!("unknown code {}", d.dtype)))?;
        if d.generation == 0 {
            return Err(invalid("generation", "0 is never issued"));
        }
        let claimed = claimed_geometry(d, dtype)?;
        if d.size != claimed.extent as u64 {
            return Err(invalid("size", format!("{}, but the geometry spans {}", d.size, claimed.extent)));
        }
        let offset = to_usize(d.offset, "offset")?;
        if offset.checked_add(claimed.extent).is_none() {
            return Err(invalid("offset", format!("{offset} + {} bytes overflows", claimed.extent)));
        }
        let declared = access_of(d.flags);
        if (access.can_read() && !declared.can_read()) || (access.can_write() && !declared.can_write()) {
            return Err(Error::CpuAccessDenied { declared, requested: access });
        }

        let storage = self.storage(Key { slot: d.slot, generation: d.generation })?;
        if storage.backing.memory() != kind {
            return Err(invalid(
                "kind",
                format!("{kind}, but slot {} holds {}", d.slot, storage.backing.memory()),
            ));
        }
        let handle = storage.backing.fd().map_or(-1, |fd| i64::from(fd.as_raw_fd()));
        if d.handle != handle {
            return Err(invalid("handle", format!("{}, but slot {}'s buffer is {handle}", d.handle, d.slot)));
        }
        let mut t = TensorDyn::over(storage, claimed.shape, dtype, access, None);
        if let Some(meta) = claimed.image {
            t.set_image(meta);
        }
        if d.flags & flags::VIEW != 0 {
            t.view_offset = offset;
        } else {
            t.plane_offset = Some(offset).filter(|&o| o != 0);
        }
        t.check_extent("the described tensor")?;
        Ok(t)
    }

    /// A descriptor of `region` of the tensor `d` describes: the same buffer, slot and
    /// generation, with the `VIEW` flag.
    pub fn view_descriptor(&self, d: &TensorDesc, region: Region) -> Result<TensorDesc> {
        let t = self.import_descriptor(d, access_of(d.flags))?;
        self.export_descriptor(&t.view(region)?)
    }

    /// A new, dense heap copy of what `d` describes, with a new identity. The caller owns it;
    /// its own descriptor comes from `export_descriptor`.
    pub fn materialize(&self, d: &TensorDesc) -> Result<TensorDyn> {
        let t = self.import_descriptor(d, access_of(d.flags))?;
        let mut m = t.copy_to_flat()?;
        m.access = t.access;
        m.quantization = t.quantization.clone();
        m.colorimetry = t.colorimetry;
        Ok(m)
    }

    /// Make every descriptor of the buffer `d` names stale, whether or not the buffer lives on.
    pub fn release_descriptor(&self, d: &TensorDesc) -> Result<()> {
        self.release(Key { slot: d.slot, generation: d.generation })
    }
}

/// `Registry::global().export_descriptor(t)`.
pub fn export_descriptor(t: &TensorDyn) -> Result<TensorDesc> {
    Registry::global().export_descriptor(t)
}

/// `Registry::global().import_descriptor(d, access)`.
pub fn import_descriptor(d: &TensorDesc, access: CpuAccess) -> Result<TensorDyn> {
    Registry::global().import_descriptor(d, access)
}

pub fn view_descriptor(d: &TensorDesc, region: Region) -> Result<TensorDesc> {
    Registry::global().view_descriptor(d, region)
}

pub fn materialize(d: &TensorDesc) -> Result<TensorDyn> {
    Registry::global().materialize(d)
}

pub fn release_descriptor(d: &TensorDesc) -> Result<()> {
    Registry::global().release_descriptor(d)
}

impl TensorDesc {
    /// The CPU access the producer declared (`None` when no declaration is present).
    pub fn cpu_access(&self) -> CpuAccess {
        if self.flags & flags::CPU_ACCESS_DECLARED == 0 {
            CpuAccess::None
        } else {
            access_of(self.flags)
        }
    }

    pub fn is_view(&self) -> bool {
        self.flags & flags::VIEW != 0
    }

    /// `mem` and `shm` are both host memory to an importer.
    pub fn is_host(&self) -> bool {
        self.kind == TensorMemory::Mem.code() || self.kind == TensorMemory::Shm.code()
    }

    pub fn key(&self) -> Key {
        Key { slot: self.slot, generation: self.generation }
    }
}

impl TensorDyn {
    /// This tensor's descriptor, registered in the global registry.
    pub fn descriptor(&self) -> Result<TensorDesc> {
        export_descriptor(self)
    }

    /// The tensor a descriptor names, declared with the descriptor's own CPU access.
    pub fn import_descriptor(d: &TensorDesc) -> Result<TensorDyn> {
        import_descriptor(d, d.cpu_access())
    }

    /// Same, declared `access`, which must not be wider than the descriptor's.
    pub fn import_descriptor_with_access(d: &TensorDesc, access: CpuAccess) -> Result<TensorDyn> {
        import_descriptor(d, access)
    }
}
