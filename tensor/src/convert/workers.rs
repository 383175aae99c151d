//! A persistent band-worker pool: spawning threads every frame would allocate every frame, so the
//! threads are started once and woken per frame.

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

type Task = dyn Fn(usize) + Sync;

struct Job {
    generation: u64,
    /// A worker's band panicked this frame: re-raised on the calling thread once all are done.
    panicked: bool,
    /// The current frame's task, lifetime erased; valid until `pending` is back to zero, which
    /// `run` waits for before it returns (and before the borrow it was made from ends).
    task: Option<*const Task>,
    pending: usize,
    quit: bool,
}

// The raw task pointer is only dereferenced while `run` keeps the referent alive.
unsafe impl Send for Job {}

struct Shared {
    job: Mutex<Job>,
    wake: Condvar,
    done: Condvar,
}

pub(crate) struct Workers {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl Workers {
    /// `n` bands in all: the calling thread runs band 0, `n - 1` workers the rest. A thread the
    /// system will not start is an error; the ones already started stop with the pool.
    pub(crate) fn new(n: usize) -> std::io::Result<Workers> {
        let shared = Arc::new(Shared {
            job: Mutex::new(Job { generation: 0, panicked: false, task: None, pending: 0, quit: false }),
            wake: Condvar::new(),
            done: Condvar::new(),
        });
        let mut pool = Workers { shared, threads: Vec::with_capacity(n.saturating_sub(1)) };
        for band in 1..n.max(1) {
            let shared = pool.shared.clone();
            let thread = std::thread::Builder::new()
                .name(format!("edgefirst-convert-{band}"))
                .spawn(move || worker(&shared, band))?;
            pool.threads.push(thread);
        }
        Ok(pool)
    }

    pub(crate) fn bands(&self) -> usize {
        self.threads.len() + 1
    }

    /// Run `task(band)` for every band, band 0 on this thread, and return when all are done. A
    /// panic in any band is re-raised here, but only after every worker has finished with `task`:
    /// unwinding earlier would free the closure the workers are still running.
    pub(crate) fn run<'a>(&self, task: &'a (dyn Fn(usize) + Sync + 'a)) {
        if self.threads.is_empty() {
            task(0);
            return;
        }
        let erased: *const Task =
            unsafe { std::mem::transmute::<&'a (dyn Fn(usize) + Sync + 'a), &'static Task>(task) };
        {
            let mut job = self.shared.job.lock().unwrap();
            job.generation += 1;
            job.task = Some(erased);
            job.pending = self.threads.len();
        }
        self.shared.wake.notify_all();
        let own = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| task(0)));
        let mut job = self.shared.job.lock().unwrap_or_else(|p| p.into_inner());
        while job.pending > 0 {
            job = self.shared.done.wait(job).unwrap_or_else(|p| p.into_inner());
        }
        job.task = None;
        let worker_panicked = std::mem::take(&mut job.panicked);
        drop(job);
        if let Err(p) = own {
            std::panic::resume_unwind(p);
        }
        assert!(!worker_panicked, "a conversion worker panicked");
    }
}

fn worker(shared: &Shared, band: usize) {
    let mut seen = 0;
    loop {
        let task = {
            let mut job = shared.job.lock().unwrap_or_else(|p| p.into_inner());
            while job.generation == seen && !job.quit {
                job = shared.wake.wait(job).unwrap_or_else(|p| p.into_inner());
            }
            if job.quit {
                return;
            }
            seen = job.generation;
            job.task.expect("a new generation carries a task")
        };
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe { (*task)(band) }));
        let mut job = shared.job.lock().unwrap_or_else(|p| p.into_inner());
        job.panicked |= result.is_err();
        job.pending -= 1;
        if job.pending == 0 {
            shared.done.notify_all();
        }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.shared.job.lock().unwrap().quit = true;
        self.shared.wake.notify_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Workers;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn every_band_runs_once_per_frame() {
        let w = Workers::new(3).unwrap();
        let hits = [AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0)];
        for _ in 0..100 {
            w.run(&|band| {
                hits[band].fetch_add(1, Ordering::SeqCst);
            });
        }
        assert!(hits.iter().all(|h| h.load(Ordering::SeqCst) == 100));
    }

    #[test]
    fn a_panicking_band_is_reported_without_hanging_and_the_pool_keeps_working() {
        let w = Workers::new(2).unwrap();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            w.run(&|band| {
                if band == 1 {
                    panic!("band 1 fails");
                }
            })
        }));
        assert!(r.is_err(), "the worker's panic reaches the caller");
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.run(&|band| assert_ne!(band, 0))));
        assert!(r.is_err(), "so does the calling thread's own band");
        let ran = AtomicUsize::new(0);
        w.run(&|_| {
            ran.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(ran.load(Ordering::SeqCst), 2);
    }
}
