//! Host tests of the plans: every shuffle and permute control picks the taps it was planned for.
use super::*;

/// What the AVX2 kernel does with a plan, in scalar: per block, each output's dword from its
/// window through the controls (`pshufb` semantics: index bit 7 gives zero, lanes of 16).
fn apply(plan: &Shuffle, row: &[u8], members: usize, two: bool) -> Vec<Vec<[u8; 4]>> {
    let parts = plan.windows / 2;
    let mut out = vec![Vec::new(); members];
    for (b, base) in plan.bases.iter().enumerate() {
        for (m, out) in out.iter_mut().enumerate() {
            let first = (b * members + m) * 2 * parts + usize::from(two) * parts;
            for j in 0..8 {
                let mut dword = [0u8; 4];
                for p in 0..parts {
                    let ctl = &plan.controls[first + p].0;
                    // Lane j / 4 of vector p is window p + parts * (j / 4).
                    let window = &row[base[p + parts * (j / 4)] as usize..][..16];
                    for (k, byte) in dword.iter_mut().enumerate() {
                        let c = ctl[4 * j + k];
                        *byte |= if c & 0x80 != 0 { 0 } else { window[(c & 15) as usize] };
                    }
                }
                out.push(dword);
            }
        }
    }
    out
}

/// Over a row of `reach` distinct-ish bytes, a plan's picks (`picks(row, two)`, per member
/// per output) give every output of its whole blocks (`block` outputs each) tap 0 alone in
/// byte 0, or both taps in bytes 0 and 2, the other bytes zero.
pub(super) fn assert_picks(
    i0: &[u32],
    i1: &[u32],
    members: &[(usize, usize)],
    block: usize,
    reach: usize,
    picks: impl Fn(&[u8], bool) -> Vec<Vec<[u8; 4]>>,
) {
    let row: Vec<u8> = (0..reach).map(|i| (i * 7 + 3) as u8).collect();
    let (one, two) = (picks(&row, false), picks(&row, true));
    for (m, &(_, shift)) in members.iter().enumerate() {
        for x in 0..i0.len() / block * block {
            let (a, b) = (row[i0[x] as usize + shift], row[i1[x] as usize + shift]);
            assert_eq!(one[m][x], [a, 0, 0, 0], "member {m} output {x}: tap 0 alone");
            assert_eq!(two[m][x], [a, 0, b, 0], "member {m} output {x}: both taps as words");
        }
    }
}

fn check(i0: &[u32], i1: &[u32], members: &[(usize, usize)], windows: usize) {
    let plan = shuffle_plan(i0, i1, members).expect("a plan");
    assert_eq!(plan.windows, windows);
    assert_picks(i0, i1, members, 8, plan.reach, |row, two| apply(&plan, row, members.len(), two));
    assert_words(&plan, i0, i1, members);
    assert_pairs(&plan, i0, i1, members);
}

/// With one vector of windows, `Shuffle::pairs` puts each output's two tap bytes side by side
/// (`avx2::rows_first_blocks`: `pshufb` of the windows, member `2p` in bytes 0..8 of a lane and
/// `2p + 1` in 8..16, output `o` of the lane at `2o`); a pair with one member has zeros.
fn assert_pairs(plan: &Shuffle, i0: &[u32], i1: &[u32], members: &[(usize, usize)]) {
    if plan.windows != 2 {
        assert!(plan.pairs.is_empty(), "pairs only for one vector of windows");
        return;
    }
    let pairs = members.len().div_ceil(2);
    assert_eq!(plan.pairs.len(), plan.bases.len() * pairs);
    let row: Vec<u8> = (0..plan.reach).map(|i| (i * 7 + 3) as u8).collect();
    for (b, base) in plan.bases.iter().enumerate() {
        for p in 0..pairs {
            let ctl = &plan.pairs[b * pairs + p].0;
            for lane in 0..2 {
                let window = &row[base[lane] as usize..][..16];
                let byte = |c: u8| if c & 0x80 != 0 { 0 } else { window[(c & 15) as usize] };
                for half in 0..2 {
                    for o in 0..4 {
                        let at = 16 * lane + 8 * half + 2 * o;
                        let got = [byte(ctl[at]), byte(ctl[at + 1])];
                        let want = match members.get(2 * p + half) {
                            Some(&(_, shift)) => {
                                let x = 8 * b + 4 * lane + o;
                                [row[i0[x] as usize + shift], row[i1[x] as usize + shift]]
                            }
                            None => [0, 0],
                        };
                        assert_eq!(got, want, "block {b} pair {p} lane {lane} member {half} output {o}");
                    }
                }
            }
        }
    }
}

/// `Shuffle::across` holds the weights `(256 - w) / 4`, `w / 4` of each lane's outputs where the
/// pairs put their taps, twice a lane; a weight that is not whole quarters makes none.
#[test]
fn quarter_weights_follow_the_pairs() {
    let w: Vec<f32> = (0..16).map(|i| (i * 4 % 256) as f32 * WEIGHT_UNIT).collect();
    let across = quarter_weights(&weight_pairs(&w)).expect("whole quarters");
    assert_eq!(across.len(), 2);
    for (b, block) in across.iter().enumerate() {
        for lane in 0..2 {
            for half in 0..2 {
                for o in 0..4 {
                    let at = 16 * lane + 8 * half + 2 * o;
                    let q = (w[8 * b + 4 * lane + o] * 256.0) as u8 / 4;
                    assert_eq!(
                        [block.0[at], block.0[at + 1]],
                        [64 - q, q],
                        "block {b} lane {lane} output {o}"
                    );
                }
            }
        }
    }
    let odd: Vec<f32> = (0..16).map(|i| if i == 9 { 6.0 * WEIGHT_UNIT } else { 0.5 }).collect();
    assert!(quarter_weights(&weight_pairs(&odd)).is_none());
}

/// With one vector of windows, `Shuffle::words` looks up each output's two taps as u16 in a
/// window's bytes widened (`neon::rows_first_blocks`: byte `i` of window `h` is u16 `i` of its
/// 32-byte table): a table of distinct u16 gives every output its taps' values.
fn assert_words(plan: &Shuffle, i0: &[u32], i1: &[u32], members: &[(usize, usize)]) {
    if plan.windows != 2 {
        assert!(plan.words.is_empty(), "words only for one vector of windows");
        return;
    }
    assert_eq!(plan.words.len(), plan.bases.len() * members.len());
    let table: Vec<u8> = (0..16u16).flat_map(|i| (1000 + 37 * i).to_le_bytes()).collect();
    for (b, base) in plan.bases.iter().enumerate() {
        for (m, &(_, shift)) in members.iter().enumerate() {
            let idx = &plan.words[b * members.len() + m].0;
            for j in 0..8 {
                let x = 8 * b + j;
                let h = j / 4;
                let bytes: Vec<u8> = (0..4).map(|k| table[idx[16 * h + 4 * (j % 4) + k] as usize]).collect();
                let got =
                    [u16::from_le_bytes([bytes[0], bytes[1]]), u16::from_le_bytes([bytes[2], bytes[3]])];
                let at = |taps: &[u32]| (taps[x] + shift as u32 - base[h]) as u16;
                assert_eq!(
                    got,
                    [1000 + 37 * at(i0), 1000 + 37 * at(i1)],
                    "member {m} output {x}: taps as u16"
                );
            }
        }
    }
}

/// Every output's multi-tap weights sum to exactly one (2^-14ths) or to PIL's rounding of
/// one, lie on the grid, and OpenCV's cubic at a half-sample offset is Keys' a = -0.75
/// (-0.09375, 0.59375, 0.59375, -0.09375).
#[test]
fn multi_tap_weights() {
    for interp in [
        Interpolation::Area,
        Interpolation::BilinearAntialias,
        Interpolation::Bicubic,
        Interpolation::BicubicOpencv,
    ] {
        for down in [false, true] {
            let f = Filter::of(interp, down).unwrap();
            for (n, start, len, div, lo, hi) in
                [(7, 3, 45, 1, 3, 47), (40, 0, 13, 1, 0, 12), (9, 5, 30, 2, 2, 17)]
            {
                let t = multi_axis(n, start, len, div, lo, hi, f, 0.0);
                assert!(t.taps <= f.max_taps(n, len, div, hi - lo + 1));
                for i in 0..n {
                    assert!(t.first[i] as usize >= lo && t.first[i] as usize + t.taps <= hi + 1);
                    let sum: f64 = match f.round_between {
                        true => {
                            t.wi[i * t.taps..][..t.taps].iter().map(|&w| w as f64).sum::<f64>() / PIL_STEPS
                        }
                        // An exact box's whole weights sum to its denominator.
                        false => {
                            let unit = t.exact.map_or(1.0, |k| TAP_STEPS / k as f64);
                            t.w[i * t.taps..][..t.taps].iter().map(|&w| w as f64).sum::<f64>() * unit
                        }
                    };
                    let tol = if f.round_between { 4.0 / PIL_STEPS } else { 0.0 };
                    assert!((sum - 1.0).abs() <= tol, "{interp:?} output {i}: weights sum to {sum}");
                }
            }
        }
    }
    let cubic = multi_axis(10, 0, 5, 1, 0, 4, Filter::of(Interpolation::BicubicOpencv, false).unwrap(), 0.0);
    // Output 5's centre is 2.75 samples in: taps 1..=4 at t = 0.25; output 4's at 2.25.
    let w = &cubic.w[5 * cubic.taps..][..cubic.taps];
    let keys = |x: f64| {
        let (a, x) = (-0.75, x.abs());
        if x < 1.0 {
            ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
        } else {
            (((x - 5.0) * x + 8.0) * x - 4.0) * a
        }
    };
    let want = [keys(1.25), keys(0.25), keys(0.75), keys(1.75)];
    let at = cubic.first[5] as usize;
    assert_eq!(at, 1);
    for (k, want) in want.iter().enumerate() {
        assert!((w[k] as f64 - want).abs() <= 1.0 / TAP_STEPS, "tap {k}: {} vs {want}", w[k]);
    }
}

#[test]
fn shuffle_plans_pick_every_tap() {
    // NV12 1080p → 640: luma every third byte; chroma (U, V) pairs 1.5 samples apart.
    let luma: Vec<u32> = (0..40).map(|i| 3 * i + 1).collect();
    check(&luma, &luma, &[(0, 0)], 2);
    let c0: Vec<u32> = (0..40).map(|i| 2 * ((3 * i) / 2)).collect();
    let c1: Vec<u32> = c0.iter().map(|&t| t + 2).collect();
    check(&c0, &c1, &[(1, 0), (2, 1)], 2);
    // YUY2 at the same scale: luma every sixth byte needs windows of two outputs.
    let y: Vec<u32> = (0..40).map(|i| 6 * i + 2).collect();
    check(&y, &y, &[(0, 0)], 4);
    // RGBA at 3×: whole pixels every 12 bytes with their right neighbours fit windows of one
    // output; without the neighbours (taps on one side), of two.
    let rgba: Vec<u32> = (0..40).map(|i| 12 * i + 4).collect();
    let right: Vec<u32> = rgba.iter().map(|&t| t + 4).collect();
    let pixel = [(0, 0), (1, 1), (2, 2), (3, 3)];
    check(&rgba, &right, &pixel, 8);
    check(&rgba, &rgba, &pixel, 4);
    // RGBA at 2.5× (1600 → 640): pixels 2 or 3 apart, each with its right neighbour.
    let at: Vec<u32> = (0..40u32).map(|i| 4 * (10 * i).div_ceil(4)).collect();
    let next: Vec<u32> = at.iter().map(|&t| t + 4).collect();
    check(&at, &next, &pixel, 8);
    // A tap pair 16 bytes apart fits no window: gathers stay.
    let far: Vec<u32> = at.iter().map(|&t| t + 16).collect();
    assert!(shuffle_plan(&at, &far, &pixel).is_none());
}

/// A multi-tap group's blocks (`taps::Blocks`), run in scalar as the kernels run them: the
/// controls pick bytes from each block's window (`vpermt2b` with its zero register or mask; `tbl`
/// over up to four registers), the weight pairs multiply and add in i32, and each lane lands
/// where the kernels' store rule puts it. Every output the blocks cover equals the scalar loops'
/// sum, the lanes follow that rule, and no window passes the row.
/// A box downscale by a ratio of small whole numbers is exact (`Taps::exact`): every weight is
/// the footprint's cover of its sample times `K / step`, a whole number (the 1080p → 640 luma
/// boxes of three ones; 4:2:0 chroma at 1.5×, centred and cosited; 900p's 5/2), and a ratio past
/// `EXACT_MAX` (1917 → 640) or a filter other than the box keeps the normalized 2^-14ths.
#[test]
fn exact_boxes() {
    let area = Filter::of(Interpolation::Area, true).unwrap();
    // (outputs, start, length, divisor, grid, siting shift, K)
    let cases = [
        (640, 0, 1920, 1, 1919, 0.0, Some(3)),
        (640, 0, 1920, 2, 959, 0.0, Some(3)),
        (640, 0, 1920, 2, 959, 0.25, Some(6)),
        (360, 0, 900, 1, 899, 0.0, Some(5)),
        (333, 7, 999, 1, 1006, 0.0, Some(3)),
        (640, 0, 1917, 1, 1916, 0.0, None),
    ];
    for (n, start, len, div, hi, shift, k) in cases {
        let t = multi_axis(n, start, len, div, 0, hi, area, shift);
        assert_eq!(t.exact, k, "{len} -> {n} / {div} shifted {shift}");
        let Some(k) = k else { continue };
        let step = len as f64 / (n * div) as f64;
        for i in 0..n {
            let left = start as f64 / div as f64 + shift + i as f64 * step;
            let right = left + step;
            // (A footprint past the grid's end piles its cover on the edge sample.)
            if right > (hi + 1) as f64 {
                continue;
            }
            for j in 0..t.taps {
                let s = (t.first[i] as usize + j) as f64;
                let cover = (right.min(s + 1.0) - left.max(s)).max(0.0);
                let whole = t.w[i * t.taps + j] as f64 * TAP_STEPS;
                assert_eq!(whole, cover * k as f64 / step, "output {i} tap {j}");
                assert_eq!(t.k[i * t.taps + j] as f64, whole);
            }
        }
    }
    let cubic = Filter::of(Interpolation::BicubicOpencv, true).unwrap();
    assert_eq!(multi_axis(640, 0, 1920, 1, 0, 1919, cubic, 0.0).exact, None);
}

#[test]
// Lanes, words and blocks index parallel tables.
#[allow(clippy::needless_range_loop)]
fn tap_blocks_give_the_scalar_sums() {
    use crate::preprocess::Interpolation as I;
    let mut checked = [0usize; 4];
    let (mut whole_checked, mut checked_words) = (0, 0);
    let formats =
        [PixelFormat::Nv12, PixelFormat::Rgba, PixelFormat::Rgb, PixelFormat::Yuy2, PixelFormat::Gray8];
    for format in formats {
        let (_, comps) = components(format).unwrap();
        for (w, n) in [(960, 320), (1000, 333), (640, 400), (1920, 290)] {
            for interp in [I::Area, I::BilinearAntialias, I::Bicubic, I::BicubicOpencv] {
                let filter = Filter::of(interp, true).unwrap();
                let div = if format == PixelFormat::Gray8
                    || format == PixelFormat::Rgb
                    || format == PixelFormat::Rgba
                {
                    1
                } else {
                    2
                };
                let cols = [
                    multi_axis(n, 0, w, 1, 0, w - 1, filter, 0.0),
                    multi_axis(n, 0, w, div, 0, w / div - 1, filter, 0.0),
                ];
                let row_len: [usize; 3] = std::array::from_fn(|p| match p < format.num_planes() {
                    true => format.plane_sampling(p, 1).row_bytes(w),
                    false => 0,
                });
                let plan = MultiTap::new(cols.clone(), cols.clone(), &comps, row_len, filter.round_between);
                let pil = filter.round_between;
                for g in &plan.groups {
                    let lead = comps[g.members[0]];
                    let row: Vec<u8> = (0..row_len[lead.plane]).map(|i| (i * 37 % 251) as u8).collect();
                    let t = &cols[usize::from(lead.chroma)];
                    let want = |m: usize, x: usize| -> i64 {
                        let k = g.members[m];
                        (0..t.taps)
                            .map(|j| {
                                let b = row[plan.base[k][x] as usize + comps[k].step * j] as i64;
                                match pil {
                                    true => t.wi[x * t.taps + j] as i64 * b,
                                    false => (t.w[x * t.taps + j] as f64 * TAP_STEPS) as i64 * b,
                                }
                            })
                            .sum()
                    };
                    for (lanes, blocks) in [(4, &g.b16), (2, &g.b8)] {
                        let Some(bl) = blocks else { continue };
                        let mm = g.members.len();
                        let words = |v: u32| [v as u16 as i16 as i64, (v >> 16) as u16 as i16 as i64];
                        for (b, targets) in bl.targets.iter().enumerate() {
                            for l in 0..lanes {
                                let rule = match (lanes, mm) {
                                    (4, 1) => Some((0, 16 * b + 4 * l)),
                                    (4, 2) => Some((l / 2, 8 * b + 4 * (l % 2))),
                                    (4, _) => (l < mm).then_some((l, 4 * b)),
                                    (_, 1) => Some((0, 8 * b + 4 * l)),
                                    (_, 2) => Some((l, 4 * b)),
                                    _ => (2 * (b % 2) + l < mm).then_some((2 * (b % 2) + l, 4 * (b / 2))),
                                };
                                let got = (targets[l] != taps::IDLE).then(|| {
                                    ((targets[l] >> 24) as usize, (targets[l] & 0xff_ffff) as usize)
                                });
                                assert_eq!(
                                    got, rule,
                                    "{format:?} {interp:?} lanes {lanes} block {b} lane {l}"
                                );
                                let Some((m, x0)) = got else { continue };
                                for i in 0..4 {
                                    let dword = 4 * l + i;
                                    let mut sum = [0i64; 2];
                                    for p in 0..bl.pairs {
                                        let at = b * bl.pairs + p;
                                        let pick = |k: usize| -> i64 {
                                            match lanes {
                                                4 => {
                                                    let c = bl.c64[at].0[4 * dword + k] as usize;
                                                    let window = &row[bl.bases[b] as usize..]
                                                        [..if bl.narrow { 64 } else { 128 }];
                                                    window.get(c).copied().unwrap_or(0) as i64
                                                }
                                                _ => {
                                                    let c = bl.tbl[at].0[16 * l + 4 * i + k] as usize;
                                                    let start = match bl.slide {
                                                        true => bl.lane_bases[at][l] as usize,
                                                        false => bl.lane_bases[b][l] as usize,
                                                    };
                                                    let window = &row[start..][..16 * bl.pieces];
                                                    window.get(c).copied().unwrap_or(0) as i64
                                                }
                                            }
                                        };
                                        let (a, z) = (pick(0), pick(2));
                                        let wi = at * 4 * lanes + 4 * l + i;
                                        let [h0, h1] = words(bl.hi[wi]);
                                        sum[0] += a * h0 + z * h1;
                                        if pil {
                                            let [l0, l1] = words(bl.lo[wi]);
                                            sum[1] += a * l0 + z * l1;
                                        }
                                    }
                                    let got = if pil { (sum[0] << taps::PIL_SPLIT) + sum[1] } else { sum[0] };
                                    assert_eq!(
                                        got,
                                        want(m, x0 + i),
                                        "{format:?} {interp:?} {w}->{n} lanes {lanes} block {b}"
                                    );
                                    checked[lanes / 4] += 1;
                                }
                            }
                        }
                        assert!(bl.reach <= row_len[lead.plane]);
                        assert!(bl.done <= n);
                    }
                    // The pixel blocks over an exact box's u16 sums: a window is two pixels'
                    // sums, one tap pair.
                    if let Some(pw) = &g.pw8 {
                        let len = row_len[lead.plane];
                        assert!(pw.words && pw.reach <= 2 * len && pw.done <= n);
                        let sums: Vec<u16> = (0..len).map(|i| (i * 7919 % 32749) as u16).collect();
                        let bytes: Vec<u8> = sums.iter().flat_map(|v| v.to_le_bytes()).collect();
                        let words = |v: u32| [v as u16 as i16 as i64, (v >> 16) as u16 as i16 as i64];
                        let mut copy = vec![0u8; TAIL_COPY];
                        copy[..2 * len - pw.tail].copy_from_slice(&bytes[pw.tail..]);
                        for x in 0..pw.done {
                            let (b, i, high) = (x / 8, x % 4, x % 8 >= 4);
                            let start = pw.bases[x] as usize;
                            let window: &[u8] = match b < pw.edge {
                                true => &bytes[start..start + 16 * pw.windows],
                                false => &copy[start - pw.tail..][..16 * pw.windows],
                            };
                            let sample = |at: usize| u16::from_le_bytes([window[at], window[at + 1]]) as i64;
                            for m in 0..g.members.len() {
                                let k = g.members[m];
                                let mut got = 0i64;
                                for p in 0..pw.pairs {
                                    let (a, z) = (sample(16 * p + 2 * m), sample(16 * p + 8 + 2 * m));
                                    let [h0, h1] = words(pw.hi[pw.at(b, i, p)].0[4 * usize::from(high)]);
                                    got += a * h0 + z * h1;
                                }
                                let want: i64 = (0..t.taps)
                                    .map(|j| {
                                        let at = plan.base[k][x] as usize + 4 * j;
                                        let w = (t.w[x * t.taps + j] as f64 * TAP_STEPS) as i64;
                                        if w == 0 {
                                            0
                                        } else {
                                            w * sums[at] as i64
                                        }
                                    })
                                    .sum();
                                assert_eq!(got, want, "{format:?} {interp:?} {w}->{n} sums, output {x}");
                                checked_words += 1;
                            }
                        }
                    }
                    // The pixel blocks: each pixel's windows from its base (past the row's
                    // end: the copy of its last bytes, zeros after), the two fixed controls.
                    if let Some(px) = &g.px8 {
                        let len = row_len[lead.plane];
                        assert!(px.reach <= len && px.done <= n && px.tail <= len);
                        let mut copy = vec![0u8; TAIL_COPY];
                        copy[..len - px.tail].copy_from_slice(&row[px.tail..len]);
                        let words = |v: u32| [v as u16 as i16 as i64, (v >> 16) as u16 as i16 as i64];
                        for x in 0..px.done {
                            let (b, i, high) = (x / 8, x % 4, x % 8 >= 4);
                            let start = px.bases[x] as usize;
                            let window: &[u8] = match b < px.edge {
                                true => &row[start..start + 16 * px.windows],
                                false => &copy[start - px.tail..][..16 * px.windows],
                            };
                            for m in 0..g.members.len() {
                                let mut sum = [0i64; 2];
                                for p in 0..px.pairs {
                                    let (a, z) = (window[8 * p + m] as i64, window[8 * p + 4 + m] as i64);
                                    let lane = usize::from(high) * 4;
                                    let [h0, h1] = words(px.hi[px.at(b, i, p)].0[lane]);
                                    sum[0] += a * h0 + z * h1;
                                    if pil {
                                        let [l0, l1] = words(px.lo[px.at(b, i, p)].0[lane]);
                                        sum[1] += a * l0 + z * l1;
                                    }
                                }
                                let got = if pil { (sum[0] << taps::PIL_SPLIT) + sum[1] } else { sum[0] };
                                assert_eq!(
                                    got,
                                    want(m, x),
                                    "{format:?} {interp:?} {w}->{n} pixels, output {x}"
                                );
                                checked[2 + usize::from(b >= px.edge)] += 1;
                                // A whole block: Σ k · b over the windows, then ⌊(2S + D) · m /
                                // 2^(16 + s)⌋ is PIL's byte of the sum above.
                                if px.whole.get(b) == Some(&true) {
                                    let (hl, lane) = (usize::from(high), 4 * usize::from(high) + m);
                                    let s: i64 = (0..px.windows)
                                        .flat_map(|q| (0..4).map(move |j| (q, j)))
                                        .map(|(q, j)| {
                                            let k = px.wk[px.window(b, i, q)].0[16 * hl + 4 * m + j];
                                            window[16 * q + 4 * j + m] as i64 * k as i64
                                        })
                                        .sum();
                                    let at = 4 * b + i;
                                    let t = (2 * s + px.wd[at].0[lane] as i64) as u64;
                                    let byte = (t * px.wm[at].0[lane] as u64) >> px.ws[at].0[lane];
                                    let pil_byte = ((want(m, x) + (1 << 21)) >> 22).clamp(0, 255);
                                    assert_eq!(
                                        byte as i64, pil_byte,
                                        "{format:?} {interp:?} {w}->{n} whole {x}"
                                    );
                                    whole_checked += 1;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    // Every block kind ran (a plan that fits nowhere checks nothing).
    let [four, two, pixels, copied] = checked;
    assert!(four > 50_000 && two > 50_000 && pixels > 10_000 && copied > 100, "{checked:?}");
    assert!(whole_checked > 1000 && checked_words > 1000, "{whole_checked} {checked_words}");
}

/// Packed groups (`taps::Compact`: YUY2's and UYVY's luma, and their U and V) read, in the row
/// packed to every other byte from `from`, the samples their taps read in the row as it is; and
/// their blocks are planned over the packed row (a 3× downscale's 16 outputs fit there).
#[test]
fn packed_groups_read_the_same_samples() {
    use crate::preprocess::Interpolation as I;
    let (mut checked, mut checked_w8) = (0, 0);
    for format in [PixelFormat::Yuy2, PixelFormat::Uyvy] {
        let (_, comps) = components(format).unwrap();
        for (w, n) in [(1920, 640), (1600, 640), (1000, 400)] {
            for interp in [I::Area, I::BilinearAntialias] {
                let filter = Filter::of(interp, true).unwrap();
                let cols = [
                    multi_axis(n, 0, w, 1, 0, w - 1, filter, 0.0),
                    multi_axis(n, 0, w, 2, 0, w / 2 - 1, filter, 0.0),
                ];
                let row_len = [2 * w, 0, 0];
                let plan = MultiTap::new(cols.clone(), cols.clone(), &comps, row_len, filter.round_between);
                let row: Vec<u8> = (0..row_len[0]).map(|i| (i * 131 % 251) as u8).collect();
                for g in &plan.groups {
                    // (Every case here has AVX2's packed blocks, whole weights or not.)
                    let c = g.compact.as_ref().unwrap_or_else(|| panic!("{format:?} {w}->{n} {interp:?}"));
                    let b8 = c.b8.as_ref().unwrap_or_else(|| panic!("{format:?} {w}->{n} {interp:?}: b8"));
                    assert!(b8.reach <= c.len && b8.done == n, "{format:?} {w}->{n} {interp:?}");
                    if interp == I::Area {
                        assert!(c.whole.is_none(), "{format:?} {w}->{n}: area has no PIL weights");
                    }
                    // An exact box's word blocks over the packed sums: two pieces a lane where
                    // the row as it is takes three or four.
                    if let Some(w8) = &g.w8 {
                        let c8 = c.w8.as_ref().unwrap_or_else(|| panic!("{format:?} {w}->{n}: packed w8"));
                        assert!(c8.words && c8.reach <= c.len && c8.done == w8.done, "{format:?} {w}->{n}");
                        assert!(
                            c8.pieces < w8.pieces && c8.pieces <= 2,
                            "{format:?} {w}->{n}: {}",
                            c8.pieces
                        );
                        checked_w8 += 1;
                    }
                    let packed: Vec<u8> =
                        (0..c.len).map(|j| row.get(c.from + 2 * j).copied().unwrap_or(0)).collect();
                    let t = &cols[usize::from(comps[g.members[0]].chroma)];
                    // PIL's U and V halved (`Halved`): a run of each, both at 1.5× and 1.25× a
                    // lane's window of one piece, and every block whole at these factors.
                    let halved = (interp == I::BilinearAntialias && g.members.len() == 2).then(|| {
                        let h = c.halved.as_ref().unwrap_or_else(|| panic!("{format:?} {w}->{n}: halved"));
                        let w8 = h.whole8.as_ref().unwrap_or_else(|| panic!("{format:?} {w}->{n}: whole8"));
                        let b8 = h.b8.as_ref().unwrap_or_else(|| panic!("{format:?} {w}->{n}: b8"));
                        assert!(b8.reach <= c.len && b8.done == n && b8.pieces == 1, "{format:?} {w}->{n}");
                        let pieces = c.whole8.as_ref().map(|w| w.pieces);
                        assert!(w8.pieces == 1 && pieces == Some(2), "{format:?} {w}->{n}: {pieces:?}");
                        assert!(w8.whole.iter().all(|&b| b) && w8.reach <= c.len, "{format:?} {w}->{n}");
                        // NEON's sixteen outputs of one member: two registers where the
                        // interleaved row takes three or four.
                        let wt = h.whole_taps.as_ref().unwrap_or_else(|| panic!("{format:?} {w}->{n}: taps"));
                        let pieces = c.whole_taps.as_ref().map_or(0, |w| w.pieces);
                        assert!(wt.pieces == 2 && pieces >= 3, "{format:?} {w}->{n}: {pieces}");
                        assert!(wt.reach <= c.len && wt.done == n, "{format:?} {w}->{n}: {}", wt.done);
                        let runs: Vec<u8> = packed
                            .iter()
                            .step_by(2)
                            .chain(packed.iter().skip(1).step_by(2))
                            .copied()
                            .collect();
                        (runs, c.len.div_ceil(2))
                    });
                    assert!(
                        halved.is_some() || c.halved.is_none(),
                        "{format:?} {w}->{n} {interp:?}: only PIL's U and V"
                    );
                    for (mi, &k) in g.members.iter().enumerate() {
                        for x in 0..n {
                            for j in 0..t.taps {
                                let want = row[plan.base[k][x] as usize + comps[k].step * j];
                                let got = packed[c.base[mi][x] as usize + g.members.len() * j];
                                assert_eq!(got, want, "{format:?} {w}->{n} member {mi} output {x} tap {j}");
                                if let Some((runs, q)) = &halved {
                                    let at = mi * q + c.base[0][x] as usize / 2 + j;
                                    assert_eq!(
                                        runs.get(at),
                                        Some(&want),
                                        "{format:?} {w}->{n} halved {mi} {x} {j}"
                                    );
                                }
                                checked += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(checked > 10_000, "{checked}");
    assert!(checked_w8 >= 8, "{checked_w8}");
}

/// Each two-lane word block's run (`Blocks::runs`, which `avx2::box_blocks` holds in
/// registers) ends past it, covers only blocks with its `pshufb` controls and weights, and stops
/// where they change; at an integer factor the blocks between the row's ends are one run. Other
/// blocks have none.
#[test]
fn block_runs_share_their_tables() {
    use crate::preprocess::Interpolation as I;
    let mut long = 0;
    for format in [PixelFormat::Nv12, PixelFormat::Yuy2, PixelFormat::Rgba, PixelFormat::Gray8] {
        let (_, comps) = components(format).unwrap();
        let div = if matches!(format, PixelFormat::Rgba | PixelFormat::Gray8) { 1 } else { 2 };
        for (w, n) in [(1920, 640), (1600, 640), (1000, 333), (960, 640), (640, 400)] {
            for interp in [I::Area, I::BilinearAntialias, I::Bicubic] {
                let filter = Filter::of(interp, true).unwrap();
                let cols = [
                    multi_axis(n, 0, w, 1, 0, w - 1, filter, 0.0),
                    multi_axis(n, 0, w, div, 0, w / div - 1, filter, 0.0),
                ];
                let row_len: [usize; 3] = std::array::from_fn(|p| match p < format.num_planes() {
                    true => format.plane_sampling(p, 1).row_bytes(w),
                    false => 0,
                });
                let plan = MultiTap::new(cols.clone(), cols.clone(), &comps, row_len, filter.round_between);
                for g in &plan.groups {
                    let packed = g.compact.as_deref().map(|c| &c.w8);
                    for bl in [&g.w8, &g.b8].into_iter().chain(packed).flatten() {
                        let blocks = bl.targets.len();
                        if !bl.words {
                            assert!(bl.runs.is_empty(), "only the word blocks have runs");
                            continue;
                        }
                        assert_eq!(bl.runs.len(), blocks, "{format:?} {w}->{n} {interp:?}");
                        let per = bl.pairs * bl.pieces;
                        let tables = |b: usize| {
                            (&bl.shuf[b * per..][..per], &bl.hi[b * bl.pairs * 8..][..bl.pairs * 8])
                        };
                        for b in 0..blocks {
                            let end = bl.runs[b] as usize;
                            assert!(b < end && end <= blocks, "{format:?} {w}->{n} {interp:?} block {b}");
                            assert!((b..end).all(|c| tables(c) == tables(b)), "block {b}'s run");
                            assert!(end == blocks || tables(end) != tables(b), "block {b}'s run stops early");
                        }
                        if w == 3 * n && bl.words && interp == I::Area && format == PixelFormat::Nv12 {
                            assert!(bl.runs[1] as usize + 2 >= blocks, "one run: {:?}", bl.runs);
                            long += 1;
                        }
                    }
                }
            }
        }
    }
    assert_eq!(long, 2, "NV12's luma and chroma at 3x");
}

/// Each group takes an equal part of its plane's later rows (`TapGroup::part`): YUY2's luma and
/// chroma groups share their one plane, NV12's and RGBA's groups have a plane each.
#[test]
fn groups_share_their_planes_lines() {
    let filter = Filter::of(crate::preprocess::Interpolation::Area, true).unwrap();
    for (format, parts) in [
        (PixelFormat::Yuy2, vec![(0, 2), (1, 2)]),
        (PixelFormat::Nv12, vec![(0, 1), (0, 1)]),
        (PixelFormat::Rgba, vec![(0, 1)]),
    ] {
        let (_, comps) = components(format).unwrap();
        let (w, n) = (1920, 640);
        let cols = [
            multi_axis(n, 0, w, 1, 0, w - 1, filter, 0.0),
            multi_axis(n, 0, w, 2, 0, w / 2 - 1, filter, 0.0),
        ];
        let bytes = match format {
            PixelFormat::Yuy2 => [2 * w, 0, 0],
            PixelFormat::Nv12 => [w, w, 0],
            _ => [4 * w, 0, 0],
        };
        let plan = MultiTap::new(cols.clone(), cols, &comps, bytes, filter.round_between);
        let got: Vec<(u32, u32)> = plan.groups.iter().map(|g| g.part).collect();
        assert_eq!(got, parts, "{format:?}");
    }
}
