//! Idle PostgreSQL connections kept for reuse, by connection entry (URL, user, password and
//! options): opening one costs a TCP connect, maybe TLS, and authentication, far more than a
//! small action. Bounded: at most [`PER_ENTRY`] idle connections an entry and [`TOTAL`] in all
//! (the oldest closed first), each closed after it has been idle for its entry's
//! `idle_timeout` (default [`DEFAULT_IDLE`]) by a sweeping thread that runs while anything is
//! idle. A connection goes back only outside a transaction, with its session reset
//! (`DISCARD ALL`) unless it only read the catalog, and only while it is open. Connections are closed outside the pool's
//! lock (a goodbye to the server may take a moment).

use crate::session::Session;
use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// Idle connections kept an entry.
pub const PER_ENTRY: usize = 8;
/// Idle connections kept in all.
pub const TOTAL: usize = 64;
/// How long a connection is kept idle unless its entry's `idle_timeout` says otherwise.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(30);
/// How often the sweeper looks.
const SWEEP: Duration = Duration::from_millis(500);

/// Where a connection comes from and goes back to: its entry's identity.
pub type Slot = String;

#[derive(Default)]
struct Idle {
    /// Each entry's idle connections, oldest first, with the instant each is to be closed.
    by_entry: HashMap<Slot, VecDeque<(Session, Instant)>>,
    count: usize,
    sweeping: bool,
}

fn idle() -> std::sync::MutexGuard<'static, Idle> {
    static IDLE: OnceLock<Mutex<Idle>> = OnceLock::new();
    IDLE.get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

/// An idle connection of `slot` that is still open, if any (one the server ended while it
/// was idle is closed and the next is tried).
pub fn take(slot: &Slot) -> Option<Session> {
    let mut closed = Vec::new();
    let found = {
        let mut idle = idle();
        let mut found = None;
        while let Some((mut s, _)) = idle.by_entry.get_mut(slot).and_then(VecDeque::pop_back) {
            idle.count -= 1;
            // Ended by the server while idle (restarted, terminated): closed, not handed out.
            if s.is_closed_now() {
                closed.push(s);
            } else {
                found = Some(s);
                break;
            }
        }
        found
    };
    drop(closed);
    found
}

/// Gives `client` back to `slot`, to be closed after `keep` idle; closes it when it cannot
/// be reset, `keep` is zero, or the pool is full. A session that ran anything of its user's
/// (`used`) is reset first (`DISCARD ALL`, which also deallocates its kept statements); one
/// that only read the catalog through kept statements goes back as it is, with them.
pub fn give_back(slot: Slot, mut client: Session, keep: Duration, used: bool) {
    if keep.is_zero() || client.is_closed() {
        return;
    }
    if used {
        client.forget_kept();
        if client.batch_execute("DISCARD ALL").is_err() {
            return;
        }
    }
    let mut gone = None;
    let start_sweeper = {
        let mut idle = idle();
        if idle
            .by_entry
            .get(&slot)
            .is_some_and(|q| q.len() >= PER_ENTRY)
        {
            gone = Some(client);
        } else {
            if idle.count >= TOTAL {
                // The oldest of the longest queue goes.
                let longest = idle
                    .by_entry
                    .iter()
                    .max_by_key(|(_, q)| q.len())
                    .map(|(k, _)| k.clone());
                if let Some(k) = longest
                    && let Some((s, _)) = idle.by_entry.get_mut(&k).and_then(VecDeque::pop_front)
                {
                    idle.count -= 1;
                    gone = Some(s);
                }
            }
            idle.by_entry
                .entry(slot)
                .or_default()
                .push_back((client, Instant::now() + keep));
            idle.count += 1;
        }
        !std::mem::replace(&mut idle.sweeping, true)
    };
    drop(gone);
    if start_sweeper {
        let started = std::thread::Builder::new()
            .name("weft-pg-pool".to_owned())
            .spawn(sweep);
        if started.is_err() {
            idle().sweeping = false;
        }
    }
}

/// Closes connections whose idle time is up, until none is idle.
fn sweep() {
    loop {
        std::thread::sleep(SWEEP);
        let now = Instant::now();
        let mut due = Vec::new();
        {
            let mut idle = idle();
            let mut count = idle.count;
            for q in idle.by_entry.values_mut() {
                while q.front().is_some_and(|(_, until)| *until <= now) {
                    if let Some((s, _)) = q.pop_front() {
                        due.push(s);
                        count -= 1;
                    }
                }
            }
            idle.count = count;
            idle.by_entry.retain(|_, q| !q.is_empty());
            if idle.count == 0 {
                idle.sweeping = false;
                drop(idle);
                drop(due);
                return;
            }
        }
        drop(due);
    }
}
