//! Which of this allocator's memories still hold a converter's letterbox padding (edgefirsttensor's
//! tensors, edgefirsttensorbatch's slots).
//!
//! A converter writes the same padding bytes around the picture every frame: a quarter of a
//! float32 letterbox frame's time and a tenth of a uint8 one's (docs/benchmark-log.md, twenty-seventh
//! session). A pool's tensor that comes back unwritten still holds them. So once a converter has
//! written all of a memory, the memory gets a mark (a qdata value naming the converter, the
//! memory's offset and size), and every map of the memory for writing drops it: the allocator's
//! map functions are wrapped, so a GStreamer write anywhere in the process (an in-place element,
//! an app's `map_writable`, `gst_buffer_memset`) is seen. A writer that bypasses GStreamer's maps —
//! an mmap of the fd in another process — is not: such a consumer must not write a tensor it was
//! lent, which holds for every fd shared read-only (`edgefirsttensorsrc`'s memories are
//! read-only for this reason).

use gst::ffi;
use gst::glib;
use gst::glib::translate::IntoGlib;
use gst::prelude::*;
use std::num::NonZeroUsize;
use std::sync::{LazyLock, OnceLock};

static QUARK: LazyLock<glib::Quark> = LazyLock::new(|| glib::Quark::from_str("edgefirst-padded-by"));

/// The parent class's map functions, which the wrappers call.
struct Parents {
    map: ffi::GstMemoryMapFunction,
    map_full: ffi::GstMemoryMapFullFunction,
}

static PARENTS: OnceLock<Parents> = OnceLock::new();

/// Wrap `allocator`'s map functions so that a write map drops the memory's mark. Returns whether
/// its writes are now watched: false where its functions are not the ones the first instance had
/// (nothing to chain to with certainty), and then no memory of it is ever marked.
///
/// # Safety
/// `allocator` is a live allocator of this plugin's type, not yet handing out memory.
pub(super) unsafe fn watch_writes(allocator: *mut ffi::GstAllocator) -> bool {
    let a = unsafe { &mut *allocator };
    // Compared as addresses: the functions themselves are only ever called.
    let addr = |m: ffi::GstMemoryMapFunction, f: ffi::GstMemoryMapFullFunction| {
        (m.map_or(0, |m| m as usize), f.map_or(0, |f| f as usize))
    };
    let found = addr(a.mem_map, a.mem_map_full);
    if found == (0, 0) || found.0 == map as *const () as usize || found.1 == map_full as *const () as usize {
        return found != (0, 0);
    }
    let parents = PARENTS.get_or_init(|| Parents { map: a.mem_map, map_full: a.mem_map_full });
    if addr(parents.map, parents.map_full) != found {
        return false;
    }
    if a.mem_map.is_some() {
        a.mem_map = Some(map);
    }
    if a.mem_map_full.is_some() {
        a.mem_map_full = Some(map_full);
    }
    true
}

unsafe extern "C" fn map(
    mem: *mut ffi::GstMemory,
    maxsize: usize,
    flags: ffi::GstMapFlags,
) -> glib::ffi::gpointer {
    if flags & ffi::GST_MAP_WRITE != 0 {
        unsafe { forget(mem) };
    }
    let parent = PARENTS.get().and_then(|p| p.map).expect("wrapped only over a parent function");
    unsafe { parent(mem, maxsize, flags) }
}

unsafe extern "C" fn map_full(
    mem: *mut ffi::GstMemory,
    info: *mut ffi::GstMapInfo,
    maxsize: usize,
) -> glib::ffi::gpointer {
    if unsafe { (*info).flags } & ffi::GST_MAP_WRITE != 0 {
        unsafe { forget(mem) };
    }
    let parent = PARENTS.get().and_then(|p| p.map_full).expect("wrapped only over a parent function");
    unsafe { parent(mem, info, maxsize) }
}

/// Drop the mark of `mem` and of every memory it shares bytes with (its parents).
unsafe fn forget(mut mem: *mut ffi::GstMemory) {
    while !mem.is_null() {
        unsafe {
            ffi::gst_mini_object_set_qdata(
                mem as *mut ffi::GstMiniObject,
                QUARK.into_glib(),
                std::ptr::null_mut(),
                None,
            );
            mem = (*mem).parent;
        }
    }
}

/// The mark `memory` gets once the writer `key` names (a `Converter::id`, or a batch's slots'
/// converters) has written all of it; `None` where its writes are not watched (another
/// allocator's memory, or an unwatched instance).
fn mark_for(memory: &gst::MemoryRef, key: u64) -> Option<NonZeroUsize> {
    let allocator = memory.allocator()?;
    let ours = allocator.downcast_ref::<super::DmaBufAllocator>()?;
    if !super::imp::watched(ours) {
        return None;
    }
    // A 64-bit mix of the three (splitmix64's finalizer): one value per writer and span, so a
    // memory resized or offset since is not taken for the one marked.
    let mut x = key
        ^ (memory.offset() as u64).rotate_left(21)
        ^ (memory.size() as u64).rotate_left(42)
        ^ 0x9e37_79b9_7f4a_7c15;
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    NonZeroUsize::new(x as usize).or(NonZeroUsize::new(1))
}

/// Whether `memory` holds `mark` (nobody has mapped it for writing since it was set).
fn is_marked(memory: &gst::MemoryRef, mark: NonZeroUsize) -> bool {
    let got = unsafe {
        ffi::gst_mini_object_get_qdata(memory.as_ptr() as *mut ffi::GstMiniObject, QUARK.into_glib())
    };
    got as usize == mark.get()
}

/// Mark `memory`: its writer has just written all of it and unmapped it.
fn set_mark(memory: &gst::MemoryRef, mark: NonZeroUsize) {
    // The value is the mark itself, not a pointer: nothing to free, nothing that could dangle.
    unsafe {
        ffi::gst_mini_object_set_qdata(
            memory.as_ptr() as *mut ffi::GstMiniObject,
            QUARK.into_glib(),
            mark.get() as glib::ffi::gpointer,
            None,
        )
    };
}

/// `write(bytes, kept)` over `buffer`'s bytes mapped for writing, then the mark of `key` set on its
/// memory. `kept` is true where the buffer is one memory of this allocator, its own, that holds
/// `key`'s mark: whoever wrote it last under `key` (a `Converter::id`, or a batch's slots) may
/// leave what is the same every time. Any other buffer is mapped as GStreamer maps it, with
/// `kept` false and no mark set. A `write` that fails leaves the memory unmarked.
pub(crate) fn write_marked<R, E>(
    buffer: &mut gst::BufferRef,
    key: u64,
    cannot_map: impl FnOnce() -> E,
    write: impl FnOnce(&mut [u8], bool) -> Result<R, E>,
) -> Result<R, E> {
    let mark = (buffer.n_memory() == 1).then(|| mark_for(buffer.peek_memory(0), key)).flatten();
    match mark.and_then(|mark| Some((mark, buffer.peek_memory_mut(0).ok()?))) {
        Some((mark, memory)) => {
            let kept = is_marked(memory, mark);
            // The map drops the mark (a write map); set again once the write is done.
            let done = {
                let Ok(mut map) = memory.map_writable() else { return Err(cannot_map()) };
                write(&mut map, kept)?
            };
            set_mark(memory, mark);
            Ok(done)
        }
        None => {
            let Ok(mut map) = buffer.map_writable() else { return Err(cannot_map()) };
            write(&mut map, false)
        }
    }
}
