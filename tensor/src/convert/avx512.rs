//! The AVX-512 (F, BW, VL, VBMI) kernels, sixteen outputs per iteration: sampling through a
//! group's `Permute` plan (one `vpermt2b` per component and block), and the fused finish with the
//! 8-bit interleave as one `vpermb` over the packed channels, the float32 one as two-source
//! permutes, and the row's last columns under masks instead of a scalar tail.

#![allow(clippy::needless_range_loop)]

use super::baseline::VTaps;
use super::finish::{
    channels, fill_blocks, finish_dispatch, folded, order, yuv_rows, FinishValues, SendPtr, FLOAT, GRAY,
    GRAY_WEIGHTS, RAW8, RGB, YUV,
};
use super::plan::{
    group_dispatch, group_tail, Blocks, Group, Permute, Whole, PIL_HALF, PIL_SHIFT, PIL_SPLIT, TAP_UNIT,
    WEIGHT_UNIT,
};
use std::arch::x86_64::*;

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
pub(super) unsafe fn finish(f: &FinishValues, comps: &[Vec<f32>; 4], dst: SendPtr, y: usize) -> usize {
    finish_dispatch!(finish_rows, f, comps, dst, y)
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
}

#[inline(always)]
unsafe fn finish_rows<const K: u8, const CS: u8, const OUT: u8>(
    f: &FinishValues,
    comps: &[Vec<f32>; 4],
    dst: SendPtr,
    y: usize,
) -> usize {
    let n = f.width.min(comps[0].len());
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
    let esz = if OUT == FLOAT { 4 } else { 1 };
    let row = unsafe { dst.0.add(y * f.row_stride + f.x0 * if f.chw { esz } else { channels(CS) * esz }) };
    let mut x = 0;
    while x + 16 <= n {
        unsafe { pixels::<K, CS, OUT>(&k, comps, row, x, 16) };
        x += 16;
    }
    if x < n {
        unsafe { pixels::<K, CS, OUT>(&k, comps, row, x, n - x) };
    }
    n
}

/// Pixels `x..x + left` (`left` ≤ 16; loads and stores masked below 16).
#[inline(always)]
unsafe fn pixels<const K: u8, const CS: u8, const OUT: u8>(
    k: &Consts,
    comps: &[Vec<f32>; 4],
    row: *mut u8,
    x: usize,
    left: usize,
) {
    let (nc, order, fold) = (channels(CS), order(CS), folded(K, CS, OUT));
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
        let ld = |i: usize| _mm512_maskz_loadu_ps(px, comps[i].as_ptr().add(x));
        // Output channels 0..3 in order (colour, or gray's source RGB), 0..255.
        let mut ch = [zero, zero, zero, full];
        match K {
            YUV => {
                let rgb =
                    yuv_rows!(fold, _mm512_mul_ps, _mm512_add_ps, k.m, k.k, k.luma, ld(0), ld(1), ld(2));
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
            if k.chw || nc == 1 {
                for i in 0..nc {
                    _mm512_mask_storeu_ps(row.add(i * k.plane_stride + 4 * x) as *mut f32, px, ch[i]);
                }
            } else if nc == 3 {
                let at = row.add(12 * x) as *mut f32;
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
            let pack8 = |a: __m512i, b: __m512i| match (OUT == RAW8, k.signed) {
                (true, true) => _mm512_xor_si512(_mm512_packus_epi16(a, b), flip),
                (false, true) => _mm512_packs_epi16(a, b),
                _ => _mm512_packus_epi16(a, b),
            };
            if k.chw || nc == 1 {
                for i in 0..nc {
                    let v = if k.signed && OUT != RAW8 {
                        _mm512_cvtsepi32_epi8(q[i])
                    } else {
                        let u = _mm512_cvtusepi32_epi8(_mm512_max_epi32(q[i], _mm512_setzero_si512()));
                        if k.signed {
                            _mm_xor_si128(u, _mm_set1_epi8(-128))
                        } else {
                            u
                        }
                    };
                    _mm_mask_storeu_epi8(row.add(i * k.plane_stride + x) as *mut i8, px, v);
                }
            } else {
                let (b, table) = if nc == 3 {
                    (pack8(_mm512_packs_epi32(q[0], q[1]), _mm512_packs_epi32(q[2], q[2])), RGB8.as_ptr())
                } else {
                    (pack8(_mm512_packs_epi32(q[0], q[1]), _mm512_packs_epi32(q[2], q[3])), RGBA8.as_ptr())
                };
                let v = _mm512_permutexvar_epi8(_mm512_loadu_si512(table as *const _), b);
                _mm512_mask_storeu_epi8(row.add(nc * x) as *mut i8, lanes(0, 64), v);
            }
        }
    }
}

/// A group's components at every content column through its `Permute` plan (the arithmetic of
/// `avx2::sample`, sixteen outputs at a time); the columns after the last block as
/// `group_tail` does them. Returns the columns its blocks wrote.
///
/// # Safety
/// The CPU has AVX-512 F/BW/VBMI; `plan.reach` bytes are readable from both rows.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx2,fma")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn sample(
    r0: &[u8],
    r1: &[u8],
    wy: f32,
    g: &Group,
    plan: &Permute,
    wx: &[f32],
    wq: &[u32],
    single: bool,
    out: &mut [Vec<f32>; 4],
) -> usize {
    assert!(plan.reach <= r0.len().min(r1.len()), "loads stay inside the rows");
    let blocks = group_dispatch!(
        sample_blocks,
        plan.narrow => [false, true],
        g.members.len(),
        single,
        wy != 0.0,
        (r0, r1, wy, g, plan, wq, out)
    );
    let n = g.i0.len().min(g.i1.len()).min(wx.len());
    let blocks = blocks.min(n / 16);
    group_tail(r0, r1, wy, g, wx, 16 * blocks..n, out);
    16 * blocks
}

#[inline(always)]
unsafe fn sample_blocks<const NARROW: bool, const M: usize, const SINGLE: bool, const TWO: bool>(
    r0: &[u8],
    r1: &[u8],
    wy: f32,
    g: &Group,
    plan: &Permute,
    wq: &[u32],
    out: &mut [Vec<f32>; 4],
) -> usize {
    assert!(g.members.len() >= M && (1..=4).contains(&M));
    let width = g.members.iter().map(|&(k, _)| out[k].len()).min().unwrap_or(0);
    let blocks = plan.bases.len().min(wq.len() / 16).min(plan.controls.len() / (2 * M)).min(width / 16);
    let mut rows = [std::ptr::null_mut::<f32>(); M];
    for (j, row) in rows.iter_mut().enumerate() {
        *row = out[g.members[j].0].as_mut_ptr();
    }
    let wyv = _mm512_set1_ps(wy);
    let unit = _mm512_set1_ps(WEIGHT_UNIT);
    // Byte 0 of each dword, or bytes 0 and 2.
    let keep: u64 = if SINGLE { 0x1111_1111_1111_1111 } else { 0x5555_5555_5555_5555 };
    let form = usize::from(!SINGLE);
    for b in 0..blocks {
        unsafe {
            let base = *plan.bases.get_unchecked(b) as usize;
            let load = |r: &[u8], at: usize| _mm512_loadu_si512(r.as_ptr().add(base + at) as *const _);
            let zero = _mm512_setzero_si512();
            let (a0, b0) = (load(r0, 0), if NARROW { zero } else { load(r0, 64) });
            let (a1, b1) = match (TWO, NARROW) {
                (false, _) => (a0, b0),
                (true, true) => (load(r1, 0), zero),
                (true, false) => (load(r1, 0), load(r1, 64)),
            };
            let wqv = if SINGLE {
                _mm512_setzero_si512()
            } else {
                _mm512_loadu_si512(wq.as_ptr().add(16 * b) as *const _)
            };
            for j in 0..M {
                let ctl = _mm512_loadu_si512(plan.controls.as_ptr().add((b * M + j) * 2 + form) as *const _);
                let pick = |lo: __m512i, hi: __m512i| {
                    let t = if NARROW {
                        _mm512_permutex2var_epi8(lo, ctl, hi)
                    } else {
                        _mm512_maskz_permutex2var_epi8(keep, lo, ctl, hi)
                    };
                    _mm512_cvtepi32_ps(if SINGLE { t } else { _mm512_madd_epi16(t, wqv) })
                };
                let top = pick(a0, b0);
                let mut v =
                    if TWO { _mm512_fmadd_ps(wyv, _mm512_sub_ps(pick(a1, b1), top), top) } else { top };
                if !SINGLE {
                    v = _mm512_mul_ps(v, unit);
                }
                _mm512_storeu_ps(rows[j].add(16 * b), v);
            }
        }
    }
    blocks
}

/// A multi-tap filter's horizontal pass over source rows `rows` (one to three, each its bytes) for
/// one group (`plan::TapGroup`), sixteen dwords per block: per tap pair and row one `vpermt2b`
/// and one `vpmaddwd` (two for PIL's split weights), exact in i32, then the scalar loops' result;
/// each lane stored to its member's row (`out[i]` for row `i`). The rows share each block's
/// controls and weights: loaded once for all, where one row per call spent most of its cycles on
/// those loads (1080p RGBA → 640, area: 0.62 → 0.44 ms). Returns the outputs each member has from the
/// blocks.
///
/// # Safety
/// The CPU has AVX-512 F/BW/VBMI; `out[i]` holds the group's members' rows (null past them),
/// each `plan.done` writable values.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx2,fma")]
pub(super) unsafe fn multitap(
    rows: &[&[u8]],
    plan: &Blocks,
    pil: bool,
    out: &[[*mut f32; 4]],
    only: Option<&[u32]>,
) -> usize {
    assert!(
        rows.len() == out.len() && rows.iter().all(|r| plan.reach <= r.len()),
        "loads stay inside the rows"
    );
    let members = out[0].iter().take_while(|p| !p.is_null()).count();
    macro_rules! by_rows {
        ($narrow:expr, $pil:expr, $m:expr) => {
            match rows.len() {
                1 => unsafe { multitap_blocks::<$narrow, $pil, $m, 1>(rows, plan, out, only) },
                2 => unsafe { multitap_blocks::<$narrow, $pil, $m, 2>(rows, plan, out, only) },
                _ => unsafe { multitap_blocks::<$narrow, $pil, $m, 3>(rows, plan, out, only) },
            }
        };
    }
    macro_rules! go {
        ($narrow:expr, $pil:expr) => {
            match members {
                1 => by_rows!($narrow, $pil, 1),
                2 => by_rows!($narrow, $pil, 2),
                3 => by_rows!($narrow, $pil, 3),
                _ => by_rows!($narrow, $pil, 4),
            }
        };
    }
    match (plan.narrow, pil) {
        (true, false) => go!(true, false),
        (true, true) => go!(true, true),
        (false, false) => go!(false, false),
        (false, true) => go!(false, true),
    }
}

#[inline(always)]
unsafe fn multitap_blocks<const NARROW: bool, const PIL: bool, const M: usize, const R: usize>(
    rows: &[&[u8]],
    plan: &Blocks,
    out: &[[*mut f32; 4]],
    only: Option<&[u32]>,
) -> usize {
    assert!(rows.len() >= R && out.len() >= R && (1..=3).contains(&R));
    let pairs = plan.pairs;
    let blocks = plan.targets.len().min(plan.bases.len());
    assert!(plan.c64.len() >= blocks * pairs && plan.hi.len() >= blocks * pairs * 16);
    assert!(!PIL || plan.lo.len() >= blocks * pairs * 16);
    let zero = _mm512_setzero_si512();
    let unit = _mm512_set1_ps(TAP_UNIT);
    let half = _mm512_set1_epi32(PIL_HALF);
    let top = _mm512_set1_epi32(255);
    let (hi, lo, controls) = (plan.hi.as_ptr(), plan.lo.as_ptr(), plan.c64.as_ptr());
    let row: [*const u8; R] = std::array::from_fn(|i| rows[i].as_ptr());
    // (A closure over the body, passed to `for_each`, was not inlined: its intrinsics then ran
    // as calls, 20× slower.)
    let mut next = 0;
    loop {
        let b = match only {
            None if next < blocks => next,
            // Blocks the whole-weight plan left (`plan::Whole`), in range.
            Some(list) if next < list.len() => list[next] as usize,
            _ => break,
        };
        next += 1;
        if b >= blocks {
            continue;
        }
        unsafe {
            let base = *plan.bases.get_unchecked(b) as usize;
            let a: [__m512i; R] = std::array::from_fn(|i| _mm512_loadu_si512(row[i].add(base) as *const _));
            let c: [__m512i; R] = std::array::from_fn(|i| match NARROW {
                true => zero,
                false => _mm512_loadu_si512(row[i].add(base + 64) as *const _),
            });
            let (mut sh, mut sl) = ([zero; R], [zero; R]);
            for p in 0..pairs {
                let at = b * pairs + p;
                let ctl = _mm512_load_si512(controls.add(at) as *const _);
                let wh = _mm512_loadu_si512(hi.add(16 * at) as *const _);
                let wl = if PIL { _mm512_loadu_si512(lo.add(16 * at) as *const _) } else { zero };
                for i in 0..R {
                    let t = match NARROW {
                        true => _mm512_permutex2var_epi8(a[i], ctl, zero),
                        false => _mm512_maskz_permutex2var_epi8(0x5555_5555_5555_5555, a[i], ctl, c[i]),
                    };
                    sh[i] = _mm512_add_epi32(sh[i], _mm512_madd_epi16(t, wh));
                    if PIL {
                        sl[i] = _mm512_add_epi32(sl[i], _mm512_madd_epi16(t, wl));
                    }
                }
            }
            for i in 0..R {
                let v = match PIL {
                    true => {
                        let s = _mm512_slli_epi32::<PIL_SPLIT>(sh[i]);
                        let s = _mm512_srai_epi32::<{ PIL_SHIFT }>(_mm512_add_epi32(
                            _mm512_add_epi32(s, sl[i]),
                            half,
                        ));
                        // As i32 bits (see `baseline::pil_byte`).
                        _mm512_castsi512_ps(_mm512_min_epi32(_mm512_max_epi32(s, zero), top))
                    }
                    false => _mm512_mul_ps(_mm512_cvtepi32_ps(sh[i]), unit),
                };
                let out = out[i];
                // The lanes of `Blocks::new`: one member's sixteen outputs, two members' eight, or
                // each member's four (the targets, without reading them per block).
                match M {
                    1 => _mm512_storeu_ps(out[0].add(16 * b), v),
                    2 => {
                        _mm256_storeu_ps(out[0].add(8 * b), _mm512_castps512_ps256(v));
                        // (`extractf32x8` is AVX512DQ, which the level does not ask for: not
                        // inlined here.)
                        let upper = _mm512_extractf64x4_pd::<1>(_mm512_castps_pd(v));
                        _mm256_storeu_ps(out[1].add(8 * b), _mm256_castpd_ps(upper));
                    }
                    _ => {
                        _mm_storeu_ps(out[0].add(4 * b), _mm512_castps512_ps128(v));
                        _mm_storeu_ps(out[1].add(4 * b), _mm512_extractf32x4_ps::<1>(v));
                        _mm_storeu_ps(out[2].add(4 * b), _mm512_extractf32x4_ps::<2>(v));
                        if M == 4 {
                            _mm_storeu_ps(out[3].add(4 * b), _mm512_extractf32x4_ps::<3>(v));
                        }
                    }
                }
            }
        }
    }
    plan.done
}

/// An exact box's vertical sums (`plan::EXACT_MAX`): `sums[t] = Σ_j k[j] · bytes[(first + j) ·
/// stride + t]` for `t` in `lo..hi`, in i16 (the plan keeps `Σ k · 255` below 2^15), the last
/// samples under a mask. Two to four rows (the 2×–3× downscales) have their own loops, weights in
/// registers and 64 samples a step: one generic loop over the rows per 32 samples spent a third
/// of a 1080p NV12 frame on loop control.
///
/// # Safety
/// The CPU has AVX-512 (F, BW, VL).
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
pub(super) unsafe fn box_sums(
    bytes: &[u8],
    stride: usize,
    first: usize,
    k: &[i16],
    (lo, hi): (usize, usize),
    sums: &mut [u16],
) {
    if hi <= lo || k.is_empty() {
        return;
    }
    assert!(
        (first + k.len() - 1) * stride + hi <= bytes.len() && hi <= sums.len(),
        "sums stay inside the rows"
    );
    let base = bytes.as_ptr().add(first * stride);
    let out = sums.as_mut_ptr();
    match k.len() {
        2 => box_sums_n::<2>(base, stride, k, lo, hi, out),
        3 => box_sums_n::<3>(base, stride, k, lo, hi, out),
        4 => box_sums_n::<4>(base, stride, k, lo, hi, out),
        _ => {
            let mut t = lo;
            while t < hi {
                let mask: __mmask32 = if hi - t >= 32 { u32::MAX } else { (1u32 << (hi - t)) - 1 };
                let mut acc = _mm512_setzero_si512();
                for (j, &w) in k.iter().enumerate() {
                    let v = _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(
                        mask,
                        base.add(j * stride + t) as *const i8,
                    ));
                    acc = _mm512_add_epi16(acc, _mm512_mullo_epi16(v, _mm512_set1_epi16(w)));
                }
                _mm512_mask_storeu_epi16(out.add(t) as *mut i16, mask, acc);
                t += 32;
            }
        }
    }
}

#[inline(always)]
unsafe fn box_sums_n<const N: usize>(
    base: *const u8,
    stride: usize,
    k: &[i16],
    lo: usize,
    hi: usize,
    out: *mut u16,
) {
    let w: [__m512i; N] = std::array::from_fn(|j| _mm512_set1_epi16(k[j]));
    let row: [*const u8; N] = std::array::from_fn(|j| base.add(j * stride));
    let sum = |t: usize, mask: __mmask32| {
        let mut acc = _mm512_setzero_si512();
        for j in 0..N {
            let v = _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(mask, row[j].add(t) as *const i8));
            acc = _mm512_add_epi16(acc, _mm512_mullo_epi16(v, w[j]));
        }
        acc
    };
    let mut t = lo;
    while t + 64 <= hi {
        let (a, b) = (sum(t, u32::MAX), sum(t + 32, u32::MAX));
        _mm512_storeu_si512(out.add(t) as *mut _, a);
        _mm512_storeu_si512(out.add(t + 32) as *mut _, b);
        t += 64;
    }
    while t < hi {
        let mask: __mmask32 = if hi - t >= 32 { u32::MAX } else { (1u32 << (hi - t)) - 1 };
        _mm512_mask_storeu_epi16(out.add(t) as *mut i16, mask, sum(t, mask));
        t += 32;
    }
}

/// The horizontal pass of an exact box over its vertical sums (`box_sums`, a row of u16 samples)
/// for one group's `w16` blocks: per block and tap pair one `vpermt2b` of the 32 or 64 samples'
/// window and one `pmaddwd` with the whole weights, exact in i32; each output the sum times `inv`
/// (`1 / (K_x · K_y)`, the value the filter-across-first levels reach: see `MultiTap::scale`),
/// stored by the lanes' rule of `multitap`. Returns the outputs each member has.
///
/// # Safety
/// The CPU has AVX-512 (F, BW, VBMI); `out` holds the group's members' rows (null past them), each
/// `plan.done` writable values.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi")]
pub(super) unsafe fn box_blocks(sums: &[u16], plan: &Blocks, inv: f32, out: [*mut f32; 4]) -> usize {
    assert!(plan.words && plan.reach <= sums.len(), "loads stay inside the sums");
    let members = out.iter().take_while(|p| !p.is_null()).count();
    macro_rules! go {
        ($narrow:expr) => {
            match members {
                1 => box_blocks_m::<$narrow, 1>(sums, plan, inv, out),
                2 => box_blocks_m::<$narrow, 2>(sums, plan, inv, out),
                3 => box_blocks_m::<$narrow, 3>(sums, plan, inv, out),
                _ => box_blocks_m::<$narrow, 4>(sums, plan, inv, out),
            }
        };
    }
    match plan.narrow {
        true => go!(true),
        false => go!(false),
    }
}

#[inline(always)]
unsafe fn box_blocks_m<const NARROW: bool, const M: usize>(
    sums: &[u16],
    plan: &Blocks,
    inv: f32,
    out: [*mut f32; 4],
) -> usize {
    let pairs = plan.pairs;
    let blocks = plan.targets.len().min(plan.bases.len());
    assert!(plan.c64.len() >= blocks * pairs && plan.hi.len() >= blocks * pairs * 16);
    let (weights, controls) = (plan.hi.as_ptr(), plan.c64.as_ptr());
    let inv = _mm512_set1_ps(inv);
    let row = sums.as_ptr();
    for b in 0..blocks {
        unsafe {
            let base = *plan.bases.get_unchecked(b) as usize;
            let a = _mm512_loadu_si512(row.add(base) as *const _);
            let c = if NARROW { a } else { _mm512_loadu_si512(row.add(base + 32) as *const _) };
            let mut s = _mm512_setzero_si512();
            for p in 0..pairs {
                let at = b * pairs + p;
                let ctl = _mm512_load_si512(controls.add(at) as *const _);
                let w = _mm512_loadu_si512(weights.add(16 * at) as *const _);
                let t = match NARROW {
                    true => _mm512_permutexvar_epi8(ctl, a),
                    false => _mm512_permutex2var_epi8(a, ctl, c),
                };
                s = _mm512_add_epi32(s, _mm512_madd_epi16(t, w));
            }
            let v = _mm512_mul_ps(_mm512_cvtepi32_ps(s), inv);
            match M {
                1 => _mm512_storeu_ps(out[0].add(16 * b), v),
                2 => {
                    _mm256_storeu_ps(out[0].add(8 * b), _mm512_castps512_ps256(v));
                    let upper = _mm512_extractf64x4_pd::<1>(_mm512_castps_pd(v));
                    _mm256_storeu_ps(out[1].add(8 * b), _mm256_castpd_ps(upper));
                }
                _ => {
                    _mm_storeu_ps(out[0].add(4 * b), _mm512_castps512_ps128(v));
                    _mm_storeu_ps(out[1].add(4 * b), _mm512_extractf32x4_ps::<1>(v));
                    _mm_storeu_ps(out[2].add(4 * b), _mm512_extractf32x4_ps::<2>(v));
                    if M == 4 {
                        _mm_storeu_ps(out[3].add(4 * b), _mm512_extractf32x4_ps::<3>(v));
                    }
                }
            }
        }
    }
    plan.done
}

/// A multi-tap filter's vertical pass at sixteen lanes (`avx2::multitap_vertical` at twice the
/// width, the same order: OpenCV's separate multiply and add, then the scale; PIL's i32 sums,
/// shift and clamp), 32 outputs per step. The AVX2 loop took a quarter of a 1080p NV12 frame's
/// `bilinear-antialias` at this level. Returns the outputs it wrote (whole steps).
///
/// # Safety
/// The CPU has AVX-512 (F, BW); every row pointer is readable for `out.len()` values.
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) unsafe fn multitap_vertical(rows: &[*const f32], taps: VTaps<'_>, out: &mut [f32]) -> usize {
    let n = out.len() / 32 * 32;
    let o = out.as_mut_ptr();
    match taps {
        VTaps::Float(w, scale) => {
            let rows = &rows[..w.len().min(rows.len())];
            let scale = _mm512_set1_ps(scale);
            let w0 = _mm512_set1_ps(w[0]);
            for x in (0..n).step_by(32) {
                unsafe {
                    let mut a = _mm512_mul_ps(w0, _mm512_loadu_ps(rows[0].add(x)));
                    let mut b = _mm512_mul_ps(w0, _mm512_loadu_ps(rows[0].add(x + 16)));
                    for (&r, &wj) in rows[1..].iter().zip(&w[1..]) {
                        let wj = _mm512_set1_ps(wj);
                        a = _mm512_add_ps(a, _mm512_mul_ps(wj, _mm512_loadu_ps(r.add(x))));
                        b = _mm512_add_ps(b, _mm512_mul_ps(wj, _mm512_loadu_ps(r.add(x + 16))));
                    }
                    _mm512_storeu_ps(o.add(x), _mm512_mul_ps(a, scale));
                    _mm512_storeu_ps(o.add(x + 16), _mm512_mul_ps(b, scale));
                }
            }
        }
        VTaps::Pil(_, Some((k, d))) => {
            // Whole weights (`plan::Taps::d`): each byte times its `k` by one `pmaddwd` (the
            // byte's dword is (b, 0) as words), then `⌊(2S + D) / 2D⌋` in f32: exact, as `2S + D`
            // and the quotient's error (under 2^-15) stay below the `1/(2D)` between it and a
            // whole number for an odd D, and a power-of-two D divides exactly.
            let rows = &rows[..k.len().min(rows.len())];
            let inv = _mm512_set1_ps((0.5 / d as f64) as f32);
            let d = _mm512_set1_epi32(d as i32);
            for x in (0..n).step_by(32) {
                unsafe {
                    let (mut a, mut b) = (_mm512_setzero_si512(), _mm512_setzero_si512());
                    for (&r, &kj) in rows.iter().zip(k) {
                        let kj = _mm512_set1_epi32(kj as i32);
                        let (ra, rb) = (
                            _mm512_loadu_si512(r.add(x) as *const _),
                            _mm512_loadu_si512(r.add(x + 16) as *const _),
                        );
                        a = _mm512_add_epi32(a, _mm512_madd_epi16(ra, kj));
                        b = _mm512_add_epi32(b, _mm512_madd_epi16(rb, kj));
                    }
                    let q = |s: __m512i| {
                        let t = _mm512_cvtepi32_ps(_mm512_add_epi32(_mm512_add_epi32(s, s), d));
                        _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC }>(_mm512_mul_ps(
                            t, inv,
                        ))
                    };
                    _mm512_storeu_ps(o.add(x), q(a));
                    _mm512_storeu_ps(o.add(x + 16), q(b));
                }
            }
        }
        VTaps::Pil(w, None) => {
            let (half, zero, top) =
                (_mm512_set1_epi32(PIL_HALF), _mm512_setzero_si512(), _mm512_set1_epi32(255));
            let done = |s: __m512i| {
                let s = _mm512_srai_epi32::<{ PIL_SHIFT }>(s);
                _mm512_cvtepi32_ps(_mm512_min_epi32(_mm512_max_epi32(s, zero), top))
            };
            for x in (0..n).step_by(32) {
                unsafe {
                    let (mut a, mut b) = (half, half);
                    for (&r, &wj) in rows.iter().zip(w) {
                        let wj = _mm512_set1_epi32(wj);
                        // The rows hold the horizontal pass's bytes as i32 bits (`baseline::pil_byte`).
                        let (ra, rb) = (
                            _mm512_loadu_si512(r.add(x) as *const _),
                            _mm512_loadu_si512(r.add(x + 16) as *const _),
                        );
                        a = _mm512_add_epi32(a, _mm512_mullo_epi32(wj, ra));
                        b = _mm512_add_epi32(b, _mm512_mullo_epi32(wj, rb));
                    }
                    _mm512_storeu_ps(o.add(x), done(a));
                    _mm512_storeu_ps(o.add(x + 16), done(b));
                }
            }
        }
    }
    n
}

/// PIL's horizontal pass with whole weights (`plan::Whole`) over source rows `rows` into their
/// members' rows `out[i]` (PIL's bytes as i32 bits, `baseline::pil_byte`): per block and tap pair
/// one byte permute and one `pmaddubsw` for 32 outputs, then `⌊(2S + D) / 2D⌋` by a multiply-high
/// and a shift per lane. Blocks that are not whole are skipped (the caller makes them). Returns
/// the outputs each member has from the blocks, whole or not.
///
/// # Safety
/// The CPU has AVX-512 (F, BW, VL, VBMI); `out[i]` holds the group's members' rows (null past
/// them), each `plan.done` writable values.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi")]
pub(super) unsafe fn whole(rows: &[&[u8]], plan: &Whole, out: &[[*mut f32; 4]]) -> usize {
    assert!(
        rows.len() == out.len() && rows.iter().all(|r| plan.reach <= r.len()),
        "loads stay inside the rows"
    );
    let members = out[0].iter().take_while(|p| !p.is_null()).count();
    macro_rules! by_rows {
        ($narrow:expr, $m:expr) => {
            match rows.len() {
                1 => whole_blocks::<$narrow, $m, 1>(rows, plan, out),
                2 => whole_blocks::<$narrow, $m, 2>(rows, plan, out),
                _ => whole_blocks::<$narrow, $m, 3>(rows, plan, out),
            }
        };
    }
    macro_rules! go {
        ($narrow:expr) => {
            match members {
                1 => by_rows!($narrow, 1),
                2 => by_rows!($narrow, 2),
                3 => by_rows!($narrow, 3),
                _ => by_rows!($narrow, 4),
            }
        };
    }
    match plan.narrow {
        true => go!(true),
        false => go!(false),
    }
}

#[inline(always)]
unsafe fn whole_blocks<const NARROW: bool, const M: usize, const R: usize>(
    rows: &[&[u8]],
    plan: &Whole,
    out: &[[*mut f32; 4]],
) -> usize {
    assert!(rows.len() >= R && out.len() >= R && (1..=3).contains(&R));
    let pairs = plan.pairs;
    let blocks = plan.targets.len().min(plan.bases.len()).min(plan.whole.len());
    assert!(plan.ctl.len() >= blocks * pairs && plan.k.len() >= blocks * pairs);
    assert!(plan.d.len() >= blocks && plan.mul.len() >= blocks && plan.shift.len() >= blocks);
    let row: [*const u8; R] = std::array::from_fn(|i| rows[i].as_ptr());
    for b in 0..blocks {
        if !*plan.whole.get_unchecked(b) {
            continue;
        }
        unsafe {
            let base = *plan.bases.get_unchecked(b) as usize;
            let a: [__m512i; R] = std::array::from_fn(|i| _mm512_loadu_si512(row[i].add(base) as *const _));
            let c: [__m512i; R] = std::array::from_fn(|i| match NARROW {
                true => a[i],
                false => _mm512_loadu_si512(row[i].add(base + 64) as *const _),
            });
            let mut s = [_mm512_setzero_si512(); R];
            for p in 0..pairs {
                let at = b * pairs + p;
                let ctl = _mm512_load_si512(plan.ctl.as_ptr().add(at) as *const _);
                let k = _mm512_load_si512(plan.k.as_ptr().add(at) as *const _);
                for i in 0..R {
                    let t = match NARROW {
                        true => _mm512_permutexvar_epi8(ctl, a[i]),
                        false => _mm512_permutex2var_epi8(a[i], ctl, c[i]),
                    };
                    s[i] = _mm512_add_epi16(s[i], _mm512_maddubs_epi16(t, k));
                }
            }
            let d = _mm512_load_si512(plan.d.as_ptr().add(b) as *const _);
            let mul = _mm512_load_si512(plan.mul.as_ptr().add(b) as *const _);
            let shift = _mm512_load_si512(plan.shift.as_ptr().add(b) as *const _);
            for i in 0..R {
                // 2S + D < 2^16 (`WHOLE_MAX`), then ⌊· / 2D⌋.
                let t = _mm512_add_epi16(_mm512_add_epi16(s[i], s[i]), d);
                let q = _mm512_srlv_epi16(_mm512_mulhi_epu16(t, mul), shift);
                let lo = _mm512_cvtepu16_epi32(_mm512_castsi512_si256(q));
                let hi = _mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64::<1>(q));
                let (lo, hi) = (_mm512_castsi512_ps(lo), _mm512_castsi512_ps(hi));
                let out = out[i];
                // The lanes of `Whole::new`.
                match M {
                    1 => {
                        _mm512_storeu_ps(out[0].add(32 * b), lo);
                        _mm512_storeu_ps(out[0].add(32 * b + 16), hi);
                    }
                    2 => {
                        _mm512_storeu_ps(out[0].add(16 * b), lo);
                        _mm512_storeu_ps(out[1].add(16 * b), hi);
                    }
                    _ => {
                        let half = |v: __m512, h: bool| match h {
                            false => _mm512_castps512_ps256(v),
                            true => _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(v))),
                        };
                        _mm256_storeu_ps(out[0].add(8 * b), half(lo, false));
                        _mm256_storeu_ps(out[1].add(8 * b), half(lo, true));
                        _mm256_storeu_ps(out[2].add(8 * b), half(hi, false));
                        if M == 4 {
                            _mm256_storeu_ps(out[3].add(8 * b), half(hi, true));
                        }
                    }
                }
            }
        }
    }
    plan.done
}
