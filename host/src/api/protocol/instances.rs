//! The instance answers (`weft_protocol::instances`) made from the repository's rows.

use weft_protocol::instances::{Action, Instance, Listed};
use weft_repo::model::{ActionRow, InstanceRow, InstanceSummary};

/// A listed instance as `ListBatchInstances` answers it.
pub fn listed(s: InstanceSummary) -> Listed {
    Listed {
        batch_instance_id: s.batch_instance_id,
        batch_name: s.batch_name,
        user: s.user,
        state: s.state,
        start: s.start,
        end: s.end,
        batch_id: s.batch_id,
        planned_start: s.planned_start,
        late_seconds: s.late_seconds,
        late: s.late,
        running_on: s.running_on,
    }
}

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
    }
}

/// An instance with its actions as `GetBatchInstance` answers it.
pub fn instance(i: InstanceRow) -> Instance {
    Instance {
        summary: listed(i.summary),
        elements: i.elements,
        actions: i.actions.into_iter().map(action).collect(),
    }
}
