//! The instance answers (`weft_protocol::instances`) made from the repository's rows: an
//! instance's actions (the repository's rows hold their attempt and its unmarked writes
//! besides); a listed instance is read into its answer type by the repository itself.

use weft_protocol::instances::{Action, Instance};
use weft_repo::model::{ActionRow, InstanceRow};

/// An instance's action as `GetBatchInstance` answers it.
pub fn action(a: ActionRow) -> Action {
    Action {
        action_id: a.action_id,
        sheet_id: a.sheet_id,
        name: a.name,
        module: a.module,
        state: a.state,
        start: a.start,
        end: a.end,
        rows_read: a.rows_read,
        rows_written: a.rows_written,
        rows_updated: a.rows_updated,
        rows_deleted: a.rows_deleted,
        error: a.error,
        log: a.log,
        host: a.host,
        depends_on: a.depends_on,
        deploy_id: a.deploy_id,
        waiting_for: a.waiting_for,
        retry_at: a.retry_at,
        tries: a.tries,
    }
}

/// An instance with its actions as `GetBatchInstance` answers it.
pub fn instance(i: InstanceRow) -> Instance {
    let schedule_date = weft_engine::exec::variables::schedule_date(
        &i.variables,
        i.summary.planned_start.as_deref(),
        &i.summary.start,
    );
    Instance {
        schedule_date_set: i.variables.iter().any(|(n, _)| n == "schedule_date"),
        schedule_date,
        summary: i.summary,
        elements: i.elements,
        actions: i.actions.into_iter().map(action).collect(),
    }
}
