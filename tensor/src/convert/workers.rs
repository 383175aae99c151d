//! A persistent band-worker pool: spawning threads every frame would allocate every frame, so the
//! threads are started once and woken per frame.
//!
//! Waking a parked thread costs this VM 40-60 µs (futex wake, IPI, schedule), half of a 1080p NV12
//! frame's whole conversion: with fixed bands the caller finished its half and then waited for a
//! worker that had barely started, and two threads were no faster than one (0.102 vs 0.098 ms).
//! So the caller never waits for a worker that has not started: work is taken in chunks from a
//! shared counter (the task's business), a worker that wakes after the frame is done finds the job
//! withdrawn and does nothing, and a worker spins briefly before parking so back-to-back frames
//! find it awake. The caller, done with its chunks while a worker is still in its last one, also
//! watches before it parks: parked, it paid the wake again (NV12 and YUY2 camera rows of the
//! element's benchmark, AMD EPYC Zen 5, one thread's time over two threads': 1.55–1.74× →
//! 1.64–1.84×).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

type Task = dyn Fn(usize) + Sync;

/// How long a worker watches for the next frame before parking: longer than the gap between two
/// frames of a pipeline converting back to back (20-30 µs of GStreamer per buffer here), short
/// beside a camera's frame interval.
const SPIN: Duration = Duration::from_micros(100);

struct Job {
    /// Workers may still start on the current task.
    open: bool,
    /// A worker's band panicked this frame: re-raised on the calling thread once all are done.
    panicked: bool,
    /// The current frame's task, lifetime erased; valid while `open` or `running > 0`, which
    /// `run` waits out before it returns (and before the borrow it was made from ends).
    task: Option<*const Task>,
    /// Workers inside the task now.
    running: usize,
    quit: bool,
}

// The raw task pointer is only dereferenced while `run` keeps the referent alive.
unsafe impl Send for Job {}

struct Shared {
    job: Mutex<Job>,
    /// Bumped per frame; read without the lock by spinning workers.
    generation: AtomicU64,
    /// `Job::running`, read without the lock by a caller waiting for the last worker.
    running: AtomicUsize,
    wake: Condvar,
    done: Condvar,
}

/// Threads started once that run one task at a time beside the calling thread: a `Converter`'s
/// row bands, and a caller's own work split the same way (the batch element's slots).
pub struct Workers {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl Workers {
    /// `n` bands in all: the calling thread runs band 0, `n - 1` workers the rest. A thread the
    /// system will not start is an error; the ones already started stop with the pool.
    pub fn new(n: usize) -> std::io::Result<Workers> {
        let shared = Arc::new(Shared {
            job: Mutex::new(Job { open: false, panicked: false, task: None, running: 0, quit: false }),
            generation: AtomicU64::new(0),
            running: AtomicUsize::new(0),
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

    /// The bands a task is run on: the calling thread and the workers.
    pub fn bands(&self) -> usize {
        self.threads.len() + 1
    }

    /// Run `task(band)` on this thread (band 0) and on every worker that starts before this
    /// thread's own call returns; return when all of those are done. `task` must therefore do the
    /// whole job whoever runs it (take its work from a shared counter), and a band may not run at
    /// all. A panic in any band is re-raised here, but only after every started worker has
    /// finished with `task`: unwinding earlier would free the closure they are still running.
    pub fn run<'a>(&self, task: &'a (dyn Fn(usize) + Sync + 'a)) {
        if self.threads.is_empty() {
            task(0);
            return;
        }
        let erased: *const Task =
            unsafe { std::mem::transmute::<&'a (dyn Fn(usize) + Sync + 'a), &'static Task>(task) };
        {
            let mut job = self.shared.job.lock().unwrap();
            job.task = Some(erased);
            job.open = true;
            self.shared.generation.fetch_add(1, Ordering::Release);
        }
        self.shared.wake.notify_all();
        let own = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| task(0)));
        let mut job = self.shared.job.lock().unwrap_or_else(|p| p.into_inner());
        // Workers that have not started by now never will on this task.
        job.open = false;
        if job.running > 0 {
            drop(job);
            let spin_until = Instant::now() + SPIN;
            while self.shared.running.load(Ordering::Acquire) > 0 && Instant::now() < spin_until {
                std::thread::yield_now();
            }
            job = self.shared.job.lock().unwrap_or_else(|p| p.into_inner());
        }
        while job.running > 0 {
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
        // Watch for the next frame a little while before parking.
        let spin_until = Instant::now() + SPIN;
        while shared.generation.load(Ordering::Acquire) == seen && Instant::now() < spin_until {
            // Yielding, not spinning: a worker that shares a core with the caller must not take
            // the core from it.
            std::thread::yield_now();
        }
        let task = {
            let mut job = shared.job.lock().unwrap_or_else(|p| p.into_inner());
            while shared.generation.load(Ordering::Acquire) == seen && !job.quit {
                job = shared.wake.wait(job).unwrap_or_else(|p| p.into_inner());
            }
            if job.quit {
                return;
            }
            seen = shared.generation.load(Ordering::Acquire);
            match (job.open, job.task) {
                (true, Some(t)) => {
                    job.running += 1;
                    shared.running.store(job.running, Ordering::Release);
                    t
                }
                // Withdrawn: the caller finished the frame without this worker.
                _ => continue,
            }
        };
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe { (*task)(band) }));
        let mut job = shared.job.lock().unwrap_or_else(|p| p.into_inner());
        job.panicked |= result.is_err();
        job.running -= 1;
        shared.running.store(job.running, Ordering::Release);
        if job.running == 0 {
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
    fn shared_work_is_done_exactly_once_whoever_joins() {
        let w = Workers::new(3).unwrap();
        let chunks: Vec<AtomicUsize> = (0..64).map(|_| AtomicUsize::new(0)).collect();
        let joined = [AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0)];
        for _ in 0..200 {
            let next = AtomicUsize::new(0);
            w.run(&|band| {
                joined[band].fetch_add(1, Ordering::SeqCst);
                loop {
                    let c = next.fetch_add(1, Ordering::SeqCst);
                    if c >= chunks.len() {
                        break;
                    }
                    chunks[c].fetch_add(1, Ordering::SeqCst);
                }
            });
        }
        assert!(chunks.iter().all(|c| c.load(Ordering::SeqCst) == 200), "every chunk once per frame");
        assert_eq!(joined[0].load(Ordering::SeqCst), 200, "the caller always runs");
        assert!(joined[1..].iter().all(|j| j.load(Ordering::SeqCst) <= 200));
    }

    /// `run` returns only once a worker's band has finished, whether the caller watched it finish
    /// (a short band) or parked for it (one longer than the watch).
    #[test]
    fn the_caller_waits_for_a_worker_that_finishes_after_it() {
        let w = Workers::new(2).unwrap();
        for micros in [20u64, 2000] {
            let (started, finished) = (std::sync::atomic::AtomicBool::new(false), AtomicUsize::new(0));
            w.run(&|band| {
                if band == 1 {
                    started.store(true, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_micros(micros));
                    finished.fetch_add(1, Ordering::SeqCst);
                    return;
                }
                // The caller's band ends once the worker has started, so the worker ends after it.
                let t = std::time::Instant::now();
                while !started.load(Ordering::SeqCst) && t.elapsed().as_secs() < 10 {
                    std::thread::yield_now();
                }
            });
            assert!(started.load(Ordering::SeqCst), "the worker joined ({micros} µs)");
            assert_eq!(finished.load(Ordering::SeqCst), 1, "run waited for the worker's {micros} µs band");
        }
    }

    #[test]
    fn a_panicking_band_is_reported_without_hanging_and_the_pool_keeps_working() {
        let w = Workers::new(2).unwrap();
        // Band 0 holds the job open until band 1 has started, so band 1 surely runs.
        let started = std::sync::atomic::AtomicBool::new(false);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            w.run(&|band| {
                if band == 1 {
                    started.store(true, Ordering::SeqCst);
                    panic!("band 1 fails");
                }
                let t = std::time::Instant::now();
                while !started.load(Ordering::SeqCst) && t.elapsed().as_secs() < 10 {
                    std::hint::spin_loop();
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
        assert!((1..=2).contains(&ran.load(Ordering::SeqCst)), "the pool still runs tasks");
    }
}
