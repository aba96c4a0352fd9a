//! The batch commands: `RunElements` (SPEC 4.3) and the project's monitoring and operation
//! commands `GetBatchInstance`, `WaitBatchInstance`, `ListBatchInstances`,
//! `HaltBatchInstance`, `RestartBatchInstance`.

use super::AppState;
use super::error::ApiError;
use crate::exec::batch::{Element, RunRequest, StartError};
use crate::repo::InstanceStore;
use crate::repo::model::InstanceRow;
use axum::http::StatusCode;
use serde::Deserialize;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn bad(message: String) -> ApiError {
    ApiError::client(StatusCode::BAD_REQUEST, "request.envelope", message)
}

fn from_start(e: StartError) -> ApiError {
    match e {
        StartError::NotFound(m) => ApiError::client(StatusCode::NOT_FOUND, "run.not_found", m),
        StartError::Cycle(m) => ApiError::client(StatusCode::UNPROCESSABLE_ENTITY, "run.cycle", m),
        StartError::Conflict(m) => ApiError::client(StatusCode::CONFLICT, "run.conflict", m),
        StartError::Invalid(m) => ApiError::internal(m),
        StartError::Repo(e) => ApiError::from_repo(&e),
        StartError::Busy(m) => {
            ApiError::client(StatusCode::TOO_MANY_REQUESTS, "run.queue_full", m).retry_after(5)
        }
    }
}

/// Refuses a payload member other than `allowed`.
fn only_fields(
    payload: &serde_json::Value,
    command: &str,
    allowed: &[&str],
) -> Result<(), ApiError> {
    if let Some(obj) = payload.as_object()
        && let Some(k) = obj.keys().find(|k| !allowed.contains(&k.as_str()))
    {
        return Err(bad(format!(
            "unknown field `{k}` in the {command} payload; expected {}",
            allowed.join(", ")
        )));
    }
    Ok(())
}

/// A JSON scalar as text: variable values and ids may come as strings or numbers.
fn scalar(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct BatchExecution {
    batch_name: String,
    user: String,
    element_list: Vec<RawElement>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawElement {
    element_type: String,
    element_id: serde_json::Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RunPayload {
    batch_execution: BatchExecution,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawVariable {
    variable_name: String,
    #[serde(default)]
    variable_type: Option<String>,
    variable_value: serde_json::Value,
}

/// `RunElements`: starts an instance and answers with its id at once.
pub async fn run_elements(
    state: &Arc<AppState>,
    payload: serde_json::Value,
    variables: Option<serde_json::Value>,
) -> Result<serde_json::Value, ApiError> {
    let p: RunPayload = serde_json::from_value(payload).map_err(|e| bad(format!("the RunElements payload is not {{batchExecution: {{batchName, user, elementList}}}}: {e}")))?;
    let mut elements = Vec::new();
    for (i, e) in p.batch_execution.element_list.iter().enumerate() {
        let kind = match e.element_type.as_str() {
            "S" | "A" | "F" => e.element_type.chars().next().unwrap_or('S'),
            other => {
                return Err(bad(format!(
                    "elementList[{i}].elementType `{other}` is not known; use S (sheet), A (action) or F (folder)"
                )));
            }
        };
        let id = scalar(&e.element_id)
            .and_then(|s| s.trim().parse::<i64>().ok())
            .ok_or_else(|| {
                bad(format!(
                    "elementList[{i}].elementId must be a whole number, found {}",
                    e.element_id
                ))
            })?;
        elements.push(Element { kind, id });
    }
    if elements.is_empty() {
        return Err(bad(
            "elementList is empty: name at least one sheet (S), action (A) or folder (F)"
                .to_owned(),
        ));
    }
    let mut vars = Vec::new();
    if let Some(v) = variables.filter(|v| !v.is_null()) {
        let list: Vec<RawVariable> = serde_json::from_value(v).map_err(|e| {
            bad(format!(
                "variableList is not a list of {{variableName, variableType, variableValue}}: {e}"
            ))
        })?;
        for (i, v) in list.into_iter().enumerate() {
            let value = scalar(&v.variable_value).ok_or_else(|| {
                bad(format!(
                    "variableList[{i}].variableValue must be a string, a number or a boolean"
                ))
            })?;
            if v.variable_name.trim().is_empty() {
                return Err(bad(format!("variableList[{i}].variableName is empty")));
            }
            let _ = v.variable_type;
            vars.push((v.variable_name, value));
        }
    }
    let req = RunRequest {
        batch_name: p.batch_execution.batch_name,
        user: p.batch_execution.user,
        elements,
        variables: vars,
    };
    let exec = Arc::clone(&state.executor);
    let id = tokio::task::spawn_blocking(move || exec.start(req))
        .await
        .map_err(|e| ApiError::internal(format!("the start task failed: {e}")))?
        .map_err(from_start)?;
    Ok(serde_json::json!({ "batchInstanceId": id }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct InstanceRef {
    batch_instance_id: serde_json::Value,
    #[serde(default)]
    timeout_seconds: Option<serde_json::Value>,
}

fn instance_id(payload: serde_json::Value, command: &str) -> Result<(i64, Option<f64>), ApiError> {
    let r: InstanceRef = serde_json::from_value(payload).map_err(|e| {
        bad(format!(
            "the {command} payload is not {{batchInstanceId}}: {e}"
        ))
    })?;
    let id = scalar(&r.batch_instance_id)
        .and_then(|s| s.trim().parse::<i64>().ok())
        .ok_or_else(|| {
            bad(format!(
                "batchInstanceId must be a whole number, found {}",
                r.batch_instance_id
            ))
        })?;
    let timeout = match r.timeout_seconds {
        None | Some(serde_json::Value::Null) => None,
        Some(v) => Some(
            scalar(&v)
                .and_then(|s| s.trim().parse::<f64>().ok())
                .filter(|t| t.is_finite() && *t >= 0.0)
                .ok_or_else(|| {
                    bad(format!(
                        "timeoutSeconds must be a number of seconds, found {v}"
                    ))
                })?,
        ),
    };
    Ok((id, timeout))
}

async fn read_instance(state: &Arc<AppState>, id: i64) -> Result<InstanceRow, ApiError> {
    let repo = Arc::clone(state.executor.repo());
    tokio::task::spawn_blocking(move || repo.instance(id))
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
        .map_err(|e| ApiError::from_repo(&e))?
        .ok_or_else(|| no_instance(id))
}

fn no_instance(id: i64) -> ApiError {
    ApiError::client(
        StatusCode::NOT_FOUND,
        "run.not_found",
        format!("batch instance {id} does not exist"),
    )
}

/// `GetBatchInstance`.
pub async fn get_instance(
    state: &Arc<AppState>,
    payload: serde_json::Value,
) -> Result<serde_json::Value, ApiError> {
    let (id, _) = instance_id(payload, "GetBatchInstance")?;
    let row = read_instance(state, id).await?;
    serde_json::to_value(row).map_err(|e| ApiError::internal(e.to_string()))
}

/// `WaitBatchInstance`: answers when the run has ended or the time is up (`timedOut`).
pub async fn wait_instance(
    state: &Arc<AppState>,
    payload: serde_json::Value,
) -> Result<serde_json::Value, ApiError> {
    let (id, timeout) = instance_id(payload, "WaitBatchInstance")?;
    let deadline = Instant::now() + Duration::from_secs_f64(timeout.unwrap_or(30.0).min(3600.0));
    loop {
        // Only the state while waiting; the whole instance once, at the end.
        let repo = Arc::clone(state.executor.repo());
        let current = tokio::task::spawn_blocking(move || repo.instance_state(id))
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?
            .map_err(|e| ApiError::from_repo(&e))?
            .ok_or_else(|| no_instance(id))?;
        let timed_out = Instant::now() >= deadline;
        if !current.is_ongoing() || timed_out {
            let row = read_instance(state, id).await?;
            let ongoing = row.summary.state.is_ongoing();
            let mut v = serde_json::to_value(row).map_err(|e| ApiError::internal(e.to_string()))?;
            v["timedOut"] = serde_json::Value::Bool(timed_out && ongoing);
            return Ok(v);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `ListBatchInstances {limit?}`: the most recent instances, newest first.
pub async fn list_instances(
    state: &Arc<AppState>,
    payload: serde_json::Value,
) -> Result<serde_json::Value, ApiError> {
    only_fields(&payload, "ListBatchInstances", &["limit"])?;
    let limit = match payload.get("limit") {
        None | Some(serde_json::Value::Null) => 20,
        Some(v) => scalar(v)
            .and_then(|s| s.trim().parse::<i64>().ok())
            .filter(|n| (1..=1000).contains(n))
            .ok_or_else(|| {
                bad(format!(
                    "limit must be a whole number from 1 to 1000, found {v}"
                ))
            })?,
    };
    let repo = Arc::clone(state.executor.repo());
    let rows = tokio::task::spawn_blocking(move || repo.list_instances(limit))
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
        .map_err(|e| ApiError::from_repo(&e))?;
    Ok(serde_json::json!({ "instances": rows }))
}

/// `NextRuns {batchId, count?}`: the next planned starts of a scheduled batch (default 10,
/// at most 1,000) in local time and UTC, with clock changes marked.
pub async fn next_runs(
    state: &Arc<AppState>,
    payload: serde_json::Value,
) -> Result<serde_json::Value, ApiError> {
    only_fields(&payload, "NextRuns", &["batchId", "count"])?;
    let id = payload
        .get("batchId")
        .and_then(scalar)
        .and_then(|s| s.trim().parse::<i64>().ok())
        .ok_or_else(|| {
            bad(
                "the NextRuns payload is not {batchId, count?}: batchId must be a whole number"
                    .to_owned(),
            )
        })?;
    let count = match payload.get("count") {
        None | Some(serde_json::Value::Null) => 10,
        Some(v) => scalar(v)
            .and_then(|s| s.trim().parse::<usize>().ok())
            .filter(|n| (1..=1000).contains(n))
            .ok_or_else(|| {
                bad(format!(
                    "count must be a whole number from 1 to 1000, found {v}"
                ))
            })?,
    };
    let repo = Arc::clone(state.executor.repo());
    let zone = crate::scheduling::clock::current().zone;
    let found = tokio::task::spawn_blocking(move || {
        crate::scheduling::scheduler::next_runs(&*repo, id, count, zone)
    })
    .await
    .map_err(|e| ApiError::internal(e.to_string()))?
    .map_err(|e| ApiError::from_repo(&e))?;
    let found = found.ok_or_else(|| {
        ApiError::client(
            StatusCode::NOT_FOUND,
            "batch.not_found",
            format!("batch {id} does not exist"),
        )
    })?;
    serde_json::to_value(found).map_err(|e| ApiError::internal(e.to_string()))
}

/// `HaltBatchInstance`.
pub async fn halt_instance(
    state: &Arc<AppState>,
    payload: serde_json::Value,
) -> Result<serde_json::Value, ApiError> {
    let (id, _) = instance_id(payload, "HaltBatchInstance")?;
    let exec = Arc::clone(&state.executor);
    tokio::task::spawn_blocking(move || exec.halt(id))
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
        .map_err(from_start)?;
    Ok(serde_json::json!({ "batchInstanceId": id, "haltRequested": true }))
}

/// `RestartBatchInstance`.
pub async fn restart_instance(
    state: &Arc<AppState>,
    payload: serde_json::Value,
) -> Result<serde_json::Value, ApiError> {
    let (id, _) = instance_id(payload, "RestartBatchInstance")?;
    let exec = Arc::clone(&state.executor);
    let n = tokio::task::spawn_blocking(move || exec.restart(id))
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
        .map_err(from_start)?;
    Ok(serde_json::json!({ "batchInstanceId": id, "actionsToRun": n }))
}

/// `AdvanceClock {seconds}` or `{to}` (development servers started with `--stepped-clock`):
/// moves the service clock forward, runs one scheduler tick at the new instant, and answers
/// with what the tick started, so that a test knows every start without waiting for one.
pub async fn advance_clock(
    state: &Arc<AppState>,
    payload: serde_json::Value,
) -> Result<serde_json::Value, ApiError> {
    only_fields(&payload, "AdvanceClock", &["seconds", "to"])?;
    let time = crate::scheduling::clock::current();
    if !time.clock.is_stepped() {
        return Err(ApiError::client(
            StatusCode::CONFLICT,
            "clock.not_stepped",
            "AdvanceClock moves the service clock only of a development server started with --stepped-clock",
        ));
    }
    let now = time.clock.now();
    let to = match (payload.get("seconds"), payload.get("to")) {
        (Some(v), None) => {
            let seconds = v
                .as_i64()
                .filter(|s| (0..=366 * 86_400).contains(s))
                .ok_or_else(|| {
                    bad(format!(
                        "seconds must be a whole number from 0 to 31622400 (a year), found {v}"
                    ))
                })?;
            now + chrono::Duration::seconds(seconds)
        }
        (None, Some(serde_json::Value::String(text))) => {
            crate::scheduling::clock::parse_timestamp(text, time.zone)
                .map_err(|e| bad(format!("to: {e}")))?
        }
        _ => {
            return Err(bad(
                "the AdvanceClock payload is {seconds} or {to}: seconds a whole number, to a timestamp (RFC 3339, or YYYY-MM-DD HH:MM[:SS] in the service time zone)"
                    .to_owned(),
            ));
        }
    };
    let now = time
        .clock
        .advance(to)
        .map_err(|e| ApiError::client(StatusCode::CONFLICT, "clock.backwards", e))?;
    let exec = Arc::clone(&state.executor);
    let zone = time.zone;
    let tick =
        tokio::task::spawn_blocking(move || crate::scheduling::scheduler::tick(&exec, zone, now))
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?
            .map_err(|e| ApiError::from_repo(&e))?;
    let started: Vec<serde_json::Value> = tick
        .started
        .iter()
        .map(|(batch, instance)| {
            serde_json::json!({ "batchId": batch, "batchInstanceId": instance })
        })
        .collect();
    Ok(serde_json::json!({
        "now": now.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        "local": crate::scheduling::clock::wall(now.with_timezone(&zone).naive_local()),
        "started": started,
        "passed": tick.passed,
        "waiting": tick.waiting,
    }))
}
