//! The prefetch hint every level and the row driver ask for a later row's lines with. A hint
//! never faults and changes no byte of the result.

/// The line holding `p`, into the second-level cache (x86 T1): the kernels' own loads take it on
/// into the first. T1 measured level with T0 or better on every bilinear row (the note on the
/// driver's `Ahead`), and on the multi-tap filters (`area`, 32 rotating frames, NV12 / YUY2 /
/// RGBA: T0 0.491 / 0.655–0.674 / 1.06–1.11 ms, T1 0.477–0.480 / 0.638–0.639 / 1.05). (Not
/// measured on the AMD machine of docs/benchmark-log.md; aarch64 keeps `pldl1keep`, unmeasured.)
#[inline(always)]
pub(super) fn prefetch(p: *const u8) {
    ask::<T1>(p);
}

/// A row of 16-byte-window blocks' first asks (AVX2's and NEON's shuffle and rows-first blocks):
/// the row's first block's first window's line at each distance `ahead` (0: none), once before
/// the blocks; each block then asks for its last window's (`block_asks`; at AVX2 a run of blocks
/// at once, `run_asks`): eight outputs span 24 bytes at 3x, so the blocks before asked for a
/// block's first line. Asking for both windows' lines in every block cost NV12 at 3x 3-4 %
/// (Intel Xeon, engine, AVX2, one binary, both ways, three rounds: hot 0.234-0.239 ->
/// 0.228-0.230 ms, 8 rotating frames 0.241-0.249 -> 0.230-0.238); YUY2, RGBA and 1600x900 level.
#[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(dead_code))]
#[inline(always)]
pub(super) fn first_asks(r0: &[u8], first: u32, ahead: [usize; 2]) {
    for d in ahead.into_iter().filter(|&d| d != 0) {
        prefetch(r0.as_ptr().wrapping_add(first as usize + d));
    }
}

/// A block's asks (`first_asks`) for its last window's line (`last`: the window's first byte),
/// without a test a block where it can do without: the first distance as it is (where it is 0,
/// the line is the block's own, in the cache already), the second only where the block blends
/// two rows (`TWO`; one row's `ahead` has no second). With a test a distance in the loop
/// (engine, AVX2, NV12 at 3x, two builds alternated three or four times): hot 0.186-0.195 ->
/// 0.178-0.181 ms, 8 rotating frames 0.201-0.212 -> 0.190-0.191, 1600x900 0.216-0.220 ->
/// 0.198-0.200; YUY2 and RGBA level or a little faster. NEON, llvm-mca, cycles per 16 pixels
/// (a53 / a55 / neoverse-n1 / a76), from each block asking for its first window too, a test a
/// distance: NV12 sampling 546 / 382 / 71.3 / 138.6 -> 520 / 360 / 72.3 / 128.6, rows first
/// 476 / 332 / 55.3 / 104.6 -> 450 / 310 / 54.3 / 95.3, YUY2 460 / 312 / 47.3 / 112.5 -> 428 /
/// 296 / 44.7 / 102.6, RGBA 412 / 282 / 44.2 / 102.2 -> 396 / 274 / 44.2 / 98.2 (a board's
/// memory unmeasured).
#[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(dead_code))]
#[inline(always)]
pub(super) fn block_asks<const TWO: bool>(r0: &[u8], last: u32, ahead: [usize; 2]) {
    prefetch(r0.as_ptr().wrapping_add(last as usize + 15 + ahead[0]));
    if TWO && ahead[1] != 0 {
        prefetch(r0.as_ptr().wrapping_add(last as usize + 15 + ahead[1]));
    }
}

/// The blocks a run of `block_asks` covers at the AVX2 level (`run_asks`).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const ASK_RUN: usize = 4;

/// `block_asks` once for a run of `ASK_RUN` blocks, by its first (block `b` asks where it starts
/// a run, the others nothing): the two lines from that block's last window on. Eight outputs span 24 bytes at 3× (20 at 2.5×), so a run's windows end
/// within the two; asking a block for its own last line asked for each line 2.7 times. Intel
/// Xeon, engine, AVX2 level, two builds alternated four or five times: NV12 1080p on 8 frames
/// 0.169–0.173 → 0.166–0.171 ms, hot 0.166–0.170 → 0.164–0.165, RGBA 8 frames 0.257–0.259 →
/// 0.246–0.248; NV12 and YUY2 1600×900 and YUY2 1080p level. (A run of two asking one line, or
/// of eight asking three, measured the same within 2 %.) NEON keeps `block_asks` a block:
/// unmeasured on a board.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[inline(always)]
pub(super) fn run_asks<const TWO: bool>(r0: &[u8], b: usize, last: u32, ahead: [usize; 2]) {
    if b.is_multiple_of(ASK_RUN) {
        block_asks::<TWO>(r0, last, ahead);
        block_asks::<TWO>(r0, last + 64, ahead);
    }
}

/// x86's hints (`_MM_HINT_*`): into the first-level cache, the second, the third, or the first
/// without keeping the line in the others.
const T0: i32 = 3;
const T1: i32 = 2;
const T2: i32 = 1;
const NTA: i32 = 0;
#[cfg(target_arch = "x86_64")]
const _: () = assert!(
    T0 == std::arch::x86_64::_MM_HINT_T0
        && T1 == std::arch::x86_64::_MM_HINT_T1
        && T2 == std::arch::x86_64::_MM_HINT_T2
        && NTA == std::arch::x86_64::_MM_HINT_NTA
);

/// The line holding `p`, by x86 hint `H` (aarch64: `pldl1keep` for every hint, unmeasured).
#[inline(always)]
fn ask<const H: i32>(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<H>(p.cast());
    }
    #[cfg(target_arch = "aarch64")]
    unsafe {
        std::arch::asm!("prfm pldl1keep, [{0}]", in(reg) p, options(nostack, readonly, preserves_flags));
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let _ = p;
}

/// The line `at` bytes into each of `rows` and, `wide`, the one 64 bytes on, by hint `H`.
#[inline(always)]
fn ask_window<const H: i32>(rows: &[*const u8], at: usize, wide: bool) {
    for &r in rows {
        ask::<H>(r.wrapping_add(at));
        if wide {
            ask::<H>(r.wrapping_add(at + 64));
        }
    }
}

/// `prefetch_window` for PIL's whole blocks at AVX-512 (`avx512::whole_bytes`), which read
/// three rows at a time and keep nothing of them: into the first-level cache (x86 T0) where
/// `near` (`whole_near`), else `prefetch`'s T1. On Zen 5 T0 measured best (engine, uint8
/// `bilinear-antialias`, best of 80, alternated three times, NTA → T0: RGBA hot 0.310–0.313 →
/// 0.278–0.291 ms, 8 rotating frames 0.356–0.390 → 0.305–0.362, NV12 on 32 frames 0.205–0.212
/// → 0.197–0.200, the others level; T1 below T0); on the Intel Xeon T1 did (docs/benchmark-log.md,
/// "The whole blocks' asks on Intel"), and on Zen 4 (`whole_near`). The quad blocks measured
/// worse with T0 than with NTA (`area`, NV12 hot 0.119–0.121 → 0.131–0.137, YUY2 0.155–0.158 →
/// 0.171–0.180). (aarch64: `prefetch`'s `pldl1keep`.)
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[inline(always)]
pub(super) fn prefetch_window_near(rows: &[*const u8], at: usize, wide: bool, near: bool) {
    match near {
        true => ask_window::<T0>(rows, at, wide),
        false => ask_window::<T1>(rows, at, wide),
    }
}

/// Whether `prefetch_window_near` asks by T0: on Zen 5, where it measured best, and not on
/// Intel's cores or Zen 4, where T1 did (Zen 4, 2 vCPUs, 32 MiB L3: engine, uint8
/// `bilinear-antialias`, best of 200, alternated twice, T0 → T1: RGBA 8 rotating frames
/// 0.686–0.720 → 0.465–0.516 ms, 32 frames 0.745–0.768 → 0.476–0.483, hot 0.451–0.470 →
/// 0.418–0.435; NV12 32 frames 0.359–0.375 → 0.310–0.326, 8 frames and hot level).
/// `EDGEFIRST_CONVERT_NEAR=0` or `1` chooses either on any CPU (to compare them).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(super) fn whole_near() -> bool {
    static NEAR: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *NEAR.get_or_init(|| chosen_or("EDGEFIRST_CONVERT_NEAR", zen5))
}

/// How far past a float32 store the finish asks for the output's line (`prefetch_store`).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(super) const STORE_AHEAD: usize = 1024;

/// The output's line at `p`, into the first-level cache (x86 T0), for a finish that writes four
/// bytes a value: the float32 tensor of a YUV source (2.8 MB a 640×360 RGB picture, past the
/// 2 MiB second-level cache) is written a line at a time, and each store that misses waits for
/// its line to be read first. Planar (chw) too, a line of each plane: engine, 8 frames, one binary
/// both ways, NV12 0.261–0.266 → 0.253–0.255 ms, YUY2 0.270–0.274 → 0.256–0.258; AVX2 NV12
/// 0.316–0.333 → 0.283–0.290, YUY2 0.365–0.378 → 0.340–0.343. Interleaved, the element's rows on
/// the Intel Xeon went (`cargo bench`, three runs alternated, ms): NV12 8 camera frames
/// 0.200–0.219 → 0.189–0.209, 32 frames 0.313–0.337 → 0.269–0.307, 1600×900 0.213–0.232 →
/// 0.197–0.216; YUY2 0.208–0.237 → 0.199–0.223, 0.333–0.396 → 0.327–0.360, 0.247–0.296 →
/// 0.225–0.253. Not for RGBA sources, whose four-byte pixels keep more of the line-fill buffers
/// busy (the same runs: 0.237–0.268 → 0.250–0.276, 32 frames 0.448–0.462 → 0.474–0.525), nor for
/// uint8 (engine, NV12, 8 frames: 0.145–0.155 → 0.151–0.165), whose tensor stays in the caches.
/// The AVX2 level (engine, 8 frames, one binary both ways): NV12 0.308–0.314 → 0.298–0.312, YUY2
/// 0.361–0.368 → 0.344–0.345. `output_asked` says where it is asked for.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[inline(always)]
pub(super) fn prefetch_store(p: *const u8) {
    ask::<T0>(p);
}

/// Whether the finish asks for its float32 output's lines (`prefetch_store`): on Intel's cores,
/// where it was measured; `EDGEFIRST_CONVERT_STORE_ASKS=0` or `1` chooses on any CPU.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(super) fn output_asked() -> bool {
    static ASKED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ASKED.get_or_init(|| {
        chosen_or("EDGEFIRST_CONVERT_STORE_ASKS", || {
            cpu().is_some_and(|(vendor, _)| &vendor == b"GenuineIntel")
        })
    })
}

/// Whether `driver::ahead::prefetch_row_pages` asks for rows no wider than a page (NV12's
/// planes, YUY2): on AMD's cores before Zen 5, where the rows' last lines paid (Zen 4, the
/// thirtieth session: NV12 on 32 rotating frames 0.219–0.221 → 0.178–0.184 ms), not on Zen 5,
/// where NV12 was a tenth faster without them (engine, uint8 bilinear, AVX-512, best of 400, one
/// binary, equal-length variables, two rounds, with → without: 8 rotating frames 0.097–0.098 →
/// 0.087–0.088 ms, 32 frames 0.098–0.099 → 0.088–0.089, 1600×900 0.136–0.140 → 0.122–0.125;
/// YUY2 level), and not on Intel's, where
/// every NV12 row was faster without them (Intel Xeon, engine, uint8 bilinear, AVX-512, best of
/// 400, none / pages only / last lines only / both, one binary, three or four rounds: 8 rotating
/// frames 0.139–0.140 / 0.143–0.144 / 0.143–0.144 / 0.146, 32 frames 0.140–0.145 / 0.143–0.157 /
/// 0.146–0.152 / 0.154–0.178, 1600×900 0.151–0.153 / 0.161–0.168 / 0.159–0.161 / 0.163–0.165,
/// hot 0.137–0.138 / 0.138–0.139 / 0.138 / 0.141–0.142; YUY2 without / with, the switch below:
/// 8 frames 0.147–0.149 / 0.150–0.154, 1600×900 0.186–0.190 / 0.199–0.201). Wider rows
/// (RGBA's) keep their asks everywhere: on that Xeon, 8 rotating frames 0.170–0.171 without,
/// 0.163–0.164 with pages (1600×900 the other way, 0.222 against 0.229).
/// `EDGEFIRST_CONVERT_ROW_ASKS=0` or `1` chooses either on any CPU (to compare them).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(super) fn narrow_rows_asked() -> bool {
    static NARROW: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *NARROW.get_or_init(|| {
        chosen_or("EDGEFIRST_CONVERT_ROW_ASKS", || {
            !cfg!(target_arch = "x86_64")
                || cpu().is_some_and(|(vendor, _)| &vendor == b"AuthenticAMD") && !zen5()
        })
    })
}

/// Whether AVX-512 samples a two-group source's luma and chroma blocks in one loop
/// (`avx512::sample_pair`, where the finish does not read them itself): on every core but
/// Zen 5, where the groups one after the other measured faster (engine, uint8 bilinear, best of
/// 400, one binary, equal-length variables, three rounds, paired → apart: NV12 1600×900 on 8
/// rotating frames 0.133–0.135 → 0.124–0.125 ms, YUY2 1600×900 0.153–0.156 → 0.142–0.144; NV12
/// float32 1600×900 0.152–0.153 → 0.128 with the row asks off too). It was chosen on the Intel
/// Xeon (0–5 % in the element). `EDGEFIRST_CONVERT_PAIR=0` or `1` chooses either on any CPU.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(super) fn blocks_paired() -> bool {
    static PAIRED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *PAIRED.get_or_init(|| chosen_or("EDGEFIRST_CONVERT_PAIR", || !zen5()))
}

/// Whether AVX-512's finish of PIL's bytes blended down first asks for some of a later row's
/// lines (`multitap::FINISH_ASKED_ROWS`): on every core, measured on Zen 5 alone.
/// `EDGEFIRST_CONVERT_FINISH_ASKS=0` or `1` chooses on any CPU.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(super) fn finish_asks() -> bool {
    static ASKS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ASKS.get_or_init(|| chosen_or("EDGEFIRST_CONVERT_FINISH_ASKS", || true))
}

/// `0` or `1` in environment variable `var`, else `otherwise()` (the CPU's own choice).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn chosen_or(var: &str, otherwise: impl FnOnce() -> bool) -> bool {
    match std::env::var(var).as_deref() {
        Ok("0") => false,
        Ok("1") => true,
        _ => otherwise(),
    }
}

/// `prefetch_window` for a kernel that reads the lines once: x86 NTA (into the first-level
/// cache, not kept in the others) where `once_by_nta` says so, else `prefetch`'s T1. The quad
/// blocks, which sum a frame's row once, measured better with NTA than with T1 on Zen 5
/// (`avx512::box_quads`); the packing of YUY2's rows did not (`bilinear-antialias` on 8
/// rotating frames 0.351–0.376 → 0.366–0.406 ms), nor with `prefetch_window_near`'s T0
/// (0.331–0.367 → 0.368–0.401). (aarch64: `prefetch`'s `pldl1keep`, unmeasured.)
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[inline(always)]
pub(super) fn prefetch_window_once(rows: &[*const u8], at: usize, wide: bool, nta: bool) {
    match nta {
        true => ask_window::<NTA>(rows, at, wide),
        false => ask_window::<T1>(rows, at, wide),
    }
}

/// Whether `prefetch_window_once` asks by NTA: on Zen 5, where it measured best, and not on
/// Intel's cores, where it made every `area` frame three times slower, nor on Zen 4. Engine,
/// uint8 `area` at AVX-512 with VNNI, Intel Xeon (family 6, AVX-512 FP16 and AMX: a Sapphire
/// Rapids class server core), best of 60, twice each, NTA → T1 (T0 and T2 within 5 % of T1):
/// NV12 hot 0.824–0.827 → 0.238–0.240 ms, 32 rotating frames 0.887–0.913 → 0.386–0.388; YUY2
/// hot 0.911 → 0.296, on 32 1.08–1.10 → 0.48–0.50; RGBA hot 1.45–1.47 → 0.37–0.38, on 32
/// 1.83–1.88 → 0.68–0.70. Hot frames there were as slow as frames from DRAM: the lines an NTA
/// hint brings are the first to go, from the first-level cache only, and the quad blocks ask a
/// whole row ahead of their loads (the likely reason; not measured further). Zen 4 (best of
/// 200, alternated twice, NTA → T1): NV12 hot 0.204 → 0.189–0.191, 32 frames 0.344–0.347 →
/// 0.206–0.214; YUY2 hot 0.261–0.264 → 0.231–0.232, 32 frames 0.397–0.400 → 0.270–0.272; RGBA
/// hot 0.267–0.269 → 0.235–0.238, 8 frames 0.553–0.602 → 0.287–0.294, 32 frames 0.612–0.616 →
/// 0.388–0.403. `EDGEFIRST_CONVERT_NTA=0` or `1` chooses either on any CPU (to compare them).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(super) fn once_by_nta() -> bool {
    static NTA_ONCE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *NTA_ONCE.get_or_init(|| chosen_or("EDGEFIRST_CONVERT_NTA", zen5))
}

/// The CPU is AMD's (`AuthenticAMD`, CPUID leaf 0) of family 26 (leaf 1's base family 15 plus
/// its extended family 11): Zen 5, the one core the T0 and NTA hints measured best on. Zen 4
/// (family 25) and Intel's cores measured better with T1.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn zen5() -> bool {
    cpu().is_some_and(|(vendor, family)| &vendor == b"AuthenticAMD" && family == 26)
}

/// The CPU's vendor string and family (CPUID leaves 0 and 1, as Linux's /proc/cpuinfo reports
/// them); `None` off x86_64.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn cpu() -> Option<([u8; 12], u32)> {
    #[cfg(target_arch = "x86_64")]
    {
        #[allow(unused_unsafe)]
        let (id, one) = unsafe { (std::arch::x86_64::__cpuid(0), std::arch::x86_64::__cpuid(1)) };
        let mut vendor = [0u8; 12];
        for (part, r) in vendor.chunks_exact_mut(4).zip([id.ebx, id.edx, id.ecx]) {
            part.copy_from_slice(&r.to_le_bytes());
        }
        let base = (one.eax >> 8) & 0xf;
        let family = if base == 0xf { base + ((one.eax >> 20) & 0xff) } else { base };
        Some((vendor, family))
    }
    #[cfg(not(target_arch = "x86_64"))]
    None
}

/// Every line of bytes `first..=last` from `p` (the last one even where the span is not a whole
/// number of lines from `first`): a block's taps at the distance of a later row.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[inline(always)]
pub(super) fn prefetch_span(p: *const u8, first: usize, last: usize) {
    let mut at = first;
    while at <= last {
        prefetch(p.wrapping_add(at));
        at += 64;
    }
    prefetch(p.wrapping_add(last));
}

/// The bytes of a page: the span one page-table walk translates, on a frame's first touch of it.
pub(super) const PAGE: usize = 4096;

/// The offsets from address `p` of one byte in every 4 KiB page that bytes `from..to` lie in:
/// `from`, then each page's first byte after it (none where the span is empty).
pub(super) fn page_starts(p: usize, from: usize, to: usize) -> impl Iterator<Item = usize> {
    let next = ((p.wrapping_add(from)) | (PAGE - 1)).wrapping_add(1).wrapping_sub(p);
    (from < to).then_some(from).into_iter().chain((next..to).step_by(PAGE))
}

/// A line in every page of bytes `from..to` from `p` (`page_starts`), well before the kernels
/// read them. A camera frame lives in 4 KiB pages (a V4L2 or memfd buffer, mapped page by page),
/// and a page's first touch waits for the page-table walk: where that touch is a kernel's load
/// or its ask among the loads, the core stalls with the loop's work queued behind it. Measured
/// (engine, uint8, AVX-512, AMD EPYC Zen 4, 8 rotating 1080p frames): the same frames on 2 MiB
/// pages (THP, for the measurement only) took RGBA `bilinear-antialias` 0.503 → 0.404 ms and
/// NV12 bilinear 0.176 → 0.165; asking for a line of each page of every frame at its start
/// moved the walks rather than overlapping them (NV12 0.169 → 0.184). Asked for row by row, a
/// few rows ahead, between the kernels: `driver::ahead`'s figures.
#[inline(always)]
pub(super) fn prefetch_pages(p: *const u8, from: usize, to: usize) {
    for at in page_starts(p as usize, from, to) {
        prefetch(p.wrapping_add(at));
    }
}

/// The line `at` bytes into each of `rows` and, `wide`, the one 64 bytes on: a kernel's window
/// of 64 or 128 bytes, at the distance of a later row. (`wrapping_add`: the address is a hint's,
/// never read.)
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[inline(always)]
pub(super) fn prefetch_window(rows: &[*const u8], at: usize, wide: bool) {
    ask_window::<T1>(rows, at, wide);
}

/// Lines of a later output row's source rows, asked for a few at a time through the steps of a
/// kernel that loads nothing from the frame (an exact box's blocks over its sums, PIL's vertical
/// pass over its byte ring). Asked for only among the loads of the passes that read the frame,
/// the next rows' lines left memory idle while the rest of the row ran: on 8 rotating 1080p
/// frames (engine, uint8, AVX-512, Zen 4) `area` spent 1.1 M TSC cycles a frame in its vertical
/// sums with 0.6 M in its blocks, and the sums fell to 0.67 M with the blocks asking too.
/// On x86 the hint is T2, not the T1 of `prefetch`: with T1, PIL's vertical pass asking made a hot
/// 1080p NV12 `bilinear-antialias` frame 0.322 → 0.354 ms (a frame in L3; the asked lines
/// crowded out the ring and the horizontal pass's tables, is the likely reason, not measured);
/// with T2 0.333 → 0.332, and 8 rotating frames 0.441 → 0.370 (T1: 0.389). An exact box's
/// blocks measured the same with either. A hint never faults, so the span is only an address
/// range (`wrapping_add`).
#[derive(Clone, Copy)]
pub(super) struct Trickle {
    at: *const u8,
    // u32: the divisions below run per kernel call (about a thousand a frame).
    lines: u32,
}

impl Trickle {
    /// Nothing to ask for.
    pub(super) const NONE: Trickle = Trickle { at: std::ptr::null(), lines: 0 };

    /// The lines of `bytes[span]` (clamped to `bytes`).
    pub(super) fn over(bytes: &[u8], span: std::ops::Range<usize>) -> Trickle {
        let end = span.end.min(bytes.len());
        match span.start < end {
            true => Trickle {
                at: bytes.as_ptr().wrapping_add(span.start),
                lines: u32::try_from((end - span.start).div_ceil(64)).unwrap_or(u32::MAX),
            },
            false => Trickle::NONE,
        }
    }

    /// Part `i` of `parts` equal parts (whole lines; the last may be shorter or empty).
    #[inline(always)]
    pub(super) fn part(self, (i, parts): (u32, u32)) -> Trickle {
        if parts <= 1 {
            return self;
        }
        let each = self.lines.div_ceil(parts);
        let first = i.saturating_mul(each).min(self.lines);
        let lines = each.min(self.lines - first);
        Trickle { at: self.at.wrapping_add(64 * first as usize), lines }
    }

    /// Whether there is nothing to ask for: kernels then run a loop without the asking, whose
    /// code alone (never run) cost AVX2's NV12 `area` 7 % (0.366 → 0.393 ms hot, 0.403 → 0.430
    /// on 8 rotating frames).
    #[inline(always)]
    pub(super) fn is_empty(&self) -> bool {
        self.lines == 0
    }

    /// Lines a step that ask for them all in `steps` steps.
    #[inline(always)]
    pub(super) fn pace(&self, steps: usize) -> u32 {
        match self.lines {
            0 => 0,
            lines => lines.div_ceil(u32::try_from(steps).unwrap_or(u32::MAX).max(1)),
        }
    }

    /// The next `n` lines (fewer where fewer are left).
    #[inline(always)]
    pub(super) fn ask(&mut self, n: u32) {
        self.ask_by::<T2>(n);
    }

    /// `ask` by T1: a finish's blocks (`avx512::finish_yuv_bytes`) asking for a later row's
    /// source rows (`multitap::FINISH_ASKED_ROWS`). Against T2 (engine, 1080p YUY2 → 640 uint8
    /// `bilinear-antialias`, AVX-512, Zen 5, one binary, three rounds): 32 rotating frames
    /// 0.231–0.241 → 0.216–0.226 ms, 8 frames level (0.177–0.190 against 0.177–0.187).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    #[inline(always)]
    pub(super) fn ask_l2(&mut self, n: u32) {
        self.ask_by::<T1>(n);
    }

    /// The next `n` lines by hint `H`.
    #[inline(always)]
    fn ask_by<const H: i32>(&mut self, n: u32) {
        let n = n.min(self.lines);
        for _ in 0..n {
            ask::<H>(self.at);
            self.at = self.at.wrapping_add(64);
        }
        self.lines -= n;
    }

    /// Lines not yet asked for.
    #[cfg(test)]
    pub(super) fn left(&self) -> usize {
        self.lines as usize
    }
}

#[cfg(test)]
mod tests {
    use super::Trickle;

    /// The vendor and family the hints go by are the ones the kernel reports for every CPU
    /// (Linux's /proc/cpuinfo `vendor_id` and `cpu family`), and each hint follows them (T0 and
    /// NTA on Zen 5 alone, the narrow rows' asks on AMD before Zen 5, the paired blocks off Zen
    /// 5, the finish's asks everywhere) unless its variable chooses.
    #[test]
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    fn hints_follow_the_vendor_and_family() {
        let info = std::fs::read_to_string("/proc/cpuinfo").expect("/proc/cpuinfo");
        let field = |name: &str| -> std::collections::BTreeSet<String> {
            info.lines()
                .filter_map(|l| l.strip_prefix(name))
                .map(|l| l.trim_start_matches([' ', '\t', ':']).trim().to_string())
                .collect()
        };
        let (vendors, families) = (field("vendor_id"), field("cpu family"));
        assert_eq!((vendors.len(), families.len()), (1, 1), "one CPU kind: {vendors:?} {families:?}");
        let vendor = vendors.first().unwrap().as_str();
        let family: u32 = families.first().unwrap().parse().expect("a family number");
        let (id, fam) = super::cpu().expect("x86_64");
        assert_eq!((std::str::from_utf8(&id).unwrap(), fam), (vendor, family));
        let zen5 = vendor == "AuthenticAMD" && family == 26;
        assert_eq!(super::zen5(), zen5, "vendor {vendor}, family {family}");
        // T0 and NTA on Zen 5 alone; the NV12 and YUY2 rows' asks on AMD's cores before Zen 5;
        // the paired blocks off Zen 5.
        let amd = vendor == "AuthenticAMD";
        for (var, hint, otherwise) in [
            ("EDGEFIRST_CONVERT_NTA", super::once_by_nta(), zen5),
            ("EDGEFIRST_CONVERT_NEAR", super::whole_near(), zen5),
            ("EDGEFIRST_CONVERT_ROW_ASKS", super::narrow_rows_asked(), amd && !zen5),
            ("EDGEFIRST_CONVERT_PAIR", super::blocks_paired(), !zen5),
            ("EDGEFIRST_CONVERT_FINISH_ASKS", super::finish_asks(), true),
        ] {
            let chosen = std::env::var(var).ok();
            let want = match chosen.as_deref() {
                Some("0") => false,
                Some("1") => true,
                _ => otherwise,
            };
            assert_eq!(hint, want, "vendor {vendor}, family {family}, {var} {chosen:?}");
        }
    }

    /// One offset in every 4 KiB page a span touches, each page once, in order: spans inside a
    /// page, across page starts, from a page start, empty, from an unaligned base.
    #[test]
    fn page_starts_touch_every_page_of_a_span_once() {
        for base in [0usize, 4096, 4096 * 7 + 100, 123_456_789] {
            for (from, to) in
                [(0, 1), (10, 4000), (0, 8192), (5000, 20_000), (4096, 4097), (77, 77), (900, 9)]
            {
                let got: Vec<usize> = super::page_starts(base, from, to).collect();
                let mut want: Vec<usize> = (from..to).map(|o| (base + o) / 4096).collect();
                want.dedup();
                let touched: Vec<usize> = got.iter().map(|&o| (base + o) / 4096).collect();
                assert_eq!(touched, want, "base {base}, {from}..{to}: {got:?}");
                assert!(got.iter().all(|&o| (from..to).contains(&o)), "base {base}, {from}..{to}: {got:?}");
            }
        }
    }

    /// The parts of a span cover each of its lines once, and pacing asks for all of them in the
    /// steps given, by either hint.
    #[test]
    fn trickle_parts_cover_the_span_once() {
        let bytes = vec![0u8; 64 * 100 + 17];
        for (start, end, parts) in
            [(0, 64 * 100 + 17, 3), (64, 640, 2), (5, 70, 4), (100, 100, 2), (0, 9999, 1)]
        {
            let t = Trickle::over(&bytes, start..end);
            let end = end.min(bytes.len());
            let want = if start < end { (end - start).div_ceil(64) } else { 0 };
            assert_eq!(t.left(), want, "{start}..{end}");
            let mut next = t.at;
            let mut total = 0;
            for i in 0..parts {
                let p = t.part((i as u32, parts as u32));
                if p.left() > 0 {
                    assert_eq!(p.at, next, "part {i} starts where part {} ended", i.max(1) - 1);
                }
                next = p.at.wrapping_add(64 * p.left());
                total += p.left();
                for steps in [1, 3, 7, 160] {
                    // By T2 (`ask`) and by T1 (`ask_l2`, the finish's).
                    let (mut q, mut l2) = (p, p);
                    let per = q.pace(steps);
                    for _ in 0..steps {
                        q.ask(per);
                        l2.ask_l2(per);
                    }
                    assert_eq!((q.left(), l2.left()), (0, 0), "{steps} steps of {per} ask for part {i}");
                    assert_eq!(l2.at, q.at, "both asked for the same lines");
                }
            }
            assert_eq!(total, want);
        }
    }
}
