//! Fault injection for tests: named points in the code where the process can be made to
//! stop dead, as a power cut or `kill -9` would, at the exact moment that matters (right
//! after an action's target committed, before the repository knows).
//!
//! The point to hit is named by the environment variable `WEFT_FAULT` (read once), e.g.
//! `WEFT_FAULT=after_target_commit`. Unset, every point costs one atomic load. It is meant
//! for end-to-end tests of the real binary, and compiled only into test builds: unit tests,
//! and the binary built with the feature `fault-injection`, which the end-to-end tests'
//! crate turns on. A build without it (`install.sh`'s) has no fault points at all.

/// An action's first target connection has committed; the repository has not recorded it.
pub const AFTER_TARGET_COMMIT: &str = "after_target_commit";
/// An action's module has run; its target connections have not committed yet (also
/// `before_target_commit@ACTION`, for one action: [`hit_for`]).
pub const BEFORE_TARGET_COMMIT: &str = "before_target_commit";

/// The repository committed an action's end with the claim of the next action, and its
/// answer was lost (as when the connection breaks at the commit): the end is tried again,
/// and the action claimed runs here on no slot. Once in a process's life.
pub const END_ANSWER_LOST: &str = "end_answer_lost";

/// A notification is claimed for sending; nothing was sent.
pub const BEFORE_NOTIFICATION_SEND: &str = "before_notification_send";
/// A notification's receiver took it; that it was sent is not recorded.
pub const AFTER_NOTIFICATION_SEND: &str = "after_notification_send";

/// A backfill's start has begun: its instance and the claim of the start are committed;
/// nothing of it has run.
pub const AFTER_BACKFILL_START: &str = "after_backfill_start";

#[cfg(any(test, feature = "fault-injection"))]
fn armed() -> Option<&'static str> {
    static POINT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    POINT
        .get_or_init(|| std::env::var("WEFT_FAULT").ok().filter(|v| !v.is_empty()))
        .as_deref()
}

/// Stops the process at once (no destructor runs, nothing is flushed) when `point` is the
/// one `WEFT_FAULT` names.
#[cfg(any(test, feature = "fault-injection"))]
pub fn hit(point: &str) {
    if armed() == Some(point) {
        eprintln!("weft: WEFT_FAULT={point}: stopping the process here");
        std::process::abort();
    }
}

/// Nothing: this build has no fault points (see the module's words).
#[cfg(not(any(test, feature = "fault-injection")))]
#[inline(always)]
pub fn hit(_point: &str) {}

/// [`hit`] at a point that concerns one action: `WEFT_FAULT` names `point` for every
/// action, or `point@ACTION` for action `action` alone (so that a test stops at the action
/// that matters, not at the ones before it).
#[cfg(any(test, feature = "fault-injection"))]
pub fn hit_for(point: &str, action: i64) {
    let Some(armed) = armed() else { return };
    let named = armed
        .strip_prefix(point)
        .and_then(|rest| rest.strip_prefix('@'))
        .and_then(|id| id.parse::<i64>().ok());
    if armed == point || named == Some(action) {
        eprintln!("weft: WEFT_FAULT={armed}: stopping the process here");
        std::process::abort();
    }
}

/// Nothing: this build has no fault points (see the module's words).
#[cfg(not(any(test, feature = "fault-injection")))]
#[inline(always)]
pub fn hit_for(_point: &str, _action: i64) {}

/// Whether the process lives through the fault `point` now: `point` is the one
/// `WEFT_FAULT` names, and this is its first hit.
#[cfg(any(test, feature = "fault-injection"))]
pub fn once(point: &str) -> bool {
    static DONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    armed() == Some(point) && !DONE.swap(true, std::sync::atomic::Ordering::SeqCst)
}

/// Never: this build has no fault points (see the module's words).
#[cfg(not(any(test, feature = "fault-injection")))]
#[inline(always)]
pub fn once(_point: &str) -> bool {
    false
}
