//! The users' secrets this server verified (issue 28): checking a token against its
//! Argon2id hash costs tens of milliseconds on purpose, so each secret verified is kept as a
//! SHA-256 fingerprint beside the hash it matched, by token id; a row whose hash changed is
//! checked again. At most two slow checks run at once.

use std::collections::HashMap;
use std::sync::Mutex;

/// The most verified secrets kept; past it the store starts again.
const MOST_VERIFIED: usize = 10_000;

/// How seldom a token's last use is written (one write a token in this time).
const USE_RECORDED_EVERY: std::time::Duration = std::time::Duration::from_secs(300);

/// At most this many Argon2id checks at once (each takes 19 MiB for tens of milliseconds).
const CHECKS_AT_ONCE: usize = 2;

/// The secrets this server verified: by token id, the SHA-256 of the secret and the hash it
/// matched (a row whose hash changed is checked again), and when its use was last written.
#[derive(Debug)]
pub struct Verified {
    known: Mutex<HashMap<String, Known>>,
    checks: std::sync::Mutex<usize>,
    check_done: std::sync::Condvar,
    /// The hash of a secret nobody holds, checked for a token id that does not exist.
    decoy: std::sync::OnceLock<String>,
}

#[derive(Debug, Clone)]
struct Known {
    fingerprint: [u8; 32],
    hash: String,
    recorded: std::time::Instant,
}

impl Default for Verified {
    fn default() -> Self {
        Verified {
            known: Mutex::new(HashMap::new()),
            checks: Mutex::new(0),
            check_done: std::sync::Condvar::new(),
            decoy: std::sync::OnceLock::new(),
        }
    }
}

impl Verified {
    pub(super) fn decoy(&self) -> &str {
        self.decoy.get_or_init(|| {
            weft_core::tokens::issue()
                .map(|t| t.hash)
                .unwrap_or_default()
        })
    }

    /// Whether `secret` was verified against `hash` for token `id` before.
    pub(super) fn knows(&self, id: &str, hash: &str, secret: &str) -> bool {
        let print = weft_core::tokens::fingerprint(secret);
        self.known.lock().is_ok_and(|k| {
            k.get(id).is_some_and(|known| {
                known.hash == hash && constant_time_eq(&known.fingerprint, &print)
            })
        })
    }

    /// Checks `secret` against `hash` the slow way, at most [`CHECKS_AT_ONCE`] at a time.
    pub(super) fn check(&self, hash: &str, secret: &str) -> bool {
        {
            let Ok(mut busy) = self.checks.lock() else {
                return false;
            };
            while *busy >= CHECKS_AT_ONCE {
                busy = match self.check_done.wait(busy) {
                    Ok(b) => b,
                    Err(_) => return false,
                };
            }
            *busy += 1;
        }
        let ok = weft_core::tokens::verify(hash, secret);
        if let Ok(mut busy) = self.checks.lock() {
            *busy -= 1;
        }
        self.check_done.notify_one();
        ok
    }

    /// Keeps `secret` as verified for token `id` against `hash`; whether its use is due to
    /// be written.
    pub(super) fn keep(&self, id: &str, hash: &str, secret: &str) -> bool {
        let Ok(mut known) = self.known.lock() else {
            return false;
        };
        let now = std::time::Instant::now();
        if let Some(k) = known.get_mut(id)
            && k.hash == hash
        {
            let due = now.duration_since(k.recorded) >= USE_RECORDED_EVERY;
            if due {
                k.recorded = now;
            }
            return due;
        }
        if known.len() >= MOST_VERIFIED {
            known.clear();
        }
        known.insert(
            id.to_owned(),
            Known {
                fingerprint: weft_core::tokens::fingerprint(secret),
                hash: hash.to_owned(),
                recorded: now,
            },
        );
        true
    }
}

/// Whether `a` and `b` are equal, in a time that does not depend on where they differ.
pub(super) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
