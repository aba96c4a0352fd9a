//! Late runs: the rules `on` late are watched by each host's sender at each of its rounds.
//! A rule with `lateAt` fires once a day, when that time of the day (service zone) has passed
//! and the batch had a planned start that day before it but no run planned that day finished;
//! a rule with `longerThanMinutes` fires once for each run still going that long after its
//! start. Each lateness is recorded once whichever hosts see it (its key), and logged at WARN.

use chrono::{DateTime, NaiveDateTime, TimeZone as _, Utc};
use weft_core::sched::clock;
use weft_core::sched::schedule::{GapPolicy, OverlapPolicy, Schedule};
use weft_repo::Repository;
use weft_repo::notifications::{Event, LateWatch};

/// Records the latenesses the rules `on` late see at `now`; how many notifications were new.
///
/// # Errors
///
/// A repository error.
pub fn check(
    repo: &Repository,
    now: DateTime<Utc>,
    zone: chrono_tz::Tz,
) -> weft_repo::Result<usize> {
    let mut new = 0;
    let stamp = weft_repo::stored_time(now);
    for w in repo.late_watches()? {
        if let (Some(at), Some(batch_id)) = (&w.rule.late_at, w.batch_id) {
            new += late_at(repo, &w, batch_id, at, now, zone, &stamp)?;
        }
        if let Some(minutes) = w.rule.longer_than_minutes {
            let before = now - chrono::Duration::minutes(minutes);
            let before = weft_repo::stored_time(before);
            for (instance, batch) in repo.running_since(w.batch_id, &before)? {
                let key = format!("run {instance} over {minutes} min");
                let minutes_text = minutes.to_string();
                let event = Event::Late {
                    batch_id: w.batch_id,
                    instance: Some(instance),
                    key: &key,
                    what: ("longerThanMinutes", &minutes_text),
                };
                let n = repo.record_late(&event, &batch, &w.rule, &stamp)?;
                if n > 0 {
                    tracing::warn!(message = "A batch instance is late: still going longer than its rule allows.", batch = %batch, batch_instance_id = instance, longer_than_minutes = minutes);
                }
                new += n;
            }
        }
    }
    Ok(new)
}

/// The rule's `lateAt` of today: when it passed and no run planned today before it finished.
fn late_at(
    repo: &Repository,
    w: &LateWatch,
    batch_id: i64,
    at: &str,
    now: DateTime<Utc>,
    zone: chrono_tz::Tz,
    stamp: &str,
) -> weft_repo::Result<usize> {
    let Ok(time) = chrono::NaiveTime::parse_from_str(at, "%H:%M") else {
        return Ok(0);
    };
    let today = now.with_timezone(&zone).date_naive();
    let Some(midnight) = today.and_hms_opt(0, 0, 0) else {
        return Ok(0);
    };
    let deadline_local: NaiveDateTime = today.and_time(time);
    // A time the clocks skip counts from the first instant after it.
    let Some(deadline) = zone
        .from_local_datetime(&deadline_local)
        .earliest()
        .or_else(|| {
            zone.from_local_datetime(&(deadline_local + chrono::Duration::hours(1)))
                .earliest()
        })
    else {
        return Ok(0);
    };
    if now < deadline.with_timezone(&Utc) {
        return Ok(0);
    }
    // Only a day the batch was planned to start before the deadline.
    let Some((repeat, gap, overlap)) = &w.schedule else {
        return Ok(0);
    };
    let Ok(repeat) = weft_core::sched::schedule::parse(repeat) else {
        return Ok(0);
    };
    let schedule = Schedule {
        repeat,
        gap: GapPolicy::parse(gap).unwrap_or_default(),
        overlap: OverlapPolicy::parse(overlap).unwrap_or_default(),
    };
    let Some(day_start) = zone.from_local_datetime(&midnight).earliest() else {
        return Ok(0);
    };
    let before_day = day_start.with_timezone(&Utc) - chrono::Duration::seconds(1);
    let planned = schedule
        .first_after(zone, before_day)
        .is_some_and(|p| p.local <= deadline_local);
    if !planned {
        return Ok(0);
    }
    if repo.finished_planned(
        batch_id,
        &clock::wall(midnight),
        &clock::wall(deadline_local),
    )? {
        return Ok(0);
    }
    let key = format!("{today} {at}");
    let event = Event::Late {
        batch_id: Some(batch_id),
        instance: None,
        key: &key,
        what: ("lateAt", at),
    };
    let n = repo.record_late(&event, &w.batch, &w.rule, stamp)?;
    if n > 0 {
        tracing::warn!(message = "A batch is late: no run of the day finished by its time.", batch = %w.batch, batch_id, late_at = %at, day = %today);
    }
    Ok(n)
}
