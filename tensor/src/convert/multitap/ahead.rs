//! How far ahead the multi-tap passes ask for a later output row's source rows, and which
//! passes ask: the distances, each with the measurements that chose it.

use super::super::plan::Taps;

/// Output rows ahead whose source rows the multi-tap kernels ask for (`ahead_bytes`, and the
/// driver's `prefetch_multi` for the loops; PIL's blocks beside a trickle: `TRICKLED_AHEAD`).
/// Measured on 32 rotating 1080p frames (engine, uint8, AVX-512; NV12 / YUY2 / RGBA), all at once
/// before the row (the AMD machine of docs/benchmark-log.md): area none
/// 0.334 / 0.400 / 0.550 ms, 1 row 0.267 / 0.340 / 0.561, 2 rows 0.259 / 0.339 / 0.572, 4 rows
/// 0.257 / 0.321 / 0.547, 8 rows 0.275 / 0.336 / 0.549; bilinear-antialias none 0.535 / 0.642 /
/// 0.830, 2 rows 0.403 / 0.515 / 0.774.
pub(in super::super) const MULTI_PREFETCH_AHEAD: usize = 2;

/// Output rows ahead whose source rows PIL's horizontal blocks ask for among their loads
/// (`pil8_row`) where the vertical pass's trickle asks for the rows `MULTI_PREFETCH_AHEAD` on:
/// one, the rows the trickle of the row before asked for. Engine, uint8 `bilinear-antialias`,
/// AVX-512, Intel Xeon, best of 1000, three alternations (ms), one row on against two: NV12 32
/// frames 0.361–0.371 against 0.406–0.410 (none: 0.415–0.428), AVX2 0.482–0.484 against
/// 0.518–0.526; 900p 0.347–0.356 against 0.357–0.364; 8 frames level. Where the blocks ask for
/// themselves alone (RGBA), one row on was slower (900p 0.437–0.454 against 0.425–0.432).
pub(super) const TRICKLED_AHEAD: usize = 1;

/// How far the source rows output row `cy + MULTI_PREFETCH_AHEAD` reads lie past those row `cy`
/// reads, in bytes of a plane of `len` bytes, rows `stride` apart; 0 where there is no such row
/// or its rows pass the plane. The kernels that read a row's source rows (`vsum` and `horiz` of
/// `box_row` and `pil8_row`) ask for each line they load again that far on: the next rows'
/// lines are requested a few at a time among the loads. Requested all at once before the row
/// (the driver's `prefetch_multi`, up to 360 lines for RGBA), they held the line-fill buffers and
/// stalled the kernels behind them on an Intel Xeon (AVX-512 FP16 kind, 2 MiB L2 a core).
pub(in super::super) fn ahead_bytes(rows: &Taps, cy: usize, stride: usize, len: usize) -> usize {
    ahead_bytes_by(rows, cy, MULTI_PREFETCH_AHEAD, stride, len)
}

/// Output rows ahead whose source rows PIL's vertical pass blended down first asks for
/// (`pil8_down_first`): 2, 4, 6 or 8 rows on, three alternations each (1080p YUY2 → 640,
/// AVX-512, Intel Xeon, best of 200): 32 frames 0.489–0.493 ms two rows on, 0.468–0.478 four,
/// 0.475–0.489 six, 0.474–0.503 eight; 8 frames and 900p level within their spread.
pub(in super::super) const DOWN_AHEAD: usize = 4;

/// Of the rows new to output row `cy + DOWN_AHEAD` that PIL's vertical pass blended down first
/// asks for, the first ones it leaves to the finish that reads its bytes at AVX-512
/// (`avx512::finish_yuv_bytes`), whose blocks ask for a few lines each: asked in the vertical
/// pass alone, all of a row's lines were requested while it ran, a third of the row's time, and
/// memory was left idle through the horizontal pass and the finish. Engine, 1080p YUY2 → 640
/// uint8 `bilinear-antialias`, Zen 5, one binary, three rounds (none, one, two, all three rows;
/// the finish's asks by T2): 8 rotating frames 0.237–0.244 / 0.213–0.216 / 0.203–0.210 /
/// 0.198–0.215 ms, 32 frames 0.261–0.291 / 0.237–0.268 / 0.235–0.258 / 0.268–0.271, hot
/// 0.166–0.168 / 0.161–0.168 / 0.161–0.163 / 0.157–0.160. Two builds, four fresh copies each
/// alternated (by T1): 8 frames 0.192–0.218 → 0.176–0.194, 32 frames 0.245–0.258 →
/// 0.201–0.230, float32 on 8 frames 0.238–0.251 → 0.214–0.222, 900p level. (At AVX2 level or
/// slower: its pass asks for them all.)
pub(in super::super) const FINISH_ASKED_ROWS: usize = 2;

/// `DOWN_AHEAD` and `FINISH_ASKED_ROWS` for the 4:2:0 sources blended down first (NV12, NV21,
/// I420, YV12: `build::multi_plan`): three output rows on, the first of the luma's new rows
/// asked for by the finish (the rest, and the chroma's, by the pass). 1080p NV12 → 640 uint8
/// `bilinear-antialias`, AVX-512, Zen 5, one binary choosing by a variable (ms). The element's
/// camera rows (`cargo bench`, two or three rounds, in a slow stretch of the machine):
///
/// | on, finish rows | 8 frames | 32 frames |
/// |---|---:|---:|
/// | 4, 1 | 0.186–0.195 | 0.222–0.237 |
/// | 3, 3 | 0.161–0.179 | 0.206–0.229 |
/// | 3, 2 | 0.158–0.169 | 0.183–0.195 |
/// | 3, 1 | 0.160–0.169 | 0.173–0.184 |
///
/// The engine (best stretch of 120 frames, three rounds) had YUY2's 4, 2 at 0.188–0.234 /
/// 0.240–0.246, 2, 3 at 0.175–0.183 / 0.254–0.278, and 3, 3 best on 8 frames (0.152–0.163
/// against 0.172–0.178 for 3, 2), which the element did not repeat.
pub(in super::super) const NV12_DOWN_ASKS: (usize, usize) = (3, 1);

/// The lines PIL's vertical pass blended down first asks for at output row `cy` (of the rows
/// output row `cy + on` reads, the last `asked`; `ahead` bytes on from this row's, 0 where there
/// is no such row) shared with a finish that asks for `finish` rows (0: none): the byte span of
/// the first `finish` of them, left to the finish, and the pass's own `asked` and `ahead` (0
/// where it asks for none).
pub(super) fn down_asks(
    rows: &Taps,
    (cy, on): (usize, usize),
    stride: usize,
    asked: usize,
    ahead: usize,
    finish: usize,
) -> (std::ops::Range<usize>, usize, usize) {
    let left = if ahead != 0 { finish.min(asked) } else { 0 };
    if left == 0 {
        return (0..0, asked, ahead);
    }
    // (`ahead` is not 0: output row `cy + on` is there.)
    let from = (rows.first[cy + on] as usize + rows.taps - asked) * stride;
    match asked - left {
        0 => (from..from + left * stride, asked, 0),
        rest => (from..from + left * stride, rest, ahead),
    }
}

/// `ahead_bytes` for the source rows of output row `cy + by`.
pub(super) fn ahead_bytes_by(rows: &Taps, cy: usize, by: usize, stride: usize, len: usize) -> usize {
    match (rows.first.get(cy), rows.first.get(cy + by)) {
        (Some(&at), Some(&on)) if on > at && (on as usize + rows.taps - 1) * stride < len => {
            (on - at) as usize * stride
        }
        _ => 0,
    }
}

/// The bytes of the source rows output row `cy + MULTI_PREFETCH_AHEAD` reads and the row before
/// it does not (empty where there is no such row), rows `stride` apart: what the kernels that
/// read no frame bytes ask for through their steps (`hint::Trickle`: PIL's vertical pass, an
/// exact box's blocks where `box_asks`), split over the groups of the plane (`TapGroup::part`)
/// and their members.
pub(in super::super) fn ahead_rows(rows: &Taps, cy: usize, stride: usize) -> std::ops::Range<usize> {
    ahead_rows_by(rows, cy, MULTI_PREFETCH_AHEAD, stride)
}

/// `ahead_rows` for output row `cy + by` (the driver's page asks, `driver::ahead`).
pub(in super::super) fn ahead_rows_by(
    rows: &Taps,
    cy: usize,
    by: usize,
    stride: usize,
) -> std::ops::Range<usize> {
    let on = cy + by;
    match (rows.first.get(on), on.checked_sub(1).and_then(|b| rows.first.get(b))) {
        (Some(&at), Some(&before)) => {
            let from = (at as usize).max(before as usize + rows.taps);
            from * stride..(at as usize + rows.taps) * stride
        }
        _ => 0..0,
    }
}

/// Whether an exact box's blocks ask for `ahead_rows` on an axis `rows` over rows `stride`
/// apart: where its output rows bring at least `from` bytes of new rows on average (the level's:
/// 0 at AVX-512, `TRICKLE_FROM` at AVX2 and NEON).
pub(in super::super) fn box_asks(rows: &Taps, stride: usize, from: usize) -> bool {
    let n = rows.first.len();
    n > 0 && (rows.first[n - 1] as usize + rows.taps - rows.first[0] as usize) * stride >= from * n
}

/// The fewest bytes of new source rows an output row must bring on average for an exact box's
/// blocks to ask for them at AVX2 (`box_asks`; NEON likewise, unmeasured). `area`, 1080p → 640
/// letterbox, MPEG-2 siting, engine, uint8, 8 rotating frames, best of 3–4 alternations, without
/// → with the blocks asking: YUY2 (11.25 KiB of new rows an output row) 0.572 → 0.528 ms, RGBA
/// (22.5 KiB) 0.625 → 0.516; NV12 (5.6 KiB) 0.391 → 0.413, hot 0.378 → 0.409. AVX-512 asks on
/// every plane: YUY2 0.466 → 0.389 (32 frames 0.476 → 0.410, hot 0.340 → 0.352), RGBA 0.667 →
/// 0.554 (0.683 → 0.548, hot 0.446 → 0.445), NV12 32 frames 0.329 → 0.298 (8 frames' first
/// quartile 0.350 → 0.311, hot 0.264 → 0.274), YUY2 900p (9.4 KiB) 0.394 → 0.339.
pub(in super::super) const TRICKLE_FROM: usize = 10 << 10;
