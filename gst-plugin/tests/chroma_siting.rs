//! The caps' `chroma-site` reaches the converter: what `VideoInfo` reads from caps (and defaults
//! to without one), the element's output changing with the siting at a colour edge (and equal to
//! the tensor crate's converter told that siting), and the element against `videoconvert`, whose
//! chroma upsampling follows the siting too.

mod common;

use common::*;
use edgefirst_tensor::convert::{Colorspace, ConvertSpec, Converter, DstLayout, SrcImage};
use edgefirst_tensor::preprocess::{ChromaSite, Colorimetry};
use edgefirst_tensor::{DType, PixelFormat};

/// NV12 caps at `w` × `h` with `extra` fields (a chroma-site, a colorimetry).
fn nv12_caps(w: u32, h: u32, extra: &str) -> gst::Caps {
    format!("video/x-raw,format=NV12,width={w},height={h},framerate=30/1{extra}").parse().unwrap()
}

/// An NV12 frame (tight: Y stride w, UV stride w) with a gentle luma ramp, U stepping 80 → 176
/// at chroma column `w / 4 + 1` and V stepping 180 → 76 at chroma row `h / 4 + 1`: a sharp colour
/// edge each way, an odd number of chroma samples in.
fn edge_frame(w: usize, h: usize) -> Vec<u8> {
    let mut f = vec![0u8; w * h * 3 / 2];
    for y in 0..h {
        for x in 0..w {
            f[y * w + x] = (70 + (x + y) / 16) as u8;
        }
    }
    for r in 0..h / 2 {
        for k in 0..w / 2 {
            let at = w * h + r * w + 2 * k;
            f[at] = if k < w / 4 + 1 { 80 } else { 176 };
            f[at + 1] = if r < h / 4 + 1 { 180 } else { 76 };
        }
    }
    f
}

fn buffer(bytes: &[u8]) -> gst::Buffer {
    gst::Buffer::from_slice(bytes.to_vec())
}

fn bytes_of(b: &gst::Buffer) -> Vec<u8> {
    b.map_readable().unwrap().to_vec()
}

/// What `gst_video_info_from_caps` (GStreamer 1.22) gives, read through
/// `ChromaSite::from_gst_flags`. With a colorimetry in the caps, the caps' chroma-site. Without
/// one, the YUV defaults by height (`set_default_colorimetry`): up to 576 lines `none` (centred),
/// above `h-cosited` (mpeg2), whatever chroma-site the caps name. The element and videoconvert
/// both take the VideoInfo's value.
#[test]
fn caps_chroma_site_as_video_info_reads_it() {
    init();
    let site = |caps: gst::Caps| {
        let info = gst_video::VideoInfo::from_caps(&caps).unwrap();
        ChromaSite::from_gst_flags(info.chroma_site().bits())
    };
    let named = [
        ("jpeg", ChromaSite::CENTRED),
        ("none", ChromaSite::CENTRED),
        ("mpeg2", ChromaSite::MPEG2),
        ("dv", ChromaSite::COSITED),
        ("cosited", ChromaSite::COSITED),
        ("v-cosited", ChromaSite { h_cosited: false, v_cosited: true }),
    ];
    for ((w, h), default) in [((640, 480), ChromaSite::CENTRED), ((1920, 1080), ChromaSite::MPEG2)] {
        assert_eq!(site(nv12_caps(w, h, "")), default, "{w}x{h}, no chroma-site");
        for (name, want) in named {
            for colorimetry in ["bt601", "bt709"] {
                let caps = nv12_caps(w, h, &format!(",colorimetry={colorimetry},chroma-site={name}"));
                assert_eq!(site(caps), want, "{w}x{h} {colorimetry} {name}");
            }
            assert_eq!(site(nv12_caps(w, h, &format!(",chroma-site={name}"))), default, "{w}x{h} {name}");
        }
    }
}

/// The element's tensor for one frame under `caps`.
fn element_rgb(caps: gst::Caps, frame: &[u8]) -> Vec<u8> {
    let mut h = harness(&[]);
    h.set_src_caps(caps);
    bytes_of(&h.push_and_pull(buffer(frame)).unwrap())
}

/// The tensor crate's converter on the same frame, told `site`.
fn converter_rgb(frame: &[u8], w: usize, h: usize, site: ChromaSite) -> Vec<u8> {
    let spec =
        ConvertSpec { chroma_site: site, colorimetry: Colorimetry::BT601_LIMITED, ..Default::default() };
    let dst = DstLayout::dense(w, h, Colorspace::Rgb, false, DType::U8);
    let conv = Converter::new(PixelFormat::Nv12, w, h, dst, &spec, 1).unwrap();
    let image = SrcImage {
        format: PixelFormat::Nv12,
        width: w,
        height: h,
        planes: [(&frame[..w * h], w), (&frame[w * h..], w), (&[], 0)],
    };
    let mut out = vec![0u8; dst.bytes()];
    conv.convert(&image, &mut out).unwrap();
    out
}

fn max_diff(a: &[u8], b: &[u8]) -> u8 {
    a.iter().zip(b).map(|(&a, &b)| a.abs_diff(b)).max().unwrap_or(0)
}

/// `chroma-site=mpeg2` against `jpeg` on the same frame: the outputs differ at the edge (by tens
/// of levels) and each is the converter's for its siting, to the byte.
#[test]
fn mpeg2_and_jpeg_caps_change_the_output_at_a_colour_edge() {
    init();
    let (w, h) = (64, 48);
    let frame = edge_frame(w, h);
    let caps = |site: &str| nv12_caps(w as u32, h as u32, &format!(",colorimetry=bt601,chroma-site={site}"));
    let jpeg = element_rgb(caps("jpeg"), &frame);
    let mpeg2 = element_rgb(caps("mpeg2"), &frame);
    let dv = element_rgb(caps("dv"), &frame);
    assert_eq!(jpeg, converter_rgb(&frame, w, h, ChromaSite::CENTRED));
    assert_eq!(mpeg2, converter_rgb(&frame, w, h, ChromaSite::MPEG2));
    assert_eq!(dv, converter_rgb(&frame, w, h, ChromaSite::COSITED));
    let (a, b) = (max_diff(&jpeg, &mpeg2), max_diff(&mpeg2, &dv));
    eprintln!("jpeg vs mpeg2: {a} levels; mpeg2 vs dv: {b}");
    assert!(a >= 20 && b >= 20, "jpeg vs mpeg2 {a}, mpeg2 vs dv {b}");
    // Away from the edges the siting changes nothing: chroma is flat there. Row 2, columns 2..20.
    let row = |v: &[u8]| v[2 * w * 3 + 6..2 * w * 3 + 60].to_vec();
    assert_eq!(row(&jpeg), row(&mpeg2));
}

/// `videoconvert` (chroma-mode full, its default linear chroma resampler, no dither) to RGB at
/// the same size against the element, NV12 640×480 with sharp colour edges both ways, for `jpeg`
/// and `mpeg2` caps. Tolerance 5 levels: videoconvert's 8-bit fixed-point matrix is already 2–4
/// levels from the definition on flat colour (measured: Y 71, U 80, V 180 gives it R 145, G 37
/// where BT.601 gives 147.0 and 40.5, as the element stores), and its upsampled chroma is rounded
/// to a byte before the matrix, which amplifies it by up to 2. The element told a wrong siting is
/// 41–51 levels off, so the comparison does see the siting.
///
/// Measured and printed, not held: `cosited` (h and v), where videoconvert 1.22 differs from the
/// definition on the one luma row midway between two chroma rows at the V edge (82 levels there,
/// within 5 elsewhere): it does not interpolate vertically cosited chroma there.
#[test]
fn videoconvert_agrees_at_each_siting() {
    init();
    let (w, h) = (640usize, 480usize);
    let frame = edge_frame(w, h);
    let mut report = Vec::new();
    let sites =
        [("jpeg", ChromaSite::CENTRED), ("mpeg2", ChromaSite::MPEG2), ("cosited", ChromaSite::COSITED)];
    for (name, site) in sites {
        let caps = nv12_caps(w as u32, h as u32, &format!(",colorimetry=bt601,chroma-site={name}"));
        let mut vc = gst_check::Harness::new_parse(
            "videoconvert chroma-mode=full dither=none ! capsfilter caps=video/x-raw,format=RGB",
        );
        vc.set_src_caps(caps.clone());
        vc.play();
        let reference = bytes_of(&vc.push_and_pull(buffer(&frame)).unwrap());
        assert_eq!(reference.len(), w * h * 3, "videoconvert's RGB rows are tight at 640");
        let ours = element_rgb(caps, &frame);
        let right = max_diff(&ours, &reference);
        let wrong = sites
            .iter()
            .filter(|&&(_, s)| s != site)
            .map(|&(_, s)| max_diff(&converter_rgb(&frame, w, h, s), &reference))
            .min()
            .unwrap();
        let mean =
            ours.iter().zip(&reference).map(|(&a, &b)| a.abs_diff(b) as f64).sum::<f64>() / ours.len() as f64;
        report.push(format!("{name}: max {right} (mean {mean:.2}), nearest wrong siting {wrong}"));
        if site != ChromaSite::COSITED {
            assert!(right <= 5 && wrong > 20, "{}", report.join("; "));
        }
    }
    eprintln!("element vs videoconvert: {}", report.join("; "));
}
