//! Notifications: the setup's channels (a known type with what that type needs, names
//! unique), the rules of the setup and of each batch (events weft knows, channels that
//! exist, a time or a duration for `late`), the templates (they must parse), and a setup
//! that drops a channel a stored batch's rules still name.

use super::ids::has_control;
use std::collections::HashSet;
use weft_dsr::model::*;
use weft_dsr::{Path, Problems};
use weft_repo::Facts;
use weft_repo::notifications::EVENTS;

/// The longest `longerThanMinutes`: a week.
const MAX_MINUTES: i64 = 7 * 24 * 60;

/// The longest `timeoutSeconds` of a channel.
const MAX_TIMEOUT: i64 = 300;

/// Checks the document's notification setup and its batches' rules, adding every problem.
///
/// # Errors
///
/// A repository error while asking `facts`.
pub fn notifications(
    doc: &Document,
    td: &Path,
    facts: &dyn Facts,
    problems: &mut Problems,
) -> weft_repo::Result<()> {
    let has_rules = doc.batches.iter().any(|b| !b.notifications.is_empty());
    if doc.notifications.is_none() && !has_rules {
        return Ok(());
    }
    let stored = facts.notification_refs()?;
    let known: Vec<String> = match &doc.notifications {
        Some(n) => {
            let path = td.key("notifications");
            channels(n, &path, problems);
            let names: Vec<String> = n.channels.iter().map(|c| c.name.v.clone()).collect();
            for (i, r) in n.rules.iter().enumerate() {
                rule(r, &path.key("rules").index(i), &names, problems);
            }
            // A stored batch that this document does not redeploy keeps its rules: the
            // channels they name must stay.
            let redeployed: HashSet<i64> = doc.batches.iter().map(|b| b.id.v).collect();
            for (batch, name, channel) in &stored.used {
                if !redeployed.contains(batch) && !names.contains(channel) {
                    problems.error(
                        "notifications.channel_in_use",
                        format!(
                            "channel `{channel}` is left out of the notifications, but batch {batch} (`{name}`) still sends to it; keep the channel or change that batch's rules in the same deploy"
                        ),
                        n.span,
                        &path.key("channels"),
                    );
                }
            }
            names
        }
        None => stored.channels.unwrap_or_default(),
    };
    for (i, b) in doc.batches.iter().enumerate() {
        for (j, r) in b.notifications.iter().enumerate() {
            let path = td.key("batches").index(i).key("notifications").index(j);
            rule(r, &path, &known, problems);
        }
    }
    Ok(())
}

fn channels(n: &Notifications, path: &Path, problems: &mut Problems) {
    let mut seen = HashSet::new();
    for (i, c) in n.channels.iter().enumerate() {
        let path = path.key("channels").index(i);
        let name = &c.name.v;
        if name.trim().is_empty() || has_control(name) {
            problems.error(
                "notifications.channel",
                "a channel's `name` must not be empty nor hold control characters",
                c.name.span,
                &path.key("name"),
            );
        } else if !seen.insert(name.as_str()) {
            problems.error(
                "notifications.channel",
                format!("channel `{name}` is defined twice; give each channel its own name"),
                c.name.span,
                &path.key("name"),
            );
        }
        let only_for = |field: &str, value: bool, kind: &str, problems: &mut Problems| {
            if value {
                problems.error(
                    "notifications.channel",
                    format!("channel `{name}`: `{field}` belongs to {kind} channels"),
                    c.span,
                    &path.key(field),
                );
            }
        };
        match c.kind.v.as_str() {
            "email" => {
                if c.server.is_none() {
                    missing(
                        name,
                        "server",
                        "the key-file entry of the SMTP server",
                        c,
                        &path,
                        problems,
                    );
                }
                match &c.from {
                    None => missing(name, "from", "the sender's address", c, &path, problems),
                    Some(f) => address(name, "from", f, &path.key("from"), problems),
                }
                if c.to.is_empty() {
                    missing(name, "to", "the recipients' addresses", c, &path, problems);
                }
                for (j, t) in c.to.iter().enumerate() {
                    address(name, "to", t, &path.key("to").index(j), problems);
                }
                only_for("url", c.url.is_some(), "webhook", problems);
                only_for("secret", c.secret.is_some(), "webhook", problems);
            }
            "webhook" => {
                match &c.url {
                    None => missing(name, "url", "where to POST", c, &path, problems),
                    Some(u) if !(u.v.starts_with("https://") || u.v.starts_with("http://")) => {
                        problems.error(
                            "notifications.channel",
                            format!("channel `{name}`: `url` must be an http:// or https:// address, not `{}`", u.v),
                            u.span,
                            &path.key("url"),
                        );
                    }
                    Some(_) => {}
                }
                only_for("server", c.server.is_some(), "email", problems);
                only_for("from", c.from.is_some(), "email", problems);
                only_for("to", !c.to.is_empty(), "email", problems);
                only_for("subject", c.subject.is_some(), "email", problems);
            }
            other => problems.error(
                "notifications.channel",
                format!("channel `{name}` has type `{other}`; use `email` or `webhook`"),
                c.kind.span,
                &path.key("type"),
            ),
        }
        if let Some(t) = &c.timeout_seconds
            && !(1..=MAX_TIMEOUT).contains(&t.v)
        {
            problems.error(
                "notifications.channel",
                format!(
                    "channel `{name}`: `timeoutSeconds` is {}; use 1 to {MAX_TIMEOUT}",
                    t.v
                ),
                t.span,
                &path.key("timeoutSeconds"),
            );
        }
        for (field, t) in [("subject", &c.subject), ("body", &c.body)] {
            template(t.as_ref(), field, &path, problems);
        }
    }
}

fn missing(name: &str, field: &str, what: &str, c: &Channel, path: &Path, problems: &mut Problems) {
    problems.error(
        "notifications.channel",
        format!("channel `{name}` ({}) needs `{field}`: {what}", c.kind.v),
        c.span,
        &path.key(field),
    );
}

/// An address as a mail header takes it: something before and after one `@`, no spaces or
/// line breaks (a display name `Team <team@example.com>` is allowed).
fn address(name: &str, field: &str, a: &At<String>, path: &Path, problems: &mut Problems) {
    let bare = match (a.v.rfind('<'), a.v.ends_with('>')) {
        (Some(open), true) => &a.v[open + 1..a.v.len() - 1],
        _ => a.v.as_str(),
    };
    let ok = bare.split('@').count() == 2
        && !bare.starts_with('@')
        && !bare.ends_with('@')
        && !bare.chars().any(|c| c.is_whitespace() || c.is_control())
        && !a.v.contains(['\r', '\n']);
    if !ok {
        problems.error(
            "notifications.address",
            format!(
                "channel `{name}`: `{}` in `{field}` is not an e-mail address",
                a.v
            ),
            a.span,
            path,
        );
    }
}

fn template(t: Option<&At<String>>, field: &str, path: &Path, problems: &mut Problems) {
    if let Some(t) = t
        && let Err(e) = weft_notify::templates::check(&t.v)
    {
        problems.error(
            "notifications.template",
            format!("the template in `{field}` does not read: {e}"),
            t.span,
            &path.key(field),
        );
    }
}

fn rule(r: &NotificationRule, path: &Path, channels: &[String], problems: &mut Problems) {
    if r.on.is_empty() {
        problems.error(
            "notifications.rule",
            format!(
                "a rule needs the events it is for in `on`: {}",
                EVENTS.join(", ")
            ),
            r.span,
            &path.key("on"),
        );
    }
    for (i, e) in r.on.iter().enumerate() {
        if !EVENTS.contains(&e.v.as_str()) {
            problems.error(
                "notifications.event",
                format!(
                    "`{}` is no event weft tells of; use {}",
                    e.v,
                    EVENTS.join(", ")
                ),
                e.span,
                &path.key("on").index(i),
            );
        }
    }
    if r.to.is_empty() {
        problems.error(
            "notifications.rule",
            "a rule needs the channels it sends to in `to`",
            r.span,
            &path.key("to"),
        );
    }
    for (i, c) in r.to.iter().enumerate() {
        if !channels.contains(&c.v) {
            problems.error(
                "notifications.unknown_channel",
                if channels.is_empty() {
                    format!("channel `{}` is not defined: no notifications with channels are deployed (transformationData.notifications.channels)", c.v)
                } else {
                    format!("channel `{}` is not defined; the channels are: {}", c.v, channels.join(", "))
                },
                c.span,
                &path.key("to").index(i),
            );
        }
    }
    let late = r.on.iter().any(|e| e.v == "late");
    if late && r.late_at.is_none() && r.longer_than_minutes.is_none() {
        problems.error(
            "notifications.rule",
            "a rule `on` late needs `lateAt` (HH:MM, a run of the day not finished by then) or `longerThanMinutes` (a run going longer)",
            r.span,
            &path.key("on"),
        );
    }
    if let Some(at) = &r.late_at {
        if !late {
            problems.error(
                "notifications.rule",
                "`lateAt` is for rules `on` late; add late to `on`",
                at.span,
                &path.key("lateAt"),
            );
        }
        if chrono::NaiveTime::parse_from_str(&at.v, "%H:%M").is_err() || at.v.len() != 5 {
            problems.error(
                "notifications.rule",
                format!(
                    "`lateAt` is `{}`; write a time of the day as HH:MM (06:00)",
                    at.v
                ),
                at.span,
                &path.key("lateAt"),
            );
        }
    }
    if let Some(m) = &r.longer_than_minutes {
        if !late {
            problems.error(
                "notifications.rule",
                "`longerThanMinutes` is for rules `on` late; add late to `on`",
                m.span,
                &path.key("longerThanMinutes"),
            );
        }
        if !(1..=MAX_MINUTES).contains(&m.v) {
            problems.error(
                "notifications.rule",
                format!(
                    "`longerThanMinutes` is {}; use 1 to {MAX_MINUTES} (a week)",
                    m.v
                ),
                m.span,
                &path.key("longerThanMinutes"),
            );
        }
    }
    for (field, t) in [("subject", &r.subject), ("body", &r.body)] {
        template(t.as_ref(), field, path, problems);
    }
}
