//! The NEON level's PIL horizontal pass with whole weights, tap by tap (`plan::WholeTaps`).

use super::lookup;
use crate::convert::hint::prefetch;
use crate::convert::plan::{TapBlock, WholeTaps};
use std::arch::aarch64::*;

/// PIL's horizontal pass over source rows `rows` into their members' rows of the byte ring
/// (`out[i]`, `multitap::pil8_row`), the blocks of `plan` (`plan::WholeTaps`). Each block's window asked for
/// again `ahead` bytes on (0: none). Returns the outputs each member has from the blocks.
///
/// # Safety
/// `out[i]` holds the group's members' rows (null past them), each `plan.done` writable values.
pub(in crate::convert) unsafe fn whole_taps(
    rows: &[&[u8]],
    plan: &WholeTaps,
    out: &[[*mut u8; 4]],
    ahead: usize,
) -> usize {
    assert!(
        rows.len() == out.len() && rows.iter().all(|r| plan.reach <= r.len()),
        "loads stay inside the rows"
    );
    // Every row has the same members, and each block's member is kept among them where it is
    // stored (`run_blocks`, a compare), not every block checked on every call (as AVX-512's
    // `whole_blocks` keeps its tables).
    let members = out.first().map_or(0, |o| o.iter().take_while(|p| !p.is_null()).count());
    assert!(
        members > 0 && out.iter().all(|o| o.iter().take_while(|p| !p.is_null()).count() == members),
        "every row has the members' rows"
    );
    debug_assert!(
        plan.blocks.iter().all(|b| (b.member as usize) < members),
        "every block's member has a row"
    );
    macro_rules! by_pieces {
        ($t:literal) => {
            match plan.pieces {
                1 => unsafe { tap_blocks::<$t, 1>(rows, plan, out, members, ahead) },
                2 => unsafe { tap_blocks::<$t, 2>(rows, plan, out, members, ahead) },
                3 => unsafe { tap_blocks::<$t, 3>(rows, plan, out, members, ahead) },
                _ => unsafe { tap_blocks::<$t, 4>(rows, plan, out, members, ahead) },
            }
        };
    }
    match plan.taps {
        0 => 0,
        1 => by_pieces!(1),
        2 => by_pieces!(2),
        3 => by_pieces!(3),
        4 => by_pieces!(4),
        5 => by_pieces!(5),
        6 => by_pieces!(6),
        7 => by_pieces!(7),
        _ => by_pieces!(8),
    }
}

/// `⌊t · m / 2^16⌋` shifted right by `-s` per lane: `⌊t / 2D⌋` (`whole::divider`).
#[inline(always)]
pub(super) unsafe fn divide(t: uint16x8_t, m: uint16x8_t, s: int16x8_t) -> uint16x8_t {
    unsafe {
        let lo = vmull_u16(vget_low_u16(t), vget_low_u16(m));
        let hi: uint32x4_t;
        // `umull2` (`vmull_high_u16`) as written: LLVM kept `m`'s high half apart, outside the
        // loop, and took `t`'s by an `ext` and a `umull` per block.
        std::arch::asm!(
            "umull2 {hi:v}.4s, {t:v}.8h, {m:v}.8h",
            hi = lateout(vreg) hi, t = in(vreg) t, m = in(vreg) m,
            options(pure, nomem, nostack, preserves_flags)
        );
        vshlq_u16(vuzp2q_u16(vreinterpretq_u16_u32(lo), vreinterpretq_u16_u32(hi)), s)
    }
}

/// `acc + a · b` over the high eight bytes (`umlal2`, `vmlal_high_u8` as written: LLVM split the
/// loop-invariant `b` into halves held apart and spilled them, with an `ext` of `a` and a
/// `umlal` per tap and block).
#[inline(always)]
pub(super) unsafe fn umlal2(acc: uint16x8_t, a: uint8x16_t, b: uint8x16_t) -> uint16x8_t {
    let mut acc = acc;
    unsafe {
        std::arch::asm!(
            "umlal2 {acc:v}.8h, {a:v}.16b, {b:v}.16b",
            acc = inout(vreg) acc, a = in(vreg) a, b = in(vreg) b,
            options(pure, nomem, nostack, preserves_flags)
        );
    }
    acc
}

/// `T` taps a table, windows of `L` registers: per row, per run of blocks with one table
/// (`WholeTaps::runs`), the table's indices, weights and dividers loaded once and the run's
/// blocks made by `run_blocks`. Not inlined: one body per `(T, L)`, as `multitap_blocks`.
#[inline(never)]
unsafe fn tap_blocks<const T: usize, const L: usize>(
    rows: &[&[u8]],
    plan: &WholeTaps,
    out: &[[*mut u8; 4]],
    members: usize,
    ahead: usize,
) -> usize {
    assert!(plan.taps == T && plan.pieces == L && members > 0);
    assert!(plan
        .tables
        .iter()
        .all(|t| t.idx.len() == T && t.k.len() == T && (t.n.is_empty() || t.n.len() == T)));
    assert!(plan.runs.iter().all(|r| r[0] <= r[1] && (r[1] as usize) <= plan.blocks.len()));
    unsafe {
        for (row, out) in rows.iter().zip(out) {
            for &[from, to, table] in &plan.runs {
                let table = &plan.tables[table as usize];
                let mut t = Table {
                    idx: [vdupq_n_u8(0); T],
                    k: [vdupq_n_u8(0); T],
                    d: [vdupq_n_u16(0); 2],
                    m: [vdupq_n_u16(0); 2],
                    s: [vdupq_n_s16(0); 2],
                };
                for j in 0..T {
                    t.idx[j] = vld1q_u8(table.idx[j].as_ptr());
                    t.k[j] = vld1q_u8(table.k[j].as_ptr());
                }
                for h in 0..2 {
                    t.d[h] = vld1q_u16(table.d.as_ptr().add(8 * h));
                    t.m[h] = vld1q_u16(table.mul.as_ptr().add(8 * h));
                    t.s[h] = vld1q_s16(table.shift.as_ptr().add(8 * h));
                }
                let blocks = &plan.blocks[from as usize..to as usize];
                match table.n.is_empty() {
                    true => run_blocks::<T, L, false>(row, blocks, &t, &[], (out, members), ahead),
                    false => run_blocks::<T, L, true>(row, blocks, &t, &table.n, (out, members), ahead),
                }
            }
        }
    }
    plan.done
}

/// A table in registers: per tap its `tbl` indices and doubled weights; per half of the block
/// `D`, the divider's multiplier and negated shift.
struct Table<const T: usize> {
    idx: [uint8x16_t; T],
    k: [uint8x16_t; T],
    d: [uint16x8_t; 2],
    m: [uint16x8_t; 2],
    s: [int16x8_t; 2],
}

/// The blocks of one run over `row` (see `tap_blocks`), with the ties' remainders `n` where
/// `TIE`.
#[inline(always)]
unsafe fn run_blocks<const T: usize, const L: usize, const TIE: bool>(
    row: &[u8],
    blocks: &[TapBlock],
    t: &Table<T>,
    n: &[[i8; 16]],
    (out, members): (&[*mut u8; 4], usize),
    ahead: usize,
) {
    unsafe {
        for b in blocks {
            let at = row.as_ptr().add(b.base as usize);
            if ahead != 0 {
                prefetch(at.wrapping_add(ahead));
                prefetch(at.wrapping_add(ahead + 16 * L - 1));
            }
            let mut w = [vdupq_n_u8(0); 4];
            for q in 0..L {
                w[q] = vld1q_u8(at.add(16 * q));
            }
            // `2S + D` per output, in u16 (below 2^16: `plan::WHOLE_MAX`). From four taps the even
            // and the odd ones are summed apart, then added: one chain of `umlal` per half held
            // the in-order cores on each one's latency (llvm-mca, Cortex-A53 / A55 / Neoverse N1:
            // 3× luma, five taps, 111 / 80 / 26 → 93 / 69 / 23 cycles a block; 1.5× chroma,
            // three, 87 / 63 / 18 → 82 / 63 / 20).
            let chains = if T >= 4 { 2 } else { 1 };
            let zero = vdupq_n_u16(0);
            let (mut lo, mut hi) = ([t.d[0], zero], [t.d[1], zero]);
            for j in 0..T {
                let (v, c) = (lookup::<L>(&w, t.idx[j]), j % chains);
                lo[c] = vmlal_u8(lo[c], vget_low_u8(v), vget_low_u8(t.k[j]));
                hi[c] = umlal2(hi[c], v, t.k[j]);
            }
            let (lo, hi) = match chains {
                1 => (lo[0], hi[0]),
                _ => (vaddq_u16(lo[0], lo[1]), vaddq_u16(hi[0], hi[1])),
            };
            let (mut lo, mut hi) = (lo, hi);
            if TIE {
                // A tie (`t = 2D · q`) whose remainders' sum is negative is one less: `t` less
                // two there (`weights::pil_tied`; all ones shifted left is −2).
                let (mut e0, mut e1) = (vdupq_n_s16(0), vdupq_n_s16(0));
                for j in 0..T {
                    let v = lookup::<L>(&w, t.idx[j]);
                    let nj = vld1q_s8(n[j].as_ptr());
                    let v0 = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(v)));
                    let v1 = vreinterpretq_s16_u16(vmovl_high_u8(v));
                    e0 = vmlaq_s16(e0, v0, vmovl_s8(vget_low_s8(nj)));
                    e1 = vmlaq_s16(e1, v1, vmovl_high_s8(nj));
                }
                lo = vaddq_u16(lo, vshlq_n_u16::<1>(vcltzq_s16(e0)));
                hi = vaddq_u16(hi, vshlq_n_u16::<1>(vcltzq_s16(e1)));
            }
            let q = [divide(lo, t.m[0], t.s[0]), divide(hi, t.m[1], t.s[1])];
            // (`whole_taps` checked the members' rows; each quotient is at most 255.)
            let o = out.get_unchecked((b.member as usize).min(members - 1)).add(b.x as usize);
            vst1q_u8(o, vcombine_u8(vmovn_u16(q[0]), vmovn_u16(q[1])));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::whole_taps;
    use crate::convert::plan::{components, multi_axis, Filter, MultiTap, TBL_BLOCK};
    use crate::format::PixelFormat;
    use crate::preprocess::Interpolation;

    /// The kernel writes PIL's byte for every output of every block
    /// (every one), one to three rows a call, with and without asking for lines, and leaves
    /// everything past `done` alone: luma and NV12's two members at
    /// 3×, 2.5× (the chroma's 1.25× tied) and 1.5×.
    #[test]
    fn tap_blocks_give_pils_bytes() {
        let filter = Filter::of(Interpolation::BilinearAntialias, true).unwrap();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let (mut checked, mut plans) = (0, 0);
        for format in [PixelFormat::Gray8, PixelFormat::Nv12] {
            let (_, comps) = components(format).unwrap();
            for (w, n) in [(1920, 640), (1600, 640), (960, 640)] {
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
                    let plan = g.whole_taps.as_ref().expect("PIL's triangle has whole weights here");
                    plans += 1;
                    let lead = comps[g.members[0]];
                    let t = &cols[usize::from(lead.chroma)];
                    let (len, members, n) = (row_len[lead.plane], g.members.len(), t.d.len());
                    for (r, ahead) in [(1, 0), (2, 4096), (3, 0)] {
                        let rows: Vec<Vec<u8>> =
                            (0..r).map(|_| (0..len).map(|_| next() as u8).collect()).collect();
                        let src: Vec<&[u8]> = rows.iter().map(|v| &v[..]).collect();
                        let mut out = vec![vec![vec![0x5au8; n]; members]; r];
                        let targets: Vec<[*mut u8; 4]> = out
                            .iter_mut()
                            .map(|o| {
                                std::array::from_fn(|k| {
                                    o.get_mut(k).map_or(std::ptr::null_mut(), |v| v.as_mut_ptr())
                                })
                            })
                            .collect();
                        assert_eq!(unsafe { whole_taps(&src, plan, &targets, ahead) }, plan.done);
                        for (i, row) in rows.iter().enumerate() {
                            for (j, &k) in g.members.iter().enumerate() {
                                for x in 0..n {
                                    let got = out[i][j][x];
                                    let block = plan.blocks.iter().find(|b| {
                                        b.member as usize == j
                                            && (b.x as usize..b.x as usize + TBL_BLOCK).contains(&x)
                                    });
                                    if block.is_none() {
                                        assert_eq!(
                                            got, 0x5a,
                                            "{format:?} {w}->{n}: output {x} is not the kernel's"
                                        );
                                        continue;
                                    }
                                    let pil: i64 = (0..t.taps)
                                        .map(|tap| {
                                            t.wi[x * t.taps + tap] as i64
                                                * row[m.base[k][x] as usize + lead.step * tap] as i64
                                        })
                                        .sum();
                                    let pil = ((pil + (1 << 21)) >> 22).clamp(0, 255) as u8;
                                    assert_eq!(got, pil, "{format:?} {w}->{n} row {i} member {j} output {x}");
                                    checked += 1;
                                }
                            }
                        }
                    }
                }
            }
        }
        assert!(plans >= 9 && checked > 20_000, "{plans} plans, {checked} outputs");
    }
}
