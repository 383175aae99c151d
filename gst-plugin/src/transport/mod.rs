//! Tensors to another process on the same machine without a copy: `edgefirsttensorsink` listens
//! on a unix socket and sends each buffer's fds (`SCM_RIGHTS`) as reference-mode tensor blobs with
//! its caps, timestamps and `GstEdgeFirstTensorMeta`; `edgefirsttensorsrc` connects and pushes
//! buffers over the very same DMA-BUFs / memfds. The framing is [`wire`], documented in
//! `docs/transport.md`.

pub mod edgefirsttensorsink;
pub mod edgefirsttensorsrc;
pub mod wire;

pub use edgefirsttensorsink::{EdgeFirstTensorSink, Leaky};
pub use edgefirsttensorsrc::EdgeFirstTensorSrc;
