//! The prefetch hint every level and the row driver ask for a later row's lines with. A hint
//! never faults and changes no byte of the result.

/// The line holding `p`, into the second-level cache (x86 T1): the kernels' own loads take it on
/// into the first. T1 measured level with T0 or better on every bilinear row (the note on the
/// driver's `Ahead`), and on the multi-tap filters (`area`, 32 rotating frames, NV12 / YUY2 /
/// RGBA: T0 0.491 / 0.655–0.674 / 1.06–1.11 ms, T1 0.477–0.480 / 0.638–0.639 / 1.05). (Not
/// measured on the AMD machine of docs/benchmarks.md; aarch64 keeps `pldl1keep`, unmeasured.)
#[inline(always)]
pub(super) fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T1 }>(p.cast());
    }
    #[cfg(target_arch = "aarch64")]
    unsafe {
        std::arch::asm!("prfm pldl1keep, [{0}]", in(reg) p, options(nostack, readonly, preserves_flags));
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let _ = p;
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

/// The line `at` bytes into each of `rows` and, `wide`, the one 64 bytes on: a kernel's window
/// of 64 or 128 bytes, at the distance of a later row. (`wrapping_add`: the address is a hint's,
/// never read.)
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[inline(always)]
pub(super) fn prefetch_window(rows: &[*const u8], at: usize, wide: bool) {
    for &r in rows {
        prefetch(r.wrapping_add(at));
        if wide {
            prefetch(r.wrapping_add(at + 64));
        }
    }
}
