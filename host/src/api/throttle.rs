//! Failed sign-ins throttled per client: a client address that sent [`MAX_FAILURES`] wrong
//! or missing tokens within [`WINDOW`] has every further wrong one refused (429,
//! `request.throttled`, `Retry-After`) for [`BLOCK`], so that guessing is slowed and said in
//! the log. A right token always passes (one client on an address shared by many, loopback
//! or a proxy, cannot lock the others out) and clears the count. An IPv6 client counts by
//! its /64 (an attacker changes addresses within it freely). At most [`MAX_CLIENTS`]
//! addresses are remembered (the longest quiet forgotten first).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failures within [`WINDOW`] that block a client.
pub const MAX_FAILURES: u32 = 10;
/// How far back failures count.
pub const WINDOW: Duration = Duration::from_secs(60);
/// How long a blocked client is refused.
pub const BLOCK: Duration = Duration::from_secs(60);
/// The most client addresses remembered.
const MAX_CLIENTS: usize = 10_000;

/// What is known of one client.
#[derive(Debug, Clone, Copy)]
struct Client {
    /// Failures since `since`.
    failures: u32,
    /// When the first of them came.
    since: Instant,
    /// Refused until then.
    blocked_until: Option<Instant>,
    /// Its last failure.
    last: Instant,
}

/// The failed sign-ins of each client address.
#[derive(Debug, Default)]
pub struct Throttle {
    clients: Mutex<HashMap<IpAddr, Client>>,
}

/// The address a client counts by: an IPv4 address (IPv4-mapped IPv6 ones too) as it is, an
/// IPv6 one by its /64.
fn key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
        v4 => v4,
    }
}

impl Throttle {
    /// `Err(seconds to wait)` while `ip` is blocked at `now`.
    pub fn check(&self, ip: IpAddr, now: Instant) -> Result<(), u64> {
        let ip = key(ip);
        let clients = self
            .clients
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match clients.get(&ip).and_then(|c| c.blocked_until) {
            Some(until) if until > now => Err(until.duration_since(now).as_secs().max(1)),
            _ => Ok(()),
        }
    }

    /// Counts a failed sign-in of `ip` at `now`; whether it is blocked now.
    pub fn failed(&self, ip: IpAddr, now: Instant) -> bool {
        let ip = key(ip);
        let mut clients = self
            .clients
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if clients.len() >= MAX_CLIENTS && !clients.contains_key(&ip) {
            // The longest quiet is forgotten.
            if let Some(oldest) = clients.iter().min_by_key(|(_, c)| c.last).map(|(k, _)| *k) {
                clients.remove(&oldest);
            }
        }
        let c = clients.entry(ip).or_insert(Client {
            failures: 0,
            since: now,
            blocked_until: None,
            last: now,
        });
        if now.duration_since(c.since) > WINDOW {
            c.failures = 0;
            c.since = now;
        }
        if c.blocked_until.is_some_and(|until| until <= now) {
            c.blocked_until = None;
        }
        c.failures += 1;
        c.last = now;
        if c.failures >= MAX_FAILURES {
            c.blocked_until = Some(now + BLOCK);
            c.failures = 0;
            c.since = now;
            return true;
        }
        false
    }

    /// A right token from `ip` at `now`: its failures are forgotten once it is not blocked.
    pub fn succeeded(&self, ip: IpAddr, now: Instant) {
        let ip = key(ip);
        let mut clients = self
            .clients
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if clients
            .get(&ip)
            .is_some_and(|c| c.blocked_until.is_none_or(|until| until <= now))
        {
            clients.remove(&ip);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ten_failures_in_a_minute_block_a_client_for_a_minute_and_not_another() {
        let t = Throttle::default();
        let (a, b): (IpAddr, IpAddr) = (
            "10.0.0.1".parse().expect("ip"),
            "10.0.0.2".parse().expect("ip"),
        );
        let start = Instant::now();
        for i in 0..MAX_FAILURES - 1 {
            assert!(!t.failed(a, start + Duration::from_secs(u64::from(i))));
        }
        assert!(t.check(a, start + Duration::from_secs(10)).is_ok());
        assert!(
            t.failed(a, start + Duration::from_secs(10)),
            "the tenth blocks"
        );
        assert_eq!(t.check(a, start + Duration::from_secs(11)), Err(59));
        assert!(
            t.check(b, start + Duration::from_secs(11)).is_ok(),
            "another client is not"
        );
        // A right token during the block does not lift it; after it, the client may try, and
        // a right token then clears its count.
        t.succeeded(a, start + Duration::from_secs(30));
        assert!(t.check(a, start + Duration::from_secs(30)).is_err());
        assert!(t.check(a, start + Duration::from_secs(71)).is_ok());
        assert!(!t.failed(a, start + Duration::from_secs(72)));
        t.succeeded(a, start + Duration::from_secs(73));
        assert!(
            t.clients.lock().expect("lock").is_empty(),
            "cleared after the block"
        );
        // An IPv6 client counts by its /64; an IPv4-mapped one as its IPv4 address.
        let t = Throttle::default();
        for i in 0..MAX_FAILURES {
            let ip: IpAddr = format!("2001:db8:1:2::{i:x}").parse().expect("ip");
            t.failed(ip, start);
        }
        let other: IpAddr = "2001:db8:1:2:ffff::1".parse().expect("ip");
        assert!(t.check(other, start).is_err(), "the same /64");
        let mapped: IpAddr = "::ffff:10.0.0.2".parse().expect("ip");
        assert!(t.check(mapped, start).is_ok());
        // Failures spread wider than the window never block.
        let t = Throttle::default();
        for i in 0..30 {
            assert!(!t.failed(b, start + Duration::from_secs(i * 7)));
        }
    }
}
