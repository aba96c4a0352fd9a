//! Running a process module (`plugins::process` loads them): the `run` request with the
//! action, its variables and its connections' key file entries, the answer read back, its
//! messages into the action's log and its counts into the action's result; a failed answer
//! keeps its counts ([`RunFailure`]).

use serde::Deserialize;
use weft_core::plan::ActionPlan;
use weft_core::plugins::process::{PROTOCOL, ProcessModule, attribute_json, object_json, redact};
use weft_sdk::{PluginError, RunOutcome};

/// The `run` answer.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunAnswer {
    /// `finished` or `failed`.
    pub state: String,
    /// Rows read.
    #[serde(default)]
    pub rows_read: u64,
    /// Rows written.
    #[serde(default)]
    pub rows_written: u64,
    /// Rows updated.
    #[serde(default)]
    pub rows_updated: u64,
    /// Rows deleted.
    #[serde(default)]
    pub rows_deleted: u64,
    /// Lines for the action's log.
    #[serde(default)]
    pub messages: Vec<String>,
    /// Why it failed.
    #[serde(default)]
    pub error: Option<String>,
}

/// Why a process module's run failed, with the rows its `failed` answer says it handled
/// before (it commits itself, so they may be in its targets).
#[derive(Debug)]
pub struct RunFailure {
    /// What went wrong.
    pub error: PluginError,
    /// The counts of a `failed` answer; zero when there was none.
    pub counts: RunOutcome,
}

impl From<PluginError> for RunFailure {
    fn from(error: PluginError) -> Self {
        RunFailure {
            error,
            counts: RunOutcome::default(),
        }
    }
}

/// Runs `module` for `plan` with the action text `text` and `variables`; `entries` are the
/// key file entries of its connections (the module opens them itself); `log` takes its
/// messages.
///
/// # Errors
///
/// The call's, an answer that is not as the protocol says, or the module's own `failed`
/// with the counts it gave.
pub fn run(
    module: &ProcessModule,
    plan: &ActionPlan,
    text: &str,
    variables: &[(String, String)],
    entries: &[(i64, &weft_core::keys::Entry)],
    halted: &dyn Fn() -> bool,
    log: &dyn Fn(&str),
) -> Result<RunOutcome, RunFailure> {
    let mut vars = serde_json::Map::new();
    for (k, v) in variables {
        vars.insert(k.clone(), serde_json::Value::from(v.as_str()));
    }
    let mut connections = serde_json::Map::new();
    for (id, e) in entries {
        connections.insert(
            id.to_string(),
            serde_json::json!({
                "type": e.kind,
                "url": e.url,
                "user": e.user,
                "password": e.password,
                "options": e.options.iter().map(|(k, v)| (k.clone(), serde_json::Value::from(v.as_str()))).collect::<serde_json::Map<_, _>>(),
            }),
        );
    }
    // The attributes the action writes (a process module's manifest gives its defaults).
    let attributes = plan.sdk_attributes(None);
    let request = serde_json::json!({
        "weftModuleProtocol": PROTOCOL,
        "request": "run",
        "module": module.manifest.name,
        "action": {
            "id": plan.id,
            "name": plan.name,
            "text": text,
            "attributes": attribute_json(attributes.iter().map(|(k, v)| (k.as_str(), v))),
        },
        "variables": vars,
        "sources": plan.source_refs().iter().map(object_json).collect::<Vec<_>>(),
        "targets": plan.target_refs().iter().map(object_json).collect::<Vec<_>>(),
        "connections": connections,
    });
    log(&format!(
        "process module {} ({}) started",
        module.manifest.name,
        module.dir.display()
    ));
    let secrets: Vec<String> = entries
        .iter()
        .map(|(_, e)| e.password.clone())
        .filter(|p| !p.is_empty())
        .collect();
    let answer = module.call(&request, module.run_timeout(), halted, &secrets)?;
    let answer: RunAnswer = serde_json::from_value(answer).map_err(|e| {
        PluginError::new(format!(
            "process module {}: its run answer is not as the protocol says: {e}",
            module.manifest.name
        ))
    })?;
    for m in &answer.messages {
        log(&redact(m, &secrets));
    }
    let counts = RunOutcome {
        rows_read: answer.rows_read,
        rows_written: answer.rows_written,
        rows_updated: answer.rows_updated,
        rows_deleted: answer.rows_deleted,
    };
    match answer.state.as_str() {
        "finished" => Ok(counts),
        "failed" => Err(RunFailure {
            error: PluginError::new(redact(
                &format!(
                    "{}{}",
                    answer
                        .error
                        .as_deref()
                        .unwrap_or("the module said it failed, without a reason"),
                    counts_before_failing(&answer)
                ),
                &secrets,
            )),
            counts,
        }),
        other => Err(PluginError::new(format!(
            "process module {}: its answer's state is `{other}`; it is finished or failed",
            module.manifest.name
        ))
        .into()),
    }
}

/// The counts a failed answer gave, said after its error (a failed action records none of
/// its own): ` (it read 10 row(s) before it failed)`, or nothing when all are 0.
fn counts_before_failing(answer: &RunAnswer) -> String {
    let said: Vec<String> = [
        ("read", answer.rows_read),
        ("wrote", answer.rows_written),
        ("updated", answer.rows_updated),
        ("deleted", answer.rows_deleted),
    ]
    .iter()
    .filter(|(_, n)| *n > 0)
    .map(|(what, n)| format!("{what} {n} row(s)"))
    .collect();
    if said.is_empty() {
        String::new()
    } else {
        format!(" (it {} before it failed)", said.join(", "))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_failed_answer_s_counts_are_said_with_its_error() {
        let answer: super::RunAnswer = serde_json::from_value(serde_json::json!({
            "state": "failed", "error": "too few", "rowsRead": 10}))
        .expect("answer");
        assert_eq!(
            super::counts_before_failing(&answer),
            " (it read 10 row(s) before it failed)"
        );
        let none: super::RunAnswer =
            serde_json::from_value(serde_json::json!({"state": "failed"})).expect("answer");
        assert_eq!(super::counts_before_failing(&none), "");
    }
}
