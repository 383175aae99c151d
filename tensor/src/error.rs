//! One error type for the crate; each variant is one kind of failure and its message names what
//! was wrong, so a pipeline log line is enough to find the cause.

use crate::{CpuAccess, DType, TensorMemory};

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("CPU access denied: the tensor was declared {declared:?} and the map asked for {requested:?}")]
    CpuAccessDenied { declared: CpuAccess, requested: CpuAccess },

    #[error("memory backing `{}` (code {}) is not supported by this build", .0.name(), .0.code())]
    NotSupported(TensorMemory),

    #[error("memory backing `{}` is unavailable: {reason}", .memory.name())]
    Unavailable { memory: TensorMemory, reason: String },

    #[error("unknown memory code {0}")]
    UnknownMemoryCode(u32),

    #[error("unknown buffer type: filesystem magic {0:#010x} is neither DMA_BUF_MAGIC (0x444d4142) nor TMPFS_MAGIC (0x01021994)")]
    UnknownBufferType(u32),

    #[error("buffer too small: {what} needs {needed} bytes but the buffer holds {available}")]
    BufferTooSmall { what: String, needed: usize, available: usize },

    #[error("contiguous memory was requested but the CMA heap {heap} could not serve {len} bytes: {source}")]
    ContiguousUnavailable { heap: String, len: usize, source: std::io::Error },

    #[error("{op} failed: {source}")]
    Io { op: String, source: std::io::Error },

    #[error("invalid shape {shape:?}: {reason}")]
    InvalidShape { shape: Vec<usize>, reason: String },

    #[error("dtype mismatch: the tensor holds {actual:?} and {requested:?} was asked for")]
    DTypeMismatch { actual: DType, requested: DType },

    #[error("region x={x} y={y} {width}x{height} is out of bounds of a {bound_width}x{bound_height} image")]
    RegionOutOfBounds {
        x: usize,
        y: usize,
        width: usize,
        height: usize,
        bound_width: usize,
        bound_height: usize,
    },

    #[error("batch index {index} is out of bounds for a batch of {len}")]
    BatchIndexOutOfBounds { index: usize, len: usize },

    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    #[error("invalid operation: {0}")]
    InvalidOperation(String),

    /// A blob field failed validation; `field` names the one that carried the bad value.
    #[error("malformed tensor blob: {field}: {reason}")]
    MalformedBlob { field: &'static str, reason: String },

    /// The producer set `required_mask` bits this reader does not implement: proceeding would
    /// misread fields whose meaning those bits change.
    #[error("tensor blob requires features {mask:#x} that this reader does not support (supported: {supported:#x})")]
    UnsupportedRequired { mask: u64, supported: u64 },

    /// A descriptor field failed validation; `field` names the one that carried the bad value.
    #[error("invalid tensor descriptor: {field}: {reason}")]
    InvalidDescriptor { field: &'static str, reason: String },

    /// The registry slot was released or reused since the descriptor or handle was made, so what
    /// it named may be freed memory.
    #[error("stale generation: slot {slot} was generation {expected}, is now {current}")]
    StaleGeneration { slot: u32, expected: u64, current: u64 },

    #[error("registry slot {slot} is out of range or holds nothing")]
    NotRegistered { slot: u32 },

    #[error("the tensor registry is full ({capacity} live entries)")]
    RegistryFull { capacity: usize },
}

impl Error {
    pub(crate) fn io(op: impl Into<String>, source: impl Into<std::io::Error>) -> Self {
        Error::Io { op: op.into(), source: source.into() }
    }
}
