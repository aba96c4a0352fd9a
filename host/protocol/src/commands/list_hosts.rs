//! `ListHosts`: the hosts on the repository, with their last heartbeat.

use super::Request;
use crate::rights::Right;
use serde::{Deserialize, Serialize};

impl Request for ListHosts {
    const NAME: &'static str = "ListHosts";
    const RIGHT: Right = Right::Read;
    type Answer = HostList;
}

/// `ListHosts {}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct ListHosts {}

/// `ListHosts`' answer: the hosts registered on the repository, oldest start first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HostList {
    /// The id of the host that answered.
    pub this_host: String,
    /// The hosts.
    pub hosts: Vec<HostView>,
}

/// One host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HostView {
    /// Its id (`HOME/host-id` on a shared repository).
    pub host: String,
    /// The URL it serves.
    pub url: String,
    /// Its `max_parallel_actions`.
    pub slots: i64,
    /// When it started, UTC.
    pub started: String,
    /// Milliseconds since its last heartbeat, by the repository's clock.
    pub silent_ms: i64,
    /// How many actions run on it now.
    pub running: i64,
}
