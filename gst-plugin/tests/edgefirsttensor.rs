//! edgefirsttensor in a Harness and in real pipelines: caps for every input format, passthrough
//! zero-copy proven by inode, the import cache across recycled, re-wrapped and recreated buffers,
//! allocation answers, and bad input.

mod common;

use common::*;
use edgefirst_tensor::import::file_identity;
use gst::prelude::*;
use gst_video::VideoFormat;
use gstedgefirst::TensorMeta;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

/// A system-memory frame of `size` bytes, byte i being `f(i)`.
fn patterned(size: usize, f: impl Fn(usize) -> u8) -> gst::Buffer {
    let mut frame = gst::Buffer::with_size(size).unwrap();
    frame.get_mut().unwrap().map_writable().unwrap().iter_mut().enumerate().for_each(|(i, b)| *b = f(i));
    frame
}

fn out_caps(h: &mut gst_check::Harness) -> String {
    h.sinkpad().unwrap().current_caps().unwrap().to_string()
}

fn meta_of(b: &gst::Buffer) -> gstedgefirst::TensorInfo {
    *b.meta::<TensorMeta>().expect("every output buffer carries the tensor meta").info()
}

fn stat(h: &gst_check::Harness, name: &str) -> u64 {
    h.element().unwrap().property::<u64>(name)
}

#[test]
fn every_input_format_negotiates_the_model_tensor() {
    for f in gstedgefirst::video::FORMATS {
        let mut h = harness(&[]);
        h.set_src_caps(video_caps(f, 64, 48));
        let info = gst_video::VideoInfo::from_caps(&video_caps(f, 64, 48)).unwrap();
        let out = h.push_and_pull(gst::Buffer::with_size(info.size()).unwrap()).unwrap();
        assert_eq!(
            out_caps(&mut h),
            "other/tensors, format=(string)static, num_tensors=(int)1, types=(string)uint8, \
             dimensions=(string)3:64:48:1, framerate=(fraction)30/1",
            "{f:?}"
        );
        let meta = meta_of(&out);
        assert_eq!(meta.shape(), &[1, 48, 64, 3], "{f:?}");
        assert_eq!(meta.strides(), &[9216, 192, 3, 1], "{f:?}");
        assert_eq!(out.size(), 9216, "{f:?}: a dense tensor");
        if f != VideoFormat::Rgb {
            // Converted into the edgefirst pool (memfd here, a DMA heap on a board).
            let heap = gstedgefirst::DmaBufAllocator::heap_of(out.peek_memory(0));
            assert!(heap.is_some(), "{f:?}: output from the edgefirst allocator");
        }
        // The frame itself stays on offer for a downstream that wants it untouched.
        let offered = h.element().unwrap().static_pad("src").unwrap().query_caps(None);
        assert!(
            offered.iter().any(|s| s.name() == "video/x-raw" && s.get::<&str>("format") == Ok(f.to_str())),
            "{f:?}: {offered}"
        );
    }
}

#[test]
fn chw_tensor_caps() {
    let mut h = harness(&[("model-layout", "chw"), ("model-colorspace", "gray")]);
    h.set_src_caps(video_caps(VideoFormat::Gray8, 64, 48));
    let out = h.push_and_pull(gst::Buffer::with_size(64 * 48).unwrap()).unwrap();
    assert_eq!(
        out_caps(&mut h),
        "other/tensors, format=(string)static, num_tensors=(int)1, types=(string)uint8, \
         dimensions=(string)64:48:1:1, framerate=(fraction)30/1"
    );
    assert_eq!(meta_of(&out).shape(), &[1, 1, 48, 64]);
    // RGB chw negotiates as W:H:C:1.
    let mut h = harness(&[("model-layout", "chw")]);
    h.set_src_caps(video_caps(VideoFormat::Nv12, 64, 48));
    h.push_and_pull(gst::Buffer::with_size(64 * 72).unwrap()).unwrap();
    assert!(out_caps(&mut h).contains("dimensions=(string)64:48:3:1"), "{}", out_caps(&mut h));
}

fn run_pipeline(launch: &str) -> Result<(), String> {
    init();
    run_to_eos(&gst::parse::launch(launch).map_err(|e| e.to_string())?, 10)
}

#[test]
fn impossible_configurations_are_refused_at_caps_time_with_a_clear_error() {
    let e = run_pipeline(
        "videotestsrc num-buffers=1 ! video/x-raw,format=NV12,width=64,height=48 \
         ! edgefirsttensor model-dtype=uint16 model-mean=0.5 ! other/tensors ! fakesink",
    )
    .unwrap_err();
    assert!(e.contains("mean/std on a uint16 output needs the model's quantization"), "{e}");
}

#[test]
fn letterboxed_float_tensor_with_mean_std_and_its_geometry() {
    let mut h = harness(&[
        ("model-width", "64"),
        ("model-height", "64"),
        ("model-dtype", "float32"),
        ("model-layout", "chw"),
        ("model-mean", "0.485,0.456,0.406"),
        ("model-std", "0.229,0.224,0.225"),
    ]);
    h.set_src_caps(video_caps(VideoFormat::Nv12, 128, 72));
    let frame = patterned(128 * 108, |i| (i * 7) as u8);
    let out = h.push_and_pull(frame.clone()).unwrap();
    assert!(out_caps(&mut h).contains("types=(string)float32, dimensions=(string)64:64:3:1"));
    let m = meta_of(&out);
    assert_eq!(m.shape(), &[1, 3, 64, 64]);
    assert_eq!(m.strides(), &[49152, 16384, 256, 4]);
    // 128x72 letterboxed into 64x64: 64x36 content, 14 rows of padding above.
    assert_eq!((m.content_x, m.content_y, m.content_width, m.content_height), (0, 14, 64, 36));
    assert_eq!((m.scale_x, m.scale_y), (0.5, 0.5));
    let el = h.element().unwrap();
    assert_eq!((el.property::<u32>("letterbox-top"), el.property::<u32>("letterbox-bottom")), (14, 14));
    assert_eq!(el.property::<f64>("letterbox-scale"), 0.5);
    // The element writes exactly what the tensor crate's converter gives for the same frame.
    use edgefirst_tensor::convert::{Colorspace, ConvertSpec, Converter, DstLayout, SrcImage};
    let dst = DstLayout::dense(64, 64, Colorspace::Rgb, true, edgefirst_tensor::DType::F32);
    let spec = ConvertSpec {
        mean: [0.485, 0.456, 0.406],
        std: [0.229, 0.224, 0.225],
        fill: [0x80, 0x80, 0x80, 0xff],
        ..Default::default()
    };
    let conv = Converter::new(edgefirst_tensor::PixelFormat::Nv12, 128, 72, dst, &spec, 1).unwrap();
    let map = frame.map_readable().unwrap();
    let src = SrcImage {
        format: edgefirst_tensor::PixelFormat::Nv12,
        width: 128,
        height: 72,
        planes: [(&map[..], 128), (&map[128 * 72..], 128), (&[], 0)],
    };
    let mut want = vec![0u8; dst.bytes()];
    conv.convert(&src, &mut want).unwrap();
    assert_eq!(&out.map_readable().unwrap()[..], &want[..]);
}

#[test]
fn int8_quantized_bgr_and_threads() {
    let run = |threads: &str| {
        let mut h = harness(&[
            ("model-width", "40"),
            ("model-height", "30"),
            ("model-colorspace", "bgr"),
            ("model-dtype", "int8"),
            ("model-quant-scale", "0.0078125"),
            ("model-quant-zero-point", "-1"),
            ("n-threads", threads),
        ]);
        h.set_src_caps(video_caps(VideoFormat::Yuy2, 100, 50));
        let frame = patterned(200 * 50, |i| (i % 251) as u8);
        let out = h.push_and_pull(frame).unwrap();
        assert!(out_caps(&mut h).contains("types=(string)int8, dimensions=(string)3:40:30:1"));
        let m = meta_of(&out);
        assert_eq!((m.quant_channels, m.quant_scales[0], m.quant_zero_points[0]), (1, 0.0078125, -1));
        let bytes = out.map_readable().unwrap().to_vec();
        bytes
    };
    assert_eq!(run("1"), run("3"), "threads change nothing but speed");
}

#[test]
fn converted_video_output_uses_the_pool_pitch() {
    let mut h = harness(&[("model-width", "321"), ("model-height", "200"), ("model-colorspace", "rgba")]);
    h.set_src_caps(video_caps(VideoFormat::Nv12, 640, 480));
    h.set_sink_caps(gst::Caps::builder("video/x-raw").field("format", "RGBA").build());
    let out = h.push_and_pull(gst::Buffer::with_size(640 * 720).unwrap()).unwrap();
    let vm = out.meta::<gst_video::VideoMeta>().expect("a video meta from the pool");
    assert_eq!(vm.stride()[0], 1344, "RGBA 321 at a 64-byte pitch");
    assert_eq!(meta_of(&out).strides(), &[1344, 4, 1]);
}

#[test]
fn passthrough_output_is_the_input_dmabuf() {
    let mut h = harness(&[]);
    h.set_src_caps(video_caps(VideoFormat::Rgb, 64, 48));
    let fd = memfd(64 * 48 * 3);
    let out = h.push_and_pull(fd_buffer(&fd, 64 * 48 * 3)).unwrap();
    let mem = out.peek_memory(0);
    let dmabuf = mem.downcast_memory_ref::<gst_allocators::DmaBufMemory>().expect("still the DMA-BUF memory");
    let out_id = file_identity(unsafe { BorrowedFd::borrow_raw(dmabuf.fd()) }).unwrap();
    let in_id = file_identity(fd.as_fd()).unwrap();
    assert_eq!((out_id.dev, out_id.ino), (in_id.dev, in_id.ino), "same kernel buffer");
    let info = meta_of(&out);
    assert_ne!(info.buffer_id, 0, "imported");
    assert_eq!(info.dtype(), Some(edgefirst_tensor::DType::U8));
    assert_eq!((info.content_width, info.content_height, info.scale_x), (64, 48, 1.0));
}

/// Push `n` frames cycling over `bufs()`, returning the buffer ids the meta reported.
fn push_frames(h: &mut gst_check::Harness, n: usize, mut make: impl FnMut(usize) -> gst::Buffer) -> Vec<u64> {
    (0..n).map(|i| meta_of(&h.push_and_pull(make(i)).unwrap()).buffer_id).collect()
}

#[test]
fn cache_hits_recycled_gstmemory() {
    let mut h = harness(&[]);
    h.set_src_caps(video_caps(VideoFormat::Nv12, 64, 48));
    let size = 64 * 72;
    let fds = [memfd(size), memfd(size)];
    let bufs = [fd_buffer(&fds[0], size), fd_buffer(&fds[1], size)];
    let ids = push_frames(&mut h, 10, |i| bufs[i % 2].clone());
    assert_eq!((stat(&h, "import-misses"), stat(&h, "import-hits")), (2, 8));
    assert!(ids.iter().step_by(2).all(|&id| id == ids[0]) && ids[0] != ids[1]);
}

#[test]
fn cache_hits_fresh_gstmemory_and_dup_fds_over_the_same_memfds() {
    let mut h = harness(&[]);
    h.set_src_caps(video_caps(VideoFormat::Nv12, 64, 48));
    let size = 64 * 72;
    let fds = [memfd(size), memfd(size), memfd(size)];
    // Every frame: a new dup of the fd, a new GstMemory, a new GstBuffer.
    let ids = push_frames(&mut h, 12, |i| fd_buffer(&fds[i % 3], size));
    assert_eq!(stat(&h, "import-misses"), 3, "misses equal the number of distinct buffers");
    assert_eq!(stat(&h, "import-hits"), 9);
    assert_eq!(ids[0], ids[3]);
    assert_eq!(ids[1], ids[10]);
}

#[test]
fn recreated_memfds_never_hit_a_stale_entry() {
    let mut h = harness(&[]);
    h.set_src_caps(video_caps(VideoFormat::Gray8, 64, 48));
    let size = 64 * 48;
    let mut seen = Vec::new();
    for round in 0..3u8 {
        // Fresh memfds every round, the old ones closed and their buffers gone: the kernel may
        // hand out recycled inode numbers, which must not be served from the cache.
        let fds: Vec<OwnedFd> = (0..2).map(|_| memfd(size)).collect();
        for (k, fd) in fds.iter().enumerate() {
            let m = unsafe {
                libc::mmap(std::ptr::null_mut(), size, libc::PROT_WRITE, libc::MAP_SHARED, fd.as_raw_fd(), 0)
            };
            unsafe { std::ptr::write_bytes(m as *mut u8, 10 * round + k as u8, size) };
            unsafe { libc::munmap(m, size) };
        }
        for (k, fd) in fds.iter().enumerate() {
            let out = h.push_and_pull(fd_buffer(fd, size)).unwrap();
            let id = meta_of(&out).buffer_id;
            assert!(!seen.contains(&id), "round {round}: a new buffer got an old import");
            seen.push(id);
            assert!(
                out.map_readable().unwrap().iter().all(|&b| b == 10 * round + k as u8),
                "content of this round"
            );
        }
    }
    assert_eq!(stat(&h, "import-misses"), 6);
    assert_eq!(stat(&h, "import-hits"), 0);
}

#[test]
fn cache_is_bounded_and_counts_evictions() {
    let mut h = harness(&[("import-cache-size", "1")]);
    h.set_src_caps(video_caps(VideoFormat::Gray8, 16, 16));
    let fds = [memfd(256), memfd(256)];
    push_frames(&mut h, 6, |i| fd_buffer(&fds[i % 2], 256));
    assert_eq!((stat(&h, "import-misses"), stat(&h, "import-evictions")), (6, 5));
}

#[test]
fn two_memory_nv12_is_imported_as_two_planes() {
    let mut h = harness(&[]);
    h.set_src_caps(video_caps(VideoFormat::Nv12, 64, 48));
    let (luma, chroma) = (memfd(64 * 48), memfd(64 * 24));
    let mk = || {
        let mut b = fd_buffer(&luma, 64 * 48);
        {
            let b = b.get_mut().unwrap();
            let c = fd_buffer(&chroma, 64 * 24);
            b.append_memory(c.memory(0).unwrap()); // a reference, not a copy
            gst_video::VideoMeta::add_full(
                b,
                gst_video::VideoFrameFlags::empty(),
                VideoFormat::Nv12,
                64,
                48,
                &[0, 64 * 48],
                &[64, 64],
            )
            .unwrap();
        }
        b
    };
    let ids = push_frames(&mut h, 3, |_| mk());
    assert_eq!((stat(&h, "import-misses"), stat(&h, "import-hits")), (1, 2));
    assert!(ids[0] != 0 && ids.iter().all(|&i| i == ids[0]));
}

#[test]
fn lying_video_meta_and_short_buffers_are_errors() {
    let mut h = harness(&[]);
    h.set_src_caps(video_caps(VideoFormat::Nv12, 64, 48));
    let mut b = gst::Buffer::with_size(1000).unwrap();
    gst_video::VideoMeta::add_full(
        b.get_mut().unwrap(),
        gst_video::VideoFrameFlags::empty(),
        VideoFormat::Nv12,
        64,
        48,
        &[0, 3072],
        &[64, 64],
    )
    .unwrap();
    assert_eq!(h.push(b), Err(gst::FlowError::Error));
    let mut h = harness(&[]);
    h.set_src_caps(video_caps(VideoFormat::Rgba, 64, 48));
    assert_eq!(h.push(gst::Buffer::with_size(100).unwrap()), Err(gst::FlowError::Error));
}

#[test]
fn padded_rows_are_not_passed_off_as_a_dense_tensor() {
    let mut h = harness(&[]);
    h.set_src_caps(video_caps(VideoFormat::Rgb, 63, 8)); // 189-byte rows, GStreamer pads to 192
    assert_eq!(h.push(gst::Buffer::with_size(192 * 8).unwrap()), Err(gst::FlowError::Error));
}

#[test]
fn system_memory_passes_through_without_an_import() {
    let mut h = harness(&[]);
    h.set_src_caps(video_caps(VideoFormat::Yuy2, 64, 48));
    let out = h.push_and_pull(gst::Buffer::with_size(64 * 48 * 2).unwrap()).unwrap();
    assert_eq!(meta_of(&out).buffer_id, 0);
    assert_eq!(stat(&h, "import-misses"), 0);
}

#[test]
fn allocation_answer_announces_video_meta_and_offers_our_pool() {
    let mut h = harness(&[]);
    h.set_src_caps(video_caps(VideoFormat::Nv12, 320, 240));
    let mut q = gst::query::Allocation::new(Some(&video_caps(VideoFormat::Nv12, 320, 240)), true);
    assert!(h.srcpad().unwrap().peer_query(&mut q));
    assert!(q.find_allocation_meta::<gst_video::VideoMeta>().is_some());
    let (pool, size, min, _) = q.allocation_pools().next().expect("a pool is offered");
    let pool = pool.expect("with a pool object");
    assert!(pool.is::<gstedgefirst::BufferPool>(), "{}", pool.type_().name());
    assert_eq!(size as usize, 320 * 360);
    assert_eq!(min, 2);
}

#[test]
fn properties_keep_the_familiar_names_and_refuse_bad_values() {
    init();
    let el = gst::ElementFactory::make("edgefirsttensor").build().unwrap();
    assert_eq!(el.property::<u32>("fill-color"), 0x8080_80ff);
    assert!(el.property::<bool>("letterbox"));
    el.set_property("model-mean", "0.485,0.456,0.406");
    assert_eq!(el.property::<String>("model-mean"), "0.485,0.456,0.406");
    el.set_property("model-std", "0.5");
    assert_eq!(el.property::<String>("model-std"), "0.5,0.5,0.5");
    // A refused value keeps the previous one and stops the element at its start, with the reason.
    el.set_property("model-std", "1,0,1");
    assert_eq!(el.property::<String>("model-std"), "0.5,0.5,0.5", "a zero std is refused");
    el.set_property("model-mean", "a,b");
    assert_eq!(el.property::<String>("model-mean"), "0.485,0.456,0.406");
    assert!(el.set_state(gst::State::Paused).is_err(), "refused values stop the start");
    el.set_state(gst::State::Null).unwrap();
    el.set_property("model-std", "0.25");
    el.set_property("model-mean", "0.5");
    assert!(el.set_state(gst::State::Paused).is_ok(), "valid values again: it starts");
    el.set_state(gst::State::Null).unwrap();
    el.set_property_from_str("model-dtype", "float16");
    el.set_property_from_str("model-colorspace", "bgr");
    el.set_property_from_str("model-layout", "chw");
    for p in [
        "letterbox-scale",
        "letterbox-top",
        "letterbox-bottom",
        "letterbox-left",
        "letterbox-right",
        "import-hits",
    ] {
        assert!(
            !el.find_property(p).unwrap().flags().contains(glib::ParamFlags::WRITABLE),
            "{p} is read-only"
        );
    }
}

use gst::glib;

#[test]
fn the_yuv_matrix_follows_the_caps_colorimetry() {
    let convert = |colorimetry: &str| {
        let mut h = harness(&[("model-width", "16"), ("model-height", "16"), ("fit", "stretch")]);
        let caps = gst::Caps::builder("video/x-raw")
            .field("format", "NV12")
            .field("width", 32i32)
            .field("height", 32i32)
            .field("framerate", gst::Fraction::new(30, 1))
            .field("colorimetry", colorimetry)
            .build();
        h.set_src_caps(caps);
        let mut frame = gst::Buffer::with_size(32 * 48).unwrap();
        {
            let mut m = frame.get_mut().unwrap().map_writable().unwrap();
            m[..32 * 32].fill(120); // Y
            m[32 * 32..].iter_mut().enumerate().for_each(|(i, b)| *b = if i % 2 == 0 { 90 } else { 200 });
            // U, V
        }
        h.push_and_pull(frame).unwrap().map_readable().unwrap()[..3].to_vec()
    };
    let bt601 = convert("bt601");
    let bt709 = convert("bt709");
    assert_ne!(bt601, bt709, "the matrix changes with the caps");
    // Y=120, U=90, V=200 in BT.709 limited range: the red channel is well above the green.
    assert!(bt709[0] > 200 && bt709[1] < 120, "{bt709:?}");
}

#[test]
fn source_region_crops_before_the_fit() {
    let mut h = harness(&[("model-width", "32"), ("model-height", "32"), ("source-region", "64,0,64,64")]);
    h.set_src_caps(video_caps(VideoFormat::Gray8, 128, 64));
    // Left half dark, right half bright: the region is the bright half only.
    let frame = patterned(128 * 64, |i| if i % 128 < 64 { 10 } else { 240 });
    let out = h.push_and_pull(frame).unwrap();
    let m = meta_of(&out);
    assert_eq!((m.source_x, m.source_width, m.content_width, m.content_height), (64, 64, 32, 32));
    assert!(out.map_readable().unwrap().iter().all(|&b| b == 240));
    let el = h.element().unwrap();
    assert_eq!(el.property::<Option<String>>("source-region").as_deref(), Some("64,0,64,64"));
    el.set_property("source-region", "1,2");
    assert_eq!(el.property::<Option<String>>("source-region").as_deref(), Some("64,0,64,64"), "refused");
    // A region outside the frame is refused at caps time.
    let e = run_pipeline(
        "videotestsrc num-buffers=1 ! video/x-raw,format=RGB,width=64,height=48 \
         ! edgefirsttensor source-region=32,0,64,48 ! other/tensors ! fakesink",
    )
    .unwrap_err();
    assert!(e.contains("out of bounds"), "{e}");
}
