//! `WaitBatchInstance {batchInstanceId, timeoutSeconds?, changedFrom?}`: answers when the
//! run has ended or the time is up; with `changedFrom`, also as soon as the instance
//! differs from that version (a page following a run).

use super::get_batch_instance::read_instance;
use super::handler::{Call, Handler, Payload};
use crate::api::error::ApiError;
use crate::api::protocol::Instance;
use crate::api::protocol::read::{object, text, whole, wrong};
use crate::api::state::AppState;
use crate::api::waits::Read;
use std::sync::Arc;
use std::time::Duration;
use weft_dsr::value::{Spanned, Value};
use weft_dsr::{Path, Problems};
use weft_protocol::commands::{WaitBatchInstance, Waited};
use weft_repo::InstanceStore as _;

impl Handler for WaitBatchInstance {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        read_payload(payload.value, payload.path, problems)
    }

    async fn handle(self, state: &Arc<AppState>, _call: &Call) -> Result<Waited, ApiError> {
        wait(state, self).await
    }
}

fn read_payload(
    payload: &Spanned,
    path: Path,
    problems: &mut Problems,
) -> Option<WaitBatchInstance> {
    let mut fields = object(
        payload,
        path,
        "the WaitBatchInstance payload {batchInstanceId, timeoutSeconds?, changedFrom?}",
        problems,
    )?;
    let id = fields
        .required("batchInstanceId", problems)
        .and_then(|(v, p)| whole(v, &p, "batchInstanceId", i64::MIN..=i64::MAX, problems));
    let timeout = fields.optional("timeoutSeconds").and_then(|(v, p)| {
        let seconds = match &v.value {
            Value::Null => return None,
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            Value::String(s) => s.trim().parse::<f64>().ok(),
            _ => None,
        };
        let ok = seconds.filter(|t| t.is_finite() && *t >= 0.0);
        if ok.is_none() {
            wrong(
                v,
                &p,
                "`timeoutSeconds` must be a number of seconds (0 or more)",
                problems,
            );
        }
        ok
    });
    let changed_from = match fields.optional("changedFrom") {
        Some((v, _)) if matches!(v.value, Value::Null) => Some(None),
        Some((v, p)) => match text(v, &p, "changedFrom", problems) {
            Some(t) if t.len() <= 64 => Some(Some(t)),
            Some(_) => {
                wrong(
                    v,
                    &p,
                    "`changedFrom` is the `version` of an earlier answer (at most 64 characters)",
                    problems,
                );
                None
            }
            None => None,
        },
        None => Some(None),
    };
    fields.finish(problems);
    Some(WaitBatchInstance {
        batch_instance_id: id?,
        timeout_seconds: timeout,
        changed_from: changed_from?,
    })
}

/// `WaitBatchInstance`: answers when the run has ended or the time is up (`timedOut`);
/// with `changedFrom`, also as soon as the instance differs from that version. The wait
/// holds one of the server's places for waits, and is woken by the instance's one watcher
/// (`api::waits`), which reads the repository for all its waiters.
async fn wait(state: &Arc<AppState>, request: WaitBatchInstance) -> Result<Waited, ApiError> {
    let id = request.batch_instance_id;
    let mut seconds = request
        .timeout_seconds
        .unwrap_or(WaitBatchInstance::DEFAULT_SECONDS)
        .min(WaitBatchInstance::MAX_SECONDS);
    if request.changed_from.is_some() {
        seconds = seconds.min(WaitBatchInstance::MAX_CHANGE_SECONDS);
    }
    let _place = state.waits.enter()?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs_f64(seconds);
    // The changes this wait knows of when it comes (a restart its caller asked for): a read
    // the watcher made before them is not an answer.
    let entered = state.executor.changes().count();
    let follow = request.changed_from.is_some();
    let (mut seen, _following) = state.waits.watch(&state.executor, id, follow);
    let mut timed_out = false;
    // The watcher may still hold an older read than the one the caller's `changedFrom` came
    // from, or only the instance's state: one look of the waiter's own settles whether it
    // has changed already.
    let mut already = None;
    if let Some(from) = &request.changed_from {
        let changes = state.executor.changes().count();
        match fingerprint(state, id).await? {
            None => return Err(ApiError::NoInstance(id)),
            Some((current, version)) if version == *from && current.is_ongoing() => {
                state.waits.saw(
                    id,
                    Read {
                        changes,
                        seen: Some((current, version)),
                    },
                );
                seen.borrow_and_update();
            }
            Some((_, version)) => already = Some(version),
        }
    }
    let version = if let Some(version) = already {
        version
    } else {
        loop {
            let now = seen
                .borrow_and_update()
                .clone()
                .filter(|read| read.changes >= entered)
                .map(|read| read.seen);
            match now {
                Some(None) => return Err(ApiError::NoInstance(id)),
                Some(Some((current, version))) => {
                    // A read of the state alone (made before this waiter came) tells no change.
                    let moved = !version.is_empty()
                        && request
                            .changed_from
                            .as_ref()
                            .is_some_and(|from| *from != version);
                    if moved || !current.is_ongoing() || timed_out {
                        break version;
                    }
                }
                // Not read yet, or read before the changes this wait knows of.
                None if timed_out => break String::new(),
                None => {}
            }
            match tokio::time::timeout_at(deadline, seen.changed()).await {
                Ok(Ok(())) => {}
                // The watcher is gone (it cannot be while this waits); look once more, as at the
                // end of the time.
                Ok(Err(_)) | Err(_) => timed_out = true,
            }
        }
    };
    // The watcher read the state alone: the version is read once here, at the end.
    let version = if version.is_empty() {
        match fingerprint(state, id).await? {
            Some((_, version)) => version,
            None => return Err(ApiError::NoInstance(id)),
        }
    } else {
        version
    };
    // Read once for all the waiters that end at this version.
    let (instance, version) = match state.waits.answer(id, &version) {
        Some(known) => ((*known).clone(), version),
        None => {
            let (instance, version) = with_version(state, id, version).await?;
            state
                .waits
                .remember(id, &version, Arc::new(instance.clone()));
            (instance, version)
        }
    };
    let ongoing = instance.summary.state.is_ongoing();
    Ok(Waited {
        timed_out: match &request.changed_from {
            Some(from) => *from == version && ongoing,
            None => timed_out && ongoing,
        },
        instance,
        version,
    })
}

/// Instance `id`'s state and its version as `Waited` answers it (its fingerprint in hex).
async fn fingerprint(
    state: &Arc<AppState>,
    id: i64,
) -> Result<Option<(weft_repo::model::InstanceState, String)>, ApiError> {
    let repo = Arc::clone(state.executor.repo());
    weft_core::metrics::wait_read();
    Ok(
        tokio::task::spawn_blocking(move || repo.instance_fingerprint(id))
            .await??
            .map(|(s, f)| (s, format!("{f:016x}"))),
    )
}

/// Instance `id` read whole with the version that is its own: `version` (read just before)
/// when the fingerprint is the same after the read, else read again (at most three times;
/// then the version read before the last read, which at worst wakes a follower once more).
async fn with_version(
    state: &Arc<AppState>,
    id: i64,
    mut version: String,
) -> Result<(Instance, String), ApiError> {
    for _ in 0..3 {
        let instance = read_instance(state, id).await?;
        match fingerprint(state, id).await? {
            Some((_, after)) if after == version => return Ok((instance, version)),
            Some((_, after)) => version = after,
            None => return Err(ApiError::NoInstance(id)),
        }
    }
    let instance = read_instance(state, id).await?;
    Ok((instance, version))
}
