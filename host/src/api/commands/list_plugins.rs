//! `ListPlugins {}`: what this server loaded at its start (libraries, modules, refusals).

use super::handler::{Call, Handler, Payload};
use crate::api::error::ApiError;
use crate::api::protocol::PluginList;
use crate::api::protocol::read::object;
use crate::api::state::AppState;
use std::sync::Arc;
use weft_dsr::Problems;
use weft_protocol::commands::ListPlugins;

impl Handler for ListPlugins {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        object(
            payload.value,
            payload.path,
            "the ListPlugins payload {}",
            problems,
        )?
        .finish(problems);
        Some(ListPlugins {})
    }

    async fn handle(self, state: &Arc<AppState>, _call: &Call) -> Result<PluginList, ApiError> {
        Ok(crate::api::protocol::plugin_list(&state.registry))
    }
}
