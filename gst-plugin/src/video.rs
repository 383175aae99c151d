//! GStreamer video formats as the tensor crate's pixel formats, and the frame layout the pool
//! gives them. The stride and plane rules are the tensor crate's (`row_stride_for`, `plane_table`),
//! so a frame from the pool has exactly the layout `Tensor::image` would give it.

use edgefirst_tensor::PixelFormat;
use gst_video::{VideoAlignment, VideoFormat, VideoInfo};

/// Every plane's row pitch is a multiple of this (Mali/Vivante EGL imports refuse other pitches).
pub const STRIDE_ALIGN: u32 = 64;

pub fn pixel_format(f: VideoFormat) -> Option<PixelFormat> {
    Some(match f {
        VideoFormat::Rgb => PixelFormat::Rgb,
        VideoFormat::Bgr => PixelFormat::Bgr,
        VideoFormat::Rgba => PixelFormat::Rgba,
        VideoFormat::Bgra => PixelFormat::Bgra,
        VideoFormat::Rgbx => PixelFormat::Rgbx,
        VideoFormat::Bgrx => PixelFormat::Bgrx,
        VideoFormat::Gray8 => PixelFormat::Gray8,
        VideoFormat::Rgbp => PixelFormat::PlanarRgb,
        VideoFormat::Nv12 => PixelFormat::Nv12,
        VideoFormat::Nv21 => PixelFormat::Nv21,
        VideoFormat::Nv16 => PixelFormat::Nv16,
        VideoFormat::I420 => PixelFormat::I420,
        VideoFormat::Yv12 => PixelFormat::Yv12,
        VideoFormat::Yuy2 => PixelFormat::Yuy2,
        VideoFormat::Uyvy => PixelFormat::Uyvy,
        _ => return None,
    })
}

/// Every video format the tensor crate has a pixel format for: what the elements accept and the
/// pool lays out with the tensor crate's plane table.
pub const FORMATS: [VideoFormat; 15] = [
    VideoFormat::Nv12,
    VideoFormat::Nv21,
    VideoFormat::Nv16,
    VideoFormat::I420,
    VideoFormat::Yv12,
    VideoFormat::Yuy2,
    VideoFormat::Uyvy,
    VideoFormat::Rgb,
    VideoFormat::Bgr,
    VideoFormat::Rgba,
    VideoFormat::Bgra,
    VideoFormat::Rgbx,
    VideoFormat::Bgrx,
    VideoFormat::Gray8,
    VideoFormat::Rgbp,
];

pub fn video_format(f: PixelFormat) -> Option<VideoFormat> {
    FORMATS.into_iter().find(|&v| pixel_format(v) == Some(f))
}

/// What an edgefirst element takes in: every input format, in system memory or as DMA-BUF.
pub fn input_caps() -> gst::Caps {
    let mut caps = gst_video::VideoCapsBuilder::new().format_list(FORMATS).build();
    caps.merge(
        gst_video::VideoCapsBuilder::new()
            .features([gst_allocators::CAPS_FEATURE_MEMORY_DMABUF])
            .format_list(FORMATS)
            .build(),
    );
    caps
}

/// Where each plane of one frame lives in the pool's single memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameLayout {
    pub offsets: Vec<usize>,
    pub strides: Vec<i32>,
    pub size: usize,
}

/// The pool's layout for `info` under the config's `align`, whose stride masks are ORed with the
/// 64-byte rule. Formats the tensor crate knows take its plane table (the tightest pitch that
/// satisfies every mask); formats it does not know, and alignments that ask for padding, go
/// through GStreamer's own `gst_video_info_align` with the same masks.
pub fn frame_layout(info: &VideoInfo, align: &VideoAlignment) -> Result<FrameLayout, String> {
    let n = info.n_planes() as usize;
    let masks: Vec<u32> = (0..n).map(|i| align.stride_align()[i] | (STRIDE_ALIGN - 1)).collect();
    let padded =
        align.padding_top() | align.padding_bottom() | align.padding_left() | align.padding_right() != 0;
    if let (Some(pf), false) = (pixel_format(info.format()), padded) {
        let (w, h) = (info.width() as usize, info.height() as usize);
        let mut rs = pf.row_stride_for(w, 1, true);
        loop {
            let planes = pf.plane_table(w, h, rs);
            if planes.len() == n && planes.iter().zip(&masks).all(|(p, &m)| p.stride as u32 & m == 0) {
                return Ok(FrameLayout {
                    offsets: planes.iter().map(|p| p.offset).collect(),
                    strides: planes.iter().map(|p| p.stride as i32).collect(),
                    size: pf.image_bytes(w, h, rs),
                });
            }
            if planes.len() != n || rs > 1 << 28 {
                return Err(format!(
                    "no pitch satisfies the stride masks {masks:?} for {w}-pixel {}",
                    pf.name()
                ));
            }
            rs += pf.dma_stride_alignment();
        }
    }
    let mut aligned = info.clone();
    let mut a = VideoAlignment::new(
        align.padding_top(),
        align.padding_bottom(),
        align.padding_left(),
        align.padding_right(),
        &std::array::from_fn(|i| if i < n { masks[i] } else { align.stride_align()[i] }),
    );
    aligned.align(&mut a).map_err(|e| format!("gst_video_info_align refused {:?}: {e}", info.format()))?;
    Ok(FrameLayout {
        offsets: aligned.offset()[..n].to_vec(),
        strides: aligned.stride()[..n].to_vec(),
        size: aligned.size(),
    })
}

/// A config that asks for no alignment of its own: the 64-byte rule alone.
pub fn no_alignment() -> VideoAlignment {
    VideoAlignment::new(0, 0, 0, 0, &[0; gst_video::VIDEO_MAX_PLANES])
}

/// The layout the edgefirst pool gives `info` when its config names no alignment (what our own
/// elements configure, so they know the pitch before the first buffer).
pub fn pool_layout(info: &VideoInfo) -> Result<FrameLayout, String> {
    frame_layout(info, &no_alignment())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapping_round_trips() {
        for &pf in PixelFormat::ALL {
            if let Some(v) = video_format(pf) {
                assert_eq!(pixel_format(v), Some(pf));
                assert_eq!(v.to_str(), pf.name(), "GStreamer and tensor names agree");
            }
        }
        assert!(FORMATS.iter().all(|&v| pixel_format(v).is_some()));
        assert_eq!(pixel_format(VideoFormat::Gray16Le), None);
    }
}
