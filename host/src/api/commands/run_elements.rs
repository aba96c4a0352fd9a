//! `RunElements {batchExecution: {batchName, user, elementList, select?}}` with the envelope's
//! `variableList`: starts a batch instance and answers with its id at once (SPEC 4.3).

use super::handler::{Call, Handler, Payload};
use crate::api::error::ApiError;
use crate::api::protocol::read::{ENVELOPE, object, text, whole, wrong};
use crate::api::state::AppState;
use std::sync::Arc;
use weft_dsr::value::{Spanned, Value};
use weft_dsr::{Path, Problems};
use weft_engine::exec::batch::RunRequest;
use weft_protocol::Selection;
use weft_protocol::commands::{BatchExecution, RunElements, Started};
use weft_protocol::{ElementKey, ElementRef};

impl Handler for RunElements {
    fn read(mut payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        let variables = payload.take_variables();
        let mut fields = object(
            payload.value,
            payload.path,
            "the RunElements payload",
            problems,
        )?;
        let execution = fields.required("batchExecution", problems);
        fields.finish(problems);
        let (v, path) = execution?;
        let mut fields = object(
            v,
            path,
            "`batchExecution` {batchName, user, elementList, select?}",
            problems,
        )?;
        let batch_name = fields
            .required("batchName", problems)
            .and_then(|(v, p)| text(v, &p, "batchName", problems));
        let user = fields
            .required("user", problems)
            .and_then(|(v, p)| text(v, &p, "user", problems));
        let elements = fields
            .required("elementList", problems)
            .and_then(|(v, p)| element_list(v, &p, problems));
        let select = match fields.optional("select") {
            None => Some(Selection::Named),
            Some((v, _)) if matches!(v.value, Value::Null) => Some(Selection::Named),
            Some((v, p)) => match text(v, &p, "select", problems) {
                Some(word) => match Selection::from_word(&word) {
                    Some(s) => Some(s),
                    None => {
                        wrong(
                            v,
                            &p,
                            "`select` must be \"downstream\" (and what follows the elements), \"upstream\" (and what they follow) or \"named\"",
                            problems,
                        );
                        None
                    }
                },
                None => None,
            },
        };
        fields.finish(problems);
        Some(RunElements {
            batch_execution: BatchExecution {
                batch_name: batch_name?,
                user: user?,
                element_list: elements?,
                select: select?,
            },
            variables,
        })
    }

    async fn handle(self, state: &Arc<AppState>, call: &Call) -> Result<Started, ApiError> {
        let execution = self.batch_execution;
        let run = RunRequest {
            held: Vec::new(),
            exclusion: weft_repo::model::Exclusion::Manual,
            batch_name: execution.batch_name,
            user: call.caller.run_user(&execution.user),
            elements: Vec::new(),
            select: execution.select,
            variables: self
                .variables
                .into_iter()
                .map(|v| (v.name, v.value))
                .collect(),
        };
        let exec = Arc::clone(&state.executor);
        // A selection follows the data graph across folders: a user limited to folders runs
        // what it names only.
        if execution.select != weft_protocol::Selection::Named && !call.caller.folders.is_empty() {
            return Err(ApiError::OutsideFolders {
                user: call.caller.name.clone(),
                right: weft_protocol::Right::Operate,
                what: format!(
                    "`select: {}` (it follows the data into every folder)",
                    execution.select.word()
                ),
                folders: call.caller.folders.clone(),
            });
        }
        let refs = execution.element_list;
        let caller = call.caller.clone();
        let id = tokio::task::spawn_blocking(move || {
            let mut run = run;
            run.elements = weft_engine::exec::paths::resolve(exec.repo(), &refs)?;
            caller.may_run(exec.repo(), &run.elements)?;
            exec.start(run).map_err(ApiError::from)
        })
        .await??;
        Ok(Started {
            batch_instance_id: id,
        })
    }

    fn audit_answer(answer: &Started) -> Option<String> {
        Some(format!("instance {}", answer.batch_instance_id))
    }
}

/// The longest path an element may be named by.
const MAX_PATH: usize = 2000;

fn element_list(v: &Spanned, path: &Path, problems: &mut Problems) -> Option<Vec<ElementRef>> {
    let Value::Array(items) = &v.value else {
        wrong(v, path, "`elementList` must be an array", problems);
        return None;
    };
    if items.is_empty() {
        problems.error(
            ENVELOPE,
            "elementList is empty: name at least one sheet (S), action (A) or folder (F)",
            v.span,
            path,
        );
        return None;
    }
    let mut elements = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let ipath = path.index(i);
        let Some(mut fields) = object(item, ipath, "an element {elementType, elementId}", problems)
        else {
            continue;
        };
        let kind = fields
            .required("elementType", problems)
            .and_then(|(v, p)| match &v.value {
                Value::String(s) if matches!(s.as_str(), "S" | "A" | "F") => s.chars().next(),
                _ => {
                    wrong(
                        v,
                        &p,
                        "`elementType` must be S (sheet), A (action) or F (folder)",
                        problems,
                    );
                    None
                }
            });
        let id = fields
            .required("elementId", problems)
            .and_then(|(v, p)| match &v.value {
                // A path; any other text is read as a number (the scripts send "100").
                Value::String(s) if s.starts_with('/') => {
                    if s.len() <= MAX_PATH {
                        Some(ElementKey::Path(s.clone()))
                    } else {
                        wrong(
                            v,
                            &p,
                            "a path in `elementId` is at most 2000 bytes",
                            problems,
                        );
                        None
                    }
                }
                _ => whole(v, &p, "elementId", i64::MIN..=i64::MAX, problems).map(ElementKey::Id),
            });
        fields.finish(problems);
        if let (Some(kind), Some(id)) = (kind, id) {
            elements.push(ElementRef { kind, id });
        }
    }
    Some(elements)
}
