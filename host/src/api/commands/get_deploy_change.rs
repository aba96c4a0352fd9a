//! `GetDeployChange {historyId}`: one change of a deploy with the definition it deployed and
//! the one it replaced.

use super::handler::{Call, Handler, Payload};
use crate::api::error::ApiError;
use crate::api::protocol::read::{object, whole};
use crate::api::state::AppState;
use std::sync::Arc;
use weft_dsr::Problems;
use weft_protocol::commands::GetDeployChange;
use weft_repo::model::HistoryDetail;
use weft_repo::store::SheetStore as _;

impl Handler for GetDeployChange {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        let mut fields = object(
            payload.value,
            payload.path,
            "the GetDeployChange payload {historyId}",
            problems,
        )?;
        let id = fields
            .required("historyId", problems)
            .and_then(|(v, p)| whole(v, &p, "historyId", i64::MIN..=i64::MAX, problems));
        fields.finish(problems);
        Some(GetDeployChange { history_id: id? })
    }

    async fn handle(self, state: &Arc<AppState>, _call: &Call) -> Result<HistoryDetail, ApiError> {
        let id = self.history_id;
        let repo = Arc::clone(state.executor.repo());
        tokio::task::spawn_blocking(move || repo.history_detail(id))
            .await??
            .ok_or(ApiError::NoDeployChange(id))
    }
}
