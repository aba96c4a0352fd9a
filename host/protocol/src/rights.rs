//! What a caller must be allowed to do to send each command: the one source of truth of
//! issue 28's roles. Every command names its right in its `impl Request` (a command without
//! one does not compile), and [`RIGHTS`](crate::RIGHTS) lists them all, from which the
//! docs' table is checked.
//!
//! The roles are ordered, each with the rights of those before it: `viewer` (read),
//! `operator` (+ operate), `deployer` (+ deploy), `admin` (+ admin). Today the one bearer
//! token of the key file (and loopback without a token) holds every right; named users with
//! roles are being built.

use serde::{Deserialize, Serialize};

/// A right a command needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Right {
    /// Read runs, sheets, schedules, deploys, lineage, plugins, hosts, metrics.
    Read,
    /// Start, halt, restart and backfill runs.
    Operate,
    /// Deploy, delete and export the repository's objects.
    Deploy,
    /// Users, settings and the service clock.
    Admin,
}

impl Right {
    /// The right's name, as answered.
    pub fn word(self) -> &'static str {
        match self {
            Right::Read => "read",
            Right::Operate => "operate",
            Right::Deploy => "deploy",
            Right::Admin => "admin",
        }
    }

    /// The least role that holds it.
    pub fn role(self) -> &'static str {
        match self {
            Right::Read => "viewer",
            Right::Operate => "operator",
            Right::Deploy => "deployer",
            Right::Admin => "admin",
        }
    }
}
