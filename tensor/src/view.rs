//! Zero-allocation sub-regions: `view(region)` and `batch(n)` return owned tensors over the
//! parent's storage (same `BufferIdentity`), and `copy_to_flat` materializes one.

use crate::access::CpuAccess;
use crate::dtype::TensorElement;
use crate::format::{PixelFormat, PixelLayout, PlaneGeometry};
use crate::image::{ImageDesc, ImageMeta};
use crate::memory::TensorMemory;
use crate::preprocess::Region;
use crate::tensor::{Tensor, TensorDyn, TensorMapMut, TensorOptions};
use crate::{Error, Result};
use std::sync::Arc;

/// The bytes of `region` in each plane of a `width` x `height` image whose planes are `planes`
/// (offsets relative to one origin). Each window starts at the region's first granule and ends
/// after its last row's last granule, so a map of it never reaches past the parent's bytes.
pub fn window_planes(
    format: PixelFormat,
    planes: &[PlaneGeometry],
    width: usize,
    height: usize,
    region: Region,
    esz: usize,
) -> Result<Vec<PlaneGeometry>> {
    let out_of_bounds = || Error::RegionOutOfBounds {
        x: region.x,
        y: region.y,
        width: region.width,
        height: region.height,
        bound_width: width,
        bound_height: height,
    };
    let right = region.x.checked_add(region.width).ok_or_else(out_of_bounds)?;
    let bottom = region.y.checked_add(region.height).ok_or_else(out_of_bounds)?;
    if right > width || bottom > height {
        return Err(out_of_bounds());
    }
    if region.width == 0 || region.height == 0 {
        return Err(Error::InvalidArgument(format!("an empty region {region:?} has no bytes to view")));
    }
    if format.layout() == PixelLayout::Bitstream {
        return Err(Error::InvalidOperation("a bitstream has no pixel grid to take a region of".into()));
    }
    let (hdiv, vdiv) = format.subsampling().divisors();
    if !region.x.is_multiple_of(hdiv) || !region.y.is_multiple_of(vdiv) {
        return Err(Error::InvalidArgument(format!(
            "a {} region must start on a multiple of {hdiv} columns and {vdiv} rows (shared chroma), got ({}, {})",
            format.name(),
            region.x,
            region.y
        )));
    }
    Ok(planes
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let s = format.plane_sampling(i, esz);
            let stride = p.stride as usize;
            let row0 = region.y / s.vdiv;
            let col0 = (region.x / s.hdiv) * s.bytes;
            let rows = s.rows(bottom) - row0;
            let bytes = s.row_bytes(right) - col0;
            PlaneGeometry {
                offset: p.offset + row0 * stride + col0,
                stride: p.stride,
                size: (rows - 1) * stride + bytes,
            }
        })
        .collect())
}

impl TensorDyn {
    /// A view or batch element: its rows may share cache lines with bytes outside it.
    pub fn is_view(&self) -> bool {
        self.image.as_ref().is_some_and(|i| i.is_view) || self.view_offset != 0
    }

    /// The direction a pass that fills this tensor maps with: the whole tensor can be mapped
    /// write-only (no cache invalidation), a view must be read-write because a write-back of its
    /// cache lines carries neighbouring bytes too.
    pub fn write_access(&self) -> CpuAccess {
        if self.is_view() {
            CpuAccess::ReadWrite
        } else {
            CpuAccess::Write
        }
    }

    /// Owned sub-region of the leading image, sharing this tensor's storage and identity.
    /// Composes: a view of a view adds offsets. Out of bounds is an error, never a clamp.
    pub fn view(&self, region: Region) -> Result<TensorDyn> {
        let Some(img) = self.image.as_deref() else {
            return Err(Error::InvalidOperation(
                "view(region) needs an image tensor (set_format or an image constructor)".into(),
            ));
        };
        if img.batch.is_some() {
            return self.batch(0)?.view(region);
        }
        let esz = self.dtype.size();
        let win = window_planes(img.format, &img.planes, img.width, img.height, region, esz)?;
        let start = win[0].offset;
        let chroma = match &img.chroma {
            Some(c) => {
                let s = img.format.plane_sampling(1, esz);
                let (col0, row0) = ((region.x / s.hdiv) * s.bytes, region.y / s.vdiv);
                let r = Region {
                    x: col0,
                    y: row0,
                    width: s.row_bytes(region.x + region.width) - col0,
                    height: s.rows(region.y + region.height) - row0,
                };
                Some(Box::new(c.view(r)?))
            }
            None => None,
        };
        let meta = ImageMeta {
            format: img.format,
            width: region.width,
            height: region.height,
            row_stride: img.row_stride,
            planes: win.into_iter().map(|p| PlaneGeometry { offset: p.offset - start, ..p }).collect(),
            batch: None,
            chroma,
            is_view: true,
        };
        let mut v = self.clone();
        v.view_offset += start;
        v.shape = meta.shape();
        v.image = Some(Arc::new(meta));
        Ok(v)
    }

    /// Element `n` along the leading batch dimension. On an unbatched image (N = 1) `batch(0)` is
    /// the whole tensor; on a plain tensor the leading dimension is the batch.
    pub fn batch(&self, n: usize) -> Result<TensorDyn> {
        match self.image.as_deref() {
            Some(img) => match img.batch {
                None if n == 0 => Ok(self.clone()),
                None => Err(Error::BatchIndexOutOfBounds { index: n, len: 1 }),
                Some((len, _)) if n >= len => Err(Error::BatchIndexOutOfBounds { index: n, len }),
                Some((_, stride)) => {
                    let mut meta = img.clone();
                    meta.batch = None;
                    meta.is_view = true;
                    let mut v = self.clone();
                    v.view_offset += n * stride;
                    v.shape = meta.shape();
                    v.image = Some(Arc::new(meta));
                    Ok(v)
                }
            },
            None => {
                let len = self.shape.first().copied().unwrap_or(0);
                if n >= len {
                    return Err(Error::BatchIndexOutOfBounds { index: n, len });
                }
                let mut v = self.clone();
                v.shape = self.shape[1..].to_vec();
                v.view_offset += n * v.extent();
                Ok(v)
            }
        }
    }

    /// Materialize into a tight heap tensor with a new identity: row by row for images, so the
    /// result has the format's natural pitch whatever the source's.
    pub fn copy_to_flat(&self) -> Result<TensorDyn> {
        let src = self.map_with::<u8>(CpuAccess::Read)?;
        let Some(img) = self.image.as_deref() else {
            let opts = TensorOptions { memory: Some(TensorMemory::Mem), ..Default::default() };
            let dst = TensorDyn::with_options(&self.shape, self.dtype, &opts)?;
            dst.map_with::<u8>(CpuAccess::ReadWrite)?.as_mut_slice()?.copy_from_slice(&src);
            return Ok(dst);
        };
        let mut desc = ImageDesc::new(img.width, img.height, img.format)
            .with_dtype(self.dtype)
            .with_memory(TensorMemory::Mem);
        if let Some((n, _)) = img.batch {
            desc = desc.with_batch(n);
        }
        let mut dst = TensorDyn::image_desc(&desc)?;
        dst.quantization = self.quantization.clone();
        dst.colorimetry = self.colorimetry;
        let dimg = dst.image.clone().expect("image_desc gives an image");
        let chroma = self.chroma().map(|c| c.map_with::<u8>(CpuAccess::Read)).transpose()?;
        let mut out = dst.map_with::<u8>(CpuAccess::ReadWrite)?;
        let out = out.as_mut_slice()?;
        let esz = self.dtype.size();
        let (n, sstep) = img.batch.unwrap_or((1, 0));
        let dstep = dimg.batch.map_or(0, |(_, s)| s);
        for b in 0..n {
            for (i, dp) in dimg.planes.iter().enumerate() {
                let s = img.format.plane_sampling(i, esz);
                let (buf, sp, base): (&[u8], PlaneGeometry, usize) = match (img.planes.get(i), &chroma) {
                    (Some(sp), _) => (&src, *sp, b * sstep),
                    (None, Some(c)) => (c, self.chroma().unwrap().plane_table()[0], 0),
                    (None, None) => unreachable!("a single-buffer image lists every plane"),
                };
                let row = s.row_bytes(img.width);
                for r in 0..s.rows(img.height) {
                    let from = base + sp.offset + r * sp.stride as usize;
                    let to = b * dstep + dp.offset + r * dp.stride as usize;
                    out[to..to + row].copy_from_slice(&buf[from..from + row]);
                }
            }
        }
        Ok(dst)
    }
}

impl<T: TensorElement> Tensor<T> {
    pub fn view(&self, region: Region) -> Result<Self> {
        self.as_dyn().view(region)?.into_typed()
    }

    pub fn batch(&self, n: usize) -> Result<Self> {
        self.as_dyn().batch(n)?.into_typed()
    }

    pub fn copy_to_flat(&self) -> Result<Self> {
        self.as_dyn().copy_to_flat()?.into_typed()
    }

    /// Map for a pass that overwrites everything it covers (`write_access`).
    pub fn map_for_write(&self) -> Result<TensorMapMut<'_, T>> {
        self.map_with(self.write_access()).map(TensorMapMut::wrap)
    }

    /// Map for a pass that writes some bytes and must keep the rest: always read-write.
    pub fn map_for_partial_write(&self) -> Result<TensorMapMut<'_, T>> {
        self.map_with(CpuAccess::ReadWrite).map(TensorMapMut::wrap)
    }
}
