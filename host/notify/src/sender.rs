//! The sender: each host's thread that looks for late runs ([`crate::late`]) and takes the
//! due notifications from the repository's
//! outbox, each claimed for [`CLAIM`] so that one host sends it, renders it over its run's
//! facts, sends it through its channel, and marks it sent, or due again after a back-off
//! (`notify_retry_seconds`, doubled at each try, at most 15 minutes), or given up
//! `notify_give_up_minutes` after its event with the reason kept.
//!
//! It wakes at each change to instances this host knows of (an event's notification is
//! recorded in the same transaction as the change) and at the next due time, reads when the
//! next notification is due, and claims (a write) only when one is; it looks for late runs at
//! most once a second; a host that
//! is killed while sending leaves its claim to run out, and another host (or itself, after
//! a restart) sends it again: at least once, with the same `Weft-Notification-Id`.

use crate::channels::{self, SmtpServer};
use crate::templates;
use std::sync::Arc;
use std::time::{Duration, Instant};
use weft_core::keys::KeyStore;
use weft_repo::Repository;
use weft_repo::notifications::{Outgoing, RunFacts};

/// How long a host holds a notification it is sending: longer than a send may take.
pub const CLAIM: Duration = Duration::from_secs(120);

/// How many notifications a host claims at once.
const BATCH: i64 = 20;

/// The longest back-off between two tries.
const MAX_BACKOFF: Duration = Duration::from_secs(900);

/// How long the sender sleeps at most without a change (another host's event on a shared
/// repository, a planned start missed).
const IDLE: Duration = Duration::from_secs(5);

/// How often the sender looks for late runs at most.
const LATE_EVERY: Duration = Duration::from_secs(1);

/// How many failed actions a notification lists.
const FAILED_SHOWN: i64 = 10;

/// What wakes the sender: the count of changes to instances and a way to wait for the next.
pub trait Bell: Send + Sync {
    /// The count now.
    fn count(&self) -> u64;
    /// Waits until the count is past `seen` or `patience` passed.
    fn wait_past(&self, seen: u64, patience: Duration);
    /// Whether the server is stopping.
    fn stopped(&self) -> bool;
}

/// What the sender needs.
pub struct Sender {
    /// The repository.
    pub repo: Arc<Repository>,
    /// The key file (SMTP servers, webhook secrets), read at each send.
    pub keys: Arc<KeyStore>,
    /// This host's id (its claims carry it).
    pub host: String,
    /// The web page's address, for the link to a run.
    pub page_url: Option<String>,
    /// The first back-off.
    pub retry: Duration,
    /// How long after its event a notification is given up.
    pub give_up: Duration,
    /// Whether this host keeps its id across restarts (a shared repository): it lets go of
    /// its own claims at its start; else (the one server of a SQLite repository) of all.
    pub shared: bool,
    /// Called at the moments a fault test stops the process (the server's fault points).
    pub fault: fn(Moment),
}

/// The moments of a send that a fault test may stop the process at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moment {
    /// A notification is claimed; nothing was sent.
    BeforeSend,
    /// The receiver took it; that it was sent is not recorded.
    AfterSend,
}

/// Starts the sender's thread; it ends when `bell` says the server stops.
///
/// # Errors
///
/// The thread could not be made.
pub fn spawn(sender: Sender, bell: Arc<dyn Bell>) -> std::io::Result<()> {
    // reqwest is built without a crypto provider: the one weft uses everywhere (ring).
    let _ = rustls::crypto::ring::default_provider().install_default();
    std::thread::Builder::new()
        .name("weft-notify".to_owned())
        .spawn(move || sender.run(bell.as_ref()))?;
    Ok(())
}

fn now() -> chrono::DateTime<chrono::Utc> {
    weft_core::sched::clock::current().clock.now()
}

use weft_repo::{parse_stored_time as parse, stored_time as stored};

impl Sender {
    fn run(&self, bell: &dyn Bell) {
        // What a stopped process of this host was sending is due again now, not when its
        // claim would have run out (on this thread: the repository blocks).
        let mine = self.shared.then_some(self.host.as_str());
        match self.repo.release_notification_claims(mine) {
            Ok(0) => {}
            Ok(n) => {
                tracing::info!(
                    message = "Notifications a stopped server was sending are due again.",
                    notifications = n
                );
            }
            Err(e) => {
                tracing::warn!(message = "The claims of a stopped server on notifications cannot be let go; they run out by themselves.", error = %e);
            }
        }
        let mut late_checked: Option<Instant> = None;
        loop {
            if bell.stopped() {
                return;
            }
            let seen = bell.count();
            // Lateness moves with the clock, not with changes: once a second is enough,
            // however many actions end.
            if late_checked.is_none_or(|t| t.elapsed() >= LATE_EVERY) {
                let time = weft_core::sched::clock::current();
                if let Err(e) = crate::late::check(&self.repo, time.clock.now(), time.zone) {
                    tracing::warn!(message = "Late runs cannot be looked for now; looking again later.", error = %e);
                }
                late_checked = Some(Instant::now());
            }
            // A read first: most changes (an action's end) record no notification, and a
            // claim is a write transaction.
            let patience = match self.repo.notifications_next_due() {
                Ok(Some(due)) => parse(&due).map_or(IDLE, |due| {
                    (due - now()).to_std().unwrap_or(Duration::ZERO).min(IDLE)
                }),
                Ok(None) => IDLE,
                Err(e) => {
                    tracing::warn!(message = "The notifications due cannot be read; looking again later.", error = %e);
                    IDLE
                }
            };
            let patience = if patience.is_zero() {
                if self.round() > 0 {
                    continue;
                }
                // Due, and none could be claimed: another host holds them right now.
                LATE_EVERY
            } else {
                patience
            };
            bell.wait_past(seen, patience);
        }
    }

    /// Claims and sends the due notifications; how many it claimed.
    fn round(&self) -> usize {
        let at = now();
        let until = at + chrono::Duration::from_std(CLAIM).unwrap_or(chrono::Duration::MAX);
        let claimed = match self.repo.claim_notifications(
            &self.host,
            &stored(at),
            &stored(until),
            BATCH,
        ) {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(message = "Due notifications cannot be claimed; trying again later.", error = %e);
                return 0;
            }
        };
        let n = claimed.len();
        for o in claimed {
            self.send_one(&o);
        }
        n
    }

    fn send_one(&self, o: &Outgoing) {
        (self.fault)(Moment::BeforeSend);
        let result = self.send(o);
        if result.is_ok() {
            (self.fault)(Moment::AfterSend);
        }
        let at = now();
        let recorded = match &result {
            Ok(()) => {
                tracing::info!(message = "Notification sent.", notification_id = o.id, channel = %o.message.channel.name, event = %o.message.facts["event"].as_str().unwrap_or(""));
                self.repo.notification_sent(o.id, &self.host, &stored(at))
            }
            Err(error) => {
                let created = parse(&o.created_at).unwrap_or(at);
                let tries = o.attempts + 1;
                let backoff = self
                    .retry
                    .saturating_mul(1u32 << (tries - 1).clamp(0, 20))
                    .min(MAX_BACKOFF.max(self.retry));
                let next =
                    at + chrono::Duration::from_std(backoff).unwrap_or(chrono::Duration::MAX);
                let give_up = created
                    + chrono::Duration::from_std(self.give_up).unwrap_or(chrono::Duration::MAX);
                if next > give_up {
                    let why = format!(
                        "given up after {tries} tries over {} minutes: {error}",
                        (at - created).num_minutes()
                    );
                    tracing::error!(message = "A notification was given up.", notification_id = o.id, channel = %o.message.channel.name, error = %why);
                    self.repo.notification_failed(o.id, &self.host, &why, None)
                } else {
                    tracing::warn!(message = "A notification could not be sent; trying again later.", notification_id = o.id, channel = %o.message.channel.name, attempt = tries, retry_in_seconds = backoff.as_secs(), error = %error);
                    self.repo
                        .notification_failed(o.id, &self.host, error, Some(&stored(next)))
                }
            }
        };
        match recorded {
            Ok(true) => {}
            Ok(false) => tracing::warn!(
                message = "A notification's claim ran out while it was sent; another host may send it again.",
                notification_id = o.id
            ),
            Err(e) => {
                tracing::warn!(message = "A notification's send cannot be recorded; it is sent again when its claim runs out.", notification_id = o.id, error = %e)
            }
        }
    }

    /// Renders `o` over its run's facts and sends it.
    fn send(&self, o: &Outgoing) -> Result<(), String> {
        let facts = self.facts(o)?;
        let channel = &o.message.channel;
        let keys = self
            .keys
            .current()
            .map_err(|e| format!("the key file cannot be read: {e}"))?;
        match channel.kind.as_str() {
            "webhook" => {
                let body = match o.message.body.as_deref().or(channel.body.as_deref()) {
                    Some(t) => templates::render(t, &facts)?,
                    None => facts.to_string(),
                };
                let secret = match &channel.secret {
                    Some(name) => Some(
                        keys.get(name)
                            .ok_or_else(|| {
                                format!("the key file has no entry `{name}` (the webhook's secret)")
                            })?
                            .resolved()
                            .map_err(|e| e.to_string())?
                            .password
                            .clone(),
                    ),
                    None => None,
                };
                channels::webhook(channel, secret.as_deref(), o.id, &body, now().timestamp())
            }
            "email" => {
                let name = channel
                    .server
                    .as_deref()
                    .ok_or("the e-mail channel has no `server`")?;
                let entry = keys.get(name).ok_or_else(|| {
                    format!("the key file has no entry `{name}` (the e-mail channel's SMTP server)")
                })?;
                let server = SmtpServer::of(entry)?;
                let subject = templates::render(
                    o.message
                        .subject
                        .as_deref()
                        .or(channel.subject.as_deref())
                        .unwrap_or(templates::EMAIL_SUBJECT),
                    &facts,
                )?;
                let body = templates::render(
                    o.message
                        .body
                        .as_deref()
                        .or(channel.body.as_deref())
                        .unwrap_or(templates::EMAIL_BODY),
                    &facts,
                )?;
                let timeout = channel
                    .timeout_seconds
                    .and_then(|s| u64::try_from(s).ok())
                    .map_or(channels::DEFAULT_TIMEOUT, Duration::from_secs);
                channels::email(channel, &server, &subject, &body, timeout)
            }
            other => Err(format!("channel type `{other}` is not email or webhook")),
        }
    }

    /// The facts a template sees: the event's, its run's as they are now, the link.
    fn facts(&self, o: &Outgoing) -> Result<serde_json::Value, String> {
        let mut f = o.message.facts.clone();
        f["id"] = o.id.into();
        let instance = f["instanceId"].as_i64();
        let run = match instance {
            Some(id) => self
                .repo
                .run_facts(id, FAILED_SHOWN)
                .map_err(|e| format!("the facts of run {id} cannot be read: {e}"))?,
            None => None,
        };
        if let Some(run) = &run {
            add_run(&mut f, run);
        }
        if let (Some(base), Some(id)) = (&self.page_url, instance) {
            f["url"] = format!("{}#/runs/{id}", with_slash(base)).into();
        }
        let event = f["event"].as_str().unwrap_or("").to_owned();
        let action_name = f["actionId"].as_i64().and_then(|a| {
            run.as_ref()
                .and_then(|r| r.failed.iter().find(|(id, _, _)| *id == a))
                .map(|(_, name, _)| name.clone())
        });
        if let Some(name) = &action_name {
            f["actionName"] = name.clone().into();
        }
        f["headline"] = headline(&event, &f, action_name.as_deref()).into();
        Ok(f)
    }
}

fn with_slash(base: &str) -> String {
    if base.ends_with('/') {
        base.to_owned()
    } else {
        format!("{base}/")
    }
}

/// A run's facts into `f`.
fn add_run(f: &mut serde_json::Value, run: &RunFacts) {
    f["state"] = run.state.clone().into();
    f["startedAt"] = run.started_at.clone().into();
    f["user"] = run.user.clone().into();
    if let Some(p) = &run.planned_start {
        f["plannedStart"] = p.clone().into();
    }
    f["scheduleDate"] = run
        .planned_start
        .as_deref()
        .unwrap_or(&run.started_at)
        .get(..10)
        .unwrap_or("")
        .into();
    if let Some(end) = &run.ended_at {
        f["endedAt"] = end.clone().into();
        if let (Some(a), Some(b)) = (parse(&run.started_at), parse(end)) {
            let ms = (b - a).num_milliseconds().max(0);
            f["seconds"] = (ms as f64 / 1000.0).into();
            f["duration"] = duration(ms / 1000).into();
        }
    }
    f["failedCount"] = run.failed_count.into();
    f["failedActions"] = run
        .failed
        .iter()
        .map(|(id, name, error)| {
            serde_json::json!({"id": id, "name": name, "error": error,
                "firstLine": error.lines().next().unwrap_or("")})
        })
        .collect::<Vec<_>>()
        .into();
}

/// `s` seconds as `2 h 5 min 3 s`.
fn duration(s: i64) -> String {
    let (h, m, s) = (s / 3600, (s / 60) % 60, s % 60);
    match (h, m) {
        (0, 0) => format!("{s} s"),
        (0, _) => format!("{m} min {s} s"),
        _ => format!("{h} h {m} min {s} s"),
    }
}

/// What happened, in a few words.
fn headline(event: &str, f: &serde_json::Value, action: Option<&str>) -> String {
    let run = f["instanceId"]
        .as_i64()
        .map_or_else(String::new, |id| format!("run {id}"));
    match event {
        "started" => format!("{run} started"),
        "finished" => format!("{run} finished"),
        "failed" => format!("{run} failed"),
        "halted" => format!("{run} was halted"),
        "interrupted" => format!("{run} was interrupted by a server stop"),
        "actionFailed" => format!(
            "action {} of {run} failed",
            action.map_or_else(
                || f["actionId"].as_i64().unwrap_or(0).to_string(),
                str::to_owned
            )
        ),
        "missed" => format!(
            "the planned start {} was missed",
            f["planned"].as_str().unwrap_or("")
        ),
        "late" => match (f["lateAt"].as_str(), f["longerThanMinutes"].as_str()) {
            (Some(at), _) => format!("no run of the day finished by {at}"),
            (_, Some(m)) => format!("{run} has been going for more than {m} minutes"),
            _ => format!("{run} is late"),
        },
        other => format!("{run} {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_headlines_read_as_words() {
        assert_eq!(duration(41), "41 s");
        assert_eq!(duration(125), "2 min 5 s");
        assert_eq!(duration(7_503), "2 h 5 min 3 s");
        let f =
            serde_json::json!({"instanceId": 812, "actionId": 4100, "planned": "2026-11-27 01:00"});
        assert_eq!(headline("failed", &f, None), "run 812 failed");
        assert_eq!(
            headline("actionFailed", &f, Some("load orders")),
            "action load orders of run 812 failed"
        );
        assert_eq!(
            headline("actionFailed", &f, None),
            "action 4100 of run 812 failed"
        );
        assert_eq!(
            headline("missed", &f, None),
            "the planned start 2026-11-27 01:00 was missed"
        );
    }
}
