//! [`FileLocks`]: SQLite lets one writer into a file at a time, so actions that
//! write the same SQLite file take turns here (a [`FilesHeld`] for all of an action's files
//! at once, given back when dropped) instead of failing with SQLITE_BUSY when one of them
//! runs longer than the busy timeout.

use std::collections::HashSet;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// The SQLite files that running actions write, each held by one action at a time.
#[derive(Debug, Default)]
pub struct FileLocks {
    held: Mutex<HashSet<String>>,
    freed: Condvar,
}

/// The files one action holds; dropping it gives them back.
#[derive(Debug)]
pub struct FilesHeld<'a> {
    locks: &'a FileLocks,
    files: Vec<String>,
}

impl FileLocks {
    fn held(&self) -> MutexGuard<'_, HashSet<String>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Holds every one of `files`, waiting until none is held by another action. All are
    /// taken at once, so two actions that each need two files never hold one each.
    pub fn hold(&self, mut files: Vec<String>) -> FilesHeld<'_> {
        files.sort();
        files.dedup();
        let mut held = self.held();
        while files.iter().any(|f| held.contains(f)) {
            held = self
                .freed
                .wait(held)
                .unwrap_or_else(PoisonError::into_inner);
        }
        held.extend(files.iter().cloned());
        FilesHeld { locks: self, files }
    }

    /// How many files are held.
    pub fn in_use(&self) -> usize {
        self.held().len()
    }
}

impl Drop for FilesHeld<'_> {
    fn drop(&mut self) {
        if self.files.is_empty() {
            return;
        }
        let mut held = self.locks.held();
        for f in &self.files {
            held.remove(f);
        }
        drop(held);
        self.locks.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_writing_one_file_take_turns_and_others_do_not_wait() {
        let locks = FileLocks::default();
        let a = locks.hold(vec!["/d/a.db".into(), "/d/b.db".into(), "/d/a.db".into()]);
        assert_eq!(locks.in_use(), 2, "each file once");
        // Another file is free at once; an action with no SQLite file holds nothing.
        let c = locks.hold(vec!["/d/c.db".into()]);
        drop(locks.hold(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                // Needs b (held by `a`) and c (held by `c`): waits for both.
                let held = locks.hold(vec!["/d/c.db".into(), "/d/b.db".into()]);
                tx.send(()).expect("send");
                drop(held);
            });
            drop(c);
            assert!(
                rx.try_recv().is_err(),
                "the waiter must not run while `a` holds b"
            );
            drop(a);
            rx.recv().expect("the waiter ran once both were free");
            waiter.join().expect("waiter");
        });
        assert_eq!(locks.in_use(), 0);
    }
}
