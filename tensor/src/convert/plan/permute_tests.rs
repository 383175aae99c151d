//! Host tests of the AVX-512 permute plans: every control picks the taps it was planned for,
//! the rows-first controls pair two rows' bytes, and the pixel picks interleave an RGB source's
//! channels in the output's order.
use super::tests::assert_picks;
use super::*;

/// The AVX-512 kernels' picks in scalar (`avx512::pick`): per block and half, a window of
/// `Windows::bytes` whose byte the control's index names modulo its size (`vpermb` reads six
/// bits, `vpermt2b` seven); the mask keeps byte 0 of each dword, and byte 2 with two taps.
fn permute(plan: &Permute, row: &[u8], members: usize, two: bool) -> Vec<Vec<[u8; 4]>> {
    let mut out = vec![Vec::new(); members];
    let (per, bytes) = (plan.windows.per_block(), plan.windows.bytes() as usize);
    for b in 0..plan.bases.len() / per {
        let table = |j: usize| &row[plan.bases[per * b + j / (16 / per)] as usize..][..bytes];
        for (m, out) in out.iter_mut().enumerate() {
            let ctl = &plan.controls[(b * members + m) * 2 + usize::from(two)].0;
            for j in 0..16 {
                let pick = |k: usize| table(j)[ctl[4 * j + k] as usize % bytes];
                out.push([pick(0), 0, if two { pick(2) } else { 0 }, 0]);
            }
        }
    }
    out
}

fn check_permute(i0: &[u32], i1: &[u32], members: &[(usize, usize)], windows: Windows) {
    let plan = permute_plan(i0, i1, members).expect("a plan");
    assert_eq!(plan.windows, windows);
    assert_eq!(plan.bases.len(), i0.len().min(i1.len()) / 16 * windows.per_block());
    assert_picks(i0, i1, members, 16, plan.reach, |row, two| permute(&plan, row, members.len(), two));
    assert_row_pairs(&plan, i0, i1, members);
}

/// A plan's two-tap controls over two rows' windows (`avx512::rows_first_blocks`: bytes 0 and 2
/// picked from the first row's windows, 1 and 3 from the second's) pair the rows' bytes: output
/// `x` of member `m` gets tap 0 of the first row, tap 0 of the second, then tap 1 of each.
fn assert_row_pairs(plan: &Permute, i0: &[u32], i1: &[u32], members: &[(usize, usize)]) {
    let top: Vec<u8> = (0..plan.reach).map(|i| (i * 7 + 3) as u8).collect();
    let bottom: Vec<u8> = (0..plan.reach).map(|i| (i * 13 + 200) as u8).collect();
    let (per, bytes) = (plan.windows.per_block(), plan.windows.bytes() as usize);
    for b in 0..plan.bases.len() / per {
        for (m, &(_, shift)) in members.iter().enumerate() {
            let ctl = &plan.controls[(b * members.len() + m) * 2 + 1].0;
            for j in 0..16 {
                let base = plan.bases[per * b + j / (16 / per)] as usize;
                let row = |k: usize| if k.is_multiple_of(2) { &top } else { &bottom };
                let got = [0, 1, 2, 3].map(|k| row(k)[base + ctl[4 * j + k] as usize % bytes]);
                let x = 16 * b + j;
                let (t0, t1) = (i0[x] as usize + shift, i1[x] as usize + shift);
                assert_eq!(
                    got,
                    [top[t0], bottom[t0], top[t1], bottom[t1]],
                    "member {m} output {x}: rows paired"
                );
            }
        }
    }
}

#[test]
fn permute_plans_pick_every_tap() {
    let luma: Vec<u32> = (0..40).map(|i| 3 * i + 1).collect();
    check_permute(&luma, &luma, &[(0, 0)], Windows::Narrow);
    let c0: Vec<u32> = (0..40).map(|i| 2 * ((3 * i) / 2)).collect();
    let c1: Vec<u32> = c0.iter().map(|&t| t + 2).collect();
    check_permute(&c0, &c1, &[(1, 0), (2, 1)], Windows::Narrow);
    // YUY2's luma every sixth byte: sixteen outputs in 92 bytes, eight in 44.
    let y: Vec<u32> = (0..40).map(|i| 6 * i + 2).collect();
    check_permute(&y, &y, &[(0, 0)], Windows::Halves);
    // YUY2's chroma at 2.5× (1600 → 640), both taps: U every 2.5 chroma samples, V two bytes on.
    let u0: Vec<u32> = (0..40).map(|i| 4 * ((5 * i) / 4) + 1).collect();
    let u1: Vec<u32> = u0.iter().map(|&t| t + 4).collect();
    check_permute(&u0, &u1, &[(1, 0), (3, 2)], Windows::Halves);
    // RGBA at 3×: sixteen pixels span 184 bytes, eight 88: a 128-byte window per half block.
    let rgba: Vec<u32> = (0..40).map(|i| 12 * i + 4).collect();
    let members = [(0, 0), (1, 1), (2, 2), (3, 3)];
    check_permute(&rgba, &rgba, &members, Windows::Split);
    // RGBA at 2.5×, both taps: eight pixels' pairs in 84 bytes.
    let r0: Vec<u32> = (0..40).map(|i| 4 * ((5 * i) / 2)).collect();
    let r1: Vec<u32> = r0.iter().map(|&t| t + 4).collect();
    check_permute(&r0, &r1, &members, Windows::Split);
    // Eight pixels 20 bytes apart span 144: no plan.
    let wide: Vec<u32> = (0..40).map(|i| 20 * i).collect();
    assert!(permute_plan(&wide, &wide, &members).is_none());
    // Fewer than sixteen outputs: no block.
    assert!(permute_plan(&luma[..15], &luma[..15], &[(0, 0)]).is_none());
}

/// `Permute::pixel_picks` in scalar, as `avx512::PixelBlocks` uses them: vector `v`'s lanes
/// from the first half's window (`v` 0, and lanes 0..8 of 1) or the second's; each value is the
/// byte of its pixel's first tap and channel, in the output's order, read from the row itself.
#[test]
fn pixel_picks_give_the_pixels_in_output_order() {
    let rgba = [(0, 0), (1, 1), (2, 2), (3, 3)];
    let bgra = [(2, 0), (1, 1), (0, 2), (3, 3)];
    let rgb = [(0, 0), (1, 1), (2, 2)];
    // RGBA and BGRA at 3× (split windows), at 1× (one narrow window: sixteen pixels, 64 bytes),
    // three-byte RGB at 3× and 2× (eight pixels in 69 and 45 bytes).
    type Case<'a> = (u32, u32, &'a [(usize, usize)], Windows);
    let cases: [Case<'_>; 5] = [
        (12, 4, &rgba, Windows::Split),
        (12, 4, &bgra, Windows::Split),
        (4, 0, &rgba, Windows::Narrow),
        (9, 3, &rgb, Windows::Split),
        (6, 0, &rgb, Windows::Halves),
    ];
    let row: Vec<u8> = (0..4096).map(|i| (i * 31 + 7) as u8).collect();
    for (step, first, members, windows) in cases {
        let taps: Vec<u32> = (0..40).map(|i| step * i + first).collect();
        let plan = permute_plan(&taps, &taps, members).expect("a plan");
        assert_eq!(plan.windows, windows, "step {step}");
        let (per, bytes) = (plan.windows.per_block(), plan.windows.bytes() as usize);
        for order in [[0, 1, 2], [2, 1, 0]] {
            let picks = plan.pixel_picks(members, order).expect("every channel a member");
            assert_eq!(picks.len(), 3 * (taps.len() / 16));
            for b in 0..taps.len() / 16 {
                for v in 0..3 {
                    for l in 0..16 {
                        let second = v == 2 || (v == 1 && l >= 8);
                        let base = plan.bases[per * b + usize::from(second && per == 2)] as usize;
                        let got = row[base + picks[3 * b + v].0[4 * l] as usize % bytes];
                        let (p, i) = ((16 * v + l) / 3, (16 * v + l) % 3);
                        let shift = members.iter().find(|&&(k, _)| k == order[i]).unwrap().1;
                        let want = row[taps[16 * b + p] as usize + shift];
                        assert_eq!(got, want, "step {step} order {order:?} block {b} value {}", 16 * v + l);
                    }
                }
            }
        }
    }
    // A channel the group does not hold: no picks.
    let plan = permute_plan(&[0; 16], &[0; 16], &[(0, 0), (1, 1)]).unwrap();
    assert!(plan.pixel_picks(&[(0, 0), (1, 1)], [0, 1, 2]).is_none());
}
