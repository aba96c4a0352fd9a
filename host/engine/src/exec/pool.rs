//! The threads actions run on: a host's claimed actions are handed to a pool instead of a
//! new thread each (a plugin call blocks its thread, so each running action has one). A
//! thread is started when an action is handed over and none is idle, up to the pool's cap
//! (the host's slots and a spare, as a slot is given back a moment before its thread is
//! idle again); idle threads wait for the next action, and leave when the pool is dropped.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

/// Something to run on a pool thread.
pub type Job = Box<dyn FnOnce() + Send + 'static>;

/// A pool of threads for actions.
pub struct Pool {
    shared: Arc<Shared>,
    cap: usize,
}

struct Shared {
    state: Mutex<State>,
    ready: Condvar,
}

#[derive(Default)]
struct State {
    jobs: VecDeque<Job>,
    threads: usize,
    idle: usize,
    closed: bool,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Pool {
    /// A pool of at most `cap` threads (at least one), none started yet.
    pub fn new(cap: usize) -> Self {
        Pool {
            shared: Arc::new(Shared {
                state: Mutex::new(State::default()),
                ready: Condvar::new(),
            }),
            cap: cap.max(1),
        }
    }

    /// Runs `job` on a pool thread: an idle one, a new one while there are fewer than the
    /// cap, else the first to become idle.
    ///
    /// # Errors
    ///
    /// No thread could be started and none runs: the job is dropped unrun.
    pub fn run(&self, job: Job) -> std::io::Result<()> {
        let mut state = self.shared.state();
        state.jobs.push_back(job);
        if state.idle == 0 && state.threads < self.cap {
            let shared = Arc::clone(&self.shared);
            match std::thread::Builder::new()
                .name("weft-action".to_owned())
                .spawn(move || work(&shared))
            {
                Ok(_) => state.threads += 1,
                Err(e) if state.threads == 0 => {
                    state.jobs.pop_back();
                    return Err(e);
                }
                // The threads there are take it in turn.
                Err(e) => {
                    tracing::warn!(message = "Cannot start one more thread for actions; the action waits for a running one.", error = %e);
                }
            }
        }
        drop(state);
        self.shared.ready.notify_one();
        Ok(())
    }

    /// The threads started and the idle ones among them.
    pub fn threads(&self) -> (usize, usize) {
        let state = self.shared.state();
        (state.threads, state.idle)
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shared.state().closed = true;
        self.shared.ready.notify_all();
    }
}

/// A pool thread: runs jobs until the pool is dropped and nothing is left to run.
fn work(shared: &Shared) {
    loop {
        let job = {
            let mut state = shared.state();
            loop {
                if let Some(job) = state.jobs.pop_front() {
                    break job;
                }
                if state.closed {
                    state.threads -= 1;
                    return;
                }
                state.idle += 1;
                state = shared
                    .ready
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
                state.idle -= 1;
            }
        };
        // A job catches its own panics (an action's end is recorded whatever happens);
        // one that escapes must not cost the pool its thread.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn threads_are_started_up_to_the_cap_and_then_reused() {
        let pool = Pool::new(2);
        let (done, finished) = mpsc::channel();
        let (go, wait) = mpsc::channel::<()>();
        let wait = Arc::new(Mutex::new(wait));
        // Three jobs that each wait for a go: two threads take two, the third waits.
        for i in 0..3 {
            let (done, wait) = (done.clone(), Arc::clone(&wait));
            pool.run(Box::new(move || {
                let _ = wait.lock().expect("lock").recv();
                let _ = done.send((i, std::thread::current().id()));
            }))
            .expect("run");
        }
        assert_eq!(pool.threads().0, 2);
        for _ in 0..3 {
            go.send(()).expect("go");
        }
        let ran: Vec<_> = (0..3)
            .map(|_| finished.recv().expect("a job ran"))
            .collect();
        let mut ids: Vec<_> = ran.iter().map(|(_, t)| *t).collect();
        ids.sort_by_key(|t| format!("{t:?}"));
        ids.dedup();
        assert!(ids.len() <= 2, "{ran:?}");
        assert_eq!(pool.threads().0, 2);
    }

    #[test]
    fn a_panicking_job_does_not_take_its_thread_along() {
        let pool = Pool::new(1);
        pool.run(Box::new(|| panic!("a bug"))).expect("run");
        let (done, finished) = mpsc::channel();
        pool.run(Box::new(move || {
            let _ = done.send(std::thread::current().name().map(str::to_owned));
        }))
        .expect("run");
        assert_eq!(
            finished.recv().expect("the next job ran"),
            Some("weft-action".to_owned())
        );
        assert_eq!(pool.threads().0, 1);
    }
}
