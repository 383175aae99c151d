//! Tensors that are images: pixel format, row stride and plane table recorded beside the shape.
//!
//! The layout rules live in `format.rs`; this module applies them at the two places a stride is
//! decided (allocation and `configure_image`) and at import (`import_image`, `from_planes`).

use crate::access::CpuAccess;
use crate::backing;
use crate::dtype::{DType, TensorElement};
use crate::format::{byte_strides, PixelFormat, PixelLayout, PlaneGeometry, StrideSpec};
use crate::memory::{self, TensorMemory};
use crate::tensor::{import_storage, select, AllocRequest, Tensor, TensorDyn};
use crate::{Error, Result};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

#[derive(Debug, Clone)]
pub(crate) struct ImageMeta {
    pub(crate) format: PixelFormat,
    pub(crate) width: usize,
    pub(crate) height: usize,
    /// Plane-0 row pitch in bytes.
    pub(crate) row_stride: usize,
    /// One image's planes in this tensor's buffer, offsets from the tensor's first byte. A
    /// multi-plane image lists only the planes of this buffer; the others are in `chroma`.
    pub(crate) planes: Vec<PlaneGeometry>,
    /// (N, bytes from one image to the next) when the shape's leading dimension is a batch.
    pub(crate) batch: Option<(usize, usize)>,
    /// Multi-plane: the chroma plane in its own buffer, as a GRAY8 image of its bytes.
    pub(crate) chroma: Option<Box<TensorDyn>>,
    pub(crate) is_view: bool,
}

impl ImageMeta {
    pub(crate) fn full(
        format: PixelFormat,
        width: usize,
        height: usize,
        rs: usize,
        batch: Option<usize>,
    ) -> Self {
        let one = format.image_bytes(width, height, rs);
        ImageMeta {
            format,
            width,
            height,
            row_stride: rs,
            planes: format.plane_table(width, height, rs),
            batch: batch.map(|n| (n, one)),
            chroma: None,
            is_view: false,
        }
    }

    pub(crate) fn extent(&self) -> usize {
        let one = self.planes.iter().map(|p| p.offset + p.size).max().unwrap_or(0);
        match self.batch {
            Some((0, _)) => 0,
            Some((n, stride)) => (n - 1) * stride + one,
            None => one,
        }
    }

    pub(crate) fn shape(&self) -> Vec<usize> {
        let mut s = self.format.addressing_shape(self.width, self.height);
        if let Some((n, _)) = self.batch {
            s.insert(0, n);
        }
        s
    }

    pub(crate) fn stride_spec(&self) -> StrideSpec {
        let plane_stride = match (self.format, self.planes.as_slice()) {
            (PixelFormat::PlanarRgb, [p0, p1, ..]) => Some(p1.offset - p0.offset),
            _ => None,
        };
        StrideSpec {
            layout: self.format.layout(),
            row_stride: self.row_stride,
            plane_stride,
            batch_stride: self.batch.map(|(_, s)| s),
        }
    }
}

/// Sizes and element type a format can hold. YUV and bitstreams are byte formats; RGB-family,
/// gray and planar RGB also carry wider elements (a float model input is planar RGB f32).
/// Largest side accepted: far beyond any sensor, and small enough that no stride or plane size
/// computed from it can overflow.
pub const MAX_IMAGE_SIDE: usize = 1 << 24;

pub(crate) fn check_image(format: PixelFormat, dtype: DType, width: usize, height: usize) -> Result<()> {
    if width == 0 || height == 0 || width > MAX_IMAGE_SIDE || height > MAX_IMAGE_SIDE {
        return Err(Error::InvalidArgument(format!(
            "a {} image needs sides in 1..={MAX_IMAGE_SIDE}, got {width}x{height}",
            format.name()
        )));
    }
    if (format.is_yuv() || format.layout() == PixelLayout::Bitstream) && dtype != DType::U8 {
        return Err(Error::InvalidArgument(format!(
            "{} images hold uint8 samples, not {dtype}",
            format.name()
        )));
    }
    Ok(())
}

/// A pitch must hold a row. An allocation's pitch (`allocating`) must also keep every plane of a
/// DMA image, and of any semi-planar image, 64-byte aligned: Mali refuses other pitches with
/// EGL_BAD_ALLOC and Vivante with EGL_BAD_ACCESS, and nothing in those errors points at the
/// stride. A foreign buffer's pitch is what its producer made, so imports only check the row.
pub(crate) fn check_row_stride(
    format: PixelFormat,
    width: usize,
    esz: usize,
    rs: usize,
    allocating: Option<TensorMemory>,
) -> Result<usize> {
    let min = format.min_row_stride(width, esz);
    if rs < min {
        return Err(Error::InvalidArgument(format!(
            "row stride {rs} is narrower than the {min} bytes a {width}-pixel {} row needs",
            format.name()
        )));
    }
    let dma = allocating == Some(TensorMemory::DmaBuf);
    let align = if allocating.is_some() && (dma || format.layout() == PixelLayout::SemiPlanar) {
        format.dma_stride_alignment()
    } else if format.layout() == PixelLayout::Planar && format != PixelFormat::PlanarRgb {
        2
    } else {
        1
    };
    if !rs.is_multiple_of(align) {
        return Err(Error::InvalidArgument(format!(
            "row stride {rs} of a {} image is not a multiple of {align}: DMA and semi-planar images need \
             every plane's rows 64-byte aligned",
            format.name()
        )));
    }
    Ok(rs)
}

/// The full image request (builder style). `Tensor::image` is the shorthand.
#[derive(Debug, Clone)]
pub struct ImageDesc {
    width: usize,
    height: usize,
    format: PixelFormat,
    dtype: DType,
    row_stride: Option<usize>,
    contiguous: bool,
    memory: Option<TensorMemory>,
    cpu_access: CpuAccess,
    batch: Option<usize>,
    name: Option<String>,
}

impl ImageDesc {
    pub fn new(width: usize, height: usize, format: PixelFormat) -> Self {
        ImageDesc {
            width,
            height,
            format,
            dtype: DType::U8,
            row_stride: None,
            contiguous: false,
            memory: None,
            cpu_access: CpuAccess::ReadWrite,
            batch: None,
            name: None,
        }
    }
    pub fn with_dtype(mut self, dtype: DType) -> Self {
        self.dtype = dtype;
        self
    }
    /// An explicit pitch in bytes (checked: wide enough, and 64-aligned for DMA images).
    pub fn with_row_stride(mut self, row_stride: usize) -> Self {
        self.row_stride = Some(row_stride);
        self
    }
    /// Physically contiguous (CMA) memory or an error.
    pub fn with_contiguous(mut self, contiguous: bool) -> Self {
        self.contiguous = contiguous;
        self
    }
    pub fn with_memory(mut self, memory: TensorMemory) -> Self {
        self.memory = Some(memory);
        self
    }
    pub fn with_cpu_access(mut self, access: CpuAccess) -> Self {
        self.cpu_access = access;
        self
    }
    /// `N` images stacked at the padded pitch; the shape gains a leading `N`.
    pub fn with_batch(mut self, n: usize) -> Self {
        self.batch = Some(n);
        self
    }
    pub fn with_name(mut self, name: &str) -> Self {
        self.name = Some(name.to_string());
        self
    }
}

/// A foreign plane to import: a dup of its fd plus the pitch and start byte the producer stated.
#[derive(Debug)]
pub struct PlaneDescriptor {
    fd: OwnedFd,
    stride: Option<usize>,
    offset: Option<usize>,
}

impl PlaneDescriptor {
    /// Dups `fd`: the descriptor (and the tensor made from it) owns its own reference.
    pub fn new(fd: BorrowedFd<'_>) -> Result<Self> {
        Ok(PlaneDescriptor { fd: backing::dup(fd)?, stride: None, offset: None })
    }
    pub fn with_stride(mut self, stride: usize) -> Self {
        self.stride = Some(stride);
        self
    }
    pub fn with_offset(mut self, offset: usize) -> Self {
        self.offset = Some(offset);
        self
    }
    pub fn stride(&self) -> Option<usize> {
        self.stride
    }
    pub fn offset(&self) -> Option<usize> {
        self.offset
    }
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// One plane as a device import needs it: which fd, where in it, at what pitch.
#[derive(Debug, Clone, Copy)]
pub struct Plane<'a> {
    pub fd: Option<BorrowedFd<'a>>,
    /// Absolute byte offset inside the fd's buffer.
    pub offset: usize,
    pub stride: isize,
    pub size: usize,
}

impl TensorDyn {
    /// An image with automatic memory (DMA → Mem: shared memory buys an image nothing).
    pub fn image(
        width: usize,
        height: usize,
        format: PixelFormat,
        dtype: DType,
        cpu_access: CpuAccess,
        memory: Option<TensorMemory>,
    ) -> Result<Self> {
        let mut desc = ImageDesc::new(width, height, format).with_dtype(dtype).with_cpu_access(cpu_access);
        desc.memory = memory;
        Self::image_desc(&desc)
    }

    /// Every DMA image gets a 64-byte-aligned pitch in every layout, and its allocation is that
    /// pitch times all its rows; heap and shm packed/planar images keep the tight pitch so flat CPU
    /// consumers are unaffected; semi-planar is aligned everywhere.
    pub fn image_desc(desc: &ImageDesc) -> Result<Self> {
        let (w, h, format, esz) = (desc.width, desc.height, desc.format, desc.dtype.size());
        check_image(format, desc.dtype, w, h)?;
        let n = desc.batch.unwrap_or(1);
        let attempt = |m: TensorMemory| {
            let rs = match desc.row_stride {
                Some(rs) => check_row_stride(format, w, esz, rs, Some(m))?,
                None => format.row_stride_for(w, esz, m == TensorMemory::DmaBuf),
            };
            let bytes = format.image_bytes(w, h, rs).checked_mul(n).ok_or_else(|| {
                Error::InvalidArgument(format!("a batch of {n} {w}x{h} images overflows usize"))
            })?;
            let req = AllocRequest { bytes, access: desc.cpu_access, contiguous: desc.contiguous };
            Ok((req.allocate(m)?, rs))
        };
        let (storage, rs) = select(desc.memory, memory::image_chain(), attempt)?;
        let meta = ImageMeta::full(format, w, h, rs, desc.batch);
        Ok(Self::over_image(storage, meta, desc.dtype, desc.cpu_access, desc.name.as_deref()))
    }

    pub(crate) fn over_image(
        storage: Arc<crate::tensor::Storage>,
        meta: ImageMeta,
        dtype: DType,
        access: CpuAccess,
        name: Option<&str>,
    ) -> Self {
        let mut t = Self::over(storage, meta.shape(), dtype, access, name);
        t.image = Some(Arc::new(meta));
        t
    }

    pub(crate) fn set_image(&mut self, meta: ImageMeta) {
        self.shape = meta.shape();
        self.image = Some(Arc::new(meta));
    }

    /// Import a foreign image. One descriptor: a single-fd image (chroma found through the plane
    /// table at the stated pitch). Two descriptors (semi-planar formats): luma and chroma each
    /// in their own buffer, or the same buffer at the producer's stated offsets.
    pub fn import_image(
        planes: Vec<PlaneDescriptor>,
        width: usize,
        height: usize,
        format: PixelFormat,
        access: CpuAccess,
    ) -> Result<Self> {
        check_image(format, DType::U8, width, height)?;
        let mut planes = planes.into_iter();
        match (planes.next(), planes.next(), planes.next()) {
            (Some(p), None, None) => {
                let natural = format.min_row_stride(width, 1);
                let natural = if format.layout() == PixelLayout::Planar {
                    natural.next_multiple_of(2)
                } else {
                    natural
                };
                let rs = check_row_stride(format, width, 1, p.stride.unwrap_or(natural), None)?;
                let mut t = Self::over(import_storage(p.fd)?, Vec::new(), DType::U8, access, None);
                t.set_image(ImageMeta::full(format, width, height, rs, None));
                t.plane_offset = p.offset;
                t.check_extent(&format!("a {width}x{height} {} image at row stride {rs}", format.name()))?;
                Ok(t)
            }
            (Some(luma), Some(chroma), None) if format.layout() == PixelLayout::SemiPlanar => {
                let smp = format.plane_sampling(1, 1);
                let luma = import_plane(luma, format.min_row_stride(width, 1), height, access)?;
                let chroma = import_plane(chroma, smp.row_bytes(width), smp.rows(height), access)?;
                Self::from_planes(&luma, &chroma, format)
            }
            _ => Err(Error::InvalidArgument(format!(
                "{} images import from one plane descriptor{}",
                format.name(),
                if format.layout() == PixelLayout::SemiPlanar { " or two (luma, chroma)" } else { "" }
            ))),
        }
    }

    /// Combine two plane tensors into one semi-planar image; each plane keeps its own fd, stride
    /// and offset. A plane is a GRAY8 image of its bytes or a plain uint8 `[rows, row_bytes]`.
    pub fn from_planes(luma: &TensorDyn, chroma: &TensorDyn, format: PixelFormat) -> Result<Self> {
        if format.layout() != PixelLayout::SemiPlanar {
            return Err(Error::InvalidArgument(format!(
                "from_planes combines a luma and a chroma plane; {} is not semi-planar",
                format.name()
            )));
        }
        let luma = as_plane(luma, "luma")?;
        let chroma = as_plane(chroma, "chroma")?;
        let (lw, h, lrs) = plane_dims(&luma);
        let (cw, crows, _) = plane_dims(&chroma);
        let smp = format.plane_sampling(1, 1);
        // Odd-width NV12 stores whole chroma pairs, so the luma plane is the grid's width.
        let width = lw;
        if crows != smp.rows(h) || cw < smp.row_bytes(width) {
            return Err(Error::InvalidArgument(format!(
                "a {width}x{h} {} image needs a chroma plane of {} rows x {} bytes, got {crows} x {cw}",
                format.name(),
                smp.rows(h),
                smp.row_bytes(width)
            )));
        }
        let mut meta = ImageMeta::full(format, width, h, lrs, None);
        meta.planes.truncate(1);
        meta.chroma = Some(Box::new(chroma));
        let mut t = luma.clone();
        t.plane_offset = Some(luma.byte_offset()).filter(|&o| o != 0);
        t.view_offset = 0;
        t.set_image(meta);
        t.check_extent("the luma plane")?;
        Ok(t)
    }

    pub fn format(&self) -> Option<PixelFormat> {
        self.image.as_ref().map(|i| i.format)
    }

    /// Width of one image (one element of a batch).
    pub fn width(&self) -> Option<usize> {
        self.image.as_ref().map(|i| i.width)
    }

    pub fn height(&self) -> Option<usize> {
        self.image.as_ref().map(|i| i.height)
    }

    /// The recorded plane-0 pitch in bytes, for images.
    pub fn row_stride(&self) -> Option<usize> {
        self.image.as_ref().map(|i| i.row_stride)
    }

    /// The pitch a consumer steps rows by: the recorded one, or the dense row of a plain tensor.
    pub fn effective_row_stride(&self) -> usize {
        match &self.image {
            Some(i) => i.row_stride,
            None => self.shape.iter().skip(1).product::<usize>() * self.dtype.size(),
        }
    }

    pub fn plane_offset(&self) -> Option<usize> {
        self.plane_offset
    }

    /// Set where this tensor starts inside a foreign buffer (a plane at a non-zero byte).
    /// `set_format` and `reshape` clear it again.
    pub fn set_plane_offset(&mut self, offset: usize) -> Result<()> {
        if self.is_view() {
            return Err(Error::InvalidOperation(
                "a view's start comes from its region, not a plane offset".into(),
            ));
        }
        let old = self.plane_offset.replace(offset);
        if let Err(e) = self.check_extent("the tensor at this plane offset") {
            self.plane_offset = old;
            return Err(e);
        }
        Ok(())
    }

    /// Describe a plain tensor as an image of `format`; its shape must be that format's
    /// addressing or allocation shape. Clears the plane offset.
    pub fn set_format(&mut self, format: PixelFormat) -> Result<()> {
        if self.image.is_some() {
            return Err(Error::InvalidOperation(
                "the tensor is already an image; configure_image re-points it at a new geometry".into(),
            ));
        }
        let (w, h) = infer_size(format, &self.shape).ok_or_else(|| Error::InvalidShape {
            shape: self.shape.clone(),
            reason: format!("not the shape of a {} image", format.name()),
        })?;
        check_image(format, self.dtype, w, h)?;
        let rs = self.effective_row_stride();
        check_row_stride(format, w, self.dtype.size(), rs, None)?;
        let saved = (self.plane_offset.take(), self.shape.clone());
        self.set_image(ImageMeta::full(format, w, h, rs, None));
        if let Err(e) = self.check_extent("the image") {
            self.image = None;
            (self.plane_offset, self.shape) = saved;
            return Err(e);
        }
        Ok(())
    }

    /// A new dense shape over the same bytes; drops image metadata and the plane offset.
    pub fn reshape(&mut self, shape: &[usize]) -> Result<()> {
        if self.is_view() || self.is_multiplane() {
            return Err(Error::InvalidOperation("views and multi-plane images cannot be reshaped".into()));
        }
        let bytes = crate::tensor::byte_count(shape, self.dtype)?;
        if bytes > self.capacity_bytes() {
            return Err(Error::BufferTooSmall {
                what: format!("shape {shape:?}"),
                needed: bytes,
                available: self.capacity_bytes(),
            });
        }
        self.image = None;
        self.plane_offset = None;
        self.shape = shape.to_vec();
        Ok(())
    }

    /// Re-point a (pooled) tensor at a new image geometry. The aligned pitch is recomputed; the
    /// previous pitch is kept only when it is itself 64-aligned, wide enough for the new width and
    /// still inside the allocation. This is the recycle path, where the 64-byte rule is easiest
    /// to lose.
    pub fn configure_image(&mut self, width: usize, height: usize, format: PixelFormat) -> Result<()> {
        if self.is_view() || self.is_multiplane() {
            return Err(Error::InvalidOperation(
                "views and multi-plane images cannot be reconfigured".into(),
            ));
        }
        check_image(format, self.dtype, width, height)?;
        let esz = self.dtype.size();
        let cap = self.capacity_bytes();
        let batch = self.image.as_ref().and_then(|i| i.batch).map(|(n, _)| n);
        let n = batch.unwrap_or(1);
        let fits = |rs: usize| format.image_bytes(width, height, rs).saturating_mul(n) <= cap;
        let kept = self.row_stride().filter(|&old| {
            old.is_multiple_of(format.dma_stride_alignment())
                && old >= format.min_row_stride(width, esz)
                && fits(old)
        });
        let rs =
            kept.unwrap_or_else(|| format.row_stride_for(width, esz, self.memory() == TensorMemory::DmaBuf));
        if !fits(rs) {
            return Err(Error::BufferTooSmall {
                what: format!("{n} {width}x{height} {} image(s) at row stride {rs}", format.name()),
                needed: format.image_bytes(width, height, rs).saturating_mul(n),
                available: cap,
            });
        }
        self.plane_offset = None;
        self.view_offset = 0;
        self.set_image(ImageMeta::full(format, width, height, rs, batch));
        Ok(())
    }

    /// Where this tensor's planes are in its own buffer, offsets from `byte_offset()`.
    pub fn plane_table(&self) -> Vec<PlaneGeometry> {
        match &self.image {
            Some(i) => i.planes.clone(),
            None => vec![PlaneGeometry {
                offset: 0,
                stride: self.effective_row_stride() as isize,
                size: self.extent(),
            }],
        }
    }

    /// Every plane with its own fd and absolute offset, chroma included for multi-plane images:
    /// what a GStreamer video meta or an EGL import is built from.
    pub fn planes(&self) -> Vec<Plane<'_>> {
        let base = self.byte_offset();
        let mut out: Vec<Plane<'_>> = self
            .plane_table()
            .into_iter()
            .map(|p| Plane { fd: self.fd(), offset: base + p.offset, stride: p.stride, size: p.size })
            .collect();
        if let Some(c) = self.chroma() {
            out.extend(c.planes());
        }
        out
    }

    pub fn chroma(&self) -> Option<&TensorDyn> {
        self.image.as_ref().and_then(|i| i.chroma.as_deref())
    }

    pub fn is_multiplane(&self) -> bool {
        self.chroma().is_some()
    }

    /// `N` of a batched image, `None` for anything else.
    pub fn batch_len(&self) -> Option<usize> {
        self.image.as_ref().and_then(|i| i.batch).map(|(n, _)| n)
    }

    /// Signed byte strides of the shape, from the one stride function.
    pub fn byte_strides(&self) -> Vec<isize> {
        let spec = self.image.as_ref().map(|i| i.stride_spec());
        byte_strides(&self.shape, self.dtype.size(), spec.as_ref())
    }
}

fn import_plane(p: PlaneDescriptor, row_bytes: usize, rows: usize, access: CpuAccess) -> Result<TensorDyn> {
    let rs = p.stride.unwrap_or(row_bytes);
    let mut t = TensorDyn::over(import_storage(p.fd)?, Vec::new(), DType::U8, access, None);
    t.set_image(ImageMeta::full(
        PixelFormat::Gray8,
        row_bytes,
        rows,
        check_row_stride(PixelFormat::Gray8, row_bytes, 1, rs, None)?,
        None,
    ));
    t.plane_offset = p.offset;
    t.check_extent(&format!("a plane of {rows} rows x {row_bytes} bytes at stride {rs}"))?;
    Ok(t)
}

/// A plane tensor as a GRAY8 image of its bytes.
fn as_plane(t: &TensorDyn, which: &str) -> Result<TensorDyn> {
    if t.dtype != DType::U8 || t.is_multiplane() || t.batch_len().is_some() {
        return Err(Error::InvalidArgument(format!("the {which} plane must be a single uint8 plane")));
    }
    match t.format() {
        Some(PixelFormat::Gray8) => Ok(t.clone()),
        Some(f) => {
            Err(Error::InvalidArgument(format!("the {which} plane is a {} image, not GRAY8", f.name())))
        }
        None if t.shape.len() == 2 => {
            let mut p = t.clone();
            p.set_format(PixelFormat::Gray8)?;
            p.plane_offset = t.plane_offset;
            Ok(p)
        }
        None => Err(Error::InvalidArgument(format!(
            "the {which} plane must be [rows, row_bytes], got {:?}",
            t.shape
        ))),
    }
}

fn plane_dims(t: &TensorDyn) -> (usize, usize, usize) {
    let i = t.image.as_ref().expect("as_plane gave an image");
    (i.width, i.height, i.row_stride)
}

/// (width, height) of a plain shape read as `format`'s addressing or allocation shape.
fn infer_size(format: PixelFormat, shape: &[usize]) -> Option<(usize, usize)> {
    let (w, h) = match (format.layout(), shape) {
        (PixelLayout::Bitstream, &[len]) => (len, 1),
        (PixelLayout::Packed, &[h, w]) if format.channels() == 1 => (w, h),
        (PixelLayout::Packed, &[h, w, c]) if c == format.channels() => (w, h),
        (PixelLayout::Planar, &[3, h, w]) if format == PixelFormat::PlanarRgb => (w, h),
        (PixelLayout::SemiPlanar | PixelLayout::Planar, &[rows, w]) => {
            // The allocation shape's rows are h + chroma rows; find the h that gives them.
            let h = (1..=rows).find(|&h| format.combined_plane_height(h) == rows)?;
            (w, h)
        }
        _ => return None,
    };
    Some((w, h))
}

impl<T: TensorElement> Tensor<T> {
    /// An image of `T` samples: DMA → Mem automatically, or the named memory.
    pub fn image(
        width: usize,
        height: usize,
        format: PixelFormat,
        cpu_access: CpuAccess,
        memory: Option<TensorMemory>,
    ) -> Result<Self> {
        TensorDyn::image(width, height, format, T::DTYPE, cpu_access, memory)?.into_typed()
    }

    pub fn image_desc(desc: &ImageDesc) -> Result<Self> {
        TensorDyn::image_desc(&desc.clone().with_dtype(T::DTYPE))?.into_typed()
    }
}
