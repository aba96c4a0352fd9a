//! `GetBatchInstance {batchInstanceId}`: an instance with its actions.

use super::handler::{Call, Handler, Payload};
use crate::api::error::ApiError;
use crate::api::protocol::Instance;
use crate::api::protocol::read::instance_id;
use crate::api::state::AppState;
use std::sync::Arc;
use weft_dsr::Problems;
use weft_protocol::commands::GetBatchInstance;
use weft_repo::InstanceStore as _;

impl Handler for GetBatchInstance {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        Some(GetBatchInstance {
            batch_instance_id: instance_id(
                payload.value,
                payload.path,
                "GetBatchInstance",
                problems,
            )?,
        })
    }

    async fn handle(self, state: &Arc<AppState>, _call: &Call) -> Result<Instance, ApiError> {
        read_instance(state, self.batch_instance_id).await
    }
}

/// Instance `id` with its actions, as answered.
pub(super) async fn read_instance(state: &Arc<AppState>, id: i64) -> Result<Instance, ApiError> {
    let repo = Arc::clone(state.executor.repo());
    tokio::task::spawn_blocking(move || repo.instance(id))
        .await??
        .map(crate::api::protocol::instances::instance)
        .ok_or(ApiError::NoInstance(id))
}
