//! The instance answers (`weft_protocol::instances`) made from the repository's rows.

use crate::repo::model::{ActionRow, InstanceRow, InstanceSummary};
use weft_protocol::instances::{Action, Instance, Listed};

impl From<InstanceSummary> for Listed {
    fn from(s: InstanceSummary) -> Self {
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
}

impl From<ActionRow> for Action {
    fn from(a: ActionRow) -> Self {
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
}

impl From<InstanceRow> for Instance {
    fn from(i: InstanceRow) -> Self {
        Instance {
            summary: i.summary.into(),
            elements: i.elements,
            actions: i.actions.into_iter().map(Action::from).collect(),
        }
    }
}
