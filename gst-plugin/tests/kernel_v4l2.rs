//! A real V4L2 camera (vivid, kernel lane) writing into the edgefirst pool: `v4l2src
//! io-mode=dmabuf-import` imports our DMA-BUFs and captures into them.

mod common;

use common::*;
use edgefirst_tensor::import::{fs_magic, DMA_BUF_MAGIC};
use gst::prelude::*;
use gstedgefirst::{BufferPool, DmaBufAllocator};
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Answer the sink pad's allocation query with an edgefirst pool, as our elements will.
fn offer_pool(pad: &gst::Pad, proposed: Arc<AtomicUsize>) {
    pad.add_probe(gst::PadProbeType::QUERY_DOWNSTREAM, move |_pad, info| {
        let Some(query) = info.query_mut() else { return gst::PadProbeReturn::Ok };
        if let gst::QueryViewMut::Allocation(q) = query.view_mut() {
            let (caps, _) = q.get();
            let caps = caps.expect("allocation query with caps").to_owned();
            let (pool, size) = BufferPool::configured(&caps, 0, 4, 8).unwrap();
            q.add_allocation_pool(Some(&pool), size, 4, 8);
            q.add_allocation_param(DmaBufAllocator::find().as_ref(), gst::AllocationParams::default());
            q.add_allocation_meta::<gst_video::VideoMeta>(None);
            proposed.fetch_add(1, Ordering::SeqCst);
            return gst::PadProbeReturn::Handled;
        }
        gst::PadProbeReturn::Ok
    });
}

#[test]
fn v4l2src_dmabuf_import_captures_into_our_pool() {
    init();
    let pipeline = gst::parse::launch(
        "v4l2src device=/dev/video0 io-mode=dmabuf-import num-buffers=30 \
         ! video/x-raw,format=NV12,width=640,height=480 ! fakesink name=sink sync=false",
    )
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    let sink_pad = pipeline.by_name("sink").unwrap().static_pad("sink").unwrap();
    let proposed = Arc::new(AtomicUsize::new(0));
    offer_pool(&sink_pad, proposed.clone());
    let ours = Arc::new(AtomicUsize::new(0));
    let foreign = Arc::new(AtomicUsize::new(0));
    {
        let (ours, foreign) = (ours.clone(), foreign.clone());
        sink_pad.add_probe(gst::PadProbeType::BUFFER, move |_, info| {
            let buffer = info.buffer().unwrap();
            let mem = buffer.peek_memory(0);
            let is_ours = DmaBufAllocator::heap_of(mem) == Some("system")
                && mem
                    .downcast_memory_ref::<gst_allocators::DmaBufMemory>()
                    .map(|d| fs_magic(unsafe { BorrowedFd::borrow_raw(d.fd()) }).ok() == Some(DMA_BUF_MAGIC))
                    .unwrap_or(false);
            if is_ours { &ours } else { &foreign }.fetch_add(1, Ordering::SeqCst);
            gst::PadProbeReturn::Ok
        });
    }
    run_to_eos(pipeline.upcast_ref(), 240).unwrap_or_else(|e| panic!("pipeline error: {e}"));
    let (ours, foreign) = (ours.load(Ordering::SeqCst), foreign.load(Ordering::SeqCst));
    println!("kernel lane: vivid v4l2src io-mode=dmabuf-import: {ours} frames in edgefirst DMA-BUFs, {foreign} elsewhere");
    assert!(proposed.load(Ordering::SeqCst) >= 1, "v4l2src asked downstream for a pool");
    assert_eq!(foreign, 0, "every frame was captured into our pool");
    assert!(ours >= 20, "most of the 30 frames arrived (vivid drops a few under TCG)");
}

/// 120 frames of a real camera through edgefirsttensor: imports equal the distinct kernel buffers
/// the camera cycles through (its V4L2 pool), not the frame count.
fn camera_into_edgefirsttensor(device: &str, planes: usize) {
    init();
    let pipeline = gst::parse::launch(&format!(
        "v4l2src device={device} io-mode=dmabuf num-buffers=120 \
         ! video/x-raw,format=NV12,width=640,height=480 ! edgefirsttensor name=t ! video/x-raw,format=NV12 ! fakesink name=sink sync=false"
    ))
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    let inodes = Arc::new(std::sync::Mutex::new(std::collections::HashSet::new()));
    let frames = Arc::new(AtomicUsize::new(0));
    let sink_pad = pipeline.by_name("sink").unwrap().static_pad("sink").unwrap();
    {
        let (inodes, frames) = (inodes.clone(), frames.clone());
        sink_pad.add_probe(gst::PadProbeType::BUFFER, move |_, info| {
            let buffer = info.buffer().unwrap();
            assert_eq!(buffer.n_memory(), planes, "{planes} DMA-BUF memories a frame");
            for mem in buffer.iter_memories() {
                let d = mem.downcast_memory_ref::<gst_allocators::DmaBufMemory>().expect("DMA-BUF memory");
                let fd = unsafe { BorrowedFd::borrow_raw(d.fd()) };
                assert_eq!(fs_magic(fd).unwrap(), DMA_BUF_MAGIC);
                let id = edgefirst_tensor::import::file_identity(fd).unwrap();
                inodes.lock().unwrap().insert((id.dev, id.ino, planes > 1 && mem.size() < 300_000));
            }
            let meta = buffer.meta::<gstedgefirst::TensorMeta>().expect("tensor meta");
            assert_ne!(meta.info().buffer_id, 0, "imported");
            assert_eq!(meta.info().shape(), &[480, 640]);
            frames.fetch_add(1, Ordering::SeqCst);
            gst::PadProbeReturn::Ok
        });
    }
    run_to_eos(pipeline.upcast_ref(), 240).unwrap_or_else(|e| panic!("pipeline error: {e}"));
    let t = pipeline.by_name("t").unwrap();
    let (misses, hits) = (t.property::<u64>("import-misses"), t.property::<u64>("import-hits"));
    let frames = frames.load(Ordering::SeqCst) as u64;
    let buffers = inodes.lock().unwrap().len() / planes;
    println!(
        "kernel lane: {device} ({planes} plane(s)): {frames} frames, {buffers} distinct DMA-BUFs, \
         import-misses {misses}, import-hits {hits}"
    );
    assert!(frames >= 100, "most of 120 frames arrived");
    assert_eq!(misses as usize, buffers, "one import per V4L2 buffer");
    assert_eq!(misses + hits, frames);
    assert!(misses <= 32, "the camera's pool, not the frame count");
}

#[test]
fn single_planar_camera_into_edgefirsttensor() {
    camera_into_edgefirsttensor("/dev/video0", 1);
}

#[test]
fn multi_planar_camera_into_edgefirsttensor() {
    camera_into_edgefirsttensor("/dev/video4", 2);
}

/// The camera's frames converted to a letterboxed model tensor: the result is written into the
/// edgefirst pool's DMA-BUFs and handed on as is.
#[test]
fn camera_frames_converted_into_pool_dmabufs() {
    init();
    let pipeline = gst::parse::launch(
        "v4l2src device=/dev/video0 io-mode=dmabuf num-buffers=20 ! video/x-raw,format=NV12,width=640,height=480 \
         ! edgefirsttensor model-width=320 model-height=320 model-dtype=float32 ! fakesink name=sink sync=false",
    )
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    let dma = Arc::new(AtomicUsize::new(0));
    let other = Arc::new(AtomicUsize::new(0));
    {
        let (dma, other) = (dma.clone(), other.clone());
        pipeline.by_name("sink").unwrap().static_pad("sink").unwrap().add_probe(
            gst::PadProbeType::BUFFER,
            move |_, info| {
                let buffer = info.buffer().unwrap();
                let mem = buffer.peek_memory(0);
                let ours = DmaBufAllocator::heap_of(mem) == Some("system")
                    && mem.downcast_memory_ref::<gst_allocators::DmaBufMemory>().is_some_and(|d| {
                        fs_magic(unsafe { BorrowedFd::borrow_raw(d.fd()) }).ok() == Some(DMA_BUF_MAGIC)
                    });
                let meta = buffer.meta::<gstedgefirst::TensorMeta>().unwrap();
                assert_eq!(meta.info().shape(), &[1, 320, 320, 3]);
                assert_eq!((meta.info().content_y, meta.info().content_height), (40, 240));
                if ours { &dma } else { &other }.fetch_add(1, Ordering::SeqCst);
                gst::PadProbeReturn::Ok
            },
        );
    }
    run_to_eos(pipeline.upcast_ref(), 240).unwrap_or_else(|e| panic!("pipeline error: {e}"));
    let (dma, other) = (dma.load(Ordering::SeqCst), other.load(Ordering::SeqCst));
    println!("kernel lane: NV12 640x480 → float32 320x320 letterboxed: {dma} tensors in edgefirst DMA-BUFs, {other} elsewhere");
    assert!(dma >= 15);
    assert_eq!(other, 0);
}

/// The camera's DMA-BUF frames are read through the import's kept mapping (sync ioctls around
/// each read): every converted tensor equals the conversion of the same frame's bytes copied to
/// system memory and read through GStreamer's map.
#[test]
fn camera_frames_read_through_the_kept_mapping_convert_like_system_memory() {
    init();
    let pipeline = gst::parse::launch(
        "v4l2src device=/dev/video0 io-mode=dmabuf num-buffers=24 ! video/x-raw,format=NV12,width=640,height=480 \
         ! edgefirsttensor name=t model-width=320 model-height=320 ! fakesink name=sink sync=false",
    )
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    type Frames = Arc<std::sync::Mutex<std::collections::BTreeMap<u64, (Vec<u8>, Vec<usize>, Vec<i32>)>>>;
    let inputs: Frames = Default::default();
    let outputs: Arc<std::sync::Mutex<std::collections::BTreeMap<u64, Vec<u8>>>> = Default::default();
    {
        let inputs = inputs.clone();
        let t = pipeline.by_name("t").unwrap();
        t.static_pad("sink").unwrap().add_probe(gst::PadProbeType::BUFFER, move |_, info| {
            let b = info.buffer().unwrap();
            let vm = b.meta::<gst_video::VideoMeta>().expect("v4l2src adds a video meta");
            let layout = (vm.offset().to_vec(), vm.stride().to_vec());
            let bytes = b.map_readable().unwrap().to_vec();
            inputs.lock().unwrap().insert(b.pts().unwrap().nseconds(), (bytes, layout.0, layout.1));
            gst::PadProbeReturn::Ok
        });
        let outputs = outputs.clone();
        pipeline.by_name("sink").unwrap().static_pad("sink").unwrap().add_probe(
            gst::PadProbeType::BUFFER,
            move |_, info| {
                let b = info.buffer().unwrap();
                outputs
                    .lock()
                    .unwrap()
                    .insert(b.pts().unwrap().nseconds(), b.map_readable().unwrap().to_vec());
                gst::PadProbeReturn::Ok
            },
        );
    }
    run_to_eos(pipeline.upcast_ref(), 240).unwrap_or_else(|e| panic!("pipeline error: {e}"));
    let t = pipeline.by_name("t").unwrap();
    assert!(t.property::<u64>("import-hits") > 0, "frames came back to the cache");
    let mut h = gst_check::Harness::new("edgefirsttensor");
    let el = h.element().unwrap();
    el.set_property_from_str("model-width", "320");
    el.set_property_from_str("model-height", "320");
    h.play();
    h.set_src_caps(video_caps(gst_video::VideoFormat::Nv12, 640, 480));
    let (inputs, outputs) = (inputs.lock().unwrap(), outputs.lock().unwrap());
    let mut compared = 0;
    for (pts, out) in outputs.iter() {
        let (bytes, offsets, strides) = &inputs[pts];
        let mut sys = gst::Buffer::from_slice(bytes.clone());
        gst_video::VideoMeta::add_full(
            sys.get_mut().unwrap(),
            gst_video::VideoFrameFlags::empty(),
            gst_video::VideoFormat::Nv12,
            640,
            480,
            offsets,
            strides,
        )
        .unwrap();
        let want = h.push_and_pull(sys).unwrap();
        assert_eq!(out[..], want.map_readable().unwrap()[..], "frame at {pts} ns");
        compared += 1;
    }
    println!("kernel lane: {compared} vivid DMA-BUF frames read through the kept mapping, each equal to its system-memory conversion");
    assert!(compared >= 15);
}
