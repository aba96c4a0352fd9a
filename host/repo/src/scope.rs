//! The folders things lie in, for users whose deploy and operate rights are limited to
//! folders (issue 28): a run's elements, an instance's sheets, a batch's elements. A thing
//! that is gone, or lies in no folder, answers no folder, which no limited user may touch.

use crate::error::Result;
use crate::sql::{Session, args};

/// The folder path of each element (`S` sheet, `A` action, `F` folder, by id), in order;
/// `None` for one that does not exist.
///
/// # Errors
///
/// A repository error.
pub fn of_elements(c: &dyn Session, elements: &[(char, i64)]) -> Result<Vec<Option<String>>> {
    elements
        .iter()
        .map(|(kind, id)| {
            let sql = match kind {
                'F' => "SELECT path FROM folders WHERE id = ?1",
                'S' => {
                    "SELECT f.path FROM sheets s JOIN folders f ON f.id = s.folder_id WHERE s.id = ?1"
                }
                _ => {
                    "SELECT f.path FROM nodes n JOIN sheets s ON s.id = n.sheet_id
                       JOIN folders f ON f.id = s.folder_id WHERE n.id = ?1"
                }
            };
            c.value::<String>(sql, args![*id])
        })
        .collect()
}

/// The folder path of each sheet instance `id` ran, by sheet id; `None` for a sheet deleted
/// since.
///
/// # Errors
///
/// A repository error.
pub fn of_instance(c: &dyn Session, id: i64) -> Result<Vec<(i64, Option<String>)>> {
    c.rows(
        "SELECT i.sheet_id, f.path FROM instance_sheets i
           LEFT JOIN sheets s ON s.id = i.sheet_id
           LEFT JOIN folders f ON f.id = s.folder_id
          WHERE i.instance_id = ?1 ORDER BY i.sheet_id",
        args![id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}
