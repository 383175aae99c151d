//! `edgefirst_tensor::f16` goes through the `half` crate (F16C / fp16 where the CPU has them):
//! its conversions must give the bits the crate's own scalar code gave before, kept here as the
//! reference (IEEE binary16, round to nearest with ties to even, subnormals, overflow to
//! infinity, NaN as the sign and 0x7e00), and the converter's float16 tensors must be that
//! rounding of its float32 ones, at every level.

use edgefirst_tensor::convert::{Colorspace, ConvertSpec, Converter, DstLayout, Simd, SrcImage};
use edgefirst_tensor::{f16, DType, PixelFormat};

/// The crate's f32 → binary16 before `half`, unchanged.
fn reference_from_f32(v: f32) -> u16 {
    let bits = v.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32;
    let man = bits & 0x7f_ffff;
    if exp == 0xff {
        let nan = if man != 0 { 0x200 } else { 0 };
        return sign | 0x7c00 | nan;
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rem = m & ((1 << shift) - 1);
        let mut out = m >> shift;
        if rem > half || (rem == half && out & 1 == 1) {
            out += 1;
        }
        return sign | out as u16;
    }
    let mut out = ((e as u32) << 10) | (man >> 13);
    let rem = man & 0x1fff;
    if rem > 0x1000 || (rem == 0x1000 && out & 1 == 1) {
        out += 1;
    }
    sign | out as u16
}

/// The crate's binary16 → f32 before `half`, unchanged.
fn reference_to_f32(h: u16) -> u32 {
    let h = h as u32;
    let sign = (h & 0x8000) << 16;
    let exp = (h >> 10) & 0x1f;
    let man = h & 0x3ff;
    match (exp, man) {
        (0, 0) => sign,
        (0, m) => {
            let mut e = 127 - 15 + 1;
            let mut m = m;
            while m & 0x400 == 0 {
                m <<= 1;
                e -= 1;
            }
            sign | ((e as u32) << 23) | ((m & 0x3ff) << 13)
        }
        (0x1f, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 127 - 15) << 23) | (m << 13),
    }
}

/// Both signs, every exponent (zero and subnormal f32s, the f16 subnormal and overflow
/// boundaries, infinities and NaNs), every value of the ten mantissa bits f16 keeps, and the
/// thirteen it rounds away at each class that decides a rounding: zero, the lowest bit, just
/// below, at and just above the half, the largest, and two arbitrary ones. 3.7 million values.
fn sweep() -> Vec<f32> {
    let low = [0u32, 1, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x0a5a, 0x15a5];
    let mut v = Vec::with_capacity(2 * 256 * 1024 * low.len());
    for sign in [0u32, 1 << 31] {
        for exp in 0..256u32 {
            for top in 0..1024u32 {
                for &l in &low {
                    v.push(f32::from_bits(sign | exp << 23 | top << 13 | l));
                }
            }
        }
    }
    v
}

#[test]
fn from_f32_is_the_old_rounding_bit_for_bit() {
    let values = sweep();
    let mut bad = Vec::new();
    for &v in &values {
        let (got, want) = (f16::from_f32(v).0, reference_from_f32(v));
        if got != want && bad.len() < 10 {
            bad.push(format!("{:#010x}: {got:#06x}, was {want:#06x}", v.to_bits()));
        }
    }
    // The slice conversion (the converter's), over the whole sweep at once and at odd lengths
    // and offsets, which leave scalar tails around the vector blocks.
    let mut out = vec![f16(0); values.len()];
    f16::from_f32_slice(&mut out, &values);
    for (start, len) in [(0, values.len()), (3, 5), (17, 1000), (1, 7)] {
        let mut part = vec![f16(0); len];
        f16::from_f32_slice(&mut part, &values[start..start + len]);
        assert_eq!(part[..], out[start..start + len]);
    }
    for (v, o) in values.iter().zip(&out) {
        let want = reference_from_f32(*v);
        if o.0 != want && bad.len() < 20 {
            bad.push(format!("slice {:#010x}: {:#06x}, was {want:#06x}", v.to_bits(), o.0));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    // The classes the converter relies on, spelled out.
    assert_eq!(f16::from_f32(65519.996).0, 0x7bff, "below the overflow tie");
    assert_eq!(f16::from_f32(65520.0).0, 0x7c00, "the overflow tie rounds to infinity");
    assert_eq!(f16::from_f32(2f32.powi(-25)).0, 0, "half the smallest subnormal: a tie to zero");
    assert_eq!(f16::from_f32(2f32.powi(-25) * 1.5).0, 1);
    assert_eq!(f16::from_f32(-0.0).0, 0x8000);
    assert_eq!(f16::from_f32(f32::from_bits(0x7f80_0001)).0, 0x7e00, "NaN payload dropped");
    assert_eq!(f16::from_f32(f32::from_bits(0xffc0_2000)).0, 0xfe00);
}

#[test]
fn to_f32_is_the_old_widening_bit_for_bit() {
    for h in 0..=u16::MAX {
        assert_eq!(f16(h).to_f32().to_bits(), reference_to_f32(h), "{h:#06x}");
        // And `half`'s own type converts to and from this one losslessly.
        assert_eq!(f16::from(half::f16::from(f16(h))), f16(h));
    }
}

fn levels() -> Vec<Simd> {
    let mut all = vec![Simd::Baseline];
    #[cfg(target_arch = "aarch64")]
    all.push(Simd::Neon);
    all.extend([Simd::Avx2, Simd::Avx512]);
    all.retain(|&l| l <= Simd::detect());
    all
}

/// The converter's float16 tensor is, element for element, the old rounding of its float32
/// tensor for the same frame and spec, and the same bytes at every level: hwc and chw, padding,
/// values that round to f16 subnormals (std 4000) and past its range (std 1e-5).
#[test]
fn converter_float16_is_the_rounding_of_float32_at_every_level() {
    let (w, h) = (53, 37);
    let bytes: Vec<u8> = (0..w * h * 2).map(|i| ((i * 7919) % 251) as u8).collect();
    let specs = [
        ConvertSpec::default(),
        ConvertSpec { mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225], ..Default::default() },
        ConvertSpec { mean: [0.5; 3], std: [4000.0; 3], ..Default::default() },
        ConvertSpec { mean: [0.5; 3], std: [1e-5; 3], ..Default::default() },
    ];
    let mut compared = 0;
    for format in [PixelFormat::Nv12, PixelFormat::Yuy2, PixelFormat::Rgb] {
        let image = match format {
            PixelFormat::Nv12 => SrcImage {
                format,
                width: w - 1,
                height: h - 1,
                planes: [(&bytes[..], w - 1), (&bytes[w * h..], w - 1), (&[], 0)],
            },
            PixelFormat::Yuy2 => SrcImage {
                format,
                width: w - 1,
                height: h,
                planes: [(&bytes[..], 2 * w), (&[], 0), (&[], 0)],
            },
            _ => SrcImage {
                format,
                width: w / 2,
                height: h,
                planes: [(&bytes[..], 2 * w), (&[], 0), (&[], 0)],
            },
        };
        for spec in &specs {
            for (cs, chw) in [(Colorspace::Rgb, false), (Colorspace::Bgr, true), (Colorspace::Rgba, false)] {
                let run = |dtype| {
                    let dst = DstLayout::dense(40, 40, cs, chw, dtype);
                    let mut conv = Converter::new(format, image.width, image.height, dst, spec, 2).unwrap();
                    levels()
                        .into_iter()
                        .map(|level| {
                            conv.set_simd(level);
                            let mut out = vec![0u8; dst.bytes()];
                            conv.convert(&image, &mut out).unwrap();
                            out
                        })
                        .collect::<Vec<_>>()
                };
                let (halves, floats) = (run(DType::F16), run(DType::F32));
                for (level, (h16, f32s)) in levels().into_iter().zip(halves.iter().zip(&floats)) {
                    assert_eq!(*h16, halves[0], "{format:?} {cs:?} chw={chw}: {level:?} differs");
                    let want: Vec<u8> = f32s
                        .chunks(4)
                        .flat_map(|b| {
                            reference_from_f32(f32::from_ne_bytes(b.try_into().unwrap())).to_ne_bytes()
                        })
                        .collect();
                    assert!(
                        *h16 == want,
                        "{format:?} {cs:?} chw={chw} {spec:?} {level:?}: not the f32 rounded"
                    );
                    compared += 1;
                }
            }
        }
    }
    assert!(compared >= 3 * 4 * 3);
}
