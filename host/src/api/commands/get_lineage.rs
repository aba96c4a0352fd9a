//! `GetLineage {table, connectionId?, schema?}`: the actions of the whole repository that
//! write the table and those that read it, from the data graph each deploy records.

use super::handler::{Handler, Payload};
use crate::api::error::ApiError;
use crate::api::protocol::read::{ENVELOPE, object, optional_whole, text};
use crate::api::state::AppState;
use std::sync::Arc;
use weft_dsr::Problems;
use weft_dsr::value::Value;
use weft_protocol::commands::{GetLineage, Lineage, LineageAction};

/// The most writers, and readers, an answer holds.
const MOST: usize = 1000;

impl Handler for GetLineage {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        let mut fields = object(
            payload.value,
            payload.path,
            "the GetLineage payload {table, connectionId?, schema?}",
            problems,
        )?;
        let mut ok = true;
        let table = match fields.required("table", problems) {
            Some((v, p)) => match text(v, &p, "table", problems) {
                Some(t) if !t.trim().is_empty() && t.chars().count() <= 200 => {
                    Some(t.trim().to_owned())
                }
                Some(_) => {
                    problems.error(
                        ENVELOPE,
                        "`table` is a table's name: 1 to 200 characters",
                        v.span,
                        &p,
                    );
                    None
                }
                None => None,
            },
            None => None,
        };
        let connection_id =
            optional_whole(&mut fields, "connectionId", 1..=i64::MAX, &mut ok, problems);
        let mut schema = None;
        if let Some((v, p)) = fields.optional("schema")
            && !matches!(v.value, Value::Null)
        {
            match text(v, &p, "schema", problems) {
                Some(s) if s.chars().count() <= 200 => schema = Some(s),
                Some(_) => {
                    problems.error(ENVELOPE, "`schema` is at most 200 characters", v.span, &p);
                    ok = false;
                }
                None => ok = false,
            }
        }
        fields.finish(problems);
        let table = table?;
        ok.then_some(GetLineage {
            table,
            connection_id,
            schema,
        })
    }

    async fn handle(self, state: &Arc<AppState>, _request_id: u64) -> Result<Lineage, ApiError> {
        let repo = Arc::clone(state.executor.repo());
        let rows = tokio::task::spawn_blocking(move || {
            // One more than an answer holds of both together, to say when it is cut.
            repo.lineage(
                &self.table,
                self.connection_id,
                self.schema.as_deref(),
                (2 * MOST + 1) as i64,
            )
        })
        .await??;
        let mut lineage = Lineage {
            writers: Vec::new(),
            readers: Vec::new(),
            truncated: false,
        };
        for r in rows {
            let list = if r.writes {
                &mut lineage.writers
            } else {
                &mut lineage.readers
            };
            if list.len() >= MOST {
                lineage.truncated = true;
                continue;
            }
            list.push(LineageAction {
                action_id: r.action_id,
                action_name: r.action_name,
                sheet_id: r.sheet_id,
                sheet_name: r.sheet_name,
                folder: r.folder,
                connection_id: r.object.connection_id,
                schema: r.object.schema,
                table: r.object.name,
            });
        }
        Ok(lineage)
    }
}
