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

/// An element as a run names it: by id, or by its path (`/folder` a folder, `/folder/sheet`
/// a sheet, `/folder/sheet/action` an action), which the server finds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ElementRef {
    /// `S` sheet, `A` action, `F` folder.
    #[serde(rename = "elementType")]
    pub kind: char,
    /// Its id or its path.
    #[serde(rename = "elementId")]
    pub id: ElementKey,
}

/// An element's id, or its path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ElementKey {
    /// Its id.
    Id(i64),
    /// Its path, from `/`.
    Path(String),
}

impl From<Element> for ElementRef {
    fn from(e: Element) -> Self {
        ElementRef {
            kind: e.kind,
            id: ElementKey::Id(e.id),
        }
    }
}

/// What a run adds to the actions its elements name, by the data graph (dbt's `model+` and
/// `+model`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Selection {
    /// Only what the elements name.
    #[default]
    Named,
    /// And every action that reads, directly or through others, what they write.
    Downstream,
    /// And every action that writes, directly or through others, what they read.
    Upstream,
}

impl Selection {
    /// The word of `select`: `downstream` or `upstream` (`named`: the default).
    pub fn word(self) -> &'static str {
        match self {
            Selection::Named => "named",
            Selection::Downstream => "downstream",
            Selection::Upstream => "upstream",
        }
    }

    /// The selection of word `w`.
    pub fn from_word(w: &str) -> Option<Self> {
        [Selection::Named, Selection::Downstream, Selection::Upstream]
            .into_iter()
            .find(|s| s.word() == w)
    }
}
