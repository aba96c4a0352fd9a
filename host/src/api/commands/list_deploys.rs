//! `ListDeploys {limit?, before?, changes?}`: a page of the deploy history, newest first.

use super::handler::{Call, Handler, Payload};
use crate::api::error::ApiError;
use crate::api::protocol::read::{object, optional_whole};
use crate::api::state::AppState;
use std::sync::Arc;
use weft_dsr::value::Spanned;
use weft_dsr::{Path, Problems};
use weft_protocol::commands::{DeployList, ListDeploys};
use weft_repo::store::SheetStore as _;

impl Handler for ListDeploys {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        read_payload(payload.value, payload.path, problems)
    }

    async fn handle(self, state: &Arc<AppState>, _call: &Call) -> Result<DeployList, ApiError> {
        list(state, self).await
    }
}

fn read_payload(payload: &Spanned, path: Path, problems: &mut Problems) -> Option<ListDeploys> {
    let mut fields = object(
        payload,
        path,
        "the ListDeploys payload {limit?, before?, changes?}",
        problems,
    )?;
    let mut list = ListDeploys::default();
    let mut ok = true;
    if let Some(n) = optional_whole(&mut fields, "limit", 1..=200, &mut ok, problems) {
        list.limit = n;
    }
    list.before = optional_whole(&mut fields, "before", 1..=i64::MAX, &mut ok, problems);
    if let Some(n) = optional_whole(&mut fields, "changes", 0..=200, &mut ok, problems) {
        list.changes = n;
    }
    fields.finish(problems);
    ok.then_some(list)
}

/// `ListDeploys {limit?, before?, changes?}`: a page of the deploy history, newest first.
async fn list(
    state: &Arc<AppState>,
    request: crate::api::protocol::ListDeploys,
) -> Result<crate::api::protocol::DeployList, ApiError> {
    let repo = Arc::clone(state.executor.repo());
    let deploys = tokio::task::spawn_blocking(move || {
        repo.deploys(request.before, request.limit, request.changes)
    })
    .await??;
    Ok(crate::api::protocol::DeployList { deploys })
}
