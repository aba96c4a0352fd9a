//! `ExportRepository {folder?}`: the repository, or one folder's tree, as `.dsr` files.

use super::handler::{Call, Handler, Payload};
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

    async fn handle(self, state: &Arc<AppState>, call: &Call) -> Result<Exports, ApiError> {
        // A user limited to folders exports one of them (the whole repository holds what
        // lies in no folder: connections, batches).
        call.caller.may_in(
            weft_protocol::Right::Deploy,
            [(
                self.folder.as_deref().map_or_else(
                    || "the whole repository".to_owned(),
                    |f| format!("folder {f}"),
                ),
                self.folder.clone(),
            )],
        )?;
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
