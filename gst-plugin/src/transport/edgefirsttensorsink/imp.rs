use super::Leaky;
use crate::meta::TensorMeta;
use crate::transport::wire::{self, BufferMsg, MemoryRecord, Receiver, CARRIED_FLAGS};
use edgefirst_tensor::blob::{self, TransportMode};
use edgefirst_tensor::{CpuAccess, DType, TensorDyn};
use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::prelude::*;
use gst_base::subclass::prelude::*;
use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, LazyLock, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "edgefirsttensorsink",
        gst::DebugColorFlags::empty(),
        Some("EdgeFirst tensors to other processes"),
    )
});

const DEFAULT_MAX_PENDING: u32 = 4;
const DEFAULT_MAX_CONSUMERS: u32 = 8;
/// A consumer that does not take a message within this long is dropped: the stream would
/// otherwise stall the producer's streaming thread without bound.
const SEND_TIMEOUT: Duration = Duration::from_secs(2);
/// How often waits re-check for a stop or a flush.
const TICK: Duration = Duration::from_millis(100);

#[derive(Debug, Clone)]
struct Settings {
    path: Option<PathBuf>,
    leaky: Leaky,
    max_pending: u32,
    max_consumers: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            path: None,
            leaky: Leaky::default(),
            max_pending: DEFAULT_MAX_PENDING,
            max_consumers: DEFAULT_MAX_CONSUMERS,
        }
    }
}

struct Consumer {
    key: u64,
    stream: UnixStream,
    /// Buffers sent and not yet released, by id: holding them keeps them out of the pool.
    pending: HashMap<u64, gst::Buffer>,
    caps_sent: Option<gst::Caps>,
}

#[derive(Default)]
struct Inner {
    consumers: Vec<Consumer>,
    caps: Option<gst::Caps>,
    next_key: u64,
    next_id: u64,
    sent: u64,
    dropped: u64,
    copied: u64,
}

#[derive(Default)]
struct Shared {
    inner: Mutex<Inner>,
    /// Signalled when a release or a disconnect frees a slot, and on unlock.
    cond: Condvar,
    flushing: AtomicBool,
}

impl Shared {
    /// Drop the consumer `key`: every buffer it held goes back to its pool (after the lock is
    /// released, since a pool's release may call back into GStreamer).
    fn disconnect(&self, key: u64) {
        let gone = {
            let mut inner = self.inner.lock().unwrap();
            let i = inner.consumers.iter().position(|c| c.key == key);
            i.map(|i| inner.consumers.swap_remove(i))
        };
        if let Some(c) = gone {
            let _ = c.stream.shutdown(std::net::Shutdown::Both);
            gst::debug!(CAT, "consumer {key} gone; releasing its {} buffers", c.pending.len());
            drop(c);
        }
        self.cond.notify_all();
    }
}

struct Running {
    stop: Arc<AtomicBool>,
    accept: JoinHandle<()>,
    readers: Arc<Mutex<Vec<JoinHandle<()>>>>,
    path: PathBuf,
}

#[derive(Default)]
pub struct EdgeFirstTensorSink {
    settings: Mutex<Settings>,
    shared: Arc<Shared>,
    running: Mutex<Option<Running>>,
}

#[glib::object_subclass]
impl ObjectSubclass for EdgeFirstTensorSink {
    const NAME: &'static str = "GstEdgeFirstTensorSink";
    type Type = super::EdgeFirstTensorSink;
    type ParentType = gst_base::BaseSink;
}

impl ObjectImpl for EdgeFirstTensorSink {
    fn constructed(&self) {
        self.parent_constructed();
        // A kept last sample would pin one of the producer's pool buffers for nothing.
        self.obj().set_enable_last_sample(false);
    }

    fn properties() -> &'static [glib::ParamSpec] {
        static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            vec![
                glib::ParamSpecString::builder("socket-path")
                    .nick("Socket path")
                    .blurb("Unix socket to listen on; consumers (edgefirsttensorsrc) connect to it")
                    .build(),
                glib::ParamSpecEnum::builder::<Leaky>("leaky")
                    .nick("Leaky")
                    .blurb("A consumer with max-pending unreleased buffers: wait for it (none) or drop its frames (downstream)")
                    .default_value(Leaky::default())
                    .mutable_playing()
                    .build(),
                glib::ParamSpecUInt::builder("max-pending")
                    .nick("Max pending")
                    .blurb("Buffers a consumer may hold unreleased before the leaky policy applies")
                    .minimum(1)
                    .maximum(64)
                    .default_value(DEFAULT_MAX_PENDING)
                    .mutable_playing()
                    .build(),
                glib::ParamSpecUInt::builder("max-consumers")
                    .nick("Max consumers")
                    .blurb("Consumers served at once; more connections are refused")
                    .minimum(1)
                    .maximum(64)
                    .default_value(DEFAULT_MAX_CONSUMERS)
                    .mutable_playing()
                    .build(),
                glib::ParamSpecUInt::builder("consumers").blurb("Consumers connected now").read_only().build(),
                glib::ParamSpecUInt::builder("pending")
                    .blurb("Buffers sent and not yet released, summed over consumers")
                    .read_only()
                    .build(),
                crate::transport::counter("frames-sent", "Buffers sent, summed over consumers"),
                crate::transport::counter(
                    "frames-dropped",
                    "Buffers a consumer missed because it had max-pending unreleased (leaky=downstream)",
                ),
                crate::transport::counter(
                    "frames-copied",
                    "Buffers without fd memory, copied into a memfd/DMA-BUF to be sent",
                ),
            ]
        });
        PROPS.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        let mut s = self.settings.lock().unwrap();
        match pspec.name() {
            "socket-path" => s.path = value.get::<Option<String>>().ok().flatten().map(PathBuf::from),
            "leaky" => s.leaky = value.get().unwrap_or_default(),
            "max-pending" => s.max_pending = value.get().unwrap_or(DEFAULT_MAX_PENDING),
            "max-consumers" => s.max_consumers = value.get().unwrap_or(DEFAULT_MAX_CONSUMERS),
            other => gst::warning!(CAT, imp = self, "no writable property {other}"),
        }
        drop(s);
        // A raised limit or a policy change may let a waiting render go on.
        self.shared.cond.notify_all();
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        // A copy, so the settings lock is never held while `inner` is taken (render holds `inner`
        // and reads its own snapshot of the settings).
        let s = self.settings.lock().unwrap().clone();
        let inner = || self.shared.inner.lock().unwrap();
        match pspec.name() {
            "socket-path" => s.path.as_ref().map(|p| p.display().to_string()).to_value(),
            "leaky" => s.leaky.to_value(),
            "max-pending" => s.max_pending.to_value(),
            "max-consumers" => s.max_consumers.to_value(),
            "consumers" => (inner().consumers.len() as u32).to_value(),
            "pending" => (inner().consumers.iter().map(|c| c.pending.len()).sum::<usize>() as u32).to_value(),
            "frames-sent" => inner().sent.to_value(),
            "frames-dropped" => inner().dropped.to_value(),
            "frames-copied" => inner().copied.to_value(),
            other => {
                gst::warning!(CAT, imp = self, "no property {other}");
                pspec.default_value().clone()
            }
        }
    }
}

impl GstObjectImpl for EdgeFirstTensorSink {}

impl ElementImpl for EdgeFirstTensorSink {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static META: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            crate::transport::metadata(
                "EdgeFirst tensor sink (unix socket)",
                "Sink/Network/Tensor",
                "Shares buffers with other processes by reference: fds over a unix socket (SCM_RIGHTS), with caps, timestamps and the tensor meta",
            )
        });
        Some(&*META)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(|| {
            vec![crate::transport::always_pad("sink", gst::PadDirection::Sink, &gst::Caps::new_any())]
        });
        TEMPLATES.as_ref()
    }
}

/// Bind `path`, replacing a socket file only when nobody answers on it (a producer that died
/// leaves its file behind; a live one must not be hijacked).
fn bind(path: &std::path::Path) -> io::Result<UnixListener> {
    if let Ok(md) = std::fs::symlink_metadata(path) {
        if !md.file_type().is_socket() {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, "exists and is not a socket"));
        }
        if UnixStream::connect(path).is_ok() {
            return Err(io::Error::new(io::ErrorKind::AddrInUse, "another sink is listening on it"));
        }
        std::fs::remove_file(path)?;
    }
    UnixListener::bind(path)
}

impl BaseSinkImpl for EdgeFirstTensorSink {
    fn start(&self) -> Result<(), gst::ErrorMessage> {
        let path = self
            .settings
            .lock()
            .unwrap()
            .path
            .clone()
            .ok_or_else(|| gst::error_msg!(gst::ResourceError::Settings, ["socket-path is not set"]))?;
        let listener = bind(&path).map_err(|e| {
            gst::error_msg!(gst::ResourceError::OpenWrite, ["cannot listen on {}: {}", path.display(), e])
        })?;
        listener.set_nonblocking(true).map_err(|e| {
            gst::error_msg!(gst::ResourceError::Settings, ["socket {}: {}", path.display(), e])
        })?;
        self.shared.flushing.store(false, Ordering::SeqCst);
        let stop = Arc::new(AtomicBool::new(false));
        let readers = Arc::new(Mutex::new(Vec::new()));
        let accept = {
            let (stop, readers, shared) = (stop.clone(), readers.clone(), self.shared.clone());
            let element = self.obj().downgrade();
            std::thread::Builder::new()
                .name("efsink-accept".into())
                .spawn(move || accept_loop(listener, stop, readers, shared, element))
                .map_err(|e| gst::error_msg!(gst::ResourceError::Failed, ["thread: {}", e]))?
        };
        gst::info!(CAT, imp = self, "listening on {}", path.display());
        *self.running.lock().unwrap() = Some(Running { stop, accept, readers, path });
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        let Some(r) = self.running.lock().unwrap().take() else { return Ok(()) };
        r.stop.store(true, Ordering::SeqCst);
        let _ = r.accept.join();
        // Shutting the sockets down wakes every reader with end-of-stream; each then leaves.
        let gone: Vec<Consumer> = {
            let mut inner = self.shared.inner.lock().unwrap();
            inner.caps = None;
            std::mem::take(&mut inner.consumers)
        };
        for c in &gone {
            let _ = c.stream.shutdown(std::net::Shutdown::Both);
        }
        drop(gone);
        for h in std::mem::take(&mut *r.readers.lock().unwrap()) {
            let _ = h.join();
        }
        let _ = std::fs::remove_file(&r.path);
        self.shared.cond.notify_all();
        Ok(())
    }

    fn set_caps(&self, caps: &gst::Caps) -> Result<(), gst::LoggableError> {
        // Sent to each consumer before its next buffer (render compares with what it was sent).
        self.shared.inner.lock().unwrap().caps = Some(caps.clone());
        Ok(())
    }

    fn event(&self, event: gst::Event) -> bool {
        if let gst::EventView::Eos(_) = event.view() {
            self.broadcast(&wire::encode(wire::EOS, &[], 0));
        }
        self.parent_event(event)
    }

    fn unlock(&self) -> Result<(), gst::ErrorMessage> {
        self.shared.flushing.store(true, Ordering::SeqCst);
        self.shared.cond.notify_all();
        Ok(())
    }

    fn unlock_stop(&self) -> Result<(), gst::ErrorMessage> {
        self.shared.flushing.store(false, Ordering::SeqCst);
        Ok(())
    }

    fn propose_allocation(&self, query: &mut gst::query::Allocation) -> Result<(), gst::LoggableError> {
        // Offer fd memory, so producers that take downstream's pool hand over frames that go by
        // reference rather than by a copy.
        crate::pool::propose(query);
        Ok(())
    }

    fn render(&self, buffer: &gst::Buffer) -> Result<gst::FlowSuccess, gst::FlowError> {
        if self.shared.inner.lock().unwrap().consumers.is_empty() {
            return Ok(gst::FlowSuccess::Ok);
        }
        let buffer = self.fd_buffer(buffer)?;
        let settings = self.settings.lock().unwrap().clone();
        let mut inner = self.shared.inner.lock().unwrap();
        inner.next_id += 1;
        let id = inner.next_id;
        // The tensors hold dups of the memories' fds, whose numbers the blobs name; they live
        // until every consumer has been sent the message.
        let (msg, _tensors, fds) = self.message(&buffer, id)?;
        let Some(caps) = inner.caps.clone() else {
            gst::element_imp_error!(self, gst::CoreError::Negotiation, ["buffer before caps"]);
            return Err(gst::FlowError::NotNegotiated);
        };
        let caps_msg = wire::encode(wire::CAPS, caps.to_string().as_bytes(), 0);
        let keys: Vec<u64> = inner.consumers.iter().map(|c| c.key).collect();
        let mut dead = Vec::new();
        for key in keys {
            // Wait for room (leaky=none) or skip this consumer (downstream).
            let room;
            (inner, room) = self.wait_for_room(inner, key, &settings)?;
            let Some(c) = inner.consumers.iter_mut().find(|c| c.key == key) else { continue };
            if !room {
                inner.dropped += 1;
                continue;
            }
            let mut sent = Ok(());
            if c.caps_sent.as_ref() != Some(&caps) {
                sent = wire::send(&c.stream, &caps_msg, &[]);
                c.caps_sent = Some(caps.clone());
            }
            if sent.is_ok() {
                sent = wire::send(&c.stream, &msg, &fds);
            }
            match sent {
                Ok(()) => {
                    c.pending.insert(id, buffer.clone());
                    inner.sent += 1;
                }
                Err(e) => {
                    gst::warning!(CAT, imp = self, "consumer {key}: {e}; dropping it");
                    dead.push(key);
                }
            }
        }
        drop(inner);
        for key in dead {
            self.shared.disconnect(key);
        }
        Ok(gst::FlowSuccess::Ok)
    }
}

impl EdgeFirstTensorSink {
    /// Wait until consumer `key` may be sent another buffer; false when the leaky policy says to
    /// skip it. Returns at once for a consumer that went away.
    fn wait_for_room<'a>(
        &self,
        mut inner: MutexGuard<'a, Inner>,
        key: u64,
        settings: &Settings,
    ) -> Result<(MutexGuard<'a, Inner>, bool), gst::FlowError> {
        loop {
            let Some(c) = inner.consumers.iter().find(|c| c.key == key) else { return Ok((inner, true)) };
            // The render's snapshot of the settings: taking the settings lock under `inner` would
            // invert property()'s order.
            if c.pending.len() < settings.max_pending as usize {
                return Ok((inner, true));
            }
            if settings.leaky == Leaky::Downstream {
                return Ok((inner, false));
            }
            if self.shared.flushing.load(Ordering::SeqCst) {
                return Err(gst::FlowError::Flushing);
            }
            inner = self.shared.cond.wait_timeout(inner, TICK).unwrap().0;
        }
    }

    fn broadcast(&self, msg: &[u8]) {
        let dead: Vec<u64> = {
            let inner = self.shared.inner.lock().unwrap();
            inner
                .consumers
                .iter()
                .filter(|c| wire::send(&c.stream, msg, &[]).is_err())
                .map(|c| c.key)
                .collect()
        };
        for key in dead {
            self.shared.disconnect(key);
        }
    }

    /// `buffer` itself when every memory has an fd; otherwise a copy into fd memory (counted in
    /// frames-copied), since a reference needs something to refer to.
    fn fd_buffer(&self, buffer: &gst::Buffer) -> Result<gst::Buffer, gst::FlowError> {
        let all_fd =
            buffer.iter_memories().all(|m| m.downcast_memory_ref::<gst_allocators::FdMemory>().is_some());
        if all_fd && buffer.n_memory() > 0 {
            return Ok(buffer.clone());
        }
        let fail = |what: &str| {
            gst::element_imp_error!(
                self,
                gst::ResourceError::NoSpaceLeft,
                ["copying a buffer into fd memory: {}", what]
            );
            gst::FlowError::Error
        };
        let alloc = crate::DmaBufAllocator::find().ok_or_else(|| fail("no edgefirstdmabuf allocator"))?;
        let size = buffer.size().max(1);
        let mem = alloc.alloc(size, None).map_err(|e| fail(&e.to_string()))?;
        let mut out = gst::Buffer::new();
        {
            let o = out.get_mut().expect("new buffer");
            o.append_memory(mem);
            {
                let mut map = o.map_writable().map_err(|_| fail("cannot map"))?;
                buffer
                    .copy_to_slice(0, &mut map[..buffer.size()])
                    .map_err(|_| fail("cannot read the buffer"))?;
            }
            o.set_size(buffer.size());
            buffer
                .copy_into(
                    o,
                    gst::BufferCopyFlags::FLAGS
                        | gst::BufferCopyFlags::TIMESTAMPS
                        | gst::BufferCopyFlags::META,
                    ..,
                )
                .map_err(|_| fail("cannot copy timestamps and metas"))?;
        }
        let mut inner = self.shared.inner.lock().unwrap();
        if inner.copied == 0 {
            gst::warning!(CAT, imp = self, "buffers without fd memory are copied before they are sent; give the producer an fd pool to avoid it");
        }
        inner.copied += 1;
        Ok(out)
    }

    /// The BUFFER message for `buffer`: one reference blob per memory, over a dup of its fd.
    #[allow(clippy::type_complexity)]
    fn message(
        &self,
        buffer: &gst::Buffer,
        id: u64,
    ) -> Result<(Vec<u8>, Vec<TensorDyn>, Vec<RawFd>), gst::FlowError> {
        let fail = |e: String| {
            gst::element_imp_error!(
                self,
                gst::StreamError::Failed,
                ["cannot describe buffer for sending: {}", e]
            );
            gst::FlowError::Error
        };
        let mut tensors = Vec::new();
        let mut fds = Vec::new();
        let mut memories = Vec::new();
        if buffer.n_memory() > wire::MAX_MEMORIES {
            return Err(fail(format!("{} memories, at most {}", buffer.n_memory(), wire::MAX_MEMORIES)));
        }
        for mem in buffer.iter_memories() {
            let fdmem = mem
                .downcast_memory_ref::<gst_allocators::FdMemory>()
                .ok_or_else(|| fail("memory without fd".into()))?;
            if mem.size() == 0 {
                continue;
            }
            // Borrowed for the import, which dups it; the memory owns it for the buffer's life.
            let fd = unsafe { BorrowedFd::borrow_raw(fdmem.fd()) };
            let mut t = TensorDyn::from_fd_with_access(fd, &[mem.size()], DType::U8, CpuAccess::Read, None)
                .map_err(|e| fail(e.to_string()))?;
            if mem.offset() != 0 {
                t.set_plane_offset(mem.offset()).map_err(|e| fail(e.to_string()))?;
            }
            let b = blob::export(&t, TransportMode::Reference).map_err(|e| fail(e.to_string()))?;
            fds.push(t.fd().expect("an fd import has an fd").as_raw_fd());
            memories.push(MemoryRecord { fds: 1, blob: b });
            tensors.push(t);
        }
        let time = |t: Option<gst::ClockTime>| t.map_or(wire::NO_TIME, |t| t.nseconds());
        let video = wire::video_layout(buffer);
        let msg = BufferMsg {
            id,
            pts: time(buffer.pts()),
            dts: time(buffer.dts()),
            duration: time(buffer.duration()),
            flags: (buffer.flags() & CARRIED_FLAGS).bits(),
            info: buffer.meta::<TensorMeta>().map(|m| *m.info()),
            video,
            memories,
        };
        let body = msg.encode();
        if body.len() > wire::MAX_BODY {
            return Err(fail(format!("a {}-byte message exceeds the limit", body.len())));
        }
        Ok((wire::encode(wire::BUFFER, &body, fds.len()), tensors, fds))
    }
}

fn accept_loop(
    listener: UnixListener,
    stop: Arc<AtomicBool>,
    readers: Arc<Mutex<Vec<JoinHandle<()>>>>,
    shared: Arc<Shared>,
    element: glib::WeakRef<super::EdgeFirstTensorSink>,
) {
    while !stop.load(Ordering::SeqCst) {
        let stream = match listener.accept() {
            Ok((s, _)) => s,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let _ = wire::readable(&listener, TICK.as_millis() as i32);
                continue;
            }
            Err(e) => {
                gst::warning!(CAT, "accept: {e}");
                std::thread::sleep(TICK);
                continue;
            }
        };
        let Some(el) = element.upgrade() else { return };
        let max = el.imp().settings.lock().unwrap().max_consumers as usize;
        let setup = stream
            .set_nonblocking(false)
            .and_then(|_| stream.set_write_timeout(Some(SEND_TIMEOUT)))
            .and_then(|_| stream.try_clone());
        let reader = match setup {
            Ok(r) => r,
            Err(e) => {
                gst::warning!(CAT, obj = el, "a consumer's socket: {e}");
                continue;
            }
        };
        let key = {
            let mut inner = shared.inner.lock().unwrap();
            if inner.consumers.len() >= max {
                drop(inner);
                gst::element_warning!(
                    el,
                    gst::ResourceError::Busy,
                    ["{max} consumers connected (max-consumers); refusing another"]
                );
                continue;
            }
            inner.next_key += 1;
            let key = inner.next_key;
            inner.consumers.push(Consumer { key, stream, pending: HashMap::new(), caps_sent: None });
            key
        };
        gst::info!(CAT, obj = el, "consumer {key} connected");
        let shared = shared.clone();
        let weak = element.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("efsink-consumer{key}"))
            .spawn(move || read_releases(reader, key, shared, weak));
        let mut r = readers.lock().unwrap();
        // Threads of consumers that left are done; join them so the list stays bounded.
        let (done, live): (Vec<_>, Vec<_>) =
            std::mem::take(&mut *r).into_iter().partition(|h| h.is_finished());
        done.into_iter().for_each(|h| drop(h.join()));
        *r = live;
        match spawned {
            Ok(h) => r.push(h),
            Err(e) => gst::warning!(CAT, obj = el, "consumer thread: {e}"),
        }
    }
}

/// A consumer's only message is RELEASE. Anything else, and any fd, is a peer that does not
/// speak the protocol: it is dropped (releasing what it held) with a warning.
fn read_releases(
    stream: UnixStream,
    key: u64,
    shared: Arc<Shared>,
    element: glib::WeakRef<super::EdgeFirstTensorSink>,
) {
    let mut rx = Receiver::new();
    let warn = |what: String| {
        if let Some(el) = element.upgrade() {
            gst::element_warning!(el, gst::StreamError::Decode, ["consumer {}: {}", key, what]);
        }
    };
    loop {
        loop {
            match rx.next_frame() {
                Ok(Some(f)) if f.kind == wire::RELEASE && f.fds.is_empty() && f.body.len() == 8 => {
                    let id = u64::from_le_bytes(f.body[..8].try_into().expect("8 bytes"));
                    let released = {
                        let mut inner = shared.inner.lock().unwrap();
                        inner.consumers.iter_mut().find(|c| c.key == key).and_then(|c| c.pending.remove(&id))
                    };
                    match released {
                        Some(b) => {
                            drop(b);
                            shared.cond.notify_all();
                        }
                        // A duplicate, or an id this consumer was never sent: harmless, but worth
                        // a line, since a consumer that does this may also fail to release.
                        None => gst::debug!(CAT, "consumer {key} released unknown buffer {id}"),
                    }
                }
                Ok(Some(f)) => {
                    warn(format!(
                        "unexpected message kind {} ({} bytes, {} fds)",
                        f.kind,
                        f.body.len(),
                        f.fds.len()
                    ));
                    shared.disconnect(key);
                    return;
                }
                Ok(None) => break,
                Err(e) => {
                    warn(e);
                    shared.disconnect(key);
                    return;
                }
            }
        }
        match rx.fill(&stream) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                if e.kind() != io::ErrorKind::ConnectionReset {
                    warn(e.to_string());
                }
                break;
            }
        }
    }
    shared.disconnect(key);
}
