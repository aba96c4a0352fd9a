//! `HaltBatchInstance {batchInstanceId}`: running actions stop at their next check, the
//! others do not start.

use super::handler::{Handler, Payload};
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

    async fn handle(
        self,
        state: &Arc<AppState>,
        _request_id: u64,
    ) -> Result<HaltRequested, ApiError> {
        let id = self.batch_instance_id;
        let exec = Arc::clone(&state.executor);
        tokio::task::spawn_blocking(move || exec.halt(id)).await??;
        Ok(HaltRequested {
            batch_instance_id: id,
            halt_requested: true,
        })
    }
}
