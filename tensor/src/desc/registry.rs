//! The process-wide tensor registry: bounded, lock-protected slots, each with a generation
//! counter. A (slot, generation) key is what crosses a boundary instead of a pointer, so a key
//! that outlived what it named is refused with `Error::StaleGeneration` rather than followed into
//! freed memory.
//!
//! A slot holds one of two kinds of entry:
//! - **owned**: the registry holds the tensor (`insert`). This is what an opaque C handle is:
//!   `ef_tensor_free` is `remove`, and a second free of the same key is a stale-generation error.
//! - **watched**: the registry holds only a weak reference to the tensor's storage (`watch`), so
//!   it never keeps a buffer alive. Descriptors use these. A watched slot whose storage has died
//!   counts as released the moment anyone looks at it.
//!
//! Generations start at 1 (a zeroed key is never valid) and only grow: every release, and every
//! `replace`, bumps the slot's generation before the slot can be used again, which is what makes
//! slot reuse ABA-safe.

use crate::tensor::{Storage, TensorDyn};
use crate::{Error, Result};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

/// Live entries the global registry holds before `RegistryFull`. Generous: a pipeline holds a
/// few tensors per element, and a leak should fail loudly long before memory does.
pub const DEFAULT_CAPACITY: usize = 1 << 16;

/// A registry slot and the generation it had when the key was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    pub slot: u32,
    pub generation: u64,
}

enum Entry {
    Owned(TensorDyn),
    Watched { storage: Weak<Storage>, identity: u64 },
}

impl Entry {
    fn alive(&self) -> bool {
        match self {
            Entry::Owned(_) => true,
            Entry::Watched { storage, .. } => storage.strong_count() > 0,
        }
    }
}

struct Slot {
    generation: u64,
    entry: Option<Entry>,
}

#[derive(Default)]
struct Inner {
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// Watched entries by buffer identity, so every descriptor of one buffer names one slot and
    /// a release of it invalidates them all. Identity ids are never reused, so a stale mapping
    /// can only point at a slot whose entry no longer matches, which `watch` checks.
    watched: HashMap<u64, u32>,
    live: usize,
}

/// The registry. `Registry::global()` is the one descriptors and the C library use; a separate
/// instance is useful only to test bounds and reuse deterministically.
pub struct Registry {
    inner: Mutex<Inner>,
    capacity: usize,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry").field("capacity", &self.capacity).field("live", &self.live()).finish()
    }
}

impl Registry {
    /// `capacity` is clamped to what a `u32` slot index can name.
    pub fn new(capacity: usize) -> Registry {
        Registry { inner: Mutex::new(Inner::default()), capacity: capacity.min(u32::MAX as usize) }
    }

    pub fn global() -> &'static Registry {
        static GLOBAL: OnceLock<Registry> = OnceLock::new();
        GLOBAL.get_or_init(|| Registry::new(DEFAULT_CAPACITY))
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Occupied slots, counting watched entries whose storage died but has not been noticed yet.
    pub fn live(&self) -> usize {
        self.lock().live
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // No critical section here can leave the slots inconsistent part-way, so a panic
        // elsewhere while holding the lock does not make the data untrustworthy.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Take ownership of `tensor` and return the key that names it (an opaque handle).
    pub fn insert(&self, tensor: TensorDyn) -> Result<Key> {
        let mut inner = self.lock();
        inner.occupy(self.capacity, Entry::Owned(tensor))
    }

    /// A clone of the owned tensor `key` names (clones share storage and identity).
    pub fn get(&self, key: Key) -> Result<TensorDyn> {
        let mut inner = self.lock();
        match inner.entry(key)? {
            Entry::Owned(t) => Ok(t.clone()),
            Entry::Watched { .. } => Err(Error::InvalidOperation(format!(
                "registry slot {} holds a descriptor registration, not an owned tensor",
                key.slot
            ))),
        }
    }

    /// Whether `key` still names a live entry; the error says why not.
    pub fn validate(&self, key: Key) -> Result<()> {
        self.lock().entry(key).map(|_| ())
    }

    /// Release the owned tensor `key` names and hand it back; the slot's generation is bumped
    /// first, so `key` and every copy of it are stale from here on.
    pub fn remove(&self, key: Key) -> Result<TensorDyn> {
        let mut inner = self.lock();
        if let Entry::Watched { .. } = inner.entry(key)? {
            return Err(Error::InvalidOperation(format!(
                "registry slot {} holds a descriptor registration; release it instead",
                key.slot
            )));
        }
        match inner.vacate(key.slot) {
            Some(Entry::Owned(t)) => Ok(t),
            _ => unreachable!("the entry was just checked to be owned"),
        }
    }

    /// Release whatever `key` names (owned or watched). Releasing a watched entry does not free
    /// the buffer, it only makes every descriptor of it stale.
    pub fn release(&self, key: Key) -> Result<()> {
        let entry = {
            let mut inner = self.lock();
            inner.entry(key)?;
            inner.vacate(key.slot)
        };
        // An owned tensor is dropped outside the lock: its storage's drop may unmap and close.
        drop(entry);
        Ok(())
    }

    /// Swap the owned tensor `key` names for `tensor` (a reallocation behind one handle). The
    /// generation is bumped, so keys made before the swap are stale; the new key is returned.
    pub fn replace(&self, key: Key, tensor: TensorDyn) -> Result<Key> {
        let (previous, key) = {
            let mut inner = self.lock();
            if let Entry::Watched { .. } = inner.entry(key)? {
                return Err(Error::InvalidOperation(format!(
                    "registry slot {} holds a descriptor registration, not an owned tensor",
                    key.slot
                )));
            }
            let slot = &mut inner.slots[key.slot as usize];
            let Some(next) = slot.generation.checked_add(1) else {
                return Err(Error::InvalidOperation(format!(
                    "registry slot {} has exhausted its generations",
                    key.slot
                )));
            };
            slot.generation = next;
            (slot.entry.replace(Entry::Owned(tensor)), Key { slot: key.slot, generation: next })
        };
        drop(previous);
        Ok(key)
    }

    /// Register `tensor`'s storage without keeping it alive; every tensor over the same buffer
    /// (clones, views) gets the same key until the buffer dies or the key is released.
    pub fn watch(&self, tensor: &TensorDyn) -> Result<Key> {
        let identity = tensor.buffer_identity().id();
        let mut inner = self.lock();
        if let Some(&slot) = inner.watched.get(&identity) {
            let s = &inner.slots[slot as usize];
            if let Some(Entry::Watched { identity: id, .. }) = &s.entry {
                if *id == identity {
                    return Ok(Key { slot, generation: s.generation });
                }
            }
            inner.watched.remove(&identity);
        }
        let key = inner
            .occupy(self.capacity, Entry::Watched { storage: Arc::downgrade(&tensor.storage), identity })?;
        inner.watched.insert(identity, key.slot);
        Ok(key)
    }

    /// The storage a key names, for rebuilding a tensor from a descriptor.
    pub(crate) fn storage(&self, key: Key) -> Result<Arc<Storage>> {
        let mut inner = self.lock();
        let upgraded = match inner.entry(key)? {
            Entry::Owned(t) => return Ok(t.storage.clone()),
            Entry::Watched { storage, .. } => storage.upgrade(),
        };
        // The last strong reference can go on another thread (dropping a tensor takes no lock)
        // between `entry`'s liveness check and the upgrade: that is a release like any other.
        upgraded.ok_or_else(|| {
            inner.vacate(key.slot);
            let current = inner.slots[key.slot as usize].generation;
            Error::StaleGeneration { slot: key.slot, expected: key.generation, current }
        })
    }

    /// Release every watched entry whose buffer has died; returns how many.
    pub fn sweep(&self) -> usize {
        self.lock().sweep()
    }
}

impl Inner {
    fn occupy(&mut self, capacity: usize, entry: Entry) -> Result<Key> {
        let slot = match self.free.pop() {
            Some(s) => s,
            None if self.slots.len() < capacity => {
                self.slots.push(Slot { generation: 1, entry: None });
                (self.slots.len() - 1) as u32
            }
            None => {
                if self.sweep() == 0 {
                    return Err(Error::RegistryFull { capacity });
                }
                self.free.pop().expect("a sweep that released entries freed their slots")
            }
        };
        let s = &mut self.slots[slot as usize];
        debug_assert!(s.entry.is_none());
        s.entry = Some(entry);
        self.live += 1;
        Ok(Key { slot, generation: s.generation })
    }

    /// The live entry `key` names. A watched entry whose storage died is released here, so the
    /// answer for it is the same stale error as for an explicit release.
    fn entry(&mut self, key: Key) -> Result<&Entry> {
        let Some(s) = self.slots.get(key.slot as usize) else {
            return Err(Error::NotRegistered { slot: key.slot });
        };
        let current = s.generation;
        let dead = s.entry.as_ref().is_some_and(|e| !e.alive());
        if key.generation != current || s.entry.is_none() || dead {
            if dead && key.generation == current {
                self.vacate(key.slot);
            }
            let now = self.slots[key.slot as usize].generation;
            // A generation the slot has not reached yet was never issued: that is a forged or
            // corrupted key, not a stale one.
            return Err(if key.generation != 0 && key.generation < now {
                Error::StaleGeneration { slot: key.slot, expected: key.generation, current: now }
            } else {
                Error::NotRegistered { slot: key.slot }
            });
        }
        Ok(self.slots[key.slot as usize].entry.as_ref().expect("checked occupied"))
    }

    /// Empty a slot and bump its generation. A slot whose generation cannot grow any further is
    /// retired rather than reused, since reuse would repeat a generation.
    fn vacate(&mut self, slot: u32) -> Option<Entry> {
        let s = &mut self.slots[slot as usize];
        let entry = s.entry.take()?;
        self.live -= 1;
        if let Entry::Watched { identity, .. } = &entry {
            self.watched.remove(identity);
        }
        match s.generation.checked_add(1) {
            Some(g) => {
                s.generation = g;
                self.free.push(slot);
            }
            None => s.generation = u64::MAX,
        }
        Some(entry)
    }

    fn sweep(&mut self) -> usize {
        let dead: Vec<u32> = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.entry.as_ref().is_some_and(|e| !e.alive()))
            .map(|(i, _)| i as u32)
            .collect();
        for &slot in &dead {
            self.vacate(slot);
        }
        dead.len()
    }
}
