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

    /// Checks `secret` against `hash` the slow way; `None`, at once, while
    /// [`CHECKS_AT_ONCE`] checks run already (a flood of made-up tokens holds two blocking
    /// threads, not all of them).
    pub(super) fn check(&self, hash: &str, secret: &str) -> Option<bool> {
        {
            let mut busy = self.checks.lock().ok()?;
            if *busy >= CHECKS_AT_ONCE {
                return None;
            }
            *busy += 1;
        }
        let ok = weft_core::tokens::verify(hash, secret);
        if let Ok(mut busy) = self.checks.lock() {
            *busy -= 1;
        }
        Some(ok)
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

/// Whether `a` and `b` are equal, in a time that depends on neither where they differ nor
/// their lengths (their SHA-256 digests are compared).
pub(super) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let digest = |t: &[u8]| weft_core::tokens::fingerprint(&String::from_utf8_lossy(t));
    let (a, b) = (digest(a), digest(b));
    a.iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

#[cfg(test)]
mod tests {
    use super::{CHECKS_AT_ONCE, Verified, constant_time_eq};

    #[test]
    fn a_check_past_the_bound_is_answered_at_once_and_a_verified_secret_is_remembered() {
        let v = Verified::default();
        let token = weft_core::tokens::issue().expect("token");
        let (id, secret) = weft_core::tokens::parse(&token.text).expect("form");
        *v.checks.lock().expect("lock") = CHECKS_AT_ONCE;
        assert_eq!(v.check(&token.hash, secret), None, "busy: no wait");
        *v.checks.lock().expect("lock") = 0;
        assert_eq!(v.check(&token.hash, secret), Some(true));
        assert_eq!(v.check(&token.hash, "0"), Some(false));
        assert!(!v.knows(id, &token.hash, secret));
        assert!(v.keep(id, &token.hash, secret), "its first use is written");
        assert!(v.knows(id, &token.hash, secret));
        assert!(!v.keep(id, &token.hash, secret), "not again within minutes");
        assert!(
            !v.knows(id, "another hash", secret),
            "a changed row is checked again"
        );
        assert!(!v.knows(id, &token.hash, "another secret"));
    }

    #[test]
    fn equal_texts_compare_equal_whatever_their_lengths() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        assert!(!constant_time_eq(b"", b"a"));
    }
}
