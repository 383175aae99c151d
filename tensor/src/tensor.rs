//! `TensorDyn` (dtype-erased) and `Tensor<T>` (typed) over one shared storage.
//!
//! A tensor value is a cheap description (shape, dtype, byte offset, image geometry) over an
//! `Arc<Storage>`; clones, views and batches share the storage and therefore the identity.

use crate::access::CpuAccess;
use crate::backing::{self, dma::DmaBacking, mem::MemBacking, shm::ShmBacking, Backing, Contiguity, RawMap};
use crate::dtype::{DType, TensorElement};
use crate::identity::BufferIdentity;
use crate::image::ImageMeta;
use crate::import;
use crate::memory::{self, TensorMemory};
use crate::preprocess::{Colorimetry, Quantization};
use crate::{Error, Result};
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::Arc;

#[derive(Debug)]
pub(crate) struct Storage {
    pub(crate) backing: Box<dyn Backing>,
    pub(crate) identity: BufferIdentity,
}

/// What to allocate: the knobs a constructor passes down to backing selection.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AllocRequest {
    pub(crate) bytes: usize,
    pub(crate) access: CpuAccess,
    pub(crate) contiguous: bool,
}

impl AllocRequest {
    pub(crate) fn allocate(&self, memory: TensorMemory) -> Result<Arc<Storage>> {
        let backing: Box<dyn Backing> = match memory {
            TensorMemory::Mem => Box::new(MemBacking::new(self.bytes)?),
            TensorMemory::Shm => Box::new(ShmBacking::new(self.bytes)?),
            TensorMemory::DmaBuf => Box::new(DmaBacking::new(self.bytes, self.access, self.contiguous)?),
            other @ (TensorMemory::IoSurface
            | TensorMemory::Pbo
            | TensorMemory::Cuda
            | TensorMemory::D3d11Texture) => return Err(Error::NotSupported(other)),
        };
        Ok(Arc::new(Storage { backing, identity: BufferIdentity::new() }))
    }
}

/// An explicit memory is served or refused; an automatic choice walks `chain` until one backing
/// serves. A contiguous request is only meaningful for DMA, so its failure is reported rather than
/// papered over by the next backing in the chain.
pub(crate) fn select<T>(
    explicit: Option<TensorMemory>,
    chain: &[TensorMemory],
    mut attempt: impl FnMut(TensorMemory) -> Result<T>,
) -> Result<T> {
    if let Some(m) = explicit {
        return attempt(m);
    }
    let mut last = None;
    for &m in chain {
        match attempt(m) {
            Ok(v) => return Ok(v),
            Err(e @ Error::ContiguousUnavailable { .. }) => return Err(e),
            Err(e) => last = Some(e),
        }
    }
    Err(last.expect("allocation chains are never empty"))
}

/// A bare buffer for a framework that owns its fd from here on (a GStreamer allocator wraps it in
/// a GstMemory that closes it).
#[derive(Debug)]
pub struct RawBuffer {
    pub fd: OwnedFd,
    pub size: usize,
    pub memory: TensorMemory,
    /// The heap that served it ("linux,cma-uncached", "linux,cma", "system") or "memfd".
    pub source: &'static str,
}

/// Allocate a shareable buffer: DMA-BUF from the heap the declaration picks, else a memfd (the
/// heap has no fd to hand over). An explicit `memory` is served or refused.
pub fn allocate_fd(bytes: usize, access: CpuAccess, memory: Option<TensorMemory>) -> Result<RawBuffer> {
    select(memory, &[TensorMemory::DmaBuf, TensorMemory::Shm], |m| match m {
        TensorMemory::DmaBuf => {
            let (fd, source) = DmaBacking::new(bytes, access, false)?.into_parts();
            Ok(RawBuffer { fd, size: bytes, memory: m, source })
        }
        TensorMemory::Shm => {
            Ok(RawBuffer { fd: ShmBacking::new(bytes)?.into_fd(), size: bytes, memory: m, source: "memfd" })
        }
        other => Err(Error::NotSupported(other)),
    })
}

pub(crate) fn element_count(shape: &[usize]) -> Result<usize> {
    shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d)).ok_or_else(|| Error::InvalidShape {
        shape: shape.to_vec(),
        reason: "element count overflows usize".into(),
    })
}

pub(crate) fn byte_count(shape: &[usize], dtype: DType) -> Result<usize> {
    element_count(shape)?.checked_mul(dtype.size()).ok_or_else(|| Error::InvalidShape {
        shape: shape.to_vec(),
        reason: "byte size overflows usize".into(),
    })
}

/// Every allocation knob in one place; the shorthand constructors fill it in.
#[derive(Debug, Clone, Default)]
pub struct TensorOptions {
    /// `None` selects automatically (DMA → SHM → Mem for plain tensors).
    pub memory: Option<TensorMemory>,
    pub cpu_access: CpuAccess,
    /// Physically contiguous memory (a CMA heap) or an error: never a silent scattered buffer.
    pub contiguous: bool,
    pub name: Option<String>,
}

#[derive(Debug, Clone)]
pub struct TensorDyn {
    pub(crate) storage: Arc<Storage>,
    pub(crate) dtype: DType,
    pub(crate) shape: Vec<usize>,
    pub(crate) name: Option<Arc<str>>,
    pub(crate) access: CpuAccess,
    /// Bytes from the plane offset to this tensor's first byte: a view's or batch element's window.
    pub(crate) view_offset: usize,
    /// Import attribute: the byte at which a foreign plane starts inside its buffer. Cleared by
    /// `set_format` and `reshape`, which re-describe the buffer from its start.
    pub(crate) plane_offset: Option<usize>,
    pub(crate) image: Option<Arc<ImageMeta>>,
    pub(crate) quantization: Option<Quantization>,
    pub(crate) colorimetry: Option<Colorimetry>,
}

impl TensorDyn {
    /// Allocate with the default declaration (`ReadWrite`); `memory: None` walks DMA → SHM → Mem.
    pub fn new(
        shape: &[usize],
        dtype: DType,
        memory: Option<TensorMemory>,
        name: Option<&str>,
    ) -> Result<Self> {
        Self::with_cpu_access(shape, dtype, CpuAccess::ReadWrite, memory, name)
    }

    pub fn with_cpu_access(
        shape: &[usize],
        dtype: DType,
        access: CpuAccess,
        memory: Option<TensorMemory>,
        name: Option<&str>,
    ) -> Result<Self> {
        let opts =
            TensorOptions { memory, cpu_access: access, contiguous: false, name: name.map(String::from) };
        Self::with_options(shape, dtype, &opts)
    }

    pub fn with_options(shape: &[usize], dtype: DType, opts: &TensorOptions) -> Result<Self> {
        let bytes = byte_count(shape, dtype)?;
        let req = AllocRequest { bytes, access: opts.cpu_access, contiguous: opts.contiguous };
        let storage = select(opts.memory, memory::plain_chain(), |m| req.allocate(m))?;
        Ok(Self::over(storage, shape.to_vec(), dtype, opts.cpu_access, opts.name.as_deref()))
    }

    pub(crate) fn over(
        storage: Arc<Storage>,
        shape: Vec<usize>,
        dtype: DType,
        access: CpuAccess,
        name: Option<&str>,
    ) -> Self {
        TensorDyn {
            storage,
            dtype,
            shape,
            name: name.map(Arc::from),
            access,
            view_offset: 0,
            plane_offset: None,
            image: None,
            quantization: None,
            colorimetry: None,
        }
    }

    /// Import a foreign fd (DMA-BUF or shared memory) described as `shape`/`dtype`. The fd is
    /// classified by filesystem magic, its real size is read from the kernel and checked against
    /// the shape, and a dup is kept: the caller's fd stays the caller's.
    pub fn from_fd(fd: BorrowedFd<'_>, shape: &[usize], dtype: DType, name: Option<&str>) -> Result<Self> {
        Self::from_fd_with_access(fd, shape, dtype, CpuAccess::ReadWrite, name)
    }

    pub fn from_fd_with_access(
        fd: BorrowedFd<'_>,
        shape: &[usize],
        dtype: DType,
        access: CpuAccess,
        name: Option<&str>,
    ) -> Result<Self> {
        let storage = import_storage(backing::dup(fd)?)?;
        let t = Self::over(storage, shape.to_vec(), dtype, access, name);
        t.check_extent("the described shape")?;
        Ok(t)
    }

    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Number of elements in the shape.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes this tensor spans in its buffer (what a map of it covers).
    pub fn size(&self) -> usize {
        self.extent()
    }

    /// Bytes of the whole underlying buffer, as the kernel reports it for imports.
    pub fn capacity_bytes(&self) -> usize {
        self.storage.backing.size()
    }

    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or_else(|| self.memory().name())
    }

    pub fn memory(&self) -> TensorMemory {
        self.storage.backing.memory()
    }

    pub fn cpu_access(&self) -> CpuAccess {
        self.access
    }

    pub fn buffer_identity(&self) -> &BufferIdentity {
        &self.storage.identity
    }

    /// Which heap served the buffer: "linux,cma", "system", "memfd", "heap", or "import".
    pub fn heap_source(&self) -> &str {
        self.storage.backing.source()
    }

    pub fn contiguity(&self) -> Contiguity {
        self.storage.backing.contiguity()
    }

    /// Byte offset of this tensor's first byte inside its buffer (plane offset plus any view
    /// window); what a map adds and what a device import is given.
    pub fn byte_offset(&self) -> usize {
        self.plane_offset.unwrap_or(0) + self.view_offset
    }

    /// The backing's fd, borrowed (DMA-BUF and shared memory only).
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.storage.backing.fd()
    }

    /// A dup of the backing's fd for handing to another API or process.
    pub fn clone_fd(&self) -> Result<OwnedFd> {
        match self.fd() {
            Some(fd) => backing::dup(fd),
            None => Err(Error::InvalidOperation(format!(
                "tensor `{}` lives in {} memory, which has no fd to export",
                self.name(),
                self.memory()
            ))),
        }
    }

    /// The one place a tensor's byte span is computed: an image's comes from its plane table
    /// (never from the shape, which for subsampled formats is smaller than the buffer).
    pub(crate) fn extent(&self) -> usize {
        match &self.image {
            Some(img) => img.extent(),
            None => self.shape.iter().product::<usize>() * self.dtype.size(),
        }
    }

    pub(crate) fn check_extent(&self, what: &str) -> Result<()> {
        let needed = self.byte_offset().checked_add(self.extent()).ok_or_else(|| Error::InvalidShape {
            shape: self.shape.clone(),
            reason: "extent overflows usize".into(),
        })?;
        let available = self.capacity_bytes();
        if needed > available {
            return Err(Error::BufferTooSmall { what: what.to_string(), needed, available });
        }
        Ok(())
    }

    pub(crate) fn map_raw(&self, access: CpuAccess) -> Result<RawMap> {
        self.access.check(access)?;
        self.check_extent("a map of the tensor")?;
        self.storage.backing.map(self.byte_offset(), self.extent(), access)
    }

    /// Map as elements of `T`, which must be the tensor's dtype or `u8` (a byte view).
    pub fn map_with<T: TensorElement>(&self, access: CpuAccess) -> Result<TensorMap<'_, T>> {
        if T::DTYPE != self.dtype && T::DTYPE != DType::U8 {
            return Err(Error::DTypeMismatch { actual: self.dtype, requested: T::DTYPE });
        }
        let align = std::mem::align_of::<T>();
        if !self.byte_offset().is_multiple_of(align) {
            return Err(Error::InvalidOperation(format!(
                "byte offset {} is not aligned to {} for {:?} elements",
                self.byte_offset(),
                align,
                T::DTYPE
            )));
        }
        let raw = self.map_raw(access)?;
        let len = raw.len / std::mem::size_of::<T>();
        Ok(TensorMap { raw, len, writable: access.can_write(), _marker: PhantomData })
    }

    pub fn quantization(&self) -> Option<&Quantization> {
        self.quantization.as_ref()
    }

    pub fn set_quantization(&mut self, q: Option<Quantization>) {
        self.quantization = q;
    }

    pub fn colorimetry(&self) -> Option<Colorimetry> {
        self.colorimetry
    }

    pub fn set_colorimetry(&mut self, c: Option<Colorimetry>) {
        self.colorimetry = c;
    }

    pub fn into_typed<T: TensorElement>(self) -> Result<Tensor<T>> {
        if T::DTYPE != self.dtype {
            return Err(Error::DTypeMismatch { actual: self.dtype, requested: T::DTYPE });
        }
        Ok(Tensor { inner: self, _marker: PhantomData })
    }
}

/// Wrap an fd this crate already owns (a dup) after classifying it by filesystem magic and
/// reading its real size from the kernel.
pub(crate) fn import_storage(owned: OwnedFd) -> Result<Arc<Storage>> {
    use std::os::fd::AsFd;
    let memory = import::classify(import::fs_magic(owned.as_fd())?)?;
    let size = backing::fd_size(owned.as_fd())?;
    let backing: Box<dyn Backing> = match memory {
        TensorMemory::DmaBuf => Box::new(DmaBacking::import(owned, size)),
        TensorMemory::Shm => Box::new(ShmBacking::import(owned, size)),
        other => return Err(Error::NotSupported(other)),
    };
    Ok(Arc::new(Storage { backing, identity: BufferIdentity::new() }))
}

/// A typed tensor. Everything that does not depend on the element type is on `TensorDyn`,
/// reached through `Deref`.
#[derive(Debug, Clone)]
pub struct Tensor<T: TensorElement> {
    inner: TensorDyn,
    _marker: PhantomData<T>,
}

impl<T: TensorElement> Deref for Tensor<T> {
    type Target = TensorDyn;
    fn deref(&self) -> &TensorDyn {
        &self.inner
    }
}

impl<T: TensorElement> DerefMut for Tensor<T> {
    /// Mutators (`configure_image`, `set_plane_offset`, …) never change the dtype.
    fn deref_mut(&mut self) -> &mut TensorDyn {
        &mut self.inner
    }
}

impl<T: TensorElement> Tensor<T> {
    pub fn new(shape: &[usize], memory: Option<TensorMemory>, name: Option<&str>) -> Result<Self> {
        TensorDyn::new(shape, T::DTYPE, memory, name)?.into_typed()
    }

    pub fn with_cpu_access(
        shape: &[usize],
        access: CpuAccess,
        memory: Option<TensorMemory>,
        name: Option<&str>,
    ) -> Result<Self> {
        TensorDyn::with_cpu_access(shape, T::DTYPE, access, memory, name)?.into_typed()
    }

    pub fn with_options(shape: &[usize], opts: &TensorOptions) -> Result<Self> {
        TensorDyn::with_options(shape, T::DTYPE, opts)?.into_typed()
    }

    pub fn from_fd(fd: BorrowedFd<'_>, shape: &[usize], name: Option<&str>) -> Result<Self> {
        TensorDyn::from_fd(fd, shape, T::DTYPE, name)?.into_typed()
    }

    pub fn from_fd_with_access(
        fd: BorrowedFd<'_>,
        shape: &[usize],
        access: CpuAccess,
        name: Option<&str>,
    ) -> Result<Self> {
        TensorDyn::from_fd_with_access(fd, shape, T::DTYPE, access, name)?.into_typed()
    }

    pub fn into_dyn(self) -> TensorDyn {
        self.inner
    }

    pub fn as_dyn(&self) -> &TensorDyn {
        &self.inner
    }

    /// The one required map: fails with `CpuAccessDenied` when the declaration does not cover
    /// `access`, before the backing is touched.
    pub fn map_with(&self, access: CpuAccess) -> Result<TensorMap<'_, T>> {
        self.inner.map_with(access)
    }

    /// Read-write map (fails on a tensor declared `Read`, `Write` or `None`).
    pub fn map(&self) -> Result<TensorMapMut<'_, T>> {
        self.map_with(CpuAccess::ReadWrite).map(TensorMapMut)
    }

    pub fn map_mut(&self) -> Result<TensorMapMut<'_, T>> {
        self.map()
    }

    pub fn map_read(&self) -> Result<TensorMap<'_, T>> {
        self.map_with(CpuAccess::Read)
    }

    /// Write-only map: the CPU cache is not invalidated, so it is for passes that overwrite
    /// every byte they touch; what it reads back is unspecified.
    pub fn map_write(&self) -> Result<TensorMapMut<'_, T>> {
        self.map_with(CpuAccess::Write).map(TensorMapMut)
    }
}

/// A live CPU map; RAII (unmaps and ends the DMA-BUF sync bracket on drop). Dereferences to a
/// read-only slice; `as_mut_slice` works when it was mapped for writing.
pub struct TensorMap<'a, T> {
    raw: RawMap,
    len: usize,
    writable: bool,
    _marker: PhantomData<(&'a TensorDyn, T)>,
}

impl<T: TensorElement> TensorMap<'_, T> {
    pub fn writable(&self) -> bool {
        self.writable
    }

    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        if !self.writable {
            return Err(Error::InvalidOperation("mutable access through a read-only map".into()));
        }
        Ok(unsafe { std::slice::from_raw_parts_mut(self.raw.ptr.as_ptr().cast::<T>(), self.len) })
    }

    pub fn as_ptr(&self) -> *const T {
        self.raw.ptr.as_ptr().cast()
    }
}

impl<T: TensorElement> Deref for TensorMap<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // Alignment and extent were checked when the map was made; T is plain data.
        unsafe { std::slice::from_raw_parts(self.raw.ptr.as_ptr().cast::<T>(), self.len) }
    }
}

/// A map that keeps its tensor alive, for callers that cannot hold a borrow (the C library's
/// handles). The map is declared before the tensor so it drops first: its DMA-BUF sync end uses
/// the tensor's fd.
pub struct OwnedMap {
    raw: RawMap,
    writable: bool,
    _tensor: TensorDyn,
}

impl OwnedMap {
    pub fn as_ptr(&self) -> *mut u8 {
        self.raw.ptr.as_ptr()
    }

    pub fn len(&self) -> usize {
        self.raw.len
    }

    pub fn is_empty(&self) -> bool {
        self.raw.len == 0
    }

    pub fn writable(&self) -> bool {
        self.writable
    }
}

impl TensorDyn {
    /// Map the tensor's bytes with the declared-access check every map makes; the map holds a
    /// clone of the tensor.
    pub fn map_owned(&self, access: CpuAccess) -> Result<OwnedMap> {
        let raw = self.map_raw(access)?;
        Ok(OwnedMap { raw, writable: access.can_write(), _tensor: self.clone() })
    }
}

/// A map taken for writing: dereferences mutably.
pub struct TensorMapMut<'a, T>(TensorMap<'a, T>);

impl<'a, T: TensorElement> TensorMapMut<'a, T> {
    pub(crate) fn wrap(m: TensorMap<'a, T>) -> Self {
        debug_assert!(m.writable);
        TensorMapMut(m)
    }

    pub fn into_map(self) -> TensorMap<'a, T> {
        self.0
    }
}

impl<T: TensorElement> Deref for TensorMapMut<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.0
    }
}

impl<T: TensorElement> DerefMut for TensorMapMut<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        unsafe { std::slice::from_raw_parts_mut(self.0.raw.ptr.as_ptr().cast::<T>(), self.0.len) }
    }
}
