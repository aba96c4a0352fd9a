//! `ListBatches`: the scheduled batches.

use super::Request;
use crate::browse::BatchItem;
use crate::rights::Right;
use serde::{Deserialize, Serialize};

impl Request for ListBatches {
    const NAME: &'static str = "ListBatches";
    const RIGHT: Right = Right::Read;
    type Answer = BatchList;
}

/// `ListBatches {}`: the scheduled batches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ListBatches {}

/// `ListBatches`' answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchList {
    /// Every scheduled batch, by name.
    pub batches: Vec<BatchItem>,
}
