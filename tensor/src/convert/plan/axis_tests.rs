//! Host tests of the row axis: the rows each output reads, named once, and the distances to a
//! later output's new rows.
use super::*;

/// `Axis::ahead` points at the rows output `i + 2` reads where output `i + 1` did not, its second
/// row only where it blends two, and nowhere past the plane or the outputs.
#[test]
fn axis_ahead_points_at_new_rows_two_outputs_on() {
    let stride = 2048;
    // Luma 1080 → 360 (3×, one row each), 900 → 360 (2.5×, two rows on every other output),
    // 4:2:0 chroma 540 → 360 (1.5×), and a 2× upscale (neighbours read the same two rows).
    let mut shared = 0;
    for (n, len, div) in [(360, 1080, 1), (360, 900, 1), (360, 1080, 2), (720, 360, 1)] {
        let rows = len / div;
        let a = axis(n, 0, len, div, 0, rows - 1, Interpolation::Bilinear, 0.0);
        let plane = rows * stride;
        let (mut first, mut second) = (0, 0);
        for i in 0..n {
            let [d0, d1] = a.ahead(i, 2, stride, plane);
            if i + 2 >= n {
                assert_eq!([d0, d1], [0, 0], "{len}/{div}: no output two after {i}");
                continue;
            }
            let on = i + 2;
            if a.i0[on - 1] == a.i0[on] && a.i1[on - 1] == a.i1[on] {
                assert_eq!([d0, d1], [0, 0], "{len}/{div}: output {on} reads {}'s rows", on - 1);
                shared += 1;
                continue;
            }
            assert_eq!(a.i0[i] + d0 / stride, a.i0[on], "{len}/{div} output {i}");
            assert_eq!(d0 % stride, 0);
            match a.w[on] != 0.0 && a.i1[on] != a.i0[on] {
                true => {
                    assert_eq!(a.i0[i] + d1 / stride, a.i1[on], "{len}/{div} output {i}, second row");
                    second += 1;
                }
                false => assert_eq!(d1, 0, "{len}/{div} output {i}: one row"),
            }
            first += 1;
        }
        assert!(first > n / 3, "{len}/{div}: {first} outputs pointed");
        if len == 900 {
            assert!(second > n / 4, "2.5×: {second} second rows");
        }
        // A plane that stops halfway: no distance lands past it.
        let half = rows / 2 * stride;
        for i in 0..n {
            for d in a.ahead(i, 2, stride, half).into_iter().filter(|&d| d != 0) {
                assert!(a.i0[i] * stride + d < half, "{len}/{div} output {i}");
            }
        }
    }
    assert!(shared > 100, "the upscale's neighbours share rows: {shared}");
}

/// `Axis::new_rows` names every row an output reads at or before that output, and never a row
/// the output before it read; on a downscale, each row once.
#[test]
fn axis_new_rows_name_each_row_read_once() {
    for (n, len, div) in [(360, 1080, 1), (360, 900, 1), (360, 1080, 2), (720, 360, 1)] {
        let rows = len / div;
        let a = axis(n, 0, len, div, 0, rows - 1, Interpolation::Bilinear, 0.0);
        let read = |i: usize| {
            let mut r = vec![a.i0[i]];
            if a.w[i] != 0.0 && a.i1[i] != a.i0[i] {
                r.push(a.i1[i]);
            }
            r
        };
        let mut named = std::collections::BTreeMap::<usize, usize>::new();
        for on in 0..n {
            for r in a.new_rows(on).into_iter().flatten() {
                assert!(read(on).contains(&r), "{len}/{div}: output {on} does not read row {r}");
                assert!(on == 0 || !read(on - 1).contains(&r), "{len}/{div}: output {} read row {r}", on - 1);
                *named.entry(r).or_default() += 1;
            }
            for r in read(on) {
                assert!(named.contains_key(&r), "{len}/{div}: row {r} of output {on} not named by then");
            }
        }
        if len > n {
            assert!(named.values().all(|&k| k == 1), "{len}/{div}: a row named twice");
        }
        assert_eq!(a.new_rows(n), [None, None]);
    }
}
