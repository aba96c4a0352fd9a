//! What deleting objects reads and writes, inside a deploy's transaction
//! (`Repository::write`): folders, sheets, connections, batches and template modules found by
//! id or by path or name, what still refers to a connection, and the removal of each with its line in the
//! deploy history. The engine's `deploy::delete` decides what may go; this module only
//! reads and writes.
//!
//! A deleted sheet's plans stay while an instance names them (`instance_sheets`), so that a
//! run in flight, and a restart `asStarted`, keep the definitions they were pinned to.

use crate::error::Result;
use crate::model::{Lookup, Named, ObjectKind};
use crate::sql::{Param, Session, Statement, args};

/// The objects of `kind` that `key` names: by id (none or one), or by path (a folder's
/// `/a/b`, a sheet's folder path and name `/a/b/Sheet`) or name (connections and batches;
/// several when names repeat).
///
/// # Errors
///
/// A repository error.
pub fn find(tx: &dyn Session, kind: ObjectKind, key: &Lookup) -> Result<Vec<Named>> {
    let named = |r: &crate::sql::Row| {
        Ok(Named {
            id: r.get(0)?,
            name: r.get(1)?,
        })
    };
    match (kind, key) {
        (ObjectKind::Folder, Lookup::Id(id)) => tx.rows(
            "SELECT id, path FROM folders WHERE id = ?1",
            args![id],
            named,
        ),
        (ObjectKind::Folder, Lookup::Name(path)) => tx.rows(
            "SELECT id, path FROM folders WHERE path = ?1",
            args![path],
            named,
        ),
        (ObjectKind::Sheet, Lookup::Id(id)) => {
            tx.rows(&format!("{SHEET_PATHS} WHERE s.id = ?1"), args![id], named)
        }
        (ObjectKind::Sheet, Lookup::Name(path)) => {
            let Some((folder, name)) = path.rsplit_once('/') else {
                return Ok(Vec::new());
            };
            let folder = if folder.is_empty() { "/" } else { folder };
            tx.rows(
                &format!("{SHEET_PATHS} WHERE f.path = ?1 AND s.name = ?2 ORDER BY s.id"),
                args![folder, name],
                named,
            )
        }
        (ObjectKind::Connection, Lookup::Id(id)) => tx.rows(
            "SELECT id, name FROM connections WHERE id = ?1",
            args![id],
            named,
        ),
        (ObjectKind::Connection, Lookup::Name(name)) => tx.rows(
            "SELECT id, name FROM connections WHERE name = ?1 ORDER BY id",
            args![name],
            named,
        ),
        (ObjectKind::Batch, Lookup::Id(id)) => tx.rows(
            "SELECT id, name FROM batches WHERE id = ?1",
            args![id],
            named,
        ),
        (ObjectKind::Batch, Lookup::Name(name)) => tx.rows(
            "SELECT id, name FROM batches WHERE name = ?1 ORDER BY id",
            args![name],
            named,
        ),
        (ObjectKind::Module, Lookup::Id(id)) => tx.rows(
            "SELECT id, name FROM template_modules WHERE id = ?1",
            args![id],
            named,
        ),
        (ObjectKind::Module, Lookup::Name(name)) => tx.rows(
            "SELECT id, name FROM template_modules WHERE name = ?1",
            args![name],
            named,
        ),
        (ObjectKind::Node | ObjectKind::Edge | ObjectKind::Notifications, _) => Ok(Vec::new()),
    }
}

/// A sheet's id and path (its folder's path and its name).
const SHEET_PATHS: &str =
    "SELECT s.id, CASE WHEN f.path = '/' THEN '/' || s.name ELSE f.path || '/' || s.name END
     FROM sheets s JOIN folders f ON f.id = s.folder_id";

/// The folders below the folder at `path` (not itself), deepest first.
///
/// # Errors
///
/// A repository error.
pub fn folders_below(tx: &dyn Session, path: &str) -> Result<Vec<Named>> {
    let prefix = if path == "/" {
        "/".to_owned()
    } else {
        format!("{path}/")
    };
    tx.rows(
        "SELECT id, path FROM folders WHERE substr(path, 1, length(?1)) = ?1 AND path <> ?2
         ORDER BY length(path) DESC, path",
        args![prefix, path],
        |r| {
            Ok(Named {
                id: r.get(0)?,
                name: r.get(1)?,
            })
        },
    )
}

/// The sheets directly in folder `folder`, with their paths.
///
/// # Errors
///
/// A repository error.
pub fn sheets_in(tx: &dyn Session, folder: i64) -> Result<Vec<Named>> {
    tx.rows(
        &format!("{SHEET_PATHS} WHERE s.folder_id = ?1 ORDER BY s.id"),
        args![folder],
        |r| {
            Ok(Named {
                id: r.get(0)?,
                name: r.get(1)?,
            })
        },
    )
}

/// The sheets whose object nodes use connection `connection`, each with its path and the
/// first such node.
///
/// # Errors
///
/// A repository error.
pub fn connection_users(tx: &dyn Session, connection: i64) -> Result<Vec<(Named, i64)>> {
    tx.rows(
        "SELECT s.id, CASE WHEN f.path = '/' THEN '/' || s.name ELSE f.path || '/' || s.name END, u.node
           FROM (SELECT sheet_id, MIN(id) AS node FROM nodes
                  WHERE connection_id = ?1 AND type <> 0 GROUP BY sheet_id) u
           JOIN sheets s ON s.id = u.sheet_id JOIN folders f ON f.id = s.folder_id
          ORDER BY s.id",
        args![connection],
        |r| {
            Ok((
                Named {
                    id: r.get(0)?,
                    name: r.get(1)?,
                },
                r.get(2)?,
            ))
        },
    )
}

/// The statements that remove object `id` of `kind` (what depends on it in the repository
/// goes with it: a sheet's nodes, edges, data-graph lines and the plans no instance names;
/// a batch's planned start and missed starts).
pub fn removal(kind: ObjectKind, id: i64) -> Vec<Statement<'static>> {
    let p = || vec![Param::Int(id)];
    match kind {
        ObjectKind::Sheet => vec![
            (
                "DELETE FROM data_flow WHERE action_id IN (SELECT id FROM nodes WHERE sheet_id = ?1)",
                p(),
            ),
            (
                "DELETE FROM sheet_plans WHERE sheet_id = ?1
                 AND NOT EXISTS (SELECT 1 FROM instance_sheets i
                                 WHERE i.sheet_id = ?1 AND i.version = sheet_plans.version)",
                p(),
            ),
            ("DELETE FROM sheets WHERE id = ?1", p()),
        ],
        ObjectKind::Folder => vec![("DELETE FROM folders WHERE id = ?1", p())],
        ObjectKind::Connection => vec![("DELETE FROM connections WHERE id = ?1", p())],
        ObjectKind::Batch => vec![("DELETE FROM batches WHERE id = ?1", p())],
        // What its actions rendered stays: they were stored as the module it runs.
        ObjectKind::Module => vec![("DELETE FROM template_modules WHERE id = ?1", p())],
        // The setup is replaced by a deploy, never deleted alone.
        ObjectKind::Node | ObjectKind::Edge | ObjectKind::Notifications => Vec::new(),
    }
}
