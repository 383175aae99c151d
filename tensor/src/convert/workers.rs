//! A persistent band-worker pool: spawning threads every frame would allocate every frame, so the
//! threads are started once and woken per frame.

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

type Task = dyn Fn(usize) + Sync;

struct Job {
    generation: u64,
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
    /// `n` bands in all: the calling thread runs band 0, `n - 1` workers the rest.
    pub(crate) fn new(n: usize) -> Workers {
        let shared = Arc::new(Shared {
            job: Mutex::new(Job { generation: 0, task: None, pending: 0, quit: false }),
            wake: Condvar::new(),
            done: Condvar::new(),
        });
        let threads = (1..n.max(1))
            .map(|band| {
                let shared = shared.clone();
                std::thread::Builder::new()
                    .name(format!("edgefirst-convert-{band}"))
                    .spawn(move || worker(&shared, band))
                    .expect("spawning a conversion worker")
            })
            .collect();
        Workers { shared, threads }
    }

    pub(crate) fn bands(&self) -> usize {
        self.threads.len() + 1
    }

    /// Run `task(band)` for every band, band 0 on this thread, and return when all are done.
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
        task(0);
        let mut job = self.shared.job.lock().unwrap();
        while job.pending > 0 {
            job = self.shared.done.wait(job).unwrap();
        }
        job.task = None;
    }
}

fn worker(shared: &Shared, band: usize) {
    let mut seen = 0;
    loop {
        let task = {
            let mut job = shared.job.lock().unwrap();
            while job.generation == seen && !job.quit {
                job = shared.wake.wait(job).unwrap();
            }
            if job.quit {
                return;
            }
            seen = job.generation;
            job.task.expect("a new generation carries a task")
        };
        unsafe { (*task)(band) };
        let mut job = shared.job.lock().unwrap();
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
