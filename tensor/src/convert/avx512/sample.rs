//! Bilinear sampling at AVX-512: a group's components read straight from the frame's two source
//! rows through its `Permute` plan, sixteen outputs a block. Each way of taking a row
//! (`RowsFirst`, `Sampled`) is set up once a call and samples one block at a time (`Blocks`),
//! so that one loop can run a group's blocks alone (`sample`) or two groups' side by side
//! (`sample_pair`).

use super::super::hint::prefetch_window;
use super::super::lines::Lines;
use super::super::plan::{row_steps, Aligned64, Permute, SampleRow, Windows, WEIGHT_UNIT};
use super::Scaled;
use std::arch::x86_64::*;

/// A group's source rows with its `Permute` plan.
type Row<'a> = SampleRow<'a, Permute>;

/// `$body` with `$k` the blocks of `$row` (`M` members, windows `$shape`) for the way its two
/// source rows are taken: blended first (`RowsFirst`), else by `Sampled`'s taps on samples or
/// not, one row or two.
macro_rules! blocks_of {
    (@with $make:expr, |$k:ident| $body:expr) => {{
        let $k = unsafe { $make };
        $body
    }};
    ($shape:ident, $m:literal, $row:expr, $out:expr, |$k:ident| $body:expr) => {{
        let row = $row;
        match (rows_first_weight(row.wy, row.single), row.single, row.wy != 0.0) {
            (0, true, false) => {
                blocks_of!(@with Sampled::<$shape, $m, true, false>::new(&row, $out), |$k| $body)
            }
            (0, true, true) => {
                blocks_of!(@with Sampled::<$shape, $m, true, true>::new(&row, $out), |$k| $body)
            }
            (0, false, false) => {
                blocks_of!(@with Sampled::<$shape, $m, false, false>::new(&row, $out), |$k| $body)
            }
            (0, false, true) => {
                blocks_of!(@with Sampled::<$shape, $m, false, true>::new(&row, $out), |$k| $body)
            }
            (half, ..) => {
                blocks_of!(@with RowsFirst::<$shape, $m>::new(&row, half, $out), |$k| $body)
            }
        }
    }};
}

/// A group's components at every content column through its `Permute` plan (the arithmetic of
/// `avx2::sample`, sixteen outputs at a time); the columns after the last block as
/// `group_tail` does them. Returns the columns its blocks wrote.
///
/// # Safety
/// The CPU has AVX-512 F/BW/VBMI; `plan.reach` bytes are readable from both rows.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx2,fma")]
pub(in super::super) unsafe fn sample(row: Row<'_>, wx: &[f32], out: &mut [Lines<f32>; 4]) -> usize {
    let g = row.g;
    assert!(row.plan.reach <= row.r0.len().min(row.r1.len()), "loads stay inside the rows");
    macro_rules! shaped {
        ($shape:ident) => {
            match g.members.len() {
                1 => blocks_of!($shape, 1, row, out, |a| run(&a)),
                2 => blocks_of!($shape, 2, row, out, |a| run(&a)),
                3 => blocks_of!($shape, 3, row, out, |a| run(&a)),
                _ => blocks_of!($shape, 4, row, out, |a| run(&a)),
            }
        };
    }
    let blocks = match row.plan.windows {
        Windows::Narrow => shaped!(NARROW),
        Windows::Halves => shaped!(HALVES),
        Windows::Split => shaped!(SPLIT),
    };
    row.tail(wx, 16, blocks, out)
}

/// `sample` of two groups whose blocks run side by side in one loop (block `b` of `a`, then
/// block `b` of `c`), where `a` has one member, `c` two and their windows the same shape
/// (NV12's and YUY2's luma and chroma); `None` (nothing written) for any other pair. Returns the
/// columns each group's blocks and tail wrote, as `sample` does (why side by side:
/// `run_pair`).
///
/// # Safety
/// As `sample`, for both groups.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx2,fma")]
pub(in super::super) unsafe fn sample_pair(
    a: Row<'_>,
    wxa: &[f32],
    c: Row<'_>,
    wxc: &[f32],
    out: &mut [Lines<f32>; 4],
) -> Option<(usize, usize)> {
    if a.g.members.len() != 1 || c.g.members.len() != 2 || a.plan.windows != c.plan.windows {
        return None;
    }
    for row in [&a, &c] {
        assert!(row.plan.reach <= row.r0.len().min(row.r1.len()), "loads stay inside the rows");
    }
    macro_rules! shaped {
        ($shape:ident) => {
            blocks_of!($shape, 1, a, out, |ka| blocks_of!($shape, 2, c, out, |kc| run_pair(&ka, &kc)))
        };
    }
    let (na, nc) = match a.plan.windows {
        Windows::Narrow => shaped!(NARROW),
        Windows::Halves => shaped!(HALVES),
        Windows::Split => shaped!(SPLIT),
    };
    Some((a.tail(wxa, 16, na, out), c.tail(wxc, 16, nc, out)))
}

/// A group's sampling over one output row, set up once: `block(b)` writes the outputs of block
/// `b` of every member.
trait Blocks {
    /// The blocks there are.
    fn count(&self) -> usize;
    /// # Safety
    /// `b < count()`; the CPU has the level's features.
    unsafe fn block(&self, b: usize);
}

/// Every block of `k`. Unoptimized, a function of its own per case (inlined, the cases gave
/// `sample` a 0.25 MB frame; as `finish_rows`).
#[cfg_attr(debug_assertions, inline(never))]
#[cfg_attr(not(debug_assertions), inline(always))]
fn run<K: Blocks>(k: &K) -> usize {
    for b in 0..k.count() {
        unsafe { k.block(b) };
    }
    k.count()
}

/// The blocks of `a` and `c`: block `b` of each in turn while both have one, then the rest of
/// either. Rows of a camera frame come from the L3 or DRAM; a pass over a row by a one-member
/// group alone (NV12's or YUY2's luma: a permute or two and a conversion a block) has little
/// work beside the loads that wait for them, and beside the other group's blocks it has more.
/// Element, `BENCH_INPUTS=camera`, one build with the pairing switched off and on, alternated
/// three times on a slower stretch of the machine, then twice on a faster one (ms a frame,
/// uint8, apart → side by side): NV12 1080p x8 0.184–0.189 → 0.174–0.182 and 0.164–0.167 →
/// 0.166–0.169, x32 0.189–0.198 → 0.179–0.180 and 0.166–0.174 → 0.164–0.174, YUY2 1080p x8
/// 0.185–0.191 → 0.186–0.190 and 0.174–0.178 → 0.168–0.173, x32 0.198–0.207 → 0.190–0.199 and
/// 0.179–0.184 → 0.171–0.174, the 900p rows level; float32 level or faster (NV12 x32
/// 0.338–0.379 → 0.309–0.343). At AVX2 the same pairing went from 5 % faster (YUY2) to 10 %
/// slower (NV12 900p), so that level keeps its groups apart.
#[cfg_attr(debug_assertions, inline(never))]
#[cfg_attr(not(debug_assertions), inline(always))]
fn run_pair<A: Blocks, C: Blocks>(a: &A, c: &C) -> (usize, usize) {
    let both = a.count().min(c.count());
    for b in 0..both {
        unsafe {
            a.block(b);
            c.block(b);
        }
    }
    for b in both..a.count() {
        unsafe { a.block(b) };
    }
    for b in both..c.count() {
        unsafe { c.block(b) };
    }
    (a.count(), c.count())
}

/// `RowsFirst`'s row weights as `pmaddubsw`'s word: the first row's byte of a pair (`128 -
/// half`), then the second's (`half`, the lower row's weight in 128ths; 0 where one row).
fn rows_first_word(half: u32) -> i16 {
    ((half << 8) | (128 - half.min(128))) as i16
}

/// The lower row's weight in 128ths where `RowsFirst` takes a row (else 0): two rows (a weight
/// strictly between 0 and 1, an even number of 256ths) and two taps across.
fn rows_first_weight(wy: f32, single: bool) -> u32 {
    match row_steps(wy) {
        Some(k) if !single && k.is_multiple_of(2) => k / 2,
        _ => 0,
    }
}

/// `plan::Windows` as the kernels' const parameter (and the finishes' that read blocks:
/// `LumaBlocks::shape`, `PixelBlocks::shape`).
pub(in super::super) const NARROW: u8 = 0;
pub(in super::super) const HALVES: u8 = 1;
pub(in super::super) const SPLIT: u8 = 2;

/// A plan's `SHAPE`.
fn window_shape(plan: &Permute) -> u8 {
    match plan.windows {
        Windows::Narrow => NARROW,
        Windows::Halves => HALVES,
        Windows::Split => SPLIT,
    }
}

/// The blocks a group's plan, weights and output rows hold (`per` windows a block, `pairs`
/// controls a block and member).
fn block_count<const M: usize>(row: &Row<'_>, width: usize) -> usize {
    let plan = row.plan;
    (plan.bases.len() / plan.windows.per_block())
        .min(row.wq.len() / 16)
        .min(plan.controls.len() / (2 * M))
        .min(width / 16)
}

/// One row's windows at block `b` (bases `per * b`, and `per * b + 1` for two per block):
/// `[first, _, _, _]` narrow, `[first half's, second half's, _, _]` halves, and split the two
/// 128-byte windows as `[first, first + 64, second, second + 64]`; where `ASK`, the row's lines
/// `ahead` bytes on asked for first, each distance that is not 0 (a row's one-row blocks pass
/// the second as a constant 0, so that its test goes). Asking for the first distance untested,
/// as `hint::block_asks` does for AVX2 and NEON, made YUY2's chroma blocks, whose lines the
/// luma's blocks ask for (`DirectRows::asked_already`: distance 0), ask for their own windows
/// (engine, alternated four times, tested -> untested: YUY2 hot 0.131-0.135 -> 0.139-0.141 ms,
/// NV12 hot 0.137 -> 0.139).
#[inline(always)]
unsafe fn windows<const SHAPE: u8, const ASK: bool>(
    row: &[u8],
    bases: &[u32],
    b: usize,
    ahead: [usize; 2],
) -> [__m512i; 4] {
    let per = if SHAPE == NARROW { 1 } else { 2 };
    unsafe {
        let at = |h: usize| *bases.get_unchecked(per * b + h) as usize;
        let (ba, bb) = (at(0), at(per - 1));
        for d in ahead {
            if !ASK || d == 0 {
                continue;
            }
            // Halves: the first window's two lines, where the second window mostly begins (a
            // hint: a line it misses is loaded as before).
            prefetch_window(&[row.as_ptr()], ba + d, SHAPE != NARROW);
            if SHAPE == SPLIT {
                prefetch_window(&[row.as_ptr()], bb + d, true);
            }
        }
        let load = |at: usize| _mm512_loadu_si512(row.as_ptr().add(at) as *const _);
        match SHAPE {
            NARROW => {
                let a = load(ba);
                [a; 4]
            }
            HALVES => {
                let (a, c) = (load(ba), load(bb));
                [a, c, a, c]
            }
            _ => [load(ba), load(ba + 64), load(bb), load(bb + 64)],
        }
    }
}

/// `masks` as values the compiler cannot see: with constant masks it turned the masked permutes
/// into unmasked ones and a `vpandq` or `vpternlogq` with a constant (one vector operation more
/// each, on the ports the permutes use).
#[inline(always)]
fn opaque<const SHAPE: u8, T>(masks: T) -> T {
    if SHAPE == SPLIT {
        masks
    } else {
        std::hint::black_box(masks)
    }
}

/// `into` with the bytes `bytes` replaced by `ctl`'s picks from one row's `windows`. A window
/// of 64 bytes is one `vpermb` (the index's bit 6 ignored), each half's under its half of the
/// mask; a split block's two 128-byte windows two masked `vpermt2b`.
#[inline(always)]
unsafe fn pick<const SHAPE: u8>(into: __m512i, w: &[__m512i; 4], ctl: __m512i, bytes: u64) -> __m512i {
    let (first, second) = (bytes & 0xffff_ffff, bytes & !0xffff_ffff);
    match SHAPE {
        NARROW => _mm512_mask_permutexvar_epi8(into, bytes, ctl, w[0]),
        HALVES => _mm512_mask_permutexvar_epi8(
            _mm512_mask_permutexvar_epi8(into, first, ctl, w[0]),
            second,
            ctl,
            w[1],
        ),
        _ => _mm512_or_si512(
            into,
            _mm512_or_si512(
                _mm512_maskz_permutex2var_epi8(first, w[0], ctl, w[1]),
                _mm512_maskz_permutex2var_epi8(second, w[2], ctl, w[3]),
            ),
        ),
    }
}

/// What every way of taking a row holds: the group's rows, the plan's tables (read through
/// `row`, they were reloaded at every block: the stores to the member rows might have changed
/// them), the first `M` members' output rows and the blocks there are.
#[derive(Clone, Copy)]
struct Rows<'a, const M: usize> {
    row: Row<'a>,
    bases: &'a [u32],
    controls: &'a [Aligned64<[u8; 64]>],
    rows: [*mut f32; M],
    count: usize,
}

impl<'a, const M: usize> Rows<'a, M> {
    #[inline(always)]
    fn new<const SHAPE: u8>(row: &Row<'a>, out: &mut [Lines<f32>; 4]) -> Self {
        assert!(row.g.members.len() >= M && (1..=4).contains(&M) && window_shape(row.plan) == SHAPE);
        let (rows, width) = row.g.member_rows::<M>(out);
        let plan = row.plan;
        Rows {
            row: *row,
            bases: plan.bases.as_slice(),
            controls: plan.controls.as_slice(),
            rows,
            count: block_count::<M>(row, width),
        }
    }
}

/// Two rows blended first: the two-tap control picks each output's two taps from each row,
/// paired (its bytes 1 and 3, `plan::Permute::controls`), one row's picks merged into the
/// other's (`pick`). One `pmaddubsw` blends the pairs by the row weights halved, `128 - half`
/// and `half` (even 256ths halve exactly, and a blended byte fits an i16), and one `pmaddwd`
/// the taps across. The sum is the same whole number of 2^-15ths as `Sampled`'s 2^-16ths
/// (`plan::WEIGHT_STEPS`: exact either way), so the floats are equal; a member's block takes 6
/// vector operations (narrow) where the columns-first order takes 8 (two picks, two `pmaddwd`,
/// two conversions and the blend down).
struct RowsFirst<'a, const SHAPE: u8, const M: usize> {
    at: Rows<'a, M>,
    /// The first row's byte of a pair, then the second's (`rows_first_word`).
    weights: __m512i,
    /// The pairs' first bytes, then their second.
    masks: (u64, u64),
}

impl<'a, const SHAPE: u8, const M: usize> RowsFirst<'a, SHAPE, M> {
    /// # Safety
    /// The CPU has AVX-512 F/BW.
    #[inline(always)]
    unsafe fn new(row: &Row<'a>, half: u32, out: &mut [Lines<f32>; 4]) -> Self {
        assert!((1..128).contains(&half));
        Self {
            at: Rows::new::<SHAPE>(row, out),
            weights: _mm512_set1_epi16(rows_first_word(half)),
            masks: opaque::<SHAPE, _>((0x5555_5555_5555_5555u64, 0xaaaa_aaaa_aaaa_aaaau64)),
        }
    }
}

impl<const SHAPE: u8, const M: usize> Blocks for RowsFirst<'_, SHAPE, M> {
    fn count(&self) -> usize {
        self.at.count
    }

    #[inline(always)]
    unsafe fn block(&self, b: usize) {
        let Rows { row: Row { r0, r1, wq, ahead, .. }, bases, controls, rows, .. } = self.at;
        let (top, bottom) = self.masks;
        unsafe {
            let w0 = windows::<SHAPE, true>(r0, bases, b, ahead);
            let w1 = windows::<SHAPE, false>(r1, bases, b, ahead);
            let wqv = _mm512_loadu_si512(wq.as_ptr().add(16 * b) as *const _);
            for j in 0..M {
                let ctl = _mm512_loadu_si512(controls.as_ptr().add((b * M + j) * 2 + 1) as *const _);
                let v = blend_first::<SHAPE>(&w0, &w1, ctl, (top, bottom), self.weights, wqv);
                _mm512_storeu_ps(rows[j].add(16 * b), v);
            }
        }
    }
}

/// Each member's output bytes picked (`pick`) into dwords, then converted (one tap: its byte)
/// or summed across (`pmaddwd`, two taps), and blended down two rows (`TWO`).
struct Sampled<'a, const SHAPE: u8, const M: usize, const SINGLE: bool, const TWO: bool> {
    at: Rows<'a, M>,
    wy: __m512,
    unit: __m512,
    /// Byte 0 of each dword, or bytes 0 and 2.
    keep: u64,
}

impl<'a, const SHAPE: u8, const M: usize, const SINGLE: bool, const TWO: bool>
    Sampled<'a, SHAPE, M, SINGLE, TWO>
{
    /// # Safety
    /// The CPU has AVX-512 F.
    #[inline(always)]
    unsafe fn new(row: &Row<'a>, out: &mut [Lines<f32>; 4]) -> Self {
        Self {
            at: Rows::new::<SHAPE>(row, out),
            wy: _mm512_set1_ps(row.wy),
            unit: _mm512_set1_ps(WEIGHT_UNIT),
            keep: opaque::<SHAPE, _>(if SINGLE { 0x1111_1111_1111_1111 } else { 0x5555_5555_5555_5555 }),
        }
    }
}

impl<const SHAPE: u8, const M: usize, const SINGLE: bool, const TWO: bool> Blocks
    for Sampled<'_, SHAPE, M, SINGLE, TWO>
{
    fn count(&self) -> usize {
        self.at.count
    }

    #[inline(always)]
    unsafe fn block(&self, b: usize) {
        let Rows { row: Row { r0, r1, wq, ahead, .. }, bases, controls, rows, .. } = self.at;
        let form = usize::from(!SINGLE);
        let zero = _mm512_setzero_si512();
        unsafe {
            let w0 = windows::<SHAPE, true>(r0, bases, b, if TWO { ahead } else { [ahead[0], 0] });
            let w1 = if TWO { windows::<SHAPE, false>(r1, bases, b, ahead) } else { w0 };
            let wqv = if SINGLE { zero } else { _mm512_loadu_si512(wq.as_ptr().add(16 * b) as *const _) };
            for j in 0..M {
                let ctl = _mm512_loadu_si512(controls.as_ptr().add((b * M + j) * 2 + form) as *const _);
                let top = taps::<SHAPE, SINGLE>(&w0, ctl, self.keep, wqv);
                let mut v = match TWO {
                    true => {
                        let bottom = taps::<SHAPE, SINGLE>(&w1, ctl, self.keep, wqv);
                        _mm512_fmadd_ps(self.wy, _mm512_sub_ps(bottom, top), top)
                    }
                    false => top,
                };
                if !SINGLE {
                    v = _mm512_mul_ps(v, self.unit);
                }
                _mm512_storeu_ps(rows[j].add(16 * b), v);
            }
        }
    }
}

/// A one-member group's one-row, one-tap blocks (the luma's, where the finish reads them itself:
/// `finish_luma`, `finish_yuv`), set up once a row: `value(b)` is block `b`'s sixteen bytes as
/// dwords. They ask for their row's lines where no other group on it does (`asks`).
#[derive(Clone, Copy)]
pub(in super::super) struct LumaBlocks<'a> {
    row: &'a [u8],
    bases: &'a [u32],
    controls: &'a [Aligned64<[u8; 64]>],
    ahead: usize,
    keep: u64,
    /// The blocks there are, and their shape (`NARROW` or `HALVES`).
    pub(in super::super) count: usize,
    pub(in super::super) shape: u8,
}

impl<'a> LumaBlocks<'a> {
    /// `row`'s blocks where the finish can take them: one member, taps on samples, one source
    /// row, windows narrow or halves.
    pub(in super::super) fn of(row: &Row<'a>, width: usize, asks: bool) -> Option<Self> {
        let ok = row.g.members.len() == 1
            && row.single
            && row.wy == 0.0
            && row.plan.windows != Windows::Split
            && row.plan.reach <= row.r0.len();
        ok.then(|| LumaBlocks {
            row: row.r0,
            bases: row.plan.bases.as_slice(),
            controls: row.plan.controls.as_slice(),
            ahead: if asks { row.ahead[0] } else { 0 },
            // Out of the compiler's sight once here (`opaque`'s reason), not in every block:
            // there it went through the stack into the mask register each block.
            keep: std::hint::black_box(0x1111_1111_1111_1111),
            count: block_count::<1>(row, width),
            shape: window_shape(row.plan),
        })
    }

    /// Block `b`'s values.
    ///
    /// # Safety
    /// `b < count`; `SHAPE` is `shape`; the CPU has AVX-512 F/BW/VBMI.
    #[inline(always)]
    pub(in super::super) unsafe fn value<const SHAPE: u8>(&self, b: usize) -> __m512i {
        unsafe {
            let w = windows::<SHAPE, true>(self.row, self.bases, b, [self.ahead, 0]);
            let ctl = _mm512_loadu_si512(self.controls.as_ptr().add(b * 2) as *const _);
            pick::<SHAPE>(_mm512_setzero_si512(), &w, ctl, self.keep)
        }
    }
}

/// An RGB source's one-row, one-tap blocks, picked straight in the output's channel order
/// (`Permute::pixel_picks`), where the float32 finish reads them itself (`finish_pixels`), set
/// up once a row: `values(b)` is block `b`'s 48 values as three vectors of dwords. They ask for
/// the row's lines as the group's own blocks would.
#[derive(Clone, Copy)]
pub(in super::super) struct PixelBlocks<'a> {
    row: &'a [u8],
    bases: &'a [u32],
    picks: &'a [Aligned64<[u8; 64]>],
    ahead: usize,
    /// The first vector's lanes (byte 0 of each dword) all from the first half's window, the
    /// second's eight and eight, the third's all from the second half's.
    masks: [(u64, u64); 3],
    /// The blocks there are, and their shape.
    pub(in super::super) count: usize,
    pub(in super::super) shape: u8,
}

impl<'a> PixelBlocks<'a> {
    /// `row`'s blocks where the finish can take them: taps on samples, one source row.
    pub(in super::super) fn of(
        row: &Row<'a>,
        picks: &'a [Aligned64<[u8; 64]>],
        width: usize,
    ) -> Option<Self> {
        let ok = row.single && row.wy == 0.0 && row.plan.reach <= row.r0.len();
        let (lo, hi) = (0x1111_1111u64, 0x1111_1111u64 << 32);
        ok.then(|| PixelBlocks {
            row: row.r0,
            bases: row.plan.bases.as_slice(),
            picks,
            ahead: row.ahead[0],
            masks: std::hint::black_box([(lo | hi, 0), (lo, hi), (0, lo | hi)]),
            count: (row.plan.bases.len() / row.plan.windows.per_block()).min(picks.len() / 3).min(width / 16),
            shape: window_shape(row.plan),
        })
    }

    /// Block `b`'s 48 values, in the output's order.
    ///
    /// # Safety
    /// `b < count`; `SHAPE` is `shape`; the CPU has AVX-512 F/BW/VBMI.
    #[inline(always)]
    pub(in super::super) unsafe fn values<const SHAPE: u8>(&self, b: usize) -> [__m512i; 3] {
        unsafe {
            let w = windows::<SHAPE, true>(self.row, self.bases, b, [self.ahead, 0]);
            let ctl = |v: usize| _mm512_loadu_si512(self.picks.as_ptr().add(3 * b + v) as *const _);
            let (c0, c1, c2) = (ctl(0), ctl(1), ctl(2));
            let [(a0, _), (a1, b1), (_, b2)] = self.masks;
            match SHAPE {
                NARROW => [
                    _mm512_maskz_permutexvar_epi8(a0, c0, w[0]),
                    _mm512_maskz_permutexvar_epi8(a1 | b1, c1, w[0]),
                    _mm512_maskz_permutexvar_epi8(b2, c2, w[0]),
                ],
                HALVES => [
                    _mm512_maskz_permutexvar_epi8(a0, c0, w[0]),
                    _mm512_mask_permutexvar_epi8(_mm512_maskz_permutexvar_epi8(a1, c1, w[0]), b1, c1, w[1]),
                    _mm512_maskz_permutexvar_epi8(b2, c2, w[1]),
                ],
                _ => [
                    _mm512_maskz_permutex2var_epi8(a0, w[0], c0, w[1]),
                    _mm512_or_si512(
                        _mm512_maskz_permutex2var_epi8(a1, w[0], c1, w[1]),
                        _mm512_maskz_permutex2var_epi8(b1, w[2], c1, w[3]),
                    ),
                    _mm512_maskz_permutex2var_epi8(b2, w[2], c2, w[3]),
                ],
            }
        }
    }
}

/// A two-member group's blocks (the chroma's, where the finish reads them itself beside the
/// luma's: `finish_yuv`), set up once a row: `values(b)` is block `b`'s U and V as the
/// sampling's blocks store them, from one source row (`Sampled`'s one-row blocks: YUY2) or two
/// blended first (`RowsFirst`: NV12). They ask for the rows' lines.
#[derive(Clone, Copy)]
pub(in super::super) struct ChromaBlocks<'a> {
    r0: &'a [u8],
    r1: &'a [u8],
    bases: &'a [u32],
    controls: &'a [Aligned64<[u8; 64]>],
    wq: &'a [u32],
    ahead: [usize; 2],
    keep: u64,
    /// `RowsFirst`'s two row weights as one word (`rows`). Scalars, not the vectors: the driver
    /// that sets this up a row is built for AVX2, so 512-bit broadcasts there were calls, and
    /// the struct's vectors, copied through the stack, stalled its loads on the stores just made
    /// (a sixth of the row driver's samples, NV12 and YUY2 bilinear at 3× on Zen 5).
    weights: i16,
    /// The blocks there are (the luma's, whose blocks the finish takes with them; their shape is
    /// the luma's), and how their rows are taken (`CHROMA_*`).
    pub(in super::super) count: usize,
    pub(in super::super) rows: u8,
}

/// `ChromaBlocks::rows`: one row, two taps or one a sample; two rows blended first.
pub(in super::super) const CHROMA_ONE: u8 = 0;
pub(in super::super) const CHROMA_SINGLE: u8 = 1;
pub(in super::super) const CHROMA_TWO: u8 = 2;

impl<'a> ChromaBlocks<'a> {
    /// `row`'s blocks where the finish can take them beside `luma`'s: two members, U and V (the
    /// finish's components 1 and 2), one source row or two that `RowsFirst` takes, windows of
    /// the luma's shape, as many blocks as the luma's or more.
    ///
    #[inline(always)]
    pub(in super::super) fn of(row: &Row<'a>, width: usize, luma: &LumaBlocks<'_>) -> Option<Self> {
        let g = row.g;
        let half = rows_first_weight(row.wy, row.single);
        let rows = match (row.wy == 0.0, row.single, half) {
            (true, true, _) => CHROMA_SINGLE,
            (true, false, _) => CHROMA_ONE,
            (false, _, 1..) => CHROMA_TWO,
            _ => return None,
        };
        let ok = g.members.len() == 2
            && (g.members[0].0, g.members[1].0) == (1, 2)
            && window_shape(row.plan) == luma.shape
            && row.plan.reach <= row.r0.len().min(row.r1.len())
            && block_count::<2>(row, width) >= luma.count;
        let keep = match rows {
            CHROMA_SINGLE => 0x1111_1111_1111_1111,
            _ => 0x5555_5555_5555_5555,
        };
        ok.then(|| ChromaBlocks {
            r0: row.r0,
            r1: row.r1,
            bases: row.plan.bases.as_slice(),
            controls: row.plan.controls.as_slice(),
            wq: row.wq,
            ahead: if rows == CHROMA_TWO { row.ahead } else { [row.ahead[0], 0] },
            keep: std::hint::black_box(keep),
            weights: rows_first_word(half),
            count: luma.count,
            rows,
        })
    }

    /// Block `b`'s U and V.
    ///
    /// # Safety
    /// `b < count`; `SHAPE` is the luma's shape and `ROWS` `rows`; the CPU has AVX-512
    /// F/BW/VBMI.
    #[inline(always)]
    pub(in super::super) unsafe fn values<const SHAPE: u8, const ROWS: u8>(&self, b: usize) -> [__m512; 2] {
        let form = usize::from(ROWS != CHROMA_SINGLE);
        unsafe {
            let zero = _mm512_setzero_si512();
            let w0 = windows::<SHAPE, true>(self.r0, self.bases, b, self.ahead);
            let wqv = match ROWS {
                CHROMA_SINGLE => zero,
                _ => _mm512_loadu_si512(self.wq.as_ptr().add(16 * b) as *const _),
            };
            let c0 = _mm512_loadu_si512(self.controls.as_ptr().add(4 * b + form) as *const _);
            let c1 = _mm512_loadu_si512(self.controls.as_ptr().add(4 * b + 2 + form) as *const _);
            match ROWS {
                CHROMA_TWO => {
                    let w1 = windows::<SHAPE, false>(self.r1, self.bases, b, self.ahead);
                    let (masks, weights) = ((self.keep, self.keep << 1), _mm512_set1_epi16(self.weights));
                    [
                        blend_first::<SHAPE>(&w0, &w1, c0, masks, weights, wqv),
                        blend_first::<SHAPE>(&w0, &w1, c1, masks, weights, wqv),
                    ]
                }
                CHROMA_SINGLE => [
                    taps::<SHAPE, true>(&w0, c0, self.keep, wqv),
                    taps::<SHAPE, true>(&w0, c1, self.keep, wqv),
                ],
                _ => {
                    // `Sampled`'s one-row blocks: the sums in the weights' unit.
                    let unit = _mm512_set1_ps(WEIGHT_UNIT);
                    let v0 = taps::<SHAPE, false>(&w0, c0, self.keep, wqv);
                    let v1 = taps::<SHAPE, false>(&w0, c1, self.keep, wqv);
                    [_mm512_mul_ps(v0, unit), _mm512_mul_ps(v1, unit)]
                }
            }
        }
    }
}

/// A member's two rows and two taps blended first (`RowsFirst`): each output's pairs picked
/// from the two rows' windows (`masks`: the first row's bytes, the second's), blended down by
/// the halved row weights (`pmaddubsw`), across by the taps' (`pmaddwd`), scaled.
#[inline(always)]
unsafe fn blend_first<const SHAPE: u8>(
    w0: &[__m512i; 4],
    w1: &[__m512i; 4],
    ctl: __m512i,
    (top, bottom): (u64, u64),
    weights: __m512i,
    wqv: __m512i,
) -> __m512 {
    unsafe {
        let pairs = pick::<SHAPE>(pick::<SHAPE>(_mm512_setzero_si512(), w0, ctl, top), w1, ctl, bottom);
        // The halved row weights make the sums 2^-15ths; at most 255 · 128 · 256, below 2^23:
        // `Scaled`'s range.
        Scaled::new(2.0 * WEIGHT_UNIT * WEIGHT_UNIT)
            .of(_mm512_madd_epi16(_mm512_maddubs_epi16(pairs, weights), wqv))
    }
}

/// A member's values from one row's windows (`Sampled`), before the weights' unit: its byte
/// (`SINGLE`), or its two taps summed by `wqv`.
#[inline(always)]
unsafe fn taps<const SHAPE: u8, const SINGLE: bool>(
    w: &[__m512i; 4],
    ctl: __m512i,
    keep: u64,
    wqv: __m512i,
) -> __m512 {
    unsafe {
        let t = pick::<SHAPE>(_mm512_setzero_si512(), w, ctl, keep);
        _mm512_cvtepi32_ps(if SINGLE { t } else { _mm512_madd_epi16(t, wqv) })
    }
}
