//! `WhoAmI {}`: who the server takes the caller for, and what they may do.

use super::handler::{Call, Handler, Payload};
use crate::api::auth::Caller;
use crate::api::error::ApiError;
use crate::api::protocol::read::object;
use crate::api::state::AppState;
use std::sync::Arc;
use weft_dsr::Problems;
use weft_protocol::commands::{Identity, WhoAmI};

impl Handler for WhoAmI {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        object(
            payload.value,
            payload.path,
            "the WhoAmI payload {}",
            problems,
        )?
        .finish(problems);
        Some(WhoAmI {})
    }

    async fn handle(self, _state: &Arc<AppState>, call: &Call) -> Result<Identity, ApiError> {
        Ok(identity(&call.caller))
    }
}

/// Who `c` is, as `WhoAmI` and the page's sign-in answer it.
pub fn identity(c: &Caller) -> Identity {
    Identity {
        user: c.name.clone(),
        role: c.role,
        rights: c.role.rights(),
        folders: c.folders.clone(),
        via: c.via.word(),
        time_zone: weft_core::sched::clock::current().zone.name().to_owned(),
    }
}
