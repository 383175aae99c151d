//! What the transport tests share: one test at a time (fds are process-wide), socket paths, the
//! producer whose every buffer is recorded by PTS, the consumer ending in an appsink, and the
//! comparison of what the two saw.

use gst::prelude::*;
use gstedgefirst::transport::wire;
use gstedgefirst::{TensorInfo, TensorMeta};
use std::collections::HashMap;
use std::os::fd::BorrowedFd;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub static SERIAL: Mutex<()> = Mutex::new(());

pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where the sockets go: a folder under the cargo target dir, unless that filesystem cannot hold
/// a socket (the kernel lane mounts the tree over 9p, where bind is ENXIO and qemu logs a line); then the system's temp
/// folder, said once.
pub fn sock_dir() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("transport");
        std::fs::create_dir_all(&dir).unwrap();
        let probe = dir.join(format!("{}-probe.sock", std::process::id()));
        let _ = std::fs::remove_file(&probe);
        match UnixListener::bind(&probe) {
            Ok(_) => {
                let _ = std::fs::remove_file(&probe);
                dir
            }
            Err(e) => {
                let tmp = std::env::temp_dir().join(format!("edgefirst-transport-{}", std::process::id()));
                std::fs::create_dir_all(&tmp).unwrap();
                eprintln!(
                    "transport: cannot bind a socket under {} ({e}); using {}",
                    dir.display(),
                    tmp.display()
                );
                tmp
            }
        }
    })
}

/// A fresh socket path (short enough for sun_path's 108 bytes).
pub fn sock(name: &str) -> PathBuf {
    let p = sock_dir().join(format!("{}-{name}.sock", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

pub fn fd_identity(raw: i32) -> (u64, u64, u32) {
    let fd = unsafe { BorrowedFd::borrow_raw(raw) };
    let id = edgefirst_tensor::import::file_identity(fd).unwrap();
    (id.dev, id.ino, edgefirst_tensor::import::fs_magic(fd).unwrap())
}

pub fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

pub fn info_hex(i: &TensorInfo) -> String {
    let mut v = Vec::new();
    wire::encode_tensor_info(i, &mut v);
    v.iter().map(|b| format!("{b:02x}")).collect()
}

/// What one side saw of one frame, keyed by PTS.
#[derive(Debug, Clone, PartialEq)]
pub struct Seen {
    pub dev: u64,
    pub ino: u64,
    pub magic: u32,
    pub hash: u64,
    pub len: usize,
    pub info: String,
}

pub fn seen(buf: &gst::BufferRef) -> Seen {
    assert_eq!(buf.n_memory(), 1);
    let mem = buf.peek_memory(0);
    let fdmem = mem.downcast_memory_ref::<gst_allocators::FdMemory>().expect("fd memory");
    let (dev, ino, magic) = fd_identity(fdmem.fd());
    let map = buf.map_readable().unwrap();
    let info = buf.meta::<TensorMeta>().map(|m| info_hex(m.info())).unwrap_or_default();
    Seen { dev, ino, magic, hash: fnv(&map), len: map.len(), info }
}

pub type Records = Arc<Mutex<HashMap<u64, Seen>>>;

/// `videotestsrc ! edgefirsttensor ! edgefirsttensorsink`, live and fast, recording what the
/// sink is given.
pub fn producer(path: &Path, extra: &str) -> (gst::Element, Records, gst::Caps) {
    let p = gst::parse::launch(&format!(
        "videotestsrc is-live=true pattern=ball ! video/x-raw,format=NV12,width=160,height=120,framerate=1000/1 \
         ! edgefirsttensor model-width=64 model-height=48 ! edgefirsttensorsink name=sink sync=false socket-path={} {extra}",
        path.display()
    ))
    .unwrap();
    let rec: Records = Arc::default();
    let r = rec.clone();
    let sink = p.downcast_ref::<gst::Bin>().unwrap().by_name("sink").unwrap();
    sink.static_pad("sink").unwrap().add_probe(gst::PadProbeType::BUFFER, move |_, info| {
        if let Some(b) = info.buffer() {
            let mut r = r.lock().unwrap();
            if r.len() > 4000 {
                r.clear();
            }
            r.insert(b.pts().unwrap().nseconds(), seen(b));
        }
        gst::PadProbeReturn::Ok
    });
    p.set_state(gst::State::Playing).unwrap();
    let caps = wait_for(10, || sink.static_pad("sink").unwrap().current_caps()).expect("producer negotiated");
    (p, rec, caps)
}

pub fn consumer(path: &Path, extra: &str) -> (gst::Element, gst_app::AppSink) {
    let p = gst::parse::launch(&format!(
        "edgefirsttensorsrc name=src socket-path={} {extra} ! appsink name=out sync=false enable-last-sample=false",
        path.display()
    ))
    .unwrap();
    let out =
        p.downcast_ref::<gst::Bin>().unwrap().by_name("out").unwrap().downcast::<gst_app::AppSink>().unwrap();
    p.set_state(gst::State::Playing).unwrap();
    (p, out)
}

pub fn by_name(p: &gst::Element, name: &str) -> gst::Element {
    p.downcast_ref::<gst::Bin>().unwrap().by_name(name).unwrap()
}

/// Poll `f` every 10 ms for up to `seconds`.
pub fn wait_for<T>(seconds: u64, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let end = Instant::now() + Duration::from_secs(seconds);
    while Instant::now() < end {
        if let Some(v) = f() {
            return Some(v);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

pub fn pull(out: &gst_app::AppSink) -> gst::Sample {
    out.try_pull_sample(gst::ClockTime::from_seconds(10)).expect("a frame within 10 s")
}

pub fn dmabuf_heap() -> bool {
    std::fs::read_dir("/dev/dma_heap").is_ok_and(|mut d| d.next().is_some())
}

/// What both sides saw of the same frame must be the same: same object, bytes and meta.
pub fn check_same(consumer: &Seen, producer: &Seen) {
    assert_eq!((consumer.dev, consumer.ino), (producer.dev, producer.ino), "the same kernel object");
    assert_eq!(consumer.magic, producer.magic);
    assert_eq!((consumer.hash, consumer.len), (producer.hash, producer.len), "the same bytes");
    assert!(!producer.info.is_empty(), "the producer's buffer has a tensor meta");
    assert_eq!(consumer.info, producer.info, "the same tensor meta");
}

pub fn report_memory_kind(s: &Seen) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    if s.magic != edgefirst_tensor::import::DMA_BUF_MAGIC && dmabuf_heap() {
        panic!("a DMA heap exists but the producer's buffer is not a DMA-BUF (magic {:#x})", s.magic);
    }
    ONCE.call_once(|| report_once(s));
}

pub fn report_once(s: &Seen) {
    if s.magic == edgefirst_tensor::import::DMA_BUF_MAGIC {
        eprintln!("transport: producer buffers are DMA-BUFs; inode equality checked on DMA-BUF");
    } else if dmabuf_heap() {
        panic!("a DMA heap exists but the producer's buffer is not a DMA-BUF (magic {:#x})", s.magic);
    } else {
        eprintln!("transport: no /dev/dma_heap: producer buffers are memfds; DMA-BUF inode check skipped");
    }
}
