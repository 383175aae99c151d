//! `GstEdgeFirstDmaBufAllocator`: a GstDmaBufAllocator whose memory comes from the tensor crate
//! (DMA-BUF from the DMA heap the CPU-access declaration picks, memfd when no heap can be had).
//! Registered as `edgefirstdmabuf`, so any app finds it with `gst_allocator_find`.

mod imp;
pub(crate) mod padding;

use edgefirst_tensor::CpuAccess;
use gst::glib;
use gst::prelude::*;

/// Name under which the default (read-write) instance is registered.
pub const ALLOCATOR_NAME: &str = "edgefirstdmabuf";

glib::wrapper! {
    pub struct DmaBufAllocator(ObjectSubclass<imp::DmaBufAllocator>)
        @extends gst_allocators::DmaBufAllocator, gst_allocators::FdAllocator, gst::Allocator, gst::Object;
}

/// `cpu-access` property values (the tensor crate's declaration).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstEdgeFirstCpuAccess")]
pub enum CpuAccessMode {
    #[enum_value(name = "No CPU access: hardware only (uncached heap where there is one)", nick = "none")]
    None = 0,
    #[enum_value(name = "CPU reads", nick = "read")]
    Read = 1,
    #[enum_value(name = "CPU writes only (uncached heap where there is one)", nick = "write")]
    Write = 2,
    #[default]
    #[enum_value(name = "CPU reads and writes", nick = "readwrite")]
    ReadWrite = 3,
}

impl From<CpuAccessMode> for CpuAccess {
    fn from(m: CpuAccessMode) -> CpuAccess {
        match m {
            CpuAccessMode::None => CpuAccess::None,
            CpuAccessMode::Read => CpuAccess::Read,
            CpuAccessMode::Write => CpuAccess::Write,
            CpuAccessMode::ReadWrite => CpuAccess::ReadWrite,
        }
    }
}

impl DmaBufAllocator {
    pub fn new(cpu_access: CpuAccessMode) -> Self {
        glib::Object::builder().property("cpu-access", cpu_access).build()
    }

    /// The registered instance (the plugin registers it when it loads).
    pub fn find() -> Option<gst::Allocator> {
        gst::Allocator::find(Some(ALLOCATOR_NAME))
    }

    /// Which heap served a memory this allocator made: "linux,cma-uncached", "linux,cma",
    /// "system" or "memfd"; `None` for memory from elsewhere.
    pub fn heap_of(memory: &gst::MemoryRef) -> Option<&'static str> {
        imp::heap_of(memory)
    }
}

pub fn register(_plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    // Registering the same name again replaces the registry entry; once per process is enough.
    if DmaBufAllocator::find().is_none_or(|a| !a.is::<DmaBufAllocator>()) {
        gst::Allocator::register(ALLOCATOR_NAME, DmaBufAllocator::new(CpuAccessMode::ReadWrite));
    }
    Ok(())
}
