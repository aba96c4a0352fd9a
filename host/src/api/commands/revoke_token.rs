//! `RevokeToken {tokenId}`: the token stops counting on every host at once.

use super::handler::{Call, Handler, Payload};
use crate::api::error::ApiError;
use crate::api::protocol::read::{object, text, wrong};
use crate::api::state::AppState;
use std::sync::Arc;
use weft_dsr::Problems;
use weft_protocol::commands::{RevokeToken, TokenRevoked};

impl Handler for RevokeToken {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        let mut fields = object(
            payload.value,
            payload.path,
            "the RevokeToken payload {tokenId}",
            problems,
        )?;
        let id = fields.required("tokenId", problems).and_then(|(v, p)| {
            let id = text(v, &p, "tokenId", problems)?;
            if id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
                Some(id)
            } else {
                wrong(
                    v,
                    &p,
                    "`tokenId` is a token's id, 16 hex digits (weft users list shows them)",
                    problems,
                );
                None
            }
        });
        fields.finish(problems);
        Some(RevokeToken { token_id: id? })
    }

    async fn handle(self, state: &Arc<AppState>, _call: &Call) -> Result<TokenRevoked, ApiError> {
        let repo = Arc::clone(&state.repo);
        let id = self.token_id.clone();
        let user = tokio::task::spawn_blocking(move || repo.revoke_token(&id)).await??;
        match user {
            Some(user) => Ok(TokenRevoked {
                token_id: self.token_id,
                user,
            }),
            None => Err(ApiError::NoToken(self.token_id)),
        }
    }
}
