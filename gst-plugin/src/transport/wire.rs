//! The message framing both transport elements speak over a unix stream socket, and the fd
//! passing under it (`SCM_RIGHTS`). The tables are in `docs/transport.md`; the constants here are
//! those tables.
//!
//! Everything a peer sends is hostile input: every length and count is checked against a bound
//! before anything is allocated from it, and every fd the kernel hands us is an [`OwnedFd`] from
//! the moment it arrives, so an error path closes it rather than leaking it.

use crate::meta::{TensorInfo, MAX_DIMS, MAX_QUANT_CHANNELS};
use gst::glib::translate::{from_glib, IntoGlib};
use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

/// The bytes "EFTX" read as a little-endian u32.
pub const MAGIC: u32 = u32::from_le_bytes(*b"EFTX");
pub const VERSION: u16 = 1;
pub const HEADER_LEN: usize = 16;
/// Largest body of any message. A BUFFER is a few hundred bytes per memory and caps strings are
/// short; anything near this is a peer that is not a tensor transport.
pub const MAX_BODY: usize = 64 * 1024;
/// Most fds one message may carry (and one memory record may claim).
pub const MAX_FDS: usize = 16;
/// Most fds received ahead of the message that claims them. A stream read may return the next
/// message's fds early; more than two messages' worth is a peer flooding us with fds.
pub const MAX_QUEUED_FDS: usize = 2 * MAX_FDS;
/// Most memories one BUFFER describes (GStreamer's own limit per buffer is 16).
pub const MAX_MEMORIES: usize = 16;
/// Bytes of the TensorInfo wire form: its fields in declaration order, little-endian, unpadded.
pub const TENSOR_INFO_LEN: usize = 252;
/// Bytes of the video layout section.
pub const VIDEO_LEN: usize = 64;
/// Fixed part of a BUFFER body.
pub const BUFFER_FIXED_LEN: usize = 48;
/// `pts`/`dts`/`duration` value meaning "none".
pub const NO_TIME: u64 = u64::MAX;

/// Buffer flags that mean the same thing in the consumer's pipeline; the rest (TAG_MEMORY,
/// SYNC_AFTER, NON_DROPPABLE's pool bookkeeping) describe this process's buffer, not the frame.
pub const CARRIED_FLAGS: gst::BufferFlags = gst::BufferFlags::from_bits_truncate(
    gst::BufferFlags::LIVE.bits()
        | gst::BufferFlags::DISCONT.bits()
        | gst::BufferFlags::CORRUPTED.bits()
        | gst::BufferFlags::MARKER.bits()
        | gst::BufferFlags::HEADER.bits()
        | gst::BufferFlags::GAP.bits()
        | gst::BufferFlags::DROPPABLE.bits()
        | gst::BufferFlags::DELTA_UNIT.bits(),
);

/// Message kinds.
pub const CAPS: u16 = 1;
pub const BUFFER: u16 = 2;
pub const EOS: u16 = 3;
pub const RELEASE: u16 = 4;

/// One message off the wire, with the fds that came with it.
#[derive(Debug)]
pub struct Frame {
    pub kind: u16,
    pub body: Vec<u8>,
    pub fds: Vec<OwnedFd>,
}

/// Header and body of one message, ready to send with `fds` fds.
pub fn encode(kind: u16, body: &[u8], fds: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + body.len());
    out.extend_from_slice(&MAGIC.to_le_bytes());
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&(fds as u32).to_le_bytes());
    out.extend_from_slice(body);
    out
}

pub fn release(id: u64) -> Vec<u8> {
    encode(RELEASE, &id.to_le_bytes(), 0)
}

/// The GstVideoMeta of a frame: where its planes are, since a pool's rows may be padded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VideoLayout {
    /// GstVideoFormat value.
    pub format: i32,
    pub width: u32,
    pub height: u32,
    pub n_planes: u32,
    pub offsets: [u64; 4],
    pub strides: [i32; 4],
}

/// One GstMemory: a tensor blob over its fd, and how many of the message's fds it takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryRecord {
    pub fds: u32,
    pub blob: Vec<u8>,
}

/// The body of a BUFFER message.
#[derive(Debug, Clone, PartialEq)]
pub struct BufferMsg {
    pub id: u64,
    pub pts: u64,
    pub dts: u64,
    pub duration: u64,
    pub flags: u32,
    pub info: Option<TensorInfo>,
    pub video: Option<VideoLayout>,
    pub memories: Vec<MemoryRecord>,
}

/// Little-endian reads that fail instead of panicking: the cursor of every decoder here.
pub(crate) struct Cursor<'a> {
    pub b: &'a [u8],
    pub at: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.b.len()).ok_or_else(|| {
            format!("{what}: {n} bytes at {} run past the {}-byte body", self.at, self.b.len())
        })?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn arr<const N: usize>(&mut self, what: &str) -> Result<[u8; N], String> {
        Ok(self.take(N, what)?.try_into().expect("N bytes"))
    }
    pub(crate) fn u16(&mut self, what: &str) -> Result<u16, String> {
        self.arr(what).map(u16::from_le_bytes)
    }
    pub(crate) fn u32(&mut self, what: &str) -> Result<u32, String> {
        self.arr(what).map(u32::from_le_bytes)
    }
    pub(crate) fn i32(&mut self, what: &str) -> Result<i32, String> {
        self.arr(what).map(i32::from_le_bytes)
    }
    pub(crate) fn u64(&mut self, what: &str) -> Result<u64, String> {
        self.arr(what).map(u64::from_le_bytes)
    }
    pub(crate) fn i64(&mut self, what: &str) -> Result<i64, String> {
        self.arr(what).map(i64::from_le_bytes)
    }
    pub(crate) fn f32(&mut self, what: &str) -> Result<f32, String> {
        self.arr(what).map(f32::from_le_bytes)
    }
    pub(crate) fn f64(&mut self, what: &str) -> Result<f64, String> {
        self.arr(what).map(f64::from_le_bytes)
    }
}

/// TensorInfo's fields in declaration order, little-endian, without the C struct's padding (a
/// padding byte is not a value and must not travel).
pub fn encode_tensor_info(i: &TensorInfo, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&i.dtype.to_le_bytes());
    out.extend_from_slice(&i.rank.to_le_bytes());
    i.shape.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
    i.strides.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
    out.extend_from_slice(&i.offset.to_le_bytes());
    out.extend_from_slice(&i.quant_channels.to_le_bytes());
    i.quant_zero_points.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
    i.quant_scales.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
    for v in [i.content_x, i.content_y, i.content_width, i.content_height] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    i.content_norm.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
    out.extend_from_slice(&i.scale_x.to_le_bytes());
    out.extend_from_slice(&i.scale_y.to_le_bytes());
    for v in [i.source_x, i.source_y, i.source_width, i.source_height] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&i.buffer_id.to_le_bytes());
    debug_assert_eq!(out.len() - start, TENSOR_INFO_LEN);
}

pub(crate) fn decode_tensor_info(c: &mut Cursor<'_>) -> Result<TensorInfo, String> {
    let mut i = TensorInfo { dtype: c.u32("dtype")?, rank: c.u32("rank")?, ..Default::default() };
    for v in &mut i.shape {
        *v = c.u64("shape")?;
    }
    for v in &mut i.strides {
        *v = c.i64("strides")?;
    }
    i.offset = c.u64("offset")?;
    i.quant_channels = c.u32("quant_channels")?;
    for v in &mut i.quant_zero_points {
        *v = c.i32("quant_zero_points")?;
    }
    for v in &mut i.quant_scales {
        *v = c.f32("quant_scales")?;
    }
    [i.content_x, i.content_y, i.content_width, i.content_height] =
        [c.u32("content")?, c.u32("content")?, c.u32("content")?, c.u32("content")?];
    for v in &mut i.content_norm {
        *v = c.f32("content_norm")?;
    }
    i.scale_x = c.f64("scale_x")?;
    i.scale_y = c.f64("scale_y")?;
    [i.source_x, i.source_y, i.source_width, i.source_height] =
        [c.u32("source")?, c.u32("source")?, c.u32("source")?, c.u32("source")?];
    i.buffer_id = c.u64("buffer_id")?;
    // A meta a consumer would index with must describe something indexable.
    if i.rank as usize > MAX_DIMS {
        return Err(format!("tensor meta rank {} exceeds {MAX_DIMS}", i.rank));
    }
    if i.dtype().is_none() {
        return Err(format!("tensor meta dtype code {} is unknown", i.dtype));
    }
    if i.quant_channels as usize > MAX_QUANT_CHANNELS {
        return Err(format!("tensor meta has {} quantization channels", i.quant_channels));
    }
    Ok(i)
}

pub(crate) fn encode_video(v: &VideoLayout, b: &mut Vec<u8>) {
    for x in [v.format as u32, v.width, v.height, v.n_planes] {
        b.extend_from_slice(&x.to_le_bytes());
    }
    v.offsets.iter().for_each(|x| b.extend_from_slice(&x.to_le_bytes()));
    v.strides.iter().for_each(|x| b.extend_from_slice(&x.to_le_bytes()));
}

pub(crate) fn decode_video(c: &mut Cursor<'_>) -> Result<VideoLayout, String> {
    let mut v = VideoLayout {
        format: c.i32("video format")?,
        width: c.u32("video width")?,
        height: c.u32("video height")?,
        n_planes: c.u32("video n_planes")?,
        ..Default::default()
    };
    for o in &mut v.offsets {
        *o = c.u64("video offsets")?;
    }
    for s in &mut v.strides {
        *s = c.i32("video strides")?;
    }
    if v.n_planes == 0 || v.n_planes > 4 {
        return Err(format!("video layout with {} planes", v.n_planes));
    }
    Ok(v)
}

/// The GstVideoMeta of `b` as it travels, if it has one.
pub(crate) fn video_layout(b: &gst::BufferRef) -> Option<VideoLayout> {
    let m = b.meta::<gst_video::VideoMeta>()?;
    let mut v = VideoLayout {
        format: m.format().into_glib(),
        width: m.width(),
        height: m.height(),
        n_planes: m.n_planes().min(4),
        ..Default::default()
    };
    for (i, (&o, &s)) in m.offset().iter().zip(m.stride()).take(4).enumerate() {
        v.offsets[i] = o as u64;
        v.strides[i] = s;
    }
    Some(v)
}

/// A GstVideoMeta whose every plane lies inside the buffer: downstream elements read planes
/// where it says, so one that points outside would be a read past the end there.
pub(crate) fn add_video_meta(b: &mut gst::BufferRef, v: &VideoLayout) -> Result<(), String> {
    let format: gst_video::VideoFormat = unsafe { from_glib(v.format) };
    if matches!(
        format,
        gst_video::VideoFormat::Unknown
            | gst_video::VideoFormat::Encoded
            | gst_video::VideoFormat::__Unknown(_)
    ) {
        return Err(format!("video meta format {} is not a raw format", v.format));
    }
    let finfo = gst_video::VideoFormatInfo::from_format(format);
    if v.n_planes != finfo.n_planes() || v.width == 0 || v.height == 0 {
        return Err(format!(
            "video meta: {} planes of {}x{} for {}",
            v.n_planes,
            v.width,
            v.height,
            format.to_str()
        ));
    }
    let n = v.n_planes as usize;
    let size = b.size() as u64;
    for p in 0..n {
        let comp = finfo.plane().iter().position(|&pl| pl as usize == p).unwrap_or(0);
        let rows = u64::from(finfo.scale_height(comp as u8, v.height));
        let stride = v.strides[p];
        if stride <= 0 {
            return Err(format!("video meta plane {p} stride {stride}"));
        }
        let end = (stride as u64).checked_mul(rows).and_then(|x| x.checked_add(v.offsets[p]));
        if end.is_none_or(|e| e > size) {
            return Err(format!(
                "video meta plane {p} (offset {}, stride {stride}) runs past the {size}-byte buffer",
                v.offsets[p]
            ));
        }
    }
    let offsets: Vec<usize> = v.offsets[..n].iter().map(|&o| o as usize).collect();
    gst_video::VideoMeta::add_full(
        b,
        gst_video::VideoFrameFlags::empty(),
        format,
        v.width,
        v.height,
        &offsets,
        &v.strides[..n],
    )
    .map_err(|e| format!("video meta: {e}"))?;
    Ok(())
}

impl BufferMsg {
    /// Fds the message carries: the sum of its memories' claims.
    pub fn fd_count(&self) -> usize {
        self.memories.iter().map(|m| m.fds as usize).sum()
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(
            BUFFER_FIXED_LEN
                + TENSOR_INFO_LEN
                + VIDEO_LEN
                + self.memories.iter().map(|m| 8 + m.blob.len()).sum::<usize>(),
        );
        for v in [self.id, self.pts, self.dts, self.duration] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&self.flags.to_le_bytes());
        b.extend_from_slice(&(self.memories.len() as u16).to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes());
        let info_len = if self.info.is_some() { TENSOR_INFO_LEN } else { 0 };
        let video_len = if self.video.is_some() { VIDEO_LEN } else { 0 };
        b.extend_from_slice(&(info_len as u32).to_le_bytes());
        b.extend_from_slice(&(video_len as u32).to_le_bytes());
        if let Some(i) = &self.info {
            encode_tensor_info(i, &mut b);
        }
        if let Some(v) = &self.video {
            encode_video(v, &mut b);
        }
        for m in &self.memories {
            b.extend_from_slice(&m.fds.to_le_bytes());
            b.extend_from_slice(&(m.blob.len() as u32).to_le_bytes());
            b.extend_from_slice(&m.blob);
        }
        b
    }

    /// Parse a BUFFER body that arrived with `fds` fds. Structural checks only: the blobs are the
    /// blob parser's, the video layout is checked against the buffer it describes by the src.
    pub fn decode(body: &[u8], fds: usize) -> Result<BufferMsg, String> {
        let mut c = Cursor { b: body, at: 0 };
        let (id, pts, dts, duration) = (c.u64("id")?, c.u64("pts")?, c.u64("dts")?, c.u64("duration")?);
        let flags = c.u32("flags")?;
        let n = c.u16("n_memories")? as usize;
        if c.u16("reserved")? != 0 {
            return Err("reserved field is not zero".into());
        }
        let info_len = c.u32("meta_len")? as usize;
        let video_len = c.u32("video_len")? as usize;
        if n > MAX_MEMORIES {
            return Err(format!("{n} memories, at most {MAX_MEMORIES}"));
        }
        let info = match info_len {
            0 => None,
            TENSOR_INFO_LEN => Some(decode_tensor_info(&mut c)?),
            other => {
                return Err(format!("meta_len {other}: the tensor meta is {TENSOR_INFO_LEN} bytes or absent"))
            }
        };
        let video = match video_len {
            0 => None,
            VIDEO_LEN => Some(decode_video(&mut c)?),
            other => {
                return Err(format!("video_len {other}: the video layout is {VIDEO_LEN} bytes or absent"))
            }
        };
        let mut memories = Vec::with_capacity(n);
        let mut claimed = 0usize;
        for i in 0..n {
            let k = c.u32("memory fds")?;
            let len = c.u32("blob_len")? as usize;
            if k == 0 || k as usize > MAX_FDS {
                return Err(format!("memory {i} claims {k} fds"));
            }
            claimed += k as usize;
            memories.push(MemoryRecord { fds: k, blob: c.take(len, "blob")?.to_vec() });
        }
        if c.at != body.len() {
            return Err(format!("{} bytes after the last memory", body.len() - c.at));
        }
        if claimed != fds {
            return Err(format!("the memories claim {claimed} fds, {fds} came with the message"));
        }
        Ok(BufferMsg { id, pts, dts, duration, flags, info, video, memories })
    }
}

/// Send one whole message, the fds with its first byte. A stream socket may take part of it; the
/// rest follows without fds (the receiver already has them with the first part). An error part
/// way leaves the stream unusable, and the caller drops the peer.
pub fn send(sock: &UnixStream, bytes: &[u8], fds: &[RawFd]) -> io::Result<()> {
    if fds.len() > MAX_FDS {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{} fds in one message", fds.len())));
    }
    let raw = sock.as_raw_fd();
    // First part, with the fds.
    let mut sent = loop {
        let mut iov = libc::iovec { iov_base: bytes.as_ptr() as *mut libc::c_void, iov_len: bytes.len() };
        let payload = std::mem::size_of_val(fds);
        // u64 words: the control buffer must be aligned for cmsghdr.
        let space = unsafe { libc::CMSG_SPACE(payload as u32) } as usize;
        let mut control = vec![0u64; space.div_ceil(8)];
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        if !fds.is_empty() {
            msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
            msg.msg_controllen = space as _;
            // The buffer holds exactly one cmsghdr plus `payload` bytes (CMSG_SPACE).
            unsafe {
                let c = libc::CMSG_FIRSTHDR(&msg);
                (*c).cmsg_level = libc::SOL_SOCKET;
                (*c).cmsg_type = libc::SCM_RIGHTS;
                (*c).cmsg_len = libc::CMSG_LEN(payload as u32) as _;
                std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(c) as *mut RawFd, fds.len());
            }
        }
        let n = unsafe { libc::sendmsg(raw, &msg, libc::MSG_NOSIGNAL) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        break n as usize;
    };
    while sent < bytes.len() {
        let rest = &bytes[sent..];
        let n =
            unsafe { libc::send(raw, rest.as_ptr() as *const libc::c_void, rest.len(), libc::MSG_NOSIGNAL) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        sent += n as usize;
    }
    Ok(())
}

/// Wait up to `ms` for `sock` to be readable (or hung up); true when it is.
pub fn readable(sock: &impl AsRawFd, ms: i32) -> io::Result<bool> {
    let mut p = libc::pollfd { fd: sock.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    let n = unsafe { libc::poll(&mut p, 1, ms) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted { Ok(false) } else { Err(e) };
    }
    Ok(n > 0)
}

/// Reassembles messages from a stream: bytes in a buffer bounded by one largest message, fds in a
/// bounded queue in arrival order.
#[derive(Default)]
pub struct Receiver {
    buf: Vec<u8>,
    fds: VecDeque<OwnedFd>,
}

impl Receiver {
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes of an incomplete message held (a peer that leaves now truncated it).
    pub fn partial(&self) -> usize {
        self.buf.len()
    }

    /// Fds received and not yet claimed by a message.
    pub fn queued_fds(&self) -> usize {
        self.fds.len()
    }

    /// One read from `sock`: Ok(0) is the peer gone. Blocks unless the caller polled first.
    pub fn fill(&mut self, sock: &UnixStream) -> io::Result<usize> {
        let room = (HEADER_LEN + MAX_BODY).saturating_sub(self.buf.len()).max(1);
        let at = self.buf.len();
        self.buf.resize(at + room, 0);
        let mut iov =
            libc::iovec { iov_base: self.buf[at..].as_mut_ptr() as *mut libc::c_void, iov_len: room };
        // Room for one message's worth of fds: the kernel delivers one sender's fds per read, and
        // more than that is truncated (MSG_CTRUNC, the excess closed by the kernel), an error here.
        let space = unsafe { libc::CMSG_SPACE((MAX_FDS * std::mem::size_of::<RawFd>()) as u32) } as usize;
        let mut control = vec![0u64; space.div_ceil(8)];
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = space as _;
        let n = loop {
            let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                self.buf.truncate(at);
                return Err(e);
            }
            break n as usize;
        };
        self.buf.truncate(at + n);
        // Own every fd before looking at anything else, so no path below can leak one.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                    let data = libc::CMSG_DATA(c) as *const RawFd;
                    let bytes = (*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                    for i in 0..bytes / std::mem::size_of::<RawFd>() {
                        let fd = std::ptr::read_unaligned(data.add(i));
                        self.fds.push_back(OwnedFd::from_raw_fd(fd));
                    }
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        if msg.msg_flags & libc::MSG_CTRUNC != 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "more fds in one send than a message may carry",
            ));
        }
        if self.fds.len() > MAX_QUEUED_FDS {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{} fds received without messages claiming them", self.fds.len()),
            ));
        }
        Ok(n)
    }

    /// The next whole message, `None` until one is buffered. An error is a stream that cannot be
    /// resynchronized (bad magic or version, an oversized length, fds claimed that never came).
    pub fn next_frame(&mut self) -> Result<Option<Frame>, String> {
        if self.buf.len() < HEADER_LEN {
            return Ok(None);
        }
        let h = &self.buf[..HEADER_LEN];
        let magic = u32::from_le_bytes(h[0..4].try_into().expect("4"));
        let version = u16::from_le_bytes(h[4..6].try_into().expect("2"));
        let kind = u16::from_le_bytes(h[6..8].try_into().expect("2"));
        let len = u32::from_le_bytes(h[8..12].try_into().expect("4")) as usize;
        let nfds = u32::from_le_bytes(h[12..16].try_into().expect("4")) as usize;
        if magic != MAGIC {
            return Err(format!("magic {magic:#010x} is not a tensor transport message"));
        }
        if version != VERSION {
            return Err(format!("protocol version {version}; this build speaks {VERSION}"));
        }
        if len > MAX_BODY {
            return Err(format!("a {len}-byte message exceeds the {MAX_BODY}-byte limit"));
        }
        if nfds > MAX_FDS {
            return Err(format!("a message claims {nfds} fds, at most {MAX_FDS}"));
        }
        if self.buf.len() < HEADER_LEN + len {
            return Ok(None);
        }
        // Its fds came with its first byte, which has been read.
        if self.fds.len() < nfds {
            return Err(format!("a message claims {nfds} fds but {} arrived", self.fds.len()));
        }
        let body = self.buf[HEADER_LEN..HEADER_LEN + len].to_vec();
        self.buf.drain(..HEADER_LEN + len);
        let fds = self.fds.drain(..nfds).collect();
        Ok(Some(Frame { kind, body, fds }))
    }
}
