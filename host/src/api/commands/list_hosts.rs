//! `ListHosts {}`: the hosts on the repository with their last heartbeat (one, alone on
//! SQLite).

use super::handler::{Call, Handler, Payload};
use crate::api::error::ApiError;
use crate::api::protocol::read::object;
use crate::api::state::AppState;
use std::sync::Arc;
use weft_dsr::Problems;
use weft_protocol::commands::{HostList, HostView, ListHosts};
use weft_repo::InstanceStore as _;

impl Handler for ListHosts {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        object(
            payload.value,
            payload.path,
            "the ListHosts payload {}",
            problems,
        )?
        .finish(problems);
        Some(ListHosts {})
    }

    async fn handle(self, state: &Arc<AppState>, _call: &Call) -> Result<HostList, ApiError> {
        let repo = Arc::clone(state.executor.repo());
        let hosts = tokio::task::spawn_blocking(move || repo.hosts()).await??;
        Ok(HostList {
            this_host: state.executor.host().to_owned(),
            hosts: hosts
                .into_iter()
                .map(|h| HostView {
                    host: h.id,
                    url: h.url,
                    slots: h.slots,
                    started: weft_repo::instances::iso(&h.started_at),
                    silent_ms: h.silent_ms.max(0),
                    running: h.running,
                })
                .collect(),
        })
    }
}
