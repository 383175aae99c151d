//! Imported tensors cached by the kernel's identity of their buffer: (device, inode, plane
//! offset). Producers that re-wrap or dup fds every frame defeat pointer- and fd-keyed caches; the
//! kernel's key survives that. An entry holds a dup of the fd, which pins the inode, so a cached
//! key cannot be recycled while the entry lives; what can still change under a key is the frame
//! geometry or the buffer's size, so every hit is validated against both before it is served.

use std::collections::HashMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ImportKey {
    pub dev: u64,
    pub ino: u64,
    pub offset: usize,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
}

struct Entry<G, V> {
    geometry: G,
    value: V,
    last_used: u64,
}

/// Bounded, least-recently-used. `G` is whatever must match for an entry to be served.
pub struct ImportCache<G, V> {
    capacity: usize,
    entries: HashMap<ImportKey, Entry<G, V>>,
    clock: u64,
    stats: CacheStats,
    /// With capacity 0 the value of the current frame lives here until the next call.
    scratch: Option<V>,
}

impl<G: PartialEq, V> ImportCache<G, V> {
    pub fn new(capacity: usize) -> Self {
        ImportCache {
            capacity,
            entries: HashMap::new(),
            clock: 0,
            stats: CacheStats::default(),
            scratch: None,
        }
    }

    pub fn stats(&self) -> CacheStats {
        self.stats
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Shrinking evicts the least recently used entries at once. Capacity 0 disables caching.
    pub fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity;
        while self.entries.len() > capacity {
            self.evict_one();
        }
    }

    /// Drop every entry (caps or upstream allocation changed): the producer's buffers must not
    /// stay pinned by us after it let them go.
    pub fn flush(&mut self) {
        self.entries.clear();
    }

    /// The cached value for `key` when its geometry matches; otherwise `make` builds it, and it
    /// replaces any entry under the same key.
    pub fn get_or_try_insert<E>(
        &mut self,
        key: ImportKey,
        geometry: G,
        make: impl FnOnce() -> Result<V, E>,
    ) -> Result<&V, E> {
        self.clock += 1;
        let clock = self.clock;
        let valid = self.entries.get(&key).is_some_and(|e| e.geometry == geometry);
        if valid {
            self.stats.hits += 1;
            let e = self.entries.get_mut(&key).expect("checked");
            e.last_used = clock;
            return Ok(&e.value);
        }
        self.stats.misses += 1;
        self.entries.remove(&key);
        let value = make()?;
        if self.capacity == 0 {
            // Nothing is kept, but the caller still gets its value for this frame.
            return Ok(self.scratch.insert(value));
        }
        while self.entries.len() >= self.capacity {
            self.evict_one();
        }
        Ok(&self.entries.entry(key).or_insert(Entry { geometry, value, last_used: clock }).value)
    }

    fn evict_one(&mut self) {
        if let Some(&k) = self.entries.iter().min_by_key(|(_, e)| e.last_used).map(|(k, _)| k) {
            self.entries.remove(&k);
            self.stats.evictions += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(ino: u64, offset: usize) -> ImportKey {
        ImportKey { dev: 7, ino, offset }
    }

    fn get(c: &mut ImportCache<(u32, u32), u64>, k: ImportKey, g: (u32, u32), v: u64) -> u64 {
        *c.get_or_try_insert::<()>(k, g, || Ok(v)).unwrap()
    }

    #[test]
    fn hits_misses_and_lru_eviction() {
        let mut c = ImportCache::new(2);
        assert_eq!(get(&mut c, key(1, 0), (640, 480), 10), 10);
        assert_eq!(get(&mut c, key(1, 0), (640, 480), 99), 10, "hit serves the cached value");
        assert_eq!(get(&mut c, key(1, 4096), (640, 480), 11), 11, "plane offset is part of the key");
        assert_eq!(get(&mut c, key(1, 0), (640, 480), 99), 10);
        // A third key evicts the least recently used (ino 1 offset 4096).
        assert_eq!(get(&mut c, key(2, 0), (640, 480), 12), 12);
        assert_eq!(c.stats(), CacheStats { hits: 2, misses: 3, evictions: 1 });
        assert_eq!(get(&mut c, key(1, 0), (640, 480), 99), 10, "recently used entry survived");
        assert_eq!(get(&mut c, key(1, 4096), (640, 480), 13), 13, "evicted entry is rebuilt");
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn a_colliding_key_with_other_geometry_is_never_served() {
        // An entry injected under the key a new buffer will have, as if the kernel had recycled
        // the inode: the geometry check must refuse it.
        let mut c = ImportCache::new(4);
        assert_eq!(get(&mut c, key(5, 0), (320, 240), 1), 1);
        assert_eq!(get(&mut c, key(5, 0), (640, 480), 2), 2, "stale entry replaced");
        assert_eq!(get(&mut c, key(5, 0), (640, 480), 3), 2);
        assert_eq!(c.stats().misses, 2);
        assert_eq!(c.len(), 1, "the stale entry is gone, not kept beside the new one");
    }

    #[test]
    fn failed_imports_are_not_cached_and_capacity_zero_keeps_nothing() {
        let mut c: ImportCache<(u32, u32), u64> = ImportCache::new(2);
        assert!(c.get_or_try_insert(key(9, 0), (1, 1), || Err("bad fd")).is_err());
        assert!(c.is_empty());
        c.set_capacity(0);
        assert_eq!(get(&mut c, key(1, 0), (1, 1), 5), 5);
        assert_eq!(get(&mut c, key(1, 0), (1, 1), 6), 6, "nothing cached");
        assert!(c.is_empty());
        c.set_capacity(2);
        get(&mut c, key(1, 0), (1, 1), 1);
        get(&mut c, key(2, 0), (1, 1), 1);
        c.set_capacity(1);
        assert_eq!((c.len(), c.stats().evictions), (1, 1));
        c.flush();
        assert!(c.is_empty());
    }
}
