//! `WhoAmI`: who the server takes the caller for, and what they may do (the page shows it).

use super::Request;
use crate::rights::{Right, Role};
use serde::{Deserialize, Serialize};

impl Request for WhoAmI {
    const NAME: &'static str = "WhoAmI";
    const RIGHT: Right = Right::Read;
    type Answer = Identity;
}

/// `WhoAmI {}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct WhoAmI {}

/// `WhoAmI`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Identity {
    /// A user's name, `keyfile` (the key file's token) or `loopback` (no token asked).
    pub user: String,
    /// The role.
    pub role: Role,
    /// The rights it holds.
    pub rights: Vec<Right>,
    /// The folders its deploy and operate rights are limited to (none: everywhere).
    pub folders: Vec<String>,
    /// How it was known: `token ID`, `keyfile` or `loopback`.
    pub via: String,
    /// The service time zone (an IANA name), in which the page shows times and schedules
    /// plan; empty from a server before it was told.
    #[serde(default)]
    pub time_zone: String,
}
