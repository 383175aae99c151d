//! Element types. `DType` is the runtime tag; `TensorElement` ties a Rust type to it so typed
//! maps can only be taken in the type the buffer was described with.

use std::fmt;

#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    U64,
    I64,
    F16,
    F32,
    F64,
}

impl DType {
    pub const ALL: &'static [DType] = &[
        DType::U8,
        DType::I8,
        DType::U16,
        DType::I16,
        DType::U32,
        DType::I32,
        DType::U64,
        DType::I64,
        DType::F16,
        DType::F32,
        DType::F64,
    ];

    pub const fn size(self) -> usize {
        match self {
            DType::U8 | DType::I8 => 1,
            DType::U16 | DType::I16 | DType::F16 => 2,
            DType::U32 | DType::I32 | DType::F32 => 4,
            DType::U64 | DType::I64 | DType::F64 => 8,
        }
    }

    /// The names NNStreamer's `other/tensors` caps use, which are also the element's
    /// `model-dtype` values, so one table serves both.
    pub const fn name(self) -> &'static str {
        match self {
            DType::U8 => "uint8",
            DType::I8 => "int8",
            DType::U16 => "uint16",
            DType::I16 => "int16",
            DType::U32 => "uint32",
            DType::I32 => "int32",
            DType::U64 => "uint64",
            DType::I64 => "int64",
            DType::F16 => "float16",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }

    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL.iter().copied().find(|d| d.name() == name)
    }

    pub const fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::F32 | DType::F64)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// IEEE 754 binary16, stored as its bit pattern. Kept in-crate because only conversion to and
/// from f32 is needed, not arithmetic.
#[allow(non_camel_case_types)]
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct f16(pub u16);

impl f16 {
    pub fn from_f32(v: f32) -> f16 {
        let bits = v.to_bits();
        let sign = ((bits >> 16) & 0x8000) as u16;
        let exp = ((bits >> 23) & 0xff) as i32;
        let man = bits & 0x7f_ffff;
        if exp == 0xff {
            let nan = if man != 0 { 0x200 } else { 0 };
            return f16(sign | 0x7c00 | nan);
        }
        let e = exp - 127 + 15;
        if e >= 0x1f {
            return f16(sign | 0x7c00);
        }
        if e <= 0 {
            if e < -10 {
                return f16(sign);
            }
            // Subnormal: shift the implicit bit in, then round half to even.
            let m = man | 0x80_0000;
            let shift = (14 - e) as u32;
            let half = 1u32 << (shift - 1);
            let rem = m & ((1 << shift) - 1);
            let mut out = m >> shift;
            if rem > half || (rem == half && out & 1 == 1) {
                out += 1;
            }
            return f16(sign | out as u16);
        }
        let mut out = ((e as u32) << 10) | (man >> 13);
        let rem = man & 0x1fff;
        if rem > 0x1000 || (rem == 0x1000 && out & 1 == 1) {
            // A carry out of the mantissa correctly bumps the exponent (and can reach infinity).
            out += 1;
        }
        f16(sign | out as u16)
    }

    pub fn to_f32(self) -> f32 {
        let h = self.0 as u32;
        let sign = (h & 0x8000) << 16;
        let exp = (h >> 10) & 0x1f;
        let man = h & 0x3ff;
        let bits = match (exp, man) {
            (0, 0) => sign,
            (0, m) => {
                // Normalise the subnormal so f32 holds it exactly.
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
        };
        f32::from_bits(bits)
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A plain-old-data element: every bit pattern is a valid value, so a mapped byte buffer can be
/// viewed as a slice of it. Sealed because that promise is what makes the views sound.
pub trait TensorElement: sealed::Sealed + Copy + Send + Sync + 'static {
    const DTYPE: DType;
}

macro_rules! element {
    ($($t:ty => $d:ident),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl TensorElement for $t { const DTYPE: DType = DType::$d; }
    )*};
}
element!(u8 => U8, i8 => I8, u16 => U16, i16 => I16, u32 => U32, i32 => I32, u64 => U64,
         i64 => I64, f16 => F16, f32 => F32, f64 => F64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_names() {
        assert_eq!(DType::ALL.len(), 11);
        for d in DType::ALL {
            assert_eq!(DType::from_name(d.name()), Some(*d));
        }
        assert_eq!(DType::F16.size(), std::mem::size_of::<f16>());
        assert_eq!(DType::F64.size(), 8);
        assert_eq!(<i8 as TensorElement>::DTYPE, DType::I8);
    }

    #[test]
    fn f16_round_trips() {
        for v in [0.0f32, -0.0, 1.0, -2.5, 0.333_251_95, 65504.0, 2f32.powi(-14), 2f32.powi(-24)] {
            assert_eq!(f16::from_f32(v).to_f32(), v, "{v}");
        }
        assert_eq!(f16::from_f32(1.0).0, 0x3c00);
        assert_eq!(f16::from_f32(65520.0).0, 0x7c00, "rounds up to infinity");
        assert!(f16::from_f32(f32::NAN).to_f32().is_nan());
        // Halfway between 1.0 and the next f16 rounds to even (1.0).
        assert_eq!(f16::from_f32(1.0 + 2f32.powi(-11)).0, 0x3c00);
    }
}
