//! `AddUser {name, role, folders?, expiresInDays?}`: a user and its first token, shown once.

use super::handler::{Call, Handler, Payload};
use super::users;
use crate::api::error::ApiError;
use crate::api::protocol::read::object;
use crate::api::state::AppState;
use std::sync::Arc;
use weft_dsr::Problems;
use weft_protocol::commands::{AddUser, NewToken};

impl Handler for AddUser {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        let mut fields = object(
            payload.value,
            payload.path,
            "the AddUser payload {name, role, folders?, expiresInDays?}",
            problems,
        )?;
        let name = fields
            .required("name", problems)
            .and_then(|(v, p)| users::name(v, &p, "name", problems));
        let role = fields
            .required("role", problems)
            .and_then(|(v, p)| users::role(v, &p, problems));
        let folders = match fields.optional("folders") {
            None => Some(Vec::new()),
            Some((v, p)) => users::folders(v, &p, problems),
        };
        let days = match fields.optional("expiresInDays") {
            None => Some(None),
            Some((v, p)) => users::days(v, &p, problems).map(Some),
        };
        fields.finish(problems);
        Some(AddUser {
            name: name?,
            role: role?,
            folders: folders?,
            expires_in_days: days?,
        })
    }

    async fn handle(self, state: &Arc<AppState>, call: &Call) -> Result<NewToken, ApiError> {
        let repo = Arc::clone(&state.repo);
        let by = call.caller.name.clone();
        tokio::task::spawn_blocking(move || {
            let user = (
                self.name.as_str(),
                self.role.word(),
                self.folders.as_slice(),
            );
            users::issue(
                self.name.clone(),
                self.expires_in_days,
                |token| repo.add_user(user, &by, token),
                ApiError::UserExists,
            )
        })
        .await?
    }

    fn audit_answer(answer: &NewToken) -> Option<String> {
        Some(format!("token {}", answer.token_id))
    }
}
