//! One buffer as a self-contained message for another machine: an inline tensor blob (the
//! tensor crate's format, so any blob reader, in any language, reads the tensor) with one
//! appended `GSTM` region carrying what GStreamer needs to rebuild the buffer: caps, timestamps,
//! the carried flags, the tensor meta and the video meta. The blob's `total_len` prefix is the
//! framing on a byte stream. Layouts are tabled in `docs/transport.md`.
//!
//! Decoding is hostile-input parsing: the blob parser validates the tensor, this module the
//! region, and the metas are checked against the bytes they describe before they are attached.

use crate::caps::{dims_string, TENSORS_MEDIA_TYPE};
use crate::meta::{dtype_code, TensorInfo, TensorMeta};
use crate::transport::wire::{self, Cursor, VideoLayout, CARRIED_FLAGS, NO_TIME, TENSOR_INFO_LEN, VIDEO_LEN};
use edgefirst_tensor::preprocess::Quantization;
use edgefirst_tensor::{blob, byte_strides, DType, TensorMemory};
use gst_allocators::prelude::*;
use std::borrow::Cow;
use std::os::fd::{AsFd, IntoRawFd};
use std::str::FromStr;

/// Tag of the appended region.
pub const TAG: [u8; 4] = *b"GSTM";
/// Fixed part of the region: pts, dts, duration, flags, caps_len, meta_len, video_len.
pub const FIXED_LEN: usize = 40;
/// Longest caps string carried.
pub const MAX_CAPS_LEN: usize = 16 * 1024;
/// Default bound on one message (a 1080p float32 RGB tensor is 24 MiB).
pub const DEFAULT_MAX_SIZE: u64 = 256 * 1024 * 1024;

/// The bytes of the tensor `info` describes, dense in C order: the buffer's own bytes when they
/// already are (one borrow), gathered element by element along the strides otherwise (a padded
/// row pitch in passthrough). Every stride and the offset are checked against the map.
fn dense_bytes<'a>(map: &'a [u8], info: &TensorInfo, dtype: DType) -> Result<Cow<'a, [u8]>, String> {
    let shape: Vec<usize> = info
        .shape()
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| format!("dimension {d}")))
        .collect::<Result<_, _>>()?;
    let esz = dtype.size();
    let total = shape
        .iter()
        .try_fold(esz, |a, &d| a.checked_mul(d))
        .ok_or_else(|| format!("tensor meta shape {shape:?} overflows"))?;
    let offset = usize::try_from(info.offset).map_err(|_| "tensor meta offset".to_string())?;
    if total == 0 {
        return Ok(Cow::Borrowed(&[]));
    }
    // `total` fit usize, so the dense strides do too.
    let dense = byte_strides(&shape, esz, None);
    let strides: Vec<isize> = info.strides().iter().map(|&s| s as isize).collect();
    // The furthest byte any element reaches: every stride must be positive for this bound (a
    // negative stride would walk before the offset).
    let mut last = offset;
    for (&d, &s) in shape.iter().zip(&strides) {
        if s <= 0 {
            return Err(format!("tensor meta stride {s} (strides {strides:?})"));
        }
        last = (d - 1).checked_mul(s as usize).and_then(|x| last.checked_add(x)).ok_or("stride overflow")?;
    }
    if last.checked_add(esz).is_none_or(|end| end > map.len()) {
        return Err(format!(
            "the tensor meta (shape {shape:?}, strides {strides:?}, offset {offset}) reaches past the {}-byte buffer",
            map.len()
        ));
    }
    if strides == dense {
        return Ok(Cow::Borrowed(&map[offset..offset + total]));
    }
    // Rows of the innermost contiguous run are copied whole.
    let mut inner = shape.len();
    let mut run = esz;
    while inner > 0 && strides[inner - 1] as usize == run {
        inner -= 1;
        run *= shape[inner];
    }
    let mut out = Vec::with_capacity(total);
    let mut idx = vec![0usize; inner];
    loop {
        let at = offset + idx.iter().zip(&strides).map(|(&i, &s)| i * s as usize).sum::<usize>();
        out.extend_from_slice(&map[at..at + run]);
        let mut k = inner;
        loop {
            if k == 0 {
                return Ok(Cow::Owned(out));
            }
            k -= 1;
            idx[k] += 1;
            if idx[k] < shape[k] {
                break;
            }
            idx[k] = 0;
        }
    }
}

/// Where a message's tensor bytes come from.
enum Data {
    /// `len` bytes of the buffer from `offset`: shared, not copied.
    Shared(usize, usize),
    /// Gathered from a strided layout.
    Owned(Vec<u8>),
}

/// The message for `buffer` (with `caps`) in three parts: the bytes before the tensor's, the
/// tensor's, and the bytes after (padding and the `GSTM` region). A buffer with a tensor meta
/// travels as that tensor (dense; the meta travels with dense strides and offset 0); one
/// without, as its bytes (`uint8 [size]`) with its video meta.
fn parts(
    buffer: &gst::BufferRef,
    map: &[u8],
    caps: &gst::CapsRef,
) -> Result<(Vec<u8>, Data, Vec<u8>), String> {
    let meta = buffer.meta::<TensorMeta>().map(|m| *m.info());
    let (shape, dtype, q, data, info, video) = match meta {
        Some(mut info) => {
            let dtype = info.dtype().ok_or_else(|| format!("tensor meta dtype code {}", info.dtype))?;
            let shape: Vec<usize> = info.shape().iter().map(|&d| d as usize).collect();
            let data = match dense_bytes(map, &info, dtype)? {
                Cow::Borrowed(b) => Data::Shared(b.as_ptr() as usize - map.as_ptr() as usize, b.len()),
                Cow::Owned(v) => Data::Owned(v),
            };
            // The blob's own quantization says what a non-GStreamer reader needs; per-channel
            // tables travel in the meta only (the meta does not name their axis).
            let (scale, zp) = (info.quant_scales[0], info.quant_zero_points[0]);
            let q = (info.quant_channels == 1 && scale.is_finite() && scale > 0.0)
                .then(|| Quantization::per_tensor(scale, zp));
            // `dense_bytes` checked the shape's byte count, so its dense strides fit.
            info.set_layout(&shape, &byte_strides(&shape, dtype.size(), None))?;
            info.offset = 0;
            (shape, dtype, q, data, Some(info), None)
        }
        None => {
            (vec![map.len()], DType::U8, None, Data::Shared(0, map.len()), None, wire::video_layout(buffer))
        }
    };
    let caps = caps.to_string();
    if caps.len() > MAX_CAPS_LEN {
        return Err(format!("caps of {} bytes (at most {MAX_CAPS_LEN})", caps.len()));
    }
    let time = |t: Option<gst::ClockTime>| t.map_or(NO_TIME, |t| t.nseconds());
    let mut r = Vec::with_capacity(FIXED_LEN + caps.len() + TENSOR_INFO_LEN + VIDEO_LEN);
    for v in [time(buffer.pts()), time(buffer.dts()), time(buffer.duration())] {
        r.extend_from_slice(&v.to_le_bytes());
    }
    r.extend_from_slice(&(buffer.flags() & CARRIED_FLAGS).bits().to_le_bytes());
    r.extend_from_slice(&(caps.len() as u32).to_le_bytes());
    r.extend_from_slice(&(if info.is_some() { TENSOR_INFO_LEN as u32 } else { 0 }).to_le_bytes());
    r.extend_from_slice(&(if video.is_some() { VIDEO_LEN as u32 } else { 0 }).to_le_bytes());
    r.extend_from_slice(caps.as_bytes());
    if let Some(i) = &info {
        wire::encode_tensor_info(i, &mut r);
    }
    if let Some(v) = &video {
        wire::encode_video(v, &mut r);
    }
    let len = match &data {
        Data::Shared(_, n) => *n,
        Data::Owned(v) => v.len(),
    };
    let (head, tail) =
        blob::export_dense_split(&shape, dtype, q.as_ref(), len, &[(TAG, &r)]).map_err(|e| e.to_string())?;
    Ok((head, data, tail))
}

fn readable(buffer: &gst::BufferRef) -> Result<gst::BufferMap<'_, gst::buffer::Readable>, String> {
    buffer.map_readable().map_err(|_| "the buffer cannot be mapped for reading".to_string())
}

/// `buffer` (with `caps`) as one contiguous message (for a transport that takes one slice).
pub fn encode(buffer: &gst::BufferRef, caps: &gst::CapsRef) -> Result<Vec<u8>, String> {
    let map = readable(buffer)?;
    let (mut head, data, tail) = parts(buffer, &map, caps)?;
    match data {
        Data::Shared(at, n) => head.extend_from_slice(&map[at..at + n]),
        Data::Owned(v) => head.extend_from_slice(&v),
    }
    head.extend_from_slice(&tail);
    Ok(head)
}

/// `buffer` (with `caps`) as one message in a buffer of three memories, the middle one the
/// input's own (shared, not copied) when its tensor is dense: a socket sink writes them with one
/// `writev`, so the tensor is never copied into a message on the way out.
pub fn encode_buffer(buffer: &gst::Buffer, caps: &gst::CapsRef) -> Result<gst::Buffer, String> {
    let (head, data, tail) = parts(buffer, &readable(buffer)?, caps)?;
    let mut out = gst::Buffer::from_mut_slice(head);
    let middle = match data {
        Data::Shared(_, 0) => None,
        Data::Shared(at, n) => Some(
            buffer
                .copy_region(gst::BufferCopyFlags::MEMORY, at..at + n)
                .map_err(|_| "the tensor's bytes cannot be shared".to_string())?,
        ),
        Data::Owned(v) => Some(gst::Buffer::from_mut_slice(v)),
    };
    if let Some(m) = middle {
        out.append(m);
    }
    if !tail.is_empty() {
        out.append(gst::Buffer::from_mut_slice(tail));
    }
    Ok(out)
}

/// What a message rebuilds.
pub struct Decoded {
    pub buffer: gst::Buffer,
    pub caps: gst::Caps,
}

struct Region {
    pts: u64,
    dts: u64,
    duration: u64,
    flags: u32,
    caps: String,
    info: Option<TensorInfo>,
    video: Option<VideoLayout>,
}

fn region(b: &[u8]) -> Result<Region, String> {
    let mut c = Cursor { b, at: 0 };
    let (pts, dts, duration) = (c.u64("pts")?, c.u64("dts")?, c.u64("duration")?);
    let flags = c.u32("flags")?;
    let caps_len = c.u32("caps_len")? as usize;
    let meta_len = c.u32("meta_len")? as usize;
    let video_len = c.u32("video_len")? as usize;
    if caps_len > MAX_CAPS_LEN {
        return Err(format!("caps_len {caps_len} (at most {MAX_CAPS_LEN})"));
    }
    let caps = std::str::from_utf8(c.take(caps_len, "caps")?).map_err(|e| format!("caps: {e}"))?.to_string();
    let info = match meta_len {
        0 => None,
        TENSOR_INFO_LEN => Some(wire::decode_tensor_info(&mut c)?),
        n => return Err(format!("meta_len {n}: the tensor meta is {TENSOR_INFO_LEN} bytes or absent")),
    };
    let video = match video_len {
        0 => None,
        VIDEO_LEN => Some(wire::decode_video(&mut c)?),
        n => return Err(format!("video_len {n}: the video layout is {VIDEO_LEN} bytes or absent")),
    };
    if c.at != b.len() {
        return Err(format!("{} bytes after the region's fields", b.len() - c.at));
    }
    Ok(Region { pts, dts, duration, flags, caps, info, video })
}

/// Caps for a blob that came without a `GSTM` region (a producer outside GStreamer): the tensor
/// as NNStreamer describes one.
fn tensor_caps(shape: &[usize], dtype: DType) -> gst::Caps {
    let dims: Vec<usize> = shape.iter().rev().copied().collect();
    gst::Caps::builder(TENSORS_MEDIA_TYPE)
        .field("format", "static")
        .field("num_tensors", 1i32)
        .field("types", dtype.name())
        .field("dimensions", dims_string(if dims.is_empty() { &[1] } else { &dims }))
        .build()
}

/// Rebuild the buffer a message carries. A plain tensor (what the pay elements send) is pushed
/// as a sub-buffer of the message, its bytes where they arrived; an image blob from another
/// producer is imported into a sealed memfd wrapped as fd memory.
pub fn decode(msg: &gst::Buffer, fdmem: &gst_allocators::FdAllocator) -> Result<Decoded, String> {
    let map = msg.map_readable().map_err(|_| "the message cannot be mapped".to_string())?;
    let regions = blob::appended_regions(&map).map_err(|e| e.to_string())?;
    let mut ours = regions.iter().filter(|(tag, _)| *tag == TAG);
    let region = match (ours.next(), ours.next()) {
        (Some((_, r)), None) => Some(region(r)?),
        (None, _) => None,
        (Some(_), Some(_)) => return Err("two GSTM regions".into()),
    };
    let (mut buf, shape, dtype) = match blob::dense_view(&map) {
        Ok(v) => {
            let range = v.data_offset..v.data_offset + v.data.len();
            let b = if range.is_empty() {
                gst::Buffer::new()
            } else {
                msg.copy_region(gst::BufferCopyFlags::MEMORY, range).map_err(|_| "sub-buffer".to_string())?
            };
            (b, v.shape, v.dtype)
        }
        Err(edgefirst_tensor::Error::InvalidOperation(_)) => imported(&map, fdmem)?,
        Err(e) => return Err(e.to_string()),
    };
    drop(map);
    let caps = match &region {
        Some(r) => {
            let caps = gst::Caps::from_str(&r.caps).map_err(|_| format!("caps {:?} do not parse", r.caps))?;
            if !caps.is_fixed() {
                return Err(format!("caps {caps} are not fixed"));
            }
            caps
        }
        None => tensor_caps(&shape, dtype),
    };
    // The meta must describe the blob's tensor exactly: dense, from offset 0.
    if let Some(info) = region.as_ref().and_then(|r| r.info.as_ref()) {
        let same_shape = info.shape().iter().map(|&d| d as usize).eq(shape.iter().copied());
        if !same_shape || info.dtype != dtype_code(dtype) || info.offset != 0 {
            return Err(format!(
                "the tensor meta (shape {:?}, dtype {}) does not describe the blob's {dtype} {shape:?}",
                info.shape(),
                info.dtype
            ));
        }
        // The blob's shape passed the blob parser's byte count, so its dense strides fit.
        let dense = byte_strides(&shape, dtype.size(), None);
        if !info.strides().iter().map(|&s| s as isize).eq(dense.iter().copied()) {
            return Err(format!("the tensor meta's strides {:?} are not dense", info.strides()));
        }
    }
    let b = buf.make_mut();
    if let Some(r) = region {
        let time = |t: u64| (t != NO_TIME).then(|| gst::ClockTime::from_nseconds(t));
        b.set_pts(time(r.pts));
        b.set_dts(time(r.dts));
        b.set_duration(time(r.duration));
        b.set_flags(gst::BufferFlags::from_bits_truncate(r.flags) & CARRIED_FLAGS);
        if let Some(info) = r.info {
            TensorMeta::add(b, &info);
        }
        if let Some(v) = r.video {
            wire::add_video_meta(b, &v)?;
        }
    }
    Ok(Decoded { buffer: buf, caps })
}

/// A blob `dense_view` does not read (an image): imported into a sealed memfd.
fn imported(
    bytes: &[u8],
    fdmem: &gst_allocators::FdAllocator,
) -> Result<(gst::Buffer, Vec<usize>, DType), String> {
    let t = blob::import_with_memory(bytes, TensorMemory::Shm).map_err(|e| e.to_string())?;
    if t.is_multiplane() || t.batch_len().is_some() {
        return Err("a network message carries one single-buffer tensor".into());
    }
    let (shape, dtype) = (t.shape().to_vec(), t.dtype());
    let (offset, size) = (t.byte_offset(), t.size());
    let mut buf = gst::Buffer::new();
    if size > 0 {
        let fd =
            t.fd().ok_or("the import has no fd")?.as_fd().try_clone_to_owned().map_err(|e| e.to_string())?;
        let end = offset.checked_add(size).ok_or("size overflows")?;
        let mut mem = unsafe { fdmem.alloc_fd(fd.into_raw_fd(), end, gst_allocators::FdMemoryFlags::NONE) }
            .map_err(|e| e.to_string())?;
        mem.get_mut().expect("new memory").resize(offset..end);
        buf.get_mut().expect("new buffer").append_memory(mem);
    }
    Ok((buf, shape, dtype))
}
