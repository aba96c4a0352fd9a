//! `ChangeUser`: a user's role, folders, or whether it is disabled (a disabled user's tokens
//! are refused at once on every host).

use super::Request;
use crate::rights::{Right, Role};
use serde::{Deserialize, Serialize};

impl Request for ChangeUser {
    const NAME: &'static str = "ChangeUser";
    const RIGHT: Right = Right::Admin;
    type Answer = UserChanged;
}

/// `ChangeUser {name, role?, folders?, disabled?}`: what is given changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangeUser {
    /// The user.
    pub name: String,
    /// A new role.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// New folders (empty: everywhere).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub folders: Option<Vec<String>>,
    /// Disable (true) or enable again (false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disabled: Option<bool>,
}

/// `ChangeUser`'s answer: the user as it is now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserChanged {
    /// The user.
    pub user: super::UserView,
}
