//! `AdvanceClock`: move a development server's stepped clock (`weft serve --stepped-clock`) and run the scheduler there.

use super::Request;
use crate::rights::Right;
use serde::{Deserialize, Serialize};

impl Request for AdvanceClock {
    const NAME: &'static str = "AdvanceClock";
    const RIGHT: Right = Right::Admin;
    type Answer = ClockAdvanced;
}

/// `AdvanceClock {seconds}` or `{to}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum AdvanceClock {
    /// Forward by this many seconds (0 to a year).
    By {
        /// The seconds.
        seconds: i64,
    },
    /// Forward to this instant: RFC 3339, or `YYYY-MM-DD HH:MM[:SS]` in the service zone.
    To {
        /// The instant as written.
        to: String,
    },
}

impl AdvanceClock {
    /// The most one step moves: a year of seconds.
    pub const MAX_SECONDS: i64 = 366 * 86_400;
}

/// `AdvanceClock`'s answer: the clock's new time and what the tick there did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClockAdvanced {
    /// The new time, UTC (`YYYY-MM-DDTHH:MM:SSZ`).
    pub now: String,
    /// The new time on the service zone's wall clock.
    pub local: String,
    /// The scheduled starts the tick made.
    pub started: Vec<ScheduledRun>,
    /// Batches whose planned start passed without a run.
    pub passed: Vec<i64>,
    /// Batches waiting for their previous run to end.
    pub waiting: Vec<i64>,
}

/// One start of [`ClockAdvanced`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScheduledRun {
    /// The batch.
    pub batch_id: i64,
    /// The instance it started.
    pub batch_instance_id: i64,
}
