use super::CpuAccessMode;
use gst::glib;
use gst::glib::translate::{IntoGlib, IntoGlibPtr};
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_allocators::prelude::*;
use gst_allocators::subclass::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, Mutex};

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "edgefirstdmabuf",
        gst::DebugColorFlags::empty(),
        Some("EdgeFirst DMA-BUF allocator"),
    )
});

static HEAP_QUARK: LazyLock<glib::Quark> = LazyLock::new(|| glib::Quark::from_str("edgefirst-heap"));

#[derive(Default)]
pub struct DmaBufAllocator {
    cpu_access: Mutex<CpuAccessMode>,
    /// Its map functions drop a memory's padding mark on a write (`padding::watch_writes`).
    watched: AtomicBool,
}

#[glib::object_subclass]
impl ObjectSubclass for DmaBufAllocator {
    const NAME: &'static str = "GstEdgeFirstDmaBufAllocator";
    type Type = super::DmaBufAllocator;
    type ParentType = gst_allocators::DmaBufAllocator;
}

impl ObjectImpl for DmaBufAllocator {
    fn constructed(&self) {
        self.parent_constructed();
        let raw = self.obj().as_ptr() as *mut gst::ffi::GstAllocator;
        // The parent's instance init has set the map functions; no memory exists yet.
        let watched = unsafe { super::padding::watch_writes(raw) };
        self.watched.store(watched, Ordering::Release);
    }

    fn properties() -> &'static [glib::ParamSpec] {
        static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            vec![glib::ParamSpecEnum::builder_with_default("cpu-access", CpuAccessMode::ReadWrite)
                .nick("CPU access")
                .blurb("What the CPU does with the buffers: none and write pick the uncached CMA heap where one exists")
                .construct()
                .build()]
        });
        PROPS.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        if pspec.name() == "cpu-access" {
            *self.cpu_access.lock().unwrap() = value.get().expect("type checked upstream");
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        match pspec.name() {
            "cpu-access" => self.cpu_access.lock().unwrap().to_value(),
            other => unreachable!("no property {other}"),
        }
    }
}

impl GstObjectImpl for DmaBufAllocator {}

// Safety: alloc returns either null or a GstMemory made by our parent class (gst_dmabuf_allocator_alloc)
// and owned by the caller; free is the parent's.
unsafe impl AllocatorImpl for DmaBufAllocator {
    unsafe fn alloc(&self, size: usize, params: &gst::AllocationParams) -> *mut gst::ffi::GstMemory {
        let access = (*self.cpu_access.lock().unwrap()).into();
        let total = params.prefix() + size + params.padding();
        let raw = match edgefirst_tensor::allocate_fd(total, access, None) {
            Ok(raw) => raw,
            Err(e) => {
                gst::error!(CAT, imp = self, "cannot allocate {total} bytes: {e}");
                return std::ptr::null_mut();
            }
        };
        let source = raw.source;
        // Kept mapped: an fd memory is otherwise munmapped after every map, and mapping a
        // multi-megabyte tensor again faults in every page each frame.
        let fd = std::os::fd::IntoRawFd::into_raw_fd(raw.fd);
        let mut mem = match unsafe {
            self.obj().alloc_dmabuf_with_flags(fd, total, gst_allocators::FdMemoryFlags::KEEP_MAPPED)
        } {
            Ok(mem) => mem,
            Err(e) => {
                gst::error!(CAT, imp = self, "cannot wrap a {source} fd of {total} bytes: {e}");
                // Not taken over by a memory, so still ours to close.
                unsafe { libc::close(fd) };
                return std::ptr::null_mut();
            }
        };
        {
            let m = mem.get_mut().expect("a fresh memory has one reference");
            if params.prefix() != 0 || params.padding() != 0 {
                m.resize(params.prefix()..params.prefix() + size);
            }
            // The qdata is a small integer (index + 1 into HEAPS), not a pointer: nothing to free
            // when the memory goes, and nothing that could dangle.
            let tag = HEAPS.iter().position(|h| *h == source).map_or(0, |i| i + 1);
            unsafe {
                gst::ffi::gst_mini_object_set_qdata(
                    m.as_mut_ptr() as *mut gst::ffi::GstMiniObject,
                    HEAP_QUARK.into_glib(),
                    tag as glib::ffi::gpointer,
                    None,
                );
            }
        }
        gst::debug!(CAT, imp = self, "{total} bytes from {source}");
        mem.into_glib_ptr()
    }
}

impl FdAllocatorImpl for DmaBufAllocator {}
impl DmaBufAllocatorImpl for DmaBufAllocator {}

/// The heap names the tensor crate reports.
const HEAPS: [&str; 4] = ["linux,cma-uncached", "linux,cma", "system", "memfd"];

pub(super) fn heap_of(memory: &gst::MemoryRef) -> Option<&'static str> {
    if !memory.allocator()?.is::<super::DmaBufAllocator>() {
        return None;
    }
    let tag = unsafe {
        gst::ffi::gst_mini_object_get_qdata(
            memory.as_ptr() as *mut gst::ffi::GstMiniObject,
            HEAP_QUARK.into_glib(),
        )
    } as usize;
    tag.checked_sub(1).and_then(|i| HEAPS.get(i).copied())
}

/// Whether `allocator`'s writes are watched (`padding`).
pub(super) fn watched(allocator: &super::DmaBufAllocator) -> bool {
    allocator.imp().watched.load(Ordering::Acquire)
}
