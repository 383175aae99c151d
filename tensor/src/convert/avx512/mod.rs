//! The AVX-512 (F, BW, VL, VBMI) kernels, sixteen outputs per iteration: sampling through a
//! group's `Permute` plan (masked byte permutes per component and block), and the fused finish with the
//! 8-bit interleave as one `vpermb` over the packed channels, the float32 one as two-source
//! permutes, and the row's last columns under masks instead of a scalar tail. The multi-tap
//! filters' kernels are in `taps.rs`, an exact box's in `boxes.rs`.

#![allow(clippy::needless_range_loop)]

use super::finish::{
    channels, fill_blocks, finish_dispatch, finish_yuv_dispatch, folded, order, yuv_rows, FinishValues,
    SendPtr, CS_BGR, CS_RGB, FLOAT, GRAY, GRAY_WEIGHTS, RAW8, RGB, YUV,
};
use super::hint::{output_asked, prefetch_store, Trickle, STORE_AHEAD};
use super::lines::Lines;
use std::arch::x86_64::*;

mod boxes;
mod finish_bytes;
mod quads;
mod sample;
mod taps;
mod vertical;
pub(super) use boxes::{box_blocks, box_even, box_sums, box_sums_split, pack_words};
pub(super) use finish_bytes::{finish_bytes, finish_side_by_side};
pub(super) use quads::{box_quads, vnni};
pub(super) use sample::{sample, sample_pair, ChromaBlocks, LumaBlocks, PixelBlocks};
use sample::{CHROMA_ONE, CHROMA_SINGLE, CHROMA_TWO, HALVES, NARROW, SPLIT};
pub(super) use taps::{multitap, multitap_bytes, pack_bytes, pack_bytes_split, whole_bytes};
pub(super) use vertical::{down_bytes, multitap_vertical, vertical_bytes};

/// Whole numbers times a power of two, the floats `_mm512_mul_ps(_mm512_cvtepi32_ps(a), unit)`
/// makes, by an `or` and a subtract (`plan::whole_base`): one float operation where there were
/// two, on the two ports the 512-bit float work and the permutes share (the Intel Xeon of
/// docs/benchmark-log.md runs 512-bit conversions and multiplies two a cycle, the fortieth
/// section's probes). Taken by the bilinear rows-first blocks (NV12's U
/// and V): engine, two builds alternated four to six times, hot 0.145-0.147 -> 0.143-0.146 ms,
/// 1600x900 on 8 frames 0.161-0.166 -> 0.159-0.161; in `Sampled` (the one-row taps) YUY2 went
/// 0.136 -> 0.139 hot, its `vpermb`s on the port the `or` shares.
#[derive(Clone, Copy)]
pub(super) struct Scaled {
    bits: __m512i,
    base: __m512,
}

impl Scaled {
    /// # Safety
    /// The CPU has AVX-512 F.
    #[inline(always)]
    pub(super) unsafe fn new(unit: f32) -> Scaled {
        let base = super::plan::whole_base(unit);
        Scaled { bits: _mm512_set1_epi32(base.to_bits() as i32), base: _mm512_set1_ps(base) }
    }

    /// `a · unit` for whole `a` in `0..2^23`.
    ///
    /// # Safety
    /// The CPU has AVX-512 F.
    #[inline(always)]
    pub(super) unsafe fn of(self, a: __m512i) -> __m512 {
        _mm512_sub_ps(_mm512_castsi512_ps(_mm512_or_si512(a, self.bits)), self.base)
    }
}

/// The CPU has what the kernels here use (`vpermb` is VBMI).
pub(super) fn detect() -> bool {
    std::is_x86_feature_detected!("avx512f")
        && std::is_x86_feature_detected!("avx512bw")
        && std::is_x86_feature_detected!("avx512vl")
        && std::is_x86_feature_detected!("avx512vbmi")
}

/// `n` blocks of padding from `block` (see `fill_blocks`), in zmm registers.
///
/// # Safety
/// The CPU has AVX-512 F; `block` holds `BLOCK` readable bytes and `dst` `n * BLOCK` writable ones.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn fill(block: *const u8, dst: *mut u8, n: usize) {
    unsafe { fill_blocks::<__m512i, 3>(block, dst, n) }
}

/// A row of bytes as floats (`multitap::pil8_down_first`'s components, from the bytes PIL's
/// horizontal pass made), sixteen a step: the row driver's loop, built for AVX2, took eight,
/// a third of the driver's time in 1080p YUY2 `bilinear-antialias`.
///
/// # Safety
/// The CPU has AVX-512 F.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn widen(bytes: &[u8], out: &mut [f32]) {
    let n = bytes.len().min(out.len());
    let whole = n / 16 * 16;
    for x in (0..whole).step_by(16) {
        unsafe {
            let v = _mm512_cvtepu8_epi32(_mm_loadu_si128(bytes.as_ptr().add(x) as *const __m128i));
            _mm512_storeu_ps(out.as_mut_ptr().add(x), _mm512_cvtepi32_ps(v));
        }
    }
    for x in whole..n {
        out[x] = bytes[x] as f32;
    }
}

/// Byte `j` of a pixel-interleaved run of `C`-channel pixels, from the packed vector in which
/// 128-bit lane `l` holds channel `c` of pixels `4l..4l+4` at bytes `16l + 4c ..`.
const fn interleave8<const C: usize>() -> [u8; 64] {
    let mut t = [0u8; 64];
    let mut j = 0;
    while j < 16 * C {
        let (p, c) = (j / C, j % C);
        t[j] = (16 * (p / 4) + 4 * c + p % 4) as u8;
        j += 1;
    }
    t
}

/// For float32 RGB: per output vector `k` (floats `16k..16k+16` of the run), the index vectors of
/// `permutex2var(R, a, G)` (R and G in place, B's slots unused) and of
/// `permutex2var(that, b, B)`.
const fn interleave_f32_rgb() -> [[[u32; 16]; 2]; 3] {
    let mut t = [[[0u32; 16]; 2]; 3];
    let mut k = 0;
    while k < 3 {
        let mut i = 0;
        while i < 16 {
            let j = 16 * k + i;
            let (p, c) = ((j / 3) as u32, j % 3);
            t[k][0][i] = match c {
                0 => p,
                1 => 16 + p,
                _ => 0,
            };
            t[k][1][i] = if c == 2 { 16 + p } else { i as u32 };
            i += 1;
        }
        k += 1;
    }
    t
}

const RGB8: [u8; 64] = interleave8::<3>();
const RGBA8: [u8; 64] = interleave8::<4>();
const RGB32: [[[u32; 16]; 2]; 3] = interleave_f32_rgb();

/// Colour, normalization and store of every content column of row `y` (the arithmetic of
/// `avx2::finish`, lane for lane). One loop per source kind, output colourspace and
/// output form, the blocks of sixteen unmasked and the row's last columns under masks: a
/// colourspace match and mask arithmetic left in the loop were a fifth of its samples
/// (measured: NV12 → float32 0.255 → 0.240 ms).
///
/// # Safety
/// The CPU has AVX-512 F/BW/VL/VBMI; `dst` holds the converter's layout; `comps` rows hold the
/// content width.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx2,fma")]
pub(super) unsafe fn finish(f: &FinishValues, comps: &[Lines<f32>; 4], dst: SendPtr, y: usize) -> usize {
    finish_dispatch!(finish_rows<f32>, f, comps, dst, y, Trickle::NONE)
}

/// `finish` of a YUV source with the luma read from the frame by the finish itself (`luma`'s
/// blocks), `comps[0]` holding only the columns past them, the chroma sampled before it: the rows
/// where `finish_yuv` cannot read the chroma's blocks too (its shape not the luma's, fewer blocks,
/// or a plane the driver blends first). Intel Xeon, engine, YUY2 1080p float32, one binary with a
/// switch set on one side, four rounds (side by side → the luma in the finish, ms): hot 0.164–0.166
/// → 0.157–0.161, 8 frames 0.169–0.171 → 0.167–0.169, 32 frames 0.240–0.249 → 0.237–0.244; the
/// element's 8 camera frames 0.201–0.205 → 0.196–0.199. Its uint8 figures then, 8 frames
/// 0.136–0.138 → 0.141–0.143, were taken the same way, with the switch in the environment of one
/// side only, which moves a run by itself (docs/benchmark-log.md, the forty-second section):
/// `finish_yuv`, both groups in the finish, measured faster for uint8 by two builds alternated.
///
/// # Safety
/// As `finish`.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx2,fma")]
pub(super) unsafe fn finish_luma(
    f: &FinishValues,
    comps: &[Lines<f32>; 4],
    dst: SendPtr,
    y: usize,
    luma: &LumaBlocks<'_>,
) -> usize {
    match luma.shape {
        NARROW => {
            finish_yuv_dispatch!(finish_rows_of<FIRST_LUMA, NARROW, f32>, f, comps, dst, y, First::Luma(luma))
        }
        _ => {
            finish_yuv_dispatch!(finish_rows_of<FIRST_LUMA, HALVES, f32>, f, comps, dst, y, First::Luma(luma))
        }
    }
}

/// `finish_luma` with the chroma's blocks read by the finish too (`chroma`: one row, YUY2's, or two
/// blended first, NV12's; the luma's shape and count), `comps` holding only the columns past them,
/// for every output. The sampling's pass waited for its lines and stored float rows the finish
/// loaded again; here its loads, and their asks for the next rows' lines, go under the finish's
/// work and stores. Intel Xeon, 1080p at 3× (the luma alone in the finish, or beside the chroma in
/// `sample_pair`, → both, ms): float32, engine, two builds alternated three times, YUY2 hot
/// 0.158–0.159 → 0.154–0.155, 8 frames 0.171–0.175 → 0.161–0.163 (MPEG-2 siting 0.175–0.181 →
/// 0.162–0.167), 32 frames 0.184–0.228 → 0.173–0.176; the element's 8 camera frames 0.200–0.206 →
/// 0.184–0.187; NV12 engine 8 frames 0.173 → 0.169–0.170, hot 0.168–0.169 → 0.165, element 8 frames
/// 0.192–0.194 → 0.189–0.191, 32 frames level. uint8 (the sampling beside the finish kept until
/// then, `finish_luma`'s measurements), engine, two builds alternated three times: YUY2 hot
/// 0.112–0.113 → 0.101, 8 frames 0.130–0.133 → 0.115–0.117, 32 frames 0.121–0.127 → 0.107–0.109,
/// NV12 hot 0.114–0.115 → 0.108, 8 frames 0.124 → 0.117, 32 frames 0.120–0.121 → 0.115–0.117; the
/// element, two bench builds alternated twice: YUY2 x8 0.148–0.149 → 0.139–0.141, x32 0.152–0.164 →
/// 0.144–0.152, NV12 x8 0.141 → 0.134–0.136, x32 0.146–0.151 → 0.139–0.149, float32 level.
///
/// # Safety
/// As `finish`; `f.kind` is `YUV`.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx2,fma")]
pub(super) unsafe fn finish_yuv(
    f: &FinishValues,
    comps: &[Lines<f32>; 4],
    dst: SendPtr,
    y: usize,
    luma: &LumaBlocks<'_>,
    chroma: &ChromaBlocks<'_>,
) -> usize {
    macro_rules! cs {
        ($first:ident, $shape:ident) => {
            finish_yuv_dispatch!(finish_rows_of<$first, $shape, f32>, f, comps, dst, y, First::Yuv(luma, chroma))
        };
    }
    match (luma.shape, chroma.rows) {
        (NARROW, CHROMA_ONE) => cs!(FIRST_YUV, NARROW),
        (NARROW, CHROMA_SINGLE) => cs!(FIRST_YUV_SINGLE, NARROW),
        (NARROW, _) => cs!(FIRST_YUV_TWO, NARROW),
        (_, CHROMA_ONE) => cs!(FIRST_YUV, HALVES),
        (_, CHROMA_SINGLE) => cs!(FIRST_YUV_SINGLE, HALVES),
        (_, _) => cs!(FIRST_YUV_TWO, HALVES),
    }
}

/// `finish` of an RGB source into an interleaved float32 RGB or BGR row with the first blocks'
/// pixels read from the frame by the finish itself (`px`, picked in the output's order), `comps`
/// holding only the columns past them: the driver takes it where every tap is on a sample of one
/// source row (RGBA and the other RGB sources at 3×). The sampling's pass over the row waited for
/// the frame's lines and stored three float rows the finish loaded again; here each block's picks
/// put its 48 values in the output's order, so a block is four permutes and an `or`, three
/// conversions, the normalization and three stores, beside which the loads wait. Intel Xeon, RGBA
/// 1080p, one binary with a switch, three rounds (the sampling's pass → in the finish, ms): engine
/// hot 0.211 → 0.202, 8 frames 0.212–0.213 → 0.203–0.204, 32 frames 0.247–0.297 → 0.222–0.233; the
/// element's 8 camera frames, float32 with mean/std, 0.240–0.242 → 0.227 (uint8 0.171–0.173 either
/// way).
///
/// # Safety
/// As `finish`; `f.kind` is `RGB`, `f.out` `FLOAT`, `f.cs` three channels, not planar.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx2,fma")]
pub(super) unsafe fn finish_pixels(
    f: &FinishValues,
    comps: &[Lines<f32>; 4],
    dst: SendPtr,
    y: usize,
    px: &PixelBlocks<'_>,
) -> usize {
    macro_rules! cs {
        ($shape:ident) => {
            match f.cs {
                CS_BGR => finish_rows_of::<FIRST_PIXELS, $shape, f32, RGB, CS_BGR, FLOAT>(
                    f,
                    comps,
                    dst,
                    y,
                    First::Pixels(px),
                ),
                _ => finish_rows_of::<FIRST_PIXELS, $shape, f32, RGB, CS_RGB, FLOAT>(
                    f,
                    comps,
                    dst,
                    y,
                    First::Pixels(px),
                ),
            }
        };
    }
    unsafe {
        match px.shape {
            NARROW => cs!(NARROW),
            HALVES => cs!(HALVES),
            _ => cs!(SPLIT),
        }
    }
}

/// `finish` of a YUV source's components as bytes (PIL's blended-down-first rows,
/// `multitap::pil8_down_first`), each widened as it is loaded: the same floats, so the same
/// output, without a pass that stores them first (`widen`, 4 % of the frame's samples). Engine,
/// 1080p YUY2 `bilinear-antialias`, 8 rotating frames, two builds alternated: uint8
/// 0.326–0.350 → 0.309–0.326 ms, float32 0.491–0.496 → 0.452–0.475; AVX2 (its
/// `finish_yuv_bytes`) 0.431–0.441 → 0.408–0.419. `f.kind` is `YUV`. Its blocks ask for
/// `asks`' lines, a few each (`Trickle::ask_l2`: a later row's source rows the vertical pass
/// left to it, `multitap::FINISH_ASKED_ROWS`).
///
/// # Safety
/// As `finish`.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx2,fma")]
pub(super) unsafe fn finish_yuv_bytes(
    f: &FinishValues,
    comps: &[Lines<u8>; 4],
    dst: SendPtr,
    y: usize,
    asks: Trickle,
) -> usize {
    finish_yuv_dispatch!(finish_rows<u8>, f, comps, dst, y, asks)
}

/// A component row's values as the finish loads them, sixteen (or the lanes of `px`) at `x`.
trait Values: super::lines::Zeroed {
    unsafe fn load16(row: &[Self], x: usize, px: u16) -> __m512;
}

impl Values for f32 {
    #[inline(always)]
    unsafe fn load16(row: &[f32], x: usize, px: u16) -> __m512 {
        unsafe { _mm512_maskz_loadu_ps(px, row.as_ptr().add(x)) }
    }
}

impl Values for u8 {
    #[inline(always)]
    unsafe fn load16(row: &[u8], x: usize, px: u16) -> __m512 {
        unsafe {
            let b = _mm_maskz_loadu_epi8(px, row.as_ptr().add(x) as *const i8);
            _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(b))
        }
    }
}

/// The per-row constants of `finish_rows`: `FinishValues` broadcast.
struct Consts {
    m: [[__m512; 3]; 3],
    k: [__m512; 3],
    scale: [__m512; 4],
    bias: [__m512; 4],
    gray: [__m512; 3],
    /// Per channel, with the normalization folded into `m` and `k`: the range the colour clamp
    /// and the type's range leave.
    range: [(__m512, __m512); 3],
    luma: __m512,
    lo: __m512,
    hi: __m512,
    alpha: bool,
    signed: bool,
    chw: bool,
    plane_stride: usize,
    /// Ask for the float32 output's lines ahead of the stores (`hint::prefetch_store`).
    ask_out: bool,
}

impl Consts {
    /// `f`'s values broadcast, for source kind `K` and output form `OUT`.
    ///
    /// # Safety
    /// The CPU has AVX-512 F.
    #[inline(always)]
    unsafe fn new<const K: u8, const OUT: u8>(f: &FinishValues) -> Consts {
        let zero = _mm512_setzero_ps();
        let mut k = Consts {
            m: [[zero; 3]; 3],
            k: [zero; 3],
            scale: [zero; 4],
            bias: [zero; 4],
            gray: [zero; 3],
            range: [(zero, zero); 3],
            luma: _mm512_set1_ps(f.luma),
            lo: _mm512_set1_ps(f.lo),
            hi: _mm512_set1_ps(f.hi),
            alpha: f.alpha,
            signed: f.signed,
            chw: f.chw,
            plane_stride: f.plane_stride,
            ask_out: K == YUV && OUT == FLOAT && output_asked(),
        };
        for i in 0..3 {
            for j in 0..3 {
                k.m[i][j] = _mm512_set1_ps(f.m[i][j]);
            }
            k.k[i] = _mm512_set1_ps(f.k[i]);
            k.range[i] = (_mm512_set1_ps(f.range[i].0), _mm512_set1_ps(f.range[i].1));
            k.gray[i] = _mm512_set1_ps(GRAY_WEIGHTS[i]);
        }
        for i in 0..4 {
            k.scale[i] = _mm512_set1_ps(f.scale[i]);
            k.bias[i] = _mm512_set1_ps(f.bias[i]);
        }
        k
    }
}

/// `finish` for one source kind, colourspace and output form. Unoptimized, a function of its own
/// per case: inlined, the 36 cases gave `finish` a 0.94 MB frame (as `taps::whole_blocks`).
#[cfg_attr(debug_assertions, inline(never))]
#[cfg_attr(not(debug_assertions), inline(always))]
unsafe fn finish_rows<S: Values, const K: u8, const CS: u8, const OUT: u8>(
    f: &FinishValues,
    comps: &[Lines<S>; 4],
    dst: SendPtr,
    y: usize,
    asks: Trickle,
) -> usize {
    unsafe { finish_rows_of::<FIRST_NONE, 0, S, K, CS, OUT>(f, comps, dst, y, First::None(asks)) }
}

/// The blocks a finish reads from the frame itself before the rest of its row.
#[derive(Clone, Copy)]
enum First<'a> {
    /// None: the components' rows alone, the blocks asking for the trickle's lines.
    None(Trickle),
    /// A YUV source's luma (`finish_luma`).
    Luma(&'a LumaBlocks<'a>),
    /// A YUV source's luma and chroma (`finish_yuv`).
    Yuv(&'a LumaBlocks<'a>, &'a ChromaBlocks<'a>),
    /// An RGB source's pixels (`finish_pixels`).
    Pixels(&'a PixelBlocks<'a>),
}

/// `finish_rows_of`'s `FIRST`: which of `First`'s kinds its instance takes (the others' loops
/// left out of it), the chroma's rows as `ChromaBlocks::rows` says.
const FIRST_NONE: u8 = 0;
const FIRST_LUMA: u8 = 1;
const FIRST_YUV: u8 = 2;
const FIRST_YUV_SINGLE: u8 = 3;
const FIRST_YUV_TWO: u8 = 4;
const FIRST_PIXELS: u8 = 5;

/// `finish_rows`, the row's first blocks from `first` (of kind `FIRST`, windows `SHAPE`).
#[cfg_attr(debug_assertions, inline(never))]
#[cfg_attr(not(debug_assertions), inline(always))]
unsafe fn finish_rows_of<
    const FIRST: u8,
    const SHAPE: u8,
    S: Values,
    const K: u8,
    const CS: u8,
    const OUT: u8,
>(
    f: &FinishValues,
    comps: &[Lines<S>; 4],
    dst: SendPtr,
    y: usize,
    first: First<'_>,
) -> usize {
    let n = f.width.min(comps[0].len());
    let k = unsafe { Consts::new::<K, OUT>(f) };
    let esz = if OUT == FLOAT { 4 } else { 1 };
    let row = unsafe { dst.0.add(y * f.row_stride + f.x0 * if f.chw { esz } else { channels(CS) * esz }) };
    let mut x = 0;
    // The lines the blocks after the first ask for (`First::None`'s).
    let mut asks = Trickle::NONE;
    match first {
        First::Luma(luma) if FIRST == FIRST_LUMA => {
            assert!(16 * luma.count <= n, "the luma's blocks end within the finished columns");
            for b in 0..luma.count {
                unsafe {
                    let yv = _mm512_cvtepi32_ps(luma.value::<SHAPE>(b));
                    pixels::<S, K, CS, OUT, false>(&k, comps, row, 16 * b, 16, Some(yv), None)
                };
            }
            x = 16 * luma.count;
        }
        First::Yuv(luma, chroma) if matches!(FIRST, FIRST_YUV | FIRST_YUV_SINGLE | FIRST_YUV_TWO) => {
            assert!(16 * luma.count <= n && chroma.count == luma.count, "the blocks end within the row");
            // The common layout (interleaved, unsigned) as constants: read from `k` in every
            // block, the two flags' tests and the planar and signed paths stayed in the loop
            // (NV12 uint8 on 8 frames 5 % slower, Zen 5).
            match (k.chw, k.signed) {
                (false, false) => unsafe {
                    yuv_blocks::<FIRST, SHAPE, S, K, CS, OUT, true>(&k, comps, row, luma, chroma)
                },
                _ => unsafe {
                    yuv_blocks::<FIRST, SHAPE, S, K, CS, OUT, false>(&k, comps, row, luma, chroma)
                },
            }
            x = 16 * luma.count;
        }
        First::Pixels(px) if FIRST == FIRST_PIXELS => {
            assert!(
                K == RGB && OUT == FLOAT && channels(CS) == 3 && !f.chw,
                "an interleaved float32 RGB row"
            );
            assert!(16 * px.count <= n, "the pixels' blocks end within the finished columns");
            // Value `16v + l` of a block is output channel `(16v + l) % 3`: its scale and bias
            // (lanes by index, not by closures: those stayed calls, as `pack8`'s did).
            let mut at = [[[0f32; 16]; 3]; 2];
            for v in 0..3 {
                for l in 0..16 {
                    at[0][v][l] = f.scale[(16 * v + l) % 3];
                    at[1][v][l] = f.bias[(16 * v + l) % 3];
                }
            }
            let (scale, bias) = unsafe {
                let ld = |i: usize, v: usize| _mm512_loadu_ps(at[i][v].as_ptr());
                ([ld(0, 0), ld(0, 1), ld(0, 2)], [ld(1, 0), ld(1, 1), ld(1, 2)])
            };
            for b in 0..px.count {
                unsafe {
                    let values = px.values::<SHAPE>(b);
                    let at = row.add(192 * b) as *mut f32;
                    for v in 0..3 {
                        // `pixels`' operations, in its order.
                        let o =
                            _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(values[v]), scale[v]), bias[v]);
                        _mm512_storeu_ps(at.add(16 * v), o);
                    }
                }
            }
            x = 16 * px.count;
        }
        First::None(trickle) if FIRST == FIRST_NONE => asks = trickle,
        _ => unreachable!("a finish's first blocks of the kind its instance takes"),
    }
    let per = asks.pace((n - x) / 16);
    while x + 16 <= n {
        if per != 0 {
            asks.ask_l2(per);
        }
        unsafe { pixels::<S, K, CS, OUT, false>(&k, comps, row, x, 16, None, None) };
        x += 16;
    }
    if x < n {
        unsafe { pixels::<S, K, CS, OUT, false>(&k, comps, row, x, n - x, None, None) };
    }
    n
}

/// A row's blocks whose luma and chroma the finish reads from the frame (`finish_yuv`), the
/// output interleaved and unsigned where `PLAIN` (`pixels`).
#[inline(always)]
unsafe fn yuv_blocks<
    const FIRST: u8,
    const SHAPE: u8,
    S: Values,
    const K: u8,
    const CS: u8,
    const OUT: u8,
    const PLAIN: bool,
>(
    k: &Consts,
    comps: &[Lines<S>; 4],
    row: *mut u8,
    luma: &LumaBlocks<'_>,
    chroma: &ChromaBlocks<'_>,
) {
    for b in 0..luma.count {
        unsafe {
            let yv = _mm512_cvtepi32_ps(luma.value::<SHAPE>(b));
            let uv = match FIRST {
                FIRST_YUV_SINGLE => chroma.values::<SHAPE, CHROMA_SINGLE>(b),
                FIRST_YUV_TWO => chroma.values::<SHAPE, CHROMA_TWO>(b),
                _ => chroma.values::<SHAPE, CHROMA_ONE>(b),
            };
            pixels::<S, K, CS, OUT, PLAIN>(k, comps, row, 16 * b, 16, Some(yv), Some(uv))
        };
    }
}

/// Pixels `x..x + left` (`left` ≤ 16; loads and stores masked below 16), a YUV source's luma
/// given (`finish_luma`) or loaded from `comps[0]`; `PLAIN`: the output is interleaved and
/// unsigned (`k.chw` and `k.signed` false), known to the compiler.
#[inline(always)]
unsafe fn pixels<S: Values, const K: u8, const CS: u8, const OUT: u8, const PLAIN: bool>(
    k: &Consts,
    comps: &[Lines<S>; 4],
    row: *mut u8,
    x: usize,
    left: usize,
    luma: Option<__m512>,
    chroma: Option<[__m512; 2]>,
) {
    let (nc, order, fold) = (channels(CS), order(CS), folded(K, CS, OUT));
    let (chw, signed) = if PLAIN { (false, false) } else { (k.chw, k.signed) };
    let px: u16 = if left >= 16 { !0 } else { (1u16 << left) - 1 };
    // Lanes `from..` of a store of the pixels' `nc * left` values.
    let lanes = |from: usize, width: usize| -> u64 {
        let bits = (nc * left).saturating_sub(from).min(width);
        if bits >= 64 {
            !0
        } else {
            (1u64 << bits) - 1
        }
    };
    let zero = _mm512_setzero_ps();
    let full = _mm512_set1_ps(255.0);
    unsafe {
        let ld = |i: usize| S::load16(&comps[i], x, px);
        // Output channels 0..3 in order (colour, or gray's source RGB), 0..255.
        let mut ch = [zero, zero, zero, full];
        match K {
            YUV => {
                let yv = luma.unwrap_or_else(|| ld(0));
                let [u, v] = chroma.unwrap_or_else(|| [ld(1), ld(2)]);
                let rgb = yuv_rows!(fold, _mm512_mul_ps, _mm512_add_ps, k.m, k.k, k.luma, yv, u, v);
                for i in 0..3 {
                    let r = order[i];
                    ch[i] = if OUT == RAW8 && nc != 1 {
                        rgb[r]
                    } else {
                        _mm512_min_ps(_mm512_max_ps(rgb[r], k.range[r].0), k.range[r].1)
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
            let gb = _mm512_add_ps(_mm512_mul_ps(k.gray[2], ch[2]), _mm512_mul_ps(k.gray[1], ch[1]));
            ch[0] = _mm512_add_ps(gb, _mm512_mul_ps(k.gray[0], ch[0]));
        }
        if nc == 4 && k.alpha {
            ch[3] = ld(3);
        }
        if OUT != RAW8 {
            let from = if fold { 3 } else { 0 };
            for i in from..nc {
                ch[i] = _mm512_add_ps(_mm512_mul_ps(ch[i], k.scale[i]), k.bias[i]);
            }
        }
        if OUT == FLOAT {
            if chw || nc == 1 {
                for i in 0..nc {
                    if k.ask_out {
                        prefetch_store(row.add(i * k.plane_stride + 4 * x).wrapping_add(STORE_AHEAD));
                    }
                    _mm512_mask_storeu_ps(row.add(i * k.plane_stride + 4 * x) as *mut f32, px, ch[i]);
                }
            } else if nc == 3 {
                let at = row.add(12 * x) as *mut f32;
                if k.ask_out {
                    for v in 0..3 {
                        prefetch_store((at.add(16 * v) as *const u8).wrapping_add(STORE_AHEAD));
                    }
                }
                for v in 0..3 {
                    let a = _mm512_loadu_si512(RGB32[v][0].as_ptr() as *const _);
                    let b = _mm512_loadu_si512(RGB32[v][1].as_ptr() as *const _);
                    let t = _mm512_permutex2var_ps(ch[0], a, ch[1]);
                    let o = _mm512_permutex2var_ps(t, b, ch[2]);
                    _mm512_mask_storeu_ps(at.add(16 * v), lanes(16 * v, 16) as u16, o);
                }
            } else {
                // Lane l of p0..p3 is pixel 4l..4l+3 (R, G, B, A); output vector v is pixels
                // 4v..4v+4, lane v of each.
                let (t0, t1) = (_mm512_unpacklo_ps(ch[0], ch[1]), _mm512_unpackhi_ps(ch[0], ch[1]));
                let (t2, t3) = (_mm512_unpacklo_ps(ch[2], ch[3]), _mm512_unpackhi_ps(ch[2], ch[3]));
                let p0 = _mm512_shuffle_ps::<0b01_00_01_00>(t0, t2);
                let p1 = _mm512_shuffle_ps::<0b11_10_11_10>(t0, t2);
                let p2 = _mm512_shuffle_ps::<0b01_00_01_00>(t1, t3);
                let p3 = _mm512_shuffle_ps::<0b11_10_11_10>(t1, t3);
                let a01 = _mm512_shuffle_f32x4::<0b01_00_01_00>(p0, p1); // p0.0 p0.1 p1.0 p1.1
                let a23 = _mm512_shuffle_f32x4::<0b01_00_01_00>(p2, p3);
                let b01 = _mm512_shuffle_f32x4::<0b11_10_11_10>(p0, p1); // p0.2 p0.3 p1.2 p1.3
                let b23 = _mm512_shuffle_f32x4::<0b11_10_11_10>(p2, p3);
                let o = [
                    _mm512_shuffle_f32x4::<0b10_00_10_00>(a01, a23),
                    _mm512_shuffle_f32x4::<0b11_01_11_01>(a01, a23),
                    _mm512_shuffle_f32x4::<0b10_00_10_00>(b01, b23),
                    _mm512_shuffle_f32x4::<0b11_01_11_01>(b01, b23),
                ];
                let at = row.add(16 * x) as *mut f32;
                for v in 0..4 {
                    _mm512_mask_storeu_ps(at.add(16 * v), lanes(16 * v, 16) as u16, o[v]);
                }
            }
        } else {
            let mut q = [_mm512_setzero_si512(); 4];
            for i in 0..nc {
                q[i] = _mm512_cvtps_epi32(if OUT == RAW8 || (fold && i < 3) {
                    ch[i]
                } else {
                    _mm512_min_ps(_mm512_max_ps(ch[i], k.lo), k.hi)
                });
            }
            let flip = _mm512_set1_epi8(-128);
            // A macro, not a closure: the closure stayed outlined, its packs run as calls.
            macro_rules! pack8 {
                ($a:expr, $b:expr) => {{
                    let (a, b) = ($a, $b);
                    match (OUT == RAW8, signed) {
                        (true, true) => _mm512_xor_si512(_mm512_packus_epi16(a, b), flip),
                        (false, true) => _mm512_packs_epi16(a, b),
                        _ => _mm512_packus_epi16(a, b),
                    }
                }};
            }
            if chw || nc == 1 {
                for i in 0..nc {
                    let v = if signed && OUT != RAW8 {
                        _mm512_cvtsepi32_epi8(q[i])
                    } else {
                        let u = _mm512_cvtusepi32_epi8(_mm512_max_epi32(q[i], _mm512_setzero_si512()));
                        if signed {
                            _mm_xor_si128(u, _mm_set1_epi8(-128))
                        } else {
                            u
                        }
                    };
                    _mm_mask_storeu_epi8(row.add(i * k.plane_stride + x) as *mut i8, px, v);
                }
            } else {
                let (b, table) = if nc == 3 {
                    (pack8!(_mm512_packs_epi32(q[0], q[1]), _mm512_packs_epi32(q[2], q[2])), RGB8.as_ptr())
                } else {
                    (pack8!(_mm512_packs_epi32(q[0], q[1]), _mm512_packs_epi32(q[2], q[3])), RGBA8.as_ptr())
                };
                let v = _mm512_permutexvar_epi8(_mm512_loadu_si512(table as *const _), b);
                _mm512_mask_storeu_epi8(row.add(nc * x) as *mut i8, lanes(0, 64), v);
            }
        }
    }
}

/// The bytes of `ctl` (a two-window control: bit 6 the window) that pick from the second.
#[inline(always)]
pub(super) unsafe fn second_window(ctl: __m512i) -> __mmask64 {
    _mm512_movepi8_mask(_mm512_slli_epi16::<1>(ctl))
}

/// `permutex2var(a, ctl, c)` as two one-table `vpermb`, the second merged under `hi`
/// (`second_window(ctl)`): a `vpermt2b` costs the Intel Xeon here as much as two `vpermb` and
/// more (docs/benchmark-log.md, twenty-second section). In PIL's whole blocks (held tables),
/// the element's 1080p NV12 `bilinear-antialias` on 8 camera frames went 0.280–0.283 →
/// 0.267–0.268 ms, 900p 0.302–0.312 → 0.293–0.299, RGBA 0.438–0.452 → 0.430–0.431 (two runs
/// alternated). Not measured on Zen.
#[inline(always)]
pub(super) unsafe fn pick_two(a: __m512i, c: __m512i, ctl: __m512i, hi: __mmask64) -> __m512i {
    _mm512_mask_permutexvar_epi8(_mm512_permutexvar_epi8(ctl, a), hi, ctl, c)
}
