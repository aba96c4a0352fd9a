//! `NextRuns {batchId, count?}`: the next planned starts of a scheduled batch in local time
//! and UTC, with clock changes marked.

use super::handler::{Call, Handler, Payload};
use crate::api::error::ApiError;
use crate::api::protocol::read::{object, whole};
use crate::api::state::AppState;
use std::sync::Arc;
use weft_core::sched::{clock, scheduler};
use weft_dsr::value::{Spanned, Value};
use weft_dsr::{Path, Problems};
use weft_protocol::commands::NextRuns;

impl Handler for NextRuns {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        read_payload(payload.value, payload.path, problems)
    }

    async fn handle(
        self,
        state: &Arc<AppState>,
        _call: &Call,
    ) -> Result<scheduler::NextRuns, ApiError> {
        next(state, self).await
    }
}

fn read_payload(payload: &Spanned, path: Path, problems: &mut Problems) -> Option<NextRuns> {
    let mut fields = object(
        payload,
        path,
        "the NextRuns payload {batchId, count?}",
        problems,
    )?;
    let id = fields
        .required("batchId", problems)
        .and_then(|(v, p)| whole(v, &p, "batchId", i64::MIN..=i64::MAX, problems));
    let count = match fields.optional("count") {
        Some((v, p)) if !matches!(v.value, Value::Null) => {
            whole(v, &p, "count", 1..=1000, problems).map(|n| n as usize)
        }
        _ => Some(10),
    };
    fields.finish(problems);
    Some(NextRuns {
        batch_id: id?,
        count: count?,
    })
}

/// `NextRuns {batchId, count?}`: the next planned starts of a scheduled batch in local time
/// and UTC, with clock changes marked.
async fn next(state: &Arc<AppState>, request: NextRuns) -> Result<scheduler::NextRuns, ApiError> {
    let repo = Arc::clone(state.executor.repo());
    let zone = clock::current().zone;
    let id = request.batch_id;
    tokio::task::spawn_blocking(move || scheduler::next_runs(&*repo, id, request.count, zone))
        .await??
        .ok_or(ApiError::NoBatch(id))
}
