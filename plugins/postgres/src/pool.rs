//! Idle PostgreSQL connections kept for reuse, by connection entry (URL, user, password and
//! options): opening one costs a TCP connect, maybe TLS, and authentication, far more than a
//! small action. Bounded: at most [`PER_ENTRY`] idle connections an entry and [`TOTAL`] in all
//! (the oldest closed first). A connection goes back only outside a transaction, with its
//! session reset (`DISCARD ALL`), and only while it is open.

use crate::session::Session;
use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, OnceLock, PoisonError};

/// Idle connections kept an entry.
pub const PER_ENTRY: usize = 8;
/// Idle connections kept in all.
pub const TOTAL: usize = 64;

/// Where a connection comes from and goes back to: its entry's identity.
pub type Slot = String;

#[derive(Default)]
struct Idle {
    by_entry: HashMap<Slot, VecDeque<Session>>,
    count: usize,
}

fn idle() -> std::sync::MutexGuard<'static, Idle> {
    static IDLE: OnceLock<Mutex<Idle>> = OnceLock::new();
    IDLE.get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

/// An idle connection of `slot` that is still open, if any.
pub fn take(slot: &Slot) -> Option<Session> {
    let mut idle = idle();
    loop {
        let client = idle.by_entry.get_mut(slot)?.pop_back()?;
        idle.count -= 1;
        if !client.is_closed() {
            return Some(client);
        }
    }
}

/// Gives `client` back to `slot` (reset first); closes it when it cannot be reset or the pool
/// is full.
pub fn give_back(slot: Slot, mut client: Session) {
    if client.is_closed() || client.batch_execute("DISCARD ALL").is_err() {
        return;
    }
    let mut idle = idle();
    if idle
        .by_entry
        .get(&slot)
        .is_some_and(|q| q.len() >= PER_ENTRY)
    {
        return;
    }
    if idle.count >= TOTAL {
        // The oldest of the longest queue goes.
        let longest = idle
            .by_entry
            .iter()
            .max_by_key(|(_, q)| q.len())
            .map(|(k, _)| k.clone());
        if let Some(k) = longest
            && let Some(q) = idle.by_entry.get_mut(&k)
            && q.pop_front().is_some()
        {
            idle.count -= 1;
        }
    }
    idle.by_entry.entry(slot).or_default().push_back(client);
    idle.count += 1;
}
