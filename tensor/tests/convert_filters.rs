//! The multi-tap filters (area, bilinear-antialias, the two bicubics) on their own terms: flat
//! frames stay flat, integer ratios give the textbook weights, threads and wide downscales give
//! one thread's bytes, and YUV through each filter stays close to decode-then-resize.

mod convert_support;

use convert_support::*;

/// The multi-tap filters' weights sum to exactly one (plan::TAP_STEPS; PIL's to one within its
/// rounding, which its half-up shift absorbs): a flat frame of every format converts to the bytes
/// bilinear gives it, in every fit, at downscales up to 16x (many taps) and an upscale. And at the
/// source's own size each filter is the identity: every kernel is 1 at 0 and 0 at whole samples.
#[test]
fn multi_tap_filters_keep_flat_frames_flat_and_sizes_identical() {
    for format in formats() {
        for (w, h, dw, dh) in [(64, 48, 29, 17), (160, 128, 10, 8), (13, 9, 40, 31)] {
            let frame = Frame::flat(format, w, h, 77, 140);
            for fit in FITS {
                let dst = DstLayout::dense(dw, dh, Colorspace::Rgb, false, DType::U8);
                let convert = |interpolation| {
                    let spec = ConvertSpec { fit, interpolation, ..Default::default() };
                    let conv = Converter::new(format, w, h, dst, &spec, 1).unwrap();
                    let mut out = vec![0u8; dst.bytes()];
                    conv.convert(&frame.image_exact(), &mut out).unwrap();
                    out
                };
                let want = convert(Interpolation::Bilinear);
                for interpolation in MULTI_TAP {
                    assert!(
                        convert(interpolation) == want,
                        "{interpolation:?} {format:?} {w}x{h} -> {dw}x{dh} {fit:?}: a flat frame changed"
                    );
                }
            }
        }
    }
    for format in [PixelFormat::Rgb, PixelFormat::Bgra, PixelFormat::Gray8, PixelFormat::PlanarRgb] {
        let frame = Frame::random(format, 37, 23, 11);
        let dst = DstLayout::dense(37, 23, Colorspace::Rgb, false, DType::U8);
        let out = |interpolation| {
            let spec = ConvertSpec { fit: FitMode::Stretch, interpolation, ..Default::default() };
            let mut out = vec![0u8; dst.bytes()];
            Converter::new(format, 37, 23, dst, &spec, 1).unwrap().convert(&frame.image(), &mut out).unwrap();
            out
        };
        let nearest = out(Interpolation::Nearest);
        for interpolation in MULTI_TAP {
            assert!(out(interpolation) == nearest, "{interpolation:?} {format:?}: not the identity at 1:1");
        }
    }
}

/// Area at an integer ratio is the mean of each output's block, rounded to nearest (ties to
/// even); bilinear-antialias at 2x is PIL's triangle over four samples, weights 1/8, 3/8, 3/8,
/// 1/8 (PIL's rounding: half up), the tap past each edge dropped and the rest renormalized
/// (3/7, 3/7, 1/7).
#[test]
fn area_and_triangle_weights_at_integer_ratios() {
    let frame = Frame::random(PixelFormat::Gray8, 24, 16, 12);
    let px = |x: usize, y: usize| frame.byte(0, y, x);
    let run = |interpolation, dw, dh| {
        let dst = DstLayout::dense(dw, dh, Colorspace::Gray, false, DType::F32);
        let spec = ConvertSpec { fit: FitMode::Stretch, interpolation, ..Default::default() };
        let mut out = vec![0u8; dst.bytes()];
        Converter::new(PixelFormat::Gray8, 24, 16, dst, &spec, 1)
            .unwrap()
            .convert(&frame.image(), &mut out)
            .unwrap();
        out.chunks_exact(4)
            .map(|b| f32::from_ne_bytes(b.try_into().unwrap()) as f64 * 255.0)
            .collect::<Vec<_>>()
    };
    let area = run(Interpolation::Area, 8, 4);
    for y in 0..4 {
        for x in 0..8 {
            let mean = (0..4)
                .flat_map(|j| (0..3).map(move |i| (3 * x + i, 4 * y + j)))
                .map(|(a, b)| px(a, b))
                .sum::<f64>()
                / 12.0;
            assert!((area[y * 8 + x] - mean).abs() < 0.05, "area ({x},{y}): {} vs {mean}", area[y * 8 + x]);
        }
    }
    let tri = run(Interpolation::BilinearAntialias, 12, 16);
    for y in 0..16 {
        for x in 0..12 {
            let taps: Vec<(usize, f64)> = match x {
                0 => vec![(0, 3.0 / 7.0), (1, 3.0 / 7.0), (2, 1.0 / 7.0)],
                11 => vec![(21, 1.0 / 7.0), (22, 3.0 / 7.0), (23, 3.0 / 7.0)],
                _ => vec![(2 * x - 1, 0.125), (2 * x, 0.375), (2 * x + 1, 0.375), (2 * x + 2, 0.125)],
            };
            let want = (taps.iter().map(|&(i, w)| w * px(i, y)).sum::<f64>() + 0.5).floor();
            assert_eq!(tri[y * 12 + x].round(), want, "triangle ({x},{y})");
        }
    }
}

/// Converting twice, on one band and on three, gives the same bytes (each band's ring of filtered
/// rows starts empty; NV12 at 3×, blended down first under PIL's triangle, too); a 16x downscale
/// plans, and one past MAX_TAPS is refused, not allocated.
#[test]
fn multi_tap_threads_and_wide_downscales() {
    for interpolation in MULTI_TAP {
        for (w, h, dw, dh, fit) in
            [(161, 91, 97, 53, FitMode::Letterbox), (192, 108, 64, 36, FitMode::Stretch)]
        {
            let frame = Frame::random(PixelFormat::Nv12, w, h, 13);
            let dst = DstLayout::dense(dw, dh, Colorspace::Rgb, true, DType::F32);
            let spec = ConvertSpec { interpolation, fit, ..Default::default() };
            let run = |threads| {
                let conv = Converter::new(PixelFormat::Nv12, w, h, dst, &spec, threads).unwrap();
                let mut out = vec![0u8; dst.bytes()];
                conv.convert(&frame.image(), &mut out).unwrap();
                let first = out.clone();
                conv.convert(&frame.image(), &mut out).unwrap();
                assert!(first == out, "{interpolation:?} {w}x{h}: a second frame differs");
                out
            };
            assert!(run(1) == run(3), "{interpolation:?} {w}x{h}: bands differ");
        }
        let spec = ConvertSpec { interpolation, ..Default::default() };
        let wide = Frame::random(PixelFormat::Rgb, 640, 480, 14);
        let dst = DstLayout::dense(40, 30, Colorspace::Rgb, false, DType::U8);
        let conv = Converter::new(PixelFormat::Rgb, 640, 480, dst, &spec, 1).unwrap();
        conv.convert(&wide.image(), &mut vec![0u8; dst.bytes()]).unwrap();
        let tiny = DstLayout::dense(2, 2, Colorspace::Rgb, false, DType::U8);
        let refused = Converter::new(PixelFormat::Rgb, 8192, 8192, tiny, &spec, 1);
        assert!(
            interpolation == Interpolation::BicubicOpencv || refused.is_err(),
            "{interpolation:?}: a 4096x downscale was planned"
        );
    }
}

/// Through each filter, an NV12, YUY2 or I420 frame (chroma filtered at its own resolution) stays close
/// to the same frame decoded to RGB first (bilinear chroma upsampling, rounded to bytes) and then
/// resized: within 7 levels per pixel and 0.8 on average (measured: at most 6 and 0.65, on
/// 2.5x downscales to 2x upscales, and 3x by 2x, whose whole rows NV12 blends down first under
/// PIL's triangle: 4 and 0.53). The two differ by the chroma's extra
/// low-pass (the upsampling's triangle before the filter), the decoded bytes' rounding (0.5
/// level), and for the PIL presets the 8-bit rounding of Y, U and V between and after the passes
/// instead of R, G and B's, which the matrix amplifies (V to R by 1.4).
#[test]
fn yuv_through_each_filter_is_close_to_decode_then_resize() {
    let (w, h) = (96, 64);
    for format in [PixelFormat::Nv12, PixelFormat::Yuy2, PixelFormat::I420] {
        // Smooth luma with noise and chroma that varies over the frame: a camera's picture.
        let mut frame = Frame::flat(format, w, h, 0, 0);
        let mut state = 7u64;
        for (k, &(plane, off, step, hd, vd)) in comps(format).iter().enumerate() {
            let (start, stride) = frame.planes[plane];
            for r in 0..h.div_ceil(vd) {
                for c in 0..w.div_ceil(hd) {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let noise = ((state >> 60) as f64) - 7.5;
                    let (x, y) = ((c * hd) as f64 / w as f64, (r * vd) as f64 / h as f64);
                    let v = match k {
                        0 => 120.0 + 80.0 * (5.0 * x + 2.0 * y).sin() + noise,
                        1 => 128.0 + 40.0 * (3.0 * y - 2.0 * x).cos(),
                        _ => 128.0 + 40.0 * (4.0 * x + y).sin(),
                    };
                    frame.bytes[start + r * stride + off + step * c] = v.round().clamp(16.0, 235.0) as u8;
                }
            }
        }
        let full = DstLayout::dense(w, h, Colorspace::Rgb, false, DType::U8);
        let stretch = ConvertSpec { fit: FitMode::Stretch, ..Default::default() };
        let mut rgb = vec![0u8; full.bytes()];
        Converter::new(format, w, h, full, &stretch, 1).unwrap().convert(&frame.image(), &mut rgb).unwrap();
        let rgb_image = SrcImage {
            format: PixelFormat::Rgb,
            width: w,
            height: h,
            planes: [(&rgb, w * 3), (&[], 0), (&[], 0)],
        };
        for interpolation in MULTI_TAP {
            for (dw, dh, fit) in [
                (40, 40, FitMode::Letterbox),
                (31, 23, FitMode::Stretch),
                (200, 150, FitMode::Stretch),
                (32, 32, FitMode::Stretch),
            ] {
                let dst = DstLayout::dense(dw, dh, Colorspace::Rgb, false, DType::U8);
                let spec = ConvertSpec { fit, interpolation, ..Default::default() };
                let (mut direct, mut decoded) = (vec![0u8; dst.bytes()], vec![0u8; dst.bytes()]);
                Converter::new(format, w, h, dst, &spec, 1)
                    .unwrap()
                    .convert(&frame.image(), &mut direct)
                    .unwrap();
                Converter::new(PixelFormat::Rgb, w, h, dst, &spec, 1)
                    .unwrap()
                    .convert(&rgb_image, &mut decoded)
                    .unwrap();
                let diffs: Vec<u8> = direct.iter().zip(&decoded).map(|(a, b)| a.abs_diff(*b)).collect();
                let max = *diffs.iter().max().unwrap();
                let mean = diffs.iter().map(|&d| d as f64).sum::<f64>() / diffs.len() as f64;
                println!("{format:?} {interpolation:?} {dw}x{dh} {fit:?}: max {max}, mean {mean:.3}");
                assert!(
                    max <= 7 && mean <= 0.8,
                    "{format:?} {interpolation:?} {dw}x{dh} {fit:?}: max {max}, mean {mean:.3}"
                );
            }
        }
    }
}

/// `area` by a ratio of small whole numbers is an exact box (whole weights over one denominator,
/// exact integer sums): the vector levels (AVX-512, AVX2, NEON) sum the source rows first and
/// then filter across, the baseline filters across first, and every level gives the same bytes — uint8 and the
/// float32 values themselves — at 2×, 2.5×, 3×, 6.5× and 9×/6×, letterboxed, stretched and from
/// a source region at odd offsets, chroma centred and cosited, for every format.
#[test]
fn exact_area_sums_rows_first_with_the_same_bytes() {
    use edgefirst_tensor::preprocess::ChromaSite;
    let levels = levels();
    assert_vector_levels_tested(&levels);
    let cases = [
        (480, 270, 160, 160, FitMode::Letterbox, None),
        (400, 300, 200, 150, FitMode::Stretch, None),
        (500, 300, 200, 120, FitMode::Stretch, None),
        (650, 364, 100, 56, FitMode::Stretch, None),
        (900, 600, 100, 100, FitMode::Stretch, None),
        (320, 240, 100, 100, FitMode::Stretch, Some(Region::new(5, 7, 300, 200))),
    ];
    let mut rows_first = 0;
    for (i, format) in formats().enumerate() {
        for (j, &(w, h, dw, dh, fit, region)) in cases.iter().enumerate() {
            let frame = Frame::random(format, w, h, 2000 + (i * 10 + j) as u64);
            for (site, dtype) in [(ChromaSite::CENTRED, DType::U8), (ChromaSite::COSITED, DType::F32)] {
                let spec = ConvertSpec {
                    fit,
                    interpolation: Interpolation::Area,
                    source_region: region,
                    chroma_site: site,
                    ..Default::default()
                };
                let dst = DstLayout::dense(dw, dh, Colorspace::Rgb, false, dtype);
                let mut conv = Converter::new(format, w, h, dst, &spec, 1).unwrap();
                let mut first: Option<Vec<u8>> = None;
                for &level in &levels {
                    let (out, counts) = convert_at(&mut conv, &frame, dst, level);
                    let made = counts.rows_first;
                    let what =
                        format!("{format:?} {w}x{h} -> {dw}x{dh} {fit:?} {region:?} {dtype:?} at {level:?}");
                    same_as_first(&mut first, out, &what);
                    if level == Simd::Baseline {
                        assert_eq!(made, 0, "{what}: the baseline filters across first");
                    } else if format == PixelFormat::Nv12 && j == 0 {
                        // Y, U and V of every content pixel (640 x 360 of a 3x letterbox).
                        assert_eq!(made, 3 * 160 * 90, "{what}");
                    }
                    rows_first += made;
                }
            }
        }
    }
    if levels.len() > 1 {
        assert!(rows_first > 1_000_000, "{rows_first} outputs summed rows first");
    }
}

/// PIL's filters and an exact box into 8-bit RGB and BGR from an RGB source: at AVX-512 and NEON
/// (the box where the level has its dot products) and at AVX2 (PIL's filters) the vertical pass's
/// bytes (the box's quads rounded as the finish rounds) go to the output as they are, interleaved
/// or planar (`KernelCounts::interleaved`), and give the baseline's bytes, uint8 and int8, hwc
/// and chw, at 3×, 2.5× and a letterbox, on rows with whole 64-pixel steps and a tail. No other
/// output (gray, RGBA, float32, normalized and quantized) and no YUV source takes
/// that path.
#[test]
fn byte_filters_go_to_rgb_outputs_as_they_are() {
    let levels = levels();
    assert_vector_levels_tested(&levels);
    let cases = [
        (600, 300, 200, 100, FitMode::Stretch),
        (500, 250, 200, 100, FitMode::Stretch),
        (480, 270, 200, 200, FitMode::Letterbox),
    ];
    let (mut interleaved, mut boxes, mut at_avx2, mut side_by_side) = (0, 0, 0, 0);
    // Per level (`levels`' order): the pixels that went straight to the output.
    let mut at_level = vec![0u64; levels.len()];
    // Per level: the pixels of an exact box among them.
    let mut boxes_at = vec![0u64; levels.len()];
    for (i, format) in formats().enumerate() {
        for &(w, h, dw, dh, fit) in &cases {
            let frame = Frame::random(format, w, h, 1300 + i as u64);
            for interpolation in
                [Interpolation::BilinearAntialias, Interpolation::Bicubic, Interpolation::Area]
            {
                for (cs, dtype, chw, mean) in [
                    (Colorspace::Rgb, DType::U8, false, None),
                    (Colorspace::Bgr, DType::U8, true, None),
                    (Colorspace::Bgr, DType::I8, false, None),
                    (Colorspace::Rgb, DType::I8, true, None),
                    (Colorspace::Rgba, DType::U8, false, None),
                    (Colorspace::Gray, DType::U8, false, None),
                    (Colorspace::Rgb, DType::F32, false, None),
                    (Colorspace::Bgr, DType::F32, false, Some([0.485f32, 0.456, 0.406])),
                    (Colorspace::Rgb, DType::U8, false, Some([0.4f32, 0.5, 0.6])),
                ] {
                    let mut spec = ConvertSpec { fit, interpolation, ..Default::default() };
                    if let Some(m) = mean {
                        spec.mean = m;
                        spec.std = [0.2, 0.25, 0.3];
                        if !dtype.is_float() {
                            spec.quantization = Some((0.02, 3));
                        }
                    }
                    let dst = DstLayout::dense(dw, dh, cs, chw, dtype);
                    let mut conv = Converter::new(format, w, h, dst, &spec, 1).unwrap();
                    let mut first: Option<Vec<u8>> = None;
                    for (li, &level) in levels.iter().enumerate() {
                        let (out, counts) = convert_at(&mut conv, &frame, dst, level);
                        let made = counts.interleaved;
                        let what = format!(
                            "{interpolation:?} {format:?} {w}x{h} -> {dw}x{dh} {cs:?} {dtype:?} chw={chw} \
                             mean {mean:?} at {level:?}"
                        );
                        let plain = matches!(cs, Colorspace::Rgb | Colorspace::Bgr)
                            && matches!(dtype, DType::U8 | DType::I8)
                            && mean.is_none();
                        #[cfg(target_arch = "aarch64")]
                        let neon = level == Simd::Neon;
                        #[cfg(not(target_arch = "aarch64"))]
                        let neon = false;
                        let vector = neon || matches!(level, Simd::Avx2 | Simd::Avx512);
                        assert!(made == 0 || (vector && plain), "{what}: interleaved {made}");
                        interleaved += made;
                        // One row of the components side by side: PIL's filters over three- or
                        // four-byte pixels into interleaved pixels, at AVX-512 alone.
                        let side = counts.side_by_side;
                        let pixels = matches!(
                            format,
                            PixelFormat::Rgb
                                | PixelFormat::Bgr
                                | PixelFormat::Rgba
                                | PixelFormat::Bgra
                                | PixelFormat::Rgbx
                                | PixelFormat::Bgrx
                        );
                        assert!(
                            side == 0
                                || (level == Simd::Avx512
                                    && plain
                                    && !chw
                                    && pixels
                                    && interpolation != Interpolation::Area),
                            "{what}: side by side {side}"
                        );
                        assert!(side <= made, "{what}: side by side {side} of {made}");
                        side_by_side += side;
                        if level == Simd::Avx2 {
                            at_avx2 += made;
                            assert!(
                                made == 0 || interpolation != Interpolation::Area,
                                "{what}: AVX2 has no byte box"
                            );
                        }
                        at_level[li] += made;
                        if interpolation == Interpolation::Area {
                            boxes += made;
                            boxes_at[li] += made;
                        }
                        same_as_first(&mut first, out, &what);
                    }
                }
            }
        }
    }
    if levels.contains(&Simd::Avx2) {
        assert!(at_avx2 > 0, "no row went from PIL's bytes to the output at AVX2");
    }
    #[cfg(target_arch = "aarch64")]
    if let Some(i) = levels.iter().position(|&l| l == Simd::Neon) {
        assert!(at_level[i] > boxes_at[i], "no row went from PIL's bytes to the output at NEON");
        // The byte quads need the dot product.
        if std::arch::is_aarch64_feature_detected!("dotprod")
            && std::env::var_os("EDGEFIRST_CONVERT_VNNI").is_none()
        {
            assert!(boxes_at[i] > 0, "no row went from the box's quads to the output at NEON");
        }
    }
    if levels.contains(&Simd::Avx512) {
        assert!(interleaved > boxes + at_avx2, "no row went from PIL's bytes to the output at AVX-512");
        assert!(side_by_side > 0, "no row went from one row of the components side by side");
        // The byte quads need VNNI.
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx512vnni") && std::env::var_os("EDGEFIRST_CONVERT_VNNI").is_none()
        {
            assert!(boxes > 0, "no row went from the box's quads to the output");
        }
    }
}

/// YUY2 and UYVY under PIL's triangle (blended down first): at AVX-512, AVX2 and NEON the
/// horizontal pass's bytes go to the fused finish, which widens them as it loads them
/// (`KernelCounts::from_bytes`), and give the baseline's bytes for uint8, int8 and float32
/// outputs (normalized too), hwc and chw, RGB, BGR, RGBA and gray, at 3×, 2.5×, a letterbox and
/// widths whose last columns the AVX2 and NEON finishes leave to the channel rows. The 4:2:0
/// sources (NV12, NV21, I420, YV12) take it too where every row's weights are whole (the 3×
/// case: the 2.34× letterbox and 2.46× stretch have tied or uneven rows and stay across first).
/// No other source or filter takes that path.
#[test]
fn yuy2_pil_bytes_go_to_the_finish_as_bytes() {
    let levels = levels();
    assert_vector_levels_tested(&levels);
    let cases = [
        (600, 300, 200, 100, FitMode::Stretch),
        (500, 250, 203, 101, FitMode::Stretch),
        (480, 270, 205, 205, FitMode::Letterbox),
    ];
    let mut at_level = vec![0u64; levels.len()];
    for (i, format) in formats().enumerate() {
        let packed = matches!(format, PixelFormat::Yuy2 | PixelFormat::Uyvy);
        let semi =
            matches!(format, PixelFormat::Nv12 | PixelFormat::Nv21 | PixelFormat::I420 | PixelFormat::Yv12);
        for (ci, &(w, h, dw, dh, fit)) in cases.iter().enumerate() {
            let frame = Frame::random(format, w, h, 1700 + i as u64);
            for interpolation in
                [Interpolation::BilinearAntialias, Interpolation::Area, Interpolation::Bicubic]
            {
                for (cs, dtype, chw, mean) in [
                    (Colorspace::Rgb, DType::U8, false, false),
                    (Colorspace::Bgr, DType::I8, true, false),
                    (Colorspace::Rgba, DType::U8, false, false),
                    (Colorspace::Gray, DType::U8, false, false),
                    (Colorspace::Rgb, DType::F32, true, true),
                    (Colorspace::Bgr, DType::F32, false, false),
                ] {
                    let mut spec = ConvertSpec { fit, interpolation, ..Default::default() };
                    if mean {
                        spec.mean = [0.4, 0.5, 0.6];
                        spec.std = [0.2, 0.25, 0.3];
                    }
                    let dst = DstLayout::dense(dw, dh, cs, chw, dtype);
                    let mut conv = Converter::new(format, w, h, dst, &spec, 1).unwrap();
                    let mut first: Option<Vec<u8>> = None;
                    for (li, &level) in levels.iter().enumerate() {
                        let (out, counts) = convert_at(&mut conv, &frame, dst, level);
                        let made = counts.from_bytes;
                        let what = format!(
                            "{interpolation:?} {format:?} {w}x{h} -> {dw}x{dh} {cs:?} {dtype:?} chw={chw} \
                             mean={mean} at {level:?}"
                        );
                        let down_first =
                            (packed || semi && ci == 0) && interpolation == Interpolation::BilinearAntialias;
                        assert!(
                            made == 0 || (down_first && level != Simd::Baseline),
                            "{what}: from bytes {made}"
                        );
                        // 4:2:0 at 3×: every vector level's finish takes the bytes.
                        assert!(
                            !(semi && down_first && level != Simd::Baseline) || made > 0,
                            "{what}: 4:2:0 at 3× not from bytes"
                        );
                        assert!(made <= counts.finished, "{what}: {made} not all finished");
                        at_level[li] += made;
                        same_as_first(&mut first, out, &what);
                    }
                }
            }
        }
    }
    for (li, &level) in levels.iter().enumerate().skip(1) {
        assert!(at_level[li] > 0, "no YUY2 or UYVY row went from PIL's bytes to the finish at {level:?}");
    }
}
