//! `fill_span` at every level this CPU has.

use super::*;

/// Every period a pattern can have, from every alignment, over lengths around the block and
/// line sizes, at every level this CPU has: the bytes written are the pattern from phase 0,
/// and nothing past the span changes.
#[test]
fn fill_span_repeats_the_pattern_from_any_alignment() {
    let mut levels = vec![Simd::Baseline, Simd::Avx2, Simd::Avx512];
    #[cfg(target_arch = "aarch64")]
    levels.push(Simd::Neon);
    levels.retain(|l| *l <= Simd::detect());
    for period in [1, 2, 3, 4, 6, 8, 12, 16, 24, 32] {
        let unit: Vec<u8> = (1..=period as u8).collect();
        let pattern: [u8; PATTERN] = std::array::from_fn(|i| unit[i % period]);
        for &level in &levels {
            for offset in 0..64 {
                for len in [0, 1, 63, 64, 191, 192, 193, 255, 256, 450, 1000] {
                    let mut buf = vec![0xEEu8; 64 + 1100 + 64];
                    let base = buf.as_ptr().align_offset(64);
                    let at = base + offset;
                    unsafe { fill_span(level, &pattern, period, buf.as_mut_ptr().add(at), len) };
                    for (i, &b) in buf.iter().enumerate() {
                        let want = if (at..at + len).contains(&i) { unit[(i - at) % period] } else { 0xEE };
                        assert_eq!(b, want, "{level:?} period {period} offset {offset} len {len} byte {i}");
                    }
                }
            }
        }
    }
}
