//! The checks and plans `Converter::new` makes once, before a conversion's first frame: the
//! sides and the destination's strides, the normalization, where the picture sits, the
//! multi-tap filters' plan, the per-channel scale and bias, and each band's scratch rows.

use super::lines::Lines;
use super::plan::{multi_axis, Comp, Filter, MultiTap, MAX_TAPS};
use super::{multitap, Colorspace, ConvertSpec, DstLayout, KernelCounts, Scratch};
use crate::dtype::DType;
use crate::format::PixelFormat;
use crate::image::MAX_IMAGE_SIDE;
use crate::preprocess::{letterbox_rect, ContentRegion, Interpolation, Region};
use crate::{Error, Result};
use std::sync::Mutex;

/// Every side within `1..=MAX_IMAGE_SIDE`, and a destination whose strides hold its rows and
/// planes in addressable bytes.
pub(super) fn check_geometry(src_w: usize, src_h: usize, dst: &DstLayout) -> Result<()> {
    // The bound keeps every plan table and tap offset small: a plane window's bytes stay far
    // below the i32 offsets the gathers take.
    if [src_w, src_h, dst.width, dst.height].iter().any(|&side| side == 0 || side > MAX_IMAGE_SIDE) {
        return Err(Error::InvalidArgument(format!(
            "cannot convert {src_w}x{src_h} into {}x{}: sides must be in 1..={MAX_IMAGE_SIDE}",
            dst.width, dst.height
        )));
    }
    let esz = dst.dtype.size();
    let channels = dst.colorspace.channels();
    let pixel = if dst.chw { esz } else { channels * esz };
    let holds_rows = dst.width.checked_mul(pixel).is_some_and(|row| dst.row_stride >= row);
    let holds_planes = !dst.chw
        || channels == 1
        || dst.row_stride.checked_mul(dst.height).is_some_and(|plane| dst.plane_stride >= plane);
    let addressable = dst.checked_bytes().is_some_and(|bytes| bytes <= isize::MAX as usize);
    let flaw = match (holds_rows, holds_planes, addressable) {
        (false, _, _) => Some("a row stride shorter than a row of pixels"),
        (_, false, _) => Some("a plane stride shorter than a plane of rows"),
        (_, _, false) => Some("more bytes than a buffer can hold"),
        _ => None,
    };
    if let Some(flaw) = flaw {
        return Err(Error::InvalidArgument(format!(
            "destination {}x{} {:?} {} at row stride {} / plane stride {} has {flaw}",
            dst.width, dst.height, dst.colorspace, dst.dtype, dst.row_stride, dst.plane_stride
        )));
    }
    Ok(())
}

/// A finite mean and a finite, non-zero std; quantization only on 8-bit outputs, and a
/// normalization of an 8-bit output only with it.
pub(super) fn check_normalization(spec: &ConvertSpec, dtype: DType) -> Result<()> {
    let identity = spec.mean == [0.0; 3] && spec.std == [1.0; 3];
    if spec.std.contains(&0.0) || spec.mean.iter().chain(&spec.std).any(|v| !v.is_finite()) {
        return Err(Error::InvalidArgument(format!(
            "mean {:?} / std {:?} must be finite, std non-zero",
            spec.mean, spec.std
        )));
    }
    match (dtype, spec.quantization) {
        (DType::U8 | DType::I8, Some((s, _))) if !(s.is_finite() && s > 0.0) => {
            return Err(Error::InvalidArgument(format!("quantization scale {s} must be positive")));
        }
        (DType::U8 | DType::I8, Some(_)) => {}
        (d, Some(_)) => {
            return Err(Error::InvalidArgument(format!(
                "quantization applies to int8/uint8 outputs, not {d}"
            )));
        }
        (d, None) if !d.is_float() && !identity => {
            return Err(Error::InvalidArgument(format!(
                "mean/std on a {d} output needs the model's quantization (scale, zero point)"
            )));
        }
        _ => {}
    }
    Ok(())
}

/// Where the picture sits in the destination and which source pixels it comes from: the
/// spec's source region (the whole frame by default), checked against the frame, placed by
/// its fit.
pub(super) fn placed_content(
    spec: &ConvertSpec,
    src_w: usize,
    src_h: usize,
    dst: &DstLayout,
) -> Result<ContentRegion> {
    let region = spec.source_region.unwrap_or(Region::new(0, 0, src_w, src_h));
    if region.width == 0
        || region.height == 0
        || region.x.checked_add(region.width).is_none_or(|right| right > src_w)
        || region.y.checked_add(region.height).is_none_or(|bottom| bottom > src_h)
    {
        return Err(Error::RegionOutOfBounds {
            x: region.x,
            y: region.y,
            width: region.width,
            height: region.height,
            bound_width: src_w,
            bound_height: src_h,
        });
    }
    let mut content =
        letterbox_rect(region.width, region.height, dst.width, dst.height, spec.fit, spec.placement)
            .map_err(|e| Error::InvalidArgument(e.to_string()))?;
    content.source.x += region.x;
    content.source.y += region.y;
    Ok(content)
}

/// The multi-tap filters' plan (`None` for bilinear and nearest): `axes` are the luma and chroma
/// columns' and rows' (outputs, source start, length, divisor, grid's first and last sample,
/// siting); `area_down` where neither axis grows.
#[allow(clippy::too_many_arguments)]
pub(super) fn multi_plan(
    format: PixelFormat,
    comps: &[Comp],
    dst: &DstLayout,
    src_w: usize,
    interp: Interpolation,
    area_down: bool,
    (src_rect, rect): (Region, Region),
    axes: [(usize, usize, usize, usize, usize, usize, f64); 4],
) -> Result<Option<MultiTap>> {
    Ok(match Filter::of(interp, area_down) {
        Some(filter) => {
            for (n, _, len, div, lo, hi, _) in axes {
                let taps = filter.max_taps(n, len, div, hi - lo + 1);
                if taps > MAX_TAPS {
                    return Err(Error::InvalidArgument(format!(
                        "{interp:?} from {}x{} into {}x{} reads up to {taps} source samples per \
                         output, past the {MAX_TAPS} one pass takes: downscale in steps",
                        src_rect.width, src_rect.height, rect.width, rect.height
                    )));
                }
            }
            let [cl, cc, rl, rc] = axes.map(|(n, start, len, div, lo, hi, shift)| {
                multi_axis(n, start, len, div, lo, hi, filter, shift)
            });
            // A band keeps `taps` filtered rows per component.
            for rows in [&rl, &rc] {
                if rows.taps.checked_mul(rect.width).is_none_or(|v| v > 1 << 27) {
                    return Err(Error::InvalidArgument(format!(
                        "{interp:?} into {} columns keeps {} filtered rows per component: more \
                         than a band can hold",
                        rect.width, rows.taps
                    )));
                }
            }
            let row_len: [usize; 3] = std::array::from_fn(|p| match p < format.num_planes() {
                true => format.plane_sampling(p, 1).row_bytes(src_w),
                false => 0,
            });
            let mut plan = MultiTap::new([cl, cc], [rl, rc], comps, row_len, filter.round_between);
            // Alpha is the fourth component of an RGBA source; only an RGBA output reads it.
            plan.blended[3] = dst.colorspace == Colorspace::Rgba;
            // YUY2 and UYVY under PIL's filters: blended down first (`pil8_down_first`).
            // Across first, every source row was split into its luma and chroma bytes and
            // filtered across (4:2:2 carries chroma on every row), three rows an output row at
            // 3×; down first, one. Engine, uint8 `bilinear-antialias`, 1080p YUY2 → 640,
            // Intel Xeon, three alternations, best of 200: AVX-512 on 8 rotating frames
            // 0.542–0.548 → 0.393–0.403 ms, on 32 0.652–0.697 → 0.524–0.559, 1600×900
            // 0.495–0.508 → 0.374–0.382; AVX2 0.654–0.688 → 0.499–0.510. NV12, whose rows need
            // no packing and whose chroma has half the rows, took 0.30 → 0.33 down first. A YUV
            // source's bytes are not PIL's either way (its rounding falls on Y, U and V, not
            // R, G and B: docs/resampling.md); every level takes the same order and bytes.
            // Where no vertical weight is negative (the triangle), as the kernels that blend
            // down take them; PIL's bicubic, whose lobes are negative, blended down by the i32
            // loops took 1.47 → 2.03 ms.
            let positive = plan.rows.iter().all(|t| t.wi.iter().all(|&w| w >= 0));
            // The 4:2:0 sources too (NV12, NV21, I420, YV12) where the byte kernels blend every
            // row down (`rows_whole`: 3×, not 2.5×, whose tied rows went to the i32 loops: 900p
            // NV12 8 frames 0.180–0.185 → 0.204–0.206 ms). Their chroma planes have half the
            // rows, and across first the luma's three rows an output row were three passes of
            // blocks. 1080p NV12, engine, uint8, one binary choosing, three rounds: hot
            // 0.159–0.166 → 0.141–0.147 ms; with `NV12_DOWN_ASKS` at 3, 3, 8 rotating frames
            // 0.171–0.180 → 0.152–0.163, 32 level (0.180–0.213 → 0.190–0.202); float32 8 frames
            // 0.194–0.197 → 0.176–0.179; AVX2 0.303–0.305 → 0.242–0.243. The element's camera
            // rows (at 3, 3; `cargo bench`, two builds, two rounds): 8 frames 0.173–0.181 →
            // 0.142–0.146, 32 frames 0.184–0.191 → 0.167–0.173. With YUY2's asks, as the
            // twenty-eighth and forty-fourth sessions tried it, 32 frames took 0.240–0.246. I420
            // with NV12's asks, one binary, three rounds: hot 0.181–0.184 → 0.158, 8 frames
            // 0.183–0.196 → 0.167–0.170, 32 frames 0.196–0.203 → 0.179–0.183 (with YUY2's asks
            // 0.191–0.205 and 0.219–0.225).
            let planes420 = matches!(
                format,
                PixelFormat::Nv12 | PixelFormat::Nv21 | PixelFormat::I420 | PixelFormat::Yv12
            ) && plan.rows_whole();
            plan.down_first = plan.round_between
                && positive
                && (planes420 || matches!(format, PixelFormat::Yuy2 | PixelFormat::Uyvy));
            plan.down_asks = match planes420 {
                true => multitap::NV12_DOWN_ASKS,
                false => (multitap::DOWN_AHEAD, multitap::FINISH_ASKED_ROWS),
            };
            Some(plan)
        }
        None => None,
    })
}

/// Per output channel (in the output's order), the scale and bias that take a 0..255 value to
/// the output type: the spec's mean and std, its quantization, int8's offset.
pub(super) fn scale_bias(dst: &DstLayout, spec: &ConvertSpec) -> Result<([f32; 4], [f32; 4])> {
    let channels = dst.colorspace.channels();
    // Fused per-channel scale and bias on 0..255 values, in output channel order.
    let order: [usize; 4] = match dst.colorspace {
        Colorspace::Bgr => [2, 1, 0, 3],
        _ => [0, 1, 2, 3],
    };
    let (mut scale, mut bias) = ([1.0f32; 4], [0.0f32; 4]);
    for ch in 0..channels {
        // Gray takes the mean/std of its first entry; alpha is never normalized.
        let (mean, std) = match ch {
            3 => (0.0, 1.0),
            _ => (spec.mean[order[ch]], spec.std[order[ch]]),
        };
        let (s, b) = match (dst.dtype, spec.quantization) {
            (_, Some((qs, zp))) => (1.0 / (255.0 * std * qs), -mean / (std * qs) + zp as f32),
            (DType::I8, None) => (1.0, -128.0),
            (d, None) if d.is_float() => (1.0 / (255.0 * std), -mean / std),
            _ => (1.0, 0.0),
        };
        scale[ch] = s;
        // A zero bias is +0.0 (a zero mean gives -0.0): then `v * scale + bias` is never -0.0,
        // whatever the sign of the product, at every level.
        bias[ch] = b + 0.0;
    }
    if scale.iter().chain(&bias).any(|v| !v.is_finite()) {
        return Err(Error::InvalidArgument(format!(
            "mean {:?} / std {:?} / quantization {:?} give a per-channel scale {scale:?} and \
             bias {bias:?} that f32 cannot hold",
            spec.mean, spec.std, spec.quantization
        )));
    }
    Ok((scale, bias))
}

/// Each band's scratch rows: the plane windows' blended rows, the components' and channels'
/// rows at the picture's width, and the multi-tap filters' rings.
pub(super) fn band_scratch(
    bands: usize,
    plane_window: &[(usize, usize); 3],
    width: usize,
    comps: &[Comp],
    multi: &Option<MultiTap>,
) -> Vec<Mutex<Scratch>> {
    // Per component, the slots of its multi-tap ring (none: 0), and of PIL's ring of bytes
    // (`multitap::pil8_row`).
    let ring_slots: [usize; 4] = std::array::from_fn(|k| match (multi, comps.get(k)) {
        (Some(m), Some(comp)) => multitap::ring_slots(m.rows[usize::from(comp.chroma)].taps),
        _ => 0,
    });
    // (AVX2 filters every PIL group through it, `driver::avx2_pil8`; NEON those with
    // tap-by-tap blocks, `driver::neon_pil8`.)
    // (Blended down first, every level filters across into it: `multitap::pil8_down_first`.)
    let whole = multi.as_ref().is_some_and(|m| {
        m.down_first
            || m.round_between
                && (cfg!(target_arch = "x86_64")
                    || cfg!(target_arch = "aarch64")
                        && m.groups.iter().any(|g| {
                            g.whole_taps.is_some()
                                || g.compact.as_ref().is_some_and(|p| p.whole_taps.is_some())
                                || g.planar.as_ref().is_some_and(|p| p.whole_taps.is_some())
                        }))
    });
    let byte_slots = ring_slots.map(|n| if whole { n } else { 0 });
    // A group whose members may lie side by side in its first member's rows
    // (`driver::taps::side_by_side`): that member's ring rows and component row three times as long.
    let wide = |k: usize| match multi.as_ref().map(|m| m.groups.as_slice()) {
        Some([g]) if g.whole10i.is_some() && g.members[0] == k => 3,
        _ => 1,
    };
    (0..bands)
        .map(|_| {
            Mutex::new(Scratch {
                vrows: std::array::from_fn(|p| {
                    Lines::zeroed(plane_window[p].1.saturating_sub(plane_window[p].0))
                }),
                comps: std::array::from_fn(|_| Lines::zeroed(width)),
                chans: std::array::from_fn(|_| Lines::zeroed(width)),
                bytes: std::array::from_fn(|_| Lines::zeroed(width)),
                comp_bytes: std::array::from_fn(|k| Lines::zeroed(wide(k) * width)),
                ring: multitap::Ring {
                    rows: std::array::from_fn(|k| Lines::zeroed(ring_slots[k] * width)),
                    tags: std::array::from_fn(|k| vec![usize::MAX; ring_slots[k]]),
                    acc: Lines::zeroed(if multi.is_some() { width } else { 0 }),
                    sums: match &multi {
                        Some(m)
                            if m.groups.iter().any(|g| {
                                g.w16.is_some()
                                    || g.w8.is_some()
                                    || g.pw8.is_some()
                                    || g.compact.as_ref().is_some_and(|p| p.w16.is_some() || p.w8.is_some())
                            }) =>
                        {
                            Lines::zeroed(m.row_len.iter().copied().max().unwrap_or(0))
                        }
                        _ => Lines::default(),
                    },
                    // (The exact box's packed sums: `box_row`.)
                    packed: match &multi {
                        Some(m)
                            if m.groups.iter().any(|g| {
                                g.compact.as_ref().is_some_and(|p| p.w16.is_some() || p.w8.is_some())
                            }) =>
                        {
                            Lines::zeroed(m.row_len.iter().copied().max().unwrap_or(0))
                        }
                        _ => Lines::default(),
                    },
                    bytes: std::array::from_fn(|k| Lines::zeroed(wide(k) * byte_slots[k] * width)),
                    btags: std::array::from_fn(|k| vec![usize::MAX; byte_slots[k]]),
                    down: std::array::from_fn(|p| match &multi {
                        Some(m) if m.down_first => Lines::zeroed(m.row_len[p]),
                        _ => Lines::default(),
                    }),
                    down_sums: match &multi {
                        Some(m) if m.down_first => {
                            Lines::zeroed(m.row_len.iter().copied().max().unwrap_or(0))
                        }
                        _ => Lines::default(),
                    },
                },
                packed_rows: match &multi {
                    Some(m) if m.groups.iter().any(|g| g.compact.is_some() || g.planar.is_some()) => {
                        Lines::zeroed(multitap::ROWS_AT_ONCE * m.row_len.iter().copied().max().unwrap_or(0))
                    }
                    _ => Lines::default(),
                },
                counts: KernelCounts::default(),
            })
        })
        .collect()
}

/// Where an RGB source's bilinear or nearest blocks take one tap from one row (every column on a
/// sample) into an interleaved float32 RGB or BGR tensor, the three controls a block that pick
/// its pixels' channels in the output's order (`Permute::pixel_picks`): the AVX-512 finish reads
/// them from the frame itself (`avx512::PixelBlocks`).
#[cfg(target_arch = "x86_64")]
pub(super) fn pixel_picks(c: &super::Converter) -> Option<Vec<super::plan::Aligned64<[u8; 64]>>> {
    use super::finish::{channels, order, FLOAT, RGB};
    let f = &c.finish;
    let fits = c.multi.is_none()
        && c.fused_finish
        && c.luma_on_samples
        && f.kind == RGB
        && f.out == FLOAT
        && channels(f.cs) == 3
        && !f.chw
        && c.groups.len() == 1;
    let g = c.groups.first().filter(|_| fits)?;
    let o = order(f.cs);
    g.permute.as_ref()?.pixel_picks(&g.members, [o[0], o[1], o[2]])
}
