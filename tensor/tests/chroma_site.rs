//! Chroma siting (`ConvertSpec::chroma_site`) against a reference written from the definition:
//! every output pixel decoded in f64 by interpolating each plane at the sited positions (luma
//! sample j at pixel centre j + 0.5; chroma sample k at `k · div + div / 2` centred, `k · div +
//! 0.5` cosited), with each filter's kernel as docs/resampling.md defines it, then BT.601
//! limited to RGB. Nothing here reads the converter's plan. The frames carry sharp colour edges
//! (U steps across a chroma column, V across a chroma row), where a siting error shows at once.

use edgefirst_tensor::convert::{Colorspace, ConvertSpec, Converter, DstLayout, Simd, SrcImage};
use edgefirst_tensor::preprocess::{ChromaSite, FitMode, Interpolation};
use edgefirst_tensor::{DType, PixelFormat};

const SUBSAMPLED: [PixelFormat; 7] = [
    PixelFormat::Nv12,
    PixelFormat::Nv21,
    PixelFormat::Nv16,
    PixelFormat::I420,
    PixelFormat::Yv12,
    PixelFormat::Yuy2,
    PixelFormat::Uyvy,
];

const SITES: [ChromaSite; 4] = [
    ChromaSite::CENTRED,
    ChromaSite::MPEG2,
    ChromaSite { h_cosited: false, v_cosited: true },
    ChromaSite::COSITED,
];

/// Chroma divisors (horizontal, vertical) of a format.
fn divs(format: PixelFormat) -> (usize, usize) {
    match format {
        PixelFormat::Nv12 | PixelFormat::Nv21 | PixelFormat::I420 | PixelFormat::Yv12 => (2, 2),
        _ => (2, 1),
    }
}

/// A frame from per-sample planes: `y` is w × h, `u` and `v` (w / hdiv) × (h / vdiv).
struct Frame {
    format: PixelFormat,
    w: usize,
    h: usize,
    y: Vec<f64>,
    u: Vec<f64>,
    v: Vec<f64>,
    bytes: Vec<Vec<u8>>,
    strides: Vec<usize>,
}

impl Frame {
    /// Luma a gentle diagonal ramp; U steps 80 → 176 between chroma columns `cw / 2 - 2` and
    /// `cw / 2 - 1`, V steps 180 → 76 between chroma rows `ch / 2 - 2` and `ch / 2 - 1` (on
    /// 4:2:2 V steps across the same column as U, the other way).
    fn edges(format: PixelFormat, w: usize, h: usize) -> Frame {
        let (hd, vd) = divs(format);
        let (cw, ch) = (w / hd, h / vd);
        let y: Vec<f64> = (0..w * h).map(|i| (60 + (i % w) + (i / w)) as f64).collect();
        let (ex, ey) = (cw / 2 - 1, ch / 2 - 1);
        let u: Vec<f64> = (0..cw * ch).map(|i| if i % cw < ex { 80.0 } else { 176.0 }).collect();
        let v: Vec<f64> = (0..cw * ch)
            .map(|i| {
                let before = if vd == 2 { i / cw < ey } else { i % cw < ex };
                if before {
                    180.0
                } else {
                    76.0
                }
            })
            .collect();
        let b = |v: f64| v as u8;
        let (bytes, strides) = match format {
            PixelFormat::Nv12 | PixelFormat::Nv21 | PixelFormat::Nv16 => {
                let swap = format == PixelFormat::Nv21;
                let uv = (0..cw * ch)
                    .flat_map(|i| if swap { [b(v[i]), b(u[i])] } else { [b(u[i]), b(v[i])] })
                    .collect();
                (vec![y.iter().map(|&v| b(v)).collect(), uv], vec![w, w])
            }
            PixelFormat::I420 | PixelFormat::Yv12 => {
                let (p1, p2) = if format == PixelFormat::I420 { (&u, &v) } else { (&v, &u) };
                (
                    vec![
                        y.iter().map(|&v| b(v)).collect(),
                        p1.iter().map(|&v| b(v)).collect(),
                        p2.iter().map(|&v| b(v)).collect(),
                    ],
                    vec![w, cw, cw],
                )
            }
            _ => {
                let mut row = Vec::with_capacity(2 * w * h);
                for r in 0..h {
                    for k in 0..cw {
                        let (y0, y1) = (b(y[r * w + 2 * k]), b(y[r * w + 2 * k + 1]));
                        let (uu, vv) = (b(u[r * cw + k]), b(v[r * cw + k]));
                        row.extend(match format {
                            PixelFormat::Yuy2 => [y0, uu, y1, vv],
                            _ => [uu, y0, vv, y1],
                        });
                    }
                }
                (vec![row], vec![2 * w])
            }
        };
        Frame { format, w, h, y, u, v, bytes, strides }
    }

    fn image(&self) -> SrcImage<'_> {
        let mut planes: [(&[u8], usize); 3] = [(&[], 0); 3];
        for (p, bytes) in self.bytes.iter().enumerate() {
            planes[p] = (bytes, self.strides[p]);
        }
        SrcImage { format: self.format, width: self.w, height: self.h, planes }
    }
}

/// A filter's kernel as docs/resampling.md defines it: the shape, its support, whether it
/// widens on a downscale (PIL's antialias), whether taps past an edge read the edge sample
/// (OpenCV) or are dropped and the rest renormalized (PIL).
#[derive(Clone, Copy)]
struct Kernel {
    shape: fn(f64) -> f64,
    support: f64,
    antialias: bool,
    replicate: bool,
}

fn triangle(x: f64) -> f64 {
    (1.0 - x.abs()).max(0.0)
}

fn keys(a: f64, x: f64) -> f64 {
    let x = x.abs();
    if x < 1.0 {
        ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    } else if x < 2.0 {
        (((x - 5.0) * x + 8.0) * x - 4.0) * a
    } else {
        0.0
    }
}

/// `(sample, weight)` pairs of one output on a grid of `n` samples, sample j at position j, for an
/// output centred at `u` that spans `step` samples. Nearest and area are not kernels here.
fn weights(interp: Interpolation, n: usize, u: f64, step: f64, lo_px: f64, hi_px: f64) -> Vec<(usize, f64)> {
    let clamp = |j: i64| j.clamp(0, n as i64 - 1) as usize;
    let kernel = match interp {
        Interpolation::Bilinear => {
            Kernel { shape: triangle, support: 1.0, antialias: false, replicate: true }
        }
        Interpolation::BicubicOpencv => {
            Kernel { shape: |x| keys(-0.75, x), support: 2.0, antialias: false, replicate: true }
        }
        Interpolation::Bicubic => {
            Kernel { shape: |x| keys(-0.5, x), support: 2.0, antialias: true, replicate: false }
        }
        Interpolation::BilinearAntialias => {
            Kernel { shape: triangle, support: 1.0, antialias: true, replicate: false }
        }
        Interpolation::Nearest => return vec![(clamp(u.round() as i64), 1.0)],
        // The output's footprint `[lo_px, hi_px]` (in samples) against each sample's
        // `[j - 0.5, j + 0.5]`; the parts past the grid's edges count for the edge samples.
        _ => {
            let mut w = Vec::new();
            for j in (lo_px - 1.0).floor() as i64..=(hi_px + 1.0).ceil() as i64 {
                let cover = hi_px.min(j as f64 + 0.5) - lo_px.max(j as f64 - 0.5);
                if cover > 0.0 {
                    w.push((clamp(j), cover / (hi_px - lo_px)));
                }
            }
            return w;
        }
    };
    let scale = if kernel.antialias { step.max(1.0) } else { 1.0 };
    let reach = kernel.support * scale;
    let mut w = Vec::new();
    for j in (u - reach).floor() as i64 - 1..=(u + reach).ceil() as i64 + 1 {
        let k = (kernel.shape)((j as f64 - u) / scale);
        if k == 0.0 {
            continue;
        }
        match (kernel.replicate, j >= 0 && j < n as i64) {
            (_, true) | (true, false) => w.push((clamp(j), k)),
            (false, false) => {}
        }
    }
    let sum: f64 = w.iter().map(|&(_, k)| k).sum();
    w.iter().map(|&(j, k)| (j, k / sum)).collect()
}

/// Positions along one axis of output `i` of `dn` over `n_px` pixels, on a grid of samples each
/// `div` pixels, sample 0's centre `off` pixels in: (centre, footprint low, high) in samples, and
/// the step in samples. Nearest takes the source pixel under the centre, then the sample nearest
/// to that pixel's centre (ties to the lower sample).
fn place(
    interp: Interpolation,
    i: usize,
    dn: usize,
    n_px: usize,
    div: usize,
    off: f64,
) -> (f64, f64, f64, f64) {
    let s = n_px as f64 / dn as f64;
    let to_samples = |px: f64| (px - off) / div as f64;
    let centre_px = (i as f64 + 0.5) * s;
    let u = match interp {
        Interpolation::Nearest => {
            let at = to_samples(centre_px.floor() + 0.5);
            (at - 0.5).ceil()
        }
        _ => to_samples(centre_px),
    };
    (u, to_samples(i as f64 * s), to_samples((i + 1) as f64 * s), s / div as f64)
}

/// Plane `g` (`gw` × `gh` samples, each `div` pixels) sampled for output (ox, oy) of a `dw` × `dh`
/// stretch of the `w` × `h` frame: horizontal then vertical, in f64.
#[allow(clippy::too_many_arguments)]
fn sample(
    interp: Interpolation,
    g: &[f64],
    (gw, gh): (usize, usize),
    (hd, vd): (usize, usize),
    (offx, offy): (f64, f64),
    (w, h): (usize, usize),
    (dw, dh): (usize, usize),
    (ox, oy): (usize, usize),
) -> f64 {
    let (ux, lx, hx, sx) = place(interp, ox, dw, w, hd, offx);
    let (uy, ly, hy, sy) = place(interp, oy, dh, h, vd, offy);
    let (wx, wy) = (weights(interp, gw, ux, sx, lx, hx), weights(interp, gh, uy, sy, ly, hy));
    // PIL's presets round each pass to a byte (half up, clamped), as Pillow's 8-bit resampler
    // stores its horizontal pass and its result (docs/resampling.md).
    let pil = matches!(interp, Interpolation::Bicubic | Interpolation::BilinearAntialias);
    let pass = |v: f64| if pil { (v + 0.5).floor().clamp(0.0, 255.0) } else { v };
    pass(wy.iter().map(|&(r, ky)| ky * pass(wx.iter().map(|&(c, kx)| kx * g[r * gw + c]).sum::<f64>())).sum())
}

/// BT.601 limited range to RGB from its definition (Kr 0.299, Kb 0.114; Y 16..235, C 16..240),
/// clamped to 0..255.
fn bt601(y: f64, u: f64, v: f64) -> [f64; 3] {
    let (kr, kb) = (0.299, 0.114);
    let yy = (y - 16.0) / 219.0;
    let (pb, pr) = ((u - 128.0) / 224.0, (v - 128.0) / 224.0);
    let r = yy + 2.0 * (1.0 - kr) * pr;
    let b = yy + 2.0 * (1.0 - kb) * pb;
    let g = (yy - kr * r - kb * b) / (1.0 - kr - kb);
    [r, g, b].map(|c| (c * 255.0).clamp(0.0, 255.0))
}

/// The reference RGB of a stretch to `dw` × `dh` under `site`.
fn reference(frame: &Frame, interp: Interpolation, site: ChromaSite, dw: usize, dh: usize) -> Vec<f64> {
    let (hd, vd) = divs(frame.format);
    let (w, h) = (frame.w, frame.h);
    // Sample k's centre in pixels: k · div + div / 2 centred, k · div + 0.5 cosited.
    let off = |div: usize, cosited: bool| if cosited { 0.5 } else { div as f64 / 2.0 };
    let coff = (off(hd, site.h_cosited), off(vd, site.v_cosited));
    let mut out = Vec::with_capacity(dw * dh * 3);
    for oy in 0..dh {
        for ox in 0..dw {
            let at = (ox, oy);
            let y = sample(interp, &frame.y, (w, h), (1, 1), (0.5, 0.5), (w, h), (dw, dh), at);
            let chroma =
                |g: &[f64]| sample(interp, g, (w / hd, h / vd), (hd, vd), coff, (w, h), (dw, dh), at);
            out.extend(bt601(y, chroma(&frame.u), chroma(&frame.v)));
        }
    }
    out
}

fn levels() -> Vec<Simd> {
    let mut all = vec![Simd::Baseline];
    #[cfg(target_arch = "aarch64")]
    all.push(Simd::Neon);
    all.extend([Simd::Avx2, Simd::Avx512]);
    all.retain(|&l| l <= Simd::detect());
    all
}

/// The converter's RGB bytes at every level (which must agree to the byte).
fn convert(frame: &Frame, interp: Interpolation, site: ChromaSite, dw: usize, dh: usize) -> Vec<u8> {
    let spec =
        ConvertSpec { fit: FitMode::Stretch, interpolation: interp, chroma_site: site, ..Default::default() };
    let dst = DstLayout::dense(dw, dh, Colorspace::Rgb, false, DType::U8);
    let mut conv = Converter::new(frame.format, frame.w, frame.h, dst, &spec, 1).unwrap();
    let mut first: Option<Vec<u8>> = None;
    for level in levels() {
        conv.set_simd(level);
        let mut out = vec![0u8; dst.bytes()];
        conv.convert(&frame.image(), &mut out).unwrap();
        match &first {
            None => first = Some(out),
            Some(f) => assert!(
                *f == out,
                "{:?} {interp:?} {site:?} {dw}x{dh}: {level:?} differs from the baseline",
                frame.format
            ),
        }
    }
    first.unwrap()
}

fn max_diff(a: &[u8], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(&a, &b)| (a as f64 - b).abs()).fold(0.0, f64::max)
}

/// The largest difference allowed from the f64 reference: the final rounding (these scales put
/// every bilinear weight on its 1/256 grid, the multi-tap weights are within 2^-14 or 2^-22 of
/// the kernel's), and a PIL pass's tie that a weight's quantization tips the other way.
const TOLERANCE: f64 = 1.0;

/// Every subsampled format, siting and filter at 1:1, a 2× downscale and a 2× upscale: the
/// converter within `TOLERANCE` of the reference at that siting. Where the siting moves the
/// reference's chroma (every filter but nearest, whose picks coincide at 2:1), the reference of
/// the other siting on that axis is far off (more than 10 levels): the comparison can tell.
#[test]
fn each_siting_matches_its_definition() {
    let (w, h) = (48, 32);
    let filters = [
        Interpolation::Bilinear,
        Interpolation::Nearest,
        Interpolation::Area,
        Interpolation::BicubicOpencv,
        Interpolation::Bicubic,
        Interpolation::BilinearAntialias,
    ];
    let mut failures = Vec::new();
    let mut worst = std::collections::BTreeMap::new();
    for format in SUBSAMPLED {
        let frame = Frame::edges(format, w, h);
        let (_, vd) = divs(format);
        for interp in filters {
            for (dw, dh) in [(w, h), (w / 2, h / 2), (2 * w, 2 * h)] {
                // OpenCV's area upscale is its own formula, not a coverage: the reference does
                // the box (downscale) only.
                if interp == Interpolation::Area && dw > w {
                    continue;
                }
                for site in SITES {
                    if vd == 1 && site.v_cosited {
                        continue;
                    }
                    let got = convert(&frame, interp, site, dw, dh);
                    let want = reference(&frame, interp, site, dw, dh);
                    let d = max_diff(&got, &want);
                    let e = worst.entry(format!("{interp:?}")).or_insert(0.0f64);
                    *e = e.max(d);
                    if d > TOLERANCE {
                        failures.push(format!("{format:?} {interp:?} {site:?} {dw}x{dh}: off by {d:.2}"));
                    }
                    if interp != Interpolation::Nearest && site != ChromaSite::CENTRED {
                        let wrong = reference(&frame, interp, ChromaSite::CENTRED, dw, dh);
                        let off = max_diff(&got, &wrong);
                        if off <= 10.0 {
                            failures.push(format!(
                                "{format:?} {interp:?} {site:?} {dw}x{dh}: only {off:.2} from the \
                                 centred reference"
                            ));
                        }
                    }
                }
            }
        }
    }
    eprintln!("largest difference from the reference per filter: {worst:?}");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// `ChromaSite::from_gst_flags` against GStreamer's published `GstVideoChromaSite` values.
#[test]
fn gstreamer_chroma_site_flags() {
    let (unknown, none, h, v, alt) = (0, 1, 2, 4, 8);
    assert_eq!(ChromaSite::from_gst_flags(unknown), ChromaSite::CENTRED);
    assert_eq!(ChromaSite::from_gst_flags(none), ChromaSite::CENTRED, "jpeg");
    assert_eq!(ChromaSite::from_gst_flags(h), ChromaSite::MPEG2, "mpeg2");
    assert_eq!(ChromaSite::from_gst_flags(h | v), ChromaSite::COSITED, "cosited");
    assert_eq!(ChromaSite::from_gst_flags(h | v | alt), ChromaSite::COSITED, "dv");
    assert_eq!(ChromaSite::from_gst_flags(v), ChromaSite { h_cosited: false, v_cosited: true });
    assert_eq!(ConvertSpec::default().chroma_site, ChromaSite::CENTRED);
}

/// The siting touches subsampled chroma only: RGB, gray and luma give the same bytes whatever it
/// says, and so does a 4:2:2 frame's vertical siting.
#[test]
fn siting_leaves_full_resolution_axes_alone() {
    let (w, h) = (48, 32);
    for interp in [Interpolation::Bilinear, Interpolation::Bicubic] {
        let frame = Frame::edges(PixelFormat::Yuy2, w, h);
        let v_only = ChromaSite { h_cosited: false, v_cosited: true };
        assert_eq!(
            convert(&frame, interp, ChromaSite::CENTRED, 40, 20),
            convert(&frame, interp, v_only, 40, 20)
        );
        let rgb: Vec<u8> = (0..w * h * 3).map(|i| (i * 37 % 251) as u8).collect();
        let image = SrcImage {
            format: PixelFormat::Rgb,
            width: w,
            height: h,
            planes: [(&rgb, 3 * w), (&[], 0), (&[], 0)],
        };
        let run = |site| {
            let spec = ConvertSpec { interpolation: interp, chroma_site: site, ..Default::default() };
            let dst = DstLayout::dense(40, 20, Colorspace::Rgb, false, DType::U8);
            let conv = Converter::new(PixelFormat::Rgb, w, h, dst, &spec, 1).unwrap();
            let mut out = vec![0u8; dst.bytes()];
            conv.convert(&image, &mut out).unwrap();
            out
        };
        assert_eq!(run(ChromaSite::CENTRED), run(ChromaSite::COSITED));
    }
}
