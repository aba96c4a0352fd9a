//! `BackfillBatch`: run a scheduled batch once per planned start of its schedule over a
//! range of days, each instance with that day's schedule date, in order, a bounded number
//! at a time.

use super::Request;
use super::delete_objects::ObjectName;
use crate::rights::Right;
use serde::{Deserialize, Serialize};

impl Request for BackfillBatch {
    const NAME: &'static str = "BackfillBatch";
    const RIGHT: Right = Right::Operate;
    type Answer = Backfilling;
}

/// `BackfillBatch {batch, from, to, parallel?, user?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BackfillBatch {
    /// The batch, by id or name.
    pub batch: ObjectName,
    /// The first day, `YYYY-MM-DD` in the service time zone.
    pub from: String,
    /// The last day, included.
    pub to: String,
    /// How many of its instances run at a time (1 to 64; default 1).
    pub parallel: i64,
    /// Who asks (the instances' `user`; default `backfill`).
    pub user: String,
}

/// `BackfillBatch`'s answer: the backfill recorded; its instances start in the background.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Backfilling {
    /// The backfill (`ListBatchInstances {backfillId}` lists its instances).
    pub backfill_id: i64,
    /// The batch.
    pub batch_id: i64,
    /// Its name: the instances' `batchName`.
    pub batch_name: String,
    /// Instances at a time.
    pub parallel: i64,
    /// The planned starts, one instance each, in the order they start (wall-clock time in
    /// the service time zone).
    pub planned_starts: Vec<String>,
}
