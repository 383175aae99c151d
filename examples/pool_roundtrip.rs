//! appsrc → queue → appsink through the edgefirst pool: the producer fills frames it acquired
//! from `GstEdgeFirstBufferPool` (writing through the GstVideoMeta strides), the consumer reads
//! every byte back through the strides its buffers carry and checks it.
//!
//!     cargo run -p gstedgefirst --example pool-roundtrip [FORMAT WIDTH HEIGHT FRAMES]
//!
//! With no arguments it runs NV12 and RGBA at widths 321, 322, 640 and 1920. Exits non-zero on the
//! first wrong byte.

use gst::prelude::*;
use gst_video::prelude::*;
use gstedgefirst::BufferPool;

fn value(frame: usize, plane: usize, x: usize, y: usize) -> u8 {
    (frame * 31 + plane * 101 + x * 7 + y * 13) as u8
}

fn run(format: gst_video::VideoFormat, width: u32, height: u32, frames: usize) -> Result<String, String> {
    let info = gst_video::VideoInfo::builder(format, width, height)
        .fps(gst::Fraction::new(30, 1))
        .build()
        .map_err(|e| e.to_string())?;
    let caps = info.to_caps().map_err(|e| e.to_string())?;
    let pool = BufferPool::new();
    let mut config = pool.config();
    config.set_params(Some(&caps), 0, 2, 6);
    config.add_option(gst_video::BUFFER_POOL_OPTION_VIDEO_META);
    pool.set_config(config).map_err(|e| e.to_string())?;
    pool.set_active(true).map_err(|e| e.to_string())?;

    let pipeline = gst::parse::launch(
        "appsrc name=src format=time ! queue ! appsink name=sink sync=false max-buffers=4",
    )
    .map_err(|e| e.to_string())?
    .downcast::<gst::Pipeline>()
    .unwrap();
    let src = pipeline.by_name("src").unwrap().downcast::<gst_app::AppSrc>().unwrap();
    let sink = pipeline.by_name("sink").unwrap().downcast::<gst_app::AppSink>().unwrap();
    src.set_caps(Some(&caps));
    pipeline.set_state(gst::State::Playing).map_err(|e| e.to_string())?;

    let producer_info = info.clone();
    let producer = std::thread::spawn(move || -> Result<(), String> {
        let info = producer_info;
        for f in 0..frames {
            let mut buf = pool.acquire_buffer(None).map_err(|e| format!("acquire: {e:?}"))?;
            {
                let b = buf.get_mut().unwrap();
                b.set_pts(gst::ClockTime::from_mseconds(33 * f as u64));
                let mut frame = gst_video::VideoFrameRef::from_buffer_ref_writable(b, &info)
                    .map_err(|e| e.to_string())?;
                for p in 0..frame.n_planes() as usize {
                    let stride = frame.plane_stride()[p] as usize;
                    let (row, rows) = plane_extent(frame.info(), p);
                    let data = frame.plane_data_mut(p as u32).map_err(|e| e.to_string())?;
                    for y in 0..rows {
                        for x in 0..row {
                            data[y * stride + x] = value(f, p, x, y);
                        }
                    }
                }
            }
            src.push_buffer(buf).map_err(|e| format!("push: {e:?}"))?;
        }
        src.end_of_stream().map_err(|e| format!("eos: {e:?}"))?;
        Ok(())
    });

    let mut strides = Vec::new();
    let mut checked = 0usize;
    for f in 0..frames {
        let sample = sink.pull_sample().map_err(|_| format!("frame {f} never arrived"))?;
        let buffer = sample.buffer().unwrap();
        let meta = buffer.meta::<gst_video::VideoMeta>().ok_or("buffer without GstVideoMeta")?;
        strides = meta.stride().to_vec();
        if let Some(bad) = strides.iter().find(|s| *s % 64 != 0) {
            return Err(format!("stride {bad} is not 64-aligned"));
        }
        let mem = buffer.peek_memory(0);
        if !mem.is_memory_type::<gst_allocators::DmaBufMemory>() {
            return Err("memory is not fd-backed".into());
        }
        let frame =
            gst_video::VideoFrameRef::from_buffer_ref_readable(buffer, &info).map_err(|e| e.to_string())?;
        for p in 0..frame.n_planes() as usize {
            let stride = meta.stride()[p] as usize;
            let (row, rows) = plane_extent(&info, p);
            let data = frame.plane_data(p as u32).map_err(|e| e.to_string())?;
            for y in 0..rows {
                for x in 0..row {
                    let got = data[y * stride + x];
                    if got != value(f, p, x, y) {
                        return Err(format!("frame {f} plane {p} ({x},{y}): {got} != {}", value(f, p, x, y)));
                    }
                    checked += 1;
                }
            }
        }
    }
    producer.join().unwrap()?;
    pipeline.set_state(gst::State::Null).map_err(|e| e.to_string())?;
    Ok(format!("{frames} frames, strides {strides:?}, {checked} bytes checked"))
}

/// Visible bytes per row and rows of plane `p`.
fn plane_extent(info: &gst_video::VideoInfo, p: usize) -> (usize, usize) {
    let finfo = info.format_info();
    let (w, h) = (info.width(), info.height());
    let mut row = 0;
    let mut rows = 0;
    for c in 0..finfo.n_components() as usize {
        if finfo.plane()[c] as usize == p {
            let cw = finfo.scale_width(c as u8, w) as usize;
            row = row.max(finfo.poffset()[c] as usize + cw * finfo.pixel_stride()[c] as usize);
            rows = rows.max(finfo.scale_height(c as u8, h) as usize);
        }
    }
    (row.min(info.stride()[p] as usize), rows)
}

fn main() {
    gst::init().unwrap();
    gstedgefirst::plugin_register_static().unwrap();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cases: Vec<(gst_video::VideoFormat, u32, u32, usize)> = if args.len() == 4 {
        vec![(
            gst_video::VideoFormat::from_string(&args[0]),
            args[1].parse().unwrap(),
            args[2].parse().unwrap(),
            args[3].parse().unwrap(),
        )]
    } else {
        let mut v = Vec::new();
        for format in [gst_video::VideoFormat::Nv12, gst_video::VideoFormat::Rgba] {
            for (w, h) in [(321, 241), (322, 240), (640, 480), (1920, 1080)] {
                v.push((format, w, h, 8));
            }
        }
        v
    };
    let mut failed = 0;
    for (format, w, h, frames) in cases {
        match run(format, w, h, frames) {
            Ok(s) => println!("pool-roundtrip {format:?} {w}x{h}: ok, {s}"),
            Err(e) => {
                println!("pool-roundtrip {format:?} {w}x{h}: FAILED: {e}");
                failed += 1;
            }
        }
    }
    std::process::exit(if failed == 0 { 0 } else { 1 });
}
