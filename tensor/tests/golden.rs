//! The resampling presets against the libraries they name (docs/resampling.md): OpenCV's
//! `cv2.resize` (INTER_LINEAR, INTER_AREA, INTER_CUBIC) and PIL's `Image.resize` (BILINEAR,
//! BICUBIC) on the deterministic images of tests/golden/make_golden.py, placed as the element
//! places them. `EDGEFIRST_GOLDEN_DIR` names the generator's output (scripts/test.sh makes it);
//! without it the test says it was skipped. Every preset must stay within one level of its
//! library on every content pixel (the PIL ones give Pillow's bytes), `bilinear` (1/256
//! weights, unchanged) included; the padding must be the fill.

use edgefirst_tensor::convert::{Colorspace, ConvertSpec, Converter, DstLayout, SrcImage};
use edgefirst_tensor::preprocess::{FitMode, Interpolation};
use edgefirst_tensor::{DType, PixelFormat};
use std::collections::BTreeMap;
use std::path::Path;

fn preset(name: &str) -> Interpolation {
    match name {
        "bilinear" => Interpolation::Bilinear,
        "area" => Interpolation::Area,
        "bilinear-antialias" => Interpolation::BilinearAntialias,
        "bicubic" => Interpolation::Bicubic,
        "bicubic-opencv" => Interpolation::BicubicOpencv,
        other => panic!("unknown preset {other}"),
    }
}

/// The most a content pixel may differ from the library, per preset: the PIL presets take
/// Pillow's own fixed-point weights and arithmetic (plan::PIL_STEPS) and give its bytes; the
/// OpenCV ones round their weights differently (1/256 bilinear, 2^-14 area and cubic against
/// OpenCV's 1/2048 and its truncating vertical pass).
fn tolerance(name: &str) -> u8 {
    match name {
        "bilinear-antialias" | "bicubic" => 0,
        _ => 1,
    }
}

#[test]
fn presets_match_opencv_and_pil() {
    let Some(dir) = std::env::var_os("EDGEFIRST_GOLDEN_DIR") else {
        println!(
            "golden: skipped (EDGEFIRST_GOLDEN_DIR unset; scripts/test.sh runs tests/golden/make_golden.py)"
        );
        return;
    };
    let dir = Path::new(&dir);
    let cases = std::fs::read_to_string(dir.join("cases.txt")).expect("cases.txt from make_golden.py");
    let mut images: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut worst: BTreeMap<String, (u8, f64)> = BTreeMap::new();
    let mut n = 0;
    println!("{:<48} {:>4} {:>8} {:>9}", "case", "max", "PSNR dB", ">1 level");
    for line in cases.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| f[i].parse::<usize>().unwrap();
        let (case, name, image) = (f[0], f[1], f[2]);
        let (sw, sh, dw, dh) = (num(3), num(4), num(6), num(7));
        let fit = match f[5] {
            "stretch" => FitMode::Stretch,
            "letterbox" => FitMode::Letterbox,
            "center-crop" => FitMode::CenterCrop,
            other => panic!("unknown fit {other}"),
        };
        let src = images
            .entry(image.to_string())
            .or_insert_with(|| std::fs::read(dir.join(format!("{image}.rgb"))).unwrap());
        assert_eq!(src.len(), sw * sh * 3, "{image}.rgb");
        let want = std::fs::read(dir.join(format!("{case}.rgb"))).unwrap();
        let dst = DstLayout::dense(dw, dh, Colorspace::Rgb, false, DType::U8);
        let spec = ConvertSpec {
            fit,
            interpolation: preset(name),
            fill: [114, 114, 114, 255],
            ..Default::default()
        };
        let conv = Converter::new(PixelFormat::Rgb, sw, sh, dst, &spec, 1).unwrap();
        // The generator's port of letterbox_rect places the picture where the converter does.
        let (r, s) = (conv.content().rect, conv.content().source);
        assert_eq!(
            [r.x, r.y, r.width, r.height, s.x, s.y, s.width, s.height],
            [8, 9, 10, 11, 12, 13, 14, 15].map(num),
            "{case}: content rect and source"
        );
        let img = SrcImage {
            format: PixelFormat::Rgb,
            width: sw,
            height: sh,
            planes: [(src, sw * 3), (&[], 0), (&[], 0)],
        };
        let mut got = vec![0u8; dst.bytes()];
        conv.convert(&img, &mut got).unwrap();
        let (mut max, mut sq, mut over) = (0u8, 0f64, 0);
        for y in 0..dh {
            for x in 0..dw {
                let at = (y * dw + x) * 3;
                let inside = (r.x..r.x + r.width).contains(&x) && (r.y..r.y + r.height).contains(&y);
                for c in 0..3 {
                    let (a, b) = (got[at + c], want[at + c]);
                    if !inside {
                        assert_eq!(a, 114, "{case}: padding at ({x},{y})");
                        continue;
                    }
                    let d = a.abs_diff(b);
                    max = max.max(d);
                    over += usize::from(d > 1);
                    sq += (d as f64).powi(2);
                }
            }
        }
        let mse = sq / (r.width * r.height * 3) as f64;
        let psnr = if mse == 0.0 { f64::INFINITY } else { 10.0 * (255.0f64 * 255.0 / mse).log10() };
        println!("{case:<48} {max:>4} {psnr:>8.2} {over:>9}");
        let w = worst.entry(name.to_string()).or_insert((0, f64::INFINITY));
        *w = (w.0.max(max), w.1.min(psnr));
        if max > tolerance(name) {
            failures.push(format!("{case}: max difference {max} > {}", tolerance(name)));
        }
        n += 1;
    }
    for (name, (max, psnr)) in &worst {
        println!("golden {name}: worst max {max}, lowest PSNR {psnr:.2} dB");
    }
    assert!(n >= 50, "only {n} cases in cases.txt");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
