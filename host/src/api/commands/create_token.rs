//! `CreateToken {user, expiresInDays?, replace?}`: another token for a user, shown once;
//! `replace` revokes its others in the same transaction.

use super::handler::{Call, Handler, Payload};
use super::users;
use crate::api::error::ApiError;
use crate::api::protocol::read::{flag, object};
use crate::api::state::AppState;
use std::sync::Arc;
use weft_dsr::Problems;
use weft_protocol::commands::{CreateToken, NewToken};

impl Handler for CreateToken {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        let mut fields = object(
            payload.value,
            payload.path,
            "the CreateToken payload {user, expiresInDays?, replace?}",
            problems,
        )?;
        let user = fields
            .required("user", problems)
            .and_then(|(v, p)| users::name(v, &p, "user", problems));
        let days = match fields.optional("expiresInDays") {
            None => Some(None),
            Some((v, p)) => users::days(v, &p, problems).map(Some),
        };
        let replace = match fields.optional("replace") {
            None => Some(false),
            Some((v, p)) => flag(v, &p, "replace", problems),
        };
        fields.finish(problems);
        Some(CreateToken {
            user: user?,
            expires_in_days: days?,
            replace: replace?,
        })
    }

    async fn handle(self, state: &Arc<AppState>, call: &Call) -> Result<NewToken, ApiError> {
        let repo = Arc::clone(&state.repo);
        let by = call.caller.name.clone();
        tokio::task::spawn_blocking(move || {
            users::issue(
                self.user.clone(),
                self.expires_in_days,
                |token| repo.add_token(&self.user, &by, token, self.replace),
                ApiError::NoUser,
            )
        })
        .await?
    }

    fn audit_answer(answer: &NewToken) -> Option<String> {
        Some(format!("token {}", answer.token_id))
    }
}
