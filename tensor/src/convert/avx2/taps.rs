//! The AVX2 level's multi-tap kernels (`area`, `bilinear-antialias`, the bicubics): the
//! horizontal blocks over bytes (eight dword lanes, `pshufb` per 16-byte piece), the vertical
//! pass, and the packing of every other byte (an exact box's kernels are in `boxes`).

#![allow(clippy::needless_range_loop)]

use crate::convert::hint::{prefetch, prefetch_window};
use crate::convert::multitap::VTaps;
use crate::convert::plan::{Blocks, PIL_HALF, PIL_SHIFT, PIL_SPLIT, TAP_UNIT};
use std::arch::x86_64::*;

/// A multi-tap filter's horizontal pass over source rows `rows` (each its bytes) for one group
/// (`plan::TapGroup`), eight dwords per block: each lane's window as `pieces` 16-byte loads (the
/// two lanes of one register), per tap pair a `pshufb` per piece and one `pmaddwd` (two for PIL's
/// split weights), exact in i32 (see `plan::Blocks`); each lane stored to its member's row
/// (`out[i]` for row `i`). Returns the outputs each member has from the blocks.
///
/// # Safety
/// The CPU has AVX2; `out[i]` holds the group's members' rows (null past them), each
/// `plan.done` writable values.
#[target_feature(enable = "avx2,fma")]
pub(in crate::convert) unsafe fn multitap(
    rows: &[&[u8]],
    plan: &Blocks,
    pil: bool,
    out: &[[*mut f32; 4]],
    ahead: usize,
) -> usize {
    unsafe { multitap_to::<false>(rows, plan, pil, out, None, ahead) }
}

/// `multitap` for PIL's filters into rows of bytes (`multitap::pil8_row`); `only`: just those
/// blocks (those the whole-weight plan leaves, `plan::Whole8::rest`).
///
/// # Safety
/// As `multitap`, each row `plan.done` writable bytes.
#[target_feature(enable = "avx2,fma")]
pub(in crate::convert) unsafe fn multitap_bytes(
    rows: &[&[u8]],
    plan: &Blocks,
    out: &[[*mut u8; 4]],
    only: Option<&[u32]>,
    ahead: usize,
) -> usize {
    // The same pointers, cast back to bytes where the kernel stores.
    let out = unsafe { std::slice::from_raw_parts(out.as_ptr() as *const [*mut f32; 4], out.len()) };
    unsafe { multitap_to::<true>(rows, plan, true, out, only, ahead) }
}

#[inline(always)]
unsafe fn multitap_to<const BYTES: bool>(
    rows: &[&[u8]],
    plan: &Blocks,
    pil: bool,
    out: &[[*mut f32; 4]],
    only: Option<&[u32]>,
    ahead: usize,
) -> usize {
    assert!(
        rows.len() == out.len() && rows.iter().all(|r| plan.reach <= r.len()),
        "loads stay inside the rows"
    );
    assert!(pil || !BYTES, "bytes are PIL's");
    let members = out.first().map_or(0, |o| o.iter().take_while(|p| !p.is_null()).count());
    // Three rows share the controls and weights, even where their windows (three or four pieces
    // each) spill registers: RGBA's four pieces one row at a time measured area 1.16 ms and
    // triangle 2.01, three rows 1.00 and 1.76.
    let three = rows.len() == 3;
    macro_rules! by_slide {
        ($l:expr, $pil:expr, $m:expr, $r:expr, $rows:expr, $out:expr) => {
            match plan.slide {
                true => unsafe {
                    multitap_blocks::<$l, $pil, $m, $r, true, BYTES>($rows, plan, $out, only, ahead)
                },
                false => unsafe {
                    multitap_blocks::<$l, $pil, $m, $r, false, BYTES>($rows, plan, $out, only, ahead)
                },
            }
        };
    }
    macro_rules! by_rows {
        ($l:expr, $pil:expr, $m:expr) => {
            match three {
                true => by_slide!($l, $pil, $m, 3, rows, out),
                false => {
                    let mut done = plan.done;
                    for i in 0..rows.len() {
                        let one = by_slide!($l, $pil, $m, 1, &rows[i..], &out[i..]);
                        done = done.min(one);
                    }
                    done
                }
            }
        };
    }
    macro_rules! by_pieces {
        ($pil:expr, $m:expr) => {
            match plan.pieces {
                1 => by_rows!(1, $pil, $m),
                2 => by_rows!(2, $pil, $m),
                3 => by_rows!(3, $pil, $m),
                _ => by_rows!(4, $pil, $m),
            }
        };
    }
    match (pil, members) {
        (true, 1) => by_pieces!(true, 1),
        (true, 2) => by_pieces!(true, 2),
        (true, 3) => by_pieces!(true, 3),
        (true, _) => by_pieces!(true, 4),
        // (Bytes are PIL's only: no code for the others.)
        (false, _) if BYTES => 0,
        (false, 1) => by_pieces!(false, 1),
        (false, 2) => by_pieces!(false, 2),
        (false, 3) => by_pieces!(false, 3),
        (false, _) => by_pieces!(false, 4),
    }
}

/// Rows `rows[..R]` into `out[..R]` (see `multitap`); `S`: the window slides per pair
/// (`Blocks::slide`). Unoptimized, a function of its own per case (inlined, the cases gave
/// `multitap` a 0.49 MB frame; as `avx512::taps::whole_blocks`).
#[cfg_attr(debug_assertions, inline(never))]
#[cfg_attr(not(debug_assertions), inline(always))]
unsafe fn multitap_blocks<
    const L: usize,
    const PIL: bool,
    const M: usize,
    const R: usize,
    const S: bool,
    const BYTES: bool,
>(
    rows: &[&[u8]],
    plan: &Blocks,
    out: &[[*mut f32; 4]],
    only: Option<&[u32]>,
    ahead: usize,
) -> usize {
    assert!(plan.pieces == L && plan.slide == S && rows.len() >= R && out.len() >= R);
    let pairs = plan.pairs;
    let blocks = plan.targets.len().min(plan.lane_bases.len() / if S { pairs } else { 1 });
    assert!(plan.shuf.len() >= blocks * pairs * L && plan.hi.len() >= blocks * pairs * 8);
    assert!(!PIL || plan.lo.len() >= blocks * pairs * 8);
    let zero = _mm256_setzero_si256();
    let unit = _mm256_set1_ps(TAP_UNIT);
    let (hi, lo, controls) = (plan.hi.as_ptr(), plan.lo.as_ptr(), plan.shuf.as_ptr());
    let row: [*const u8; R] = std::array::from_fn(|i| rows[i].as_ptr());
    // The windows of lane bases `at` (a block's, or a block's pair's where they slide).
    let load = |at: usize| {
        let [s0, s1] = unsafe { *plan.lane_bases.get_unchecked(at) };
        let mut v = [[zero; L]; R];
        for i in 0..R {
            let (r0, r1) = unsafe { (row[i].add(s0 as usize), row[i].add(s1 as usize)) };
            for (q, v) in v[i].iter_mut().enumerate() {
                *v = unsafe {
                    _mm256_loadu2_m128i(r1.add(16 * q) as *const __m128i, r0.add(16 * q) as *const __m128i)
                };
            }
        }
        v
    };
    let mut next = 0;
    loop {
        let b = match only {
            None if next < blocks => next,
            Some(list) if next < list.len() => list[next] as usize,
            _ => break,
        };
        next += 1;
        if b >= blocks {
            continue;
        }
        unsafe {
            // The block's lines at the distance: from lane 0's first window (its first pair's
            // where they slide) to lane 1's last.
            if ahead != 0 {
                let (first, last) = match S {
                    true => (b * pairs, b * pairs + pairs - 1),
                    false => (b, b),
                };
                let (s0, s1) =
                    (plan.lane_bases.get_unchecked(first)[0], plan.lane_bases.get_unchecked(last)[1]);
                for r in row {
                    prefetch(r.wrapping_add(s0 as usize + ahead));
                    prefetch(r.wrapping_add(s1 as usize + 16 * L - 1 + ahead));
                }
            }
            let mut v = if S { [[zero; L]; R] } else { load(b) };
            let (mut sh, mut sl) = ([zero; R], [zero; R]);
            for p in 0..pairs {
                let at = b * pairs + p;
                if S {
                    v = load(at);
                }
                let ctl = controls.add(at * L);
                let c: [__m256i; L] =
                    std::array::from_fn(|q| _mm256_load_si256(ctl.add(q) as *const __m256i));
                let wh = _mm256_loadu_si256(hi.add(8 * at) as *const __m256i);
                let wl = if PIL { _mm256_loadu_si256(lo.add(8 * at) as *const __m256i) } else { zero };
                for i in 0..R {
                    let mut t = _mm256_shuffle_epi8(v[i][0], c[0]);
                    for q in 1..L {
                        t = _mm256_or_si256(t, _mm256_shuffle_epi8(v[i][q], c[q]));
                    }
                    sh[i] = _mm256_add_epi32(sh[i], _mm256_madd_epi16(t, wh));
                    if PIL {
                        sl[i] = _mm256_add_epi32(sl[i], _mm256_madd_epi16(t, wl));
                    }
                }
            }
            for i in 0..R {
                let v = match PIL {
                    true => _mm256_castsi256_ps(pil_bytes(sh[i], sl[i])),
                    false => _mm256_mul_ps(_mm256_cvtepi32_ps(sh[i]), unit),
                };
                if BYTES {
                    store_lane_bytes::<M>(&out[i], b, _mm256_castps_si256(v));
                    continue;
                }
                store_lanes::<M>(&out[i], b, v);
            }
        }
    }
    plan.done
}

/// PIL's byte of each dword's split sums (`(Σ hi·b) · 2^11 + Σ lo·b`, see `plan::PIL_SPLIT`):
/// rounded by PIL's half, shifted, clamped to 0..=255, as i32 bits (see `multitap::pil_byte`).
#[inline(always)]
pub(super) unsafe fn pil_bytes(sh: __m256i, sl: __m256i) -> __m256i {
    let s = _mm256_add_epi32(
        _mm256_add_epi32(_mm256_slli_epi32::<{ PIL_SPLIT as i32 }>(sh), sl),
        _mm256_set1_epi32(PIL_HALF),
    );
    let s = _mm256_srai_epi32::<{ PIL_SHIFT as i32 }>(s);
    _mm256_min_epi32(_mm256_max_epi32(s, _mm256_setzero_si256()), _mm256_set1_epi32(255))
}

/// `store_lanes` of PIL's bytes (dwords below 256) into rows of bytes.
#[inline(always)]
unsafe fn store_lane_bytes<const M: usize>(out: &[*mut f32; 4], b: usize, v: __m256i) {
    unsafe {
        // Each lane's four bytes in its first dword.
        let v = _mm256_packus_epi16(_mm256_packus_epi32(v, v), v);
        let (l0, l1) = (_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
        let put = |m: usize, x: usize, l: __m128i| {
            (out[m] as *mut u8).add(x).cast::<i32>().write_unaligned(_mm_cvtsi128_si32(l))
        };
        match M {
            1 => {
                put(0, 8 * b, l0);
                put(0, 8 * b + 4, l1);
            }
            2 => {
                put(0, 4 * b, l0);
                put(1, 4 * b, l1);
            }
            _ => {
                let (x, m) = (4 * (b / 2), 2 * (b % 2));
                put(m, x, l0);
                if m + 1 < M {
                    put(m + 1, x, l1);
                }
            }
        }
    }
}

/// Block `b`'s eight dwords into its members' rows by the lanes of `Blocks::new`: one member's
/// eight outputs, two members' four, or (three or four members) two blocks per four outputs,
/// members 0-1 then 2-3. The 2^-22/2^-14 blocks and the rows-first box blocks store alike.
#[inline(always)]
pub(super) unsafe fn store_lanes<const M: usize>(out: &[*mut f32; 4], b: usize, v: __m256) {
    unsafe {
        match M {
            1 => _mm256_storeu_ps(out[0].add(8 * b), v),
            2 => {
                _mm_storeu_ps(out[0].add(4 * b), _mm256_castps256_ps128(v));
                _mm_storeu_ps(out[1].add(4 * b), _mm256_extractf128_ps::<1>(v));
            }
            _ => {
                let (x, m) = (4 * (b / 2), 2 * (b % 2));
                _mm_storeu_ps(out[m].add(x), _mm256_castps256_ps128(v));
                if m + 1 < M {
                    _mm_storeu_ps(out[m + 1].add(x), _mm256_extractf128_ps::<1>(v));
                }
            }
        }
    }
}

/// A multi-tap filter's vertical pass: `out[x]` from the filtered rows `rows` (each at least
/// `out.len()` values) and one output row's weights, sixteen outputs at a time with the sums in
/// registers over every tap, in the scalar loops' order (`multitap::multitap_row`: separate
/// multiply and add, no FMA; PIL's in i32). Those loops stored and reloaded every sum per tap
/// (1080p NV12 → 640 with the AVX-512 blocks: area 0.385 → 0.364 ms, the 7-tap triangle 0.60 →
/// 0.55).
/// Returns the outputs it wrote (whole blocks).
///
/// # Safety
/// The CPU has AVX2; every row pointer is readable for `out.len()` values.
#[target_feature(enable = "avx2,fma")]
pub(in crate::convert) unsafe fn multitap_vertical(
    rows: &[*const f32],
    taps: VTaps<'_>,
    out: &mut [f32],
) -> usize {
    let n = out.len() / 16 * 16;
    let o = out.as_mut_ptr();
    match taps {
        VTaps::Float(w, scale) => {
            let (first, rest) = (rows[0], &rows[1..w.len().min(rows.len())]);
            let w0 = _mm256_set1_ps(w[0]);
            let scale = _mm256_set1_ps(scale);
            for x in (0..n).step_by(16) {
                unsafe {
                    let mut a = _mm256_mul_ps(w0, _mm256_loadu_ps(first.add(x)));
                    let mut b = _mm256_mul_ps(w0, _mm256_loadu_ps(first.add(x + 8)));
                    for (&r, &wj) in rest.iter().zip(&w[1..]) {
                        let wj = _mm256_set1_ps(wj);
                        a = _mm256_add_ps(a, _mm256_mul_ps(wj, _mm256_loadu_ps(r.add(x))));
                        b = _mm256_add_ps(b, _mm256_mul_ps(wj, _mm256_loadu_ps(r.add(x + 8))));
                    }
                    _mm256_storeu_ps(o.add(x), _mm256_mul_ps(a, scale));
                    _mm256_storeu_ps(o.add(x + 8), _mm256_mul_ps(b, scale));
                }
            }
        }
        // Whole rows (`plan::Taps::d`): two rows' bytes (i32 bits under 256) as the halves of
        // each dword, one `pmaddwd` with the pair's doubled weights, the sums started at `D`:
        // `t = 2S + D`, then PIL's byte `⌊t / 2D⌋` (`pil_quotient`). A `pmulld` per row and
        // eight outputs took a fifth of 1080p NV12 `bilinear-antialias` at AVX2 (Zen 2).
        VTaps::Pil(w, Some((k, d))) if k.len() == w.len() && k.len() <= rows.len() && k.len() <= 64 => {
            let mut pairs = [0u32; 32];
            for (p, pair) in k.chunks(2).enumerate() {
                let weight = |j: usize| (2 * pair.get(j).copied().unwrap_or(0)) as u16 as u32;
                pairs[p] = weight(0) | (weight(1) << 16);
            }
            let np = k.len().div_ceil(2);
            let (start, inv) = (_mm256_set1_epi32(d as i32), _mm256_set1_ps(pil_reciprocal(d)));
            let last_single = k.len() % 2 == 1;
            for x in (0..n).step_by(16) {
                unsafe {
                    let (mut a, mut b) = (start, start);
                    for p in 0..np {
                        let wp = _mm256_set1_epi32(pairs[p] as i32);
                        let r0 = rows[2 * p];
                        let (mut ra, mut rb) = (
                            _mm256_loadu_si256(r0.add(x) as *const __m256i),
                            _mm256_loadu_si256(r0.add(x + 8) as *const __m256i),
                        );
                        if !(last_single && p == np - 1) {
                            let r1 = rows[2 * p + 1];
                            let hi = |v: *const f32| {
                                _mm256_slli_epi32::<16>(_mm256_loadu_si256(v as *const __m256i))
                            };
                            ra = _mm256_or_si256(ra, hi(r1.add(x)));
                            rb = _mm256_or_si256(rb, hi(r1.add(x + 8)));
                        }
                        a = _mm256_add_epi32(a, _mm256_madd_epi16(ra, wp));
                        b = _mm256_add_epi32(b, _mm256_madd_epi16(rb, wp));
                    }
                    _mm256_storeu_ps(o.add(x), pil_quotient(a, inv));
                    _mm256_storeu_ps(o.add(x + 8), pil_quotient(b, inv));
                }
            }
        }
        VTaps::Pil(w, _) => {
            let (half, zero, top) =
                (_mm256_set1_epi32(PIL_HALF), _mm256_setzero_si256(), _mm256_set1_epi32(255));
            let done = |s: __m256i| {
                let s = _mm256_srai_epi32::<{ PIL_SHIFT as i32 }>(s);
                _mm256_cvtepi32_ps(_mm256_min_epi32(_mm256_max_epi32(s, zero), top))
            };
            for x in (0..n).step_by(16) {
                unsafe {
                    let (mut a, mut b) = (half, half);
                    for (&r, &wj) in rows.iter().zip(w) {
                        let wj = _mm256_set1_epi32(wj);
                        // The rows hold the horizontal pass's bytes as i32 bits (`multitap::pil_byte`).
                        let (ra, rb) = (
                            _mm256_loadu_si256(r.add(x) as *const __m256i),
                            _mm256_loadu_si256(r.add(x + 8) as *const __m256i),
                        );
                        a = _mm256_add_epi32(a, _mm256_mullo_epi32(wj, ra));
                        b = _mm256_add_epi32(b, _mm256_mullo_epi32(wj, rb));
                    }
                    _mm256_storeu_ps(o.add(x), done(a));
                    _mm256_storeu_ps(o.add(x + 8), done(b));
                }
            }
        }
    }
    n
}

/// `1 / 2D` in f32 (`pil_quotient`).
#[inline(always)]
fn pil_reciprocal(d: u8) -> f32 {
    1.0 / (2.0 * d as f32)
}

/// PIL's byte `⌊t / 2D⌋` of `t = 2S + D` (`weights::pil_whole`: `D ≤ 127`, `S ≤ 255 · D`), as
/// f32, from `inv = pil_reciprocal(D)`: `t · inv` is off by under 2^-15 and, for an odd `D`,
/// `t / 2D` is at least `1 / 2D` from a whole number; for a power of two every step is exact.
/// (`pil_quotients_are_exact` checks every `t` of every `D`.)
#[inline(always)]
unsafe fn pil_quotient(t: __m256i, inv: __m256) -> __m256 {
    _mm256_floor_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(t), inv))
}

/// Every other byte of a row from `from` (`plan::Compact`): `out[j] = row[from + 2j]`, 32 per
/// step (the bytes of two loads from the even byte at or before `from`, low or high halves of
/// their words by one `packuswb` and a quadword permute), the last step moved back to end at
/// the row's end (a scalar tail was a fifth of the pack); each pair of lines read asked for again
/// `ahead` bytes on (`multitap::ahead_bytes`; 0: none).
///
/// # Safety
/// The CPU has AVX2.
#[target_feature(enable = "avx2")]
pub(in crate::convert) unsafe fn pack_bytes(row: &[u8], from: usize, out: &mut [u8], ahead: usize) {
    assert!(from + 2 * out.len() <= row.len() + 1, "the packed samples are in the row");
    unsafe {
        match from % 2 {
            0 => pack_bytes_by::<false>(row, from, out, ahead),
            _ => pack_bytes_by::<true>(row, from - 1, out, ahead),
        }
    }
}

/// `pack_bytes` from the even byte `even`: the words' high bytes where `HIGH`, else their low.
#[inline(always)]
unsafe fn pack_bytes_by<const HIGH: bool>(row: &[u8], even: usize, out: &mut [u8], ahead: usize) {
    let low = _mm256_set1_epi16(0x00ff);
    let half = |v: __m256i| match HIGH {
        true => _mm256_srli_epi16::<8>(v),
        false => _mm256_and_si256(v, low),
    };
    let n = out.len();
    if n < 32 || even + 2 * n > row.len() {
        for (j, o) in out.iter_mut().enumerate() {
            *o = row[even + usize::from(HIGH) + 2 * j];
        }
        return;
    }
    let dst = out.as_mut_ptr();
    let step = |j: usize| unsafe {
        let at = row.as_ptr().add(even + 2 * j);
        let (a, b) =
            (_mm256_loadu_si256(at as *const __m256i), _mm256_loadu_si256(at.add(32) as *const __m256i));
        let v = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packus_epi16(half(a), half(b)));
        _mm256_storeu_si256(dst.add(j) as *mut __m256i, v);
    };
    let mut j = 0;
    while j + 32 <= n {
        if ahead != 0 && j % 64 == 0 {
            prefetch_window(&[unsafe { row.as_ptr().add(even + 2 * j) }], ahead, true);
        }
        step(j);
        j += 32;
    }
    if j < n {
        step(n - 32);
    }
}

/// A row's even and odd bytes at once (`pack_bytes` from byte 0 into `even` and from byte 1
/// into `odd`): YUY2's luma and chroma groups read each source row once instead of once each
/// (`driver::split_rows`); 32 bytes of each half a step, the last step moved back to end at the
/// row's end, rows under a step by the scalar loop. The lines `ahead` bytes on asked for as
/// they are read (0: none).
///
/// # Safety
/// The CPU has AVX2.
#[target_feature(enable = "avx2")]
pub(in crate::convert) unsafe fn pack_bytes_split(row: &[u8], even: &mut [u8], odd: &mut [u8], ahead: usize) {
    assert!(even.len() == row.len().div_ceil(2) && odd.len() == row.len() / 2, "both halves of the row");
    let n = row.len() / 2;
    if n < 32 {
        for (j, &b) in row.iter().enumerate() {
            match j % 2 {
                0 => even[j / 2] = b,
                _ => odd[j / 2] = b,
            }
        }
        return;
    }
    let low = _mm256_set1_epi16(0x00ff);
    let mut step = |j: usize| unsafe {
        let at = row.as_ptr().add(2 * j);
        let (a, b) =
            (_mm256_loadu_si256(at as *const __m256i), _mm256_loadu_si256(at.add(32) as *const __m256i));
        let e = _mm256_packus_epi16(_mm256_and_si256(a, low), _mm256_and_si256(b, low));
        let o = _mm256_packus_epi16(_mm256_srli_epi16::<8>(a), _mm256_srli_epi16::<8>(b));
        _mm256_storeu_si256(
            even.as_mut_ptr().add(j) as *mut __m256i,
            _mm256_permute4x64_epi64::<0b11_01_10_00>(e),
        );
        _mm256_storeu_si256(
            odd.as_mut_ptr().add(j) as *mut __m256i,
            _mm256_permute4x64_epi64::<0b11_01_10_00>(o),
        );
    };
    let mut j = 0;
    while j + 32 <= n {
        if ahead != 0 {
            prefetch_window(&[unsafe { row.as_ptr().add(2 * j) }], ahead, false);
        }
        step(j);
        j += 32;
    }
    if j < n {
        step(n - 32);
    }
    if row.len() % 2 == 1 {
        even[n] = row[2 * n];
    }
}

/// `pack_bytes_split` with half `halve` (0: the even bytes, 1: the odd) stored as two runs, its
/// even samples then its odd ones (`plan::Halved`: YUY2's U then V, UYVY's the same from the even
/// half), the other half as `pack_bytes_split` stores it. Split so, U and V are each one member's
/// consecutive bytes, and a lane's eight chroma outputs at 1.5× span one 16-byte piece instead of
/// two. 32 samples of each run a step (128 bytes of the row), the last step moved back to the
/// row's last whole four bytes, the rest by the scalar loop; the lines `ahead` bytes on asked for
/// as they are read (0: none).
///
/// # Safety
/// The CPU has AVX2.
#[target_feature(enable = "avx2")]
pub(in crate::convert) unsafe fn pack_bytes_split_halved(
    row: &[u8],
    even: &mut [u8],
    odd: &mut [u8],
    halve: usize,
    ahead: usize,
) {
    assert!(even.len() == row.len().div_ceil(2) && odd.len() == row.len() / 2, "both halves of the row");
    assert!(halve <= 1, "a half is 0 or 1");
    let (whole, halved) = if halve == 0 { (odd, even) } else { (even, odd) };
    let q = halved.len().div_ceil(2);
    let scalar = |whole: &mut [u8], halved: &mut [u8], from: usize| {
        for (i, &b) in row.iter().enumerate().skip(from) {
            let s = i / 2;
            match (i % 2 == halve, s % 2) {
                (false, _) => whole[s] = b,
                (true, 0) => halved[s / 2] = b,
                (true, _) => halved[q + s / 2] = b,
            }
        }
    };
    let quads = row.len() / 4;
    if quads < 32 {
        scalar(whole, halved, 0);
        return;
    }
    let low = _mm256_set1_epi16(0x00ff);
    // The runs' dwords come out of the two packs in the order 0, 2, 4, 6, 1, 3, 5, 7.
    let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    let (w, h) = (whole.as_mut_ptr(), halved.as_mut_ptr());
    // The row's even and odd bytes of 64 bytes from `at`, as packed: each lane's qwords from
    // the two loads' same lane (the whole half's put in order, the halved half's left so: its
    // runs are put in order once, after their own pack).
    let split = |at: *const u8| unsafe {
        let (a, b) =
            (_mm256_loadu_si256(at as *const __m256i), _mm256_loadu_si256(at.add(32) as *const __m256i));
        let e = _mm256_packus_epi16(_mm256_and_si256(a, low), _mm256_and_si256(b, low));
        let o = _mm256_packus_epi16(_mm256_srli_epi16::<8>(a), _mm256_srli_epi16::<8>(b));
        if halve == 0 {
            (_mm256_permute4x64_epi64::<0b11_01_10_00>(o), e)
        } else {
            (_mm256_permute4x64_epi64::<0b11_01_10_00>(e), o)
        }
    };
    // Four-byte groups `k..k + 32`: 64 samples of the whole half, 32 of each run.
    let step = |k: usize| unsafe {
        let at = row.as_ptr().add(4 * k);
        let ((w1, c1), (w2, c2)) = (split(at), split(at.add(64)));
        _mm256_storeu_si256(w.add(2 * k) as *mut __m256i, w1);
        _mm256_storeu_si256(w.add(2 * k + 32) as *mut __m256i, w2);
        let u = _mm256_packus_epi16(_mm256_and_si256(c1, low), _mm256_and_si256(c2, low));
        let v = _mm256_packus_epi16(_mm256_srli_epi16::<8>(c1), _mm256_srli_epi16::<8>(c2));
        _mm256_storeu_si256(h.add(k) as *mut __m256i, _mm256_permutevar8x32_epi32(u, order));
        _mm256_storeu_si256(h.add(q + k) as *mut __m256i, _mm256_permutevar8x32_epi32(v, order));
    };
    let mut k = 0;
    while k + 32 <= quads {
        if ahead != 0 {
            prefetch_window(&[unsafe { row.as_ptr().add(4 * k) }], ahead, true);
        }
        step(k);
        k += 32;
    }
    if k < quads {
        step(quads - 32);
    }
    scalar(whole, halved, 4 * quads);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both halves are the row's even and odd bytes, on rows shorter than a step, of odd lengths
    /// and with a last step moved back, and nothing is written past them.
    #[test]
    fn split_packing_is_both_halves() {
        if !is_x86_feature_detected!("avx2") {
            return;
        }
        for len in [0usize, 1, 7, 63, 64, 65, 127, 200, 3840, 3841] {
            let row: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            let (mut even, mut odd) = (vec![0xa5u8; len.div_ceil(2) + 8], vec![0xa5u8; len / 2 + 8]);
            let (ne, no) = (len.div_ceil(2), len / 2);
            unsafe { pack_bytes_split(&row, &mut even[..ne], &mut odd[..no], 0) };
            let want_even: Vec<u8> = row.iter().step_by(2).copied().collect();
            let want_odd: Vec<u8> = row.iter().skip(1).step_by(2).copied().collect();
            assert_eq!(&even[..ne], &want_even[..], "{len}");
            assert_eq!(&odd[..no], &want_odd[..], "{len}");
            assert!(even[ne..].iter().chain(&odd[no..]).all(|&b| b == 0xa5), "{len}: past the halves");
        }
    }

    /// With a half halved, the other half is the row's bytes of its parity and the halved one
    /// its even samples then its odd ones, on rows shorter than a step, of every length modulo
    /// four and with a last step moved back, and nothing is written past them.
    #[test]
    fn halved_packing_is_both_runs() {
        if !is_x86_feature_detected!("avx2") {
            return;
        }
        for halve in 0..2 {
            for len in [0usize, 1, 3, 7, 64, 127, 128, 129, 130, 131, 200, 255, 256, 3840, 3841, 3842, 3843] {
                let row: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
                let (ne, no) = (len.div_ceil(2), len / 2);
                let (mut even, mut odd) = (vec![0xa5u8; ne + 40], vec![0xa5u8; no + 40]);
                unsafe { pack_bytes_split_halved(&row, &mut even[..ne], &mut odd[..no], halve, 0) };
                let half = |p: usize| -> Vec<u8> { row.iter().skip(p).step_by(2).copied().collect() };
                let h = half(halve);
                let runs: Vec<u8> = h.iter().step_by(2).chain(h.iter().skip(1).step_by(2)).copied().collect();
                let (want_even, want_odd) = if halve == 0 { (runs, half(1)) } else { (half(0), runs) };
                assert_eq!(&even[..ne], &want_even[..], "{halve} {len}");
                assert_eq!(&odd[..no], &want_odd[..], "{halve} {len}");
                assert!(
                    even[ne..].iter().chain(&odd[no..]).all(|&b| b == 0xa5),
                    "{halve} {len}: past the halves"
                );
            }
        }
    }

    /// `pil_quotient` is `⌊t / 2D⌋` for every `t = 2S + D` (`0 ≤ S ≤ 255 · D`) of every `D` that
    /// `weights::pil_whole` makes: the odd ones and the powers of two up to 127.
    #[test]
    fn pil_quotients_are_exact() {
        if !is_x86_feature_detected!("avx2") {
            return;
        }
        let mut checked = 0u64;
        for d in (1..=127u8).filter(|d| d % 2 == 1 || d.is_power_of_two()) {
            let inv = unsafe { _mm256_set1_ps(pil_reciprocal(d)) };
            let ts: Vec<i32> = (0..=255 * d as i32).map(|s| 2 * s + d as i32).collect();
            for chunk in ts.chunks(8) {
                let mut t = [d as i32; 8];
                t[..chunk.len()].copy_from_slice(chunk);
                let mut q = [0f32; 8];
                unsafe {
                    let v = _mm256_loadu_si256(t.as_ptr() as *const __m256i);
                    _mm256_storeu_ps(q.as_mut_ptr(), pil_quotient(v, inv));
                }
                for (&t, &q) in t.iter().zip(&q) {
                    assert_eq!(q, (t / (2 * d as i32)) as f32, "D {d}, t {t}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 1_000_000, "{checked}");
    }
}
