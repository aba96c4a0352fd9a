//! An element of a run or a scheduled batch: a sheet, an action or a folder by id.

use serde::{Deserialize, Serialize};

/// One element of `elementList` (a run's or a scheduled batch's): a sheet, an action or a
/// folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Element {
    /// `S` sheet, `A` action, `F` folder.
    #[serde(rename = "elementType")]
    pub kind: char,
    /// Its id.
    #[serde(rename = "elementId")]
    pub id: i64,
}
