//! `ChangeUser {name, role?, folders?, disabled?}`: what is given changes; a disabled user's
//! tokens are refused at once on every host.

use super::handler::{Call, Handler, Payload};
use super::users;
use crate::api::error::ApiError;
use crate::api::protocol::read::{flag, object, wrong};
use crate::api::state::AppState;
use std::sync::Arc;
use weft_dsr::Problems;
use weft_protocol::commands::{ChangeUser, UserChanged};

impl Handler for ChangeUser {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        let value = payload.value;
        let mut fields = object(
            payload.value,
            payload.path.clone(),
            "the ChangeUser payload {name, role?, folders?, disabled?}",
            problems,
        )?;
        let name = fields
            .required("name", problems)
            .and_then(|(v, p)| users::name(v, &p, "name", problems));
        let role = match fields.optional("role") {
            None => Some(None),
            Some((v, p)) => users::role(v, &p, problems).map(Some),
        };
        let folders = match fields.optional("folders") {
            None => Some(None),
            Some((v, p)) => users::folders(v, &p, problems).map(Some),
        };
        let disabled = match fields.optional("disabled") {
            None => Some(None),
            Some((v, p)) => flag(v, &p, "disabled", problems).map(Some),
        };
        fields.finish(problems);
        let change = ChangeUser {
            name: name?,
            role: role?,
            folders: folders?,
            disabled: disabled?,
        };
        if change.role.is_none() && change.folders.is_none() && change.disabled.is_none() {
            wrong(
                value,
                &payload.path,
                "ChangeUser changes nothing: give role, folders or disabled",
                problems,
            );
            return None;
        }
        Some(change)
    }

    async fn handle(self, state: &Arc<AppState>, _call: &Call) -> Result<UserChanged, ApiError> {
        let repo = Arc::clone(&state.repo);
        let rows = tokio::task::spawn_blocking(move || {
            let change = weft_repo::users::UserChange {
                role: self.role.map(|r| r.word()),
                folders: self.folders.as_deref(),
                disabled: self.disabled,
            };
            if !repo.change_user(&self.name, &change)? {
                return Err(ApiError::NoUser(self.name));
            }
            let all = repo.users()?;
            all.into_iter()
                .find(|u| u.name == self.name)
                .ok_or(ApiError::NoUser(self.name))
        })
        .await??;
        Ok(UserChanged {
            user: users::view(rows)?,
        })
    }
}
