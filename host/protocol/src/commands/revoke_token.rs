//! `RevokeToken`: a token stops counting, on every host at once.

use super::Request;
use crate::rights::Right;
use serde::{Deserialize, Serialize};

impl Request for RevokeToken {
    const NAME: &'static str = "RevokeToken";
    const RIGHT: Right = Right::Admin;
    type Answer = TokenRevoked;
}

/// `RevokeToken {tokenId}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RevokeToken {
    /// The token's id.
    pub token_id: String,
}

/// `RevokeToken`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenRevoked {
    /// The token's id.
    pub token_id: String,
    /// Its user.
    pub user: String,
}
