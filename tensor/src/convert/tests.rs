//! The converter's own checks (the kernels' are beside them; `tests/convert.rs` runs the
//! conversions end to end).

use super::*;

#[test]
fn every_yuv_matrix_takes_the_fused_finish() {
    use crate::preprocess::Colorimetry as C;
    for colorimetry in
        [C::BT601_LIMITED, C::BT601_FULL, C::BT709_LIMITED, C::BT709_FULL, C::BT2020_LIMITED, C::BT2020_FULL]
    {
        let spec = ConvertSpec { colorimetry, ..Default::default() };
        let dst = DstLayout::dense(32, 32, Colorspace::Rgb, false, DType::U8);
        let c = Converter::new(PixelFormat::Nv12, 64, 48, dst, &spec, 1).unwrap();
        let matrix = colorimetry.yuv_to_rgb_matrix().0.map(|r| r.map(|v| v as f32));
        assert!(finish::yuv_shaped(&matrix) && c.fused_finish, "{colorimetry:?}");
    }
}
