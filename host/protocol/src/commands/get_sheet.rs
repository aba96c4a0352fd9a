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
pub struct SheetView {
    /// The sheet.
    #[serde(flatten)]
    pub sheet: SheetDetail,
    /// The newest instances that ran its actions (at most [`SheetView::RUNS`]).
    pub runs: Vec<instances::Listed>,
}

impl SheetView {
    /// How many of its last runs a sheet shows.
    pub const RUNS: i64 = 10;
}
