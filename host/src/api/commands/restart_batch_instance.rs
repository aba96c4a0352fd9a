//! `RestartBatchInstance {batchInstanceId}`: runs again what failed, was skipped or halted
//! in an instance.

use super::handler::{Handler, Payload};
use crate::api::error::ApiError;
use crate::api::protocol::read::instance_id;
use crate::api::state::AppState;
use std::sync::Arc;
use weft_dsr::Problems;
use weft_protocol::commands::{RestartBatchInstance, Restarting};

impl Handler for RestartBatchInstance {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        Some(RestartBatchInstance {
            batch_instance_id: instance_id(
                payload.value,
                payload.path,
                "RestartBatchInstance",
                problems,
            )?,
        })
    }

    async fn handle(self, state: &Arc<AppState>, _request_id: u64) -> Result<Restarting, ApiError> {
        let id = self.batch_instance_id;
        let exec = Arc::clone(&state.executor);
        let actions_to_run = tokio::task::spawn_blocking(move || exec.restart(id)).await??;
        Ok(Restarting {
            batch_instance_id: id,
            actions_to_run,
        })
    }
}
