//! Notifications: the setup a deploy stores (channels and the rules for every batch, one
//! row), the outbox the events of a run write into in the transaction that makes the event
//! (an instance stored or ended, an action failed, a planned start missed), and what each
//! host's sender claims, marks sent or failed, and what `ListNotifications` reads.
//!
//! A notification is claimed for a while (`claimed_until`) by one host; a host that dies
//! while sending leaves it to another after that time, so a kill between the send and its
//! mark sends it again (at least once; the receiver can tell by its id). Rules are matched
//! when the event is recorded, and the channel and templates copied into the row, so a
//! later deploy does not change what a pending notification says or where it goes.

use crate::error::{Error, Result};
use crate::model::{InstanceState, Notification, NotificationFilter};
use crate::sql::{Dialect, Session, args};
use serde::{Deserialize, Serialize};

/// The one row of `notification_setup`.
pub const SETUP_ID: i64 = 1;

/// The most rows `ListNotifications` answers at once.
pub const LIST_MAX: i64 = 500;

/// The notification setup as stored: the deployed `notifications` object's JSON.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Setup {
    /// The channels, by name.
    #[serde(default)]
    pub channels: Vec<ChannelDef>,
    /// The rules for every batch.
    #[serde(default)]
    pub rules: Vec<RuleDef>,
}

/// A channel as stored (the `.dsr` fields; docs/notifications.md).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChannelDef {
    /// Its name.
    pub name: String,
    /// `email` or `webhook`.
    #[serde(rename = "type")]
    pub kind: String,
    /// E-mail: the key-file entry of the SMTP server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// E-mail: the sender.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// E-mail: the recipients.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub to: Vec<String>,
    /// Webhook: the URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Webhook: the key-file entry of the signing secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// Webhook: seconds a POST may take.
    #[serde(
        default,
        rename = "timeoutSeconds",
        skip_serializing_if = "Option::is_none"
    )]
    pub timeout_seconds: Option<i64>,
    /// The subject's template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// The body's template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
}

/// A rule as stored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RuleDef {
    /// The events.
    #[serde(default)]
    pub on: Vec<String>,
    /// The channels, by name.
    #[serde(default)]
    pub to: Vec<String>,
    /// `late`: not finished by this time of the day (`HH:MM`, service zone).
    #[serde(default, rename = "lateAt", skip_serializing_if = "Option::is_none")]
    pub late_at: Option<String>,
    /// `late`: still going this many minutes after its start.
    #[serde(
        default,
        rename = "longerThanMinutes",
        skip_serializing_if = "Option::is_none"
    )]
    pub longer_than_minutes: Option<i64>,
    /// The subject's template, instead of the channel's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// The body's template, instead of the channel's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
}

/// What a notification row carries to its sender: where it goes, with which templates, and
/// the facts of its event known when it was recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// The channel as it was at the event.
    pub channel: ChannelDef,
    /// The rule's subject template, if it has its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// The rule's body template, if it has its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The event's facts (`event`, `batch`, `instanceId`, `state`, `action`, `error`,
    /// `planned`, `reason`, `at`).
    pub facts: serde_json::Value,
}

/// An event of a run that rules can name.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// Instance `instance` was stored.
    Started {
        /// The instance.
        instance: i64,
    },
    /// Instance `instance` ended in `state`.
    Ended {
        /// The instance.
        instance: i64,
        /// How.
        state: InstanceState,
    },
    /// Action `action` of `instance` failed with `error`.
    ActionFailed {
        /// The instance.
        instance: i64,
        /// The action.
        action: i64,
        /// Its error.
        error: &'a str,
    },
    /// Action `action` of `instance` failed with `error` and is tried again at `retry_at`.
    Retried {
        /// The instance.
        instance: i64,
        /// The action.
        action: i64,
        /// Its error.
        error: &'a str,
        /// When it is tried again (UTC).
        retry_at: &'a str,
    },
    /// A run is late by `rule` (its `lateAt` passed without a finished run of the day, or a
    /// run went on longer than its `longerThanMinutes`); `key` tells this lateness from
    /// others (the day and time, or the instance and minutes).
    Late {
        /// The scheduled batch, if any.
        batch_id: Option<i64>,
        /// The late run, for `longerThanMinutes`.
        instance: Option<i64>,
        /// What tells this lateness from others.
        key: &'a str,
        /// What was late: `lateAt` or `longerThanMinutes` with its value.
        what: (&'a str, &'a str),
    },
    /// The planned start `planned` of batch `batch_id` was passed (`reason`).
    Missed {
        /// The batch.
        batch_id: i64,
        /// The planned start (service time).
        planned: &'a str,
        /// Why.
        reason: &'a str,
    },
}

impl Event<'_> {
    /// The word rules name it by.
    pub fn word(&self) -> &'static str {
        match self {
            Event::Started { .. } => "started",
            Event::Ended { state, .. } => state.word(),
            Event::ActionFailed { .. } => "actionFailed",
            Event::Retried { .. } => "retried",
            Event::Late { .. } => "late",
            Event::Missed { .. } => "missed",
        }
    }
}

/// The events a rule's `on` may name.
pub const EVENTS: [&str; 9] = [
    "started",
    "finished",
    "failed",
    "halted",
    "interrupted",
    "retried",
    "missed",
    "late",
    "actionFailed",
];

/// Reads the stored setup (none before the first deploy of one).
///
/// # Errors
///
/// A repository error, or a stored setup that is no longer readable.
pub fn setup(conn: &dyn Session) -> Result<Option<Setup>> {
    let text: Option<String> = conn.value(
        "SELECT definition FROM notification_setup WHERE id = ?1",
        args![SETUP_ID],
    )?;
    text.map(|t| parse(&t, "the notification setup"))
        .transpose()
}

fn parse<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| Error::Corrupt(format!("{what}: {e}")))
}

/// Records the notifications `event` causes, in the caller's transaction (the event's own):
/// one row for each channel a rule for every batch or the batch's own rules send the event
/// to (a channel named by several rules gets it once, by the first). Answers how many.
///
/// # Errors
///
/// A repository error.
pub fn record(conn: &dyn Session, event: &Event<'_>, now: &str) -> Result<usize> {
    type Found = (String, Option<i64>, Option<String>, Option<String>);
    let found: Option<Found> = match event {
        Event::Started { instance }
        | Event::Ended { instance, .. }
        | Event::ActionFailed { instance, .. }
        | Event::Retried { instance, .. } => conn.row(
            "SELECT i.batch_name, i.batch_id,
                    (SELECT s.definition FROM notification_setup s WHERE s.id = ?2),
                    (SELECT b.notifications FROM batches b WHERE b.id = i.batch_id)
               FROM batch_instances i WHERE i.id = ?1",
            args![*instance, SETUP_ID],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )?,
        // Lateness is recorded by its own rule ([`record_late`]).
        Event::Late { .. } => return Ok(0),
        Event::Missed { batch_id, .. } => conn.row(
            "SELECT b.name, b.id,
                    (SELECT s.definition FROM notification_setup s WHERE s.id = ?2),
                    b.notifications
               FROM batches b WHERE b.id = ?1",
            args![*batch_id, SETUP_ID],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )?,
    };
    let Some((batch, batch_id, setup, own)) = found else {
        return Ok(0);
    };
    let own = own.filter(|o| o != "[]");
    let Some(setup) = setup else {
        // Rules name channels of the setup: without one, nothing is sent.
        return Ok(0);
    };
    let setup: Setup = parse(&setup, "the notification setup")?;
    let own: Vec<RuleDef> = match own {
        Some(o) => parse(&o, "a batch's notification rules")?,
        None => Vec::new(),
    };
    let word = event.word();
    let mut sent_to: Vec<&str> = Vec::new();
    let mut rows = 0;
    for rule in setup.rules.iter().chain(&own) {
        if !rule.on.iter().any(|e| e == word) {
            continue;
        }
        for name in &rule.to {
            if sent_to.contains(&name.as_str()) {
                continue;
            }
            let Some(channel) = setup.channels.iter().find(|c| &c.name == name) else {
                tracing::warn!(message = "A notification rule names a channel the setup does not have; skipped.", channel = %name, batch = %batch);
                continue;
            };
            sent_to.push(name);
            let message = Message {
                channel: channel.clone(),
                subject: rule.subject.clone(),
                body: rule.body.clone(),
                facts: facts(event, &batch, batch_id, now),
            };
            rows += insert(conn, event, &batch, &message, now)?;
        }
    }
    Ok(rows)
}

/// The facts of `event` known at its transaction.
fn facts(event: &Event<'_>, batch: &str, batch_id: Option<i64>, now: &str) -> serde_json::Value {
    let mut f =
        serde_json::json!({"event": event.word(), "batch": batch, "batchId": batch_id, "at": now});
    match event {
        Event::Started { instance } => {
            f["instanceId"] = (*instance).into();
            f["state"] = "running".into();
        }
        Event::Ended { instance, state } => {
            f["instanceId"] = (*instance).into();
            f["state"] = state.word().into();
        }
        Event::ActionFailed {
            instance,
            action,
            error,
        } => {
            f["instanceId"] = (*instance).into();
            f["actionId"] = (*action).into();
            f["error"] = (*error).into();
        }
        Event::Retried {
            instance,
            action,
            error,
            retry_at,
        } => {
            f["instanceId"] = (*instance).into();
            f["actionId"] = (*action).into();
            f["error"] = (*error).into();
            f["retryAt"] = (*retry_at).into();
        }
        Event::Late {
            instance,
            what: (field, value),
            ..
        } => {
            if let Some(i) = instance {
                f["instanceId"] = (*i).into();
            }
            f[*field] = (*value).into();
        }
        Event::Missed {
            planned, reason, ..
        } => {
            f["planned"] = (*planned).into();
            f["reason"] = (*reason).into();
        }
    }
    f
}

fn insert(
    conn: &dyn Session,
    event: &Event<'_>,
    batch: &str,
    message: &Message,
    now: &str,
) -> Result<usize> {
    let (instance, action) = match event {
        Event::Started { instance } | Event::Ended { instance, .. } => (Some(*instance), None),
        Event::Late { instance, .. } => (*instance, None),
        Event::ActionFailed {
            instance, action, ..
        }
        | Event::Retried {
            instance, action, ..
        } => (Some(*instance), Some(*action)),
        Event::Missed { .. } => (None, None),
    };
    // The same event is recorded once per channel, whichever host records it.
    let key = match event {
        Event::Missed {
            batch_id, planned, ..
        } => format!("missed:{batch_id}:{planned}:{}", message.channel.name),
        Event::Late { batch_id, key, .. } => format!(
            "late:{}:{key}:{}",
            batch_id.unwrap_or(0),
            message.channel.name
        ),
        _ => format!(
            "{}:{}:{}:{now}:{}",
            event.word(),
            instance.unwrap_or(0),
            action.unwrap_or(0),
            message.channel.name
        ),
    };
    let text = serde_json::to_string(message).map_err(|e| Error::Corrupt(e.to_string()))?;
    let rows = conn.execute(
        "INSERT INTO notifications (event_key, event, batch_name, instance_id, action_id, channel, message, state, created_at, next_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'pending', ?8, ?8)
         ON CONFLICT (event_key) DO NOTHING",
        args![key, event.word(), batch, instance, action, message.channel.name, text, now],
    )?;
    Ok(rows)
}

/// A notification claimed for sending.
#[derive(Debug, Clone)]
pub struct Outgoing {
    /// Its id.
    pub id: i64,
    /// What it says and where it goes.
    pub message: Message,
    /// Sends tried before this one.
    pub attempts: i64,
    /// When its event was recorded.
    pub created_at: String,
}

/// Claims up to `limit` pending notifications that are due at `now` and claimed by no live
/// host, for `host` until `until`.
///
/// # Errors
///
/// A repository error.
pub fn claim(
    conn: &dyn Session,
    host: &str,
    now: &str,
    until: &str,
    limit: i64,
) -> Result<Vec<Outgoing>> {
    let lock = if conn.dialect() == Dialect::Postgres {
        " FOR UPDATE SKIP LOCKED"
    } else {
        ""
    };
    let rows: Vec<(i64, String, i64, String)> = conn.rows(
        &format!(
            "UPDATE notifications SET claimed_by = ?1, claimed_until = ?3
              WHERE id IN (SELECT id FROM notifications
                            WHERE state = 'pending' AND next_at <= ?2
                              AND (claimed_until IS NULL OR claimed_until < ?2)
                            ORDER BY next_at, id LIMIT ?4{lock})
              RETURNING id, message, attempts, created_at"
        ),
        args![host, now, until, limit],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
    )?;
    rows.into_iter()
        .map(|(id, message, attempts, created_at)| {
            Ok(Outgoing {
                id,
                message: parse(&message, &format!("notification {id}"))?,
                attempts,
                created_at,
            })
        })
        .collect()
}

/// Lets go of the claims of pending notifications that a stopped process held: those of
/// `host` (a host that keeps its id across restarts), or all (`None`: the one server of a
/// SQLite repository starting). Answers how many.
///
/// # Errors
///
/// A repository error.
pub fn release(conn: &dyn Session, host: Option<&str>) -> Result<usize> {
    conn.execute(
        "UPDATE notifications SET claimed_by = NULL, claimed_until = NULL
          WHERE state = 'pending' AND claimed_by IS NOT NULL
            AND (CAST(?1 AS TEXT) IS NULL OR claimed_by = ?1)",
        args![host],
    )
}

/// Marks notification `id`, claimed by `host`, sent at `now`. False when another host holds
/// it now (its claim ran out meanwhile).
///
/// # Errors
///
/// A repository error.
pub fn sent(conn: &dyn Session, id: i64, host: &str, now: &str) -> Result<bool> {
    Ok(conn.execute(
        "UPDATE notifications SET state = 'sent', sent_at = ?3, attempts = attempts + 1,
             claimed_by = NULL, claimed_until = NULL
          WHERE id = ?1 AND claimed_by = ?2 AND state = 'pending'",
        args![id, host, now],
    )? == 1)
}

/// Records that sending notification `id` failed with `error`: tried again at `next`, or
/// given up (`next` none).
///
/// # Errors
///
/// A repository error.
pub fn failed(
    conn: &dyn Session,
    id: i64,
    host: &str,
    error: &str,
    next: Option<&str>,
) -> Result<bool> {
    Ok(conn.execute(
        "UPDATE notifications SET attempts = attempts + 1, last_error = ?3,
             state = CASE WHEN CAST(?4 AS TEXT) IS NULL THEN 'given_up' ELSE 'pending' END,
             next_at = COALESCE(?4, next_at), claimed_by = NULL, claimed_until = NULL
          WHERE id = ?1 AND claimed_by = ?2 AND state = 'pending'",
        args![id, host, error, next],
    )? == 1)
}

/// When the next pending notification is due (none pending: `None`).
///
/// # Errors
///
/// A repository error.
pub fn next_due(conn: &dyn Session) -> Result<Option<String>> {
    conn.value::<Option<String>>(
        "SELECT MIN(CASE WHEN claimed_until IS NOT NULL AND claimed_until > next_at THEN claimed_until ELSE next_at END)
           FROM notifications WHERE state = 'pending'",
        args![],
    )
    .map(Option::flatten)
}

/// The notifications `filter` asks for, newest first.
///
/// # Errors
///
/// A repository error.
pub fn list(conn: &dyn Session, filter: &NotificationFilter) -> Result<Vec<Notification>> {
    conn.rows(
        "SELECT id, event, batch_name, instance_id, action_id, channel, state, attempts, created_at,
                next_at, sent_at, last_error, claimed_by
           FROM notifications
          WHERE (CAST(?1 AS TEXT) IS NULL OR state = ?1)
            AND (CAST(?2 AS BIGINT) IS NULL OR instance_id = ?2)
            AND (CAST(?3 AS TEXT) IS NULL OR batch_name = ?3)
            AND (CAST(?4 AS BIGINT) IS NULL OR id < ?4)
          ORDER BY id DESC LIMIT ?5",
        args![
            filter.state.as_deref(),
            filter.instance,
            filter.batch.as_deref(),
            filter.before,
            filter.limit.clamp(1, LIST_MAX)
        ],
        |r| {
            Ok(Notification {
                id: r.get(0)?,
                event: r.get(1)?,
                batch: r.get(2)?,
                instance: r.get(3)?,
                action: r.get(4)?,
                channel: r.get(5)?,
                state: r.get(6)?,
                attempts: r.get(7)?,
                created_at: r.get(8)?,
                next_at: r.get(9)?,
                sent_at: r.get(10)?,
                last_error: r.get(11)?,
                claimed_by: r.get(12)?,
            })
        },
    )
}

/// What a notification of instance `id` tells beyond its event: the instance's times, its
/// planned start and the failed actions with their errors (the first `max`).
///
/// # Errors
///
/// A repository error.
pub fn run_facts(conn: &dyn Session, id: i64, max: i64) -> Result<Option<RunFacts>> {
    let Some((state, started_at, ended_at, planned_start, user)) = conn.row(
        "SELECT state, started_at, ended_at, planned_start, user_name FROM batch_instances WHERE id = ?1",
        args![id],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
    )?
    else {
        return Ok(None);
    };
    let failed = conn.rows(
        "SELECT action_id, name, error FROM instance_actions
          WHERE instance_id = ?1 AND state = 'E' ORDER BY ended_at, action_id LIMIT ?2",
        args![id, max],
        |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get::<Option<String>>(2)?.unwrap_or_default(),
            ))
        },
    )?;
    let failed_count: i64 = conn
        .value(
            "SELECT COUNT(*) FROM instance_actions WHERE instance_id = ?1 AND state = 'E'",
            args![id],
        )?
        .unwrap_or(0);
    Ok(Some(RunFacts {
        state,
        started_at,
        ended_at,
        planned_start,
        user,
        failed,
        failed_count,
    }))
}

/// An instance's facts for a notification's template.
#[derive(Debug, Clone, Default)]
pub struct RunFacts {
    /// Its state word now.
    pub state: String,
    /// When it started (UTC, as stored).
    pub started_at: String,
    /// When it ended.
    pub ended_at: Option<String>,
    /// The planned start a scheduled or backfilled run was started for (service time).
    pub planned_start: Option<String>,
    /// Who started it.
    pub user: String,
    /// Failed actions: id, name, error.
    pub failed: Vec<(i64, String, String)>,
    /// How many actions failed in all.
    pub failed_count: i64,
}

/// A rule `on` late and what it watches: a scheduled batch (`lateAt`, or `longerThanMinutes`
/// of its runs), or, for a rule for every batch with `longerThanMinutes`, every run.
#[derive(Debug, Clone)]
pub struct LateWatch {
    /// The scheduled batch; `None`: every run.
    pub batch_id: Option<i64>,
    /// Its name.
    pub batch: String,
    /// Its schedule, spring gap and autumn overlap, as stored.
    pub schedule: Option<(String, String, String)>,
    /// The rule.
    pub rule: RuleDef,
}

/// Every rule `on` late with what it watches (none without a setup).
///
/// # Errors
///
/// A repository error, or rules stored unreadable.
pub fn late_watches(conn: &dyn Session) -> Result<Vec<LateWatch>> {
    let Some(setup) = setup(conn)? else {
        return Ok(Vec::new());
    };
    let late = |r: &RuleDef| r.on.iter().any(|e| e == "late");
    let every: Vec<&RuleDef> = setup.rules.iter().filter(|r| late(r)).collect();
    let batches: Vec<(i64, String, String, String, String, String)> = conn.rows(
        "SELECT id, name, schedule, spring_gap, autumn_overlap, notifications FROM batches ORDER BY id",
        args![],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)),
    )?;
    let mut out = Vec::new();
    for (id, name, schedule, gap, overlap, own) in batches {
        let own: Vec<RuleDef> = if own == "[]" {
            Vec::new()
        } else {
            parse(&own, &format!("the notification rules of batch {id}"))?
        };
        // The rules for every batch watch each scheduled batch's time of day; their
        // `longerThanMinutes` watches every run (below).
        let every_at = every.iter().filter(|r| r.late_at.is_some()).map(|r| {
            let mut r = (*r).clone();
            r.longer_than_minutes = None;
            r
        });
        for rule in own.into_iter().filter(late).chain(every_at) {
            out.push(LateWatch {
                batch_id: Some(id),
                batch: name.clone(),
                schedule: Some((schedule.clone(), gap.clone(), overlap.clone())),
                rule,
            });
        }
    }
    for r in every.iter().filter(|r| r.longer_than_minutes.is_some()) {
        let mut rule = (*r).clone();
        rule.late_at = None;
        out.push(LateWatch {
            batch_id: None,
            batch: String::new(),
            schedule: None,
            rule,
        });
    }
    Ok(out)
}

/// Whether a run of batch `batch_id` planned from `from` to `to` (wall-clock text, service
/// zone) finished.
///
/// # Errors
///
/// A repository error.
pub fn finished_planned(conn: &dyn Session, batch_id: i64, from: &str, to: &str) -> Result<bool> {
    Ok(conn
        .value::<i64>(
            "SELECT 1 FROM batch_instances WHERE batch_id = ?1 AND planned_start >= ?2
               AND planned_start <= ?3 AND state = 'finished' LIMIT 1",
            args![batch_id, from, to],
        )?
        .is_some())
}

/// The unfinished runs (of batch `batch_id`, or of any) that started before `before` (UTC):
/// id and batch name.
///
/// # Errors
///
/// A repository error.
pub fn running_since(
    conn: &dyn Session,
    batch_id: Option<i64>,
    before: &str,
) -> Result<Vec<(i64, String)>> {
    conn.rows(
        "SELECT id, batch_name FROM batch_instances
          WHERE state IN ('waiting', 'running') AND started_at < ?2
            AND (CAST(?1 AS BIGINT) IS NULL OR batch_id = ?1)
          ORDER BY id LIMIT 1000",
        args![batch_id, before],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

/// Records the lateness `event` of batch `batch` by `rule`: one notification for each of
/// the rule's channels, once (a lateness another host recorded already is not recorded
/// again). Answers how many were new.
///
/// # Errors
///
/// A repository error.
pub fn record_late(
    conn: &dyn Session,
    event: &Event<'_>,
    batch: &str,
    rule: &RuleDef,
    now: &str,
) -> Result<usize> {
    let Some(setup) = setup(conn)? else {
        return Ok(0);
    };
    let batch_id = match event {
        Event::Late { batch_id, .. } => *batch_id,
        _ => None,
    };
    let mut rows = 0;
    for name in &rule.to {
        let Some(channel) = setup.channels.iter().find(|c| &c.name == name) else {
            continue;
        };
        let message = Message {
            channel: channel.clone(),
            subject: rule.subject.clone(),
            body: rule.body.clone(),
            facts: facts(event, batch, batch_id, now),
        };
        rows += insert(conn, event, batch, &message, now)?;
    }
    Ok(rows)
}
