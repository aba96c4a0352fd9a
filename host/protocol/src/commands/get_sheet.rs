//! `GetSheet`: a sheet as drawn, with its last runs.

use super::Request;
use crate::browse::SheetDetail;
use crate::instances;
use crate::rights::Right;
use serde::{Deserialize, Serialize};

impl Request for GetSheet {
    const NAME: &'static str = "GetSheet";
    const RIGHT: Right = Right::Read;
    type Answer = SheetView;
}

/// `GetSheet {sheetId}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GetSheet {
    /// The sheet.
    pub sheet_id: i64,
}

/// `GetSheet`'s answer: the sheet as drawn (its nodes with their places, its edges) and its
/// last runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SheetView {
    /// The sheet.
    #[serde(flatten)]
    pub sheet: SheetDetail,
    /// The newest instances that ran its actions (at most [`SheetView::RUNS`]).
    pub runs: Vec<instances::Listed>,
    /// The other sheets whose actions write tables this sheet's actions read, by folder
    /// and name (at most [`SheetView::LINKS`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fed_by: Vec<SheetLink>,
    /// The other sheets whose actions read tables this sheet's actions write.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub feeds: Vec<SheetLink>,
}

/// Another sheet that shares tables with a sheet ([`SheetView`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SheetLink {
    /// The sheet.
    pub sheet_id: i64,
    /// Its name.
    pub name: String,
    /// Its folder's path.
    pub folder: String,
    /// The tables they share, by name.
    pub tables: Vec<String>,
}

impl SheetView {
    /// The most sheets `fedBy` and `feeds` each name.
    pub const LINKS: usize = 100;
    /// How many of its last runs a sheet shows.
    pub const RUNS: i64 = 10;
}
