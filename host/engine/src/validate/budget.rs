//! How much action text modules parse at once. A parser's tree of a statement costs far
//! more memory than its text (sqlparser: about 85 bytes a byte for an `IN` list of a million
//! numbers), so the texts that modules validate at once, over every deploy in flight, share
//! [`BUDGET`] bytes: a module's `validate` waits until its action's texts fit beside the others
//! (a text larger than the budget runs alone), in the order they asked, and a text longer
//! than [`MAX_CHECKED`] is refused rather than parsed. Small texts (under [`FREE`]) pass
//! without waiting.

use std::sync::{Condvar, Mutex, PoisonError};

/// Bytes of action text parsed at once over all deploys.
pub const BUDGET: usize = 2 * 1024 * 1024;

/// The longest text a module is asked to validate (its action text and text attributes
/// together); a longer one is refused (`module.text_too_long`), or deployed with
/// `validate=false`.
pub const MAX_CHECKED: usize = 2 * 1024 * 1024;

/// Texts this short are parsed without taking from the budget.
pub const FREE: usize = 16 * 1024;

/// What is being parsed, and the turns of those that wait.
struct Pool {
    state: Mutex<State>,
    freed: Condvar,
}

struct State {
    /// Bytes being parsed now.
    in_use: usize,
    /// The next turn to hand out, and the turn that may go next: texts take the budget in the
    /// order they asked for it, so a large one is not passed over for ever by smaller ones.
    next: u64,
    serving: u64,
}

static POOL: Pool = Pool {
    state: Mutex::new(State {
        in_use: 0,
        next: 0,
        serving: 0,
    }),
    freed: Condvar::new(),
};

/// A share of the budget, given back when dropped.
#[must_use = "the share is given back when dropped"]
pub struct Share(usize);

/// Waits until `bytes` fit beside what is being parsed (alone, for more than the budget).
pub fn take(bytes: usize) -> Share {
    if bytes < FREE {
        return Share(0);
    }
    let mut state = POOL.state.lock().unwrap_or_else(PoisonError::into_inner);
    let turn = state.next;
    state.next += 1;
    while state.serving != turn || (state.in_use > 0 && state.in_use + bytes > BUDGET) {
        state = POOL
            .freed
            .wait(state)
            .unwrap_or_else(PoisonError::into_inner);
    }
    state.in_use += bytes;
    state.serving += 1;
    // The next in turn may fit beside this one.
    POOL.freed.notify_all();
    Share(bytes)
}

impl Drop for Share {
    fn drop(&mut self) {
        if self.0 == 0 {
            return;
        }
        let mut state = POOL.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.in_use = state.in_use.saturating_sub(self.0);
        POOL.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn large_texts_take_turns_within_the_budget() {
        static PEAK: AtomicUsize = AtomicUsize::new(0);
        static NOW: AtomicUsize = AtomicUsize::new(0);
        let each = BUDGET / 2 + 1;
        std::thread::scope(|s| {
            for _ in 0..6 {
                s.spawn(move || {
                    let _share = take(each);
                    let now = NOW.fetch_add(each, Ordering::SeqCst) + each;
                    PEAK.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    NOW.fetch_sub(each, Ordering::SeqCst);
                });
            }
        });
        assert_eq!(PEAK.load(Ordering::SeqCst), each, "one at a time");
        // Small texts never wait, and one larger than the budget still runs (alone).
        let _small = take(FREE - 1);
        drop(take(BUDGET * 3));
    }
}
