//! The letterbox padding a tensor of the element's own pool keeps between frames: written once,
//! then only the picture, until someone maps the tensor for writing. Every output is checked
//! against a fresh element's first output for the same frame (which writes everything).

mod common;

use common::*;
use gst_allocators::prelude::*;
use gst_video::VideoFormat;

const PROPS: [(&str, &str); 2] = [("model-width", "32"), ("model-height", "32")];
/// 64×48 into 32×32 letterboxed: the picture is rows 4..28, rows 0..4 and 28..32 are padding.
const ROW: usize = 32 * 3;

fn frame(k: u32) -> gst::Buffer {
    let bytes: Vec<u8> = (0..64 * 48 * 3 / 2)
        .map(|i: u32| (i.wrapping_mul(2654435761).wrapping_add(k * 7919) >> 24) as u8)
        .collect();
    gst::Buffer::from_slice(bytes)
}

fn playing(dtype: &str) -> gst_check::Harness {
    let mut h = harness(&[PROPS[0], PROPS[1], ("model-dtype", dtype)]);
    h.set_src_caps(video_caps(VideoFormat::Nv12, 64, 48));
    h
}

/// What a fresh element makes of frame `k`: every byte written.
fn fresh(dtype: &str, k: u32) -> Vec<u8> {
    let mut h = playing(dtype);
    let out = h.push_and_pull(frame(k)).unwrap();
    let bytes = out.map_readable().unwrap().to_vec();
    bytes
}

fn bytes(b: &gst::Buffer) -> Vec<u8> {
    b.map_readable().unwrap().to_vec()
}

fn memory_id(b: &gst::Buffer) -> usize {
    b.peek_memory(0).as_ptr() as usize
}

/// Write `value` over the first padding row of `b` through its fd, as another process that was
/// lent the fd could: no GStreamer map sees it.
fn scribble_through_the_fd(b: &gst::Buffer, value: u8, len: usize) {
    let m = b.peek_memory(0);
    let fd = m.downcast_memory_ref::<gst_allocators::FdMemory>().expect("the pool's memory has an fd").fd();
    let at = unsafe {
        libc::mmap(std::ptr::null_mut(), m.offset() + len, libc::PROT_WRITE, libc::MAP_SHARED, fd, 0)
    };
    assert_ne!(at, libc::MAP_FAILED);
    unsafe {
        std::ptr::write_bytes((at as *mut u8).add(m.offset()), value, len);
        libc::munmap(at, m.offset() + len);
    }
}

#[test]
fn the_padding_is_kept_until_the_tensor_is_mapped_for_writing() {
    for (dtype, size) in [("uint8", 1), ("float32", 4)] {
        let mut h = playing(dtype);
        let first = h.push_and_pull(frame(0)).unwrap();
        assert_eq!(bytes(&first), fresh(dtype, 0), "{dtype}: the first frame");
        let memory = memory_id(&first);
        // In the kernel lane the pool's tensors are DMA-BUFs from a heap.
        let heap = gstedgefirst::DmaBufAllocator::heap_of(first.peek_memory(0)).expect("the pool's memory");
        let heaps = std::fs::read_dir("/dev/dma_heap").is_ok_and(|mut d| d.next().is_some());
        assert_eq!(heap == "memfd", !heaps, "{dtype}: the pool's tensors come from {heap}");
        drop(first);
        // The same tensor back from the pool: only its picture is written, and it is the frame's.
        for k in 1..4 {
            let out = h.push_and_pull(frame(k)).unwrap();
            assert_eq!(memory_id(&out), memory, "{dtype}: the pool hands the same tensor back");
            assert_eq!(bytes(&out), fresh(dtype, k), "{dtype}: frame {k}");
        }
        // Written through a GStreamer map (an in-place element, an app): the padding is written
        // again.
        let mut out = h.push_and_pull(frame(4)).unwrap();
        out.make_mut().map_writable().unwrap()[..4 * ROW * size].fill(0xee);
        drop(out);
        let out = h.push_and_pull(frame(5)).unwrap();
        assert_eq!(memory_id(&out), memory);
        assert_eq!(bytes(&out), fresh(dtype, 5), "{dtype}: after a write map");
        // Written past GStreamer (through the fd, as another process could): not seen, which is
        // how this test knows the padding is not written again. A lent fd is not to be written.
        scribble_through_the_fd(&out, 0xee, ROW * size);
        drop(out);
        let out = h.push_and_pull(frame(6)).unwrap();
        let (got, want) = (bytes(&out), fresh(dtype, 6));
        assert!(got[..ROW * size].iter().all(|&b| b == 0xee), "{dtype}: the padding was not written");
        assert_eq!(got[ROW * size..], want[ROW * size..], "{dtype}: the rest is the frame's");
    }
}

/// An app that keeps the last tensor while the next frame is converted: the next one gets
/// another tensor, written whole, and the kept one is not touched.
#[test]
fn a_kept_tensor_is_not_reused_and_keeps_its_bytes() {
    let mut h = playing("uint8");
    drop(h.push_and_pull(frame(0)).unwrap());
    let kept = h.push_and_pull(frame(1)).unwrap();
    let before = bytes(&kept);
    assert_eq!(before, fresh("uint8", 1));
    for k in 2..6 {
        let out = h.push_and_pull(frame(k)).unwrap();
        assert_ne!(memory_id(&out), memory_id(&kept));
        assert_eq!(bytes(&out), fresh("uint8", k), "frame {k}");
    }
    assert_eq!(bytes(&kept), before, "the kept tensor is unchanged");
}

/// A tee to two apps that keep every tensor a while, one of which writes into each it gets (a
/// writable copy, as GStreamer gives a shared buffer's writer): the other sees every frame's
/// tensor exactly, padding included, frame after frame.
#[test]
fn a_tee_branch_that_writes_its_tensors_leaves_the_other_branch_and_the_padding_intact() {
    init();
    let p = gst::parse::launch(
        "appsrc name=src format=time ! edgefirsttensor model-width=32 model-height=32 ! tee name=t \
         t. ! queue ! appsink name=writer sync=false max-buffers=4 \
         t. ! queue ! appsink name=reader sync=false max-buffers=4",
    )
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    let by = |n: &str| p.by_name(n).unwrap();
    let src = by("src").downcast::<gst_app::AppSrc>().unwrap();
    src.set_caps(Some(&video_caps(VideoFormat::Nv12, 64, 48)));
    let sink = |n: &str| by(n).downcast::<gst_app::AppSink>().unwrap();
    let (writer, reader) = (sink("writer"), sink("reader"));
    p.set_state(gst::State::Playing).unwrap();
    let timeout = gst::ClockTime::from_seconds(10);
    let mut kept = std::collections::VecDeque::new();
    for k in 0..12 {
        let mut b = frame(k);
        b.make_mut().set_pts(gst::ClockTime::from_mseconds(33 * k as u64));
        src.push_buffer(b).unwrap();
        let mut w = writer.try_pull_sample(timeout).unwrap().buffer_owned().unwrap();
        w.make_mut().map_writable().unwrap().fill(0xee);
        let r = reader.try_pull_sample(timeout).unwrap().buffer_owned().unwrap();
        assert_eq!(bytes(&r), fresh("uint8", k), "frame {k}");
        // Both apps keep the last two.
        kept.push_back((w, r));
        if kept.len() > 2 {
            kept.pop_front();
        }
    }
    p.set_state(gst::State::Null).unwrap();
}

/// Frame `k` of a `format` source of `w`×`h`: bytes that differ from frame to frame.
fn frame_of(format: VideoFormat, w: u32, h: u32, k: u32) -> gst::Buffer {
    let size = gst_video::VideoInfo::builder(format, w, h).build().unwrap().size();
    let bytes: Vec<u8> =
        (0..size as u32).map(|i| (i.wrapping_mul(2246822519).wrapping_add(k * 104729) >> 24) as u8).collect();
    gst::Buffer::from_slice(bytes)
}

/// edgefirsttensor alone, fresh (every byte written), on frame `k` of a source: what its slot holds.
fn fresh_slot(format: VideoFormat, w: u32, h: u32, k: u32) -> Vec<u8> {
    let mut h_ = harness(&PROPS);
    h_.set_src_caps(video_caps(format, w, h));
    bytes(&h_.push_and_pull(frame_of(format, w, h, k)).unwrap())
}

/// The batch's tensor back from its pool keeps each slot's padding: a wide source (padding rows)
/// and a tall one (padding columns), every batch equal to the sources converted alone and fresh;
/// a write through the fd is not seen (so the padding was not written), a write map is.
#[test]
fn the_batch_keeps_each_slots_padding_until_the_tensor_is_mapped_for_writing() {
    init();
    let sources = [(VideoFormat::Nv12, 128, 72), (VideoFormat::Rgba, 48, 96)];
    let p = gst::parse::launch(
        "edgefirsttensorbatch name=b model-width=32 model-height=32 ! \
         appsink name=sink sync=false enable-last-sample=false \
         appsrc name=s0 format=time ! b.sink_0 appsrc name=s1 format=time ! b.sink_1",
    )
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    let srcs: Vec<gst_app::AppSrc> = (0..2)
        .map(|i| {
            let s = p.by_name(&format!("s{i}")).unwrap().downcast::<gst_app::AppSrc>().unwrap();
            let (f, w, h) = sources[i];
            s.set_caps(Some(&video_caps(f, w, h)));
            s
        })
        .collect();
    let sink = p.by_name("sink").unwrap().downcast::<gst_app::AppSink>().unwrap();
    // A write map as an in-place element downstream makes it: on the batch's way out, when its
    // tensor is `target` (appsink keeps a reference to the last buffer, so the app cannot).
    let target = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let t = target.clone();
    p.by_name("b").unwrap().static_pad("src").unwrap().add_probe(
        gst::PadProbeType::BUFFER,
        move |_, info| {
            if let Some(b) = info.buffer_mut() {
                if b.peek_memory(0).as_ptr() as usize == t.load(std::sync::atomic::Ordering::SeqCst) {
                    b.get_mut().unwrap().map_writable().unwrap()[..ROW].fill(0xee);
                    t.store(1, std::sync::atomic::Ordering::SeqCst);
                }
            }
            gst::PadProbeReturn::Ok
        },
    );
    p.set_state(gst::State::Playing).unwrap();
    let slot = 32 * 32 * 3;
    // The pool may rotate over a few tensors: each step waits for the scribbled one to return.
    let (mut scribbled, mut write_mapped) = (None, None);
    let (mut kept_seen, mut written_seen) = (false, false);
    for k in 0..16u32 {
        for (s, &(f, w, h)) in srcs.iter().zip(&sources) {
            let mut b = frame_of(f, w, h, k);
            b.make_mut().set_pts(gst::ClockTime::from_mseconds(33 * k as u64));
            s.push_buffer(b).unwrap();
        }
        let out = sink.try_pull_sample(gst::ClockTime::from_seconds(10)).unwrap().buffer_owned().unwrap();
        let got = bytes(&out);
        let want: Vec<u8> = sources.iter().flat_map(|&(f, w, h)| fresh_slot(f, w, h, k)).collect();
        assert_eq!(got.len(), 2 * slot);
        let id = memory_id(&out);
        let same = |a: &[u8], b: &[u8]| a.len() == b.len() && a == b;
        if target.load(std::sync::atomic::Ordering::SeqCst) == 1 {
            // The probe wrote this one's first row on its way out.
            assert!(same(&got[ROW..], &want[ROW..]), "batch {k}: the frames' bytes");
            (write_mapped, written_seen) = (Some(id), false);
            target.store(0, std::sync::atomic::Ordering::SeqCst);
        } else if scribbled == Some(id) {
            // The wide source's first padding row, written through the fd: still there.
            assert!(got[..ROW].iter().all(|&b| b == 0xee), "batch {k}: the padding was not written");
            assert!(same(&got[ROW..], &want[ROW..]), "batch {k}: the rest is the frames'");
            (scribbled, kept_seen) = (None, true);
            target.store(id, std::sync::atomic::Ordering::SeqCst);
        } else {
            assert!(same(&got, &want), "batch {k}: the frames' bytes, padding included");
            if write_mapped == Some(id) {
                (write_mapped, written_seen) = (None, true);
            }
            if k >= 3 && !kept_seen && scribbled.is_none() {
                scribble_through_the_fd(&out, 0xee, ROW);
                scribbled = Some(id);
            }
        }
    }
    assert!(kept_seen && written_seen, "the scribbled tensor came back three times in sixteen batches");
    p.set_state(gst::State::Null).unwrap();
}
