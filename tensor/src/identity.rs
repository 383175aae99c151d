//! Buffer identity: a cache key that is stable for one allocation or import and a liveness probe
//! that lets a cache notice the buffer died without keeping it alive.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Owned by the shared storage of a tensor, so every clone, view and batch of it reports the same
/// identity, and `weak()` dies with the last of them. Deliberately not `Clone`: a cloned identity
/// would keep the liveness token alive after the buffer is gone.
#[derive(Debug)]
pub struct BufferIdentity {
    id: u64,
    alive: Arc<()>,
}

impl BufferIdentity {
    pub(crate) fn new() -> Self {
        BufferIdentity { id: NEXT_ID.fetch_add(1, Ordering::Relaxed), alive: Arc::new(()) }
    }

    /// Monotonically increasing over the process lifetime; never reused.
    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn weak(&self) -> Weak<()> {
        Arc::downgrade(&self.alive)
    }
}
