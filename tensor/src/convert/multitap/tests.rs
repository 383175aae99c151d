//! Host tests of which source rows the multi-tap passes fill per call and ask for ahead.
use super::super::plan::{multi_axis, Filter};
use super::ahead::{down_asks, FINISH_ASKED_ROWS, NV12_DOWN_ASKS};
use super::{
    ahead_bytes, ahead_bytes_by, ahead_rows, box_asks, DOWN_AHEAD, MULTI_PREFETCH_AHEAD, TRICKLED_AHEAD,
    TRICKLE_FROM,
};
use crate::preprocess::Interpolation;

/// `pil8_row`'s filling of the byte ring (`next_rows` up to `fill_end`): every source row
/// an output row reads is in the ring when it blends them, each filtered once, and the calls
/// take `ROWS_AT_ONCE` rows but at the ends from 1.5× on (NV12's 1.5× chroma took one and two
/// by turns), two or more on average between 1× and 1.5×.
#[test]
fn the_ring_fills_three_rows_a_call() {
    use super::{fill_end, next_rows, ring_slots, slot, ROWS_AT_ONCE};
    for (src, n, interp) in [
        (540, 360, Interpolation::BilinearAntialias),
        (1080, 360, Interpolation::BilinearAntialias),
        (450, 360, Interpolation::BilinearAntialias),
        (900, 360, Interpolation::Bicubic),
        (1080, 1440, Interpolation::BilinearAntialias),
    ] {
        let t = multi_axis(n, 0, src, 1, 0, src - 1, Filter::of(interp, true).unwrap(), 0.0);
        let kv = t.taps;
        let mut tags = vec![usize::MAX; ring_slots(kv)];
        let (mut filtered, mut calls, mut short) = (vec![0; src], 0, 0);
        for cy in 0..n {
            let (first, end) = (t.first[cy] as usize, fill_end(&t, cy));
            assert!(end >= first + kv && end <= first + tags.len() && end <= src, "{src}->{n} row {cy}");
            let mut r = first;
            while r < first + kv {
                let mut batch = [0; ROWS_AT_ONCE];
                let count = next_rows(&tags, first, kv, end, &mut r, &mut batch);
                if count == 0 {
                    continue;
                }
                calls += 1;
                short += usize::from(count < ROWS_AT_ONCE);
                for &row in &batch[..count] {
                    tags[slot(row, kv)] = row;
                    filtered[row] += 1;
                }
            }
            for row in first..first + kv {
                assert_eq!(tags[slot(row, kv)], row, "{src}->{n}: row {row} for output {cy}");
            }
        }
        assert!(filtered.iter().all(|&f| f <= 1), "{src}->{n}: a row filtered twice");
        let read = filtered.iter().filter(|&&f| f == 1).count();
        assert_eq!(read, t.first[n - 1] as usize + kv - t.first[0] as usize, "{src}->{n}");
        match (2 * src).cmp(&(3 * n)) {
            // 1.5× and more: three new rows at least every two output rows.
            std::cmp::Ordering::Less => {
                assert!(src <= n || read >= 2 * calls, "{src}->{n}: {calls} calls")
            }
            _ => assert!(short <= 2, "{src}->{n}: {short} of {calls} calls short"),
        }
    }
}

/// PIL's vertical pass blended down first and a finish that asks share the rows the pass asked
/// for alone (the last `asked` of output row `cy + on`'s, `ahead` on): the finish the first
/// `FINISH_ASKED_ROWS` of them as whole rows (NV12's: `NV12_DOWN_ASKS`), the pass the rest (its
/// last `asked` rows shifted by its `ahead`), each row once, none where there is no such output
/// row; without a finish that asks, the pass all of them, as before.
#[test]
fn down_asks_leave_a_later_rows_first_rows_to_the_finish() {
    let stride = 3840;
    let filter = Filter::of(Interpolation::BilinearAntialias, true).unwrap();
    let cases = [(1080, 360), (900, 360), (540, 360), (720, 360)];
    for ((src, n), (on, rows)) in
        cases.into_iter().flat_map(|c| [(c, (DOWN_AHEAD, FINISH_ASKED_ROWS)), (c, NV12_DOWN_ASKS)])
    {
        let t = multi_axis(n, 0, src, 1, 0, src - 1, filter, 0.0);
        let (kv, len) = (t.taps, src * stride);
        let mut shared = 0;
        for cy in 0..n {
            let ahead = ahead_bytes_by(&t, cy, on, stride, len);
            let next = t.first.get(cy + 1).map_or(kv, |&f| (f - t.first[cy]) as usize);
            let new = next.min(kv).max(1);
            assert_eq!(
                down_asks(&t, (cy, on), stride, new, ahead, 0),
                (0..0, new, ahead),
                "{src}->{n} row {cy}"
            );
            let (span, asked, pass_on) = down_asks(&t, (cy, on), stride, new, ahead, rows);
            if ahead == 0 {
                assert_eq!((span, pass_on), (0..0, 0), "{src}->{n} row {cy}: no row to ask for");
                continue;
            }
            // One past the last row output row `cy + on` reads.
            let end = t.first[cy + on] as usize + kv;
            assert!(end <= src && span.start % stride == 0 && span.end % stride == 0, "{src}->{n} row {cy}");
            let finish = span.start / stride..span.end / stride;
            assert_eq!(finish.start, end - new, "{src}->{n} row {cy}: the finish's first row");
            assert_eq!(finish.len(), rows.min(new), "{src}->{n} row {cy}");
            // The pass asks for row `j` of its window, `on` bytes on, where `j + asked >= kv`.
            let pass = match pass_on {
                0 => finish.end..finish.end,
                on => {
                    t.first[cy] as usize + kv - asked + on / stride..t.first[cy] as usize + kv + on / stride
                }
            };
            assert_eq!((pass.start, pass.end), (finish.end, end), "{src}->{n} row {cy}: the pass's rows");
            shared += 1;
        }
        assert!(shared > n / 2, "{src}->{n}: {shared} rows shared");
    }
}

/// The distance points at the first row output row `cy + by` reads (`by`: the two distances the
/// kernels ask at, `ahead_bytes`'s and `TRICKLED_AHEAD`), and is 0 where that row's taps pass the
/// plane's last row or there is no such output row.
#[test]
fn ahead_bytes_points_at_the_rows_of_a_later_output() {
    let stride = 1920;
    for interp in [Interpolation::Area, Interpolation::BilinearAntialias] {
        // 1080 rows to 360 (3×) and 900 to 360 (2.5×), every source row available.
        for (rows, n) in [(1080, 360), (900, 360)] {
            let t = multi_axis(n, 0, rows, 1, 0, rows - 1, Filter::of(interp, true).unwrap(), 0.0);
            let len = rows * stride;
            for by in [MULTI_PREFETCH_AHEAD, TRICKLED_AHEAD] {
                let at = |cy: usize, len: usize| match by == MULTI_PREFETCH_AHEAD {
                    true => ahead_bytes(&t, cy, stride, len),
                    false => ahead_bytes_by(&t, cy, by, stride, len),
                };
                let mut pointed = 0;
                for cy in 0..n {
                    let a = at(cy, len);
                    let Some(&on) = t.first.get(cy + by) else {
                        assert_eq!(a, 0, "no output row {} ahead of {cy}", cy + by);
                        continue;
                    };
                    if a == 0 {
                        continue;
                    }
                    pointed += 1;
                    assert_eq!(a % stride, 0);
                    assert_eq!(
                        t.first[cy] as usize + a / stride,
                        on as usize,
                        "{interp:?} {rows} row {cy} by {by}"
                    );
                    assert!((on as usize + t.taps - 1) * stride < len, "inside the plane");
                }
                assert!(pointed >= n - 2 * by - t.taps, "{interp:?} {rows} by {by}: {pointed}");
                // A plane that ends before the last rows' taps: no distance reaches past it.
                let short = (t.first[n / 2] as usize + 1) * stride;
                for cy in 0..n {
                    let a = at(cy, short);
                    let rows_read = t.first[cy] as usize + a / stride + t.taps - 1;
                    assert!(a == 0 || rows_read * stride < short, "{interp:?} row {cy} by {by}");
                }
            }
        }
    }
}

/// The blocks' span is the rows output row `cy + MULTI_PREFETCH_AHEAD` reads that the row
/// before it does not: consecutive spans follow each other, so each row is asked for once;
/// an exact box's blocks ask for them only where the rows bring `TRICKLE_FROM` an output row.
#[test]
fn ahead_rows_are_the_rows_new_two_outputs_on() {
    for interp in [Interpolation::Area, Interpolation::BilinearAntialias] {
        for (rows, n) in [(1080, 360), (900, 360)] {
            let t = multi_axis(n, 0, rows, 1, 0, rows - 1, Filter::of(interp, true).unwrap(), 0.0);
            // YUY2's and RGBA's 1920-wide rows, and NV12's luma.
            for stride in [3840, 7680, 1920] {
                let mut asked = Vec::new();
                for cy in 0..n {
                    let span = ahead_rows(&t, cy, stride);
                    let on = cy + MULTI_PREFETCH_AHEAD;
                    if span.is_empty() {
                        continue;
                    }
                    assert!(on < n && span.start.is_multiple_of(stride) && span.end.is_multiple_of(stride));
                    let from = (t.first[on] as usize).max(t.first[on - 1] as usize + t.taps);
                    assert_eq!(span.start / stride, from, "{interp:?} {rows} row {cy}");
                    assert_eq!(
                        span.end / stride,
                        t.first[on] as usize + t.taps,
                        "{interp:?} {rows} row {cy}"
                    );
                    asked.push(span);
                }
                for pair in asked.windows(2) {
                    assert!(pair[0].end <= pair[1].start, "{interp:?} {rows} {stride}: {pair:?}");
                }
                assert!(asked.len() >= n - 2 * MULTI_PREFETCH_AHEAD - t.taps, "{interp:?} {rows}");
                let asks = rows * stride / n >= TRICKLE_FROM;
                assert_eq!(box_asks(&t, stride, TRICKLE_FROM), asks, "{interp:?} {rows} {stride}");
                assert!(box_asks(&t, stride, 0), "{interp:?} {rows} {stride}: AVX-512 asks on every plane");
            }
        }
    }
}

/// Each level's kernel that blends a plane's source rows down into one row of bytes (PIL's
/// filters blended down first, `pil8_down_first`) gives PIL's byte, `⌊(Σ wi · b + 2^21) / 2^22⌋`
/// with `wi = 2^22 k / D` rounded, for 3×'s and 2.5×'s triangles and others, over lengths
/// around its steps (a 1080p YUY2 row's 3840 bytes among them); it writes nothing past its
/// whole steps, and takes no weights whose double passes what its multiply takes. The x86 levels
/// ask for lines a row on as they go (hints past the rows' ends included): the bytes are the
/// same.
#[test]
fn down_kernels_give_pils_bytes() {
    type Down = unsafe fn(&[*const u8], &[i16], (u8, (u16, u16)), &mut [u8]) -> usize;
    #[allow(unused_mut)]
    let mut levels: Vec<(&str, usize, i16, Down)> = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        if super::super::avx512::detect() {
            levels.push(("avx512", 64, 63, |r, k, w, o| unsafe {
                super::super::avx512::down_bytes(r, k, w, o, 3840, 2)
            }));
        }
        if super::super::avx2::detect() {
            levels.push(("avx2", 32, 63, |r, k, w, o| unsafe {
                super::super::avx2::down_bytes(r, k, w, o, 3840, 2)
            }));
        }
    }
    #[cfg(target_arch = "aarch64")]
    levels.push(("neon", 16, 127, |r, k, w, o| unsafe { super::super::neon::down_bytes(r, k, w, o) }));
    let cases: [&[i16]; 7] = [
        &[1, 2, 3, 3, 2, 1],
        &[1, 2, 3, 2, 1],
        &[1, 5, 9, 7, 3],
        &[40, 40, 11],
        &[60, 4, 27],
        &[1],
        &[80, 11],
    ];
    let mut checked = 0;
    for &(level, step, most, down) in &levels {
        for k in cases {
            let d: i16 = k.iter().sum();
            let div = crate::convert::plan::divider(d as u16).expect("a divider");
            let wi: Vec<i64> =
                k.iter().map(|&k| ((k as f64) * (1u64 << 22) as f64 / d as f64).round() as i64).collect();
            for n in [16, 40, 64, 96, 650, 3840] {
                let rows: Vec<Vec<u8>> = (0..k.len())
                    .map(|r| (0..n).map(|i| ((i * 97 + r * 61 + i * i * 13) % 256) as u8).collect())
                    .collect();
                let at: Vec<*const u8> = rows.iter().map(|r| r.as_ptr()).collect();
                let mut out = vec![0xa5u8; n];
                let done = unsafe { down(&at, k, (d as u8, div), &mut out) };
                let what = format!("{level}: weights {k:?} over {d}, {n} bytes");
                if k.iter().any(|&k| k > most) {
                    assert_eq!(done, 0, "{what}: weights past the kernel's are left to the loops");
                    continue;
                }
                assert_eq!(done, n / step * step, "{what}");
                for x in 0..n {
                    if x >= done {
                        assert_eq!(out[x], 0xa5, "{what}: byte {x} written past the steps");
                        continue;
                    }
                    let acc: i64 = (0..k.len()).map(|j| wi[j] * rows[j][x] as i64).sum();
                    let pil = ((acc + (1 << 21)) >> 22).clamp(0, 255);
                    assert_eq!(out[x] as i64, pil, "{what}: byte {x}");
                    checked += 1;
                }
            }
        }
    }
    assert!(levels.is_empty() || checked > 20_000, "{checked}");
}

/// A value the byte path stores for an 8-bit output is the finish's byte: nearest with ties to
/// even (`cvtps2dq` under the default rounding mode: IEEE 754's roundTiesToEven, std's
/// `round_ties_even`), saturated to 0..255, on ties, near-ties and both ends.
#[test]
fn bytes_round_as_the_finish_does() {
    use super::Sample;
    for v in [
        0.0f32, 0.5, 1.5, 2.5, 2.4999998, 2.5000002, 126.5, 127.5, 254.5, 254.50002, 255.0, 255.49998, 255.5,
        256.0, 300.0,
    ] {
        let want = v.round_ties_even().clamp(0.0, 255.0) as u8;
        assert_eq!(<u8 as Sample>::of_f32(v), want, "{v}");
        assert_eq!(<f32 as Sample>::of_f32(v), v);
    }
}
