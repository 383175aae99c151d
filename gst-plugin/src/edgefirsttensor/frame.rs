//! What an input buffer really holds, checked before a byte of it is read: plane offsets and
//! strides (GstVideoMeta or caps) against the buffer's size, and every fd memory against the
//! kernel's object behind its fd — its type (only DMA-BUF and tmpfs/memfd objects are frames) and
//! its size (a memory that claims more bytes than its object has would SIGBUS the first read).
//! Then the zero-copy import through the cache.
//!
//! The window that remains: a foreign producer that truncates its memfd after this check and
//! before the conversion's read. The check runs on every frame (one fstat per fd memory, the
//! filesystem type cached per device), so the window is the conversion of one frame; memfds this
//! project allocates are sealed against shrinking and cannot open it.

use crate::import_cache::{ImportCache, ImportKey};
use edgefirst_tensor::import::{file_identity, FileIdentity, DMA_BUF_MAGIC, TMPFS_MAGIC};
use edgefirst_tensor::{
    CpuAccess, PixelFormat, PixelLayout, PlaneDescriptor, PlaneGeometry, TensorDyn, TensorMap,
};
use gst_video::prelude::*;
use gst_video::VideoFormat;
use std::collections::HashMap;
use std::os::fd::BorrowedFd;

/// Plane offsets and strides of one buffer, from its GstVideoMeta or the caps.
pub(crate) struct BufferLayout {
    pub offsets: Vec<usize>,
    pub strides: Vec<i32>,
}

/// Offsets and strides this buffer really has, checked against its size with checked arithmetic:
/// a GstVideoMeta that describes bytes the buffer does not hold is an error, never a read past
/// the end.
pub(crate) fn buffer_layout(
    buf: &gst::BufferRef,
    info: &gst_video::VideoInfo,
    format: PixelFormat,
) -> Result<BufferLayout, String> {
    let (offsets, strides) = match buf.meta::<gst_video::VideoMeta>() {
        Some(m) => {
            if (m.format(), m.width(), m.height()) != (info.format(), info.width(), info.height()) {
                return Err(format!(
                    "GstVideoMeta describes {} {}x{} but the caps say {} {}x{}",
                    m.format().to_str(),
                    m.width(),
                    m.height(),
                    info.format().to_str(),
                    info.width(),
                    info.height()
                ));
            }
            (m.offset().to_vec(), m.stride().to_vec())
        }
        None => (info.offset().to_vec(), info.stride().to_vec()),
    };
    let n = format.num_planes();
    if offsets.len() < n || strides.len() < n {
        return Err(format!("{} needs {n} planes, the buffer describes {}", format.name(), offsets.len()));
    }
    let (w, h) = (info.width() as usize, info.height() as usize);
    let size = buf.size();
    for i in 0..n {
        let s = format.plane_sampling(i, 1);
        let (row, rows) = (s.row_bytes(w), s.rows(h));
        let stride = strides[i];
        if stride <= 0 || (stride as usize) < row {
            return Err(format!("plane {i} stride {stride} is shorter than its {row}-byte rows"));
        }
        let end = (rows.max(1) - 1)
            .checked_mul(stride as usize)
            .and_then(|b| b.checked_add(row))
            .and_then(|b| b.checked_add(offsets[i]));
        if end.is_none_or(|e| e > size) {
            return Err(format!(
                "plane {i} at offset {} with stride {stride} needs {} bytes but the buffer holds {size}",
                offsets[i],
                end.map_or("more than usize".to_string(), |e| e.to_string())
            ));
        }
    }
    Ok(BufferLayout { offsets: offsets[..n].to_vec(), strides: strides[..n].to_vec() })
}

/// Filesystem type per device number: a device's type never changes, so the second fstatfs a
/// frame would cost is made once per device. Bounded against a producer cycling devices.
#[derive(Default)]
pub(crate) struct FsTypes(HashMap<u64, u32>);

impl FsTypes {
    fn magic(&mut self, fd: BorrowedFd<'_>, dev: u64) -> Result<u32, String> {
        if let Some(&m) = self.0.get(&dev) {
            return Ok(m);
        }
        let m = edgefirst_tensor::import::fs_magic(fd).map_err(|e| e.to_string())?;
        if self.0.len() >= 64 {
            self.0.clear();
        }
        self.0.insert(dev, m);
        Ok(m)
    }
}

/// A name for the filesystem types a hostile or mistaken producer hands over.
fn fs_name(magic: u32) -> &'static str {
    match magic {
        0x5049_5045 => "a pipe",
        0x0904_1934 => "an anonymous inode (eventfd, timerfd, ...)",
        0x534f_434b => "a socket",
        0xef53 => "an ext2/3/4 file",
        0x5846_5342 => "an XFS file",
        0x9123_683e => "a Btrfs file",
        0x794c_7630 => "an overlayfs file",
        0x9fa0 => "a procfs file",
        0x6265_6572 => "a sysfs file",
        0x1373 => "a device node",
        _ => "an object of another filesystem",
    }
}

/// Per memory of `buf`: the kernel's identity and size of its fd object, None for memories
/// without an fd. Every fd memory must be a DMA-BUF or tmpfs/memfd object holding at least the
/// bytes the memory spans (offset + size), or the frame is refused.
pub(crate) fn check_fd_memories(
    buf: &gst::BufferRef,
    types: &mut FsTypes,
) -> Result<Vec<Option<FileIdentity>>, String> {
    let mut ids = Vec::with_capacity(buf.n_memory());
    for (i, mem) in buf.iter_memories().enumerate() {
        let Some(fdmem) = mem.downcast_memory_ref::<gst_allocators::FdMemory>() else {
            ids.push(None);
            continue;
        };
        let raw = fdmem.fd();
        if raw < 0 {
            return Err(format!("memory {i} has no fd ({raw})"));
        }
        // Borrowed for the two calls below only; the memory owns it for the buffer's life.
        let fd = unsafe { BorrowedFd::borrow_raw(raw) };
        let id = file_identity(fd).map_err(|e| format!("memory {i} (fd {raw}): {e}"))?;
        let magic = types.magic(fd, id.dev)?;
        if magic != DMA_BUF_MAGIC && magic != TMPFS_MAGIC {
            return Err(format!(
                "memory {i}: fd {raw} is {} (filesystem magic {magic:#x}), not a DMA-BUF or memfd",
                fs_name(magic)
            ));
        }
        let end = mem.offset().checked_add(mem.size());
        if end.is_none_or(|e| e as u64 > id.size) {
            return Err(format!(
                "memory {i}: fd {raw} holds {} bytes but the memory spans bytes {}..{} (the object is smaller than the producer claims, or was truncated)",
                id.size,
                mem.offset(),
                end.map_or("past usize".to_string(), |e| e.to_string())
            ));
        }
        ids.push(Some(id));
    }
    Ok(ids)
}

/// What must match for a cached import to be served for this frame.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ImportGeometry {
    format: VideoFormat,
    width: u32,
    height: u32,
    /// Per plane: the kernel's key of the bytes and the row stride.
    planes: Vec<(ImportKey, i32)>,
    /// Per plane: the size of its file, which a recycled key could not fake.
    sizes: Vec<u64>,
}

pub(crate) type Cache = ImportCache<ImportGeometry, TensorDyn>;

/// Import the frame's planes as a tensor without copying, through the cache, or `None` when a
/// plane has no fd, the planes are not a layout the tensor crate imports, or the object ends
/// inside the last plane's padding (the frame is then read in place through GStreamer's map,
/// which the checks above made safe).
fn import(
    cache: &mut Cache,
    buf: &gst::BufferRef,
    info: &gst_video::VideoInfo,
    pf: PixelFormat,
    layout: &BufferLayout,
    ids: &[Option<FileIdentity>],
) -> Result<Option<TensorDyn>, String> {
    struct PlaneFd {
        fd: i32,
        offset: usize,
        key: ImportKey,
        size: u64,
    }
    let mut planes = Vec::new();
    for (i, &off) in layout.offsets.iter().enumerate() {
        let (range, skip) = buf
            .find_memory(off..off.saturating_add(1))
            .ok_or_else(|| format!("plane {i} offset {off} is outside the buffer"))?;
        let mem = buf.peek_memory(range.start);
        let (Some(fdmem), Some(Some(id))) =
            (mem.downcast_memory_ref::<gst_allocators::FdMemory>(), ids.get(range.start))
        else {
            return Ok(None);
        };
        let offset = mem.offset() + skip;
        planes.push(PlaneFd {
            fd: fdmem.fd(),
            offset,
            key: ImportKey { dev: id.dev, ino: id.ino, offset },
            size: id.size,
        });
    }
    let (w, h) = (info.width() as usize, info.height() as usize);
    let s0 = layout.strides[0] as usize;
    let table = pf.plane_table(w, h, s0);
    let one_file = planes.iter().all(|p| (p.key.dev, p.key.ino) == (planes[0].key.dev, planes[0].key.ino));
    let standard = one_file
        && planes.iter().zip(&table).zip(&layout.strides).all(|((p, t), &s)| {
            Some(p.offset) == planes[0].offset.checked_add(t.offset) && s as isize == t.stride
        });
    if !standard && pf.layout() != PixelLayout::SemiPlanar {
        return Ok(None);
    }
    // The tensor spans whole strides down to its last row; a producer may end its object on the
    // last row's pixels instead.
    let fits = |p: &PlaneFd, bytes: usize| p.offset.checked_add(bytes).is_some_and(|e| e as u64 <= p.size);
    let whole = if standard {
        fits(&planes[0], pf.image_bytes(w, h, s0))
    } else {
        let smp = pf.plane_sampling(1, 1);
        fits(&planes[0], s0 * h) && fits(&planes[1], layout.strides[1] as usize * smp.rows(h))
    };
    if !whole {
        return Ok(None);
    }
    let geometry = ImportGeometry {
        format: info.format(),
        width: info.width(),
        height: info.height(),
        planes: planes.iter().zip(&layout.strides).map(|(p, &s)| (p.key, s)).collect(),
        sizes: planes.iter().map(|p| p.size).collect(),
    };
    let make = || -> Result<TensorDyn, String> {
        let desc = |p: &PlaneFd, stride: usize| -> Result<PlaneDescriptor, String> {
            let fd = unsafe { BorrowedFd::borrow_raw(p.fd) };
            Ok(PlaneDescriptor::new(fd).map_err(|e| e.to_string())?.with_stride(stride).with_offset(p.offset))
        };
        let descs = if standard {
            vec![desc(&planes[0], s0)?]
        } else {
            vec![desc(&planes[0], s0)?, desc(&planes[1], layout.strides[1] as usize)?]
        };
        TensorDyn::import_image(descs, w, h, pf, CpuAccess::Read).map_err(|e| e.to_string())
    };
    let key = planes[0].key;
    Ok(Some(cache.get_or_try_insert(key, geometry, make)?.clone()))
}

/// Everything a tensor-making element checks of an input frame before it reads a byte — its
/// layout against the buffer ([`buffer_layout`]), every fd memory against its kernel object
/// ([`check_fd_memories`]) — then its import through `cache` where its planes are fds.
pub(crate) fn checked_import(
    buf: &gst::BufferRef,
    info: &gst_video::VideoInfo,
    pf: PixelFormat,
    cache: &mut Cache,
    types: &mut FsTypes,
) -> Result<(BufferLayout, Option<TensorDyn>), String> {
    let layout = buffer_layout(buf, info, pf)?;
    let ids = check_fd_memories(buf, types)?;
    let imported =
        import(cache, buf, info, pf, &layout, &ids).map_err(|e| format!("cannot import the frame: {e}"))?;
    Ok((layout, imported))
}

/// The frame's planes as the converter reads them: through the imported tensor's kept mapping
/// (no mmap, munmap or page fault per frame), or through GStreamer's map of the buffer.
pub(crate) enum Planes<'a> {
    /// The image's map and plane table; a second plane's own map and stride for two-fd frames.
    Kept(TensorMap<'a, u8>, Option<(TensorMap<'a, u8>, usize)>, Vec<PlaneGeometry>),
    Mapped(Box<gst_video::VideoFrameRef<&'a gst::BufferRef>>),
}

impl<'a> Planes<'a> {
    pub fn of(
        tensor: Option<&'a TensorDyn>,
        buf: &'a gst::BufferRef,
        info: &gst_video::VideoInfo,
    ) -> Result<Self, String> {
        if let Some(t) = tensor {
            let map = t.map_with::<u8>(CpuAccess::Read).map_err(|e| e.to_string())?;
            let chroma = match t.chroma() {
                Some(c) => Some((
                    c.map_with::<u8>(CpuAccess::Read).map_err(|e| e.to_string())?,
                    c.effective_row_stride(),
                )),
                None => None,
            };
            return Ok(Planes::Kept(map, chroma, t.plane_table()));
        }
        gst_video::VideoFrameRef::from_buffer_ref_readable(buf, info)
            .map(|f| Planes::Mapped(Box::new(f)))
            .map_err(|e| format!("cannot map the input frame: {e}"))
    }

    /// (bytes from the plane's first row, row stride) per plane.
    pub fn get(&self, n: usize) -> Result<[(&[u8], usize); 3], String> {
        let mut out: [(&[u8], usize); 3] = [(&[], 0); 3];
        match self {
            Planes::Kept(map, chroma, table) => {
                for (i, p) in table.iter().enumerate().take(n) {
                    out[i] = (&map[p.offset..p.offset + p.size], p.stride as usize);
                }
                if let Some((c, stride)) = chroma {
                    out[1] = (c, *stride);
                }
            }
            Planes::Mapped(frame) => {
                for (i, plane) in out.iter_mut().enumerate().take(n) {
                    let data = frame.plane_data(i as u32).map_err(|e| format!("input plane {i}: {e}"))?;
                    *plane = (data, frame.plane_stride()[i] as usize);
                }
            }
        }
        Ok(out)
    }
}
