//! The conversion engine against a plain f64 reference written from the definitions, over every
//! input format × colourspace × layout × fit on random images of odd sizes, every dtype,
//! normalization, quantization, colorimetry, nearest sampling, a source region, padded
//! destinations and threads.

mod convert_support;

use convert_support::*;

#[test]
fn every_format_colorspace_layout_and_fit_matches_the_reference() {
    let mut n = 0;
    for (i, format) in formats().enumerate() {
        let frame = Frame::random(format, 37, 23, i as u64);
        for cs in COLORSPACES {
            for chw in [false, true] {
                for fit in FITS {
                    let dst = DstLayout::dense(29, 31, cs, chw, DType::U8);
                    let spec = ConvertSpec { fit, fill: [10, 200, 30, 40], ..Default::default() };
                    check(&frame, dst, &spec, 1);
                    n += 1;
                }
            }
        }
    }
    assert_eq!(n, 15 * 4 * 2 * 3);
}

#[test]
fn every_dtype_with_normalization_and_quantization() {
    let frame = Frame::random(PixelFormat::Nv12, 41, 27, 7);
    for &dtype in DType::ALL {
        let dst = DstLayout::dense(33, 19, Colorspace::Rgb, true, dtype);
        check(&frame, dst, &ConvertSpec::default(), 1);
    }
    let imagenet =
        ConvertSpec { mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225], ..Default::default() };
    // The outputs with a fused colour-and-store kernel, in every channel count and layout.
    for source in [PixelFormat::Nv12, PixelFormat::Rgba, PixelFormat::Gray8] {
        let frame = Frame::random(source, 41, 27, 8);
        for cs in COLORSPACES {
            for chw in [false, true] {
                for (dtype, spec) in [
                    (DType::U8, ConvertSpec::default()),
                    (DType::I8, ConvertSpec::default()),
                    (DType::F32, imagenet.clone()),
                ] {
                    check(&frame, DstLayout::dense(35, 19, cs, chw, dtype), &spec, 1);
                }
            }
        }
    }
    for dtype in [DType::F16, DType::F32, DType::F64] {
        check(&frame, DstLayout::dense(33, 19, Colorspace::Rgb, false, dtype), &imagenet, 1);
    }
    let quant = |q, z| ConvertSpec { quantization: Some((q, z)), ..imagenet.clone() };
    check(&frame, DstLayout::dense(33, 19, Colorspace::Bgr, false, DType::I8), &quant(0.0187, -14), 1);
    check(&frame, DstLayout::dense(33, 19, Colorspace::Rgb, true, DType::U8), &quant(0.0187, 114), 1);
    check(
        &frame,
        DstLayout::dense(33, 19, Colorspace::Rgba, false, DType::U8),
        &ConvertSpec { quantization: Some((1.0 / 255.0, 0)), ..Default::default() },
        1,
    );
}

#[test]
fn colorimetry_nearest_region_placement_and_padded_destinations() {
    let frame = Frame::random(PixelFormat::Yuy2, 45, 29, 3);
    for colorimetry in [Colorimetry::BT601_FULL, Colorimetry::BT709_LIMITED, Colorimetry::BT2020_LIMITED] {
        check(
            &frame,
            DstLayout::dense(20, 20, Colorspace::Rgb, false, DType::U8),
            &ConvertSpec { colorimetry, ..Default::default() },
            1,
        );
    }
    let nearest = ConvertSpec { interpolation: Interpolation::Nearest, ..Default::default() };
    check(
        &Frame::random(PixelFormat::I420, 45, 29, 4),
        DstLayout::dense(60, 50, Colorspace::Rgb, true, DType::F32),
        &nearest,
        1,
    );
    let region = ConvertSpec {
        source_region: Some(Region::new(5, 3, 21, 17)),
        fit: FitMode::CenterCrop,
        ..Default::default()
    };
    check(
        &Frame::random(PixelFormat::Nv21, 45, 29, 5),
        DstLayout::dense(16, 9, Colorspace::Bgr, false, DType::U8),
        &region,
        1,
    );
    let top_left = ConvertSpec { placement: LetterboxPlacement::TopLeft, ..Default::default() };
    check(
        &Frame::random(PixelFormat::Rgb, 45, 29, 6),
        DstLayout::dense(32, 32, Colorspace::Rgb, false, DType::U8),
        &top_left,
        1,
    );
    // Destination rows and planes with padding (a pool buffer's 64-byte pitch).
    let mut padded = DstLayout::dense(21, 13, Colorspace::Rgb, false, DType::U8);
    padded.row_stride = 128;
    check(&frame, padded, &ConvertSpec::default(), 1);
    let mut planar = DstLayout::dense(21, 13, Colorspace::Rgb, true, DType::F32);
    planar.row_stride = 128;
    planar.plane_stride = 128 * 16;
    check(&frame, planar, &ConvertSpec::default(), 1);
}

#[test]
fn threads_give_the_same_bytes() {
    let frame = Frame::random(PixelFormat::Nv12, 161, 91, 9);
    let dst = DstLayout::dense(97, 103, Colorspace::Rgb, true, DType::F32);
    let one = check(&frame, dst, &ConvertSpec::default(), 1);
    let three = check(&frame, dst, &ConvertSpec::default(), 3);
    assert_eq!(one, three);
    // Threads take rows in chunks, and a multi-tap filter refills its window at each chunk's
    // start: every filter gives one thread's bytes, downscaling and upscaling.
    use edgefirst_tensor::preprocess::Interpolation as I;
    let wide = Frame::random(PixelFormat::Nv12, 640, 360, 4);
    for interpolation in [I::Nearest, I::Area, I::BilinearAntialias, I::Bicubic, I::BicubicOpencv] {
        let spec = ConvertSpec { interpolation, ..Default::default() };
        for (w, h) in [(213, 150), (700, 420)] {
            let dst = DstLayout::dense(w, h, Colorspace::Rgb, false, DType::U8);
            let mut one = vec![0u8; dst.bytes()];
            let mut three = vec![1u8; dst.bytes()];
            Converter::new(wide.format, wide.w, wide.h, dst, &spec, 1)
                .unwrap()
                .convert(&wide.image(), &mut one)
                .unwrap();
            Converter::new(wide.format, wide.w, wide.h, dst, &spec, 3)
                .unwrap()
                .convert(&wide.image(), &mut three)
                .unwrap();
            assert!(one == three, "{interpolation:?} to {w}x{h}: three threads differ from one");
        }
    }
}

#[test]
fn letterbox_geometry_and_fill() {
    let frame = Frame::random(PixelFormat::Rgb, 64, 32, 1);
    let dst = DstLayout::dense(32, 32, Colorspace::Rgb, false, DType::U8);
    let conv = Converter::new(
        PixelFormat::Rgb,
        64,
        32,
        dst,
        &ConvertSpec { fill: [1, 2, 3, 255], ..Default::default() },
        1,
    )
    .unwrap();
    assert_eq!(conv.content().rect, Region::new(0, 8, 32, 16));
    let mut out = vec![0u8; dst.bytes()];
    conv.convert(&frame.image(), &mut out).unwrap();
    assert_eq!(&out[..3], &[1, 2, 3], "top padding is the fill colour");
    assert_eq!(&out[31 * 96..31 * 96 + 3], &[1, 2, 3], "bottom padding too");
}

#[test]
fn bad_input_is_refused() {
    let dst = DstLayout::dense(8, 8, Colorspace::Rgb, false, DType::U8);
    let spec = ConvertSpec::default();
    assert!(Converter::new(PixelFormat::H264, 8, 8, dst, &spec, 1).is_err());
    let conv = Converter::new(PixelFormat::Nv12, 16, 16, dst, &spec, 1).unwrap();
    let frame = Frame::random(PixelFormat::Nv12, 16, 16, 2);
    let mut short = frame.image();
    short.planes[1].0 = &short.planes[1].0[..10];
    assert!(conv.convert(&short, &mut vec![0; dst.bytes()]).is_err(), "a short chroma plane");
    assert!(conv.convert(&frame.image(), &mut vec![0; dst.bytes() - 1]).is_err(), "a short destination");
    let other = Frame::random(PixelFormat::Nv12, 18, 16, 2);
    assert!(conv.convert(&other.image(), &mut vec![0; dst.bytes()]).is_err(), "another geometry");
    let norm = ConvertSpec { mean: [0.5; 3], ..Default::default() };
    assert!(
        Converter::new(PixelFormat::Rgb, 8, 8, dst, &norm, 1).is_err(),
        "mean/std on uint8 without quantization"
    );
    let region = ConvertSpec { source_region: Some(Region::new(10, 0, 8, 8)), ..Default::default() };
    assert!(Converter::new(PixelFormat::Rgb, 16, 16, dst, &region, 1).is_err());
    let q16 = ConvertSpec { quantization: Some((0.1, 0)), ..Default::default() };
    assert!(Converter::new(
        PixelFormat::Rgb,
        8,
        8,
        DstLayout::dense(8, 8, Colorspace::Rgb, false, DType::U16),
        &q16,
        1
    )
    .is_err());
}

#[test]
fn integer_ratio_downscales_take_the_direct_paths() {
    // 96x72 → 32x24 puts every tap on a source sample (weight 0): rows are gathered straight
    // from the frame, four-byte pixels in one gather each. Compared like every other case.
    for (i, format) in formats().enumerate() {
        let frame = Frame::random(format, 96, 72, 100 + i as u64);
        for cs in [Colorspace::Rgb, Colorspace::Rgba] {
            let spec = ConvertSpec { fit: FitMode::Stretch, ..Default::default() };
            check(&frame, DstLayout::dense(32, 24, cs, false, DType::U8), &spec, 1);
            check(&frame, DstLayout::dense(32, 32, cs, true, DType::F32), &ConvertSpec::default(), 2);
        }
        // Interleaved float32 RGB and BGR, normalized (AVX-512's finish reads an RGB source's
        // one-tap pixels from the frame itself): stretched, letterboxed, and 29 columns wide
        // (13 past the one block).
        let spec =
            ConvertSpec { mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225], ..Default::default() };
        let narrower = Frame::random(format, 87, 72, 150 + i as u64);
        for cs in [Colorspace::Rgb, Colorspace::Bgr] {
            let stretch = ConvertSpec { fit: FitMode::Stretch, ..spec };
            check(&frame, DstLayout::dense(32, 24, cs, false, DType::F32), &stretch, 1);
            check(&frame, DstLayout::dense(32, 32, cs, false, DType::F32), &spec, 1);
            check(&narrower, DstLayout::dense(29, 24, cs, false, DType::F32), &stretch, 1);
        }
    }
}

#[test]
fn frames_ending_at_their_last_pixel() {
    // No byte after a plane's last pixel: wide reads (16-byte windows, dword gathers) near the
    // end of a plane must fall back, never read past it or give up.
    for (i, format) in formats().enumerate() {
        let frame = Frame::random(format, 96, 72, 200 + i as u64);
        for (w, h, fit) in
            [(32, 24, FitMode::Stretch), (48, 48, FitMode::Letterbox), (61, 37, FitMode::Stretch)]
        {
            let dst = DstLayout::dense(w, h, Colorspace::Rgb, false, DType::U8);
            let spec = ConvertSpec { fit, ..Default::default() };
            for level in levels() {
                let mut conv = Converter::new(format, 96, 72, dst, &spec, 1).unwrap();
                conv.set_simd(level);
                let mut out = vec![0xeeu8; dst.bytes() + 7];
                conv.convert(&frame.image_exact(), &mut out).unwrap();
                compare(&frame, &dst, &spec, &out);
            }
        }
    }
}

/// No level stores past the tensor: a block's store that reaches beyond its own pixels (the AVX2
/// uint8 RGB finish writes each half's 12 bytes by a 16-byte store, the next block's store
/// covering the last 4) stops short of the last row's end. Pictures a whole number of blocks wide
/// (16, 32) and not (29), every output type and layout, every filter, into a buffer with 64
/// guard bytes after the tensor's. (Checked to fail with the AVX2 finish's overlapping stores
/// let into the row's last block.)
#[test]
fn no_level_stores_past_the_tensor() {
    let filters = std::iter::once(Interpolation::Bilinear).chain(MULTI_TAP);
    for interpolation in filters {
        for (i, format) in formats().enumerate() {
            let frame = Frame::random(format, 96, 24, 800 + i as u64);
            for (w, h) in [(32, 8), (16, 4), (29, 11)] {
                for dtype in [DType::U8, DType::I8, DType::F32] {
                    for chw in [false, true] {
                        for cs in COLORSPACES {
                            let spec =
                                ConvertSpec { fit: FitMode::Stretch, interpolation, ..Default::default() };
                            let dst = DstLayout::dense(w, h, cs, chw, dtype);
                            let mut conv = Converter::new(format, frame.w, frame.h, dst, &spec, 1).unwrap();
                            for level in levels() {
                                conv.set_simd(level);
                                let mut out = vec![0xeeu8; dst.bytes() + 64];
                                conv.convert(&frame.image(), &mut out).unwrap();
                                assert!(
                                    out[dst.bytes()..].iter().all(|&b| b == 0xee),
                                    "{interpolation:?} {format:?} → {w}x{h} {cs:?} chw={chw} {dtype:?} at {level:?} \
                                     wrote past the tensor"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Every kernel level stores the same bytes: for every input format, output type, layout and
/// normalization (colourspaces in turn), on an exact 2x upscale (taps a quarter and three
/// quarters between samples, so many values land exactly on .5 and the rounding rule decides)
/// a letterboxed downscale by a non-integer ratio and an exact 3×; bilinear at every output type, the
/// multi-tap filters at those with a fused finish (the levels differ in the finish alone).
#[test]
fn every_level_gives_the_same_bytes() {
    let levels = levels();
    assert_vector_levels_tested(&levels);
    let mut compared = 0;
    let filters = std::iter::once((Interpolation::Bilinear, DType::ALL))
        .chain(MULTI_TAP.map(|f| (f, &[DType::U8, DType::I8, DType::F32][..])));
    for (interpolation, dtypes) in filters {
        for (i, format) in formats().enumerate() {
            let cases = [
                (Frame::random(format, 16, 12, 300 + i as u64), (32, 24), FitMode::Stretch),
                (Frame::random(format, 37, 23, 400 + i as u64), (29, 17), FitMode::Letterbox),
                // Past 2×: four-byte pixels with both taps take windows of one output.
                (Frame::random(format, 101, 31, 500 + i as u64), (40, 12), FitMode::Stretch),
                // 3×, rows wide enough for AVX-512's whole-weight blocks (32 outputs a block).
                (Frame::random(format, 192, 48, 600 + i as u64), (64, 16), FitMode::Stretch),
            ];
            for (frame, (w, h), fit) in &cases {
                for (k, &dtype) in dtypes.iter().enumerate() {
                    for chw in [false, true] {
                        let cs = COLORSPACES[(i + k + usize::from(chw)) % 4];
                        for base in specs_for(dtype) {
                            let spec = ConvertSpec { fit: *fit, interpolation, ..base };
                            let dst = DstLayout::dense(*w, *h, cs, chw, dtype);
                            let mut conv = Converter::new(format, frame.w, frame.h, dst, &spec, 1).unwrap();
                            let mut outs = levels.iter().map(|&level| {
                                conv.set_simd(level);
                                let mut out = vec![0xeeu8; dst.bytes()];
                                conv.convert(&frame.image(), &mut out).unwrap();
                                out
                            });
                            let first = outs.next().unwrap();
                            for (out, level) in outs.zip(&levels[1..]) {
                                let esz = dtype.size();
                                let differs =
                                    out.chunks(esz).zip(first.chunks(esz)).position(|(a, b)| a != b);
                                if let Some(e) = differs {
                                    panic!(
                                    "{interpolation:?} {format:?} {}x{} → {w}x{h} {cs:?} chw={chw} {dtype:?} mean {:?} \
                                     std {:?} quantization {:?}: element {e} is {:?} at {level:?}, {:?} at {:?}",
                                    frame.w,
                                    frame.h,
                                    spec.mean,
                                    spec.std,
                                    spec.quantization,
                                    &out[e * esz..][..esz],
                                    &first[e * esz..][..esz],
                                    levels[0]
                                );
                                }
                                compared += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    // Where the CPU has wider levels than the baseline: every case above compared.
    assert!(levels.len() == 1 || compared >= 15 * 2 * (11 + 4 * 3) * 2 * (levels.len() - 1));
}

/// The multi-tap filters' vector blocks (the horizontal pass: 16 outputs a block with AVX-512, 8
/// with AVX2 and NEON) on frames wide enough to take them, at 1.5× to 6.5× downscales (one to
/// four 16-byte pieces per half block, sliding windows past four, 64- and 128-byte windows; PIL's
/// whole weights at 3×, 2.5× and 4×, whose edges are not whole), an upscale, a source region that
/// starts mid-chroma-sample and cosited chroma: every level gives the baseline's bytes, and the
/// vector levels' kernels did the horizontal pass where a plan applies.
#[test]
fn multi_tap_blocks_give_the_baseline_bytes() {
    use edgefirst_tensor::preprocess::ChromaSite;
    let levels = levels();
    assert_vector_levels_tested(&levels);
    let cases = [
        (480, 270, 160, 160, FitMode::Letterbox, None),
        (301, 211, 97, 61, FitMode::Stretch, None),
        (200, 150, 133, 100, FitMode::Stretch, None),
        (650, 364, 100, 56, FitMode::Stretch, None),
        (400, 240, 160, 96, FitMode::Stretch, None),
        (100, 80, 230, 170, FitMode::Stretch, None),
        (320, 240, 96, 96, FitMode::CenterCrop, Some(Region::new(3, 5, 301, 221))),
        // 1.25× (900p NV12's chroma): PIL's tied rows and columns.
        (250, 200, 200, 160, FitMode::Stretch, None),
        // 4×: PIL's triangle in four tap pairs (AVX-512 holds a table of four).
        (480, 240, 120, 60, FitMode::Stretch, None),
    ];
    for (i, format) in formats().enumerate() {
        for (j, &(w, h, dw, dh, fit, region)) in cases.iter().enumerate() {
            let frame = Frame::random(format, w, h, 900 + (i * 10 + j) as u64);
            for interpolation in MULTI_TAP {
                let site = if j % 2 == 1 { ChromaSite::COSITED } else { ChromaSite::CENTRED };
                let spec = ConvertSpec {
                    fit,
                    interpolation,
                    source_region: region,
                    chroma_site: site,
                    ..Default::default()
                };
                let dst = DstLayout::dense(dw, dh, Colorspace::Rgb, false, DType::U8);
                let mut conv = Converter::new(format, w, h, dst, &spec, 1).unwrap();
                let mut first = None;
                // AVX-512 and NEON with their exact box straight from the rows (VNNI, the dot
                // product, where the CPU has it) and summed rows first.
                #[cfg(target_arch = "aarch64")]
                let dot = Simd::Neon;
                #[cfg(not(target_arch = "aarch64"))]
                let dot = Simd::Avx512;
                let runs = levels.iter().flat_map(|&l| match l == dot {
                    true => vec![(l, true), (l, false)],
                    false => vec![(l, true)],
                });
                for (level, vnni) in runs {
                    conv.set_vnni(vnni);
                    let (out, counts) = convert_at(&mut conv, &frame, dst, level);
                    let sampled = counts.sampled;
                    let what = format!(
                        "{interpolation:?} {format:?} {w}x{h} -> {dw}x{dh} {fit:?} at {level:?} (vnni {vnni})"
                    );
                    same_as_first(&mut first, out, &what);
                    if level == Simd::Baseline {
                        assert_eq!(sampled, 0, "{what}");
                    } else if j == 0 {
                        // 3×: area's three or four taps fit fixed windows; the 13-tap bicubic of
                        // three- and four-byte pixels spans more than four 16-byte pieces per
                        // half block, and its windows slide per tap pair.
                        assert!(sampled > 0, "{what}: no vector block ran");
                    }
                }
            }
        }
    }
}

/// Float outputs store +0.0 for a zero, never -0.0 (a model or a checksum can tell them apart):
/// black frames (all-zero bytes, and YUV's black, which the matrix and the clamp bring to zero),
/// a zero mean, a negative std, black padding, at every level.
#[test]
fn float_outputs_have_no_negative_zero() {
    let specs = [
        ConvertSpec::default(),
        ConvertSpec { mean: [0.0; 3], std: [0.5, 0.25, 2.0], ..Default::default() },
        ConvertSpec { mean: [-0.0; 3], std: [-0.5, 0.25, -2.0], ..Default::default() },
        ConvertSpec { mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225], ..Default::default() },
    ];
    let (mut checked, mut failures) = (0, Vec::new());
    for (i, format) in formats().enumerate() {
        let frames = [
            Frame::flat(format, 24, 16, 0, 0),
            Frame::flat(format, 24, 16, 16, 128),
            Frame::random(format, 24, 16, 500 + i as u64),
        ];
        for frame in &frames {
            for dtype in [DType::F16, DType::F32, DType::F64] {
                for (k, cs) in COLORSPACES.into_iter().enumerate() {
                    let chw = k % 2 == 1;
                    for base in &specs {
                        let spec = ConvertSpec { fill: [0, 0, 0, 0], ..base.clone() };
                        // Letterboxed into a square: padding rows and content.
                        let dst = DstLayout::dense(20, 20, cs, chw, dtype);
                        let mut conv = Converter::new(format, frame.w, frame.h, dst, &spec, 1).unwrap();
                        for level in levels() {
                            conv.set_simd(level);
                            let mut out = vec![0u8; dst.bytes()];
                            conv.convert(&frame.image(), &mut out).unwrap();
                            let negative_zero = |b: &[u8]| match dtype {
                                DType::F16 => u16::from_ne_bytes(b.try_into().unwrap()) == 0x8000,
                                DType::F32 => f32::from_ne_bytes(b.try_into().unwrap()).to_bits() == 1 << 31,
                                _ => f64::from_ne_bytes(b.try_into().unwrap()).to_bits() == 1 << 63,
                            };
                            if let Some(at) = out.chunks(dtype.size()).position(negative_zero) {
                                failures.push(format!(
                                    "{format:?} → {cs:?} chw={chw} {dtype:?} {level:?} mean {:?} std {:?}: \
                                     -0.0 at element {at}",
                                    spec.mean, spec.std
                                ));
                            }
                            checked += 1;
                        }
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked}:\n{}",
        failures.len(),
        failures[..failures.len().min(20)].join("\n")
    );
    assert!(checked >= 15 * 3 * 3 * 4 * 4);
}

/// A converter set to a vector level takes that level's explicit kernels for the camera formats
/// (sampling straight from the frame and the fused finish), at every output type that has them,
/// hwc and chw; the baseline takes none. On aarch64 this is what tells `Simd::Neon` from a
/// baseline under another name.
#[test]
fn vector_levels_take_their_kernels() {
    let levels = levels();
    assert_vector_levels_tested(&levels);
    let sources = [
        PixelFormat::Nv12,
        PixelFormat::Nv21,
        PixelFormat::Yuy2,
        PixelFormat::Uyvy,
        PixelFormat::Rgba,
        PixelFormat::Rgb,
        PixelFormat::Bgrx,
        PixelFormat::I420,
        PixelFormat::Gray8,
    ];
    let imagenet =
        ConvertSpec { mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225], ..Default::default() };
    for (i, format) in sources.into_iter().enumerate() {
        // 1.5x and 3x downscales (NV12's taps on samples at 3x: one tap per row) and a 2x upscale.
        for (w, h, dw, dh) in [(96, 64, 64, 40), (192, 96, 64, 32), (32, 24, 64, 48)] {
            let frame = Frame::random(format, w, h, 700 + i as u64);
            for (dtype, spec) in [
                (DType::U8, ConvertSpec::default()),
                (DType::I8, ConvertSpec::default()),
                (DType::F32, imagenet.clone()),
            ] {
                for (chw, cs) in
                    [(false, Colorspace::Rgb), (true, Colorspace::Bgr), (false, Colorspace::Rgba)]
                {
                    let dst = DstLayout::dense(dw, dh, cs, chw, dtype);
                    let spec = ConvertSpec { fit: FitMode::Stretch, ..spec.clone() };
                    for &level in &levels {
                        let mut conv = Converter::new(format, w, h, dst, &spec, 1).unwrap();
                        conv.set_simd(level);
                        let mut out = vec![0u8; dst.bytes()];
                        conv.convert(&frame.image(), &mut out).unwrap();
                        let counts = conv.kernel_counts();
                        let what =
                            format!("{format:?} {w}x{h} → {dw}x{dh} {cs:?} chw={chw} {dtype:?} at {level:?}");
                        if level == Simd::Baseline {
                            assert_eq!(counts, Default::default(), "{what}: the baseline counts nothing");
                            continue;
                        }
                        // Every content pixel through the fused finish (widths are whole blocks),
                        // every component of it sampled by the level's kernels, but where a
                        // window load would pass the frame's last byte (the bottom rows of a
                        // packed frame take the baseline's rows there). An RGBA source's alpha
                        // only where the output has it.
                        let components = match format {
                            PixelFormat::Rgba if cs == Colorspace::Rgba => 4,
                            PixelFormat::Gray8 => 1,
                            _ => 3,
                        };
                        let pixels = (dw * dh) as u64;
                        assert_eq!(counts.finished, pixels, "{what}: fused finish");
                        // The output rows over the last two source rows (and one for rounding).
                        let bottom = 2 * dh.div_ceil(h) + 1;
                        let most = components * (dw * (dh - bottom)) as u64;
                        assert!(
                            (most..=components * pixels).contains(&counts.sampled),
                            "{what}: sampling {} of {}",
                            counts.sampled,
                            components * pixels
                        );
                    }
                }
            }
        }
    }
}

/// `convert_picture` writes exactly the picture's bytes, those `convert` writes there, and no
/// byte of the padding around it: letterboxed wide (padding rows) and tall (padding columns),
/// every filter, hwc and chw, uint8 and float32, one and two threads, at every level. Over a
/// destination that holds another frame's full conversion it gives this frame's full one.
#[test]
fn convert_picture_leaves_the_padding_and_writes_the_picture() {
    let levels = levels();
    assert_vector_levels_tested(&levels);
    let (mut checked, mut failures) = (0, Vec::new());
    for (format, (w, h)) in
        [(PixelFormat::Nv12, (62, 30)), (PixelFormat::Yuy2, (40, 58)), (PixelFormat::Rgba, (61, 29))]
    {
        let (one, two) = (Frame::random(format, w, h, 71), Frame::random(format, w, h, 72));
        for interpolation in [Interpolation::Bilinear, Interpolation::Area, Interpolation::BilinearAntialias]
        {
            for (dtype, chw) in [(DType::U8, false), (DType::U8, true), (DType::F32, false)] {
                for threads in [1, 2] {
                    let dst = DstLayout::dense(24, 24, Colorspace::Rgb, chw, dtype);
                    let spec = ConvertSpec { interpolation, fill: [9, 99, 199, 255], ..Default::default() };
                    let mut conv = Converter::new(format, w, h, dst, &spec, threads).unwrap();
                    let rect = conv.content().rect;
                    assert!(rect.width * rect.height < 24 * 24, "{format:?}: the test needs padding");
                    // Which destination bytes are the picture's.
                    let (esz, nc) = (dtype.size(), 3);
                    let picture = |at: usize| {
                        let (plane, rest) =
                            if chw { (at / dst.plane_stride, at % dst.plane_stride) } else { (0, at) };
                        let (y, x) =
                            (rest / dst.row_stride, rest % dst.row_stride / if chw { esz } else { nc * esz });
                        plane < nc
                            && (rect.y..rect.y + rect.height).contains(&y)
                            && (rect.x..rect.x + rect.width).contains(&x)
                    };
                    for &level in &levels {
                        conv.set_simd(level);
                        let case = format!(
                            "{format:?} {interpolation:?} {dtype:?} chw={chw} threads={threads} {level:?}"
                        );
                        let full = |frame: &Frame| {
                            let mut out = vec![0u8; dst.bytes()];
                            conv.convert(&frame.image(), &mut out).unwrap();
                            out
                        };
                        let (full_one, full_two) = (full(&one), full(&two));
                        let mut out = vec![0xa5u8; dst.bytes()];
                        conv.convert_picture(&one.image(), &mut out).unwrap();
                        let wrong =
                            (0..out.len()).find(|&i| out[i] != if picture(i) { full_one[i] } else { 0xa5 });
                        if let Some(i) = wrong {
                            failures.push(format!("{case}: byte {i} (picture: {})", picture(i)));
                        }
                        let mut out = full_one.clone();
                        conv.convert_picture(&two.image(), &mut out).unwrap();
                        if out != full_two {
                            failures.push(format!("{case}: over the last frame's tensor"));
                        }
                        assert_ne!(full_one, full_two, "{case}: two frames that differ");
                        checked += 1;
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} of {checked}:\n{}", failures.len(), failures.join("\n"));
    assert!(checked >= 3 * 3 * 3 * 2 * levels.len());
}
