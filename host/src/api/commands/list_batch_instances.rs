//! `ListBatchInstances {limit?, state?, name?, before?, batchId?, backfillId?}`: the most recent
//! instances, newest first.

use super::handler::{Call, Handler, Payload};
use crate::api::error::ApiError;
use crate::api::protocol::read::{ENVELOPE, object, optional_whole, text};
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
        "the ListBatchInstances payload {limit?, state?, name?, before?, batchId?, backfillId?}",
        problems,
    )?;
    let mut list = ListBatchInstances::default();
    let mut ok = true;
    let limit = optional_whole(&mut fields, "limit", 1..=1000, &mut ok, problems);
    list.limit = limit.unwrap_or(list.limit);
    if let Some((v, p)) = fields.optional("state")
        && !matches!(v.value, Value::Null)
    {
        let word = text(v, &p, "state", problems);
        match word
            .as_deref()
            .map(weft_repo::model::InstanceState::from_word)
        {
            Some(Some(state)) => list.state = Some(state),
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
                ok = false;
            }
            None => ok = false,
        }
    }
    if let Some((v, p)) = fields.optional("name")
        && !matches!(v.value, Value::Null)
    {
        match text(v, &p, "name", problems) {
            Some(n) if n.chars().count() <= 200 => list.name = Some(n).filter(|n| !n.is_empty()),
            Some(_) => {
                problems.error(ENVELOPE, "`name` is at most 200 characters", v.span, &p);
                ok = false;
            }
            None => ok = false,
        }
    }
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
    };
    let instances = tokio::task::spawn_blocking(move || repo.list_instances(&filter)).await??;
    Ok(InstanceList { instances })
}
