//! `ListBatches {}`: the scheduled batches, for the web page's schedules.

use super::handler::{Call, Handler, Payload};
use crate::api::error::ApiError;
use crate::api::protocol::read::object;
use crate::api::state::AppState;
use std::sync::Arc;
use weft_dsr::Problems;
use weft_protocol::commands::{BatchList, ListBatches};
use weft_repo::store::SheetStore as _;

impl Handler for ListBatches {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        object(
            payload.value,
            payload.path,
            "the ListBatches payload {}",
            problems,
        )?
        .finish(problems);
        Some(ListBatches {})
    }

    async fn handle(self, state: &Arc<AppState>, _call: &Call) -> Result<BatchList, ApiError> {
        let repo = Arc::clone(state.executor.repo());
        let batches = tokio::task::spawn_blocking(move || repo.batches()).await??;
        Ok(BatchList { batches })
    }
}
