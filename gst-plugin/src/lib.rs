//! gstedgefirst: the `edgefirst` GStreamer plugin.
//!
//! - `edgefirstdmabuf` allocator ([`DmaBufAllocator`], GType `GstEdgeFirstDmaBufAllocator`)
//! - [`BufferPool`] (GType `GstEdgeFirstBufferPool`): 64-byte strides, GstVideoMeta, byte budget
//! - element `edgefirsttensor` ([`EdgeFirstTensor`]): camera frames into tensors
//! - element `edgefirsttensorbatch`: several cameras into one batch tensor
//! - elements `edgefirsttensorsink` / `edgefirsttensorsrc`: tensors to another process (fd passing)
//! - elements `edgefirsttensorpay` / `edgefirsttensordepay`, and with feature `zenoh`
//!   `edgefirstzenohsink` / `edgefirstzenohsrc`: tensors to another machine
//! - [`TensorMeta`] (API type `GstEdgeFirstTensorMetaAPI`): per-buffer tensor description

use gst::glib;
use gst::prelude::*;

pub mod allocator;
pub mod batch_meta;
pub mod caps;
pub mod edgefirsttensor;
pub mod edgefirsttensorbatch;
pub mod import_cache;
pub mod meta;
pub mod model;
pub mod negotiate;
pub mod pool;
pub mod transport;
pub mod video;

pub use allocator::DmaBufAllocator;
pub use edgefirsttensor::EdgeFirstTensor;
pub use meta::{TensorInfo, TensorMeta};
pub use pool::{BufferPool, PoolStats};

fn plugin_init(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    // Registering the GTypes now makes them reachable by name from C and Python
    // (g_type_from_name) as soon as the plugin is loaded.
    BufferPool::static_type();
    allocator::register(plugin)?;
    meta::register();
    batch_meta::register();
    edgefirsttensor::register(plugin)?;
    edgefirsttensorbatch::register(plugin)?;
    transport::edgefirsttensorsink::register(plugin)?;
    transport::edgefirsttensorsrc::register(plugin)?;
    transport::edgefirsttensorpay::register(plugin)?;
    transport::edgefirsttensordepay::register(plugin)?;
    #[cfg(feature = "zenoh")]
    {
        transport::edgefirstzenohsink::register(plugin)?;
        transport::edgefirstzenohsrc::register(plugin)?;
    }
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
