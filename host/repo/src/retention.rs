//! Retention: what the `keep_*` settings let go, removed in bounded rounds, each its own
//! short transaction, so that pruning a long history never holds the repository for long
//! nor grows one transaction without bound: ended instances (their actions, dependencies
//! and the sheets they ran go with them), the plans that no instance and no sheet names any
//! more, the log lines of old instances, and old lines of the deploy history (each object's
//! newest line always stays: an export and a comparison read it).
//!
//! The caller computes the cutoffs (UTC text as the repository writes times); several
//! hosts pruning at once remove each row once.

use crate::error::Result;
use crate::sql::{Session, args};

/// The most rows of each kind one round removes.
pub const ROUND: i64 = 500;

/// The most instances one round removes (each takes its actions with it).
pub const INSTANCES_A_ROUND: i64 = 50;

/// What a log of an instance older than `keep_logs_days` becomes.
pub const LOG_REMOVED: &str = "(log removed by retention: setting keep_logs_days)";

/// The cutoffs of a round: what ended (or was deployed) before each goes; `None` keeps it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Retention {
    /// Ended instances.
    pub runs_before: Option<String>,
    /// The log lines of ended instances.
    pub logs_before: Option<String>,
    /// Lines of the deploy history.
    pub deploys_before: Option<String>,
}

/// What a round removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Instances.
    pub instances: usize,
    /// Versions of sheets' plans.
    pub plans: usize,
    /// Actions whose log lines went.
    pub logs: usize,
    /// Lines of the deploy history.
    pub history: usize,
    /// Notifications sent or given up.
    pub notifications: usize,
    /// Entries of the audit.
    pub audit: usize,
}

impl Retention {
    /// The cutoffs of keeping runs, logs and deploys for these many days (0: for ever), from
    /// now by the service clock.
    pub fn of_days(runs: u64, logs: u64, deploys: u64) -> Self {
        let before = |days: u64| {
            (days > 0).then(|| {
                let days = i64::try_from(days).unwrap_or(i64::MAX);
                let now = weft_core::sched::clock::current().clock.now();
                crate::error::stored_time(
                    now.checked_sub_signed(chrono::Duration::days(days))
                        .unwrap_or(chrono::DateTime::<chrono::Utc>::MIN_UTC),
                )
            })
        };
        Retention {
            runs_before: before(runs),
            logs_before: before(logs),
            deploys_before: before(deploys),
        }
    }
}

impl Pruned {
    /// Whether the round removed anything (another may find more).
    pub fn any(&self) -> bool {
        self.instances + self.plans + self.logs + self.history + self.notifications + self.audit > 0
    }
}

/// Ended instances before `before`, at most [`INSTANCES_A_ROUND`].
pub fn instances(tx: &dyn Session, before: &str) -> Result<usize> {
    tx.execute(
        &format!(
            "DELETE FROM batch_instances WHERE id IN (
                 SELECT id FROM batch_instances
                  WHERE state IN ('finished', 'failed', 'halted', 'interrupted')
                    AND ended_at IS NOT NULL AND ended_at < ?1
                  ORDER BY id LIMIT {INSTANCES_A_ROUND})"
        ),
        args![before],
    )
}

/// Versions of plans that neither an instance nor a sheet names, at most [`ROUND`].
pub fn plans(tx: &dyn Session) -> Result<usize> {
    tx.execute(
        &format!(
            "DELETE FROM sheet_plans WHERE (sheet_id, version) IN (
                 SELECT p.sheet_id, p.version FROM sheet_plans p
                  WHERE NOT EXISTS (SELECT 1 FROM instance_sheets i
                                     WHERE i.sheet_id = p.sheet_id AND i.version = p.version)
                    AND NOT EXISTS (SELECT 1 FROM plans_versions v
                                     WHERE v.sheet_id = p.sheet_id AND v.version = p.version)
                  LIMIT {ROUND})"
        ),
        args![],
    )
}

/// The log lines of the actions of instances that ended before `before`, at most [`ROUND`]
/// actions.
pub fn logs(tx: &dyn Session, before: &str) -> Result<usize> {
    tx.execute(
        &format!(
            "UPDATE instance_actions SET log = ?2 WHERE (instance_id, action_id) IN (
                 SELECT a.instance_id, a.action_id FROM instance_actions a
                   JOIN batch_instances i ON i.id = a.instance_id
                  WHERE i.ended_at IS NOT NULL AND i.ended_at < ?1
                    AND a.log <> '' AND a.log <> ?2
                  LIMIT {ROUND})"
        ),
        args![before, LOG_REMOVED],
    )
}

/// Lines of the deploy history written before `before` that are not their object's newest,
/// at most [`ROUND`], and the deploys left without a line.
pub fn history(tx: &dyn Session, before: &str) -> Result<usize> {
    let lines = tx.execute(
        &format!(
            "DELETE FROM deploy_history WHERE id IN (
                 SELECT h.id FROM deploy_history h
                  WHERE h.deployed_at < ?1
                    AND EXISTS (SELECT 1 FROM deploy_history n
                                 WHERE n.kind = h.kind AND n.object_id = h.object_id AND n.id > h.id)
                  ORDER BY h.id LIMIT {ROUND})"
        ),
        args![before],
    )?;
    tx.execute(
        "DELETE FROM deploys WHERE deployed_at < ?1
            AND NOT EXISTS (SELECT 1 FROM deploy_history h WHERE h.deploy_id = deploys.id)",
        args![before],
    )?;
    Ok(lines)
}

/// Deletes (at most [`ROUND`]) notifications sent or given up before `before`, as the runs
/// they told of go; pending ones stay.
///
/// # Errors
///
/// A repository error.
pub fn notifications(tx: &dyn Session, before: &str) -> Result<usize> {
    tx.execute(
        &format!(
            "DELETE FROM notifications WHERE id IN (
                 SELECT id FROM notifications WHERE state <> 'pending' AND created_at < ?1
                  ORDER BY id LIMIT {ROUND})"
        ),
        args![before],
    )
}
