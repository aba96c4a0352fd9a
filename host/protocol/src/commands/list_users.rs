//! `ListUsers`: every user with its role, folders and tokens (never a secret).

use super::Request;
use crate::rights::{Right, Role};
use serde::{Deserialize, Serialize};

impl Request for ListUsers {
    const NAME: &'static str = "ListUsers";
    const RIGHT: Right = Right::Admin;
    type Answer = UserList;
}

/// `ListUsers {}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct ListUsers {}

/// `ListUsers`' answer, by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserList {
    /// The users.
    pub users: Vec<UserView>,
}

/// A user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserView {
    /// The name.
    pub name: String,
    /// The role.
    pub role: Role,
    /// The folders its deploy and operate rights are limited to (none: everywhere).
    pub folders: Vec<String>,
    /// When it was disabled (UTC, ISO 8601), if it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled_at: Option<String>,
    /// When it was made.
    pub created_at: String,
    /// Who made it.
    pub created_by: String,
    /// Its tokens, oldest first.
    pub tokens: Vec<TokenView>,
}

/// A token of a user (never its secret nor its hash).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenView {
    /// Its id.
    pub id: String,
    /// `active`, `expired` or `revoked`.
    pub state: String,
    /// When it was made.
    pub created_at: String,
    /// Who made it.
    pub created_by: String,
    /// When it expires, if ever.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// When it was revoked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<String>,
    /// When it was last used (recorded at most every five minutes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used_at: Option<String>,
}
