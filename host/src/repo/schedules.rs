//! Planned starts in the repository (`service_batch_next_run`, which sheets may also
//! write: SPEC 4.7), read and moved on by the scheduler.

type Result<T, E = crate::repo::error::Error> = std::result::Result<T, E>;

use crate::repo::sql::{Row, Session, args};
use crate::sched::schedule::Planned;
use crate::sched::scheduler::{Missed, StoredStart};

const COLUMNS: &str = "b.id, b.name, b.schedule, b.spring_gap, b.autumn_overlap, b.if_running, b.enabled, b.elements, b.variables, b.second_of, CAST(n.start_dt AS TEXT)";

fn decode<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, String> {
    serde_json::from_str(text).map_err(|e| e.to_string())
}

fn stored(r: &Row) -> Result<StoredStart> {
    let second_of: Option<String> = r.get(9)?;
    let start_dt: Option<String> = r.get(10)?;
    Ok(StoredStart {
        batch_id: r.get(0)?,
        name: r.get(1)?,
        schedule: r.get(2)?,
        spring_gap: r.get(3)?,
        autumn_overlap: r.get(4)?,
        if_running: r.get(5)?,
        enabled: r.get(6)?,
        elements: decode(&r.get::<String>(7)?),
        variables: decode(&r.get::<String>(8)?),
        second: second_of.is_some() && second_of == start_dt,
        start_dt,
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

/// How many missed starts are kept per batch: the newest.
pub const MISSED_KEPT: i64 = 100;

/// Moves a batch's planned start from `from` (as read) to `next` (deleted when `None`),
/// and records `missed` (keeping the newest [`MISSED_KEPT`] of the batch); `false` when
/// `start_dt` changed meanwhile (then nothing is written).
///
/// # Errors
///
/// A repository error.
pub fn advance(
    conn: &dyn Session,
    batch_id: i64,
    from: &str,
    next: Option<&Planned>,
    missed: Option<&Missed>,
) -> Result<bool> {
    let changed = match next {
        Some(n) => {
            let text = crate::sched::clock::wall(n.local);
            let changed = conn.execute(
                "UPDATE service_batch_next_run SET start_dt = ?3 WHERE batch_id = ?1 AND start_dt = ?2",
                args![batch_id, from, text],
            )?;
            if changed == 1 {
                conn.execute(
                    "UPDATE batches SET second_of = ?2 WHERE id = ?1",
                    args![batch_id, n.second.then_some(text)],
                )?;
            }
            changed
        }
        None => conn.execute(
            "DELETE FROM service_batch_next_run WHERE batch_id = ?1 AND start_dt = ?2",
            args![batch_id, from],
        )?,
    };
    if changed == 1
        && let Some(m) = missed
    {
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
    }
    Ok(changed == 1)
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
