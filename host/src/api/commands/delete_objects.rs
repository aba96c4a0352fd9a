//! `DeleteObjects {folders?, sheets?, connections?, batches?, modules?, recursive?, dryRun?}`: removes
//! objects from the repository by id or by path or name, or nothing, naming every
//! reference that stands in the way.

use super::handler::{Call, Handler, Payload};
use crate::api::error::ApiError;
use crate::api::protocol::read::{flag, object, wrong};
use crate::api::state::AppState;
use std::sync::Arc;
use weft_dsr::value::{Spanned, Value};
use weft_dsr::{Path, Problems};
use weft_protocol::commands::{DeleteObjects, Deleted, ObjectName};

/// The most objects one request names.
const MAX_NAMES: usize = 10_000;

/// A list of objects named by id (a number, or a string of digits) or path or name.
fn names(v: &Spanned, path: &Path, key: &str, problems: &mut Problems) -> Option<Vec<ObjectName>> {
    let Value::Array(items) = &v.value else {
        if matches!(v.value, Value::Null) {
            return Some(Vec::new());
        }
        wrong(
            v,
            path,
            &format!("`{key}` must be an array of ids or names"),
            problems,
        );
        return None;
    };
    if items.len() > MAX_NAMES {
        wrong(
            v,
            path,
            &format!("`{key}` names more than {MAX_NAMES} objects; delete a folder instead"),
            problems,
        );
        return None;
    }
    let mut out = Vec::with_capacity(items.len());
    let mut ok = true;
    for (i, item) in items.iter().enumerate() {
        match &item.value {
            Value::Int(id) => out.push(ObjectName::Id(*id)),
            Value::String(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
                match s.parse() {
                    Ok(id) => out.push(ObjectName::Id(id)),
                    Err(_) => {
                        wrong(item, &path.index(i), "an id must fit 64 bits", problems);
                        ok = false;
                    }
                }
            }
            Value::String(s) if !s.trim().is_empty() => out.push(ObjectName::Name(s.clone())),
            _ => {
                wrong(
                    item,
                    &path.index(i),
                    "an object is named by its id (a whole number) or its path or name (a string)",
                    problems,
                );
                ok = false;
            }
        }
    }
    ok.then_some(out)
}

impl Handler for DeleteObjects {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        let at = payload.path.clone();
        let mut fields = object(
            payload.value,
            payload.path,
            "the DeleteObjects payload {folders?, sheets?, connections?, batches?, modules?, recursive?, dryRun?}",
            problems,
        )?;
        let mut list = |key: &'static str| match fields.optional(key) {
            None => Some(Vec::new()),
            Some((v, p)) => names(v, &p, key, problems),
        };
        let (folders, sheets, connections, batches, modules) = (
            list("folders"),
            list("sheets"),
            list("connections"),
            list("batches"),
            list("modules"),
        );
        let recursive = match fields.optional("recursive") {
            Some((v, p)) => flag(v, &p, "recursive", problems),
            None => Some(false),
        };
        let dry_run = match fields.optional("dryRun") {
            Some((v, p)) => flag(v, &p, "dryRun", problems),
            None => Some(false),
        };
        fields.finish(problems);
        let request = DeleteObjects {
            folders: folders?,
            sheets: sheets?,
            connections: connections?,
            batches: batches?,
            modules: modules?,
            recursive: recursive?,
            dry_run: dry_run?,
        };
        let named = request.folders.len()
            + request.sheets.len()
            + request.connections.len()
            + request.batches.len()
            + request.modules.len();
        if named == 0 {
            wrong(
                payload.value,
                &at,
                "DeleteObjects names nothing to delete: give at least one of folders, sheets, connections, batches or modules",
                problems,
            );
            return None;
        }
        Some(request)
    }

    async fn handle(self, state: &Arc<AppState>, call: &Call) -> Result<Deleted, ApiError> {
        let repo = Arc::clone(&state.repo);
        let (by, folders) = (call.caller.name.clone(), call.caller.folders.clone());
        let deleted = tokio::task::spawn_blocking(move || {
            let by = weft_engine::deploy::Deployer {
                name: &by,
                folders: &folders,
            };
            weft_engine::deploy::delete(&repo, &self, by)
        })
        .await??;
        if let Some(id) = deleted.deploy_id {
            tracing::info!(
                deploy = id,
                objects = deleted.deleted.len(),
                "deleted objects from the repository"
            );
        }
        Ok(deleted)
    }

    fn audit_answer(answer: &Deleted) -> Option<String> {
        let number = answer.deploy_id.filter(|_| !answer.dry_run)?;
        Some(format!("deploy {number}, {} deleted", answer.deleted.len()))
    }
}
