//! The conversion engine against hostile geometry: sizes, regions and strides past usize::MAX,
//! a bounded random walk over extreme values, normalization past f32 — always an error, never a
//! panic or a wrapped index.

mod convert_support;

use convert_support::*;

/// Source regions whose ends pass usize::MAX are refused, not wrapped round into the frame (in a
/// release build a wrapped x + width passed the bounds check, and the plan indexed from x).
#[test]
fn regions_past_usize_max_are_errors() {
    let m = usize::MAX;
    let regions = [
        Region::new(m - 1, 0, 2, 48),
        Region::new(0, m - 1, 64, 2),
        Region::new(m, m, m, m),
        Region::new(1, 0, m, 48),
        Region::new(0, 1, 64, m),
        Region::new(m / 2 + 1, 0, m / 2 + 1, 48),
        Region::new(63, 47, m - 62, m - 46),
    ];
    for format in [PixelFormat::Nv12, PixelFormat::Rgb, PixelFormat::Yuy2] {
        for interpolation in [Interpolation::Nearest, Interpolation::Bilinear].into_iter().chain(MULTI_TAP) {
            for fit in FITS {
                for region in regions {
                    let spec =
                        ConvertSpec { source_region: Some(region), interpolation, fit, ..Default::default() };
                    let dst = DstLayout::dense(32, 32, Colorspace::Rgb, false, DType::U8);
                    let what = || format!("{format:?} 64x48 {region:?} {interpolation:?} {fit:?}");
                    let made = no_panic(what, || Converter::new(format, 64, 48, dst, &spec, 1));
                    assert!(made.is_err(), "{} was accepted", what());
                }
            }
        }
    }
}

/// Destination sizes and strides whose byte counts overflow usize are refused.
#[test]
fn destination_sizes_past_usize_max_are_errors() {
    let m = usize::MAX;
    let dense = |w, h, cs, chw, dtype| {
        no_panic(|| format!("dense {w}x{h}"), || DstLayout::dense(w, h, cs, chw, dtype))
    };
    let mut layouts = vec![
        dense(m / 2, 1, Colorspace::Rgb, false, DType::U8),
        dense(m / 2, 2, Colorspace::Gray, false, DType::U8),
        dense(1, m / 2, Colorspace::Rgb, true, DType::F32),
        dense(m, m, Colorspace::Rgba, true, DType::F64),
        dense(1 << 40, 1 << 40, Colorspace::Rgb, false, DType::U8),
    ];
    let mut strided = DstLayout::dense(32, 32, Colorspace::Rgb, false, DType::U8);
    strided.row_stride = m / 4;
    layouts.push(strided);
    let mut planar = DstLayout::dense(32, 32, Colorspace::Rgb, true, DType::F32);
    planar.plane_stride = m / 2;
    layouts.push(planar);
    planar.plane_stride = m;
    planar.row_stride = m / 32;
    layouts.push(planar);
    for dst in layouts {
        let what = || format!("{dst:?}");
        let made =
            no_panic(what, || Converter::new(PixelFormat::Nv12, 64, 48, dst, &ConvertSpec::default(), 1));
        assert!(made.is_err(), "{} was accepted", what());
        no_panic(what, || dst.bytes());
    }
}

/// A source plane whose stride times rows overflows is refused, not wrapped to a small size that
/// the plane's bytes appear to hold.
#[test]
fn source_planes_past_usize_max_are_errors() {
    let dst = DstLayout::dense(32, 32, Colorspace::Rgb, false, DType::U8);
    let frame = Frame::random(PixelFormat::Nv12, 64, 48, 11);
    for interpolation in [Interpolation::Nearest, Interpolation::Bilinear] {
        let spec = ConvertSpec { interpolation, ..Default::default() };
        let conv = Converter::new(PixelFormat::Nv12, 64, 48, dst, &spec, 1).unwrap();
        // usize::MAX / 47 + 1: the luma plane's 47 row steps wrap round to a few bytes, which
        // the plane holds (the chroma plane's 23 likewise); the others wrap to huge sizes.
        for stride in [usize::MAX / 47 + 1, usize::MAX / 23 + 1, usize::MAX / 2, usize::MAX] {
            for plane in 0..2 {
                let mut img = frame.image();
                img.planes[plane].1 = stride;
                let mut out = vec![0u8; dst.bytes()];
                let what = || format!("plane {plane} stride {stride} {interpolation:?}");
                let r = no_panic(what, || conv.convert(&img, &mut out));
                assert!(r.is_err(), "{} was accepted", what());
            }
        }
    }
}

/// A bounded walk over hostile geometry: source sizes, regions, destination sizes and strides and
/// source plane strides and lengths, drawn from small values and extremes. `Converter::new` and
/// `convert` answer Ok or Err and never panic, and what they accept converts a real frame.
#[test]
fn random_geometry_never_panics() {
    let m = usize::MAX;
    let extremes = [0, 1, 2, 3, 1000, (1 << 24) + 1, u32::MAX as usize, m / 3, m / 2, m / 2 + 1, m - 1, m];
    let formats: Vec<PixelFormat> = formats().collect();
    let mut walk = Walk(0x853c_49e6_748f_ea9b);
    let (mut accepted, mut converted) = (0, 0);
    for iteration in 0..1000 {
        let format = walk.pick(&formats);
        let (sw, sh) = (walk.size(&extremes), walk.size(&extremes));
        let source_region = match walk.below(3) {
            0 => None,
            1 if (1..=40).contains(&sw) && (1..=40).contains(&sh) => {
                let (x, y) = (walk.below(sw), walk.below(sh));
                Some(Region::new(x, y, 1 + walk.below(sw - x), 1 + walk.below(sh - y)))
            }
            _ => {
                let (x, y) = (walk.size(&extremes).saturating_sub(1), walk.size(&extremes).saturating_sub(1));
                Some(Region::new(x, y, walk.size(&extremes), walk.size(&extremes)))
            }
        };
        let (dtype, cs, chw) = (walk.pick(DType::ALL), walk.pick(&COLORSPACES), walk.below(2) == 1);
        let (dw, dh) = (walk.size(&extremes), walk.size(&extremes));
        let mut dst = no_panic(|| format!("dense {dw}x{dh}"), || DstLayout::dense(dw, dh, cs, chw, dtype));
        match walk.below(6) {
            0 => dst.row_stride = walk.pick(&extremes),
            1 => dst.plane_stride = walk.pick(&extremes),
            2 => dst.row_stride = dst.row_stride.saturating_add(walk.below(9)),
            _ => {}
        }
        let spec = ConvertSpec {
            fit: walk.pick(&FITS),
            interpolation: walk.pick(&[
                Interpolation::Nearest,
                Interpolation::Bilinear,
                Interpolation::Area,
                Interpolation::BilinearAntialias,
                Interpolation::Bicubic,
                Interpolation::BicubicOpencv,
            ]),
            source_region,
            ..Default::default()
        };
        let what = || {
            format!(
                "iteration {iteration}: {format:?} {sw}x{sh} {:?} → {dst:?} {:?} {:?}",
                spec.source_region, spec.fit, spec.interpolation
            )
        };
        let Ok(conv) = no_panic(what, || Converter::new(format, sw, sh, dst, &spec, 1)) else {
            continue;
        };
        accepted += 1;
        if sw * sh > 4096 || dst.bytes() > 1 << 20 {
            continue;
        }
        let frame = Frame::random(format, sw, sh, iteration);
        let mut img = frame.image();
        let plane = walk.below(format.num_planes());
        match walk.below(5) {
            0 => img.planes[plane].1 = walk.pick(&extremes),
            1 => img.planes[plane].0 = &img.planes[plane].0[..walk.below(img.planes[plane].0.len() + 1)],
            _ => {}
        }
        let mut out = vec![0u8; dst.bytes() + 3 - walk.below(5)];
        let (len, stride, out_len) = (img.planes[plane].0.len(), img.planes[plane].1, out.len());
        let converting = || {
            format!(
                "{}, plane {plane} of {len} bytes at stride {stride}, {out_len} destination bytes",
                what()
            )
        };
        if no_panic(converting, || conv.convert(&img, &mut out)).is_ok() {
            converted += 1;
        }
    }
    assert!(
        accepted >= 250 && converted >= 120,
        "the walk converted too: {accepted} plans, {converted} frames"
    );
}

/// Mean, std and quantization each finite but together past f32 (a bias of -inf, and +inf from a
/// bright pixel: NaN) are refused when planned, not converted into NaN bytes.
#[test]
fn normalization_past_f32_is_refused() {
    let dst = DstLayout::dense(16, 16, Colorspace::Rgb, false, DType::U8);
    let spec =
        ConvertSpec { mean: [0.5; 3], std: [1e-30; 3], quantization: Some((1e-10, 0)), ..Default::default() };
    let made = no_panic(
        || "1e-30 std, 1e-10 scale".into(),
        || Converter::new(PixelFormat::Rgb, 16, 16, dst, &spec, 1),
    );
    if let Ok(conv) = made {
        let frame = Frame::flat(PixelFormat::Rgb, 16, 16, 255, 0);
        let mut out = vec![0u8; dst.bytes()];
        no_panic(|| "converting".into(), || conv.convert(&frame.image(), &mut out)).ok();
        panic!("accepted; converted a white frame to {:?}", &out[..3]);
    }
    let float = DstLayout::dense(16, 16, Colorspace::Rgb, false, DType::F32);
    let spec = ConvertSpec { mean: [0.5; 3], std: [1e-40; 3], ..Default::default() };
    assert!(Converter::new(PixelFormat::Rgb, 16, 16, float, &spec, 1).is_err(), "a bias of -inf");
}
