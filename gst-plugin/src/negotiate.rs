//! How a tensor-making element negotiates like a GStreamer converter: properties the user set win,
//! everything else comes from downstream caps, and what neither says is fixated from the input.
//!
//! - The src pad offers `other/tensors` with `types` and `dimensions` open, so a caps filter or a
//!   tensor consumer downstream can say them, and the element links before the input size is
//!   known. Then the model input as `video/x-raw` (any of RGB, BGR, GRAY8, RGBA at any size;
//!   offered only where the set properties allow an 8-bit interleaved output), then the input frame
//!   itself. Set properties are not written into the offer: a caps filter that contradicts one
//!   must fail with a message naming both, not with an empty intersection that names nothing.
//! - Fixation fills what is still open: the set properties first, then the input's size, RGB,
//!   hwc, uint8.
//! - The fixed output caps are read back into the settings: size from `dimensions` (NNStreamer's
//!   innermost-first order: `3:W:H:1` is hwc, `W:H:3:1` chw) or from `video/x-raw` width and
//!   height; element type from `types`; colour space from the channel count or the video format.
//!   A set property that the caps contradict is an error naming both.

use crate::caps::{dims_string, model_dims, TensorCaps, TENSORS_MEDIA_TYPE};
use crate::model::{ModelColorspace, ModelDtype, ModelLayout, Settings};
use edgefirst_tensor::DType;
use gst_video::VideoFormat;

/// The largest model side the properties accept; caps offer sizes up to it.
pub const MAX_SIDE: i32 = 16384;

/// What the output caps can offer for an input structure, model tensor first.
pub fn offered(settings: &Settings, input: &gst::StructureRef) -> Vec<gst::Structure> {
    let framerate = input.get::<gst::Fraction>("framerate").ok();
    let mut out = Vec::new();
    let mut tensor =
        gst::Structure::builder(TENSORS_MEDIA_TYPE).field("format", "static").field("num_tensors", 1i32);
    if let Some(f) = framerate {
        tensor = tensor.field("framerate", f);
    }
    out.push(tensor.build());
    if image_allowed(settings) {
        let formats = [VideoFormat::Rgb, VideoFormat::Bgr, VideoFormat::Gray8, VideoFormat::Rgba];
        let mut image = gst::Structure::builder("video/x-raw")
            .field("format", gst::List::new(formats.iter().map(|f| f.to_str())))
            .field("width", gst::IntRange::new(1, MAX_SIDE))
            .field("height", gst::IntRange::new(1, MAX_SIDE));
        if let Some(f) = framerate {
            image = image.field("framerate", f);
        }
        out.push(image.build());
    }
    out
}

/// Whether the model input can leave as a video frame (8-bit interleaved, no normalization),
/// unless a set property rules that out.
fn image_allowed(settings: &Settings) -> bool {
    let normalized = settings.mean != [0.0; 3] || settings.std != [1.0; 3] || settings.quant_scale != 0.0;
    let dtype_ok = !settings.is_set("model-dtype") || settings.dtype == ModelDtype::Uint8;
    let layout_ok = !settings.is_set("model-layout")
        || settings.layout == ModelLayout::Hwc
        || (settings.is_set("model-colorspace") && settings.colorspace.channels() == 1);
    !normalized && dtype_ok && layout_ok
}

fn image_format(c: ModelColorspace) -> VideoFormat {
    match c {
        ModelColorspace::Rgb => VideoFormat::Rgb,
        ModelColorspace::Bgr => VideoFormat::Bgr,
        ModelColorspace::Gray => VideoFormat::Gray8,
        ModelColorspace::Rgba => VideoFormat::Rgba,
    }
}

/// Fill what downstream left open in the chosen output structure: the set properties first, then
/// the input's size, RGB, hwc, uint8.
pub fn fixate(settings: &Settings, in_w: u32, in_h: u32, s: &mut gst::StructureRef) {
    let (mw, mh) = settings.model_size(in_w, in_h);
    if s.name() == TENSORS_MEDIA_TYPE {
        let dims = model_dims(
            settings.colorspace.channels(),
            settings.layout == ModelLayout::Chw,
            mw as usize,
            mh as usize,
        );
        for (field, want) in
            [("types", settings.dtype.dtype().name().to_string()), ("dimensions", dims_string(&dims))]
        {
            if s.has_field(field) {
                s.fixate_field_str(field, &want);
            } else {
                s.set(field, want);
            }
        }
        // One field order (NNStreamer's: types, dimensions, rate), whichever side said what: the
        // same caps read the same in logs and tests.
        for field in ["types", "dimensions", "framerate"] {
            if let Some(v) = s.value(field).ok().cloned() {
                s.remove_field(field);
                s.set_value(field, v);
            }
        }
    } else if s.name() == "video/x-raw" {
        s.fixate_field_nearest_int("width", mw as i32);
        s.fixate_field_nearest_int("height", mh as i32);
        s.fixate_field_str("format", image_format(settings.colorspace).to_str());
    }
}

/// The settings the fixed output caps describe: the properties the user set, and the rest taken
/// from the caps. A set property that the caps contradict is an error naming both.
pub fn resolve(settings: &Settings, out: &gst::StructureRef) -> Result<Settings, String> {
    let mut s = settings.clone();
    if out.name() == TENSORS_MEDIA_TYPE {
        let t = TensorCaps::from_structure(out)?;
        let dtype = model_dtype(t.dtype);
        if settings.is_set("model-dtype") && settings.dtype != dtype {
            return Err(format!(
                "downstream asked for types={} but model-dtype is {}",
                t.dtype,
                settings.dtype.dtype()
            ));
        }
        s.dtype = dtype;
        let (channels, chw, w, h) = shape_of(settings, &t.dims)?;
        s.layout = if chw { ModelLayout::Chw } else { ModelLayout::Hwc };
        s.colorspace = colorspace_for(settings, channels, &t.dims_string())?;
        set_size(&mut s, settings, w, h, &t.dims_string())?;
    } else if out.name() == "video/x-raw" {
        let (Ok(format), Ok(w), Ok(h)) =
            (out.get::<&str>("format"), out.get::<i32>("width"), out.get::<i32>("height"))
        else {
            return Err(format!("output caps {out} are not fixed"));
        };
        let colorspace = match VideoFormat::from_string(format) {
            VideoFormat::Rgb => ModelColorspace::Rgb,
            VideoFormat::Bgr => ModelColorspace::Bgr,
            VideoFormat::Gray8 => ModelColorspace::Gray,
            VideoFormat::Rgba => ModelColorspace::Rgba,
            _ => return Ok(s), // The input frame itself, or a format only passthrough can give.
        };
        if settings.is_set("model-colorspace") && settings.colorspace != colorspace {
            return Err(format!(
                "downstream asked for video format {format} but model-colorspace is {:?}",
                settings.colorspace
            ));
        }
        s.colorspace = colorspace;
        set_size(&mut s, settings, w.max(0) as u32, h.max(0) as u32, &format!("{w}x{h}"))?;
    }
    Ok(s)
}

fn model_dtype(d: DType) -> ModelDtype {
    ModelDtype::ALL.into_iter().find(|m| m.dtype() == d).unwrap_or_default()
}

/// (channels, chw, width, height) of NNStreamer dimensions: `C:W:H[:1]` (hwc) or `W:H:C[:1]`
/// (chw); a set model-layout or model-colorspace decides where both readings fit.
fn shape_of(settings: &Settings, dims: &[usize]) -> Result<(usize, bool, u32, u32), String> {
    let d = match dims {
        [a, b, c] | [a, b, c, 1] => [*a, *b, *c],
        _ => {
            return Err(format!(
                "dimensions {} are not one image tensor (C:W:H:1 or W:H:C:1)",
                dims_string(dims)
            ))
        }
    };
    let channels_ok = |c: usize| [1, 3, 4].contains(&c);
    let want_channels = settings.is_set("model-colorspace").then(|| settings.colorspace.channels());
    let fits = |c: usize| channels_ok(c) && want_channels.is_none_or(|w| w == c);
    let hwc = fits(d[0]).then_some((d[0], false, d[1], d[2]));
    let chw = fits(d[2]).then_some((d[2], true, d[0], d[1]));
    let pick = match (settings.is_set("model-layout").then_some(settings.layout), hwc, chw) {
        (Some(ModelLayout::Hwc), Some(x), _) | (Some(ModelLayout::Chw), _, Some(x)) => x,
        (None, Some(x), _) | (None, None, Some(x)) => x,
        (layout, _, _) => {
            return Err(match (layout, want_channels) {
                (Some(l), _) => format!(
                    "downstream asked for dimensions {} but model-layout is {:?}{}",
                    dims_string(dims),
                    l,
                    want_channels.map_or(String::new(), |c| format!(" with {c} channels (model-colorspace)"))
                ),
                (None, Some(c)) => format!(
                    "downstream asked for dimensions {} but model-colorspace has {c} channels",
                    dims_string(dims)
                ),
                (None, None) => format!(
                    "dimensions {} have no channel count of 1, 3 or 4 where hwc (C:W:H:1) or chw (W:H:C:1) puts it",
                    dims_string(dims)
                ),
            })
        }
    };
    let side = |v: usize| u32::try_from(v).ok().filter(|&v| v > 0 && v <= MAX_SIDE as u32);
    match (side(pick.2), side(pick.3)) {
        (Some(w), Some(h)) => Ok((pick.0, pick.1, w, h)),
        _ => Err(format!("dimensions {} ask for a side outside 1..={MAX_SIDE}", dims_string(dims))),
    }
}

fn colorspace_for(settings: &Settings, channels: usize, what: &str) -> Result<ModelColorspace, String> {
    if settings.is_set("model-colorspace") {
        if settings.colorspace.channels() != channels {
            return Err(format!(
                "downstream asked for {what} ({channels} channels) but model-colorspace is {:?}",
                settings.colorspace
            ));
        }
        return Ok(settings.colorspace);
    }
    Ok(match channels {
        1 => ModelColorspace::Gray,
        4 => ModelColorspace::Rgba,
        _ => ModelColorspace::Rgb,
    })
}

fn set_size(s: &mut Settings, settings: &Settings, w: u32, h: u32, what: &str) -> Result<(), String> {
    for (name, set, got) in
        [("model-width", settings.model_width, w), ("model-height", settings.model_height, h)]
    {
        if settings.is_set(name) && set > 0 && set != got {
            return Err(format!("downstream asked for {what} but {name} is {set}"));
        }
    }
    s.model_width = w;
    s.model_height = h;
    Ok(())
}
