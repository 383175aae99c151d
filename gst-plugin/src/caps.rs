//! `other/tensors` caps in NNStreamer's convention (innermost dimension first: HWC RGB 640×640 is
//! `3:640:640:1`) and the model shapes the element's properties describe.

use edgefirst_tensor::DType;

pub const TENSORS_MEDIA_TYPE: &str = "other/tensors";

#[derive(Debug, Clone, PartialEq)]
pub struct TensorCaps {
    pub dtype: DType,
    /// Innermost first, as the caps write them.
    pub dims: Vec<usize>,
    pub framerate: Option<gst::Fraction>,
}

impl TensorCaps {
    /// The tensor's shape, outermost first (`[1, H, W, C]` for HWC).
    pub fn shape(&self) -> Vec<usize> {
        self.dims.iter().rev().copied().collect()
    }

    pub fn dims_string(&self) -> String {
        dims_string(&self.dims)
    }

    pub fn to_caps(&self) -> gst::Caps {
        let mut b = gst::Caps::builder(TENSORS_MEDIA_TYPE)
            .field("format", "static")
            .field("num_tensors", 1i32)
            .field("types", self.dtype.name())
            .field("dimensions", self.dims_string());
        if let Some(f) = self.framerate {
            b = b.field("framerate", f);
        }
        b.build()
    }

    pub fn from_structure(s: &gst::StructureRef) -> Result<TensorCaps, String> {
        if s.name() != TENSORS_MEDIA_TYPE {
            return Err(format!("{} is not {TENSORS_MEDIA_TYPE}", s.name()));
        }
        if s.get::<&str>("format").map_err(|_| "no format")? != "static" {
            return Err("only format=static tensors are produced".into());
        }
        if s.get::<i32>("num_tensors").map_err(|_| "no fixed num_tensors")? != 1 {
            return Err("exactly one tensor per buffer is produced".into());
        }
        let types = s.get::<&str>("types").map_err(|_| "no fixed types")?;
        let dtype = DType::from_name(types).ok_or_else(|| format!("unknown tensor type {types}"))?;
        let dims = parse_dims(s.get::<&str>("dimensions").map_err(|_| "no fixed dimensions")?)?;
        Ok(TensorCaps { dtype, dims, framerate: s.get::<gst::Fraction>("framerate").ok() })
    }
}

/// NNStreamer's `dimensions` string: innermost first, colon-separated.
pub fn dims_string(dims: &[usize]) -> String {
    dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(":")
}

pub fn parse_dims(s: &str) -> Result<Vec<usize>, String> {
    let dims: Vec<usize> = s
        .split(':')
        .map(|d| d.trim().parse::<usize>().map_err(|_| format!("bad dimension `{d}` in `{s}`")))
        .collect::<Result<_, _>>()?;
    if dims.is_empty() || dims.len() > 16 || dims.contains(&0) {
        return Err(format!("dimensions `{s}` must be 1 to 16 non-zero sizes"));
    }
    Ok(dims)
}

/// NNStreamer dims of a model input: HWC is `C:W:H:1`, CHW is `W:H:C:1`.
pub fn model_dims(channels: usize, chw: bool, width: usize, height: usize) -> Vec<usize> {
    if chw {
        vec![width, height, channels, 1]
    } else {
        vec![channels, width, height, 1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hwc_and_chw_strings() {
        gst::init().unwrap();
        let hwc = TensorCaps {
            dtype: DType::U8,
            dims: model_dims(3, false, 640, 480),
            framerate: Some(gst::Fraction::new(30, 1)),
        };
        assert_eq!(
            hwc.to_caps().to_string(),
            "other/tensors, format=(string)static, num_tensors=(int)1, types=(string)uint8, \
             dimensions=(string)3:640:480:1, framerate=(fraction)30/1"
        );
        assert_eq!(hwc.shape(), vec![1, 480, 640, 3]);
        let chw = TensorCaps { dtype: DType::F32, dims: model_dims(3, true, 640, 480), framerate: None };
        assert_eq!(chw.dims_string(), "640:480:3:1");
        let back = TensorCaps::from_structure(chw.to_caps().structure(0).unwrap()).unwrap();
        assert_eq!(back, chw);
    }

    #[test]
    fn bad_caps_are_refused_with_a_reason() {
        assert!(parse_dims("3:0:2").is_err());
        assert!(parse_dims("3:x").unwrap_err().contains("`x`"));
        gst::init().unwrap();
        let caps = gst::Caps::builder("other/tensors")
            .field("format", "static")
            .field("num_tensors", 2i32)
            .field("types", "uint8,uint8")
            .field("dimensions", "3:4:4:1,3:4:4:1")
            .build();
        assert!(TensorCaps::from_structure(caps.structure(0).unwrap()).unwrap_err().contains("one tensor"));
    }
}
