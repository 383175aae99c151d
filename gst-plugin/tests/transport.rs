//! `edgefirsttensorsink` / `edgefirsttensorsrc` over unix sockets under the cargo target dir:
//! bytes, caps and meta arrive equal and over the same kernel object; consumers come and go and
//! the producer's buffers all come back; a hostile peer gets warnings and errors, never a crash;
//! and one consumer runs in a separate process (this binary re-run in a consumer role).
//!
//! Every test counts fds or runs pipelines that open them, and /proc/self/fd is process-wide: the
//! tests take turns.

mod common;

use common::transport::*;
use common::*;
use edgefirst_tensor::blob::{self, TransportMode};
use edgefirst_tensor::{DType, TensorDyn, TensorMemory};
use gst::prelude::*;
use gstedgefirst::transport::wire::{self, BufferMsg, MemoryRecord};
use gstedgefirst::TensorInfo;
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
fn two_consumers_get_the_producers_bytes_caps_meta_over_the_same_object() {
    let _s = serial();
    init();
    let path = sock("same");
    let (prod, rec, caps) = producer(&path, "");
    let (c1, out1) = consumer(&path, "");
    let (c2, out2) = consumer(&path, "");
    for out in [&out1, &out2] {
        for _ in 0..30 {
            let s = pull(out);
            assert_eq!(s.caps().unwrap(), &caps, "the producer's caps");
            let b = s.buffer().unwrap();
            let mine = seen(b);
            let theirs = rec
                .lock()
                .unwrap()
                .get(&b.pts().unwrap().nseconds())
                .cloned()
                .expect("a frame the producer sent");
            check_same(&mine, &theirs);
            let m = b.peek_memory(0);
            assert!(m.flags().contains(gst::MemoryFlags::READONLY), "a lent tensor is read-only");
            b.copy().make_mut().map_writable().unwrap()[0] ^= 0xff;
            assert_eq!(seen(b).hash, mine.hash, "a writer gets a copy of its own");
            let dmabuf = m.downcast_memory_ref::<gst_allocators::DmaBufMemory>().is_some();
            assert_eq!(
                dmabuf,
                mine.magic == edgefirst_tensor::import::DMA_BUF_MAGIC,
                "DMA-BUFs arrive as DMA-BUF memory"
            );
            report_memory_kind(&mine);
            assert!(b.duration().is_some(), "duration travels");
        }
    }
    let sink = by_name(&prod, "sink");
    assert_eq!(sink.property::<u32>("consumers"), 2);
    for p in [&c1, &c2, &prod] {
        p.set_state(gst::State::Null).unwrap();
    }
    assert!(!path.exists(), "the sink removes its socket when it stops");
}

/// The consumer half of `a_consumer_in_another_process_sees_the_same_frames`, run by it in a
/// child process: writes what it saw to the file `EF_TRANSPORT_OUT`.
#[test]
#[ignore = "the consumer role of a_consumer_in_another_process_sees_the_same_frames, which runs it"]
fn consumer_process() {
    init();
    let path = PathBuf::from(std::env::var("EF_TRANSPORT_SOCKET").expect("run by the parent test"));
    let out_file = std::env::var("EF_TRANSPORT_OUT").unwrap();
    let (p, out) = consumer(&path, "");
    let mut lines = Vec::new();
    for i in 0..60 {
        let s = pull(&out);
        if i == 0 {
            lines.push(format!("caps {}", s.caps().unwrap()));
        }
        let b = s.buffer().unwrap();
        let m = seen(b);
        let kind = if b.peek_memory(0).downcast_memory_ref::<gst_allocators::DmaBufMemory>().is_some() {
            "dmabuf"
        } else {
            "fd"
        };
        lines.push(format!(
            "{} {} {} {} {} {} {} {}",
            b.pts().unwrap().nseconds(),
            m.dev,
            m.ino,
            m.magic,
            m.hash,
            m.len,
            kind,
            if m.info.is_empty() { "-" } else { &m.info }
        ));
    }
    p.set_state(gst::State::Null).unwrap();
    std::fs::write(out_file, lines.join("\n")).unwrap();
}

#[test]
fn a_consumer_in_another_process_sees_the_same_frames() {
    let _s = serial();
    init();
    let path = sock("proc");
    let (prod, rec, caps) = producer(&path, "");
    let out =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("transport/{}-proc.txt", std::process::id()));
    let _ = std::fs::remove_file(&out);
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "consumer_process", "--nocapture", "--test-threads=1"])
        .env("EF_TRANSPORT_SOCKET", &path)
        .env("EF_TRANSPORT_OUT", &out)
        .spawn()
        .unwrap();
    let status = wait_for(60, || child.try_wait().unwrap()).unwrap_or_else(|| {
        let _ = child.kill();
        panic!("the consumer process did not finish within 60 s")
    });
    assert!(status.success(), "consumer process: {status}");
    let text = std::fs::read_to_string(&out).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next().unwrap(), format!("caps {caps}"), "the caps travelled");
    let rec = rec.lock().unwrap().clone();
    let mut n = 0;
    for l in lines {
        let f: Vec<&str> = l.split(' ').collect();
        let pts: u64 = f[0].parse().unwrap();
        let theirs = rec.get(&pts).expect("a frame the producer sent");
        let mine = Seen {
            dev: f[1].parse().unwrap(),
            ino: f[2].parse().unwrap(),
            magic: f[3].parse().unwrap(),
            hash: f[4].parse().unwrap(),
            len: f[5].parse().unwrap(),
            info: if f[7] == "-" { String::new() } else { f[7].to_string() },
        };
        check_same(&mine, theirs);
        let dmabuf = theirs.magic == edgefirst_tensor::import::DMA_BUF_MAGIC;
        assert_eq!(f[6], if dmabuf { "dmabuf" } else { "fd" });
        report_memory_kind(theirs);
        n += 1;
    }
    assert_eq!(n, 60);
    prod.set_state(gst::State::Null).unwrap();
}

/// Frames of the long run: 10 000 by default; the ASan pass and the emulated kernel lane run
/// fewer (`EDGEFIRST_TRANSPORT_FRAMES`).
fn long_frames() -> usize {
    std::env::var("EDGEFIRST_TRANSPORT_FRAMES").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000)
}

#[test]
fn ten_thousand_frames_leave_the_fd_count_flat() {
    let _s = serial();
    init();
    let path = sock("fds");
    let frames = long_frames();
    let run = |frames: usize, samples: &mut Vec<usize>| {
        let (prod, _rec, _) = producer(&path, "");
        let (cons, out) = consumer(&path, "");
        for i in 0..frames {
            drop(pull(&out));
            if i % 500 == 499 || (frames < 5000 && i % 100 == 99) {
                samples.push(open_fds());
            }
        }
        cons.set_state(gst::State::Null).unwrap();
        prod.set_state(gst::State::Null).unwrap();
    };
    run(20, &mut Vec::new()); // first use opens what GStreamer keeps for the process
    let before = open_fds();
    let mut samples = Vec::new();
    run(frames, &mut samples);
    let (lo, hi) = (*samples.iter().min().unwrap(), *samples.iter().max().unwrap());
    assert!(hi - lo <= 8, "fd count while streaming ranged {lo}..={hi}: {samples:?}");
    assert_eq!(open_fds(), before, "every received and sent fd closed after {frames} frames and teardown");
}

/// appsrc fed from a pool of exactly `n` fd buffers, so "every buffer came back" is checkable:
/// all `n` can be acquired again without waiting.
struct PoolProducer {
    pipeline: gst::Element,
    pool: gstedgefirst::BufferPool,
    stop: Arc<std::sync::atomic::AtomicBool>,
    pusher: Option<std::thread::JoinHandle<u64>>,
}

const POOL_N: u32 = 8;

impl PoolProducer {
    fn start(path: &Path, props: &str) -> Self {
        let caps = video_caps(gst_video::VideoFormat::Gray8, 64, 48);
        let pipeline = gst::parse::launch(&format!(
            "appsrc name=src is-live=true format=time block=true max-buffers=2 caps=\"{caps}\" \
             ! edgefirsttensorsink name=sink sync=false socket-path={} {props}",
            path.display()
        ))
        .unwrap();
        let src = by_name(&pipeline, "src").downcast::<gst_app::AppSrc>().unwrap();
        let pool = active_pool(&caps, POOL_N, POOL_N);
        pipeline.set_state(gst::State::Playing).unwrap();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (p, s) = (pool.clone(), stop.clone());
        let pusher = std::thread::spawn(move || {
            let mut i = 0u64;
            let params = gst::BufferPoolAcquireParams::with_flags(gst::BufferPoolAcquireFlags::DONTWAIT);
            while !s.load(std::sync::atomic::Ordering::SeqCst) {
                let Ok(mut b) = p.acquire_buffer(Some(&params)) else {
                    std::thread::sleep(Duration::from_millis(2));
                    continue;
                };
                {
                    let b = b.get_mut().unwrap();
                    b.map_writable().unwrap().iter_mut().for_each(|x| *x = i as u8);
                    b.set_pts(gst::ClockTime::from_mseconds(i));
                }
                if src.push_buffer(b).is_err() {
                    break;
                }
                i += 1;
                std::thread::sleep(Duration::from_millis(2));
            }
            let _ = src.end_of_stream();
            i
        });
        PoolProducer { pipeline, pool, stop, pusher: Some(pusher) }
    }

    fn sink(&self) -> gst::Element {
        by_name(&self.pipeline, "sink")
    }

    /// Stop pushing, let everything queued reach the sink, and check every pool buffer is back.
    fn finish_and_count_returned(mut self) -> usize {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        self.pusher.take().unwrap().join().unwrap();
        let bus = self.pipeline.bus().unwrap();
        bus.timed_pop_filtered(gst::ClockTime::from_seconds(10), &[gst::MessageType::Eos])
            .expect("producer EOS");
        let params = gst::BufferPoolAcquireParams::with_flags(gst::BufferPoolAcquireFlags::DONTWAIT);
        let held: Vec<_> = (0..POOL_N).map_while(|_| self.pool.acquire_buffer(Some(&params)).ok()).collect();
        let n = held.len();
        drop(held);
        self.pipeline.set_state(gst::State::Null).unwrap();
        self.pool.set_active(false).unwrap();
        n
    }
}

#[test]
fn a_consumer_killed_mid_stream_gives_every_buffer_back_and_a_new_one_picks_up() {
    let _s = serial();
    init();
    let path = sock("kill");
    let prod = PoolProducer::start(&path, "leaky=downstream max-pending=3");
    let sink = prod.sink();
    // A consumer that holds everything it gets: the sink stops at max-pending and drops for it.
    let (a, out_a) = consumer(&path, "");
    let held: Vec<gst::Sample> = (0..3).map(|_| pull(&out_a)).collect();
    assert!(
        wait_for(10, || (sink.property::<u64>("frames-dropped") > 5).then_some(())).is_some(),
        "frames dropped for the stuck consumer"
    );
    assert_eq!(sink.property::<u32>("pending"), 3);
    // Killed while its buffers are still alive in it: the disconnect alone releases them.
    a.set_state(gst::State::Null).unwrap();
    drop(a);
    assert!(
        wait_for(10, || (sink.property::<u32>("consumers") == 0 && sink.property::<u32>("pending") == 0)
            .then_some(()))
        .is_some(),
        "the sink let go of the dead consumer's buffers"
    );
    let (b, out_b) = consumer(&path, "");
    let mut last = None;
    for _ in 0..30 {
        let s = pull(&out_b);
        let buf = s.buffer().unwrap();
        let i = buf.pts().unwrap().mseconds();
        assert!(buf.map_readable().unwrap().iter().all(|&x| x == i as u8), "frame {i}'s bytes");
        assert!(last.is_none_or(|l| i > l), "frames in order");
        last = Some(i);
    }
    b.set_state(gst::State::Null).unwrap();
    drop(b);
    drop(out_b);
    assert!(wait_for(10, || (sink.property::<u32>("pending") == 0).then_some(())).is_some());
    assert_eq!(prod.finish_and_count_returned(), POOL_N as usize, "every pool buffer came back");
    // The first consumer's buffers outlive it; freeing them now sends nothing anywhere.
    drop(held);
}

#[test]
fn leaky_none_waits_for_the_slow_consumer_instead_of_dropping() {
    let _s = serial();
    init();
    let path = sock("none");
    let prod = PoolProducer::start(&path, "leaky=none max-pending=2");
    let sink = prod.sink();
    let (c, out) = consumer(&path, "");
    let held: Vec<gst::Sample> = (0..2).map(|_| pull(&out)).collect();
    std::thread::sleep(Duration::from_millis(300));
    let sent = sink.property::<u64>("frames-sent");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        sink.property::<u64>("frames-sent"),
        sent,
        "nothing sent while the consumer holds max-pending"
    );
    assert_eq!(sink.property::<u64>("frames-dropped"), 0);
    assert_eq!(sent, 2);
    drop(held);
    for _ in 0..10 {
        drop(pull(&out));
    }
    assert!(sink.property::<u64>("frames-sent") >= 12, "flow resumed once released");
    c.set_state(gst::State::Null).unwrap();
    assert_eq!(prod.finish_and_count_returned(), POOL_N as usize);
}

#[test]
fn a_producer_that_leaves_gives_eos_or_a_reconnect() {
    let _s = serial();
    init();
    let path = sock("eos");
    let (prod, _, _) = producer(&path, "");
    let (plain, plain_out) = consumer(&path, "");
    let (again, again_out) = consumer(&path, "reconnect=true");
    drop(pull(&plain_out));
    drop(pull(&again_out));
    prod.set_state(gst::State::Null).unwrap();
    // appsink posts EOS only once its queued samples are taken (wait-on-eos): drain them while
    // waiting; how many are queued depends on the machine's speed (ASan, the kernel lane).
    let bus = plain.bus().unwrap();
    let msg = wait_for(10, || {
        while plain_out.try_pull_sample(gst::ClockTime::ZERO).is_some() {}
        bus.pop_filtered(&[gst::MessageType::Eos, gst::MessageType::Error])
    });
    assert!(
        matches!(msg.as_ref().map(|m| m.view()), Some(gst::MessageView::Eos(_))),
        "EOS without reconnect: {msg:?}"
    );
    // A new producer on the same path: the reconnecting consumer goes on with its frames.
    let (prod2, rec2, _) = producer(&path, "");
    // Frames of the first producer may still be queued in the appsink; a frame of the second
    // one must follow within a bounded number.
    let from_second = (0..200).any(|_| {
        let s = pull(&again_out);
        let b = s.buffer().unwrap();
        rec2.lock().unwrap().get(&b.pts().unwrap().nseconds()).is_some_and(|r| *r == seen(b))
    });
    assert!(from_second, "the reconnecting consumer receives the new producer's frames");
    for p in [&plain, &again, &prod2] {
        p.set_state(gst::State::Null).unwrap();
    }
}

#[test]
fn a_src_with_nothing_to_connect_to_fails_to_start() {
    let _s = serial();
    init();
    let path = sock("nobody");
    let p =
        gst::parse::launch(&format!("edgefirsttensorsrc socket-path={} ! fakesink", path.display())).unwrap();
    let err = run_to_eos(&p, 5).unwrap_err();
    assert!(err.contains("cannot connect"), "{err}");
}

// ---- hostile producers: the test plays the sink, byte by byte ----

struct Fake {
    peer: UnixStream,
    pipeline: gst::Element,
    out: gst_app::AppSink,
}

fn fake(name: &str) -> Fake {
    let path = sock(name);
    let listener = UnixListener::bind(&path).unwrap();
    let (pipeline, out) = consumer(&path, "");
    let (peer, _) = listener.accept().unwrap();
    Fake { peer, pipeline, out }
}

fn caps_msg() -> Vec<u8> {
    wire::encode(wire::CAPS, video_caps(gst_video::VideoFormat::Gray8, 8, 8).to_string().as_bytes(), 0)
}

/// A valid BUFFER over a 64-byte memfd tensor filled with `fill`.
fn valid_buffer(id: u64, fill: u8) -> (Vec<u8>, TensorDyn) {
    let t = TensorDyn::new(&[64], DType::U8, Some(TensorMemory::Shm), None).unwrap();
    t.map_with::<u8>(edgefirst_tensor::CpuAccess::ReadWrite).unwrap().as_mut_slice().unwrap().fill(fill);
    let mut info = TensorInfo { rank: 1, ..Default::default() };
    info.shape[0] = 64;
    info.strides[0] = 1;
    let body = BufferMsg {
        id,
        pts: id * 1000,
        dts: wire::NO_TIME,
        duration: 1000,
        flags: 0,
        info: Some(info),
        video: None,
        memories: vec![MemoryRecord { fds: 1, blob: blob::export(&t, TransportMode::Reference).unwrap() }],
    }
    .encode();
    (body, t)
}

fn send_buffer(peer: &UnixStream, body: &[u8], t: &TensorDyn) {
    wire::send(peer, &wire::encode(wire::BUFFER, body, 1), &[t.fd().unwrap().as_raw_fd()]).unwrap();
}

fn bus_has(p: &gst::Element, t: gst::MessageType, seconds: u64) -> Option<gst::Message> {
    p.bus().unwrap().timed_pop_filtered(gst::ClockTime::from_seconds(seconds), &[t])
}

/// Every release the fake producer gets back within `seconds`, until `n` have come.
fn releases(peer: &UnixStream, n: usize, seconds: u64) -> Vec<u64> {
    let mut rx = wire::Receiver::new();
    let mut got = Vec::new();
    let end = Instant::now() + Duration::from_secs(seconds);
    while got.len() < n && Instant::now() < end {
        while let Some(f) = rx.next_frame().unwrap() {
            assert_eq!(f.kind, wire::RELEASE);
            got.push(u64::from_le_bytes(f.body[..8].try_into().unwrap()));
        }
        if got.len() < n && wire::readable(peer, 100).unwrap() && rx.fill(peer).unwrap() == 0 {
            break;
        }
    }
    got
}

#[test]
fn mutated_buffer_messages_are_dropped_with_warnings_and_every_one_is_released() {
    let _s = serial();
    init();
    let before = open_fds();
    {
        let f = fake("mutate");
        wire::send(&f.peer, &caps_msg(), &[]).unwrap();
        let cases = 300u64;
        // Releases are read as they come, as a real producer does: left unread they would fill
        // the socket and the consumer would (rightly) give up on the connection.
        let reader = f.peer.try_clone().unwrap();
        let collected = std::thread::spawn(move || releases(&reader, cases as usize + 1, 60));
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut pushed = 0;
        for id in 1..=cases {
            let (mut body, t) = valid_buffer(id, id as u8);
            // The id stays intact so the release can be matched; everything after it is fair game.
            for _ in 0..1 + next() % 4 {
                let at = 8 + (next() as usize) % (body.len() - 8);
                body[at] = match next() % 3 {
                    0 => body[at] ^ (1 << (next() % 8)),
                    1 => 0xff,
                    _ => 0,
                };
            }
            send_buffer(&f.peer, &body, &t);
            drop(t);
            while let Some(s) =
                f.out.try_pull_sample(gst::ClockTime::from_mseconds(if id % 50 == 0 { 200 } else { 0 }))
            {
                pushed += 1;
                drop(s);
            }
        }
        // A well-formed one after all that still arrives: the stream survived.
        let (body, t) = valid_buffer(cases + 1, 7);
        send_buffer(&f.peer, &body, &t);
        let mut last = None;
        while let Some(s) = f.out.try_pull_sample(gst::ClockTime::from_seconds(5)) {
            let id = s.buffer().unwrap().pts().map_or(0, |t| t.nseconds() / 1000);
            last = Some(id);
            if id == cases + 1 {
                assert!(s.buffer().unwrap().map_readable().unwrap().iter().all(|&x| x == 7));
                break;
            }
            pushed += 1;
        }
        assert_eq!(last, Some(cases + 1), "the valid buffer after the mutations arrived");
        // appsink keeps the buffer it handed out last (its cached sample) until the next pull:
        // one more frame lets go of the previous one.
        let (body, t) = valid_buffer(cases + 2, 8);
        send_buffer(&f.peer, &body, &t);
        let tail = pull(&f.out);
        let src = by_name(&f.pipeline, "src");
        let dropped = src.property::<u64>("frames-dropped");
        assert!(dropped > cases / 2, "most mutations are refused ({dropped} of {cases})");
        assert_eq!(dropped + pushed + 1, cases + 1, "every message was either pushed or dropped");
        let bus = f.pipeline.bus().unwrap();
        let msgs: Vec<gst::Message> = std::iter::from_fn(|| bus.pop()).collect();
        let count = |t: gst::MessageType| msgs.iter().filter(|m| m.type_() == t).count() as u64;
        assert_eq!(count(gst::MessageType::Warning), dropped, "each dropped frame is warned about");
        assert_eq!(count(gst::MessageType::Error), 0, "a bad frame is not a stream error");
        let mut got = collected.join().unwrap();
        got.sort();
        assert_eq!(
            got,
            (1..=cases + 1).collect::<Vec<_>>(),
            "every buffer released exactly once, used or not"
        );
        drop(tail);
        f.pipeline.set_state(gst::State::Null).unwrap();
    }
    assert_eq!(open_fds(), before, "no received fd outlives the consumer");
}

#[test]
fn a_forged_blob_bigger_than_its_memfd_is_dropped() {
    let _s = serial();
    init();
    let f = fake("forged");
    wire::send(&f.peer, &caps_msg(), &[]).unwrap();
    let (body, _t) = valid_buffer(1, 1);
    // The blob describes 64 bytes; hand over an 8-byte memfd instead.
    let small = TensorDyn::new(&[8], DType::U8, Some(TensorMemory::Shm), None).unwrap();
    send_buffer(&f.peer, &body, &small);
    let w = bus_has(&f.pipeline, gst::MessageType::Warning, 5).expect("a warning");
    let gst::MessageView::Warning(w) = w.view() else { unreachable!() };
    assert!(format!("{:?}", w.debug()).contains("memory 0"), "{:?}", w.debug());
    assert_eq!(releases(&f.peer, 1, 5), vec![1]);
    assert!(f.out.try_pull_sample(gst::ClockTime::from_mseconds(200)).is_none());
    f.pipeline.set_state(gst::State::Null).unwrap();
}

#[test]
fn a_buffer_before_caps_is_dropped() {
    let _s = serial();
    init();
    let f = fake("nocaps");
    let (body, t) = valid_buffer(1, 1);
    send_buffer(&f.peer, &body, &t);
    assert!(bus_has(&f.pipeline, gst::MessageType::Warning, 5).is_some());
    assert_eq!(releases(&f.peer, 1, 5), vec![1]);
    f.pipeline.set_state(gst::State::Null).unwrap();
}

/// Bytes that are not the protocol end the stream with an element error; nothing crashes and
/// no fd stays open.
#[test]
fn garbage_oversized_and_fd_flooding_streams_are_element_errors() {
    let _s = serial();
    init();
    let before = open_fds();
    let mut rng = 12345u64;
    let random: Vec<u8> = (0..4096)
        .map(|_| {
            rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (rng >> 33) as u8
        })
        .collect();
    let mut oversized = wire::encode(wire::BUFFER, &[], 0);
    oversized[8..12].copy_from_slice(&(wire::MAX_BODY as u32 + 1).to_le_bytes());
    let mut bad_version = caps_msg();
    bad_version[4] = 9;
    let cases: Vec<(&str, Vec<u8>, usize)> = vec![
        ("random bytes", random, 0),
        ("an oversized length", oversized, 0),
        ("another protocol version", bad_version, 0),
        ("more fds than a message may carry", wire::encode(wire::EOS, &[], 0), wire::MAX_FDS + 1),
        ("fds claimed that never came", wire::encode(wire::EOS, &[], 3), 0),
    ];
    for (what, bytes, nfds) in cases {
        let f = fake("garbage");
        wire::send(&f.peer, &caps_msg(), &[]).unwrap();
        let memfds: Vec<TensorDyn> = (0..nfds)
            .map(|_| TensorDyn::new(&[8], DType::U8, Some(TensorMemory::Shm), None).unwrap())
            .collect();
        let raw: Vec<i32> = memfds.iter().map(|t| t.fd().unwrap().as_raw_fd()).collect();
        if raw.len() > wire::MAX_FDS {
            send_raw_fds(&f.peer, &bytes, &raw);
        } else {
            wire::send(&f.peer, &bytes, &raw).unwrap();
        }
        let e = bus_has(&f.pipeline, gst::MessageType::Error, 5)
            .unwrap_or_else(|| panic!("{what}: no element error"));
        eprintln!("{what}: {e:?}");
        f.pipeline.set_state(gst::State::Null).unwrap();
    }
    assert_eq!(open_fds(), before);
}

/// sendmsg with any number of fds: what wire::send refuses to do, a hostile peer can.
fn send_raw_fds(peer: &UnixStream, bytes: &[u8], fds: &[i32]) {
    let payload = std::mem::size_of_val(fds);
    let space = unsafe { libc::CMSG_SPACE(payload as u32) } as usize;
    let mut control = vec![0u64; space.div_ceil(8)];
    let mut iov = libc::iovec { iov_base: bytes.as_ptr() as *mut _, iov_len: bytes.len() };
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr() as *mut _;
    msg.msg_controllen = space as _;
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(payload as u32) as _;
        std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(c) as *mut i32, fds.len());
        assert!(libc::sendmsg(peer.as_raw_fd(), &msg, 0) > 0);
    }
}

#[test]
fn a_producer_that_leaves_mid_message_gives_a_warning_and_eos() {
    let _s = serial();
    init();
    let f = fake("trunc");
    wire::send(&f.peer, &caps_msg(), &[]).unwrap();
    let (body, t) = valid_buffer(1, 1);
    let whole = wire::encode(wire::BUFFER, &body, 1);
    wire::send(&f.peer, &whole[..whole.len() / 2], &[t.fd().unwrap().as_raw_fd()]).unwrap();
    drop(f.peer);
    assert!(bus_has(&f.pipeline, gst::MessageType::Warning, 5).is_some(), "the truncation is warned about");
    assert!(bus_has(&f.pipeline, gst::MessageType::Eos, 5).is_some(), "then EOS");
    f.pipeline.set_state(gst::State::Null).unwrap();
}
