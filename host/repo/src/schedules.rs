//! Planned starts in the repository (`service_batch_next_run`, which sheets may also
//! write: SPEC 4.7), read and moved on by the scheduler.

type Result<T, E = crate::error::Error> = std::result::Result<T, E>;

use crate::sql::{Row, Session, args};
use weft_core::sched::schedule::Planned;
use weft_core::sched::scheduler::{Missed, StoredStart};

const COLUMNS: &str = "b.id, b.name, b.schedule, b.spring_gap, b.autumn_overlap, b.if_running, b.enabled, b.elements, b.variables, b.second_of, CAST(n.start_dt AS TEXT), b.after_batches, b.after_timeout_minutes, b.after_timeout, b.manual_runs, b.paused_at";

fn decode<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, String> {
    serde_json::from_str(text).map_err(|e| e.to_string())
}

/// A batch's element as stored, with its options.
#[derive(serde::Deserialize)]
struct StoredElement {
    #[serde(flatten)]
    element: weft_core::plan::Element,
    #[serde(default)]
    skip: bool,
    #[serde(default)]
    halted: bool,
}

/// A batch's stored elements: those its runs run (not the skipped ones), and those of them
/// that start halted.
fn elements(
    text: &str,
) -> (
    Result<Vec<weft_core::plan::Element>, String>,
    Vec<weft_core::plan::Element>,
) {
    match decode::<Vec<StoredElement>>(text) {
        Ok(list) => {
            let held = list
                .iter()
                .filter(|e| e.halted && !e.skip)
                .map(|e| e.element)
                .collect();
            (
                Ok(list
                    .into_iter()
                    .filter(|e| !e.skip)
                    .map(|e| e.element)
                    .collect()),
                held,
            )
        }
        Err(e) => (Err(e), Vec::new()),
    }
}

fn stored(r: &Row) -> Result<StoredStart> {
    let second_of: Option<String> = r.get(9)?;
    let start_dt: Option<String> = r.get(10)?;
    let (elements, held) = elements(&r.get::<String>(7)?);
    Ok(StoredStart {
        batch_id: r.get(0)?,
        name: r.get(1)?,
        schedule: r.get(2)?,
        spring_gap: r.get(3)?,
        autumn_overlap: r.get(4)?,
        if_running: r.get(5)?,
        enabled: r.get(6)?,
        elements,
        held,
        variables: decode(&r.get::<String>(8)?),
        second: second_of.is_some() && second_of == start_dt,
        start_dt,
        after: decode(&r.get::<String>(11)?),
        after_timeout_minutes: r.get(12)?,
        after_timeout: r.get(13)?,
        exclusive: r.get::<String>(14)? == "exclude",
        paused: r.get::<Option<String>>(15)?.is_some(),
    })
}

/// The planned starts at or before `until` (wall-clock text), earliest first. `start_dt` is
/// read as text whatever was written into it (an `UPDATE` can leave a number), and a `T`
/// between date and time counts as a space.
///
/// # Errors
///
/// A repository error.
pub fn due(conn: &dyn Session, until: &str) -> Result<Vec<StoredStart>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM service_batch_next_run n JOIN batches b ON b.id = n.batch_id \
         WHERE replace(n.start_dt, 'T', ' ') <= ?1 ORDER BY n.start_dt, b.id"
    );
    conn.rows(&sql, args![until], stored)
}

/// A batch with its planned start, if the batch exists (the start is `None` when it has
/// none).
///
/// # Errors
///
/// A repository error.
pub fn batch(conn: &dyn Session, batch_id: i64) -> Result<Option<StoredStart>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM batches b LEFT JOIN service_batch_next_run n ON n.batch_id = b.id WHERE b.id = ?1"
    );
    conn.row(&sql, args![batch_id], stored)
}

/// Whether batch `batch_id` has a finished run planned on `day` (`YYYY-MM-DD`; its
/// scheduled or backfilled runs, by their planned start).
///
/// # Errors
///
/// A repository error.
pub fn finished_on(conn: &dyn Session, batch_id: i64, day: &str) -> Result<bool> {
    let from = format!("{day} 00:00:00");
    let to = format!("{day} 23:59:59.999");
    Ok(conn
        .value::<i64>(
            "SELECT 1 FROM batch_instances WHERE batch_id = ?1 AND state = 'finished'
               AND planned_start >= ?2 AND planned_start <= ?3 LIMIT 1",
            args![batch_id, from, to],
        )?
        .is_some())
}

/// How many missed starts are kept per batch: the newest.
pub const MISSED_KEPT: i64 = 100;

/// Moves a batch's planned start from `from` (as read; `from_second` when it meant the
/// second occurrence of an ambiguous wall-clock time) to `next` (deleted when `None`), and
/// records `missed` (keeping the newest [`MISSED_KEPT`] of the batch); `false` when it
/// changed meanwhile (then nothing is written).
///
/// The occurrence is part of what is compared: both occurrences of 02:30 in an autumn
/// overlap are the same text, so the batch's `second_of` is compared and set first (one
/// row, which PostgreSQL checks again after waiting for another host's move of it), then
/// `start_dt`. Every planned start thus moves once across hosts, the first occurrence's
/// move to the second included.
///
/// # Errors
///
/// A repository error. [`Error::Conflict`](crate::error::Error::Conflict) when
/// `start_dt` changed after the occurrence was moved: the caller's transaction must be
/// rolled back (its `second_of` was written).
pub fn advance(
    conn: &dyn Session,
    batch_id: i64,
    from: &str,
    from_second: bool,
    next: Option<&Planned>,
    missed: Option<&Missed>,
) -> Result<bool> {
    let text = next.map(|n| weft_core::sched::clock::wall(n.local));
    let second_of = next.filter(|n| n.second).and(text.clone());
    let occurrence = if from_second {
        "UPDATE batches SET second_of = ?3 WHERE id = ?1 AND second_of = ?2"
    } else {
        "UPDATE batches SET second_of = ?3 WHERE id = ?1 AND (second_of IS NULL OR second_of <> ?2)"
    };
    if conn.execute(occurrence, args![batch_id, from, second_of])? != 1 {
        return Ok(false);
    }
    let changed = match &text {
        Some(text) => conn.execute(
            "UPDATE service_batch_next_run SET start_dt = ?3 WHERE batch_id = ?1 AND start_dt = ?2",
            args![batch_id, from, text.as_str()],
        )?,
        None => conn.execute(
            "DELETE FROM service_batch_next_run WHERE batch_id = ?1 AND start_dt = ?2",
            args![batch_id, from],
        )?,
    };
    if changed != 1 {
        return Err(crate::error::Error::Conflict(format!(
            "the planned start of batch {batch_id} changed while it was being moved on"
        )));
    }
    if let Some(m) = missed {
        conn.execute(
            "INSERT INTO missed_starts (batch_id, planned, decided_at, reason) VALUES (?1, ?2, ?3, ?4)",
            args![
                batch_id,
                m.planned,
                m.at.format("%Y-%m-%d %H:%M:%S").to_string(),
                m.reason.to_string()
            ],
        )?;
        conn.execute(
            "DELETE FROM missed_starts WHERE batch_id = ?1 AND id <= (SELECT id FROM missed_starts WHERE batch_id = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2)",
            args![batch_id, MISSED_KEPT],
        )?;
        let reason = m.reason.to_string();
        crate::notifications::record(
            conn,
            &crate::notifications::Event::Missed {
                batch_id,
                planned: &m.planned,
                reason: &reason,
            },
            &crate::error::now_utc(),
        )?;
    }
    Ok(true)
}

/// Records on instance `id` the scheduled start it was started for.
///
/// # Errors
///
/// A repository error.
pub fn record_start(
    conn: &dyn Session,
    id: i64,
    batch_id: i64,
    planned: &str,
    late_seconds: i64,
) -> Result<()> {
    conn.execute(
        "UPDATE batch_instances SET batch_id = ?2, planned_start = ?3, late_seconds = ?4 WHERE id = ?1",
        args![id, batch_id, planned, late_seconds],
    )?;
    Ok(())
}

/// Pauses batch `id` (`paused`, recording `by` and now) or resumes it: the batch as it is
/// then (who paused it and when, while paused); `None` when there is no such batch.
///
/// # Errors
///
/// A repository error.
pub fn pause(
    conn: &dyn Session,
    id: i64,
    paused: bool,
    by: &str,
) -> Result<Option<weft_protocol::commands::BatchPause>> {
    let now = crate::error::now_utc();
    // A pause already there keeps who made it and when.
    conn.execute(
        "UPDATE batches SET paused_at = CASE WHEN CAST(?2 AS BIGINT) = 1 THEN COALESCE(paused_at, ?3) ELSE NULL END,
                            paused_by = CASE WHEN CAST(?2 AS BIGINT) = 1 THEN COALESCE(paused_by, ?4) ELSE NULL END
         WHERE id = ?1",
        args![id, i64::from(paused), now, by],
    )?;
    conn.row(
        "SELECT name, paused_by, paused_at FROM batches WHERE id = ?1",
        args![id],
        |r| {
            let at: Option<String> = r.get(2)?;
            Ok(weft_protocol::commands::BatchPause {
                batch_id: id,
                name: r.get(0)?,
                paused: at.is_some(),
                paused_by: r.get(1)?,
                paused_at: at.map(|t| crate::instances::iso(&t)),
            })
        },
    )
}

#[cfg(test)]
mod tests {
    use crate::{Repository, connect};
    use weft_core::sched::schedule::Planned;
    use weft_core::sched::scheduler::{Missed, MissedReason, PlannedStarts as _};

    fn missed(planned: &str, reason: MissedReason) -> Missed {
        Missed {
            planned: planned.to_owned(),
            reason,
            at: chrono::Utc::now(),
        }
    }

    #[test]
    fn missed_starts_are_kept_with_the_move_the_newest_hundred_of_each_batch() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("repository.db");
        let repo = Repository::open(&path).expect("open");
        let conn = connect(&path).expect("a second connection");
        conn.execute_batch(
            "INSERT INTO batches (id, name, schedule, elements, variables, created_at, updated_at)
               VALUES (1, 'a', 'every 60 minutes', '[]', '[]', 'x', 'x'),
                      (2, 'b', 'every 60 minutes', '[]', '[]', 'x', 'x');
             INSERT INTO service_batch_next_run (batch_id, start_dt)
               VALUES (1, '2026-01-01 00:00:00'), (2, '2026-01-01 00:00:00');",
        )
        .expect("two batches");
        let t0 = weft_core::sched::clock::parse_wall("2026-01-01 00:00:00").expect("time");
        let at = |h: i64| weft_core::sched::clock::wall(t0 + chrono::Duration::hours(h));
        for h in 0..105 {
            let next = Planned {
                local: t0 + chrono::Duration::hours(h + 1),
                second: false,
            };
            let passed = missed(&at(h), MissedReason::Running);
            assert!(
                repo.advance_start(1, &at(h), false, Some(&next), Some(&passed))
                    .expect("advance"),
                "hour {h}"
            );
        }
        // A move that finds the start changed records nothing.
        let stale = missed(&at(0), MissedReason::Running);
        assert!(
            !repo
                .advance_start(1, &at(0), false, None, Some(&stale))
                .expect("stale")
        );
        let gone = missed(&at(0), MissedReason::CannotStart("sheet 7 is gone".into()));
        assert!(
            repo.advance_start(2, &at(0), false, None, Some(&gone))
                .expect("advance b")
        );
        let kept = |batch: i64| -> (i64, String, String) {
            conn.query_row(
                "SELECT COUNT(*), MIN(planned), MAX(reason) FROM missed_starts WHERE batch_id = ?1",
                [batch],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .expect("missed starts")
        };
        assert_eq!(kept(1), (100, at(5), "running".to_owned()));
        assert_eq!(
            kept(2),
            (1, at(0), "cannotStart: sheet 7 is gone".to_owned())
        );
    }

    #[test]
    fn both_occurrences_of_an_overlapped_time_move_once_each_whoever_read_them_first() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("repository.db");
        let repo = Repository::open(&path).expect("open");
        let conn = connect(&path).expect("a second connection");
        conn.execute_batch(
            "INSERT INTO batches (id, name, schedule, autumn_overlap, elements, variables, created_at, updated_at)
               VALUES (1, 'a', 'daily 02:30', 'both', '[]', '[]', 'x', 'x');
             INSERT INTO service_batch_next_run (batch_id, start_dt) VALUES (1, '2026-10-25 02:30:00');",
        )
        .expect("a batch");
        let at = |t: &str| weft_core::sched::clock::parse_wall(t).expect("time");
        let first = "2026-10-25 02:30:00";
        let second = Planned {
            local: at(first),
            second: true,
        };
        let tomorrow = Planned {
            local: at("2026-10-26 02:30:00"),
            second: false,
        };
        // Three hosts read the first occurrence; the first move takes it to the second.
        assert!(
            repo.advance_start(1, first, false, Some(&second), None)
                .expect("move")
        );
        for host in 0..2 {
            assert!(
                !repo
                    .advance_start(1, first, false, Some(&second), None)
                    .expect("stale"),
                "host {host} moved the first occurrence again"
            );
        }
        let stored = repo.batch_schedule(1).expect("read").expect("batch");
        assert!(
            stored.second,
            "the second occurrence is planned: {stored:?}"
        );
        // The second occurrence moves once, to the next day.
        assert!(
            repo.advance_start(1, first, true, Some(&tomorrow), None)
                .expect("move")
        );
        assert!(
            !repo
                .advance_start(1, first, true, Some(&tomorrow), None)
                .expect("stale")
        );
        assert!(
            !repo
                .advance_start(1, first, false, Some(&second), None)
                .expect("stale")
        );
        let stored = repo.batch_schedule(1).expect("read").expect("batch");
        assert_eq!(stored.start_dt.as_deref(), Some("2026-10-26 02:30:00"));
        assert!(!stored.second);
        // A move whose occurrence matches but whose text was changed by hand meanwhile
        // writes nothing, its occurrence included.
        conn.execute_batch("UPDATE service_batch_next_run SET start_dt = '2026-10-27 02:30:00'")
            .expect("by hand");
        assert!(
            !repo
                .advance_start(1, "2026-10-26 02:30:00", false, Some(&second), None)
                .expect("stale")
        );
        let stored = repo.batch_schedule(1).expect("read").expect("batch");
        assert_eq!(stored.start_dt.as_deref(), Some("2026-10-27 02:30:00"));
        assert!(!stored.second, "the occurrence's move was rolled back");
    }
}
