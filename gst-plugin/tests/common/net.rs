//! What the network tests share: a producer whose every buffer is recorded by PTS, a consumer
//! ending in an appsink, the comparison of the two, and free loopback ports.

use gst::prelude::*;
use gstedgefirst::transport::wire;
use gstedgefirst::TensorMeta;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What one side saw of one frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Seen {
    pub hash: u64,
    pub len: usize,
    pub info: String,
    pub caps: String,
    pub duration: Option<gst::ClockTime>,
}

pub fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

pub fn seen(buf: &gst::BufferRef, caps: &gst::CapsRef) -> Seen {
    let map = buf.map_readable().unwrap();
    let info = buf
        .meta::<TensorMeta>()
        .map(|m| {
            let mut v = Vec::new();
            wire::encode_tensor_info(m.info(), &mut v);
            v.iter().map(|b| format!("{b:02x}")).collect()
        })
        .unwrap_or_default();
    Seen { hash: fnv(&map), len: map.len(), info, caps: caps.to_string(), duration: buf.duration() }
}

pub type Records = Arc<Mutex<HashMap<u64, Seen>>>;

pub fn by_name(p: &gst::Element, name: &str) -> gst::Element {
    p.downcast_ref::<gst::Bin>().unwrap().by_name(name).unwrap()
}

/// `videotestsrc` (live, `fps`, `frames` or endless when 0) through edgefirsttensor into float32
/// 64×48 tensors, recorded at `tap`, then `sink` (a launch fragment).
pub fn producer(fps: u32, frames: i32, sink: &str) -> (gst::Element, Records) {
    let p = gst::parse::launch(&format!(
        "videotestsrc is-live=true pattern=ball num-buffers={frames} \
         ! video/x-raw,format=NV12,width=160,height=120,framerate={fps}/1 \
         ! edgefirsttensor model-width=64 model-height=48 model-dtype=float32 ! identity name=tap ! {sink}",
        frames = if frames == 0 { -1 } else { frames }
    ))
    .unwrap();
    let rec: Records = Arc::default();
    let r = rec.clone();
    let pad = by_name(&p, "tap").static_pad("src").unwrap();
    pad.add_probe(gst::PadProbeType::BUFFER, move |pad, info| {
        if let (Some(b), Some(caps)) = (info.buffer(), pad.current_caps()) {
            let mut r = r.lock().unwrap();
            if r.len() > 20_000 {
                r.clear();
            }
            r.insert(b.pts().unwrap().nseconds(), seen(b, &caps));
        }
        gst::PadProbeReturn::Ok
    });
    (p, rec)
}

/// `src` (a launch fragment) into an appsink named `out`.
pub fn consumer(src: &str) -> (gst::Element, gst_app::AppSink) {
    let p =
        gst::parse::launch(&format!("{src} ! appsink name=out sync=false enable-last-sample=false")).unwrap();
    let out = by_name(&p, "out").downcast::<gst_app::AppSink>().unwrap();
    (p, out)
}

/// Pull one sample and describe it.
pub fn pull_seen(out: &gst_app::AppSink, seconds: u64) -> Option<(u64, Seen)> {
    let s = out.try_pull_sample(gst::ClockTime::from_seconds(seconds))?;
    let b = s.buffer().unwrap();
    Some((b.pts().expect("the producer's PTS travels").nseconds(), seen(b, s.caps().unwrap())))
}

/// Every frame the consumer got is a frame the producer made, the same in bytes, meta and caps.
pub fn check_against(rec: &Records, pts: u64, got: &Seen) {
    let want = wait_for(5, || rec.lock().unwrap().get(&pts).cloned())
        .unwrap_or_else(|| panic!("the consumer has a frame at {pts} ns the producer never made"));
    assert_eq!((got.hash, got.len), (want.hash, want.len), "bytes of the frame at {pts}");
    assert!(!want.info.is_empty(), "the producer's tensor has a meta");
    assert_eq!(got.info, want.info, "tensor meta of the frame at {pts}");
    assert_eq!(got.caps, want.caps, "caps of the frame at {pts}");
    assert_eq!(got.duration, want.duration, "duration of the frame at {pts}");
}

/// Poll `f` every 10 ms for up to `seconds`.
pub fn wait_for<T>(seconds: u64, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let end = Instant::now() + Duration::from_secs(seconds);
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() >= end {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A loopback port nobody listens on now (the kernel picks it; there is a window before the
/// test binds it, as with any such helper).
pub fn free_tcp_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

pub fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The first message of `types` on the bus within `seconds`.
pub fn bus_has(p: &gst::Element, types: &[gst::MessageType], seconds: u64) -> Option<gst::Message> {
    p.bus().unwrap().timed_pop_filtered(gst::ClockTime::from_seconds(seconds), types)
}

/// Warnings posted on `p`'s bus so far, their texts.
pub fn warnings(p: &gst::Element) -> Vec<String> {
    let bus = p.bus().unwrap();
    let mut out = Vec::new();
    while let Some(m) = bus.pop_filtered(&[gst::MessageType::Warning]) {
        if let gst::MessageView::Warning(w) = m.view() {
            out.push(format!("{} {:?}", w.error(), w.debug()));
        }
    }
    out
}

/// splitmix64, so a failing case is reproducible from its index.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Message `i` of a well-formed stream: a uint8 4×8×3 tensor of `i`s with its meta, PTS `i` ms.
pub fn message(i: u64) -> Vec<u8> {
    let caps = gst::Caps::builder("other/tensors")
        .field("format", "static")
        .field("num_tensors", 1i32)
        .field("types", "uint8")
        .field("dimensions", "3:8:4:1")
        .build();
    let mut b = gst::Buffer::from_slice(vec![i as u8; 96]);
    let mut info = gstedgefirst::TensorInfo { dtype: 0, ..Default::default() };
    info.set_layout(&[4, 8, 3], &[24, 3, 1]).unwrap();
    TensorMeta::add(b.get_mut().unwrap(), &info);
    b.get_mut().unwrap().set_pts(gst::ClockTime::from_mseconds(i));
    gstedgefirst::transport::netmsg::encode(&b, &caps).unwrap()
}
