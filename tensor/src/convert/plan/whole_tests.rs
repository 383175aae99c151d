//! Host tests of the whole-weight plans: PIL's weights as whole `k / D` (`weights::pil_whole`,
//! `weights::pil_tied`) and the AVX-512 blocks over them (`whole::Whole`), run in scalar.
use super::*;

/// A xorshift64 stream from `state` (the tests' random rows).
fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

/// PIL's byte for output `x` of taps `t` over `row` (`⌊(Σ wi · b + 2^21) / 2^22⌋`, clamped), the
/// output's first tap at byte `first`, its taps `step` bytes apart: what every block is held to.
fn pil_byte(t: &Taps, row: &[u8], first: usize, step: usize, x: usize) -> i64 {
    let sum: i64 = (0..t.taps).map(|j| t.wi[x * t.taps + j] as i64 * row[first + step * j] as i64).sum();
    ((sum + (1 << 21)) >> 22).clamp(0, 255)
}

/// PIL's weights taken as whole `k / D` (`weights::pil_whole`) give PIL's byte for any bytes: on
/// the triangle and PIL's bicubic at 1.5× to 4× and odd ratios, chroma grids shifted by the
/// sitings, random rows and the extremes, `⌊(2S + D) / 2D⌋` equals PIL's `⌊(Σ wi·b + 2^21) /
/// 2^22⌋` clamped; the 3× triangle's inner outputs are 1, 2, 3, 2, 1 over 9; and `divider`'s
/// multiply-high and shift divide every `2S + D` a block can make, for every `D`. Outputs
/// `pil_whole` leaves give PIL's byte through `weights::pil_tied` where that takes them: `⌊(2S +
/// D) / 2D⌋`, one less on a tie whose `Σ n·b` is negative, which is `⌊(2S + D − 2[Σ n·b < 0])
/// / 2D⌋` (the kernels' form); 1.25×'s (900p chroma) are 7, 5 over 12 with remainders −4, 4.
#[test]
fn pil_whole_weights_give_pils_bytes() {
    use super::weights::{pil_tied, pil_whole, WHOLE_MAX};
    use super::whole::divider;
    let mut next = xorshift(0x9e37_79b9_7f4a_7c15u64);
    let (mut whole, mut checked, mut tied, mut ties) = (0, 0, 0, 0);
    for interp in [Interpolation::BilinearAntialias, Interpolation::Bicubic] {
        let f = Filter::of(interp, true).unwrap();
        for (n, len, div, shift) in [
            (640, 1920, 1, 0.0),
            (640, 1920, 2, 0.0),
            (640, 1920, 2, 0.25),
            (640, 1600, 1, 0.0),
            (100, 400, 1, 0.0),
            (300, 700, 1, 0.0),
            (320, 480, 2, -0.25),
            (640, 1600, 2, 0.0),
            (640, 1600, 2, 0.25),
            (700, 1000, 1, 0.0),
            (29, 37, 1, 0.0),
            (230, 100, 1, 0.0),
            (170, 80, 1, 0.0),
        ] {
            let t = multi_axis(n, 0, len, div, 0, len / div - 1, f, shift);
            for i in 0..n {
                let wi = &t.wi[i * t.taps..][..t.taps];
                let (d, k, rem) = match pil_whole(wi) {
                    Some((d, k)) => {
                        assert_eq!(t.d[i], d);
                        assert_eq!(&t.k[i * t.taps..][..t.taps], &k[..]);
                        whole += 1;
                        (d, k, vec![0i8; t.taps])
                    }
                    None => {
                        assert_eq!(t.d[i], 0);
                        let Some((d, k, rem)) = pil_tied(wi) else { continue };
                        assert!(d % 2 == 0 && rem.iter().any(|&r| r != 0), "{len}->{n} output {i}");
                        tied += 1;
                        (d, k, rem)
                    }
                };
                for round in 0..64 {
                    let b: Vec<i64> = (0..t.taps)
                        .map(|j| match round {
                            0 => 0,
                            1 => 255,
                            2 => 255 * (j as i64 % 2),
                            _ => (next() % 256) as i64,
                        })
                        .collect();
                    let pil = (wi.iter().zip(&b).map(|(&w, &b)| w as i64 * b).sum::<i64>() + (1 << 21)) >> 22;
                    let s: i64 = k.iter().zip(&b).map(|(&k, &b)| k as i64 * b).sum();
                    let e: i64 = rem.iter().zip(&b).map(|(&r, &b)| r as i64 * b).sum();
                    let (t2, dd) = (2 * s + d as i64, 2 * d as i64);
                    let tie = t2 % dd == 0 && e < 0;
                    ties += tie as usize;
                    assert_eq!(pil.clamp(0, 255), t2 / dd - tie as i64, "{interp:?} {len}->{n} output {i}");
                    // The kernels' form: `t` less two where `Σ n·b` is negative, divided by
                    // `divider`'s multiply-high and shift (which an odd `t − 1` can defeat).
                    if let Some((m, sh)) = divider(d as u16) {
                        let t = (t2 - 2 * i64::from(e < 0)) as u64;
                        assert_eq!(
                            pil.clamp(0, 255) as u64,
                            (t * m as u64) >> 16 >> sh,
                            "{len}->{n} output {i}"
                        );
                    }
                    checked += 1;
                }
            }
        }
        if interp == Interpolation::BilinearAntialias {
            let t = multi_axis(640, 0, 1920, 1, 0, 1919, f, 0.0);
            assert_eq!((t.d[5], &t.k[5 * t.taps..][..5]), (9, &[1i16, 2, 3, 2, 1][..]));
        }
    }
    assert!(whole > 2000 && checked > 100_000, "{whole} whole outputs, {checked} sums");
    assert!(tied > 300 && ties > 100, "{tied} tied outputs, {ties} ties");
    let f = Filter::of(Interpolation::BilinearAntialias, true).unwrap();
    let t = multi_axis(640, 0, 1600, 2, 0, 799, f, 0.0);
    let wi = &t.wi[5 * t.taps..][..t.taps];
    assert_eq!(pil_tied(&wi[..2]), Some((12, vec![7, 5], vec![-4, 4])), "{wi:?}");
    // 16 bits divide every D up to 92 (a few larger ones have no such multiplier: their blocks
    // take the scalar sums).
    for d in 1..=WHOLE_MAX as u16 {
        assert_eq!(divider(d).is_some(), d <= 92 || ![93, 107, 115, 119, 123, 125, 127].contains(&d), "{d}");
    }
}

/// The whole-weight blocks (`whole::Whole`) run in scalar as the AVX-512 kernel runs them: the
/// controls pick bytes from each block's window, the signed-byte weights multiply them in pairs,
/// `2S + D` goes through the lane's multiply-high and shift, and in blocks with tied weights
/// (`weights::pil_tied`: 900p NV12's chroma at 1.25×, 2.5×'s edges) a tie with a negative
/// remainder sum takes one less; every whole block's output is PIL's byte, on random rows too,
/// the lanes follow the kernel's store rule, and a block that is not whole (here an output made
/// neither whole nor tied) names the two 2^-22 blocks of its outputs; RGBA's ten-output lanes
/// (`Whole::ten`) likewise, a block not whole naming 2^-22 blocks that hold its outputs; at 3×
/// the blocks share a few tables.
#[test]
#[allow(clippy::needless_range_loop)]
fn whole_blocks_give_pils_bytes() {
    use crate::preprocess::Interpolation as I;
    let (mut checked, mut rest, mut ties, mut tens, mut sides) = (0, 0, 0, 0, 0);
    let mut next = xorshift(0x2545_f491_4f6c_dd1du64);
    for format in [PixelFormat::Nv12, PixelFormat::Rgba, PixelFormat::Rgb, PixelFormat::Gray8] {
        let (_, comps) = components(format).unwrap();
        for (w, n) in [(1920, 640), (1600, 640), (960, 320), (1000, 333), (1000, 700)] {
            let filter = Filter::of(I::BilinearAntialias, true).unwrap();
            let div = if format == PixelFormat::Nv12 { 2 } else { 1 };
            let mut cols = [
                multi_axis(n, 0, w, 1, 0, w - 1, filter, 0.0),
                multi_axis(n, 0, w, div, 0, w / div - 1, filter, 0.0),
            ];
            if w == 1000 && n == 700 {
                // Output 37's weights moved off every whole `k / D`, as PIL's float weights can be.
                for t in &mut cols {
                    let at = 37 * t.taps;
                    let (a, b) = (t.wi[at], t.wi[at + 1]);
                    assert!(a > 1000 && b > 1000);
                    (t.wi[at], t.wi[at + 1], t.d[37]) = (a + 777, b - 777, 0);
                }
            }
            let row_len: [usize; 3] = std::array::from_fn(|p| match p < format.num_planes() {
                true => format.plane_sampling(p, 1).row_bytes(w),
                false => 0,
            });
            let plan = MultiTap::new(cols.clone(), cols.clone(), &comps, row_len, true);
            for g in &plan.groups {
                let lead = comps[g.members[0]];
                let t = &cols[usize::from(lead.chroma)];
                // Four-byte pixels have ten-output lanes too (`Whole::ten`).
                let pixels = matches!(format, PixelFormat::Rgba);
                assert_eq!(g.whole10.is_some(), pixels && g.whole.is_some(), "{format:?} {w}->{n}");
                // ... and, where every block is whole, with the members side by side (three-byte
                // pixels too): a block's word `w` is byte `30b + w` of a row of pixels
                // (`Whole::ten_interleaved`).
                let three = format == PixelFormat::Rgb;
                if let Some(wi) = &g.whole10i {
                    assert!(
                        (pixels || three) && wi.ten && wi.interleaved && wi.done == n && wi.rest.is_empty()
                    );
                    for b in 0..wi.bases.len() {
                        assert!(wi.whole[b], "{format:?} {w}->{n} block {b}");
                        for (word, m, x) in wi.words(b) {
                            assert_eq!(30 * b + word, 3 * x + m, "{format:?} {w}->{n} block {b}");
                        }
                    }
                    sides += 1;
                }
                assert!(
                    !((pixels || three) && (w, n) == (1920, 640)) || g.whole10i.is_some(),
                    "{format:?} {w}->{n}"
                );
                for wb in g.whole.iter().chain(&g.whole10).chain(&g.whole10i) {
                    let window = if wb.narrow { 64 } else { 128 };
                    assert!(wb.reach <= row_len[lead.plane]);
                    // Blocks share their tables: at 3× the first, the inner and the last blocks'.
                    assert_eq!(wb.table.len(), wb.bases.len());
                    if (w, n) == (1920, 640) {
                        assert!(wb.d.len() <= 4, "{format:?} {w}->{n}: {} tables", wb.d.len());
                    }
                    // The blocks that are not whole: the 2^-22 plan's blocks in `rest` make
                    // their outputs (the lanes of `new`: blocks 2b and 2b + 1, the same outputs).
                    let outputs = |targets: &[u32], per: usize| {
                        let mut v: Vec<(u32, u32)> = targets
                            .iter()
                            .filter(|&&l| l != taps::IDLE)
                            .flat_map(|&l| (0..per as u32).map(move |i| (l >> 24, (l & 0xff_ffff) + i)))
                            .collect();
                        v.sort();
                        v
                    };
                    let b16 = g.b16.as_ref().unwrap();
                    for b in (0..wb.bases.len()).filter(|&b| !wb.whole[b]) {
                        let made = outputs(
                            &wb.rest.iter().flat_map(|&r| b16.targets[r as usize]).collect::<Vec<_>>(),
                            4,
                        );
                        for (_, m, x) in wb.words(b) {
                            assert!(made.contains(&(m as u32, x as u32)), "{format:?} {w}->{n} block {b}");
                        }
                        if !wb.ten {
                            assert!(
                                wb.rest.contains(&(2 * b as u32)) && wb.rest.contains(&(2 * b as u32 + 1))
                            );
                            let pair: Vec<u32> =
                                [2 * b, 2 * b + 1].iter().flat_map(|&r| b16.targets[r]).collect();
                            assert_eq!(
                                outputs(&wb.targets[b], 8),
                                outputs(&pair, 4),
                                "{format:?} {w}->{n} block {b}"
                            );
                        }
                        rest += 1;
                    }
                    let mm = g.members.len();
                    for b in (0..wb.bases.len()).filter(|&b| wb.whole[b] && !wb.ten) {
                        // The lanes of `new` follow the kernel's store rule.
                        for l in 0..4 {
                            let rule = match mm {
                                1 => Some((0, 32 * b + 8 * l)),
                                2 => Some((l / 2, 16 * b + 8 * (l % 2))),
                                _ => (l < mm).then_some((l, 8 * b)),
                            };
                            let targets = wb.targets[b];
                            let got = (targets[l] != taps::IDLE)
                                .then(|| ((targets[l] >> 24) as usize, (targets[l] & 0xff_ffff) as usize));
                            assert_eq!(got, rule, "{format:?} {w}->{n} block {b} lane {l}");
                        }
                    }
                    for (round, b) in
                        (0..4).flat_map(|r| (0..wb.bases.len()).filter(|&b| wb.whole[b]).map(move |b| (r, b)))
                    {
                        let row: Vec<u8> = (0..row_len[lead.plane])
                            .map(|i| if round == 0 { (i * 97 % 253) as u8 } else { next() as u8 })
                            .collect();
                        let win = &row[wb.bases[b] as usize..][..window];
                        // The block's table (shared by the blocks that compute the same).
                        let tb = wb.table[b] as usize;
                        let words = wb.words(b);
                        assert_eq!(
                            words.len(),
                            if wb.ten { 30 } else { 8 * mm.min(4) * (4 / mm) },
                            "every word"
                        );
                        for (lane, m, x) in words {
                            let (mut s, mut e) = (0i32, 0i32);
                            for p in 0..wb.pairs {
                                let at = tb * wb.pairs + p;
                                let (c, k, nn) = (&wb.ctl[at].0, &wb.k[at].0, &wb.n[at].0);
                                let (x0, x1) =
                                    (win[c[2 * lane] as usize] as i32, win[c[2 * lane + 1] as usize] as i32);
                                s += x0 * k[2 * lane] as i32 + x1 * k[2 * lane + 1] as i32;
                                e += x0 * nn[2 * lane] as i32 + x1 * nn[2 * lane + 1] as i32;
                            }
                            // Twice the weights (`Whole::k`): the sum from `D` is `2S + D`.
                            let d = wb.d[tb].0[lane] as u32;
                            let tt = (s + d as i32) as u32;
                            // Less two where the remainders' sum is negative (the kernel's
                            // `tie_sum`): one less on a tie, the same quotient off one.
                            let q = ((tt - 2 * u32::from(e < 0)) * wb.mul[tb].0[lane] as u32)
                                >> 16
                                >> wb.shift[tb].0[lane];
                            assert!(wb.tied.contains(&(b as u32)) != wb.plain[b], "tied or plain");
                            assert!(
                                wb.tied.contains(&(b as u32)) || e == 0,
                                "remainders only in tied blocks"
                            );
                            assert!(e.abs() <= i16::MAX as i32, "the remainders' sum fits the kernel's i16");
                            ties += usize::from(tt.is_multiple_of(2 * d) && e < 0);
                            let k = g.members[m];
                            let pil = pil_byte(t, &row, plan.base[k][x] as usize, comps[k].step, x);
                            assert_eq!(q as i64, pil, "{format:?} {w}->{n} block {b} word {lane} output {x}");
                            checked += 1;
                            tens += usize::from(wb.ten);
                        }
                    }
                }
            }
        }
    }
    assert!(
        checked > 10_000 && rest > 0 && ties > 40 && tens > 5_000 && sides > 0,
        "{checked} outputs ({tens} in ten-output lanes, {sides} plans side by side), {rest} blocks not whole, \
         {ties} ties"
    );
}

/// The AVX2 whole-weight blocks (`whole8::Whole8`) run in scalar as the kernel runs them: per
/// lane its window, per tap pair and piece a `pshufb` control (one piece at most names each
/// byte), the signed-byte weights in pairs from `D`, the block's multiply-high and shift: every
/// whole block's output is PIL's byte, on gray, NV12 (the interleaved chroma pair) and YUY2's
/// packed rows at 3×, 2.5×, 1.5×, 1.25× (its chroma tied: the remainders' sums beside) and odd
/// ratios; the blocks that are not whole and those past the last name the 2^-22 blocks of their
/// outputs.
#[test]
#[allow(clippy::needless_range_loop)]
fn avx2_whole_blocks_give_pils_bytes() {
    use crate::preprocess::Interpolation as I;
    let mut next = xorshift(0x853c_49e6_748f_ea9bu64);
    let (mut checked, mut plans, mut tied) = (0, 0, 0);
    let filter = Filter::of(I::BilinearAntialias, true).unwrap();
    for format in [PixelFormat::Gray8, PixelFormat::Nv12, PixelFormat::Yuy2] {
        let (_, comps) = components(format).unwrap();
        for (w, n) in [(1920, 640), (1600, 640), (960, 640), (1000, 333), (1000, 700)] {
            let div = if format == PixelFormat::Gray8 { 1 } else { 2 };
            let cols = [
                multi_axis(n, 0, w, 1, 0, w - 1, filter, 0.0),
                multi_axis(n, 0, w, div, 0, w / div - 1, filter, 0.0),
            ];
            let row_len: [usize; 3] = std::array::from_fn(|p| match p < format.num_planes() {
                true => format.plane_sampling(p, 1).row_bytes(w),
                false => 0,
            });
            let plan = MultiTap::new(cols.clone(), cols.clone(), &comps, row_len, true);
            for g in &plan.groups {
                let lead = comps[g.members[0]];
                let t = &cols[usize::from(lead.chroma)];
                // The plan over the row, or over the row packed from the group's first byte.
                let (w8, b8, from, step, bases): (_, _, usize, usize, Vec<&[u32]>) = match &g.compact {
                    Some(c) if c.whole8.is_some() => (
                        c.whole8.as_ref(),
                        c.b8.as_ref(),
                        c.from,
                        g.members.len(),
                        c.base.iter().map(|b| &b[..]).collect(),
                    ),
                    _ => (
                        g.whole8.as_ref(),
                        g.b8.as_ref(),
                        usize::MAX,
                        lead.step,
                        g.members.iter().map(|&k| &plan.base[k][..]).collect(),
                    ),
                };
                let Some(wb) = w8 else { continue };
                plans += 1;
                // Blocks share their tables: at 3× the first, the inner and the last blocks'.
                assert_eq!(wb.table.len(), wb.bases.len());
                if (w, n) == (1920, 640) {
                    assert!(wb.d.len() <= 4, "{format:?} {w}->{n}: {} tables", wb.d.len());
                }
                let b8 = b8.expect("whole blocks come with the 2^-22 blocks");
                let mm = g.members.len();
                let own = wb.whole.len();
                assert!(wb.rest.iter().all(|&r| (r as usize) < b8.targets.len()));
                for b in (0..own).filter(|&b| !wb.whole[b]) {
                    assert!(wb.rest.contains(&(2 * b as u32)) && wb.rest.contains(&(2 * b as u32 + 1)));
                }
                assert!(
                    (2 * own..b8.targets.len()).all(|r| wb.rest.contains(&(r as u32))),
                    "blocks past the last"
                );
                for round in 0..3 {
                    let source: Vec<u8> = (0..row_len[lead.plane]).map(|_| next() as u8).collect();
                    let row: Vec<u8> = match from {
                        usize::MAX => source.clone(),
                        f => source.iter().skip(f).step_by(2).copied().collect(),
                    };
                    assert!(wb.reach <= row.len());
                    for b in (0..own).filter(|&b| wb.whole[b]) {
                        // The block's table (shared by the blocks that compute the same).
                        let tb = wb.table[b] as usize;
                        for l in 0..2 {
                            let (m, x0) = if mm == 1 { (0, 16 * b + 8 * l) } else { (l, 8 * b) };
                            let win = &row[wb.bases[b][l] as usize..][..16 * wb.pieces];
                            for i in 0..8 {
                                let lane = 8 * l + i;
                                let (mut s, mut e) = (wb.d[tb].0[lane] as i32, 0i32);
                                for p in 0..wb.pairs {
                                    let at = tb * wb.pairs + p;
                                    for h in 0..2 {
                                        let idx = 16 * l + 2 * i + h;
                                        let named: Vec<usize> = (0..wb.pieces)
                                            .filter(|&q| wb.ctl[at * wb.pieces + q].0[idx] & 0x80 == 0)
                                            .collect();
                                        assert!(named.len() <= 1, "one piece a byte");
                                        if let Some(&q) = named.first() {
                                            let v = win[16 * q + wb.ctl[at * wb.pieces + q].0[idx] as usize];
                                            s += v as i32 * wb.k[at].0[idx] as i32;
                                            e += v as i32 * wb.n[at].0[idx] as i32;
                                        }
                                    }
                                }
                                // Less two where the remainders' sum is negative (the tied
                                // blocks only): one less on a tie.
                                let t1 = s as u32 - 2 * u32::from(e < 0);
                                let q = ((t1 * wb.mul[tb].0[lane] as u32) >> 16) >> wb.shift[tb];
                                if wb.tied.contains(&(b as u32)) {
                                    tied += 1;
                                } else {
                                    assert_eq!(e, 0, "remainders only in the tied blocks");
                                }
                                let x = x0 + i;
                                let pil = pil_byte(t, &row, bases[m][x] as usize, step, x);
                                assert_eq!(
                                    q as i64, pil,
                                    "{format:?} {w}->{n} round {round} block {b} lane {l} output {x}"
                                );
                                checked += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(checked > 20_000 && plans >= 8 && tied > 1000, "{checked} outputs, {plans} plans, {tied} tied");
}

/// NEON's tap-by-tap whole blocks (`WholeTaps`), their arithmetic run in scalar as the kernel's
/// lanes do it (`tbl` bytes, `umlal` into u16 from `D`, a multiply-high and a per-lane shift, a
/// tie with a negative remainder sum one less) give PIL's byte for every output of every block
/// (every one): planes of one member and NV12's two, YUY2's rows packed to every other byte
/// (and its U and V halved into a run each, `Halved`),
/// RGBA's split into channel rows, at 3×, 2.5×, 1.5×, 1.25× (tied) and odd ratios, random rows.
/// Between a row's ends the blocks share a few tables (at 3× and 1.5× one run of blocks each,
/// and the ends'), the runs cover each block once, and no sum passes 16 bits.
#[test]
#[allow(clippy::needless_range_loop)]
fn neon_tap_blocks_give_pils_bytes() {
    use crate::preprocess::Interpolation as I;
    let mut next = xorshift(0x2545_f491_4f6c_dd1du64);
    let (mut checked, mut plans, mut tied) = (0, 0, 0);
    let filter = Filter::of(I::BilinearAntialias, true).unwrap();
    let (mut packed_plans, mut planar_plans, mut halved_plans) = (0, 0, 0);
    for format in
        [PixelFormat::Gray8, PixelFormat::Nv12, PixelFormat::I420, PixelFormat::Yuy2, PixelFormat::Rgba]
    {
        let (_, comps) = components(format).unwrap();
        for (w, n) in [(1920, 640), (1600, 640), (960, 640), (800, 640), (1000, 333), (1000, 700)] {
            let div = if matches!(format, PixelFormat::Gray8 | PixelFormat::Rgba) { 1 } else { 2 };
            let cols = [
                multi_axis(n, 0, w, 1, 0, w - 1, filter, 0.0),
                multi_axis(n, 0, w, div, 0, w / div - 1, filter, 0.0),
            ];
            let row_len: [usize; 3] = std::array::from_fn(|p| match p < format.num_planes() {
                true => format.plane_sampling(p, 1).row_bytes(w),
                false => 0,
            });
            let plan = MultiTap::new(cols.clone(), cols.clone(), &comps, row_len, true);
            for g in &plan.groups {
                let lead = comps[g.members[0]];
                let t = &cols[usize::from(lead.chroma)];
                // The plan over the row split into channel rows (every blended member's through
                // the one plan), packed to every other byte from `from`, or as it is (the
                // driver's order, `driver::neon_whole`).
                let (wt, from, planar) = match (&g.planar, &g.compact, &g.whole_taps) {
                    (Some(p), ..) if p.whole_taps.is_some() => (p.whole_taps.as_ref().unwrap(), None, true),
                    (_, Some(c), _) if c.whole_taps.is_some() => {
                        (c.whole_taps.as_ref().unwrap(), Some(c.from), false)
                    }
                    (.., Some(wt)) => (wt, None, false),
                    _ => continue,
                };
                // And a packed pair's plan over its row halved (`Halved`: U's run, then V's).
                let halved = g.compact.as_ref().and_then(|c| c.halved.as_ref()?.whole_taps.as_ref());
                for (wt, halve) in std::iter::once((wt, false)).chain(halved.map(|h| (h, true))) {
                    halved_plans += halve as usize;
                    plans += 1;
                    packed_plans += from.is_some() as usize;
                    planar_plans += planar as usize;
                    assert_eq!(wt.done, t.d.len() / TBL_BLOCK * TBL_BLOCK);
                    // The runs cover every block once, each with its blocks' table.
                    let mut covered = vec![false; wt.blocks.len()];
                    for &[from, to, table] in &wt.runs {
                        for b in from as usize..to as usize {
                            assert!(!covered[b] && wt.blocks[b].table == table);
                            covered[b] = true;
                        }
                    }
                    assert!(covered.iter().all(|&c| c));
                    if w == 3 * n || 2 * w == 3 * n {
                        assert!(wt.tables.len() <= 8, "{format:?} {w}->{n}: {} tables", wt.tables.len());
                        let members = g.members.len();
                        assert!(wt.runs.len() <= 3 * members, "{format:?} {w}->{n}: {} runs", wt.runs.len());
                    }
                    for round in 0..3 {
                        let row: Vec<u8> = (0..row_len[lead.plane])
                            .map(|i| if round == 2 { 255 * (i % 2) as u8 } else { next() as u8 })
                            .collect();
                        // Per block and member, the row its window is in.
                        let channel = |k: usize| -> Vec<u8> {
                            row.iter().skip(comps[k].offset).step_by(4).copied().collect()
                        };
                        let mut packed: Vec<u8> = row
                            .iter()
                            .skip(from.unwrap_or(0))
                            .step_by(1 + from.is_some() as usize)
                            .copied()
                            .collect();
                        if halve {
                            packed = packed
                                .iter()
                                .step_by(2)
                                .chain(packed.iter().skip(1).step_by(2))
                                .copied()
                                .collect();
                        }
                        let made: Vec<(usize, usize)> = wt
                            .blocks
                            .iter()
                            .enumerate()
                            .flat_map(|(i, b)| {
                                let members: Vec<usize> = match planar {
                                    true => g.members.iter().copied().filter(|&k| plan.blended[k]).collect(),
                                    false => vec![g.members[b.member as usize]],
                                };
                                members.into_iter().map(move |k| (i, k))
                            })
                            .collect();
                        for (i, k) in made {
                            let b = &wt.blocks[i];
                            let source = if planar { channel(k) } else { packed.clone() };
                            assert!(wt.reach <= source.len());
                            let tb = &wt.tables[b.table as usize];
                            let win = &source[b.base as usize..][..16 * wt.pieces];
                            for o in 0..TBL_BLOCK {
                                let byte = |j: usize| win.get(tb.idx[j][o] as usize).map_or(0, |&v| v as u32);
                                let mut s = tb.d[o] as u32;
                                for j in 0..wt.taps {
                                    s += tb.k[j][o] as u32 * byte(j);
                                }
                                assert!(s < 1 << 16, "the u16 lanes never wrap");
                                // Less two where the remainders' sum is negative: one less on
                                // a tie.
                                let mut t1 = s;
                                if !tb.n.is_empty() {
                                    let e: i32 =
                                        (0..wt.taps).map(|j| tb.n[j][o] as i32 * byte(j) as i32).sum();
                                    assert!(e.abs() <= i16::MAX as i32);
                                    tied += usize::from(s.is_multiple_of(2 * tb.d[o] as u32));
                                    t1 -= 2 * u32::from(e < 0);
                                }
                                let q = ((t1 * tb.mul[o] as u32) >> 16) >> -tb.shift[o];
                                let x = b.x as usize + o;
                                let pil = pil_byte(t, &row, plan.base[k][x] as usize, lead.step, x);
                                assert_eq!(
                                    q as i64, pil,
                                    "{format:?} {w}->{n} round {round} block {b:?} output {x}"
                                );
                                checked += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(
        checked > 50_000
            && plans >= 10
            && tied > 100
            && packed_plans >= 6
            && planar_plans >= 3
            && halved_plans >= 4,
        "{checked} outputs, {plans} plans ({packed_plans} packed, {planar_plans} planar, {halved_plans} \
         halved), {tied} ties"
    );
}

/// Rows whole only with ties (`weights::pil_tied`) give PIL's byte through a level's vertical pass
/// over the byte ring (`f32`: into floats, `u8`: into bytes; both `vertical_bytes(rows, wi, whole,
/// out)`): the rows of the 1.25× triangle (900p NV12's chroma → 640: 7, 5 over 12 every other
/// row), of 2.5×'s edges and of an upscale (80 → 170), PIL's 2^-22 weights from the plan, random
/// rows and the extremes; ties with a negative remainder sum are met (each one less than `⌊(2S +
/// D) / 2D⌋`), and the outputs past the level's `step` are left to PIL's sums (not written).
#[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(dead_code))]
pub(in crate::convert) fn check_tied_rows(
    f32: impl Fn(&[*const u8], &[i32], WholeRow, &mut [f32]) -> usize,
    u8: impl Fn(&[*const u8], &[i32], WholeRow, &mut [u8]) -> usize,
    step: usize,
) {
    let f = Filter::of(Interpolation::BilinearAntialias, true).unwrap();
    let mut next = xorshift(0x9e37_79b9_7f4a_7c15u64);
    let (mut rows_tied, mut checked, mut down) = (0, 0, 0);
    for (n, len) in [(360, 450), (360, 900), (100, 333), (170, 80)] {
        let t = multi_axis(n, 0, len, 1, 0, len - 1, f, 0.0);
        let comps = [Comp { plane: 0, offset: 0, step: 1, chroma: false }];
        let m = MultiTap::new([t.clone(), t.clone()], [t.clone(), t.clone()], &comps, [len, 0, 0], true);
        for y in 0..n {
            let Some(w) = m.whole_row(0, y).filter(|w| !w.n.is_empty()) else { continue };
            rows_tied += 1;
            let wi = &t.wi[y * t.taps..][..t.taps];
            for (width, round) in [(640, 0), (640, 1), (640, 2), (700, 3)] {
                let rows: Vec<Vec<u8>> = (0..t.taps)
                    .map(|j| {
                        (0..width)
                            .map(|x| match round {
                                0 => 255 * ((x + j) % 2) as u8,
                                1 => (x % 256) as u8,
                                _ => next() as u8,
                            })
                            .collect()
                    })
                    .collect();
                let at: Vec<*const u8> = rows.iter().map(|r| r.as_ptr()).collect();
                let mut out = vec![-1f32; width];
                let mut bytes = vec![0xa5u8; width];
                let (done, done8) = (f32(&at, wi, w, &mut out), u8(&at, wi, w, &mut bytes));
                assert_eq!((done, done8), (width / step * step, width / step * step), "row {y}");
                for x in 0..width {
                    if x >= done {
                        assert_eq!((out[x], bytes[x]), (-1.0, 0xa5), "nothing past the steps");
                        continue;
                    }
                    let b = |j: usize| rows[j][x] as i64;
                    let acc: i64 = (0..t.taps).map(|j| wi[j] as i64 * b(j)).sum();
                    let pil = ((acc + (1 << 21)) >> 22).clamp(0, 255);
                    assert_eq!((out[x], bytes[x]), (pil as f32, pil as u8), "{len}->{n} row {y} output {x}");
                    let s: i64 = w.k.iter().enumerate().map(|(j, &k)| k as i64 * b(j)).sum();
                    let e: i64 = w.n.iter().enumerate().map(|(j, &r)| r as i64 * b(j)).sum();
                    let d = w.d as i64;
                    down += usize::from((2 * s + d) % (2 * d) == 0 && e < 0);
                    checked += 1;
                }
            }
        }
    }
    assert!(rows_tied > 150 && checked > 100_000 && down > 1000, "{rows_tied} rows, {checked}, {down} ties");
}

/// `check_tied_rows` over a level's `vertical_bytes` (`$vertical`, into floats and into bytes),
/// whose whole steps are `$step` outputs.
#[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(unused_macros))]
macro_rules! check_tied_rows_of {
    ($vertical:path, $step:expr) => {
        $crate::convert::plan::check_tied_rows(
            |at, wi, w, out| unsafe { $vertical(at, wi, Some(w), out, $crate::convert::hint::Trickle::NONE) },
            |at, wi, w, out| unsafe { $vertical(at, wi, Some(w), out, $crate::convert::hint::Trickle::NONE) },
            $step,
        )
    };
}
#[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(unused_imports))]
pub(in crate::convert) use check_tied_rows_of;
