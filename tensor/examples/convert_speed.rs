//! The conversion engine alone (no GStreamer), 1920×1080 → 640×640 letterboxed RGB: the best of
//! 60 runs per case, so a loaded machine still gives a repeatable figure. Optional argument: one
//! case, e.g. `Nv12U8`. `EDGEFIRST_CONVERT_SIMD=baseline` (or `avx2`) measures the narrower kernels;
//! `CONVERT_SPEED_RUNS=20000` times that many runs instead of 60 (long enough for a profiler);
//! `CONVERT_SPEED_FILTER=area` (or `nearest`, `bilinear-antialias`, `bicubic`, `bicubic-opencv`)
//! times that resampling filter instead of bilinear; `CONVERT_SPEED_THREADS=2` converts on that
//! many band threads; `CONVERT_SPEED_SOURCE=1600x900` sets the source size;
//! `CONVERT_SPEED_SITE=mpeg2` sites the chroma as camera caps without colorimetry do;
//! `CONVERT_SPEED_CHW=1` writes planar tensors; `CONVERT_SPEED_FRAMES=8` rotates frames;
//! `CONVERT_SPEED_PAGES=4k` keeps the frames in 4 KiB pages (as a camera's fd mapping);
//! `CONVERT_SPEED_PICTURE=1` times `convert_picture` (the padding written once, as the element's
//! pool tensors have it); `CONVERT_SPEED_PERFRAME=1` prints each rotating frame's own best and
//! median. Beside the best and the median, the best mean of 120 frames in a row: the element
//! benchmark's measure.
//!
//!     cargo run --release -p edgefirst-tensor --example convert-speed

use edgefirst_tensor::convert::{Colorspace, ConvertSpec, Converter, DstLayout, SrcImage};
use edgefirst_tensor::preprocess::{ChromaSite, Interpolation};
use edgefirst_tensor::{DType, PixelFormat};
fn main() {
    let interpolation = match std::env::var("CONVERT_SPEED_FILTER").as_deref() {
        Ok("nearest") => Interpolation::Nearest,
        Ok("area") => Interpolation::Area,
        Ok("bilinear-antialias") => Interpolation::BilinearAntialias,
        Ok("bicubic") => Interpolation::Bicubic,
        Ok("bicubic-opencv") => Interpolation::BicubicOpencv,
        Ok(other) if other != "bilinear" => panic!("unknown CONVERT_SPEED_FILTER {other}"),
        _ => Interpolation::Bilinear,
    };
    // `CONVERT_SPEED_SITE=mpeg2` (or `cosited`) sites the chroma as HD caps without colorimetry
    // do (GStreamer's default there, and the element benchmark's camera frames).
    let chroma_site = match std::env::var("CONVERT_SPEED_SITE").as_deref() {
        Ok("mpeg2") => ChromaSite::MPEG2,
        Ok("cosited") => ChromaSite::COSITED,
        Ok(other) if other != "centred" => panic!("unknown CONVERT_SPEED_SITE {other}"),
        _ => ChromaSite::CENTRED,
    };
    let spec = ConvertSpec { interpolation, chroma_site, ..ConvertSpec::default() };
    // `CONVERT_SPEED_SOURCE=1600x900` converts frames of that size instead.
    let (w, h) = std::env::var("CONVERT_SPEED_SOURCE")
        .ok()
        .and_then(|v| v.split_once('x').and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?))))
        .unwrap_or((1920, 1080));
    // `CONVERT_SPEED_FRAMES=32` rotates through that many frames (each read from DRAM, as a
    // camera's are) instead of converting one frame that stays in cache.
    let frames = std::env::var("CONVERT_SPEED_FRAMES").ok().and_then(|v| v.parse().ok()).unwrap_or(1usize);
    // `CONVERT_SPEED_OUT=160` makes a square tensor of that side instead of 640 (with a small
    // source: the same work on a frame that stays in the second-level cache).
    let side = std::env::var("CONVERT_SPEED_OUT").ok().and_then(|v| v.parse().ok()).unwrap_or(640usize);
    // `CONVERT_SPEED_CHW=1` writes planar (chw) tensors instead of interleaved (hwc) ones.
    let chw = std::env::var("CONVERT_SPEED_CHW").is_ok_and(|v| v == "1");
    // `CONVERT_SPEED_PICTURE=1`: the picture alone written, as into a pool's tensor.
    let picture = std::env::var("CONVERT_SPEED_PICTURE").is_ok_and(|v| v == "1");
    // `CONVERT_SPEED_PAGES=4k`: the frames in 4 KiB pages, as a camera's DMA-BUF or memfd mapping
    // is (the heap's large allocations take transparent huge pages where the kernel gives them).
    let small = std::env::var("CONVERT_SPEED_PAGES").is_ok_and(|v| v == "4k");
    let srcs: Vec<Vec<u8>> = (0..frames)
        .map(|i| {
            let mut v = Vec::<u8>::with_capacity(w * h * 4);
            if small {
                // SAFETY: the range is the vector's own allocation, not yet touched.
                unsafe { libc::madvise(v.as_mut_ptr().cast(), v.capacity(), libc::MADV_NOHUGEPAGE) };
            }
            v.resize(w * h * 4, 77u8 ^ i as u8);
            v
        })
        .collect();
    for (f, dt) in [
        (PixelFormat::Nv12, DType::U8),
        (PixelFormat::Nv12, DType::F32),
        (PixelFormat::I420, DType::U8),
        (PixelFormat::Yuy2, DType::U8),
        (PixelFormat::Yuy2, DType::F32),
        (PixelFormat::Rgba, DType::U8),
        (PixelFormat::Rgba, DType::F32),
        (PixelFormat::Rgb, DType::U8),
    ] {
        if let Some(only) = std::env::args().nth(1) {
            if format!("{f:?}{dt:?}") != only {
                continue;
            }
        }
        let dst = DstLayout::dense(side, side, Colorspace::Rgb, chw, dt);
        let threads = std::env::var("CONVERT_SPEED_THREADS").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
        let c = Converter::new(f, w, h, dst, &spec, threads).unwrap();
        // The planes where the crate's plane table puts them in a tightly packed frame.
        fn image(f: PixelFormat, w: usize, h: usize, src: &[u8]) -> SrcImage<'_> {
            let table = f.plane_table(w, h, f.min_row_stride(w, 1));
            let mut planes = [(&[][..], 0); 3];
            for (p, g) in planes.iter_mut().zip(&table) {
                *p = (&src[g.offset..g.offset + g.size], g.stride as usize);
            }
            SrcImage { format: f, width: w, height: h, planes }
        }
        let imgs: Vec<SrcImage<'_>> = srcs.iter().map(|s| image(f, w, h, s)).collect();
        let mut outv = vec![0u8; dst.bytes() + 64];
        let off = outv.as_ptr().align_offset(64);
        let out = &mut outv[off..off + dst.bytes()];
        for img in imgs.iter().cycle().take(5.max(frames)) {
            c.convert(img, out).unwrap();
        }
        let mut best = f64::MAX;
        let mut all = Vec::new();
        let runs = std::env::var("CONVERT_SPEED_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(60);
        for run in 0..runs {
            let img = &imgs[run % frames];
            let t = std::time::Instant::now();
            match picture {
                true => c.convert_picture(img, out).unwrap(),
                false => c.convert(img, out).unwrap(),
            }
            let ms = t.elapsed().as_secs_f64() * 1000.0;
            best = best.min(ms);
            all.push(ms);
        }
        if std::env::var("CONVERT_SPEED_PERFRAME").is_ok() {
            for i in 0..frames {
                let mut v: Vec<f64> = all.iter().skip(i).step_by(frames).copied().collect();
                v.sort_by(f64::total_cmp);
                println!("frame {i}: min {:.3} median {:.3}", v[0], v[v.len() / 2]);
            }
        }
        // The element benchmark's measure: the fastest 120 frames in a row, their mean.
        let stretch = all
            .windows(120.min(all.len()))
            .map(|w| w.iter().sum::<f64>() / w.len() as f64)
            .fold(f64::MAX, f64::min);
        all.sort_by(f64::total_cmp);
        println!(
            "{f:?} {dt:?} {interpolation:?} x{threads}: min {best:.3} ms, median {:.3} ms, best stretch {stretch:.3} ms",
            all[all.len() / 2]
        );
    }
}
