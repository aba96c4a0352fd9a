//! `AddUser`: a named user with a role (and the folders its deploy and operate rights are
//! limited to), and its first token, shown once.

use super::Request;
use crate::rights::{Right, Role};
use serde::{Deserialize, Serialize};

impl Request for AddUser {
    const NAME: &'static str = "AddUser";
    const RIGHT: Right = Right::Admin;
    type Answer = NewToken;
}

/// `AddUser {name, role, folders?, expiresInDays?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AddUser {
    /// The name: letters, digits, `.`, `_`, `-` and `@`, 1 to 64 of them.
    pub name: String,
    /// The role.
    pub role: Role,
    /// The folders (paths) its deploy and operate rights are limited to; none: everywhere.
    pub folders: Vec<String>,
    /// Days until its first token expires; none: it does not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_in_days: Option<i64>,
}

/// A token just made (by `AddUser` or `CreateToken`): shown this once, kept only as a hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewToken {
    /// Its user.
    pub user: String,
    /// Its id (not secret: `weft users list` shows it, `RevokeToken` takes it).
    pub token_id: String,
    /// The token, for `Authorization: Bearer`.
    pub token: String,
    /// When it expires (UTC, ISO 8601), if ever.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
}
