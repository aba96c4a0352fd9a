//! `ListUsers {}`: every user with its role, folders and tokens (never a secret).

use super::handler::{Call, Handler, Payload};
use super::users;
use crate::api::error::ApiError;
use crate::api::protocol::read::object;
use crate::api::state::AppState;
use std::sync::Arc;
use weft_dsr::Problems;
use weft_protocol::commands::{ListUsers, UserList};

impl Handler for ListUsers {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        object(
            payload.value,
            payload.path,
            "the ListUsers payload {}",
            problems,
        )?
        .finish(problems);
        Some(ListUsers {})
    }

    fn audited() -> bool {
        false
    }

    async fn handle(self, state: &Arc<AppState>, _call: &Call) -> Result<UserList, ApiError> {
        let repo = Arc::clone(&state.repo);
        let rows = tokio::task::spawn_blocking(move || repo.users()).await??;
        Ok(UserList {
            users: rows
                .into_iter()
                .map(users::view)
                .collect::<Result<_, _>>()?,
        })
    }
}
