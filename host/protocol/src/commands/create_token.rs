//! `CreateToken`: another token for a user (shown once); with `replace`, the user's other
//! tokens are revoked in the same transaction (a rotation).

use super::Request;
use crate::rights::Right;
use serde::Serialize;

impl Request for CreateToken {
    const NAME: &'static str = "CreateToken";
    const RIGHT: Right = Right::Admin;
    type Answer = super::NewToken;
}

/// `CreateToken {user, expiresInDays?, replace?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateToken {
    /// The user.
    pub user: String,
    /// Days until it expires; none: it does not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_in_days: Option<i64>,
    /// Revoke the user's other tokens.
    pub replace: bool,
}
