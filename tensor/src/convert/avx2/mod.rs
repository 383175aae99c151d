//! The AVX2 (with FMA) level, eight outputs per iteration: sampling through a group's `Shuffle`
//! plan (`pshufb` on 16-byte windows) where its taps are dense and by dword gathers where not,
//! gathers of blended f32 rows (one tap at a time, or NV12's U and V as pairs), and the fused
//! finish for uint8, int8 and float32, hwc or chw. The driver's row loop itself is compiled with
//! AVX2+FMA for this level (`driver::rows`), so the baseline loops it runs vectorize at this width.

#![allow(clippy::needless_range_loop)]

use super::finish::{
    channels, fill_blocks, finish_dispatch, finish_yuv_dispatch, folded, order, yuv_rows, FinishValues,
    SendPtr, FLOAT, GRAY, GRAY_WEIGHTS, RAW8, RGB, YUV,
};
use super::lines::Lines;
use super::plan::{
    group_dispatch, group_tail, whole_base, Aligned32, Group, SampleRow, Shuffle, WEIGHT_UNIT,
};
use std::arch::x86_64::*;

mod boxes;
mod finish_bytes;
mod pixels;
mod rows_first;
mod taps;
mod vertical;
mod whole;
use super::hint::{first_asks, output_asked, prefetch_span, prefetch_store, run_asks, STORE_AHEAD};
pub(super) use boxes::{box_blocks, box_sums, box_sums_split};
pub(super) use finish_bytes::finish_bytes;
pub(super) use pixels::{pack_planar, pixel_words, pixels, pixels_bytes};
pub(super) use taps::{
    multitap, multitap_bytes, multitap_vertical, pack_bytes, pack_bytes_split, pack_bytes_split_halved,
};
pub(super) use vertical::{down_bytes, vertical_bytes};
pub(super) use whole::whole_bytes;

/// The CPU has what the kernels here use.
pub(super) fn detect() -> bool {
    std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")
}

/// `n` blocks of padding from `block` (see `fill_blocks`), in ymm registers.
///
/// # Safety
/// The CPU has AVX; `block` holds `BLOCK` readable bytes and `dst` `n * BLOCK` writable ones.
#[target_feature(enable = "avx")]
pub(super) unsafe fn fill(block: *const u8, dst: *mut u8, n: usize) {
    unsafe { fill_blocks::<__m256i, 6>(block, dst, n) }
}

/// `out[x] = row[i0[x]] + w[x] * (row[i1[x]] - row[i0[x]])` by gathers from a blended f32 row.
/// Returns how many outputs it wrote (a multiple of 8); the caller finishes the tail.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn horizontal(
    row: &[f32],
    i0: &[u32],
    i1: &[u32],
    w: &[f32],
    single: bool,
    out: &mut [f32],
) -> usize {
    use std::arch::x86_64::*;
    let base = row.as_ptr();
    unsafe { lerp_gathered(i0, i1, w, single, out, |idx| _mm256_i32gather_ps::<4>(base, idx)) }
}

/// `out[x] = g(i0) + w * (g(i1) - g(i0))` eight lanes at a time, `g` a gather of eight samples.
/// Integer-ratio downscales (1920 → 640) put every tap on a sample (`single`): one gather only.
#[inline(always)]
unsafe fn lerp_gathered(
    i0: &[u32],
    i1: &[u32],
    w: &[f32],
    single: bool,
    out: &mut [f32],
    gather: impl Fn(std::arch::x86_64::__m256i) -> std::arch::x86_64::__m256,
) -> usize {
    use std::arch::x86_64::*;
    let n = out.len().min(i0.len()).min(i1.len()).min(w.len()) / 8 * 8;
    let mut x = 0;
    while x < n {
        unsafe {
            let a = gather(_mm256_loadu_si256(i0.as_ptr().add(x) as *const __m256i));
            let v = if single {
                a
            } else {
                let b = gather(_mm256_loadu_si256(i1.as_ptr().add(x) as *const __m256i));
                _mm256_fmadd_ps(_mm256_loadu_ps(w.as_ptr().add(x)), _mm256_sub_ps(b, a), a)
            };
            _mm256_storeu_ps(out.as_mut_ptr().add(x), v);
        }
        x += 8;
    }
    n
}

/// `u[x], v[x]` from the (U, V) f32 pairs of `row` at taps `i0` (the U of each pair) and `i1`,
/// eight pixels per iteration: two 64-bit gathers per tap bring eight pairs.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn horizontal_pairs(
    row: &[f32],
    i0: &[u32],
    i1: &[u32],
    w: &[f32],
    single: bool,
    u: &mut [f32],
    v: &mut [f32],
) {
    use std::arch::x86_64::*;
    let n = u.len().min(v.len()).min(i0.len()).min(i1.len()).min(w.len());
    let base = row.as_ptr() as *const f64;
    // Eight (U, V) pairs at the taps in `idx`, split into eight U and eight V.
    let gather = |idx: *const u32| unsafe {
        let lo = _mm256_castpd_ps(_mm256_i32gather_pd::<4>(base, _mm_loadu_si128(idx as *const __m128i)));
        let hi =
            _mm256_castpd_ps(_mm256_i32gather_pd::<4>(base, _mm_loadu_si128(idx.add(4) as *const __m128i)));
        // Within each 128-bit lane: U from even slots, V from odd; then the lanes back in order.
        let us = _mm256_shuffle_ps::<0b10_00_10_00>(lo, hi);
        let vs = _mm256_shuffle_ps::<0b11_01_11_01>(lo, hi);
        let order = _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7);
        (_mm256_permutevar8x32_ps(us, order), _mm256_permutevar8x32_ps(vs, order))
    };
    let lanes = n / 8 * 8;
    let mut x = 0;
    while x < lanes {
        unsafe {
            let (ua, va) = gather(i0.as_ptr().add(x));
            let (uo, vo) = if single {
                (ua, va)
            } else {
                let (ub, vb) = gather(i1.as_ptr().add(x));
                let wv = _mm256_loadu_ps(w.as_ptr().add(x));
                (
                    _mm256_fmadd_ps(wv, _mm256_sub_ps(ub, ua), ua),
                    _mm256_fmadd_ps(wv, _mm256_sub_ps(vb, va), va),
                )
            };
            _mm256_storeu_ps(u.as_mut_ptr().add(x), uo);
            _mm256_storeu_ps(v.as_mut_ptr().add(x), vo);
        }
        x += 8;
    }
    for x in lanes..n {
        let (a, b) = (i0[x] as usize, i1[x] as usize);
        u[x] = row[a] + w[x] * (row[b] - row[a]);
        v[x] = row[a + 1] + w[x] * (row[b + 1] - row[a + 1]);
    }
}

/// One gather group's components at every content column, straight from two source rows' bytes:
/// a dword gather per tap per row brings every member (member `m` is byte `shift` of it), then the
/// horizontal and vertical blends run at output width.
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn gather(
    r0: &[u8],
    r1: &[u8],
    wy: f32,
    g: &Group,
    wx: &[f32],
    single: bool,
    out: &mut [Lines<f32>; 4],
    ahead: [usize; 2],
) -> usize {
    use std::arch::x86_64::*;
    let n = g.i0.len().min(g.i1.len()).min(wx.len());
    let (b0, b1) = (r0.as_ptr() as *const i32, r1.as_ptr() as *const i32);
    let low = _mm256_set1_epi32(0xff);
    let wyv = _mm256_set1_ps(wy);
    let two_rows = wy != 0.0;
    let lanes = n / 8 * 8;
    let mut x = 0;
    while x < lanes {
        unsafe {
            // The lines from the block's first tap to its last, at each distance.
            let (first, last) = (*g.i0.get_unchecked(x) as usize, *g.i1.get_unchecked(x + 7) as usize + 3);
            for d in ahead.into_iter().filter(|&d| d != 0) {
                prefetch_span(r0.as_ptr().wrapping_add(d), first, last);
            }
            let ia = _mm256_loadu_si256(g.i0.as_ptr().add(x) as *const __m256i);
            let ib = _mm256_loadu_si256(g.i1.as_ptr().add(x) as *const __m256i);
            let wxv = _mm256_loadu_ps(wx.as_ptr().add(x));
            let a0 = _mm256_i32gather_epi32::<1>(b0, ia);
            let c0 = if single { a0 } else { _mm256_i32gather_epi32::<1>(b0, ib) };
            let (a1, c1) = if two_rows {
                let a1 = _mm256_i32gather_epi32::<1>(b1, ia);
                (a1, if single { a1 } else { _mm256_i32gather_epi32::<1>(b1, ib) })
            } else {
                (a0, c0)
            };
            for &(k, shift) in &g.members {
                let sh = _mm_cvtsi32_si128(8 * shift as i32);
                let byte = |v: __m256i| _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srl_epi32(v, sh), low));
                let lerp_x = |a: __m256i, c: __m256i| {
                    let fa = byte(a);
                    if single {
                        fa
                    } else {
                        _mm256_fmadd_ps(wxv, _mm256_sub_ps(byte(c), fa), fa)
                    }
                };
                let top = lerp_x(a0, c0);
                let v = if two_rows {
                    _mm256_fmadd_ps(wyv, _mm256_sub_ps(lerp_x(a1, c1), top), top)
                } else {
                    top
                };
                _mm256_storeu_ps(out[k].as_mut_ptr().add(x), v);
            }
        }
        x += 8;
    }
    group_tail(r0, r1, wy, g, wx, lanes..n, out);
    lanes
}

/// The same as `gather` (same arithmetic, so the same values) for groups whose taps are dense
/// enough to be picked out of 16-byte loads by `pshufb` (see `Shuffle`). Returns the columns its
/// blocks wrote.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn sample(row: SampleRow<'_, Shuffle>, wx: &[f32], out: &mut [Lines<f32>; 4]) -> usize {
    assert!(row.plan.reach <= row.r0.len().min(row.r1.len()), "loads stay inside the rows");
    let blocks = match rows_first::row_weight(row.wy, row.single, row.plan) {
        Some(k) => match row.g.members.len() {
            1 => unsafe { rows_first::rows_first_blocks::<1>(&row, k, out) },
            2 => unsafe { rows_first::rows_first_blocks::<2>(&row, k, out) },
            3 => unsafe { rows_first::rows_first_blocks::<3>(&row, k, out) },
            _ => unsafe { rows_first::rows_first_blocks::<4>(&row, k, out) },
        },
        None => group_dispatch!(shuffle_blocks, windows, row, out),
    };
    row.tail(wx, 8, blocks, out)
}

/// Colour, normalization and store of content columns `0..n` (`n` the largest multiple of 8) of
/// row `y` in one pass, eight pixels per iteration: uint8, int8 and float32 outputs, hwc or chw.
/// Going through channel rows and a separate interleaving pass cost about as much as sampling
/// (measured: half of an NV12 → uint8 frame's time). Returns `n`; the caller finishes the row.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn finish(f: &FinishValues, comps: &[Lines<f32>; 4], dst: SendPtr, y: usize) -> usize {
    finish_dispatch!(finish_rows<f32>, f, comps, dst, y)
}

/// `finish` of a YUV source with the luma read straight from the frame by the finish itself:
/// the luma group's one-row, one-tap blocks through its `Shuffle` plan, with their asks
/// (`luma_in_finish`), where `comps[0]` holds only the columns past them. Returns the columns
/// it wrote. Sampled apart, the luma's blocks (three vector operations each) waited for their
/// lines and left 32 bytes a block for the finish to load; inside the finish, whose float ports
/// are full, its loads wait under that work. Intel Xeon, engine, AVX2 level, NV12 1080p, the
/// picture alone, one binary both ways, four rounds: hot 0.152 -> 0.139 ms, 8 rotating frames
/// 0.157-0.158 -> 0.141-0.142; 32 frames 0.264-0.267 -> 0.220-0.230, float32 on 8 frames
/// 0.216-0.225 -> 0.203-0.210; 1600x900 (two-tap luma) not taken, level.
///
/// # Safety
/// As `finish`; `luma` passes `luma_in_finish`.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn finish_luma(
    f: &FinishValues,
    comps: &[Lines<f32>; 4],
    dst: SendPtr,
    y: usize,
    luma: &SampleRow<'_, Shuffle>,
) -> usize {
    finish_yuv_dispatch!(finish_rows_of<true, f32>, f, comps, dst, y, Some(luma))
}

/// Whether the finish can read `row`'s luma itself (`finish_luma`): the group is the Y
/// component alone, its taps on samples, one source row, one vector of windows a block;
/// returns the columns its blocks cover.
pub(super) fn luma_in_finish(row: &SampleRow<'_, Shuffle>) -> Option<usize> {
    let (g, plan) = (row.g, row.plan);
    let alone = g.members.len() == 1 && g.members[0].0 == 0;
    let ok = alone && row.single && row.wy == 0.0 && plan.windows == 2 && plan.reach <= row.r0.len();
    ok.then(|| 8 * plan.bases.len().min(plan.controls.len() / 2).min(g.i0.len() / 8))
}

/// `finish` of a YUV source's components as bytes, widened as they are loaded (as
/// `avx512::finish_yuv_bytes`). `f.kind` is `YUV`.
///
/// # Safety
/// As `finish`.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn finish_yuv_bytes(
    f: &FinishValues,
    comps: &[Lines<u8>; 4],
    dst: SendPtr,
    y: usize,
) -> usize {
    finish_yuv_dispatch!(finish_rows<u8>, f, comps, dst, y)
}

/// A component row's values as the finish loads them, eight at `x`.
trait Values: super::lines::Zeroed {
    unsafe fn load8(row: &[Self], x: usize) -> __m256;
}

impl Values for f32 {
    #[inline(always)]
    unsafe fn load8(row: &[f32], x: usize) -> __m256 {
        unsafe { _mm256_loadu_ps(row.as_ptr().add(x)) }
    }
}

impl Values for u8 {
    #[inline(always)]
    unsafe fn load8(row: &[u8], x: usize) -> __m256 {
        unsafe {
            _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(row.as_ptr().add(x) as *const __m128i)))
        }
    }
}

/// Output colourspace `CS` from source kind `K`, stored as `OUT`. Unoptimized, a function of its
/// own per case (inlined, the cases gave `finish` a 0.33 MB frame; as `avx512::finish_rows`).
#[cfg_attr(debug_assertions, inline(never))]
#[cfg_attr(not(debug_assertions), inline(always))]
unsafe fn finish_rows<S: Values, const K: u8, const CS: u8, const OUT: u8>(
    f: &FinishValues,
    comps: &[Lines<S>; 4],
    dst: SendPtr,
    y: usize,
) -> usize {
    unsafe { finish_rows_of::<false, S, K, CS, OUT>(f, comps, dst, y, None) }
}

/// `finish_rows`, the luma read from the frame where `LUMA` (`finish_luma`).
#[cfg_attr(debug_assertions, inline(never))]
#[cfg_attr(not(debug_assertions), inline(always))]
unsafe fn finish_rows_of<const LUMA: bool, S: Values, const K: u8, const CS: u8, const OUT: u8>(
    f: &FinishValues,
    comps: &[Lines<S>; 4],
    dst: SendPtr,
    y: usize,
    luma_row: Option<&SampleRow<'_, Shuffle>>,
) -> usize {
    use std::arch::x86_64::*;
    let mut n = f.width.min(comps[0].len()) / 8 * 8;
    // The luma's blocks: the frame's row from the window start, each block's two windows and
    // its tap-0 control (`shuffle_blocks::<1, 1, true, false>`).
    let (mut lr, mut lbases, mut lctl, mut lahead): (&[u8], _, _, _) =
        (&[], std::ptr::null::<[u32; 8]>(), std::ptr::null::<Aligned32<[u8; 32]>>(), [0; 2]);
    if LUMA {
        let row = luma_row.expect("a luma row");
        let covered = luma_in_finish(row).expect("a luma row the finish reads");
        // The driver sampled the columns past `covered` alone: none may be left between.
        assert!(covered <= n, "the luma's blocks end within the finished columns");
        n = covered;
        (lr, lbases, lctl, lahead) = (row.r0, row.plan.bases.as_ptr(), row.plan.controls.as_ptr(), row.ahead);
        if n > 0 {
            first_asks(row.r0, row.plan.bases[0][0], row.ahead);
        }
    }
    let x0 = f.x0;
    let esz = if OUT == FLOAT { 4 } else { 1 };
    let (nc, order) = (channels(CS), order(CS));
    let fold = folded(K, CS, OUT);
    let zero = _mm256_setzero_ps();
    let luma = _mm256_set1_ps(f.luma);
    let full = _mm256_set1_ps(255.0);
    let (lov, hiv) = (_mm256_set1_ps(f.lo), _mm256_set1_ps(f.hi));
    // (Plain loops: array `map` closures are compiled without AVX2 and not inlined.)
    let mut m = [[zero; 3]; 3];
    let (mut k, mut gray_w, mut range) = ([zero; 3], [zero; 3], [(zero, zero); 3]);
    let (mut scale, mut bias) = ([zero; 4], [zero; 4]);
    for i in 0..3 {
        for j in 0..3 {
            m[i][j] = _mm256_set1_ps(f.m[i][j]);
        }
        k[i] = _mm256_set1_ps(f.k[i]);
        gray_w[i] = _mm256_set1_ps(GRAY_WEIGHTS[i]);
        range[i] = (_mm256_set1_ps(f.range[i].0), _mm256_set1_ps(f.range[i].1));
    }
    for i in 0..4 {
        scale[i] = _mm256_set1_ps(f.scale[i]);
        bias[i] = _mm256_set1_ps(f.bias[i]);
    }
    let signed = f.signed;
    let ask_out = K == YUV && OUT == FLOAT && output_asked();
    let row = unsafe { dst.0.add(y * f.row_stride + x0 * if f.chw { esz } else { nc * esz }) };
    let mut x = 0;
    while x < n {
        unsafe {
            let ld = |k: usize| S::load8(&comps[k], x);
            // Output channels 0..3 in order (colour, or gray's source RGB).
            let mut ch = [zero, zero, zero, full];
            match K {
                YUV => {
                    let yv = if LUMA {
                        let b = x / 8;
                        let w = *lbases.add(b);
                        run_asks::<false>(lr, b, w[1], lahead);
                        let v = _mm256_loadu2_m128i(
                            lr.as_ptr().add(w[1] as usize) as *const __m128i,
                            lr.as_ptr().add(w[0] as usize) as *const __m128i,
                        );
                        let c = _mm256_load_si256(lctl.add(2 * b) as *const __m256i);
                        _mm256_cvtepi32_ps(_mm256_shuffle_epi8(v, c))
                    } else {
                        ld(0)
                    };
                    let rgb = yuv_rows!(fold, _mm256_mul_ps, _mm256_add_ps, m, k, luma, yv, ld(1), ld(2));
                    for i in 0..3 {
                        let r = order[i];
                        ch[i] = if OUT == RAW8 && nc != 1 {
                            rgb[r]
                        } else {
                            _mm256_min_ps(_mm256_max_ps(rgb[r], range[r].0), range[r].1)
                        };
                    }
                }
                RGB => {
                    for i in 0..3 {
                        ch[i] = ld(order[i]);
                    }
                }
                _ => {
                    let v = ld(0);
                    ch = [v, v, v, full];
                }
            }
            if nc == 1 && K != GRAY {
                // Gray's weights are over R, G, B: the order is RGB's for a one-channel output.
                // `gray`'s operations, in its order.
                let gb = _mm256_add_ps(_mm256_mul_ps(gray_w[2], ch[2]), _mm256_mul_ps(gray_w[1], ch[1]));
                ch[0] = _mm256_add_ps(gb, _mm256_mul_ps(gray_w[0], ch[0]));
            }
            if nc == 4 && f.alpha {
                ch[3] = ld(3);
            }
            if OUT != RAW8 {
                let from = if fold { 3 } else { 0 };
                for i in from..nc {
                    ch[i] = _mm256_add_ps(_mm256_mul_ps(ch[i], scale[i]), bias[i]);
                }
            }
            if OUT == FLOAT {
                if f.chw || nc == 1 {
                    for i in 0..nc {
                        // Every block asks, though a plane's line is two blocks' stores: asking
                        // in every other block only was level or slower (NV12 chw, 8 frames,
                        // 0.290-0.299 -> 0.296-0.303 ms; YUY2 0.332-0.337 -> 0.330-0.347).
                        if ask_out {
                            prefetch_store(row.add(i * f.plane_stride + 4 * x).wrapping_add(STORE_AHEAD));
                        }
                        _mm256_storeu_ps(row.add(i * f.plane_stride + 4 * x) as *mut f32, ch[i]);
                    }
                } else if nc == 3 {
                    let at = row.add(12 * x) as *mut f32;
                    if ask_out {
                        // The 96 bytes' lines, one or two.
                        let line = (at as *const u8).wrapping_add(STORE_AHEAD);
                        prefetch_store(line);
                        prefetch_store(line.wrapping_add(64));
                    }
                    // Per 128-bit lane (four pixels), R, G, B rotated in place so that each of
                    // the three output vectors is two blends of them; then the lanes put in
                    // order. 12 shuffles and blends for 8 pixels where cross-lane permutes of
                    // each channel took 16 (measured: NV12 → float32 0.300 → 0.287 ms).
                    let r = _mm256_permute_ps::<0b01_10_11_00>(ch[0]); // r0 r3 r2 r1
                    let g = _mm256_permute_ps::<0b10_11_00_01>(ch[1]); // g1 g0 g3 g2
                    let b = _mm256_permute_ps::<0b11_00_01_10>(ch[2]); // b2 b1 b0 b3
                    let x0 = _mm256_blend_ps::<0b0100_0100>(_mm256_blend_ps::<0b0010_0010>(r, g), b);
                    let x1 = _mm256_blend_ps::<0b0100_0100>(_mm256_blend_ps::<0b0010_0010>(g, b), r);
                    let x2 = _mm256_blend_ps::<0b0100_0100>(_mm256_blend_ps::<0b0010_0010>(b, r), g);
                    _mm256_storeu_ps(at, _mm256_permute2f128_ps::<0x20>(x0, x1));
                    _mm256_storeu_ps(at.add(8), _mm256_permute2f128_ps::<0x30>(x2, x0));
                    _mm256_storeu_ps(at.add(16), _mm256_permute2f128_ps::<0x31>(x1, x2));
                } else {
                    let at = row.add(16 * x) as *mut f32;
                    let (t0, t1) = (_mm256_unpacklo_ps(ch[0], ch[1]), _mm256_unpackhi_ps(ch[0], ch[1]));
                    let (t2, t3) = (_mm256_unpacklo_ps(ch[2], ch[3]), _mm256_unpackhi_ps(ch[2], ch[3]));
                    // Pixels 0|4, 1|5, 2|6, 3|7, then the halves put in order.
                    let p04 = _mm256_shuffle_ps::<0b01_00_01_00>(t0, t2);
                    let p15 = _mm256_shuffle_ps::<0b11_10_11_10>(t0, t2);
                    let p26 = _mm256_shuffle_ps::<0b01_00_01_00>(t1, t3);
                    let p37 = _mm256_shuffle_ps::<0b11_10_11_10>(t1, t3);
                    _mm256_storeu_ps(at, _mm256_permute2f128_ps::<0x20>(p04, p15));
                    _mm256_storeu_ps(at.add(8), _mm256_permute2f128_ps::<0x20>(p26, p37));
                    _mm256_storeu_ps(at.add(16), _mm256_permute2f128_ps::<0x31>(p04, p15));
                    _mm256_storeu_ps(at.add(24), _mm256_permute2f128_ps::<0x31>(p26, p37));
                }
            } else {
                // Clamped to the type's range, then rounded to nearest, ties to even, by the
                // conversion (the default MXCSR mode; `round_even` in the baseline).
                // (Loops, not array `map`: its closure is compiled without AVX2 and not inlined.)
                let mut q = [_mm256_setzero_si256(); 4];
                for i in 0..nc {
                    q[i] = _mm256_cvtps_epi32(if OUT == RAW8 || (fold && i < 3) {
                        ch[i]
                    } else {
                        _mm256_min_ps(_mm256_max_ps(ch[i], lov), hiv)
                    });
                }
                let flip = _mm256_set1_epi8(-128);
                let pack8 = |a: __m256i, b: __m256i| match (OUT == RAW8, signed) {
                    (true, true) => _mm256_xor_si256(_mm256_packus_epi16(a, b), flip),
                    (false, true) => _mm256_packs_epi16(a, b),
                    _ => _mm256_packus_epi16(a, b),
                };
                if f.chw || nc == 1 {
                    // Bytes 0-3 and 8-11 of the packed vector are the pixels 0-3, 4-7.
                    let order = _mm256_setr_epi32(0, 4, 1, 1, 1, 1, 1, 1);
                    for i in 0..nc {
                        let w = _mm256_packs_epi32(q[i], q[i]);
                        let b = _mm256_permutevar8x32_epi32(pack8(w, w), order);
                        _mm_storel_epi64(
                            row.add(i * f.plane_stride + x) as *mut __m128i,
                            _mm256_castsi256_si128(b),
                        );
                    }
                } else if nc == 3 {
                    // Per half: R0-3 G0-3 B0-3 B0-3, interleaved to 12 bytes, halves joined.
                    let b = pack8(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[2]));
                    let pick = _mm256_setr_epi8(
                        0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, -1, -1, -1, -1, 0, 4, 8, 1, 5, 9, 2, 6, 10, 3,
                        7, 11, -1, -1, -1, -1,
                    );
                    let b = _mm256_shuffle_epi8(b, pick);
                    let at = row.add(3 * x);
                    if x + 8 < n {
                        // Each half's 12 bytes by a 16-byte store; the second's last 4 land where
                        // the next block's first store goes.
                        _mm_storeu_si128(at as *mut __m128i, _mm256_castsi256_si128(b));
                        _mm_storeu_si128(at.add(12) as *mut __m128i, _mm256_extracti128_si256::<1>(b));
                    } else {
                        let b = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 3, 7));
                        _mm_storeu_si128(at as *mut __m128i, _mm256_castsi256_si128(b));
                        _mm_storel_epi64(at.add(16) as *mut __m128i, _mm256_extracti128_si256::<1>(b));
                    }
                } else {
                    let b = pack8(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
                    let pick = _mm256_setr_epi8(
                        0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15, 0, 4, 8, 12, 1, 5, 9, 13, 2, 6,
                        10, 14, 3, 7, 11, 15,
                    );
                    _mm256_storeu_si256(row.add(4 * x) as *mut __m256i, _mm256_shuffle_epi8(b, pick));
                }
            }
        }
        x += 8;
    }
    n
}

/// Whole numbers times a power of two, the floats `_mm256_mul_ps(_mm256_cvtepi32_ps(a), unit)`
/// makes, by an `or` and a subtract (`plan::whole_base`). The bilinear rows-first blocks take it
/// (`rows_first_blocks`; their conversions and scales were a third of their float-port work):
/// engine, NV12 1080p, two builds alternated four times, hot 0.185-0.187 -> 0.183-0.184 ms, 8
/// rotating frames 0.198-0.204 -> 0.195-0.198. In `shuffle_blocks` (YUY2's and 2.5x luma's
/// taps) it measured level or slower: their `pshufb`s hold the port the `or` would share.
#[derive(Clone, Copy)]
pub(super) struct Scaled {
    bits: __m256i,
    base: __m256,
}

impl Scaled {
    /// # Safety
    /// The CPU has AVX.
    #[inline(always)]
    pub(super) unsafe fn new(unit: f32) -> Scaled {
        let base = whole_base(unit);
        Scaled { bits: _mm256_set1_epi32(base.to_bits() as i32), base: _mm256_set1_ps(base) }
    }

    /// `a · unit` for whole `a` in `0..2^23`.
    ///
    /// # Safety
    /// The CPU has AVX2.
    #[inline(always)]
    pub(super) unsafe fn of(self, a: __m256i) -> __m256 {
        _mm256_sub_ps(_mm256_castsi256_ps(_mm256_or_si256(a, self.bits)), self.base)
    }
}

/// The blocks of `sample` with `P` vectors of windows (1: two windows of four outputs; 2:
/// four of two, OR-ed), `M` members, taps on samples (`SINGLE`) or not, one source row or two
/// (`TWO`); returns how many blocks it wrote. Unoptimized, a function of its own per case
/// (inlined, the cases gave `sample` a 0.19 MB frame; as `finish_rows`).
#[cfg_attr(debug_assertions, inline(never))]
#[cfg_attr(not(debug_assertions), inline(always))]
unsafe fn shuffle_blocks<const P: usize, const M: usize, const SINGLE: bool, const TWO: bool>(
    row: &SampleRow<'_, Shuffle>,
    out: &mut [Lines<f32>; 4],
) -> usize {
    let SampleRow { r0, r1, wy, g, plan, wq, ahead, .. } = *row;
    use std::arch::x86_64::*;
    assert!(g.members.len() >= M && (1..=4).contains(&M));
    let per_block = M * 2 * P;
    let (rows, width) = g.member_rows::<M>(out);
    let blocks = plan.bases.len().min(wq.len() / 8).min(plan.controls.len() / per_block).min(width / 8);
    let wyv = _mm256_set1_ps(wy);
    let unit = _mm256_set1_ps(WEIGHT_UNIT);
    let tap = if SINGLE { 0 } else { P };
    let (bases, controls) = (plan.bases.as_ptr(), plan.controls.as_ptr());
    if blocks > 0 {
        first_asks(r0, plan.bases[0][0], ahead);
    }
    for b in 0..blocks {
        unsafe {
            let w = *bases.add(b);
            run_asks::<TWO>(r0, b, w[2 * P - 1], ahead);
            // Vector p's lanes are windows p and p + P: the plan keeps every base + 16 within
            // `reach`.
            let load = |r: &[u8], p: usize| {
                _mm256_loadu2_m128i(
                    r.as_ptr().add(w[p + P] as usize) as *const __m128i,
                    r.as_ptr().add(w[p] as usize) as *const __m128i,
                )
            };
            let mut v0 = [_mm256_setzero_si256(); P];
            let mut v1 = [_mm256_setzero_si256(); P];
            for p in 0..P {
                v0[p] = load(r0, p);
                if TWO {
                    v1[p] = load(r1, p);
                }
            }
            let wqv = if SINGLE {
                _mm256_setzero_si256()
            } else {
                _mm256_loadu_si256(wq.as_ptr().add(8 * b) as *const __m256i)
            };
            let ctl = controls.add(b * per_block);
            for j in 0..M {
                // On samples: the tap's byte; else both taps' bytes blended by one multiply-add
                // of the weight pair (exact in i32, scaled back below).
                let c = ctl.add(2 * P * j + tap);
                let pick = |v: &[__m256i; P]| {
                    let mut t = _mm256_shuffle_epi8(v[0], _mm256_loadu_si256(c as *const __m256i));
                    for p in 1..P {
                        let u = _mm256_shuffle_epi8(v[p], _mm256_loadu_si256(c.add(p) as *const __m256i));
                        t = _mm256_or_si256(t, u);
                    }
                    _mm256_cvtepi32_ps(if SINGLE { t } else { _mm256_madd_epi16(t, wqv) })
                };
                let top = pick(&v0);
                let mut v = if TWO { _mm256_fmadd_ps(wyv, _mm256_sub_ps(pick(&v1), top), top) } else { top };
                if !SINGLE {
                    v = _mm256_mul_ps(v, unit);
                }
                _mm256_storeu_ps(rows[j].add(8 * b), v);
            }
        }
    }
    blocks
}
