//! Unit tests of the preprocessing values and the letterbox geometry.
use super::*;

const LB: FitMode = FitMode::Letterbox;
const ST: FitMode = FitMode::Stretch;
const CC: FitMode = FitMode::CenterCrop;
const C: LetterboxPlacement = LetterboxPlacement::Center;
const TL: LetterboxPlacement = LetterboxPlacement::TopLeft;

fn close(a: impl Into<f64>, b: f64, tol: f64) -> bool {
    (a.into() - b).abs() <= tol
}

fn geom(src: (usize, usize), dst: usize, fit: FitMode) -> ContentRegion {
    letterbox_rect(src.0, src.1, dst, dst, fit, C).unwrap()
}

fn rect(x: usize, y: usize, w: usize, h: usize) -> Region {
    Region::new(x, y, w, h)
}

fn pads(r: &ContentRegion) -> [usize; 4] {
    [r.pad_left(), r.pad_top(), r.pad_right(), r.pad_bottom()]
}

#[test]
fn letterbox_rects_and_pads() {
    let hd = geom((1920, 1080), 640, LB);
    assert_eq!(hd.rect, rect(0, 140, 640, 360));
    assert_eq!(hd.source, rect(0, 0, 1920, 1080));
    assert_eq!(pads(&hd), [0, 140, 0, 140]);
    assert!(close(hd.scale, 1.0 / 3.0, 1e-12));
    assert!(close(hd.y0, 140.0 / 640.0, 1e-7) && close(hd.y1, 500.0 / 640.0, 1e-7));
    assert_eq!((hd.x0, hd.x1), (0.0, 1.0));

    let vga = geom((640, 480), 640, LB);
    assert_eq!((vga.rect, vga.scale), (rect(0, 80, 640, 480), 1.0));
    let portrait = geom((480, 640), 640, LB);
    assert_eq!(portrait.rect, rect(80, 0, 480, 640));
    assert_eq!((portrait.x0, portrait.x1), (0.125, 0.875));

    let tl = letterbox_rect(1920, 1080, 640, 640, LB, TL).unwrap();
    assert_eq!(tl.rect, rect(0, 0, 640, 360));
    assert_eq!(pads(&tl), [0, 0, 0, 280]);

    // 479 * 320 / 641 = 239.13 -> 239 rows; the 81 left over split 40/41.
    let odd = geom((641, 479), 320, LB);
    assert_eq!(odd.rect, rect(0, 40, 320, 239));
    assert_eq!(pads(&odd), [0, 40, 0, 41]);
    // 568 * 320 / 1000 = 181.76 rounds up, not down.
    assert_eq!(geom((1000, 568), 320, LB).rect, rect(0, 69, 320, 182));
    // An aspect ratio that would round to zero rows stays one row tall.
    assert_eq!(geom((1000, 1), 13, LB).rect.height, 1);
}

#[test]
fn geometry_invariants() {
    let sizes = [(7, 3, 5, 5), (1, 1000, 17, 13), (1000, 1, 13, 17), (3, 3, 64, 38)];
    for (sw, sh, dw, dh) in sizes {
        for (fit, placement) in [(LB, C), (LB, TL), (ST, C), (CC, C)] {
            let r = letterbox_rect(sw, sh, dw, dh, fit, placement).unwrap();
            assert_eq!(r.pad_left() + r.rect.width + r.pad_right(), dw);
            assert_eq!(r.pad_top() + r.rect.height + r.pad_bottom(), dh);
            let (d, s) = (r.rect, r.source);
            assert!(d.width >= 1 && d.height >= 1 && s.width >= 1 && s.height >= 1);
            assert!(s.x + s.width <= sw && s.y + s.height <= sh);
        }
    }
}

/// Sizes up to usize::MAX neither overflow nor break the invariants.
#[test]
fn extreme_sizes_do_not_overflow() {
    let m = usize::MAX;
    let sizes = [1, 2, 3, 641, m / 3, m / 2, m / 2 + 1, m - 1, m];
    for &sw in &sizes {
        for &sh in &sizes {
            for (dw, dh) in [(640, 640), (m, 1), (1, m), (m, m - 1), (m / 2, 3)] {
                for (fit, placement) in [(LB, C), (LB, TL), (ST, C), (CC, C)] {
                    let r = letterbox_rect(sw, sh, dw, dh, fit, placement).unwrap();
                    let (d, s) = (r.rect, r.source);
                    let what = format!("{sw}x{sh} -> {dw}x{dh} {fit:?}: {d:?} from {s:?}");
                    assert!(d.width >= 1 && d.height >= 1 && s.width >= 1 && s.height >= 1, "{what}");
                    assert!(d.x.checked_add(d.width).is_some_and(|e| e <= dw), "{what}");
                    assert!(d.y.checked_add(d.height).is_some_and(|e| e <= dh), "{what}");
                    assert!(s.x.checked_add(s.width).is_some_and(|e| e <= sw), "{what}");
                    assert!(s.y.checked_add(s.height).is_some_and(|e| e <= sh), "{what}");
                }
            }
        }
    }
    // The integer rounding: halves up, exact at the ends of the range.
    assert_eq!(mul_div_round(5, 1, 2), 3);
    assert_eq!(mul_div_round(7, 1, 2), 4);
    assert_eq!(mul_div_round(568, 320, 1000), 182);
    assert_eq!(mul_div_round(m, m, m), m);
    assert_eq!(mul_div_round(m, m - 1, m), m - 1);
    assert_eq!(mul_div_round(m, 1, 2), m / 2 + 1);
    for (a, b, c) in [(3, 7, 5), (1000, 568, 320), (479, 320, 641), (12, 1, 24), (11, 1, 24)] {
        assert_eq!(mul_div_round(a, b, c), (2 * a * b + c) / (2 * c), "{a} * {b} / {c}");
    }
}

#[test]
fn stretch_and_center_crop() {
    let s = geom((1920, 1080), 640, ST);
    assert_eq!(s.rect, rect(0, 0, 640, 640));
    assert!(close(s.scale_x, 1.0 / 3.0, 1e-12));
    assert!(close(s.scale_y, 640.0 / 1080.0, 1e-12));
    assert_eq!(s.scale, s.scale_x);

    let c = geom((1920, 1080), 640, CC);
    assert_eq!(c.rect, rect(0, 0, 640, 640));
    assert_eq!(c.source, rect(420, 0, 1080, 1080));
    assert!(close(c.scale, 640.0 / 1080.0, 1e-12));
    let [x0, y0, x1, y1] = unletter_box(&c, [0.0, 0.0, 1.0, 1.0]);
    assert!(close(x0, 420.0 / 1920.0, 1e-6) && close(x1, 1500.0 / 1920.0, 1e-6));
    assert_eq!((y0, y1), (0.0, 1.0));
    let tall = letterbox_rect(480, 640, 320, 160, CC, C).unwrap();
    assert_eq!(tall.source, rect(0, 200, 480, 240));
}

#[test]
fn zero_sizes_rejected() {
    let e = letterbox_rect(0, 10, 5, 5, LB, C).unwrap_err();
    let want = PreprocessError::ZeroSize { what: "source", width: 0, height: 10 };
    assert_eq!(e, want);
    assert_eq!(e.to_string(), "source size 0x10 has a zero dimension");
    assert!(letterbox_rect(10, 10, 5, 0, LB, C).is_err());
    assert!(PreprocessSpec::new(0, 640).validate().is_err());
    assert!(PreprocessSpec::new(640, 640).validate().is_ok());
}

#[test]
fn unletter_corners_and_clamping() {
    for placement in [C, TL] {
        let r = letterbox_rect(1920, 1080, 640, 640, LB, placement).unwrap();
        let (a, b) = unletter_norm(&r, r.x0, r.y0);
        let (c, d) = unletter_norm(&r, r.x1, r.y1);
        for (got, want) in [(a, 0.0), (b, 0.0), (c, 1.0), (d, 1.0)] {
            assert!(close(got, want, 1e-6), "{got} vs {want}");
        }
    }
    let r = geom((1920, 1080), 640, LB);
    // The padding bands clamp to the image edge.
    assert_eq!(unletter_norm(&r, 0.5, 0.0), (0.5, 0.0));
    let b = [0.25, 0.0, 0.75, 1.0];
    assert_eq!(unletter_box(&r, b), b);
    assert_eq!(unletter_px(&r, 640.0, 500.0), (1920.0, 1080.0));
    let (mx, my) = unletter_px(&r, 320.0, 320.0);
    assert!(close(mx, 960.0, 1e-3) && close(my, 540.0, 1e-3));
}

#[test]
fn round_trip_random_points() {
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
        (seed >> 40) as f32 / (1u64 << 24) as f32
    };
    let sizes = [(1920, 1080, 640, 640), (641, 479, 320, 320), (480, 640, 416, 256)];
    for (sw, sh, dw, dh) in sizes {
        for (fit, placement) in [(LB, C), (LB, TL), (ST, C), (CC, C)] {
            let r = letterbox_rect(sw, sh, dw, dh, fit, placement).unwrap();
            for _ in 0..200 {
                let (x, y) = (next(), next());
                let (dx, dy) = letter_norm(&r, x, y);
                if !((0.0..=1.0).contains(&dx) && (0.0..=1.0).contains(&dy)) {
                    assert_eq!(fit, CC, "only a crop may lose source points");
                    continue;
                }
                let (bx, by) = unletter_norm(&r, dx, dy);
                let ok = close(bx, x.into(), 1e-5) && close(by, y.into(), 1e-5);
                assert!(ok, "{fit:?} ({x}, {y}) came back as ({bx}, {by})");
            }
        }
    }
}

#[test]
fn quantization_round_trips() {
    let q = Quantization::per_tensor(1.0 / 255.0, -128);
    for (real, want) in [(0.0, -128), (1.0, 127), (2.0, 127), (-1.0, -128)] {
        assert_eq!(q.quantize(0, real, -128, 127), want, "{real}");
    }
    assert_eq!(q.quantize(0, f32::NAN, -128, 127), -128);
    for v in -128..=127 {
        assert_eq!(q.quantize(7, q.dequantize(7, v), -128, 127), v);
    }
    let u = Quantization::per_tensor(0.5, 10);
    // Ties go to the even step: +-2.5 to +-2, +-1.5 to +-2, +-0.5 to 0.
    assert_eq!(u.quantize(0, 1.25, 0, 255), 12);
    assert_eq!(u.quantize(0, -1.25, 0, 255), 8);
    assert_eq!(u.quantize(0, 0.75, 0, 255), 12);
    assert_eq!(u.quantize(0, -0.75, 0, 255), 8);
    assert_eq!(u.quantize(0, 0.25, 0, 255), 10);
    assert_eq!(u.quantize(0, -0.25, 0, 255), 10);
    assert_eq!(u.quantize(0, 1.75, 0, 255), 14);
    assert_eq!(u.dequantize(0, 14), 2.0);
    let tiny = Quantization::per_tensor(1e-30, i32::MAX);
    assert_eq!(tiny.quantize(0, 1.0, i32::MIN, i32::MAX), i32::MAX);
    assert_eq!(tiny.quantize(0, -1.0, i32::MIN, i32::MAX), i32::MIN);

    let pc = Quantization::per_channel(3, vec![0.1, 0.2, 0.4], vec![0, 5, -5]).unwrap();
    assert_eq!((pc.scale(1), pc.zero_point(2)), (0.2, -5));
    assert_eq!(pc.quantize(1, 1.0, -128, 127), 10);
    // 1.0 / 0.4 is 2.5 in f32: the even step, 2.
    assert_eq!(pc.quantize(2, 1.0, -128, 127), -3);
    for c in 0..3 {
        for v in -100..=100 {
            assert_eq!(pc.quantize(c, pc.dequantize(c, v), -128, 127), v);
        }
    }
    let one = Quantization::per_channel(0, vec![0.25], vec![3]).unwrap();
    assert_eq!((one.scale(2), one.zero_point(2)), (0.25, 3));

    let err = |s, z| Quantization::per_channel(0, s, z).unwrap_err().to_string();
    assert!(err(vec![], vec![]).contains("no scales"));
    assert!(err(vec![0.1, 0.2], vec![0]).contains("2 scales but 1 zero points"));
    assert!(err(vec![0.1, 0.0], vec![0, 0]).contains("scale[1] = 0"));
    assert!(err(vec![f32::INFINITY], vec![0]).contains("scale[0] = inf"));
}

/// RGB -> YUV straight from the Kr/Kb definitions, independent of the
/// matrix under test.
fn rgb_to_yuv(c: Colorimetry, rgb: [f64; 3]) -> [f64; 3] {
    let (kr, kb) = c.matrix_weights();
    let [r, g, b] = rgb.map(|v| v / 255.0);
    let y = kr * r + (1.0 - kr - kb) * g + kb * b;
    let (pb, pr) = ((b - y) / (2.0 * (1.0 - kb)), (r - y) / (2.0 * (1.0 - kr)));
    let (ys, yo, cs) = match c.range {
        ColorRange::Limited => (219.0, 16.0, 224.0),
        _ => (255.0, 0.0, 255.0),
    };
    [yo + ys * y, 128.0 + cs * pb, 128.0 + cs * pr]
}

fn yuv_to_rgb(c: Colorimetry, yuv: [f64; 3]) -> [f64; 3] {
    let (m, off) = c.yuv_to_rgb_matrix();
    let d = [yuv[0] - off[0], yuv[1] - off[1], yuv[2] - off[2]];
    m.map(|row| row[0] * d[0] + row[1] * d[1] + row[2] * d[2])
}

fn assert_rgb(got: [f64; 3], want: [f64; 3], tol: f64) {
    let ok = (0..3).all(|i| close(got[i], want[i], tol));
    assert!(ok, "{got:?} vs {want:?}");
}

#[test]
fn yuv_matrices() {
    let c = Colorimetry::default();
    assert_eq!(c, Colorimetry::BT601_LIMITED);
    assert_rgb(yuv_to_rgb(c, [16.0, 128.0, 128.0]), [0.0; 3], 1e-6);
    assert_rgb(yuv_to_rgb(c, [235.0, 128.0, 128.0]), [255.0; 3], 1e-6);
    let (m, off) = c.yuv_to_rgb_matrix();
    assert_eq!(off, [16.0, 128.0, 128.0]);
    // The widely published BT.601 studio-swing coefficients.
    let known = [(0, 1.164384), (2, 1.596027), (4, -0.391762), (5, -0.812968), (7, 2.017232)];
    for (k, want) in known {
        let got = m[k / 3][k % 3];
        assert!(close(got, want, 1e-6), "m[{}][{}] = {got}", k / 3, k % 3);
    }

    let (full709, red) = (Colorimetry::BT709_FULL, [255.0, 0.0, 0.0]);
    let yuv = rgb_to_yuv(full709, red);
    assert!(close(yuv[0], 0.2126 * 255.0, 1e-9));
    assert_rgb(yuv_to_rgb(full709, yuv), red, 1e-9);
    // Decoding BT.709 with the BT.601 matrix must visibly differ.
    assert!(yuv_to_rgb(Colorimetry::BT601_FULL, yuv)[1].abs() > 10.0);

    let colors = [red, [0.0, 255.0, 0.0], [0.0, 0.0, 255.0], [12.0, 200.0, 77.0]];
    for space in [ColorSpace::Bt601, ColorSpace::Bt709, ColorSpace::Bt2020] {
        for range in [ColorRange::Limited, ColorRange::Full] {
            let c = Colorimetry::new(space, range);
            for rgb in colors {
                assert_rgb(yuv_to_rgb(c, rgb_to_yuv(c, rgb)), rgb, 1e-9);
            }
        }
    }
}

#[test]
fn gst_colorimetry_strings() {
    use Colorimetry as K;
    let cases: [(Option<K>, &[&str]); 8] = [
        (Some(K::BT601_LIMITED), &["bt601", " bt601 ", "2:4:5:4", "2:2:5:4"]),
        (Some(K::BT601_FULL), &["jpeg", "1:4:0:0"]),
        (Some(K::BT709_LIMITED), &["bt709", "BT709", "smpte240m", "2:3:5:1", "2:5:6:6"]),
        (Some(K::BT709_FULL), &["sRGB", "1:3:5:1"]),
        (Some(K::BT2020_LIMITED), &["bt2020", "bt2100-pq", "bt2100-hlg", "2:6:14:9"]),
        (Some(K::BT2020_FULL), &["1:6:14:9"]),
        (None, &["1:1:5:1", "0:4:0:0", "2:0:0:0", "3:4:0:0", "2:4:0", "2:4:0:0:0"]),
        (None, &["a:b:c:d", "2:4:0:x", "", "bt999"]),
    ];
    for (want, strings) in cases {
        for s in strings {
            assert_eq!(K::from_gst_str(s), want, "{s:?}");
        }
    }
}

#[test]
fn rgb_triplet_parsing() {
    let imagenet = [0.485, 0.456, 0.406];
    assert_eq!(parse_rgb_triplet("0.485,0.456,0.406").unwrap(), imagenet);
    assert_eq!(parse_rgb_triplet(" 0.5 ").unwrap(), [0.5; 3]);
    assert_eq!(parse_rgb_triplet("1, 2 ,3").unwrap(), [1.0, 2.0, 3.0]);
    let msg = |s: &str| parse_rgb_triplet(s).unwrap_err().to_string();
    let pre = "invalid value: ";
    assert_eq!(msg("1,2"), format!("{pre}expected 1 or 3 values in \"1,2\", got 2"));
    assert_eq!(msg("a,b,c"), format!("{pre}'a' in \"a,b,c\" is not a number"));
    assert_eq!(msg("nan"), format!("{pre}'nan' in \"nan\" is not finite"));
    assert!(msg("1,inf,3").contains("'inf'") && msg("1,,3").contains("''"));
    assert_eq!(broadcast_rgb(&[2.0]).unwrap(), [2.0; 3]);
    assert!(broadcast_rgb(&[1.0, 2.0, 3.0, 4.0]).is_err());
    assert!(broadcast_rgb(&[f32::NAN]).is_err());
}

#[test]
fn normalization_and_pad_value() {
    let (id, inet) = (Normalization::identity(), Normalization::imagenet());
    assert!(id.is_identity() && !inet.is_identity());
    assert_eq!(id.apply(1, 255.0), 1.0);
    assert!(close(inet.apply(0, 255.0), (1.0 - 0.485) / 0.229, 1e-5));
    assert!(Normalization::new([0.0; 3], [1.0, 0.0, 1.0]).is_err());
    assert!(Normalization::new([f32::NAN, 0.0, 0.0], [1.0; 3]).is_err());

    let mut spec = PreprocessSpec::new(640, 640);
    assert!(close(spec.pad_value(0), 114.0 / 255.0, 1e-7));
    let region = spec.content_region(1920, 1080).unwrap();
    assert_eq!(region.rect, rect(0, 140, 640, 360));
    spec.normalization = inet;
    spec.pad = [0; 3];
    assert!(close(spec.pad_value(2), -0.406 / 0.225, 1e-5));
    spec.pad_space = PadSpace::Normalized;
    assert_eq!(spec.pad_value(2), 0.0);
    spec.normalization.std[1] = f32::INFINITY;
    assert!(spec.validate().is_err());
}
