//! Where an exact box's vertical sums read and write (`box_sums` and `box_sums_split` at
//! AVX-512, AVX2 and NEON): rows `first..first + rows` of a plane, `stride` bytes apart, summed
//! at samples `lo..hi`. Every level's kernels index the rows by raw pointer from the first
//! summed row's start, so the bounds that make those reads and writes sound are checked here,
//! once, for all of them.

/// The first summed row's offset in a plane of `len` bytes, for sums of `rows` rows at samples
/// `lo..hi` into an output of `out` samples; `None` where there is nothing to sum (no rows, or
/// an empty span).
///
/// # Panics
/// Where the last row's span would pass the plane's end, or `hi` the output's.
pub(in crate::convert) fn box_rows(
    len: usize,
    stride: usize,
    first: usize,
    rows: usize,
    (lo, hi): (usize, usize),
    out: usize,
) -> Option<usize> {
    if hi <= lo || rows == 0 {
        return None;
    }
    assert!((first + rows - 1) * stride + hi <= len && hi <= out, "sums stay inside the rows");
    Some(first * stride)
}

/// What `box_sums_split` may do with a span: its even samples' sums into one output and its odd
/// samples' into another (`even[i] = sums[2i]`, `odd[i] = sums[2i + 1]`).
// Only the x86 levels split their sums.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[derive(Debug, PartialEq, Eq)]
pub(in crate::convert) enum SplitSums {
    /// Not two to four rows, or outputs too short for the span: the caller sums and packs.
    Declined,
    /// Nothing to sum.
    Empty,
    /// The first summed row's offset, and the even first sample the split starts from.
    From(usize, usize),
}

/// `box_rows` for a split of the samples `lo & !1..hi` into `even` and `odd` outputs of those
/// lengths. The kernels' packed loops are written for two to four rows.
///
/// # Panics
/// As `box_rows`, where the rows are taken.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(in crate::convert) fn split_rows(
    len: usize,
    stride: usize,
    first: usize,
    rows: usize,
    (lo, hi): (usize, usize),
    (even, odd): (usize, usize),
) -> SplitSums {
    let lo = lo & !1;
    if !(2..=4).contains(&rows) {
        return SplitSums::Declined;
    }
    if hi <= lo {
        return SplitSums::Empty;
    }
    if hi.div_ceil(2) > even || hi / 2 > odd {
        return SplitSums::Declined;
    }
    match box_rows(len, stride, first, rows, (lo, hi), usize::MAX) {
        Some(at) => SplitSums::From(at, lo),
        None => SplitSums::Empty,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The last row's last sample is the plane's last byte: one more byte of span or one more
    /// row passes the end, and a span past the output's end is refused too.
    #[test]
    fn box_rows_stop_at_the_plane_and_the_output() {
        let (stride, first, rows, hi) = (100, 2, 3, 60);
        let len = (first + rows - 1) * stride + hi;
        assert_eq!(box_rows(len, stride, first, rows, (10, hi), hi), Some(first * stride));
        assert_eq!(box_rows(len, stride, first, rows, (hi, hi), hi), None, "empty span");
        assert_eq!(box_rows(len, stride, first, 0, (10, hi), hi), None, "no rows");
        for bad in [
            (len - 1, rows, hi, hi),
            (len, rows + 1, hi, hi),
            (len, rows, hi + 1, hi + 1),
            (len, rows, hi, hi - 1),
        ] {
            let (len, rows, hi, out) = bad;
            let r = std::panic::catch_unwind(|| box_rows(len, stride, first, rows, (10, hi), out));
            assert!(r.is_err(), "{bad:?} passes");
        }
    }

    /// Each answer of `split_rows`: rows outside two to four and outputs too short decline, an
    /// empty span (after `lo` is made even) is empty, and a fitting span starts at the even `lo`.
    #[test]
    fn split_rows_decline_what_the_packed_loops_cannot_take() {
        let (stride, len) = (64, 64 * 5);
        assert_eq!(split_rows(len, stride, 1, 2, (5, 41), (21, 20)), SplitSums::From(64, 4));
        assert_eq!(split_rows(len, stride, 0, 4, (0, 64), (32, 32)), SplitSums::From(0, 0));
        assert_eq!(split_rows(len, stride, 0, 1, (0, 64), (32, 32)), SplitSums::Declined);
        assert_eq!(split_rows(len, stride, 0, 5, (0, 64), (32, 32)), SplitSums::Declined);
        assert_eq!(split_rows(len, stride, 0, 2, (0, 64), (31, 32)), SplitSums::Declined);
        assert_eq!(split_rows(len, stride, 0, 2, (0, 64), (32, 31)), SplitSums::Declined);
        assert_eq!(split_rows(len, stride, 0, 2, (9, 8), (32, 32)), SplitSums::Empty);
        // Odd `hi`: one more even sample than odd ones.
        assert_eq!(split_rows(len, stride, 0, 2, (0, 63), (32, 31)), SplitSums::From(0, 0));
        let past = std::panic::catch_unwind(|| split_rows(len, stride, 4, 2, (0, 64), (32, 32)));
        assert!(past.is_err(), "a row past the plane's end");
    }
}
