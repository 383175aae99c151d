//! `edgefirsttensorpay` / `edgefirsttensordepay` in one pipeline, over tcp (`tcpclientsink` →
//! `tcpserversrc`, and `tcpserversink` with consumers that come and go) and over rtp/udp
//! (`rtpgstpay ! udpsink` → `udpsrc ! rtpgstdepay`), all on 127.0.0.1: bytes, caps, tensor meta
//! and timestamps arrive as the producer made them; a hostile byte stream gets warnings or an
//! element error, never a crash; fds stay flat.
//!
//! The tests count fds and open sockets, so they take turns.

mod common;

use common::net::*;
use common::*;
use edgefirst_tensor::blob;
use edgefirst_tensor::{CpuAccess, DType};
use gst::prelude::*;
use gstedgefirst::transport::netmsg;
use gstedgefirst::{TensorInfo, TensorMeta};
use std::sync::Mutex;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Frames the long fd test runs (the README's test command runs the default).
fn long_frames() -> usize {
    std::env::var("EDGEFIRST_NET_FRAMES").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000)
}

#[test]
fn pay_then_depay_gives_back_the_tensor_its_caps_meta_and_times() {
    let _s = serial();
    init();
    let (p, rec) =
        producer(200, 40, "edgefirsttensorpay name=pay ! edgefirsttensordepay ! appsink name=out sync=false");
    let out = by_name(&p, "out").downcast::<gst_app::AppSink>().unwrap();
    p.set_state(gst::State::Playing).unwrap();
    let mut n = 0;
    while let Some((pts, got)) = pull_seen(&out, 10) {
        check_against(&rec, pts, &got);
        n += 1;
    }
    assert_eq!(n, 40, "every frame");
    assert!(bus_has(&p, &[gst::MessageType::Eos], 5).is_some());
    assert_eq!(by_name(&p, "pay").property::<u64>("messages-sent"), 40);
    p.set_state(gst::State::Null).unwrap();
}

#[test]
fn the_message_is_a_tensor_blob_any_blob_reader_reads() {
    let _s = serial();
    init();
    let (p, rec) = producer(200, 5, "edgefirsttensorpay ! appsink name=out sync=false");
    let out = by_name(&p, "out").downcast::<gst_app::AppSink>().unwrap();
    p.set_state(gst::State::Playing).unwrap();
    let s = out.try_pull_sample(gst::ClockTime::from_seconds(10)).unwrap();
    assert_eq!(s.caps().unwrap().structure(0).unwrap().name(), "application/x-edgefirst-tensor");
    let b = s.buffer().unwrap();
    // The tensor's bytes are the producer's own memory (shared), between the blob's head and
    // tail: a socket sink writes the three with one writev, no copy into a message.
    assert_eq!(b.n_memory(), 3);
    assert!(
        b.peek_memory(1).downcast_memory_ref::<gst_allocators::FdMemory>().is_some(),
        "the pool's fd memory"
    );
    let map = b.map_readable().unwrap();
    assert_eq!(blob::frame_len(&map).unwrap(), Some(map.len()), "the blob's own length frames it");
    // The tensor crate's reader, knowing nothing of GStreamer, reads the tensor.
    let t = blob::import(&map).unwrap();
    assert_eq!((t.shape(), t.dtype()), (&[1usize, 48, 64, 3][..], DType::F32));
    let want = rec.lock().unwrap().get(&b.pts().unwrap().nseconds()).cloned().unwrap();
    let bytes = t.map_with::<u8>(CpuAccess::Read).unwrap().to_vec();
    assert_eq!((fnv(&bytes), bytes.len()), (want.hash, want.len));
    let regions = blob::appended_regions(&map).unwrap();
    assert_eq!(regions.iter().map(|r| r.0).collect::<Vec<_>>(), vec![netmsg::TAG]);
    p.set_state(gst::State::Null).unwrap();
}

/// A tensor whose meta has padded rows (as a passthrough frame's) travels dense, and a buffer
/// without a tensor meta travels as its bytes with its video meta.
#[test]
fn padded_tensors_travel_dense_and_plain_buffers_keep_their_video_meta() {
    let _s = serial();
    init();
    let fdmem = gst_allocators::FdAllocator::new();
    // 3 rows of 5 RGB pixels at a 32-byte pitch, from offset 8.
    let (rows, cols, pitch, off) = (3usize, 5usize, 32usize, 8usize);
    let raw: Vec<u8> = (0..off + rows * pitch).map(|i| (i * 7 % 251) as u8).collect();
    let mut b = gst::Buffer::from_slice(raw.clone());
    let mut info = TensorInfo { dtype: 0, offset: off as u64, ..Default::default() };
    info.set_layout(&[rows, cols, 3], &[pitch as isize, 3, 1]).unwrap();
    TensorMeta::add(b.get_mut().unwrap(), &info);
    let caps = gst::Caps::builder("other/tensors").field("dimensions", "3:5:3:1").build();
    let msg = gst::Buffer::from_mut_slice(netmsg::encode(&b, &caps).unwrap());
    let d = netmsg::decode(&msg, &fdmem).unwrap();
    // Oracle: the rows cut out by hand.
    let mut dense = Vec::new();
    for r in 0..rows {
        dense.extend_from_slice(&raw[off + r * pitch..off + r * pitch + cols * 3]);
    }
    assert_eq!(d.buffer.map_readable().unwrap().as_slice(), &dense[..]);
    let m = *d.buffer.meta::<TensorMeta>().unwrap().info();
    assert_eq!((m.shape(), m.strides(), m.offset), (&[3u64, 5, 3][..], &[15i64, 3, 1][..], 0));
    assert_eq!(d.caps, caps);
    // The tensor is a part of the message, not a copy of it.
    let (msg_map, out_map) = (msg.map_readable().unwrap(), d.buffer.map_readable().unwrap());
    let at = (out_map.as_ptr() as usize).wrapping_sub(msg_map.as_ptr() as usize);
    assert!(at < msg_map.len(), "a sub-buffer of the message");
    assert_eq!(&msg_map[at..at + out_map.len()], out_map.as_slice());
    drop((msg_map, out_map));

    // No tensor meta: the bytes and the video meta as they are.
    let vcaps = video_caps(gst_video::VideoFormat::Nv12, 16, 8);
    let mut v = gst::Buffer::from_slice((0..16 * 8 * 2).map(|i| i as u8).collect::<Vec<_>>());
    gst_video::VideoMeta::add_full(
        v.get_mut().unwrap(),
        gst_video::VideoFrameFlags::empty(),
        gst_video::VideoFormat::Nv12,
        16,
        8,
        &[0, 16 * 8 + 64],
        &[16, 16],
    )
    .unwrap();
    let d =
        netmsg::decode(&gst::Buffer::from_mut_slice(netmsg::encode(&v, &vcaps).unwrap()), &fdmem).unwrap();
    assert_eq!(d.buffer.map_readable().unwrap().as_slice(), v.map_readable().unwrap().as_slice());
    let vm = d.buffer.meta::<gst_video::VideoMeta>().unwrap();
    assert_eq!((vm.offset(), vm.stride()), (&[0usize, 192][..], &[16i32, 16][..]));
    assert_eq!(d.caps, vcaps);

    // A meta that reaches past the buffer is refused at the producer, naming it.
    let mut bad = gst::Buffer::from_slice(vec![0u8; 40]);
    let mut info = TensorInfo { dtype: 0, ..Default::default() };
    info.set_layout(&[3, 5, 3], &[32, 3, 1]).unwrap();
    TensorMeta::add(bad.get_mut().unwrap(), &info);
    let e = netmsg::encode(&bad, &caps).unwrap_err();
    assert!(e.contains("reaches past the 40-byte buffer"), "{e}");
}

#[test]
fn tcp_carries_every_frame_from_client_sink_to_server_src() {
    let _s = serial();
    init();
    let port = free_tcp_port();
    let (cons, out) =
        consumer(&format!("tcpserversrc host=127.0.0.1 port={port} ! edgefirsttensordepay name=depay"));
    cons.set_state(gst::State::Playing).unwrap();
    let (prod, rec) =
        producer(300, 200, &format!("edgefirsttensorpay ! tcpclientsink host=127.0.0.1 port={port}"));
    // The server socket is listening once the consumer is PLAYING; retry the connect a few times.
    let mut started = false;
    for _ in 0..50 {
        if prod.set_state(gst::State::Playing).is_ok() {
            started = true;
            break;
        }
        prod.set_state(gst::State::Null).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(started, "the producer connected");
    for _ in 0..200 {
        let (pts, got) = pull_seen(&out, 10).expect("every frame: none lost on a stream socket");
        check_against(&rec, pts, &got);
    }
    assert!(bus_has(&prod, &[gst::MessageType::Eos], 5).is_some());
    // tcpclientsink closes its socket when it stops: the consumer's stream then ends.
    prod.set_state(gst::State::Null).unwrap();
    assert!(pull_seen(&out, 5).is_none(), "nothing after the producer's last frame");
    assert!(bus_has(&cons, &[gst::MessageType::Eos], 5).is_some(), "the producer's close is EOS");
    assert_eq!(by_name(&cons, "depay").property::<u64>("messages-dropped"), 0);
    cons.set_state(gst::State::Null).unwrap();
}

/// `tcpserversink` serves consumers that join and leave while the producer runs: a consumer
/// stopped mid-stream and a new one started both see only whole, correct frames (a client
/// starts at a message boundary: every message is a key unit).
#[test]
fn tcp_consumers_killed_and_restarted_mid_stream_see_only_whole_frames() {
    let _s = serial();
    init();
    let port = free_tcp_port();
    let (prod, rec) = producer(
        300,
        0,
        &format!("edgefirsttensorpay ! tcpserversink host=127.0.0.1 port={port} sync=false"),
    );
    prod.set_state(gst::State::Playing).unwrap();
    for round in 0..3 {
        let (cons, out) =
            consumer(&format!("tcpclientsrc host=127.0.0.1 port={port} ! edgefirsttensordepay name=depay"));
        let mut ok = false;
        for _ in 0..50 {
            if cons.set_state(gst::State::Playing).is_ok() {
                ok = true;
                break;
            }
            cons.set_state(gst::State::Null).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert!(ok, "round {round}: connected");
        for _ in 0..30 {
            let (pts, got) = pull_seen(&out, 10).unwrap_or_else(|| panic!("round {round}: a frame"));
            check_against(&rec, pts, &got);
        }
        assert_eq!(by_name(&cons, "depay").property::<u64>("messages-dropped"), 0);
        // Killed: no EOS, the socket just closes.
        cons.set_state(gst::State::Null).unwrap();
    }
    prod.set_state(gst::State::Null).unwrap();
}

#[test]
fn rtp_over_udp_carries_frames_through_rtpgstpay() {
    let _s = serial();
    init();
    let port = free_udp_port();
    let (cons, out) = consumer(&format!(
        "udpsrc address=127.0.0.1 port={port} buffer-size=4194304 \
         caps=\"application/x-rtp,media=application,clock-rate=90000,encoding-name=X-GST\" \
         ! rtpgstdepay ! edgefirsttensordepay name=depay"
    ));
    cons.set_state(gst::State::Playing).unwrap();
    let (prod, rec) = producer(
        100,
        100,
        &format!("edgefirsttensorpay ! rtpgstpay config-interval=1 ! udpsink host=127.0.0.1 port={port}"),
    );
    prod.set_state(gst::State::Playing).unwrap();
    let mut n = 0;
    while let Some((pts, got)) = pull_seen(&out, 3) {
        check_against(&rec, pts, &got);
        n += 1;
    }
    // UDP may lose a datagram (then rtpgstdepay drops that frame); loopback at 100 fps does not
    // lose many, and none that arrives is wrong.
    assert!(n >= 80, "{n} of 100 frames over rtp/udp");
    assert_eq!(by_name(&cons, "depay").property::<u64>("messages-dropped"), 0);
    prod.set_state(gst::State::Null).unwrap();
    cons.set_state(gst::State::Null).unwrap();
}

#[test]
fn an_rtp_consumer_killed_and_restarted_mid_stream_picks_up() {
    let _s = serial();
    init();
    let port = free_udp_port();
    let (prod, rec) = producer(
        100,
        0,
        &format!("edgefirsttensorpay ! rtpgstpay config-interval=1 ! udpsink host=127.0.0.1 port={port}"),
    );
    prod.set_state(gst::State::Playing).unwrap();
    for round in 0..3 {
        let (cons, out) = consumer(&format!(
            "udpsrc address=127.0.0.1 port={port} buffer-size=4194304 \
             caps=\"application/x-rtp,media=application,clock-rate=90000,encoding-name=X-GST\" \
             ! rtpgstdepay ! edgefirsttensordepay name=depay"
        ));
        cons.set_state(gst::State::Playing).unwrap();
        for _ in 0..10 {
            let (pts, got) = pull_seen(&out, 10).unwrap_or_else(|| panic!("round {round}: a frame"));
            check_against(&rec, pts, &got);
        }
        assert_eq!(by_name(&cons, "depay").property::<u64>("messages-dropped"), 0);
        cons.set_state(gst::State::Null).unwrap();
    }
    prod.set_state(gst::State::Null).unwrap();
}

fn messages(n: usize) -> Vec<Vec<u8>> {
    (0..n as u64).map(message).collect()
}

fn depay_pipeline() -> (gst::Element, gst_app::AppSrc, gst_app::AppSink) {
    let p = gst::parse::launch(
        "appsrc name=src format=bytes caps=application/x-edgefirst-tensor \
         ! edgefirsttensordepay name=depay ! appsink name=out sync=false enable-last-sample=false",
    )
    .unwrap();
    let src = by_name(&p, "src").downcast::<gst_app::AppSrc>().unwrap();
    let out = by_name(&p, "out").downcast::<gst_app::AppSink>().unwrap();
    p.set_state(gst::State::Playing).unwrap();
    (p, src, out)
}

/// A byte stream of well-framed messages, many of them damaged inside (bytes flipped, set to
/// 0xff or 0, total_len kept), cut into random chunks: every damaged one that does not decode
/// is dropped with one warning, every one that does is a whole tensor, the stream survives,
/// and nothing leaks.
#[test]
fn damaged_messages_in_a_chunked_stream_are_dropped_with_warnings() {
    let _s = serial();
    init();
    let cases = std::env::var("EDGEFIRST_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(400usize);
    let run = |cases: usize| {
        let (p, src, out) = depay_pipeline();
        let good = messages(cases + 1);
        let mut rng = Rng(7);
        let mut stream = Vec::new();
        for m in &good[..cases] {
            let mut m = m.clone();
            for _ in 0..1 + rng.next() % 4 {
                let at = 8 + (rng.next() as usize) % (m.len() - 8);
                m[at] = match rng.next() % 3 {
                    0 => m[at] ^ (1 << (rng.next() % 8)),
                    1 => 0xff,
                    _ => 0,
                };
            }
            stream.extend_from_slice(&m);
        }
        stream.extend_from_slice(&good[cases]);
        let mut at = 0;
        while at < stream.len() {
            let n = (1 + rng.next() as usize % 300).min(stream.len() - at);
            src.push_buffer(gst::Buffer::from_slice(stream[at..at + n].to_vec())).unwrap();
            at += n;
        }
        src.end_of_stream().unwrap();
        let mut pushed = Vec::new();
        while let Some(s) = out.try_pull_sample(gst::ClockTime::from_seconds(5)) {
            pushed.push(s.buffer().unwrap().pts());
        }
        let depay = by_name(&p, "depay");
        let dropped = depay.property::<u64>("messages-dropped") as usize;
        assert_eq!(pushed.len() + dropped, cases + 1, "each message pushed or dropped");
        assert_eq!(warnings(&p).len(), dropped, "one warning per dropped message");
        assert_eq!(
            pushed.last().copied().flatten(),
            Some(gst::ClockTime::from_mseconds(cases as u64)),
            "the good one after all that arrives"
        );
        assert!(bus_has(&p, &[gst::MessageType::Error], 0).is_none());
        p.set_state(gst::State::Null).unwrap();
        dropped
    };
    run(10);
    let before = open_fds();
    let dropped = run(cases);
    assert!(dropped > cases / 2, "the mutations mostly damage ({dropped} of {cases} dropped)");
    assert_eq!(open_fds(), before, "no fd left by dropped or pushed messages");
}

#[test]
fn streams_that_cannot_be_followed_are_errors_and_a_cut_one_a_warning() {
    let _s = serial();
    init();
    let good = messages(2);
    // A length claim past max-size, a length shorter than a header, garbage.
    let mut huge = good[0].clone();
    huge[..8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let mut short = good[0].clone();
    short[..8].copy_from_slice(&3u64.to_le_bytes());
    for (name, bytes, want) in [
        ("huge", huge, "exceeds max-size"),
        ("short", short, "shorter than"),
        (
            "garbage",
            b"GET / HTTP/1.1\r\nHost: camera.local\r\nAccept: */*\r\n\r\n".to_vec(),
            "not a tensor message stream",
        ),
    ] {
        let (p, src, out) = depay_pipeline();
        // A stream is recognized by its first message's magic; once it is followed, a wrong
        // length is what shows.
        let first = name != "garbage";
        if first {
            let _ = src.push_buffer(gst::Buffer::from_slice(good[0].clone()));
        }
        let _ = src.push_buffer(gst::Buffer::from_slice(bytes));
        if first {
            assert!(
                out.try_pull_sample(gst::ClockTime::from_seconds(5)).is_some(),
                "{name}: the good one first"
            );
        }
        let m =
            bus_has(&p, &[gst::MessageType::Error], 5).unwrap_or_else(|| panic!("{name}: an element error"));
        let gst::MessageView::Error(e) = m.view() else { unreachable!() };
        let text = format!("{} {:?}", e.error(), e.debug());
        assert!(text.contains(want), "{name}: {text}");
        p.set_state(gst::State::Null).unwrap();
    }
    // A stream cut in the middle of a message: the whole ones arrive, then a warning and EOS.
    let (p, src, out) = depay_pipeline();
    let mut s = good[0].clone();
    s.extend_from_slice(&good[1][..good[1].len() / 2]);
    src.push_buffer(gst::Buffer::from_slice(s)).unwrap();
    src.end_of_stream().unwrap();
    assert!(out.try_pull_sample(gst::ClockTime::from_seconds(5)).is_some());
    assert!(out.try_pull_sample(gst::ClockTime::from_seconds(1)).is_none());
    let w = warnings(&p);
    assert!(w.iter().any(|w| w.contains("middle of a message")), "{w:?}");
    p.set_state(gst::State::Null).unwrap();
}

/// `frames` frames from a producer ending in `sink` to a consumer starting with `src`; the fd
/// count sampled every 500 received. UDP may lose a frame: the consumer stops after a 2 s gap and
/// must have 95 % of them.
fn stream_and_count(frames: usize, sink: &str, src: &str, lossy: bool, samples: &mut Vec<usize>) {
    let (cons, out) = consumer(src);
    cons.set_state(gst::State::Playing).unwrap();
    let (prod, _rec) = producer(if lossy { 1000 } else { 2000 }, frames as i32, sink);
    while prod.set_state(gst::State::Playing).is_err() {
        prod.set_state(gst::State::Null).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let mut got = 0;
    while got < frames {
        let wait = if lossy && got > 0 { 2 } else { 10 };
        if out.try_pull_sample(gst::ClockTime::from_seconds(wait)).is_none() {
            assert!(lossy, "frame {got} of {frames}");
            break;
        }
        got += 1;
        if got % 500 == 0 {
            samples.push(open_fds());
        }
    }
    assert!(got * 100 >= frames * 95, "{got} of {frames} frames");
    prod.set_state(gst::State::Null).unwrap();
    cons.set_state(gst::State::Null).unwrap();
}

#[test]
fn ten_thousand_frames_over_tcp_and_rtp_leave_the_fd_count_flat() {
    let _s = serial();
    init();
    let tcp = |frames: usize, samples: &mut Vec<usize>| {
        let port = free_tcp_port();
        stream_and_count(
            frames,
            &format!("edgefirsttensorpay ! tcpclientsink host=127.0.0.1 port={port}"),
            &format!("tcpserversrc host=127.0.0.1 port={port} ! edgefirsttensordepay"),
            false,
            samples,
        )
    };
    let rtp = |frames: usize, samples: &mut Vec<usize>| {
        let port = free_udp_port();
        stream_and_count(
            frames,
            &format!("edgefirsttensorpay ! rtpgstpay ! udpsink host=127.0.0.1 port={port}"),
            &format!(
                "udpsrc address=127.0.0.1 port={port} buffer-size=4194304 \
                 caps=\"application/x-rtp,media=application,clock-rate=90000,encoding-name=X-GST\" \
                 ! rtpgstdepay ! edgefirsttensordepay"
            ),
            true,
            samples,
        )
    };
    for (name, run) in [("tcp", &tcp as &dyn Fn(usize, &mut Vec<usize>)), ("rtp/udp", &rtp)] {
        run(20, &mut Vec::new());
        let before = open_fds();
        let mut samples = Vec::new();
        run(long_frames(), &mut samples);
        let (lo, hi) = (*samples.iter().min().unwrap(), *samples.iter().max().unwrap());
        assert!(hi - lo <= 8, "{name}: fd count while streaming ranged {lo}..={hi}: {samples:?}");
        assert_eq!(
            open_fds(),
            before,
            "{name}: every socket and buffer closed after the frames and teardown"
        );
    }
}
