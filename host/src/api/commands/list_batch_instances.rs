//! `ListBatchInstances {limit?, state?, name?, before?, batchId?, backfillId?, startedBefore?,
//! offset?, total?}`: the most recent instances, newest first; a page by id, date or number.

use super::handler::{Call, Handler, Payload};
use crate::api::error::ApiError;
use crate::api::protocol::read::{ENVELOPE, flag, object, optional_whole, text, utc_time, wrong};
use crate::api::state::AppState;
use std::sync::Arc;
use weft_dsr::value::{Spanned, Value};
use weft_dsr::{Path, Problems};
use weft_protocol::commands::{InstanceList, ListBatchInstances};
use weft_repo::InstanceStore as _;

impl Handler for ListBatchInstances {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        read_payload(payload.value, payload.path, problems)
    }

    async fn handle(self, state: &Arc<AppState>, _call: &Call) -> Result<InstanceList, ApiError> {
        list(state, self).await
    }
}

fn read_payload(
    payload: &Spanned,
    path: Path,
    problems: &mut Problems,
) -> Option<ListBatchInstances> {
    let mut fields = object(
        payload,
        path,
        "the ListBatchInstances payload {limit?, state?, name?, before?, batchId?, backfillId?, startedBefore?, offset?, total?}",
        problems,
    )?;
    let mut list = ListBatchInstances::default();
    let mut ok = true;
    let limit = optional_whole(&mut fields, "limit", 1..=1000, &mut ok, problems);
    list.limit = limit.unwrap_or(list.limit);
    list.state = state_filter(&mut fields, &mut ok, problems);
    list.name = name_filter(&mut fields, &mut ok, problems);
    list.before = optional_whole(&mut fields, "before", 1..=i64::MAX, &mut ok, problems);
    list.batch_id = optional_whole(
        &mut fields,
        "batchId",
        i64::MIN..=i64::MAX,
        &mut ok,
        problems,
    );
    list.backfill_id = optional_whole(
        &mut fields,
        "backfillId",
        i64::MIN..=i64::MAX,
        &mut ok,
        problems,
    );
    if let Some((v, p)) = fields.optional("startedBefore")
        && !matches!(v.value, Value::Null)
    {
        let t = text(v, &p, "startedBefore", problems);
        match t.as_deref().and_then(utc_time) {
            Some(s) => list.started_before = Some(s),
            None => {
                if t.is_some() {
                    wrong(
                        v,
                        &p,
                        "`startedBefore` is a UTC time, YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ",
                        problems,
                    );
                }
                ok = false;
            }
        }
    }
    list.offset =
        optional_whole(&mut fields, "offset", 0..=100_000_000, &mut ok, problems).unwrap_or(0);
    if let Some((v, p)) = fields.optional("total") {
        match flag(v, &p, "total", problems) {
            Some(t) => list.total = t,
            None => ok = false,
        }
    }
    fields.finish(problems);
    ok.then_some(list)
}

/// `ListBatchInstances {limit?}`: the most recent instances, newest first.
async fn list(
    state: &Arc<AppState>,
    request: ListBatchInstances,
) -> Result<InstanceList, ApiError> {
    let repo = Arc::clone(state.executor.repo());
    let filter = weft_repo::model::InstanceFilter {
        limit: request.limit,
        state: request.state,
        name: request.name,
        before: request.before,
        batch_id: request.batch_id,
        backfill_id: request.backfill_id,
        started_before: request.started_before,
        offset: request.offset,
    };
    let (instances, total) = tokio::task::spawn_blocking(move || {
        let instances = repo.list_instances(&filter)?;
        let total = if request.total {
            Some(repo.count_instances(&filter)?)
        } else {
            None
        };
        Ok::<_, weft_repo::Error>((instances, total))
    })
    .await??;
    Ok(InstanceList { instances, total })
}

/// The optional `state` filter of a list of runs (an instance state's word).
pub(super) fn state_filter(
    fields: &mut weft_dsr::fields::Fields<'_>,
    ok: &mut bool,
    problems: &mut Problems,
) -> Option<weft_repo::model::InstanceState> {
    let (v, p) = fields
        .optional("state")
        .filter(|(v, _)| !matches!(v.value, Value::Null))?;
    let word = text(v, &p, "state", problems);
    match word
        .as_deref()
        .map(weft_repo::model::InstanceState::from_word)
    {
        Some(Some(state)) => Some(state),
        Some(None) => {
            problems.error(
                ENVELOPE,
                format!(
                    "`state` must be one of waiting, running, finished, failed, halted, interrupted, not `{}`",
                    word.unwrap_or_default().chars().take(40).collect::<String>()
                ),
                v.span,
                &p,
            );
            *ok = false;
            None
        }
        None => {
            *ok = false;
            None
        }
    }
}

/// The optional `name` filter of a list of runs (text a batch name holds, at most 200
/// characters; empty is none).
pub(super) fn name_filter(
    fields: &mut weft_dsr::fields::Fields<'_>,
    ok: &mut bool,
    problems: &mut Problems,
) -> Option<String> {
    let (v, p) = fields
        .optional("name")
        .filter(|(v, _)| !matches!(v.value, Value::Null))?;
    match text(v, &p, "name", problems) {
        Some(n) if n.chars().count() <= 200 => Some(n).filter(|n| !n.is_empty()),
        Some(_) => {
            problems.error(ENVELOPE, "`name` is at most 200 characters", v.span, &p);
            *ok = false;
            None
        }
        None => {
            *ok = false;
            None
        }
    }
}
