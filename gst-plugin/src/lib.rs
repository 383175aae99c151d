//! gstedgefirst: the `edgefirst` GStreamer plugin.
//!
//! - `edgefirstdmabuf` allocator ([`DmaBufAllocator`], GType `GstEdgeFirstDmaBufAllocator`)
//! - [`BufferPool`] (GType `GstEdgeFirstBufferPool`): 64-byte strides, GstVideoMeta, byte budget

use gst::glib;
use gst::prelude::*;

pub mod allocator;
pub mod pool;
pub mod video;

pub use allocator::DmaBufAllocator;
pub use pool::{BufferPool, PoolStats};

fn plugin_init(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    // Registering the GTypes now makes them reachable by name from C and Python
    // (g_type_from_name) as soon as the plugin is loaded.
    BufferPool::static_type();
    allocator::register(plugin)?;
    Ok(())
}

gst::plugin_define!(
    edgefirst,
    env!("CARGO_PKG_DESCRIPTION"),
    plugin_init,
    concat!(env!("CARGO_PKG_VERSION"), "-", env!("COMMIT_ID")),
    "MIT/X11",
    env!("CARGO_PKG_NAME"),
    env!("CARGO_PKG_NAME"),
    env!("CARGO_PKG_REPOSITORY"),
    env!("BUILD_REL_DATE")
);
