//! `edgefirstzenohsink` / `edgefirstzenohsrc` between two peers on 127.0.0.1 (one listens, one
//! connects, no router, no multicast): bytes, caps, tensor meta and timestamps arrive as made;
//! the producer's EOS and its disappearance end the consumer's stream (or are waited out with
//! `reconnect`); hostile publishers on the key get warnings, never a crash; fds stay flat.
//!
//! The tests count fds and open sockets, so they take turns.
#![cfg(feature = "zenoh")]

mod common;

use common::net::*;
use common::*;
use gst::prelude::*;
use std::sync::Mutex;
use std::time::Duration;
use zenoh::Wait;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn key(name: &str) -> String {
    format!("edgefirst/test/{}/{name}", std::process::id())
}

fn subscriber(key: &str, port: u16, extra: &str) -> (gst::Element, gst_app::AppSink) {
    let (p, out) = consumer(&format!(
        "edgefirstzenohsrc name=src key-expr={key} listen=tcp/127.0.0.1:{port} multicast-scouting=false {extra}"
    ));
    p.set_state(gst::State::Playing).unwrap();
    (p, out)
}

fn publisher(key: &str, port: u16, fps: u32, frames: i32) -> (gst::Element, Records) {
    let (p, rec) = producer(
        fps,
        frames,
        &format!("edgefirstzenohsink name=zsink key-expr={key} connect=tcp/127.0.0.1:{port} multicast-scouting=false block=true"),
    );
    p.set_state(gst::State::Playing).unwrap();
    (p, rec)
}

#[test]
fn frames_arrive_as_made_and_the_producers_eos_ends_the_stream() {
    let _s = serial();
    init();
    let (k, port) = (key("eos"), free_tcp_port());
    let (cons, out) = subscriber(&k, port, "queue-size=64");
    let (prod, rec) = publisher(&k, port, 100, 150);
    let mut n = 0;
    let mut last = 0;
    while let Some((pts, got)) = pull_seen(&out, 10) {
        check_against(&rec, pts, &got);
        assert!(pts > last || n == 0, "in order");
        last = pts;
        n += 1;
    }
    // Pub/sub: frames published before the peers had met are not delivered; after that, none is
    // lost with block=true and a queue that keeps up.
    assert!(n >= 100, "{n} of 150 frames");
    let newest = rec.lock().unwrap().keys().max().copied().unwrap();
    assert_eq!(last, newest, "up to the producer's last frame");
    assert!(bus_has(&cons, &[gst::MessageType::Eos], 5).is_some(), "the producer's EOS ends the stream");
    assert_eq!(by_name(&cons, "src").property::<u64>("messages-dropped"), 0);
    assert!(by_name(&prod, "zsink").property::<u64>("messages-sent") == 150);
    prod.set_state(gst::State::Null).unwrap();
    cons.set_state(gst::State::Null).unwrap();
}

#[test]
fn a_producer_that_vanishes_ends_the_stream_or_is_waited_for() {
    let _s = serial();
    init();
    // Without reconnect: the producer's session goes (no EOS sent) and its liveliness token with
    // it; the consumer ends its stream.
    let (k, port) = (key("vanish"), free_tcp_port());
    let (cons, out) = subscriber(&k, port, "");
    let (prod, rec) = publisher(&k, port, 100, 0);
    for _ in 0..10 {
        let (pts, got) = pull_seen(&out, 10).expect("a frame");
        check_against(&rec, pts, &got);
    }
    prod.set_state(gst::State::Null).unwrap();
    assert!(bus_has(&cons, &[gst::MessageType::Eos], 10).is_some(), "a vanished producer is EOS");
    cons.set_state(gst::State::Null).unwrap();

    // With reconnect: the consumer waits, and the next producer's frames arrive.
    let (k, port) = (key("again"), free_tcp_port());
    let (cons, out) = subscriber(&k, port, "reconnect=true");
    let (prod, rec) = publisher(&k, port, 100, 0);
    for _ in 0..10 {
        let (pts, got) = pull_seen(&out, 10).expect("a frame");
        check_against(&rec, pts, &got);
    }
    prod.set_state(gst::State::Null).unwrap();
    while out.try_pull_sample(gst::ClockTime::from_mseconds(500)).is_some() {}
    assert!(bus_has(&cons, &[gst::MessageType::Eos], 1).is_none(), "reconnect waits");
    let (prod, rec) = publisher(&k, port, 100, 0);
    for _ in 0..10 {
        let (pts, got) = pull_seen(&out, 10).expect("a frame from the new producer");
        check_against(&rec, pts, &got);
    }
    prod.set_state(gst::State::Null).unwrap();
    cons.set_state(gst::State::Null).unwrap();
}

#[test]
fn a_consumer_killed_and_restarted_mid_stream_picks_up() {
    let _s = serial();
    init();
    // The producer listens here, so consumers can come and go while it runs.
    let (k, port) = (key("restart"), free_tcp_port());
    let (prod, rec) = producer(
        100,
        0,
        &format!("edgefirstzenohsink key-expr={k} listen=tcp/127.0.0.1:{port} multicast-scouting=false"),
    );
    prod.set_state(gst::State::Playing).unwrap();
    for round in 0..3 {
        let (cons, out) = consumer(&format!(
            "edgefirstzenohsrc key-expr={k} connect=tcp/127.0.0.1:{port} multicast-scouting=false"
        ));
        cons.set_state(gst::State::Playing).unwrap();
        for _ in 0..10 {
            let (pts, got) = pull_seen(&out, 10).unwrap_or_else(|| panic!("round {round}: a frame"));
            check_against(&rec, pts, &got);
        }
        // Killed: its session just goes.
        cons.set_state(gst::State::Null).unwrap();
    }
    assert!(bus_has(&prod, &[gst::MessageType::Error], 0).is_none(), "the producer never noticed");
    prod.set_state(gst::State::Null).unwrap();
}

/// A raw Zenoh peer publishing on the consumer's key whatever it likes.
fn raw_peer(port: u16) -> zenoh::Session {
    let mut c = zenoh::Config::default();
    c.insert_json5("mode", "\"peer\"").unwrap();
    c.insert_json5("scouting/multicast/enabled", "false").unwrap();
    c.insert_json5("connect/endpoints", &format!("[\"tcp/127.0.0.1:{port}\"]")).unwrap();
    zenoh::open(c).wait().unwrap()
}

#[test]
fn hostile_publishers_get_warnings_and_the_stream_goes_on() {
    let _s = serial();
    init();
    let (k, port) = (key("hostile"), free_tcp_port());
    let (cons, out) = subscriber(&k, port, "queue-size=64 max-size=65536");
    let src = by_name(&cons, "src");
    let peer = raw_peer(port);
    let publ = peer
        .declare_publisher(k.clone())
        .congestion_control(zenoh::qos::CongestionControl::Block)
        .wait()
        .unwrap();
    // Until the peers have met, a put goes nowhere: wait for the first good one to arrive.
    assert!(wait_for(10, || {
        publ.put(message(0)).wait().unwrap();
        out.try_pull_sample(gst::ClockTime::from_mseconds(50))
    })
    .is_some());
    let cases =
        std::env::var("EDGEFIRST_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(200usize).min(400);
    let mut rng = Rng(0x1234_5678);
    let mut next = || rng.next();
    let mut pushed = 0;
    for i in 0..cases {
        let mut m = message(i as u64 + 1);
        match i % 5 {
            0 => m.truncate(8 + (next() as usize) % (m.len() - 8)),
            1 => m = vec![0xab; 1 + (next() as usize) % 300],
            2 => m = vec![0; 70_000], // past max-size
            _ => {
                for _ in 0..1 + next() % 4 {
                    let at = (next() as usize) % m.len();
                    m[at] ^= 1 << (next() % 8);
                }
            }
        }
        publ.put(m).wait().unwrap();
        std::thread::sleep(Duration::from_millis(2));
        while out.try_pull_sample(gst::ClockTime::ZERO).is_some() {
            pushed += 1;
        }
    }
    publ.put(message(9999)).wait().unwrap();
    let last = wait_for(10, || {
        let s = out.try_pull_sample(gst::ClockTime::from_mseconds(50))?;
        let pts = s.buffer().unwrap().pts().unwrap();
        if pts == gst::ClockTime::from_mseconds(9999) {
            Some(())
        } else {
            pushed += 1;
            None
        }
    });
    assert!(last.is_some(), "a good message after all that arrives");
    let dropped = src.property::<u64>("messages-dropped") as usize;
    assert!(dropped >= cases * 3 / 5, "{dropped} of {cases} dropped ({pushed} pushed)");
    assert_eq!(warnings(&cons).len(), dropped, "one warning per dropped message");
    assert!(bus_has(&cons, &[gst::MessageType::Error], 0).is_none());
    drop(publ);
    peer.close().wait().unwrap();
    cons.set_state(gst::State::Null).unwrap();
}

#[test]
fn ten_thousand_frames_over_zenoh_leave_the_fd_count_flat() {
    let _s = serial();
    init();
    let frames: usize =
        std::env::var("EDGEFIRST_NET_FRAMES").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000);
    let run = |frames: usize, samples: &mut Vec<usize>| {
        let (k, port) = (key("fds"), free_tcp_port());
        let (cons, out) = subscriber(&k, port, "queue-size=16");
        let (prod, _rec) = publisher(&k, port, 1000, 0);
        for i in 0..frames {
            out.try_pull_sample(gst::ClockTime::from_seconds(10)).unwrap_or_else(|| panic!("frame {i}"));
            if i % 500 == 499 {
                samples.push(open_fds());
            }
        }
        prod.set_state(gst::State::Null).unwrap();
        cons.set_state(gst::State::Null).unwrap();
    };
    // The first sessions start what Zenoh keeps for the process (its runtime's threads).
    run(20, &mut Vec::new());
    run(20, &mut Vec::new());
    let before = open_fds();
    let mut samples = Vec::new();
    run(frames, &mut samples);
    let (lo, hi) = (*samples.iter().min().unwrap(), *samples.iter().max().unwrap());
    assert!(hi - lo <= 8, "fd count while streaming ranged {lo}..={hi}: {samples:?}");
    let after = wait_for(5, || (open_fds() <= before).then_some(())).map(|_| before).unwrap_or_else(open_fds);
    assert_eq!(after, before, "every memfd and socket closed after the frames and teardown");
}
