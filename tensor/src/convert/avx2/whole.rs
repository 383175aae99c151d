//! The AVX2 level's PIL horizontal pass with whole weights (`plan::Whole8`): sixteen outputs a
//! block in word lanes, a `pshufb` per piece and one `pmaddubsw` a tap pair.

use crate::convert::hint::prefetch;
use crate::convert::plan::Whole8;
use std::arch::x86_64::*;

/// PIL's horizontal pass with whole weights over source rows `rows` (one to three, each its
/// bytes) into their members' rows of bytes `out[i]` (`multitap::pil8_row`): the blocks that are
/// not whole are skipped (the caller makes them from `plan.rest`); each block's lines asked for
/// again `ahead` bytes on (`multitap::ahead_bytes`; 0: none). Returns the outputs each member has
/// from the blocks, whole or not.
///
/// # Safety
/// The CPU has AVX2; `out[i]` holds the group's members' rows (null past them), each
/// `plan.done` writable bytes.
#[target_feature(enable = "avx2,fma")]
pub(in crate::convert) unsafe fn whole_bytes(
    rows: &[&[u8]],
    plan: &Whole8,
    out: &[[*mut u8; 4]],
    ahead: usize,
) -> usize {
    assert!(
        rows.len() == out.len()
            && (1..=3).contains(&rows.len())
            && rows.iter().all(|r| plan.reach <= r.len()),
        "loads stay inside the rows"
    );
    let members = out[0].iter().take_while(|p| !p.is_null()).count();
    macro_rules! by_pairs {
        ($l:expr, $m:expr, $r:expr) => {
            match plan.pairs {
                2 => unsafe { whole_blocks::<$l, $m, $r, 2>(rows, plan, out, ahead) },
                3 => unsafe { whole_blocks::<$l, $m, $r, 3>(rows, plan, out, ahead) },
                _ => unsafe { whole_blocks::<$l, $m, $r, 0>(rows, plan, out, ahead) },
            }
        };
    }
    macro_rules! by_rows {
        ($l:expr, $m:expr) => {
            match rows.len() {
                1 => by_pairs!($l, $m, 1),
                2 => by_pairs!($l, $m, 2),
                _ => by_pairs!($l, $m, 3),
            }
        };
    }
    macro_rules! by_members {
        ($l:expr) => {
            match members {
                1 => by_rows!($l, 1),
                _ => by_rows!($l, 2),
            }
        };
    }
    match plan.pieces {
        1 => by_members!(1),
        2 => by_members!(2),
        3 => by_members!(3),
        _ => by_members!(4),
    }
}

/// Rows `rows[..R]` into `out[..R]` (see `whole_bytes`), `L` pieces a lane window, `M` members,
/// `P` tap pairs (0: the plan's). Unoptimized, a function of its own per case (as AVX-512's
/// `whole_blocks`: the frame of `whole_bytes`).
#[cfg_attr(debug_assertions, inline(never))]
#[cfg_attr(not(debug_assertions), inline(always))]
unsafe fn whole_blocks<const L: usize, const M: usize, const R: usize, const P: usize>(
    rows: &[&[u8]],
    plan: &Whole8,
    out: &[[*mut u8; 4]],
    ahead: usize,
) -> usize {
    assert!(plan.pieces == L && rows.len() >= R && out.len() >= R && (1..=2).contains(&M));
    assert!(P == 0 || plan.pairs == P);
    let pairs = if P == 0 { plan.pairs } else { P };
    let blocks = plan.bases.len().min(plan.plain.len()).min(plan.table.len());
    let tables = plan.tables();
    assert!(
        plan.k.len() >= tables * pairs
            && plan.n.len() >= tables * pairs
            && plan.ctl.len() >= tables * pairs * L
    );
    assert!((blocks == 0 || tables > 0) && (plan.tied.is_empty() || blocks > 0));
    // Each block's table and each tied block kept in range where they are read
    // (`Whole8::table_of`, a compare each), not every table checked on every call (as AVX-512's
    // `whole_blocks`; NV12 `bilinear-antialias` at this level, 8 frames, 0.392–0.396 →
    // 0.387–0.392 ms).
    debug_assert!(plan.table[..blocks].iter().all(|&t| (t as usize) < tables), "tables are tables");
    debug_assert!(plan.tied.iter().all(|&b| (b as usize) < blocks), "tied blocks are blocks");
    // Loops, not `array::from_fn`: with the pair count a constant, LLVM left those closures
    // outlined, without AVX2, and NV12's kernel ran 25 % slower.
    let mut row = [std::ptr::null::<u8>(); R];
    for i in 0..R {
        row[i] = rows[i].as_ptr();
    }
    if P != 0 && L <= 2 {
        // A table held in registers while the blocks share it (`Whole8::table`), as AVX-512's
        // `plain_blocks`: at most 2 · 3 controls, 3 weights, `D` and the multiplier of the 16
        // registers, a row's window at a time beside them. Engine, uint8 `bilinear-antialias`
        // at AVX2, 1080p, Zen 5, best of 60 alternated four times: NV12 hot 0.303–0.310 →
        // 0.282–0.287 ms, 8 frames 0.308–0.310 → 0.288–0.290; YUY2 hot 0.404–0.417 →
        // 0.391–0.395; RGBA and 900p level.
        let zero = _mm256_setzero_si256();
        let empty =
            Held8::<L, P> { c: [[zero; L]; P], k: [zero; P], d: zero, mul: zero, count: _mm_setzero_si128() };
        let mut held = (usize::MAX, empty);
        for b in 0..blocks {
            if *plan.plain.get_unchecked(b) {
                let t = plan.table_of(b);
                if t != held.0 {
                    held = (t, Held8::load(plan, t));
                }
                let [s0, s1] = *plan.bases.get_unchecked(b);
                whole_block_held::<L, M, R, P>(&row, &held.1, out, b, [s0 as usize, s1 as usize], ahead);
            }
        }
    } else {
        for b in 0..blocks {
            if *plan.plain.get_unchecked(b) {
                whole_block::<L, M, R, false>(&row, plan, pairs, out, b, ahead);
            }
        }
    }
    // The tied blocks after the others, as AVX-512's (none test anything per block).
    for &b in &plan.tied {
        whole_block::<L, M, R, true>(&row, plan, pairs, out, (b as usize).min(blocks - 1), ahead);
    }
    plan.done
}

/// Block `b` of `whole_blocks` over rows `row`, with the ties' remainders where `TIE`: a tie
/// (`2S + D = 2D · q`) whose remainders sum below 0 is PIL's `q − 1` (`weights::pil_tied`).
#[inline(always)]
unsafe fn whole_block<const L: usize, const M: usize, const R: usize, const TIE: bool>(
    row: &[*const u8; R],
    plan: &Whole8,
    pairs: usize,
    out: &[[*mut u8; 4]],
    b: usize,
    ahead: usize,
) {
    unsafe {
        let [s0, s1] = *plan.bases.get_unchecked(b);
        let t = plan.table_of(b);
        let (s0, s1) = (s0 as usize, s1 as usize);
        let v = windows::<L, R>(row, s0, s1, ahead);
        // Sums from `D` over twice the weights are `2S + D` (`Whole8::k`); with ties, the
        // remainders' sums beside them (`Whole8::n`).
        let d = _mm256_load_si256(plan.d.as_ptr().add(t) as *const __m256i);
        let mut s = [d; R];
        let mut e = [_mm256_setzero_si256(); R];
        for p in 0..pairs {
            let at = t * pairs + p;
            let ctl = plan.ctl.as_ptr().add(at * L) as *const __m256i;
            let mut c = [_mm256_setzero_si256(); L];
            for q in 0..L {
                c[q] = _mm256_load_si256(ctl.add(q));
            }
            let k = _mm256_load_si256(plan.k.as_ptr().add(at) as *const __m256i);
            for i in 0..R {
                let mut t = _mm256_shuffle_epi8(v[i][0], c[0]);
                for q in 1..L {
                    t = _mm256_or_si256(t, _mm256_shuffle_epi8(v[i][q], c[q]));
                }
                s[i] = _mm256_add_epi16(s[i], _mm256_maddubs_epi16(t, k));
                if TIE {
                    let n = _mm256_load_si256(plan.n.as_ptr().add(at) as *const __m256i);
                    e[i] = _mm256_add_epi16(e[i], _mm256_maddubs_epi16(t, n));
                }
            }
        }
        let mul = _mm256_load_si256(plan.mul.as_ptr().add(t) as *const __m256i);
        let count = _mm_cvtsi64_si128(*plan.shift.get_unchecked(t) as i64);
        let mut q = [d; R];
        for i in 0..R {
            // ⌊⌊t · m / 2^16⌋ / 2^s⌋, `t` less two on a negative remainder sum (`tie_sum`).
            let t = if TIE { tie_sum(s[i], e[i]) } else { s[i] };
            q[i] = _mm256_srl_epi16(mulhi(t, mul), count);
        }
        store_block::<M, R>(&q, out, b);
    }
}

/// Each row's window of a block whose lanes start at bytes `s0` and `s1` (`L` pieces of 16 bytes
/// a lane), its lines asked for again `ahead` bytes on (0: none).
#[inline(always)]
unsafe fn windows<const L: usize, const R: usize>(
    row: &[*const u8; R],
    s0: usize,
    s1: usize,
    ahead: usize,
) -> [[__m256i; L]; R] {
    unsafe {
        if ahead != 0 {
            for &r in row {
                prefetch(r.wrapping_add(s0 + ahead));
                prefetch(r.wrapping_add(s1 + 16 * L - 1 + ahead));
            }
        }
        let mut v = [[_mm256_setzero_si256(); L]; R];
        for i in 0..R {
            for q in 0..L {
                let lo = _mm_loadu_si128(row[i].add(s0 + 16 * q) as *const __m128i);
                let hi = _mm_loadu_si128(row[i].add(s1 + 16 * q) as *const __m128i);
                v[i][q] = _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(lo), hi);
            }
        }
        v
    }
}

/// A table of `Whole8::table` in registers: `P` pairs' controls (`L` pieces each) and weights,
/// `D`, the multiplier and the shift.
#[derive(Clone, Copy)]
struct Held8<const L: usize, const P: usize> {
    c: [[__m256i; L]; P],
    k: [__m256i; P],
    d: __m256i,
    mul: __m256i,
    count: __m128i,
}

impl<const L: usize, const P: usize> Held8<L, P> {
    /// Table `t` of `plan` (whose pairs are `P`, pieces `L`).
    #[inline(always)]
    unsafe fn load(plan: &Whole8, t: usize) -> Self {
        unsafe {
            let mut held = Held8 {
                c: [[_mm256_setzero_si256(); L]; P],
                k: [_mm256_setzero_si256(); P],
                d: _mm256_load_si256(plan.d.as_ptr().add(t) as *const __m256i),
                mul: _mm256_load_si256(plan.mul.as_ptr().add(t) as *const __m256i),
                count: _mm_cvtsi64_si128(*plan.shift.get_unchecked(t) as i64),
            };
            for p in 0..P {
                let at = t * P + p;
                for q in 0..L {
                    held.c[p][q] =
                        _mm256_load_si256((plan.ctl.as_ptr().add(at * L) as *const __m256i).add(q));
                }
                held.k[p] = _mm256_load_si256(plan.k.as_ptr().add(at) as *const __m256i);
            }
            held
        }
    }
}

/// A plain block (no ties) of `whole_blocks` through a table held in registers.
#[inline(always)]
unsafe fn whole_block_held<const L: usize, const M: usize, const R: usize, const P: usize>(
    row: &[*const u8; R],
    held: &Held8<L, P>,
    out: &[[*mut u8; 4]],
    b: usize,
    [s0, s1]: [usize; 2],
    ahead: usize,
) {
    unsafe {
        let mut q = [held.d; R];
        for i in 0..R {
            // A row's window at a time: the table, a window and its sums fill the registers.
            let [v] = windows::<L, 1>(&[row[i]], s0, s1, ahead);
            let mut s = held.d;
            for p in 0..P {
                let mut t = _mm256_shuffle_epi8(v[0], held.c[p][0]);
                for j in 1..L {
                    t = _mm256_or_si256(t, _mm256_shuffle_epi8(v[j], held.c[p][j]));
                }
                s = _mm256_add_epi16(s, _mm256_maddubs_epi16(t, held.k[p]));
            }
            q[i] = _mm256_srl_epi16(mulhi(s, held.mul), held.count);
        }
        store_block::<M, R>(&q, out, b);
    }
}

/// Rows `0..R`'s quotients `q` of block `b` (each below 256) into their members' rows `out`.
#[inline(always)]
unsafe fn store_block<const M: usize, const R: usize>(q: &[__m256i; R], out: &[[*mut u8; 4]], b: usize) {
    unsafe {
        // Two rows' quotients (each below 256) packed at once: per lane row `i`'s eight bytes,
        // then row `i + 1`'s. Against a pack, an extract and two 8-byte stores a row, 1080p YUY2
        // `bilinear-antialias` at AVX2 (Zen 2) 0.89 → 0.88 ms hot.
        let mut i = 0;
        while i < R {
            let two = i + 1 < R;
            let v = _mm256_packus_epi16(q[i], if two { q[i + 1] } else { q[i] });
            let o = |r: usize, m: usize| out[r][m];
            match M {
                1 => {
                    // Row `i`'s sixteen outputs, then row `i + 1`'s.
                    let v = _mm256_permute4x64_epi64::<0b11_01_10_00>(v);
                    _mm_storeu_si128(o(i, 0).add(16 * b) as *mut __m128i, _mm256_castsi256_si128(v));
                    if two {
                        _mm_storeu_si128(
                            o(i + 1, 0).add(16 * b) as *mut __m128i,
                            _mm256_extracti128_si256::<1>(v),
                        );
                    }
                }
                _ => {
                    let (l0, l1) = (_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
                    _mm_storel_epi64(o(i, 0).add(8 * b) as *mut __m128i, l0);
                    _mm_storel_epi64(o(i, 1).add(8 * b) as *mut __m128i, l1);
                    if two {
                        _mm_storeh_pd(o(i + 1, 0).add(8 * b) as *mut f64, _mm_castsi128_pd(l0));
                        _mm_storeh_pd(o(i + 1, 1).add(8 * b) as *mut f64, _mm_castsi128_pd(l1));
                    }
                }
            }
            i += 2;
        }
    }
}

/// `2S + D` (`s`) of tied weights less two where the remainders' sum `e` is negative: its
/// quotient by `2D` is PIL's byte (`weights::pil_tied`: one less on a tie, `t = 2D · q`).
#[target_feature(enable = "avx2")]
#[inline]
pub(super) unsafe fn tie_sum(s: __m256i, e: __m256i) -> __m256i {
    _mm256_add_epi16(s, _mm256_slli_epi16::<1>(_mm256_srai_epi16::<15>(e)))
}

/// `pmulhuw` as the instruction: from the intrinsic, LLVM widened the sums to dwords, multiplied
/// and packed them back, a third of this kernel's samples (1080p NV12 `bilinear-antialias`).
#[target_feature(enable = "avx2")]
#[inline]
pub(super) unsafe fn mulhi(a: __m256i, b: __m256i) -> __m256i {
    let mut a = a;
    unsafe {
        std::arch::asm!("vpmulhuw {a}, {a}, {b}", a = inout(ymm_reg) a, b = in(ymm_reg) b, options(pure, nomem, nostack));
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::plan::{components, multi_axis, Filter, MultiTap};
    use crate::format::PixelFormat;
    use crate::preprocess::Interpolation;

    /// The kernel's outputs are PIL's bytes:
    /// gray and NV12 rows at 3× (luma 1920 → 640, its chroma pair 960 → 640), 2.5×, 1.25× and
    /// 1000 → 333, one to three rows of random bytes: every output of a whole block equals PIL's
    /// fixed point, and the blocks that are not whole are not written.
    #[test]
    fn whole_blocks_give_pils_bytes() {
        if !is_x86_feature_detected!("avx2") {
            return;
        }
        let filter = Filter::of(Interpolation::BilinearAntialias, true).unwrap();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let (mut checked, mut plans, mut skipped) = (0, 0, 0);
        for format in [PixelFormat::Gray8, PixelFormat::Nv12] {
            let (_, comps) = components(format).unwrap();
            for (w, n) in [(1920, 640), (1600, 640), (1000, 333)] {
                let div = if format == PixelFormat::Nv12 { 2 } else { 1 };
                let cols = [
                    multi_axis(n, 0, w, 1, 0, w - 1, filter, 0.0),
                    multi_axis(n, 0, w, div, 0, w / div - 1, filter, 0.0),
                ];
                let row_len: [usize; 3] = std::array::from_fn(|p| match p < format.num_planes() {
                    true => format.plane_sampling(p, 1).row_bytes(w),
                    false => 0,
                });
                let m = MultiTap::new(cols.clone(), cols.clone(), &comps, row_len, true);
                for g in &m.groups {
                    let Some(plan) = &g.whole8 else {
                        skipped += 1;
                        continue;
                    };
                    plans += 1;
                    let lead = comps[g.members[0]];
                    let t = &cols[usize::from(lead.chroma)];
                    let (len, members) = (row_len[lead.plane], g.members.len());
                    for r in 1..=3 {
                        let rows: Vec<Vec<u8>> =
                            (0..r).map(|_| (0..len).map(|_| next() as u8).collect()).collect();
                        let src: Vec<&[u8]> = rows.iter().map(|v| &v[..]).collect();
                        // 0x5a where not written.
                        let mut bytes = vec![vec![vec![0x5au8; plan.done]; members]; r];
                        let byte_targets: Vec<[*mut u8; 4]> = bytes
                            .iter_mut()
                            .map(|o| {
                                std::array::from_fn(|k| {
                                    o.get_mut(k).map_or(std::ptr::null_mut(), |v| v.as_mut_ptr())
                                })
                            })
                            .collect();
                        assert_eq!(unsafe { whole_bytes(&src, plan, &byte_targets, 0) }, plan.done);
                        let per = 2 / members;
                        for (i, row) in rows.iter().enumerate() {
                            for (mi, &k) in g.members.iter().enumerate() {
                                for x in 0..plan.done {
                                    let got = bytes[i][mi][x] as u32;
                                    if plan.whole.get(x / (8 * per)) != Some(&true) {
                                        assert_eq!(got, 0x5a, "{format:?} {w}->{n}: output {x} not whole");
                                        continue;
                                    }
                                    let pil: i64 = (0..t.taps)
                                        .map(|j| {
                                            t.wi[x * t.taps + j] as i64
                                                * row[m.base[k][x] as usize + comps[k].step * j] as i64
                                        })
                                        .sum();
                                    let pil = ((pil + (1 << 21)) >> 22).clamp(0, 255) as u32;
                                    assert_eq!(
                                        got, pil,
                                        "{format:?} {w}->{n} row {i} member {mi} output {x}"
                                    );
                                    checked += 1;
                                }
                            }
                        }
                    }
                }
            }
        }
        assert!(checked > 20_000 && plans >= 5, "{checked} outputs, {plans} plans, {skipped} groups without");
    }
}
