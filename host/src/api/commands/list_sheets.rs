//! `ListSheets {limit?}`: every folder and the first `limit` sheets, for the web page's tree.

use super::handler::{Call, Handler, Payload};
use crate::api::error::ApiError;
use crate::api::protocol::read::{object, optional_whole};
use crate::api::state::AppState;
use std::sync::Arc;
use weft_dsr::Problems;
use weft_protocol::commands::ListSheets;
use weft_repo::model::Tree;
use weft_repo::store::SheetStore as _;

impl Handler for ListSheets {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        let mut fields = object(
            payload.value,
            payload.path,
            "the ListSheets payload {limit?}",
            problems,
        )?;
        let mut ok = true;
        let mut list = ListSheets::default();
        if let Some(n) = optional_whole(&mut fields, "limit", 1..=20_000, &mut ok, problems) {
            list.limit = n;
        }
        fields.finish(problems);
        ok.then_some(list)
    }

    async fn handle(self, state: &Arc<AppState>, _call: &Call) -> Result<Tree, ApiError> {
        let repo = Arc::clone(state.executor.repo());
        Ok(tokio::task::spawn_blocking(move || repo.tree(self.limit)).await??)
    }
}
