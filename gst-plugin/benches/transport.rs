//! A 640×640×3 float32 tensor (4.9 MB) leaving the pipeline, per path, in one process on
//! loopback: frames per second with 4 frames in flight, and the added latency (push into the
//! producer pipeline → pulled from the consumer's appsink) with one in flight. Each of our paths
//! is printed beside the stock GStreamer chain that moves the same bytes without our elements.
//! Run with `cargo bench -p gstedgefirst --bench transport`.

use gst::prelude::*;
use gst_allocators::prelude::*;
use gstedgefirst::{TensorInfo, TensorMeta};
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const W: usize = 640;
const H: usize = 640;
const SIZE: usize = W * H * 3 * 4;

fn port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn udp_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Eight memfd frames with a tensor meta, as the edgefirst pool hands them out.
fn frames() -> Vec<gst::Buffer> {
    let alloc = gst_allocators::DmaBufAllocator::new();
    (0..8)
        .map(|k| {
            let fd = unsafe { libc::memfd_create(c"tensor".as_ptr(), libc::MFD_CLOEXEC) };
            assert!(fd >= 0 && unsafe { libc::ftruncate(fd, SIZE as libc::off_t) } == 0);
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            let mem = unsafe { alloc.alloc_dmabuf(fd, SIZE) }.unwrap();
            let mut b = gst::Buffer::new();
            let bm = b.get_mut().unwrap();
            bm.append_memory(mem);
            bm.map_writable().unwrap().iter_mut().enumerate().for_each(|(i, x)| *x = (i * 31 + k) as u8);
            let mut info = TensorInfo { dtype: 9, ..Default::default() };
            info.set_layout(&[1, H, W, 3], &[(SIZE) as isize, (W * 12) as isize, 12, 4]).unwrap();
            TensorMeta::add(bm, &info);
            b
        })
        .collect()
}

struct Path {
    name: &'static str,
    producer: String,
    consumer: String,
    /// Consumer buffers are not frames (a raw byte stream): count bytes.
    bytes: bool,
    /// Consumer must be playing before the producer (a server socket).
    consumer_first: bool,
}

struct Result {
    fps: f64,
    latency_ms: f64,
    latency_p90_ms: f64,
    lost: usize,
}

/// Push `n` frames keeping at most `window` in flight; per frame the push and arrival instants.
fn run(path: &Path, n: usize, window: usize) -> Option<Result> {
    let caps =
        "other/tensors,format=static,num_tensors=1,types=float32,dimensions=3:640:640:1,framerate=30/1";
    let prod = gst::parse::launch(&format!(
        "appsrc name=src format=time is-live=false caps=\"{caps}\" max-buffers=2 block=true ! {}",
        path.producer
    ))
    .unwrap();
    let cons = gst::parse::launch(&format!(
        "{} ! appsink name=out sync=false enable-last-sample=false max-buffers=64",
        path.consumer
    ))
    .unwrap();
    let src = prod
        .downcast_ref::<gst::Bin>()
        .unwrap()
        .by_name("src")
        .unwrap()
        .downcast::<gst_app::AppSrc>()
        .unwrap();
    let out = cons
        .downcast_ref::<gst::Bin>()
        .unwrap()
        .by_name("out")
        .unwrap()
        .downcast::<gst_app::AppSink>()
        .unwrap();
    let arrived: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let (a, bytes_mode) = (arrived.clone(), path.bytes);
    let mut partial = 0usize;
    out.set_callbacks(
        gst_app::AppSinkCallbacks::builder()
            .new_sample(move |s| {
                let sample = s.pull_sample().map_err(|_| gst::FlowError::Eos)?;
                let now = Instant::now();
                let mut a = a.lock().unwrap();
                if bytes_mode {
                    partial += sample.buffer().unwrap().size();
                    while partial >= SIZE {
                        partial -= SIZE;
                        a.push(now);
                    }
                } else {
                    a.push(now);
                }
                Ok(gst::FlowSuccess::Ok)
            })
            .build(),
    );
    let start = |p: &gst::Element| -> bool {
        for _ in 0..100 {
            if p.set_state(gst::State::Playing).is_ok() {
                return true;
            }
            p.set_state(gst::State::Null).unwrap();
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    };
    if path.consumer_first {
        assert!(start(&cons), "{}: consumer", path.name);
        assert!(start(&prod), "{}: producer", path.name);
    } else {
        assert!(start(&prod), "{}: producer", path.name);
        assert!(start(&cons), "{}: consumer", path.name);
    }
    let fr = frames();
    // Warm-up: a few frames until the path delivers (pub/sub peers meeting, caps travelling).
    let warm = Instant::now();
    let mut pushed = Vec::with_capacity(n);
    let mut i = 0u64;
    let push = |i: u64| {
        let mut b = fr[i as usize % fr.len()].copy();
        b.get_mut().unwrap().set_pts(gst::ClockTime::from_mseconds(i));
        src.push_buffer(b).is_ok()
    };
    while arrived.lock().unwrap().is_empty() {
        if warm.elapsed() > Duration::from_secs(10) {
            prod.set_state(gst::State::Null).unwrap();
            cons.set_state(gst::State::Null).unwrap();
            return None;
        }
        push(i);
        i += 1;
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(200));
    let base = arrived.lock().unwrap().len();
    let t0 = Instant::now();
    for k in 0..n {
        // Wait for the window, or give a lost frame up after 200 ms.
        let wait = Instant::now();
        while k >= window + (arrived.lock().unwrap().len() - base)
            && wait.elapsed() < Duration::from_millis(200)
        {
            std::thread::sleep(Duration::from_micros(50));
        }
        pushed.push(Instant::now());
        push(i);
        i += 1;
    }
    let settle = Instant::now();
    while arrived.lock().unwrap().len() - base < n && settle.elapsed() < Duration::from_millis(500) {
        std::thread::sleep(Duration::from_millis(1));
    }
    let got: Vec<Instant> = arrived.lock().unwrap()[base..].to_vec();
    let elapsed = got.last().map_or(0.0, |l| l.duration_since(t0).as_secs_f64());
    prod.set_state(gst::State::Null).unwrap();
    cons.set_state(gst::State::Null).unwrap();
    // With one in flight, arrivals pair with pushes in order (a lost frame times out first).
    let mut lat: Vec<f64> =
        got.iter().zip(&pushed).map(|(g, p)| g.duration_since(*p).as_secs_f64() * 1e3).collect();
    lat.sort_by(f64::total_cmp);
    let pick = |q: f64| {
        lat.get(((lat.len() as f64 * q) as usize).min(lat.len().saturating_sub(1)))
            .copied()
            .unwrap_or(f64::NAN)
    };
    Some(Result {
        fps: got.len() as f64 / elapsed,
        latency_ms: pick(0.5),
        latency_p90_ms: pick(0.9),
        lost: n - got.len().min(n),
    })
}

fn main() {
    gst::init().unwrap();
    gstedgefirst::plugin_register_static().unwrap();
    let sock = std::env::temp_dir().join(format!("edgefirst-bench-{}.sock", std::process::id()));
    let (tcp1, tcp2, udp1, udp2, z) = (port(), port(), udp_port(), udp_port(), port());
    let rtp_caps = "caps=\"application/x-rtp,media=application,clock-rate=90000,encoding-name=X-GST\" buffer-size=16777216";
    let paths = vec![
        Path {
            name: "unix socket, fds (edgefirsttensorsink/src)",
            producer: format!("edgefirsttensorsink socket-path={} leaky=none max-pending=8 sync=false", sock.display()),
            consumer: format!("edgefirsttensorsrc socket-path={} reconnect=true", sock.display()),
            bytes: false,
            consumer_first: false,
        },
        Path {
            name: "tcp: edgefirsttensorpay ! tcpclientsink | tcpserversrc ! edgefirsttensordepay",
            producer: format!("edgefirsttensorpay ! tcpclientsink host=127.0.0.1 port={tcp1} sync=false"),
            consumer: format!("tcpserversrc host=127.0.0.1 port={tcp1} ! edgefirsttensordepay"),
            bytes: false,
            consumer_first: true,
        },
        Path {
            name: "stock tcp, raw bytes: tcpclientsink | tcpserversrc",
            producer: format!("tcpclientsink host=127.0.0.1 port={tcp2} sync=false"),
            consumer: format!("tcpserversrc host=127.0.0.1 port={tcp2}"),
            bytes: true,
            consumer_first: true,
        },
        Path {
            name: "rtp/udp: edgefirsttensorpay ! rtpgstpay ! udpsink | udpsrc ! rtpgstdepay ! edgefirsttensordepay",
            producer: format!("edgefirsttensorpay ! rtpgstpay mtu=65000 ! udpsink host=127.0.0.1 port={udp1} sync=false"),
            consumer: format!("udpsrc address=127.0.0.1 port={udp1} {rtp_caps} ! rtpgstdepay ! edgefirsttensordepay"),
            bytes: false,
            consumer_first: true,
        },
        Path {
            name: "stock rtp/udp: rtpgstpay ! udpsink | udpsrc ! rtpgstdepay",
            producer: format!("rtpgstpay mtu=65000 ! udpsink host=127.0.0.1 port={udp2} sync=false"),
            consumer: format!("udpsrc address=127.0.0.1 port={udp2} {rtp_caps} ! rtpgstdepay"),
            bytes: false,
            consumer_first: true,
        },
        Path {
            name: "zenoh: edgefirstzenohsink | edgefirstzenohsrc (peers, tcp)",
            producer: format!(
                "edgefirstzenohsink key-expr=bench/t connect=tcp/127.0.0.1:{z} multicast-scouting=false block=true"
            ),
            consumer: format!(
                "edgefirstzenohsrc key-expr=bench/t listen=tcp/127.0.0.1:{z} multicast-scouting=false queue-size=8"
            ),
            bytes: false,
            consumer_first: true,
        },
    ];
    let only = std::env::var("BENCH_PATHS").ok();
    println!("640x640x3 float32 ({SIZE} bytes) per frame, loopback, one process");
    println!("| path | frames/s (4 in flight) | latency median (1 in flight) | p90 | lost |");
    println!("|---|---:|---:|---:|---:|");
    for p in &paths {
        if only.as_ref().is_some_and(|o| !p.name.contains(o.as_str())) {
            continue;
        }
        #[cfg(not(feature = "zenoh"))]
        if p.name.starts_with("zenoh") {
            continue;
        }
        let (Some(t), Some(l)) = (run(p, 200, 4), run(p, 60, 1)) else {
            println!("| {} | no frames | | | |", p.name);
            continue;
        };
        println!(
            "| {} | {:.0} | {:.2} ms | {:.2} ms | {} |",
            p.name,
            t.fps,
            l.latency_ms,
            l.latency_p90_ms,
            t.lost + l.lost
        );
    }
    let _ = std::fs::remove_file(&sock);
}
