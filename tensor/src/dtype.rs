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

/// IEEE 754 binary16, stored as its bit pattern (the layout of `half::f16`, which does the
/// conversions). A newtype rather than a re-export so that the public `.0` bit pattern, and with
/// it this crate's API, stays as it was.
#[allow(non_camel_case_types)]
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct f16(pub u16);

impl f16 {
    /// Rounded to nearest, ties to even (subnormals included; past 65504 to infinity). A NaN
    /// keeps its sign and becomes the quiet NaN 0x7e00, its payload dropped: what this type did
    /// before it went through `half`, which keeps the payload's top bits.
    pub fn from_f32(v: f32) -> f16 {
        if v.is_nan() {
            return f16(((v.to_bits() >> 16) & 0x8000) as u16 | 0x7e00);
        }
        f16(half::f16::from_f32(v).to_bits())
    }

    /// Exact. A NaN keeps its payload and its quiet bit as they are (a signalling NaN stays
    /// signalling, as before `half`, whose conversion sets the quiet bit).
    pub fn to_f32(self) -> f32 {
        let h = self.0 as u32;
        if h & 0x7c00 == 0x7c00 && h & 0x3ff != 0 {
            return f32::from_bits(((h & 0x8000) << 16) | 0x7f80_0000 | ((h & 0x3ff) << 13));
        }
        half::f16::from_bits(self.0).to_f32()
    }

    /// `src` into `dst` (equal lengths) as `from_f32` converts each, through `half`'s slice
    /// conversion (F16C / fp16 vector instructions where the CPU has them). A NaN in `src` is
    /// stored as `from_f32` stores it.
    pub fn from_f32_slice(dst: &mut [f16], src: &[f32]) {
        use half::slice::HalfFloatSliceExt;
        assert_eq!(dst.len(), src.len(), "f16::from_f32_slice: lengths differ");
        // Same layout (both a transparent u16), every bit pattern valid in both.
        let out = unsafe { std::slice::from_raw_parts_mut(dst.as_mut_ptr().cast::<half::f16>(), dst.len()) };
        out.convert_from_f32_slice(src);
        // The vector conversions keep a NaN's payload (see `from_f32`); rare enough to mend after.
        for (o, &v) in dst.iter_mut().zip(src) {
            if v.is_nan() {
                *o = f16::from_f32(v);
            }
        }
    }
}

impl From<half::f16> for f16 {
    fn from(v: half::f16) -> f16 {
        f16(v.to_bits())
    }
}

impl From<f16> for half::f16 {
    fn from(v: f16) -> half::f16 {
        half::f16::from_bits(v.0)
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
