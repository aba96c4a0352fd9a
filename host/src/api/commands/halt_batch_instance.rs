//! `HaltBatchInstance {batchInstanceId}`: running actions stop at their next check, the
//! others do not start.

use super::handler::{Call, Handler, Payload};
use crate::api::error::ApiError;
use crate::api::protocol::read::instance_id;
use crate::api::state::AppState;
use std::sync::Arc;
use weft_dsr::Problems;
use weft_protocol::commands::{HaltBatchInstance, HaltRequested};

impl Handler for HaltBatchInstance {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        Some(HaltBatchInstance {
            batch_instance_id: instance_id(
                payload.value,
                payload.path,
                "HaltBatchInstance",
                problems,
            )?,
        })
    }

    async fn handle(self, state: &Arc<AppState>, call: &Call) -> Result<HaltRequested, ApiError> {
        let id = self.batch_instance_id;
        let exec = Arc::clone(&state.executor);
        let caller = call.caller.clone();
        tokio::task::spawn_blocking(move || {
            caller.may_operate_instance(exec.repo(), id)?;
            exec.halt(id).map_err(ApiError::from)
        })
        .await??;
        Ok(HaltRequested {
            batch_instance_id: id,
            halt_requested: true,
        })
    }
}
