//! `ListSheets`: the folders and sheets of the repository, for the web page's tree.

use super::Request;
use crate::browse::Tree;
use crate::rights::Right;
use serde::Serialize;

impl Request for ListSheets {
    const NAME: &'static str = "ListSheets";
    const RIGHT: Right = Right::Read;
    type Answer = Tree;
}

/// `ListSheets {limit?}`: the repository's folders and its first `limit` sheets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ListSheets {
    /// How many sheets at most (1 to 20,000; default 5,000): the answer says when there
    /// are more.
    pub limit: i64,
}

impl Default for ListSheets {
    fn default() -> Self {
        ListSheets { limit: 5000 }
    }
}
