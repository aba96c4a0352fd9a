//! `ListRunDays`: the scheduled batches' runs by schedule date, for the web page's grid.

use super::Request;
use crate::rights::Right;
use crate::states::InstanceState;
use serde::{Deserialize, Serialize};

impl Request for ListRunDays {
    const NAME: &'static str = "ListRunDays";
    const RIGHT: Right = Right::Read;
    type Answer = RunDays;
}

/// `ListRunDays {from, to, batchId?}`: each scheduled batch's runs on each schedule date
/// from `from` to `to` (both days included, at most [`ListRunDays::MAX_DAYS`]); the date is
/// that of the run's planned start in the service time zone (a backfill's runs included).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListRunDays {
    /// The first day, `YYYY-MM-DD`.
    pub from: String,
    /// The last day, `YYYY-MM-DD`.
    pub to: String,
    /// Only this batch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch_id: Option<i64>,
}

impl ListRunDays {
    /// The most days one answer covers.
    pub const MAX_DAYS: i64 = 400;
    /// The most batches one answer holds.
    pub const MAX_BATCHES: usize = 500;
}

/// `ListRunDays`' answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunDays {
    /// The scheduled batches by name, each with the days it ran on.
    pub batches: Vec<BatchDays>,
    /// Whether there are more batches than [`ListRunDays::MAX_BATCHES`].
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub more: bool,
}

/// A batch's days of [`RunDays`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchDays {
    /// The batch.
    pub batch_id: i64,
    /// Its name.
    pub name: String,
    /// Whether its schedule runs.
    pub enabled: bool,
    /// Whether an operator paused it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
    /// The days it has runs on, in order (days without a run left out).
    pub days: Vec<RunDay>,
}

/// A batch's runs on one schedule date.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunDay {
    /// The day, `YYYY-MM-DD`.
    pub day: String,
    /// How many runs it has.
    pub runs: i64,
    /// How many of them failed.
    pub failed: i64,
    /// The last run of the day (by planned start).
    pub batch_instance_id: i64,
    /// Its state.
    pub state: InstanceState,
    /// How long it ran, in seconds (so far, while it runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
}
