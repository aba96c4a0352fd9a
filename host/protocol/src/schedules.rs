//! A batch's next planned starts, as `NextRuns` answers them.

use serde::{Deserialize, Serialize};

/// A batch's next planned starts, as `NextRuns` answers them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NextRuns {
    /// The batch.
    pub batch_id: i64,
    /// Its name.
    pub name: String,
    /// Its schedule's text.
    pub schedule: String,
    /// Its spring-gap policy.
    pub spring_gap: String,
    /// Its autumn-overlap policy.
    pub autumn_overlap: String,
    /// Whether it runs.
    pub enabled: bool,
    /// Whether an operator paused it (its starts pass, kept as missed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
    /// The service time zone.
    pub time_zone: String,
    /// The planned starts.
    pub starts: Vec<NextStart>,
    /// Why the batch does not run, when its stored planned start is not one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// One planned start of [`NextRuns`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NextStart {
    /// The planned wall-clock time.
    pub planned: String,
    /// Whether it means the second occurrence of an ambiguous time.
    pub second_occurrence: bool,
    /// The wall-clock time it runs at (a skipped time runs when the clocks jump to).
    pub local: String,
    /// The instant it runs, UTC.
    pub utc: String,
    /// The zone's UTC offset then.
    pub utc_offset: Option<String>,
    /// A clock change near it, said in words.
    pub clock_change: Option<String>,
}
