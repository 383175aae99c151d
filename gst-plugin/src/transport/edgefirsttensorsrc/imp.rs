use crate::meta::TensorMeta;
use crate::transport::wire::{self, BufferMsg, Frame, Receiver, CARRIED_FLAGS};
use edgefirst_tensor::{blob, TensorMemory};
use gst::glib;
use gst::glib::translate::IntoGlib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_allocators::prelude::*;
use gst_base::prelude::*;
use gst_base::subclass::base_src::CreateSuccess;
use gst_base::subclass::prelude::*;
use std::os::fd::{IntoRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "edgefirsttensorsrc",
        gst::DebugColorFlags::empty(),
        Some("EdgeFirst tensors from another process"),
    )
});

/// How often a blocked read or a reconnect re-checks for a flush or stop.
const TICK: Duration = Duration::from_millis(100);
/// A producer that does not take a release within this long is treated as gone.
const SEND_TIMEOUT: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, Default)]
struct Settings {
    path: Option<PathBuf>,
    reconnect: bool,
}

/// The write side of one connection, shared with every buffer it delivered: a buffer's release
/// goes back on the connection it came from, and not on a later one (the producer already took
/// everything back when that connection closed).
struct Link {
    stream: UnixStream,
    closed: AtomicBool,
    write: Mutex<()>,
}

impl Link {
    fn release(&self, id: u64) {
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        let w = self.write.lock().unwrap();
        if let Err(e) = wire::send(&self.stream, &wire::release(id), &[]) {
            // A release that cannot be delivered would pin the producer's buffer for as long as
            // the connection lasts. Ending the connection instead makes the producer take all of
            // them back; the src then reconnects or ends the stream.
            gst::warning!(CAT, "release of {id} not taken by the producer ({e}); closing the connection");
            drop(w);
            self.close();
        }
    }

    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }
}

/// Sends a buffer's release when dropped: held (through an `Arc`) by every memory of the buffer,
/// so it fires when the last memory that wraps the producer's fds is freed, however the buffer
/// was copied, merged or shared downstream.
struct ReleaseGuard {
    id: u64,
    link: Arc<Link>,
}

impl Drop for ReleaseGuard {
    fn drop(&mut self) {
        self.link.release(self.id);
    }
}

static GUARD_QUARK: LazyLock<glib::Quark> =
    LazyLock::new(|| glib::Quark::from_str("GstEdgeFirstTensorSrcRelease"));

unsafe extern "C" fn drop_guard(p: glib::ffi::gpointer) {
    drop(unsafe { Box::from_raw(p as *mut Arc<ReleaseGuard>) });
}

fn attach_guard(mem: &mut gst::Memory, guard: &Arc<ReleaseGuard>) {
    let boxed = Box::into_raw(Box::new(guard.clone()));
    // The memory owns the box from here; GStreamer calls drop_guard when the memory is freed.
    unsafe {
        gst::ffi::gst_mini_object_set_qdata(
            mem.as_mut_ptr() as *mut gst::ffi::GstMiniObject,
            GUARD_QUARK.into_glib(),
            boxed as glib::ffi::gpointer,
            Some(drop_guard),
        );
    }
}

struct Conn {
    stream: UnixStream,
    rx: Receiver,
    link: Arc<Link>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.link.close();
    }
}

#[derive(Default)]
struct State {
    conn: Option<Conn>,
    /// Once a connection ended without reconnect: EOS from then on.
    ended: bool,
}

pub struct EdgeFirstTensorSrc {
    settings: Mutex<Settings>,
    state: Mutex<State>,
    caps: Mutex<Option<gst::Caps>>,
    flushing: AtomicBool,
    received: AtomicU64,
    dropped: AtomicU64,
    dmabuf: gst_allocators::DmaBufAllocator,
    fdmem: gst_allocators::FdAllocator,
}

impl Default for EdgeFirstTensorSrc {
    fn default() -> Self {
        EdgeFirstTensorSrc {
            settings: Mutex::default(),
            state: Mutex::default(),
            caps: Mutex::default(),
            flushing: AtomicBool::new(false),
            received: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            dmabuf: gst_allocators::DmaBufAllocator::new().downcast().expect("a DmaBufAllocator"),
            fdmem: gst_allocators::FdAllocator::new().downcast().expect("an FdAllocator"),
        }
    }
}

#[glib::object_subclass]
impl ObjectSubclass for EdgeFirstTensorSrc {
    const NAME: &'static str = "GstEdgeFirstTensorSrc";
    type Type = super::EdgeFirstTensorSrc;
    type ParentType = gst_base::PushSrc;
}

impl ObjectImpl for EdgeFirstTensorSrc {
    fn constructed(&self) {
        self.parent_constructed();
        let obj = self.obj();
        // Frames arrive when the producer makes them, stamped by the producer.
        obj.set_live(true);
        obj.set_format(gst::Format::Time);
    }

    fn properties() -> &'static [glib::ParamSpec] {
        static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            vec![
                glib::ParamSpecString::builder("socket-path")
                    .nick("Socket path")
                    .blurb("Unix socket of the edgefirsttensorsink to connect to")
                    .build(),
                glib::ParamSpecBoolean::builder("reconnect")
                    .nick("Reconnect")
                    .blurb("When the producer goes away (or is not there yet), keep trying to connect instead of ending the stream")
                    .default_value(false)
                    .mutable_playing()
                    .build(),
                crate::transport::counter("frames-received", "Buffers received and pushed"),
                crate::transport::counter(
                    "frames-dropped",
                    "Buffers received that could not be used (a malformed message or blob), each with a warning",
                ),
            ]
        });
        PROPS.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        let mut s = self.settings.lock().unwrap();
        match pspec.name() {
            "socket-path" => s.path = value.get::<Option<String>>().ok().flatten().map(PathBuf::from),
            "reconnect" => s.reconnect = value.get().unwrap_or(false),
            other => gst::warning!(CAT, imp = self, "no writable property {other}"),
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        let s = self.settings.lock().unwrap();
        match pspec.name() {
            "socket-path" => s.path.as_ref().map(|p| p.display().to_string()).to_value(),
            "reconnect" => s.reconnect.to_value(),
            "frames-received" => self.received.load(Ordering::Relaxed).to_value(),
            "frames-dropped" => self.dropped.load(Ordering::Relaxed).to_value(),
            other => {
                gst::warning!(CAT, imp = self, "no property {other}");
                pspec.default_value().clone()
            }
        }
    }
}

impl GstObjectImpl for EdgeFirstTensorSrc {}

impl ElementImpl for EdgeFirstTensorSrc {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static META: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            crate::transport::metadata(
                "EdgeFirst tensor source (unix socket)",
                "Source/Network/Tensor",
                "Receives buffers from an edgefirsttensorsink in another process by reference: the producer's own DMA-BUFs or memfds, with caps, timestamps and the tensor meta",
            )
        });
        Some(&*META)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(|| {
            vec![crate::transport::always_pad("src", gst::PadDirection::Src, &gst::Caps::new_any())]
        });
        TEMPLATES.as_ref()
    }
}

/// How a connection ended.
enum Lost {
    /// A clean hang-up between messages.
    HangUp,
    /// A hang-up in the middle of a message: a warning, then as a hang-up.
    Truncated(String),
    /// Bytes that are not the protocol: the stream cannot be read further.
    Broken(String),
}

enum Step {
    Push(gst::Buffer),
    Eos,
    Continue,
}

impl EdgeFirstTensorSrc {
    fn connect(&self) -> std::io::Result<Conn> {
        let path =
            self.settings.lock().unwrap().path.clone().ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "socket-path is not set")
            })?;
        let stream = UnixStream::connect(&path)?;
        stream.set_write_timeout(Some(SEND_TIMEOUT))?;
        let link = Arc::new(Link {
            stream: stream.try_clone()?,
            closed: AtomicBool::new(false),
            write: Mutex::new(()),
        });
        gst::info!(CAT, imp = self, "connected to {}", path.display());
        Ok(Conn { stream, rx: Receiver::new(), link })
    }

    fn warn_drop(&self, what: String) {
        self.dropped.fetch_add(1, Ordering::Relaxed);
        gst::element_imp_warning!(self, gst::StreamError::Decode, ["dropping a frame: {}", what]);
    }

    /// One whole message. Errors are the ones that end the stream (unusable caps).
    fn handle(&self, f: Frame, link: &Arc<Link>) -> Result<Step, gst::FlowError> {
        match f.kind {
            wire::CAPS if f.fds.is_empty() => {
                let caps = std::str::from_utf8(&f.body)
                    .ok()
                    .and_then(|s| s.parse::<gst::Caps>().ok())
                    .filter(|c| c.is_fixed());
                let Some(caps) = caps else {
                    gst::element_imp_error!(
                        self,
                        gst::StreamError::Decode,
                        [
                            "the producer sent caps that are not fixed caps: {:?}",
                            String::from_utf8_lossy(&f.body)
                        ]
                    );
                    return Err(gst::FlowError::NotNegotiated);
                };
                if self.caps.lock().unwrap().as_ref() == Some(&caps) {
                    return Ok(Step::Continue);
                }
                *self.caps.lock().unwrap() = Some(caps.clone());
                if self.obj().set_caps(&caps).is_err() {
                    gst::element_imp_error!(
                        self,
                        gst::CoreError::Negotiation,
                        ["downstream refused the producer's caps {}", caps]
                    );
                    return Err(gst::FlowError::NotNegotiated);
                }
                Ok(Step::Continue)
            }
            wire::BUFFER => {
                // The release goes back however this ends: dropped here on any error, or carried
                // by the memories of the pushed buffer.
                let id = f.body.get(..8).map(|b| u64::from_le_bytes(b.try_into().expect("8")));
                let guard = id.map(|id| Arc::new(ReleaseGuard { id, link: link.clone() }));
                let msg = match BufferMsg::decode(&f.body, f.fds.len()) {
                    Ok(m) => m,
                    Err(e) => {
                        self.warn_drop(format!("malformed BUFFER message: {e}"));
                        return Ok(Step::Continue);
                    }
                };
                if self.caps.lock().unwrap().is_none() {
                    self.warn_drop("a buffer before any caps".into());
                    return Ok(Step::Continue);
                }
                match self.buffer(msg, f.fds, guard.expect("decoded, so it had an id")) {
                    Ok(b) => {
                        self.received.fetch_add(1, Ordering::Relaxed);
                        Ok(Step::Push(b))
                    }
                    Err(e) => {
                        self.warn_drop(e);
                        Ok(Step::Continue)
                    }
                }
            }
            wire::EOS if f.body.is_empty() && f.fds.is_empty() => Ok(Step::Eos),
            kind => {
                self.warn_drop(format!(
                    "unexpected message kind {kind} ({} bytes, {} fds)",
                    f.body.len(),
                    f.fds.len()
                ));
                Ok(Step::Continue)
            }
        }
    }

    /// A buffer over the received fds. Each fd is checked by the blob import (kind, real size,
    /// planes inside it) before it is wrapped; until it is wrapped it is an OwnedFd, so every
    /// error path closes it.
    fn buffer(
        &self,
        msg: BufferMsg,
        fds: Vec<OwnedFd>,
        guard: Arc<ReleaseGuard>,
    ) -> Result<gst::Buffer, String> {
        let mut fds = fds.into_iter();
        let mut buf = gst::Buffer::new();
        let b = buf.get_mut().expect("new buffer");
        for (i, m) in msg.memories.iter().enumerate() {
            let mine: Vec<OwnedFd> = fds.by_ref().take(m.fds as usize).collect();
            let t = blob::import_with_fds(&m.blob, &mine).map_err(|e| format!("memory {i}: {e}"))?;
            if mine.len() != 1 || t.is_multiplane() {
                return Err(format!("memory {i}: a memory is one fd, the blob has {}", mine.len()));
            }
            let (offset, size, kind) = (t.byte_offset(), t.size(), t.memory());
            drop(t);
            let end = offset.checked_add(size).ok_or_else(|| format!("memory {i}: offset overflows"))?;
            let fd = mine.into_iter().next().expect("one fd");
            let mut mem = match kind {
                TensorMemory::DmaBuf => unsafe { self.dmabuf.alloc_dmabuf(fd, end) },
                _ => unsafe {
                    self.fdmem.alloc_fd(fd.into_raw_fd(), end, gst_allocators::FdMemoryFlags::NONE)
                },
            }
            .map_err(|e| format!("memory {i}: {e}"))?;
            let m = mem.get_mut().expect("new memory");
            m.resize(offset..end);
            // Lent by the producer and shared with its other consumers: a write here would change
            // their tensor and the producer's kept padding (`allocator::padding`). Read-only, it
            // is copied for any element that maps it for writing.
            unsafe { (*m.as_mut_ptr()).mini_object.flags |= gst::ffi::GST_MEMORY_FLAG_READONLY };
            attach_guard(&mut mem, &guard);
            b.append_memory(mem);
        }
        let time = |t: u64| (t != wire::NO_TIME).then(|| gst::ClockTime::from_nseconds(t));
        b.set_pts(time(msg.pts));
        b.set_dts(time(msg.dts));
        b.set_duration(time(msg.duration));
        b.set_flags(gst::BufferFlags::from_bits_truncate(msg.flags) & CARRIED_FLAGS);
        let size = b.size();
        if let Some(info) = msg.info {
            if info.offset > size as u64 {
                return Err(format!("tensor meta offset {} is past the {size}-byte buffer", info.offset));
            }
            TensorMeta::add(b, &info);
        }
        if let Some(v) = msg.video {
            wire::add_video_meta(b, &v)?;
        }
        Ok(buf)
    }
}

impl BaseSrcImpl for EdgeFirstTensorSrc {
    fn start(&self) -> Result<(), gst::ErrorMessage> {
        self.flushing.store(false, Ordering::SeqCst);
        *self.caps.lock().unwrap() = None;
        let reconnect = self.settings.lock().unwrap().reconnect;
        let mut st = self.state.lock().unwrap();
        st.ended = false;
        match self.connect() {
            Ok(c) => st.conn = Some(c),
            // Not there yet: create() keeps trying.
            Err(e) if reconnect => gst::info!(CAT, imp = self, "no producer yet ({e}); will retry"),
            Err(e) => {
                let path = self.settings.lock().unwrap().path.clone().unwrap_or_default();
                return Err(gst::error_msg!(
                    gst::ResourceError::OpenRead,
                    ["cannot connect to {}: {}", path.display(), e]
                ));
            }
        }
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        // Closing the connection is what gives the producer its buffers back, including those
        // still alive downstream here (their releases then go nowhere).
        self.state.lock().unwrap().conn = None;
        Ok(())
    }

    fn caps(&self, filter: Option<&gst::Caps>) -> Option<gst::Caps> {
        Some(crate::transport::offered_caps(self.caps.lock().unwrap().clone(), filter))
    }

    fn unlock(&self) -> Result<(), gst::ErrorMessage> {
        self.flushing.store(true, Ordering::SeqCst);
        Ok(())
    }

    fn unlock_stop(&self) -> Result<(), gst::ErrorMessage> {
        self.flushing.store(false, Ordering::SeqCst);
        Ok(())
    }
}

impl PushSrcImpl for EdgeFirstTensorSrc {
    fn create(&self, _buffer: Option<&mut gst::BufferRef>) -> Result<CreateSuccess, gst::FlowError> {
        let mut st = self.state.lock().unwrap();
        loop {
            if self.flushing.load(Ordering::SeqCst) {
                return Err(gst::FlowError::Flushing);
            }
            let reconnect = self.settings.lock().unwrap().reconnect;
            let Some(conn) = st.conn.as_mut() else {
                if st.ended || !reconnect {
                    return Err(gst::FlowError::Eos);
                }
                match self.connect() {
                    Ok(c) => st.conn = Some(c),
                    Err(_) => std::thread::sleep(TICK),
                }
                continue;
            };
            let lost = match conn.rx.next_frame() {
                Ok(Some(frame)) => {
                    let link = conn.link.clone();
                    match self.handle(frame, &link)? {
                        Step::Push(b) => return Ok(CreateSuccess::NewBuffer(b)),
                        Step::Eos => {
                            st.ended = true;
                            return Err(gst::FlowError::Eos);
                        }
                        Step::Continue => continue,
                    }
                }
                Ok(None) => match wire::readable(&conn.stream, TICK.as_millis() as i32) {
                    Ok(false) => continue,
                    Ok(true) => match conn.rx.fill(&conn.stream) {
                        Ok(0) if conn.rx.partial() > 0 || conn.rx.queued_fds() > 0 => {
                            Lost::Truncated(format!(
                                "the producer left in the middle of a message ({} bytes, {} fds unclaimed)",
                                conn.rx.partial(),
                                conn.rx.queued_fds()
                            ))
                        }
                        Ok(0) => Lost::HangUp,
                        Ok(_) => continue,
                        Err(e) => Lost::Broken(format!("receiving: {e}")),
                    },
                    Err(e) => Lost::Broken(format!("waiting for the producer: {e}")),
                },
                Err(e) => Lost::Broken(format!("protocol error: {e}")),
            };
            // The connection is over; dropping it closes it and gives the producer its buffers.
            st.conn = None;
            match lost {
                Lost::HangUp => gst::info!(CAT, imp = self, "the producer hung up"),
                Lost::Truncated(why) => {
                    gst::element_imp_warning!(self, gst::StreamError::Decode, ["{}", why])
                }
                Lost::Broken(why) if reconnect => {
                    gst::element_imp_warning!(self, gst::StreamError::Decode, ["{}; reconnecting", why])
                }
                Lost::Broken(why) => {
                    // A stream that cannot be resynchronized: its next bytes mean nothing.
                    gst::element_imp_error!(self, gst::StreamError::Decode, ["{}", why]);
                    st.ended = true;
                    return Err(gst::FlowError::Error);
                }
            }
            if !reconnect {
                st.ended = true;
                return Err(gst::FlowError::Eos);
            }
        }
    }
}
