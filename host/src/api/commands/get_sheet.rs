//! `GetSheet {sheetId}`: the sheet as drawn, and its last runs.

use super::handler::{Call, Handler, Payload};
use crate::api::error::ApiError;
use crate::api::protocol::read::{object, whole};
use crate::api::state::AppState;
use std::sync::Arc;
use weft_dsr::Problems;
use weft_protocol::commands::{GetSheet, SheetView};
use weft_repo::store::SheetStore as _;

impl Handler for GetSheet {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        let mut fields = object(
            payload.value,
            payload.path,
            "the GetSheet payload {sheetId}",
            problems,
        )?;
        let id = fields
            .required("sheetId", problems)
            .and_then(|(v, p)| whole(v, &p, "sheetId", i64::MIN..=i64::MAX, problems));
        fields.finish(problems);
        Some(GetSheet { sheet_id: id? })
    }

    async fn handle(self, state: &Arc<AppState>, _call: &Call) -> Result<SheetView, ApiError> {
        let id = self.sheet_id;
        let repo = Arc::clone(state.executor.repo());
        let (sheet, runs) = tokio::task::spawn_blocking(move || {
            let sheet = repo.sheet_detail(id)?;
            let runs = match sheet {
                Some(_) => repo.sheet_runs(id, SheetView::RUNS)?,
                None => Vec::new(),
            };
            Ok::<_, weft_repo::Error>((sheet, runs))
        })
        .await??;
        Ok(SheetView {
            sheet: sheet.ok_or(ApiError::NoSheet(id))?,
            runs,
        })
    }
}
