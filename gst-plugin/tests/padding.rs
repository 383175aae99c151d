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
