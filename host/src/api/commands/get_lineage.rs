//! `GetLineage {table, connectionId?, schema?}`: the actions of the whole repository that
//! write the table and those that read it, from the data graph each deploy records, each
//! with every table it reads and writes (one step further up and down).

use super::handler::{Call, Handler, Payload};
use crate::api::error::ApiError;
use crate::api::protocol::read::{ENVELOPE, object, optional_whole, text};
use crate::api::state::AppState;
use std::collections::HashMap;
use std::sync::Arc;
use weft_dsr::Problems;
use weft_dsr::value::Value;
use weft_protocol::commands::{GetLineage, Lineage, LineageAction, LineageTable};

/// The most writers, and readers, an answer holds.
const MOST: usize = 1000;
/// The most tables an answer gives of each action's reads and writes together.
const MOST_TABLES: usize = 100;

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

    async fn handle(self, state: &Arc<AppState>, _call: &Call) -> Result<Lineage, ApiError> {
        let repo = Arc::clone(state.executor.repo());
        let (rows, tables, cut) = tokio::task::spawn_blocking(move || {
            // One more than an answer holds of both together, to say when it is cut.
            let all = repo.lineage(
                &self.table,
                self.connection_id,
                self.schema.as_deref(),
                (2 * MOST + 1) as i64,
            )?;
            // The first of each kind the answer holds.
            let (mut writers, mut readers) = (0, 0);
            let mut cut = false;
            let mut rows = Vec::with_capacity(all.len());
            for r in all {
                let n = if r.writes { &mut writers } else { &mut readers };
                if *n >= MOST {
                    cut = true;
                    continue;
                }
                *n += 1;
                rows.push(r);
            }
            // What each of them reads and writes besides: one step further each way.
            let mut actions: Vec<i64> = rows.iter().map(|r| r.action_id).collect();
            actions.sort_unstable();
            actions.dedup();
            let tables = repo.tables_of(&actions, MOST_TABLES as i64)?;
            Ok::<_, weft_repo::Error>((rows, tables, cut))
        })
        .await??;
        let mut lineage = Lineage {
            writers: Vec::new(),
            readers: Vec::new(),
            truncated: cut,
        };
        let mut by_action: HashMap<i64, (Vec<LineageTable>, Vec<LineageTable>)> = HashMap::new();
        for t in tables {
            let entry = by_action.entry(t.action_id).or_default();
            if entry.0.len() + entry.1.len() >= MOST_TABLES {
                lineage.truncated = true;
                continue;
            }
            let table = LineageTable {
                connection_id: t.object.connection_id,
                schema: t.object.schema,
                table: t.object.name,
            };
            if t.writes {
                entry.1.push(table);
            } else {
                entry.0.push(table);
            }
        }
        for r in rows {
            let (reads, writes) = by_action.get(&r.action_id).cloned().unwrap_or_default();
            let list = if r.writes {
                &mut lineage.writers
            } else {
                &mut lineage.readers
            };
            list.push(LineageAction {
                reads,
                writes,
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
