//! Scratch rows that start on a 64-byte line. The kernels load and store the rows between the
//! passes (component rows, the multi-tap rings) 32 and 64 bytes at a time; from a `Vec`, whose
//! allocation glibc aligns to 16 bytes, every 64-byte access crossed two lines. Engine, uint8,
//! AVX-512 (AMD EPYC Zen 4), 1080p → 640, best of 5–6 alternations, `Vec` → lines: NV12 bilinear
//! 0.167 → 0.164 ms, bilinear-antialias 0.374 → 0.370, area 0.257 either way; YUY2 antialias
//! 0.550 → 0.541, area 0.336 → 0.328; RGBA antialias 0.537 → 0.522, area 0.477 → 0.458.

use std::alloc::{alloc_zeroed, dealloc, handle_alloc_error, Layout};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// The alignment and the granule of a row's allocation.
const LINE: usize = 64;

/// Element types whose all-zero bytes are a value (a row starts zeroed).
pub(super) trait Zeroed: Copy {}
impl Zeroed for u8 {}
impl Zeroed for u16 {}
impl Zeroed for i32 {}
impl Zeroed for f32 {}

/// A fixed-length row of `T` whose first element starts a 64-byte line; its allocation ends on
/// a line too. Dereferences to its slice.
pub(super) struct Lines<T: Zeroed> {
    ptr: NonNull<T>,
    len: usize,
}

// A `Lines` owns its elements as a `Box<[T]>` would.
unsafe impl<T: Zeroed + Send> Send for Lines<T> {}
unsafe impl<T: Zeroed + Sync> Sync for Lines<T> {}

impl<T: Zeroed> Lines<T> {
    /// `len` zeroed elements.
    pub(super) fn zeroed(len: usize) -> Self {
        let Some(layout) = Self::layout(len) else { return Self { ptr: NonNull::dangling(), len } };
        // The layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) } as *mut T;
        match NonNull::new(ptr) {
            Some(ptr) => Self { ptr, len },
            None => handle_alloc_error(layout),
        }
    }

    /// The allocation of `len` elements, `None` where it holds no bytes.
    fn layout(len: usize) -> Option<Layout> {
        let bytes = len.checked_mul(size_of::<T>()).expect("a scratch row's size fits usize");
        (bytes != 0).then(|| {
            Layout::from_size_align(bytes.next_multiple_of(LINE), LINE).expect("a scratch row's layout")
        })
    }
}

impl<T: Zeroed> Drop for Lines<T> {
    fn drop(&mut self) {
        if let Some(layout) = Self::layout(self.len) {
            // Allocated in `zeroed` with this layout.
            unsafe { dealloc(self.ptr.as_ptr() as *mut u8, layout) };
        }
    }
}

impl<T: Zeroed> Default for Lines<T> {
    fn default() -> Self {
        Self::zeroed(0)
    }
}

impl<T: Zeroed> Deref for Lines<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // `len` initialized elements (zeroed, then written through `deref_mut`), or none.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Zeroed> DerefMut for Lines<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check<T: Zeroed + PartialEq + std::fmt::Debug>(one: T) {
        for len in [0, 1, 15, 16, 17, 63, 64, 65, 640, 1921] {
            let mut row = Lines::<T>::zeroed(len);
            assert_eq!(row.len(), len);
            if len != 0 {
                assert_eq!(row.as_ptr() as usize % LINE, 0, "{len} elements start a line");
            }
            assert!(row.iter().all(|v| *v == unsafe { std::mem::zeroed::<T>() }), "{len} zeroed");
            row.iter_mut().for_each(|v| *v = one);
            assert!(row.iter().all(|v| *v == one));
        }
    }

    /// Every element type the scratch uses: aligned, zeroed, writable over its whole length, and
    /// freed (the test runs under ASan in the test command).
    #[test]
    fn rows_start_a_line_zeroed() {
        check(7u8);
        check(700u16);
        check(-7i32);
        check(0.5f32);
        assert!(Lines::<f32>::default().is_empty());
    }
}
