//! `PauseBatch {batch, paused?}`: pauses a scheduled batch (its starts pass, kept as missed)
//! or resumes it.

use super::handler::{Call, Handler, Payload};
use crate::api::error::ApiError;
use crate::api::protocol::read::{batch_name, flag, object, wrong};
use crate::api::state::AppState;
use std::sync::Arc;
use weft_dsr::Problems;
use weft_dsr::value::Value;
use weft_engine::exec::backfill::BatchRef;
use weft_protocol::commands::{BatchPause, ObjectName, PauseBatch};
use weft_repo::InstanceStore as _;

impl Handler for PauseBatch {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        let mut fields = object(
            payload.value,
            payload.path,
            "the PauseBatch payload {batch, paused?}",
            problems,
        )?;
        let batch = batch_name(&mut fields, problems);
        let paused = match fields.optional("paused") {
            None => Some(true),
            Some((v, p)) if matches!(v.value, Value::Null) => {
                wrong(v, &p, "`paused` is true or false", problems);
                None
            }
            Some((v, p)) => flag(v, &p, "paused", problems),
        };
        fields.finish(problems);
        Some(PauseBatch {
            batch: batch?,
            paused: paused?,
        })
    }

    async fn handle(self, state: &Arc<AppState>, call: &Call) -> Result<BatchPause, ApiError> {
        // A batch lies in no folder: only a user without folder limits pauses one.
        call.caller.may_in(
            weft_protocol::Right::Operate,
            [(format!("batch {}", self.batch), None)],
        )?;
        let exec = Arc::clone(&state.executor);
        let by = call.caller.name.clone();
        let (id, found) = tokio::task::spawn_blocking(move || {
            let batch = match self.batch {
                ObjectName::Id(id) => BatchRef::Id(id),
                ObjectName::Name(n) => BatchRef::Name(n),
            };
            let id = exec.batch_id(&batch, "pause")?;
            let found = exec.repo().pause_batch(id, self.paused, &by)?;
            Ok::<_, ApiError>((id, found))
        })
        .await??;
        found.ok_or(ApiError::NoBatch(id))
    }
}
