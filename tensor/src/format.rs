//! Layout arithmetic for camera images held in tensors.
//!
//! Everything here is pure integer math so it can be tested on any host; the
//! surfaces (system memory, DMA-BUF, `GStreamer` buffers) all route their
//! stride and size questions through this module so they can never disagree.
//!
//! Images are normally u8 samples, but packed and planar RGB may carry wider
//! elements (e.g. planar f32 model input), hence the `esz` (bytes per element)
//! parameters. YUV and bitstream formats are only meaningful with `esz == 1`.

/// How the samples of an image are arranged in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PixelLayout {
    Packed,
    Planar,
    SemiPlanar,
    Bitstream,
}

/// Chroma subsampling as (horizontal divisor, vertical divisor).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChromaSubsampling {
    None,
    Yuv420,
    Yuv422,
}

impl ChromaSubsampling {
    pub fn divisors(self) -> (usize, usize) {
        match self {
            ChromaSubsampling::None => (1, 1),
            ChromaSubsampling::Yuv420 => (2, 2),
            ChromaSubsampling::Yuv422 => (2, 1),
        }
    }
}

#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PixelFormat {
    Rgb,
    Bgr,
    Rgba,
    Bgra,
    Rgbx,
    Bgrx,
    Gray8,
    PlanarRgb,
    Nv12,
    Nv21,
    Nv16,
    I420,
    Yv12,
    Yuy2,
    Uyvy,
    H264,
    H265,
}

/// Where one plane lives inside the image allocation.
///
/// `stride` is signed so that bottom-up images can be described by the same
/// type even though nothing in this module produces a negative stride.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PlaneGeometry {
    pub offset: usize,
    pub stride: isize,
    pub size: usize,
}

fn plane(offset: usize, stride: usize, size: usize) -> PlaneGeometry {
    PlaneGeometry { offset, stride: stride as isize, size }
}

impl PixelFormat {
    pub const ALL: &'static [PixelFormat] = &[
        PixelFormat::Rgb,
        PixelFormat::Bgr,
        PixelFormat::Rgba,
        PixelFormat::Bgra,
        PixelFormat::Rgbx,
        PixelFormat::Bgrx,
        PixelFormat::Gray8,
        PixelFormat::PlanarRgb,
        PixelFormat::Nv12,
        PixelFormat::Nv21,
        PixelFormat::Nv16,
        PixelFormat::I420,
        PixelFormat::Yv12,
        PixelFormat::Yuy2,
        PixelFormat::Uyvy,
        PixelFormat::H264,
        PixelFormat::H265,
    ];

    /// `GStreamer` caps name; planar RGB is `RGBP`.
    pub fn name(self) -> &'static str {
        match self {
            PixelFormat::Rgb => "RGB",
            PixelFormat::Bgr => "BGR",
            PixelFormat::Rgba => "RGBA",
            PixelFormat::Bgra => "BGRA",
            PixelFormat::Rgbx => "RGBx",
            PixelFormat::Bgrx => "BGRx",
            PixelFormat::Gray8 => "GRAY8",
            PixelFormat::PlanarRgb => "RGBP",
            PixelFormat::Nv12 => "NV12",
            PixelFormat::Nv21 => "NV21",
            PixelFormat::Nv16 => "NV16",
            PixelFormat::I420 => "I420",
            PixelFormat::Yv12 => "YV12",
            PixelFormat::Yuy2 => "YUY2",
            PixelFormat::Uyvy => "UYVY",
            PixelFormat::H264 => "h264",
            PixelFormat::H265 => "h265",
        }
    }

    /// Exact inverse of [`PixelFormat::name`]; case matters because `RGBx`
    /// and `RGBX` are not interchangeable in caps negotiation.
    pub fn from_name(s: &str) -> Option<PixelFormat> {
        PixelFormat::ALL.iter().copied().find(|f| f.name() == s)
    }

    pub fn layout(self) -> PixelLayout {
        match self {
            PixelFormat::PlanarRgb | PixelFormat::I420 | PixelFormat::Yv12 => PixelLayout::Planar,
            PixelFormat::Nv12 | PixelFormat::Nv21 | PixelFormat::Nv16 => PixelLayout::SemiPlanar,
            PixelFormat::H264 | PixelFormat::H265 => PixelLayout::Bitstream,
            _ => PixelLayout::Packed,
        }
    }

    pub fn subsampling(self) -> ChromaSubsampling {
        match self {
            PixelFormat::Nv12 | PixelFormat::Nv21 | PixelFormat::I420 | PixelFormat::Yv12 => {
                ChromaSubsampling::Yuv420
            }
            PixelFormat::Nv16 | PixelFormat::Yuy2 | PixelFormat::Uyvy => ChromaSubsampling::Yuv422,
            _ => ChromaSubsampling::None,
        }
    }

    pub fn is_yuv(self) -> bool {
        self.subsampling() != ChromaSubsampling::None
    }

    /// Samples per pixel in the addressing grid (not per stored pixel: YUV
    /// planar formats are addressed through their luma grid only).
    pub fn channels(self) -> usize {
        match self {
            PixelFormat::Rgb | PixelFormat::Bgr | PixelFormat::PlanarRgb => 3,
            PixelFormat::Rgba | PixelFormat::Bgra | PixelFormat::Rgbx | PixelFormat::Bgrx => 4,
            PixelFormat::Yuy2 | PixelFormat::Uyvy => 2,
            _ => 1,
        }
    }

    pub fn num_planes(self) -> usize {
        match self {
            PixelFormat::PlanarRgb | PixelFormat::I420 | PixelFormat::Yv12 => 3,
            PixelFormat::Nv12 | PixelFormat::Nv21 | PixelFormat::Nv16 => 2,
            _ => 1,
        }
    }

    /// Tight bytes of one row of plane 0.
    ///
    /// Widths are rounded up to the chroma horizontal divisor so that an odd
    /// width still stores whole chroma pairs (YUY2 w=5 needs 3 macropixels =
    /// 12 bytes). Planar RGB's plane-0 row holds one channel only, so its
    /// channel count does not enter the row size.
    pub fn min_row_stride(self, width: usize, esz: usize) -> usize {
        if self.layout() == PixelLayout::Bitstream {
            return width;
        }
        let per_row_samples = if self.layout() == PixelLayout::Packed { self.channels() } else { 1 };
        let (hdiv, _) = self.subsampling().divisors();
        width.next_multiple_of(hdiv) * per_row_samples * esz
    }

    /// Rows of plane-0 stride that the whole image occupies in one allocation.
    pub fn combined_plane_height(self, height: usize) -> usize {
        match self {
            PixelFormat::PlanarRgb => 3 * height,
            PixelFormat::H264 | PixelFormat::H265 => 1,
            PixelFormat::Nv12 | PixelFormat::Nv21 | PixelFormat::Nv16 => {
                let (_, vdiv) = self.subsampling().divisors();
                height + height.div_ceil(vdiv)
            }
            // Two chroma planes of ceil(h/2) rows at half the luma stride add
            // up to ceil(h/2) rows at full stride.
            PixelFormat::I420 | PixelFormat::Yv12 => height + height.div_ceil(2),
            _ => height,
        }
    }

    /// The shape a consumer indexes: the visible pixels only, never padding
    /// or chroma, so models see exactly the luma/RGB grid they expect.
    pub fn addressing_shape(self, width: usize, height: usize) -> Vec<usize> {
        match self.layout() {
            PixelLayout::Bitstream => vec![width],
            PixelLayout::Planar if self == PixelFormat::PlanarRgb => vec![3, height, width],
            PixelLayout::Planar | PixelLayout::SemiPlanar => vec![height, width],
            PixelLayout::Packed if self.channels() == 1 => vec![height, width],
            PixelLayout::Packed => vec![height, width, self.channels()],
        }
    }

    /// The buffer's extent as a shape (rows of plane 0 for multi-plane YUV).
    /// Byte counts must come from [`PixelFormat::image_bytes`], since padding
    /// and chroma rounding are not visible in a shape product.
    pub fn allocation_shape(self, width: usize, height: usize) -> Vec<usize> {
        match self.layout() {
            PixelLayout::Bitstream => vec![width],
            PixelLayout::Planar if self == PixelFormat::PlanarRgb => vec![3, height, width],
            PixelLayout::Planar | PixelLayout::SemiPlanar => {
                vec![self.combined_plane_height(height), width]
            }
            PixelLayout::Packed => vec![height, width, self.channels()],
        }
    }

    /// Plane positions for a plane-0 row stride in bytes, in storage order.
    ///
    /// Callers guarantee `row_stride >= min_row_stride` (and even for
    /// I420/YV12, whose chroma stride is `row_stride / 2`). For YV12 the
    /// planes are returned as stored: Y, V, U. Bitstreams ignore the stride
    /// and occupy `width` bytes.
    pub fn plane_table(self, width: usize, height: usize, row_stride: usize) -> Vec<PlaneGeometry> {
        let rs = row_stride;
        let luma = rs * height;
        match self.layout() {
            PixelLayout::Bitstream => vec![plane(0, width, width)],
            PixelLayout::Packed => vec![plane(0, rs, luma)],
            PixelLayout::Planar if self == PixelFormat::PlanarRgb => {
                (0..3).map(|c| plane(c * luma, rs, luma)).collect()
            }
            PixelLayout::Planar => {
                let cs = rs / 2;
                let csize = cs * height.div_ceil(2);
                vec![plane(0, rs, luma), plane(luma, cs, csize), plane(luma + csize, cs, csize)]
            }
            PixelLayout::SemiPlanar => {
                let (_, vdiv) = self.subsampling().divisors();
                vec![plane(0, rs, luma), plane(luma, rs, rs * height.div_ceil(vdiv))]
            }
        }
    }

    /// Total bytes of the image at this row stride, taken from the plane
    /// table so chroma rounding and padding are always accounted for.
    pub fn image_bytes(self, width: usize, height: usize, row_stride: usize) -> usize {
        self.plane_table(width, height, row_stride).iter().map(|p| p.offset + p.size).max().unwrap_or(0)
    }

    /// Row-stride alignment that makes EVERY plane's stride a multiple of 64
    /// bytes (the common DMA / hardware-scaler requirement).
    pub fn dma_stride_alignment(self) -> usize {
        match self.layout() {
            PixelLayout::Bitstream => 1,
            // Chroma stride is half the luma stride, so luma needs 2 * 64.
            PixelLayout::Planar if self != PixelFormat::PlanarRgb => 128,
            _ => 64,
        }
    }

    /// How plane `plane` samples the luma grid: one stored granule covers `hdiv` x `vdiv` pixels
    /// and takes `bytes` bytes. A YUY2 macropixel is one granule of two pixels, an NV12 chroma
    /// pair one granule of 2x2 pixels; windows and row copies of every layout come from this.
    pub fn plane_sampling(self, plane: usize, esz: usize) -> PlaneSampling {
        let (hdiv, vdiv) = self.subsampling().divisors();
        let s = |hdiv, vdiv, bytes| PlaneSampling { hdiv, vdiv, bytes };
        match (self.layout(), plane) {
            (PixelLayout::Bitstream, _) => s(1, 1, 1),
            (PixelLayout::Packed, _) => s(hdiv, 1, hdiv * self.channels() * esz),
            (PixelLayout::Planar, _) if self == PixelFormat::PlanarRgb => s(1, 1, esz),
            (_, 0) => s(1, 1, esz),
            (PixelLayout::Planar, _) => s(hdiv, vdiv, esz),
            (PixelLayout::SemiPlanar, _) => s(hdiv, vdiv, 2 * esz),
        }
    }

    /// The row stride an image of this format gets.
    ///
    /// Semi-planar always takes the 64-byte pitch, whatever the backing,
    /// because its chroma offset (`rs * h`) is computed from that pitch by
    /// consumers on every backing. Unaligned I420/YV12 still need an even
    /// stride so the half-stride chroma planes stay byte-exact.
    pub fn row_stride_for(self, width: usize, esz: usize, aligned: bool) -> usize {
        let natural = self.min_row_stride(width, esz);
        match self.layout() {
            PixelLayout::Bitstream => natural,
            PixelLayout::SemiPlanar => natural.next_multiple_of(self.dma_stride_alignment()),
            _ if aligned => natural.next_multiple_of(self.dma_stride_alignment()),
            PixelLayout::Planar if self != PixelFormat::PlanarRgb => natural.next_multiple_of(2),
            _ => natural,
        }
    }
}

fn dense_strides(shape: &[usize], esz: usize) -> Vec<isize> {
    let mut strides = vec![0isize; shape.len()];
    let mut step = esz;
    for (s, &d) in strides.iter_mut().zip(shape).rev() {
        *s = step as isize;
        step *= d;
    }
    strides
}

/// One plane's sampling of the luma grid (see `PixelFormat::plane_sampling`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PlaneSampling {
    pub hdiv: usize,
    pub vdiv: usize,
    /// Bytes of one granule (hdiv x vdiv pixels).
    pub bytes: usize,
}

impl PlaneSampling {
    /// Rows of this plane that pixel rows `0..h` touch.
    pub fn rows(&self, h: usize) -> usize {
        h.div_ceil(self.vdiv)
    }

    /// Bytes of one row of this plane that pixel columns `0..w` touch.
    pub fn row_bytes(&self, w: usize) -> usize {
        w.div_ceil(self.hdiv) * self.bytes
    }
}

/// How an image tensor's bytes step, as recorded on the tensor. Explicit rather than guessed from
/// the shape's rank: `[H, W, C]` and a batch of gray `[N, H, W]` have the same rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StrideSpec {
    pub layout: PixelLayout,
    /// Plane-0 row pitch in bytes.
    pub row_stride: usize,
    /// Bytes from one plane of a planar `[C, H, W]` image to the next. `None` means `rs * H`; a
    /// view's planes step over its parent's rows, not its own.
    pub plane_stride: Option<usize>,
    /// Present when the shape's leading dimension is a batch `N`: bytes from one image to the
    /// next (one padded image, chroma included).
    pub batch_stride: Option<usize>,
}

/// The ONE function that computes byte strides for a tensor shape; every surface reports its
/// result. Strides are signed bytes so any hardware pitch is representable.
///
/// `spec: None` (a plain tensor) and bitstreams give dense C-order strides. Otherwise the row
/// pitch lands on the row dimension and every dimension above it steps over padded rows:
/// packed `[H, W, C]` -> `[rs, C*esz, esz]`, gray or the luma grid of semi-planar / planar YUV
/// `[H, W]` -> `[rs, esz]`, planar `[C, H, W]` -> `[plane_stride, rs, esz]`, and batched
/// `[N, ...]` -> `[batch_stride, ...]`.
pub fn byte_strides(shape: &[usize], esz: usize, spec: Option<&StrideSpec>) -> Vec<isize> {
    let Some(spec) = spec.filter(|s| s.layout != PixelLayout::Bitstream) else {
        return dense_strides(shape, esz);
    };
    let batched = spec.batch_stride.is_some() && !shape.is_empty();
    let base = &shape[usize::from(batched)..];
    if base.is_empty() {
        return dense_strides(shape, esz);
    }
    let planar = spec.layout == PixelLayout::Planar && base.len() == 3;
    let row_dim = usize::from(planar);
    let mut strides = dense_strides(base, esz);
    strides[row_dim] = spec.row_stride as isize;
    if planar {
        strides[0] = spec.plane_stride.unwrap_or(spec.row_stride * base[1]) as isize;
    }
    if let (true, Some(b)) = (batched, spec.batch_stride) {
        strides.insert(0, b as isize);
    }
    strides
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIZES: &[usize] = &[1, 2, 3, 5, 64, 320, 321, 479, 480, 481, 483, 640, 641];

    #[test]
    fn name_round_trip() {
        assert_eq!(PixelFormat::ALL.len(), 17);
        for (i, &f) in PixelFormat::ALL.iter().enumerate() {
            // A duplicate name would make from_name return the earlier variant.
            assert_eq!(PixelFormat::from_name(f.name()), Some(f), "{f:?}");
            assert!(!PixelFormat::ALL[..i].contains(&f), "{f:?} listed twice");
        }
        let names: Vec<&str> = PixelFormat::ALL.iter().map(|f| f.name()).collect();
        assert_eq!(
            names.join(","),
            "RGB,BGR,RGBA,BGRA,RGBx,BGRx,GRAY8,RGBP,NV12,NV21,NV16,I420,YV12,YUY2,UYVY,h264,h265"
        );
        assert_eq!(PixelFormat::from_name("RGBx"), Some(PixelFormat::Rgbx));
        assert_eq!(PixelFormat::from_name("RGBX"), None);
        assert_eq!(PixelFormat::from_name("nv12"), None);
        assert_eq!(PixelFormat::from_name("h264"), Some(PixelFormat::H264));
        assert_eq!(PixelFormat::from_name(""), None);
    }

    #[test]
    fn classification_table() {
        use PixelFormat::*;
        use PixelLayout::*;
        let table: &[(PixelFormat, PixelLayout, ChromaSubsampling, usize, usize)] = &[
            (Rgb, Packed, ChromaSubsampling::None, 3, 1),
            (Bgr, Packed, ChromaSubsampling::None, 3, 1),
            (Rgba, Packed, ChromaSubsampling::None, 4, 1),
            (Bgra, Packed, ChromaSubsampling::None, 4, 1),
            (Rgbx, Packed, ChromaSubsampling::None, 4, 1),
            (Bgrx, Packed, ChromaSubsampling::None, 4, 1),
            (Gray8, Packed, ChromaSubsampling::None, 1, 1),
            (PlanarRgb, Planar, ChromaSubsampling::None, 3, 3),
            (Nv12, SemiPlanar, ChromaSubsampling::Yuv420, 1, 2),
            (Nv21, SemiPlanar, ChromaSubsampling::Yuv420, 1, 2),
            (Nv16, SemiPlanar, ChromaSubsampling::Yuv422, 1, 2),
            (I420, Planar, ChromaSubsampling::Yuv420, 1, 3),
            (Yv12, Planar, ChromaSubsampling::Yuv420, 1, 3),
            (Yuy2, Packed, ChromaSubsampling::Yuv422, 2, 1),
            (Uyvy, Packed, ChromaSubsampling::Yuv422, 2, 1),
            (H264, Bitstream, ChromaSubsampling::None, 1, 1),
            (H265, Bitstream, ChromaSubsampling::None, 1, 1),
        ];
        assert_eq!(table.len(), PixelFormat::ALL.len());
        for &(f, l, s, c, p) in table {
            assert_eq!(f.layout(), l, "{f:?}");
            assert_eq!(f.subsampling(), s, "{f:?}");
            assert_eq!(f.channels(), c, "{f:?}");
            assert_eq!(f.num_planes(), p, "{f:?}");
            assert_eq!(f.is_yuv(), s != ChromaSubsampling::None, "{f:?}");
            assert_eq!(f.plane_table(6, 4, 64).len(), p, "{f:?}");
        }
        assert_eq!(ChromaSubsampling::None.divisors(), (1, 1));
        assert_eq!(ChromaSubsampling::Yuv420.divisors(), (2, 2));
        assert_eq!(ChromaSubsampling::Yuv422.divisors(), (2, 1));
    }

    #[test]
    fn min_row_stride_values() {
        use PixelFormat::*;
        assert_eq!(Yuy2.min_row_stride(5, 1), 12);
        assert_eq!(Uyvy.min_row_stride(4, 1), 8);
        assert_eq!(Nv12.min_row_stride(5, 1), 6);
        assert_eq!(Nv16.min_row_stride(641, 1), 642);
        assert_eq!(I420.min_row_stride(5, 1), 6);
        assert_eq!(Rgb.min_row_stride(5, 1), 15);
        assert_eq!(Rgba.min_row_stride(321, 1), 1284);
        assert_eq!(Gray8.min_row_stride(7, 1), 7);
        assert_eq!(PlanarRgb.min_row_stride(5, 4), 20);
        assert_eq!(Rgb.min_row_stride(5, 4), 60);
        assert_eq!(H264.min_row_stride(1000, 1), 1000);
    }

    #[test]
    fn nv12_640x480() {
        let f = PixelFormat::Nv12;
        assert_eq!(f.addressing_shape(640, 480), vec![480, 640]);
        assert_eq!(f.allocation_shape(640, 480), vec![720, 640]);
        let rs = f.row_stride_for(640, 1, false);
        assert_eq!(rs, 640);
        let planes = f.plane_table(640, 480, rs);
        assert_eq!(planes[0], PlaneGeometry { offset: 0, stride: 640, size: 307200 });
        assert_eq!(planes[1], PlaneGeometry { offset: 307200, stride: 640, size: 153600 });
        assert_eq!(f.image_bytes(640, 480, rs), 460800);
    }

    #[test]
    fn odd_height_chroma_rounds_up() {
        let f = PixelFormat::Nv12;
        assert_eq!(f.combined_plane_height(483), 725);
        assert_eq!(f.combined_plane_height(480), 720);
        let chroma = f.plane_table(640, 483, 640)[1];
        assert_eq!(chroma.size / chroma.stride as usize, 242);
        assert_eq!(PixelFormat::Nv16.combined_plane_height(483), 966);
        assert_eq!(PixelFormat::I420.combined_plane_height(483), 725);
        assert_eq!(PixelFormat::PlanarRgb.combined_plane_height(483), 1449);
        assert_eq!(PixelFormat::Rgb.combined_plane_height(483), 483);
        assert_eq!(PixelFormat::H265.combined_plane_height(483), 1);
    }

    #[test]
    fn i420_and_yv12_plane_tables() {
        let expect = vec![
            PlaneGeometry { offset: 0, stride: 640, size: 307200 },
            PlaneGeometry { offset: 307200, stride: 320, size: 76800 },
            PlaneGeometry { offset: 384000, stride: 320, size: 76800 },
        ];
        assert_eq!(PixelFormat::I420.plane_table(640, 480, 640), expect);
        assert_eq!(PixelFormat::Yv12.plane_table(640, 480, 640), expect);
        let odd = PixelFormat::I420.plane_table(5, 3, 6);
        assert_eq!(odd[1], PlaneGeometry { offset: 18, stride: 3, size: 6 });
        assert_eq!(odd[2], PlaneGeometry { offset: 24, stride: 3, size: 6 });
        assert_eq!(PixelFormat::I420.image_bytes(5, 3, 6), 30);
    }

    #[test]
    fn other_plane_tables() {
        let p = PixelFormat::PlanarRgb.plane_table(10, 4, 64);
        let offsets: Vec<usize> = p.iter().map(|g| g.offset).collect();
        assert_eq!(offsets, vec![0, 256, 512]);
        assert!(p.iter().all(|g| g.stride == 64 && g.size == 256));
        assert_eq!(
            PixelFormat::Nv16.plane_table(8, 3, 64)[1],
            PlaneGeometry { offset: 192, stride: 64, size: 192 }
        );
        assert_eq!(
            PixelFormat::H264.plane_table(4096, 1080, 9999),
            vec![PlaneGeometry { offset: 0, stride: 4096, size: 4096 }]
        );
        assert_eq!(PixelFormat::H264.image_bytes(4096, 1080, 9999), 4096);
    }

    #[test]
    fn row_stride_for_values() {
        use PixelFormat::*;
        assert_eq!(Rgba.row_stride_for(321, 1, true), 1344);
        assert_eq!(Rgba.row_stride_for(322, 1, true), 1344);
        assert_eq!(Rgba.row_stride_for(320, 1, true), 1280);
        assert_eq!(Rgba.row_stride_for(321, 1, false), 1284);
        assert_eq!(Rgb.row_stride_for(321, 1, false), 963);
        assert_eq!(Rgb.row_stride_for(321, 1, true), 1024);
        assert_eq!(PlanarRgb.row_stride_for(321, 4, false), 1284);
        assert_eq!(PlanarRgb.row_stride_for(321, 4, true), 1344);
        assert_eq!(Nv12.row_stride_for(641, 1, false), 704);
        assert_eq!(Nv12.row_stride_for(640, 1, false), 640);
        assert_eq!(Nv21.row_stride_for(100, 1, false), 128);
        assert_eq!(Nv16.row_stride_for(100, 1, true), 128);
        assert_eq!(I420.row_stride_for(640, 1, true), 640);
        assert_eq!(I420.row_stride_for(650, 1, true), 768);
        assert_eq!(Yv12.row_stride_for(650, 1, false), 650);
        assert_eq!(I420.row_stride_for(5, 1, false), 6);
        assert_eq!(Yuy2.row_stride_for(5, 1, false), 12);
        assert_eq!(Yuy2.row_stride_for(5, 1, true), 64);
        assert_eq!(H264.row_stride_for(1001, 1, true), 1001);
        assert_eq!(H264.dma_stride_alignment(), 1);
        assert_eq!(I420.dma_stride_alignment(), 128);
        assert_eq!(Yv12.dma_stride_alignment(), 128);
        assert_eq!(PlanarRgb.dma_stride_alignment(), 64);
        assert_eq!(Nv12.dma_stride_alignment(), 64);
        assert_eq!(Rgb.dma_stride_alignment(), 64);
    }

    #[test]
    fn aligned_strides_align_every_plane() {
        for &f in PixelFormat::ALL.iter().filter(|f| f.layout() != PixelLayout::Bitstream) {
            for w in 1..=700 {
                for esz in [1, 4] {
                    let rs = f.row_stride_for(w, esz, true);
                    assert!(rs >= f.min_row_stride(w, esz));
                    assert_eq!(rs % f.dma_stride_alignment(), 0);
                    for h in [1, 2, 3, 479, 480, 481] {
                        for p in f.plane_table(w, h, rs) {
                            assert_eq!(p.stride % 64, 0, "{f:?} w={w} h={h} esz={esz}");
                        }
                    }
                }
                let loose = f.row_stride_for(w, 1, false);
                assert!(loose >= f.min_row_stride(w, 1));
                if f.layout() == PixelLayout::SemiPlanar {
                    assert_eq!(loose % 64, 0, "{f:?} w={w}");
                }
                if f.num_planes() == 3 && f.is_yuv() {
                    assert_eq!(loose % 2, 0, "{f:?} w={w}");
                }
            }
        }
    }

    #[test]
    fn shapes() {
        use PixelFormat::*;
        assert_eq!(Rgb.addressing_shape(4, 3), vec![3, 4, 3]);
        assert_eq!(Bgrx.addressing_shape(4, 3), vec![3, 4, 4]);
        assert_eq!(Gray8.addressing_shape(4, 3), vec![3, 4]);
        assert_eq!(Yuy2.addressing_shape(5, 3), vec![3, 5, 2]);
        assert_eq!(PlanarRgb.addressing_shape(4, 3), vec![3, 3, 4]);
        assert_eq!(I420.addressing_shape(4, 3), vec![3, 4]);
        assert_eq!(Nv16.addressing_shape(4, 3), vec![3, 4]);
        assert_eq!(H264.addressing_shape(777, 3), vec![777]);
        assert_eq!(Gray8.allocation_shape(4, 3), vec![3, 4, 1]);
        assert_eq!(Rgba.allocation_shape(4, 3), vec![3, 4, 4]);
        assert_eq!(PlanarRgb.allocation_shape(4, 3), vec![3, 3, 4]);
        assert_eq!(Nv16.allocation_shape(4, 3), vec![6, 4]);
        assert_eq!(Yv12.allocation_shape(4, 3), vec![5, 4]);
        assert_eq!(H265.allocation_shape(777, 3), vec![777]);
    }

    #[test]
    fn plane_sampling_reproduces_the_plane_table() {
        // Every plane's rows x stride and row bytes agree with the plane table and the tight pitch.
        for &f in PixelFormat::ALL {
            if f.layout() == PixelLayout::Bitstream {
                continue;
            }
            for (w, h) in [(5, 3), (640, 480), (641, 483)] {
                let rs = f.row_stride_for(w, 1, true);
                for (i, p) in f.plane_table(w, h, rs).iter().enumerate() {
                    let smp = f.plane_sampling(i, 1);
                    assert_eq!(smp.rows(h) * p.stride as usize, p.size, "{f:?} plane {i} {w}x{h}");
                    assert!(smp.row_bytes(w) <= p.stride as usize, "{f:?} plane {i}");
                }
                // Packed rows are exactly the tight pitch; a YUV luma row may be shorter than the
                // pitch that also holds whole chroma pairs.
                let luma = f.plane_sampling(0, 1).row_bytes(w);
                if f.is_yuv() && f.layout() != PixelLayout::Packed {
                    assert!(luma <= f.min_row_stride(w, 1), "{f:?} {w}");
                } else {
                    assert_eq!(luma, f.min_row_stride(w, 1), "{f:?} {w}");
                }
            }
        }
        assert_eq!(PixelFormat::Yuy2.plane_sampling(0, 1), PlaneSampling { hdiv: 2, vdiv: 1, bytes: 4 });
        assert_eq!(PixelFormat::Nv12.plane_sampling(1, 1), PlaneSampling { hdiv: 2, vdiv: 2, bytes: 2 });
        assert_eq!(PixelFormat::Rgba.plane_sampling(0, 4), PlaneSampling { hdiv: 1, vdiv: 1, bytes: 16 });
    }

    #[test]
    fn byte_strides_table() {
        use PixelLayout::*;
        let spec = |layout, rs, plane: Option<usize>, batch: Option<usize>| StrideSpec {
            layout,
            row_stride: rs,
            plane_stride: plane,
            batch_stride: batch,
        };
        let bs = |shape: &[usize], esz, s: StrideSpec| byte_strides(shape, esz, Some(&s));
        // Packed RGB with a padded pitch, and batched over padded images.
        assert_eq!(bs(&[240, 321, 3], 1, spec(Packed, 1024, None, None)), vec![1024, 3, 1]);
        assert_eq!(bs(&[240, 321, 3], 1, spec(Packed, 963, None, None)), vec![963, 3, 1]);
        assert_eq!(
            bs(&[2, 240, 321, 3], 1, spec(Packed, 1024, None, Some(245760))),
            vec![245760, 1024, 3, 1]
        );
        // Gray rank 2, and a batch of gray (same rank as [H, W, C]: the spec says which).
        assert_eq!(bs(&[240, 321], 1, spec(Packed, 384, None, None)), vec![384, 1]);
        assert_eq!(bs(&[4, 240, 321], 1, spec(Packed, 384, None, Some(92160))), vec![92160, 384, 1]);
        // Semi-planar luma grid and a batch of NV12 (batch stride includes chroma rows).
        assert_eq!(bs(&[480, 641], 1, spec(SemiPlanar, 704, None, None)), vec![704, 1]);
        assert_eq!(bs(&[2, 480, 641], 1, spec(SemiPlanar, 704, None, Some(506880))), vec![506880, 704, 1]);
        // Planar RGB f32 with padded pitch, batched, and a view whose planes step over the
        // parent's 240 rows while it shows only 10.
        assert_eq!(bs(&[3, 240, 321], 4, spec(Planar, 1344, None, None)), vec![322560, 1344, 4]);
        assert_eq!(
            bs(&[2, 3, 240, 321], 4, spec(Planar, 1344, None, Some(967680))),
            vec![967680, 322560, 1344, 4]
        );
        assert_eq!(bs(&[3, 10, 5], 4, spec(Planar, 1344, Some(322560), None)), vec![322560, 1344, 4]);
        // Planar YUV luma grid.
        assert_eq!(bs(&[480, 640], 1, spec(Planar, 640, None, None)), vec![640, 1]);
        // Plain tensors and bitstreams are dense.
        assert_eq!(byte_strides(&[2, 3, 4], 4, None), vec![48, 16, 4]);
        assert_eq!(bs(&[5], 1, spec(Bitstream, 64, None, None)), vec![1]);
        assert_eq!(byte_strides(&[], 1, None), Vec::<isize>::new());
    }

    fn sweep() -> impl Iterator<Item = (PixelFormat, usize, usize, usize, usize)> {
        PixelFormat::ALL.iter().flat_map(|&f| {
            let u8_only = f.is_yuv() || f.layout() == PixelLayout::Bitstream;
            let eszs: &'static [usize] = if u8_only { &[1] } else { &[1, 4] };
            eszs.iter().flat_map(move |&e| {
                SIZES.iter().flat_map(move |&w| {
                    let pitches =
                        [f.min_row_stride(w, e), f.row_stride_for(w, e, false), f.row_stride_for(w, e, true)];
                    SIZES.iter().flat_map(move |&h| pitches.map(|rs| (f, w, h, e, rs)))
                })
            })
        })
    }

    #[test]
    fn extent_and_addressing_invariants() {
        let mut cases = 0;
        for (f, w, h, esz, rs) in sweep() {
            cases += 1;
            let ctx = format!("{f:?} {w}x{h} esz={esz} rs={rs}");
            let planes = f.plane_table(w, h, rs);
            let want = if f.layout() == PixelLayout::Bitstream { w } else { rs * f.combined_plane_height(h) };
            let last = planes.last().unwrap();
            assert_eq!(last.offset + last.size, want, "{ctx}");
            assert_eq!(f.image_bytes(w, h, rs), want, "{ctx}");
            // Contiguous and in storage order, so the extent is the sum too.
            for pair in planes.windows(2) {
                assert_eq!(pair[0].offset + pair[0].size, pair[1].offset, "{ctx}");
            }
            // The strides every surface reports never reach past the image.
            for shape in [f.addressing_shape(w, h), f.allocation_shape(w, h)] {
                let st = byte_strides(
                    &shape,
                    esz,
                    Some(&StrideSpec {
                        layout: f.layout(),
                        row_stride: rs,
                        plane_stride: None,
                        batch_stride: None,
                    }),
                );
                assert_eq!(st.len(), shape.len(), "{ctx}");
                assert_eq!(*st.last().unwrap(), esz as isize, "{ctx}");
                let far: isize = shape.iter().zip(&st).map(|(&d, &s)| (d as isize - 1) * s).sum();
                assert!(far as usize + esz <= want, "{ctx} shape={shape:?}");
            }
        }
        // Guards against the sweep silently shrinking: 9 u8-only formats, 8 with esz 1 and 4.
        assert_eq!(cases, (9 + 8 * 2) * SIZES.len() * SIZES.len() * 3);
    }
}
