//! `ExportRepository {folder?}`: the repository, or one folder's tree, as `.dsr` files.

use super::handler::{Handler, Payload};
use crate::api::error::ApiError;
use crate::api::protocol::read::{object, text};
use crate::api::state::AppState;
use std::sync::Arc;
use weft_dsr::Problems;
use weft_dsr::value::Value;
use weft_protocol::commands::{ExportRepository, Exports, ProjectDocument};

impl Handler for ExportRepository {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        let mut fields = object(
            payload.value,
            payload.path,
            "the ExportRepository payload {folder?}",
            problems,
        )?;
        let folder = match fields.optional("folder") {
            None => Some(None),
            Some((v, _)) if matches!(v.value, Value::Null) => Some(None),
            Some((v, p)) => text(v, &p, "folder", problems).map(Some),
        };
        fields.finish(problems);
        Some(ExportRepository { folder: folder? })
    }

    async fn handle(self, state: &Arc<AppState>, _request_id: u64) -> Result<Exports, ApiError> {
        let repo = Arc::clone(&state.repo);
        let files = tokio::task::spawn_blocking(move || {
            weft_engine::deploy::export(&repo, self.folder.as_deref())
        })
        .await??;
        Ok(Exports {
            files: files
                .into_iter()
                .map(|(name, content)| ProjectDocument { name, content })
                .collect(),
        })
    }
}
