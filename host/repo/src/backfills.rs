//! Backfills in the repository: a batch's planned starts over a range of dates, kept as rows
//! (`backfill_starts`, in order) until each became an instance. Which starts may begin now
//! is read by every host; one begins in the transaction that stores its instance, which
//! claims the start (only if no other host did) and checks the backfill's bound of
//! instances at a time, so that a start is never lost nor begun twice, whatever is killed
//! when.

use crate::error::{Error, Result, now_utc};
use crate::model::{BackfillStart, PendingStart};
use crate::sql::{Param, Session, ToParam as _, args, insert_rows};

/// The instances of a backfill still going.
const ACTIVE: &str = "SELECT COUNT(*) FROM batch_instances
     WHERE backfill_id = ?1 AND state IN ('running', 'waiting')";

/// Records a backfill of batch `batch_id` (`name`) by `user`, `parallel` instances at a
/// time, of the planned starts `starts` (wall-clock text in the service zone, in order);
/// its id.
///
/// # Errors
///
/// A repository error.
pub fn create(
    tx: &dyn Session,
    (batch_id, name): (i64, &str),
    user: &str,
    parallel: i64,
    starts: &[String],
) -> Result<i64> {
    let id: i64 = tx
        .value(
            "INSERT INTO backfills (batch_id, batch_name, user_name, parallel, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5) RETURNING id",
            args![batch_id, name, user, parallel, now_utc()],
        )?
        .ok_or_else(|| Error::Corrupt("a new backfill answered no id".to_owned()))?;
    let mut params = Vec::with_capacity(starts.len() * 3);
    for (seq, planned) in starts.iter().enumerate() {
        params.extend([
            Param::Int(id),
            Param::Int(i64::try_from(seq).unwrap_or(i64::MAX)),
            planned.to_param(),
        ]);
    }
    insert_rows(
        tx,
        "INSERT INTO backfill_starts (backfill_id, seq, planned_start)",
        3,
        params,
    )?;
    Ok(id)
}

/// The starts that may begin now: of each backfill with starts left, its first ones, as
/// many as it has places free (`parallel` less its instances still going); and whether any
/// backfill has starts left at all (waiting for a place when none may begin).
///
/// # Errors
///
/// A repository error.
pub fn pending(tx: &dyn Session) -> Result<(Vec<PendingStart>, bool)> {
    let backfills: Vec<(i64, i64, String, String, i64)> = tx.rows(
        "SELECT b.id, b.batch_id, b.batch_name, b.user_name, b.parallel FROM backfills b
          WHERE EXISTS (SELECT 1 FROM backfill_starts s
                         WHERE s.backfill_id = b.id AND s.instance_id IS NULL AND s.error IS NULL)
          ORDER BY b.id",
        args![],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
    )?;
    let left = !backfills.is_empty();
    let mut out = Vec::new();
    for (id, batch_id, batch_name, user, parallel) in backfills {
        let active: i64 = tx.value(ACTIVE, args![id])?.unwrap_or_default();
        let free = parallel - active;
        if free <= 0 {
            continue;
        }
        let starts: Vec<(i64, String)> = tx.rows(
            "SELECT seq, planned_start FROM backfill_starts
              WHERE backfill_id = ?1 AND instance_id IS NULL AND error IS NULL
              ORDER BY seq LIMIT ?2",
            args![id, free],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        out.extend(starts.into_iter().map(|(seq, planned)| PendingStart {
            start: BackfillStart {
                backfill_id: id,
                seq,
                batch_id,
                planned_start: planned,
            },
            batch_name: batch_name.clone(),
            user: user.clone(),
        }));
    }
    Ok((out, left))
}

/// Inside the transaction that stores instance `instance`: claims `start` for it and makes
/// it the backfill's (its batch, planned start and backfill); `false`, and the caller rolls
/// back, when another host claimed the start, or the backfill has no place free.
///
/// # Errors
///
/// A repository error.
pub fn attach(tx: &dyn Session, instance: i64, start: &BackfillStart) -> Result<bool> {
    // The instance itself is stored already (waiting): more than `parallel` is one too many.
    let active: i64 = tx
        .value(ACTIVE, args![start.backfill_id])?
        .unwrap_or_default();
    let parallel: i64 = tx
        .value(
            "SELECT parallel FROM backfills WHERE id = ?1",
            args![start.backfill_id],
        )?
        .unwrap_or_default();
    // Not counted yet: the new instance has no backfill until the update below.
    if active >= parallel {
        return Ok(false);
    }
    let claimed = tx.execute(
        "UPDATE backfill_starts SET instance_id = ?3
          WHERE backfill_id = ?1 AND seq = ?2 AND instance_id IS NULL AND error IS NULL",
        args![start.backfill_id, start.seq, instance],
    )?;
    if claimed != 1 {
        return Ok(false);
    }
    tx.execute(
        "UPDATE batch_instances SET batch_id = ?2, planned_start = ?3, backfill_id = ?4 WHERE id = ?1",
        args![instance, start.batch_id, start.planned_start, start.backfill_id],
    )?;
    Ok(true)
}

/// A start that can never begin (its elements are gone, or wait for each other in a
/// cycle): it keeps why, and the backfill goes on with the next.
///
/// # Errors
///
/// A repository error.
pub fn fail(tx: &dyn Session, start: &BackfillStart, error: &str) -> Result<()> {
    tx.execute(
        "UPDATE backfill_starts SET error = ?3 WHERE backfill_id = ?1 AND seq = ?2 AND instance_id IS NULL",
        args![start.backfill_id, start.seq, error],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::model::{BackfillStart, NewAction, NewInstance, PendingStart};
    use crate::store::{Created, InstanceStore as _};
    use crate::{Error, Repository};

    /// An instance of one action (of sheet 1, whose plans version 1 the test stores) for
    /// backfill start `seq` of `p`'s backfill.
    fn instance(p: &PendingStart, seq: i64) -> NewInstance {
        NewInstance {
            batch_name: p.batch_name.clone(),
            user: p.user.clone(),
            elements: Vec::new(),
            variables: Vec::new(),
            actions: vec![NewAction {
                action_id: 1,
                sheet_id: 1,
                name: "a".to_owned(),
                module: "Sql".to_owned(),
                plan_version: 1,
                depends_on: Vec::new(),
                held: false,
                priority: 0,
                retry: weft_core::plan::RetryPlan::default(),
            }],
            exclusion: crate::model::Exclusion::None,
            backfill: Some(BackfillStart {
                seq,
                planned_start: format!("2026-01-0{} 02:00:00", seq + 1),
                ..p.start.clone()
            }),
        }
    }

    fn seqs(repo: &Repository) -> Vec<i64> {
        repo.backfill_pending()
            .expect("pending")
            .0
            .iter()
            .map(|p| p.start.seq)
            .collect()
    }

    #[test]
    fn starts_begin_in_order_once_each_and_no_more_than_parallel_at_a_time() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("r.db");
        let repo = Repository::open(&path).expect("repository");
        rusqlite::Connection::open(&path)
            .expect("open")
            .execute_batch(
                "INSERT INTO folders (id, path, created_at, updated_at) VALUES (1, '/f', 't', 't');
                 INSERT INTO sheets (id, name, order_key, folder_id, definition, created_at, updated_at)
                     VALUES (1, 's', 'S', 1, '{}', 't', 't');
                 INSERT INTO sheet_plans (sheet_id, version, plans) VALUES (1, 1, '[]');
                 INSERT INTO plans_versions (sheet_id, version) VALUES (1, 1);",
            )
            .expect("plans");
        let days: Vec<String> = (1..=5).map(|d| format!("2026-01-0{d} 02:00:00")).collect();
        let id = repo
            .create_backfill((7, "nightly"), "ops", 2, &days)
            .expect("backfill");
        let (pending, left) = repo.backfill_pending().expect("pending");
        assert!(left);
        assert_eq!(seqs(&repo), [0, 1], "the first two, as two may run at once");
        let p = &pending[0];
        // Each begins once: a second instance for the same start is refused, nothing stored.
        assert!(matches!(
            repo.create_instance(&instance(p, 0), None, 100),
            Ok(Created::Stored(_))
        ));
        assert!(matches!(
            repo.create_instance(&instance(p, 0), None, 100),
            Err(Error::Conflict(_))
        ));
        let Ok(Created::Stored(second)) = repo.create_instance(&instance(p, 1), None, 100) else {
            panic!("the second start did not begin");
        };
        // Two are going: nothing more may begin, not even a start read before.
        assert_eq!(seqs(&repo), Vec::<i64>::new());
        assert!(matches!(
            repo.create_instance(&instance(p, 2), None, 100),
            Err(Error::Conflict(_))
        ));
        // The instance records its backfill, batch and planned start.
        let row = repo.instance(second).expect("read").expect("instance");
        assert_eq!(row.summary.backfill_id, Some(id));
        assert_eq!(row.summary.batch_id, Some(7));
        assert_eq!(
            row.summary.planned_start.as_deref(),
            Some("2026-01-02 02:00:00")
        );
        // A start that can never begin keeps why; the others stay in order.
        repo.backfill_failed(
            &BackfillStart {
                seq: 2,
                ..p.start.clone()
            },
            "its batch no longer exists",
        )
        .expect("failed");
        rusqlite::Connection::open(&path)
            .expect("open")
            .execute_batch("UPDATE batch_instances SET state = 'finished'")
            .expect("finish");
        assert_eq!(seqs(&repo), [3, 4], "the failed start is passed over");
    }
}
