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

/// The x86 levels' `Scaled` gives the very floats of the conversion and multiply it stands for,
/// for every whole number below 2^23, at the units the sampling scales by and others.
#[cfg(target_arch = "x86_64")]
#[test]
fn scaled_is_the_converted_product() {
    use std::arch::x86_64::*;
    let units = [2f32.powi(-7), plan::WEIGHT_UNIT, 2f32.powi(-14), 2f32.powi(-15), 2f32.powi(-16), 1.0];
    let want = |a: i32, unit: f32| (a as f32 * unit).to_bits();
    for unit in units {
        if avx2::detect() {
            let scaled = unsafe { avx2::Scaled::new(unit) };
            let mut got = [0f32; 8];
            for start in (0..1 << 23).step_by(8) {
                let a = |i: i32| start + i;
                unsafe {
                    let v = _mm256_setr_epi32(a(0), a(1), a(2), a(3), a(4), a(5), a(6), a(7));
                    _mm256_storeu_ps(got.as_mut_ptr(), scaled.of(v));
                }
                assert!(
                    (0..8).all(|i| got[i as usize].to_bits() == want(a(i), unit)),
                    "AVX2 {start} at {unit}"
                );
            }
        }
        if avx512::detect() {
            let scaled = unsafe { avx512::Scaled::new(unit) };
            let mut got = [0f32; 16];
            for start in (0..1 << 23).step_by(16) {
                unsafe {
                    let lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
                    let v = _mm512_add_epi32(_mm512_set1_epi32(start), lanes);
                    _mm512_storeu_ps(got.as_mut_ptr(), scaled.of(v));
                }
                assert!(
                    (0..16).all(|i| got[i as usize].to_bits() == want(start + i, unit)),
                    "AVX-512 {start} at {unit}"
                );
            }
        }
    }
}
