//! What an export reads: the folders, connections, sheets and batches as deployed (each
//! one's definition: a sheet's as stored, the others' as their newest line of the deploy
//! history holds it, else made from their columns), below a folder when asked. The engine's
//! `deploy::export` makes files of them.

use crate::error::Result;
use crate::model::{Exported, ExportedObject};
use crate::sql::{Session, args};

/// The newest definition in the deploy history of the object of `kind` in column `id`.
fn newest(kind: &str, id: &str) -> String {
    format!(
        "(SELECT h.definition FROM deploy_history h WHERE h.kind = '{kind}' AND h.object_id = {id}
           AND h.change <> 'deleted' ORDER BY h.id DESC LIMIT 1)"
    )
}

/// Everything deployed, or (`below`: a folder's path) that folder, the folders and sheets
/// below it and the connections their nodes use; batches only for everything.
///
/// # Errors
///
/// A repository error.
pub fn exported(tx: &dyn Session, below: Option<&str>) -> Result<Exported> {
    let prefix = below.map(|p| {
        if p == "/" {
            "/".to_owned()
        } else {
            format!("{p}/")
        }
    });
    let path = below.unwrap_or("");
    let prefix = prefix.unwrap_or_default();
    // Every folder when `?1` is empty, else the folder at `?1` and those below it.
    let within = "(?1 = '' OR f.path = ?1 OR substr(f.path, 1, length(?2)) = ?2)";
    let folders = tx.rows(
        &format!(
            "SELECT f.id, f.path, {}, f.documentation FROM folders f WHERE {within} ORDER BY f.path, f.id",
            newest("folder", "f.id")
        ),
        args![path, prefix],
        |r| {
            let id: i64 = r.get(0)?;
            let name: String = r.get(1)?;
            let definition = match r.get::<Option<String>>(2)? {
                Some(d) => d,
                None => serde_json::json!({"id": id, "path": name, "documentation": r.get::<Option<String>>(3)?})
                    .to_string(),
            };
            Ok(ExportedObject { id, name, definition })
        },
    )?;
    let sheets = tx.rows(
        &format!(
            "SELECT s.id, f.path, s.name, s.definition FROM sheets s JOIN folders f ON f.id = s.folder_id
              WHERE {within} ORDER BY f.path, s.name, s.id"
        ),
        args![path, prefix],
        |r| {
            Ok((
                r.get::<String>(1)?,
                ExportedObject {
                    id: r.get(0)?,
                    name: r.get(2)?,
                    definition: r.get(3)?,
                },
            ))
        },
    )?;
    let connections = tx.rows(
        &format!(
            "SELECT c.id, c.name, {}, c.schema_name, c.type FROM connections c
              WHERE ?1 = '' OR c.id IN (
                  SELECT n.connection_id FROM nodes n JOIN sheets s ON s.id = n.sheet_id
                    JOIN folders f ON f.id = s.folder_id WHERE {within})
              ORDER BY c.id",
            newest("connection", "c.id")
        ),
        args![path, prefix],
        |r| {
            let id: i64 = r.get(0)?;
            let name: String = r.get(1)?;
            let definition = match r.get::<Option<String>>(2)? {
                Some(d) => d,
                None => serde_json::json!({"id": id, "name": name,
                    "schema": r.get::<Option<String>>(3)?, "type": r.get::<String>(4)?})
                .to_string(),
            };
            Ok(ExportedObject {
                id,
                name,
                definition,
            })
        },
    )?;
    let batches = if below.is_some() {
        Vec::new()
    } else {
        tx.rows(
            &format!(
                "SELECT b.id, b.name, {}, b.schedule, b.elements, b.variables, b.enabled, b.if_running,
                        b.spring_gap, b.autumn_overlap, b.documentation
                   FROM batches b ORDER BY b.id",
                newest("batch", "b.id")
            ),
            args![],
            |r| {
                let id: i64 = r.get(0)?;
                let name: String = r.get(1)?;
                let definition = match r.get::<Option<String>>(2)? {
                    Some(d) => d,
                    None => {
                        let json = |t: String| {
                            serde_json::from_str::<serde_json::Value>(&t).unwrap_or_default()
                        };
                        serde_json::json!({"id": id, "name": name, "schedule": r.get::<String>(3)?,
                            "elements": json(r.get(4)?), "variables": json(r.get(5)?),
                            "enabled": r.get::<bool>(6)?, "ifRunning": r.get::<String>(7)?,
                            "springGap": r.get::<String>(8)?, "autumnOverlap": r.get::<String>(9)?,
                            "documentation": r.get::<Option<String>>(10)?})
                        .to_string()
                    }
                };
                Ok(ExportedObject { id, name, definition })
            },
        )?
    };
    // The setup belongs to the whole repository, not to a folder.
    let notifications = if below.is_none() {
        tx.value(
            "SELECT definition FROM notification_setup WHERE id = ?1",
            args![crate::notifications::SETUP_ID],
        )?
    } else {
        None
    };
    // The template modules too.
    let modules = if below.is_none() {
        tx.rows(
            "SELECT definition FROM template_modules ORDER BY name",
            args![],
            |r| r.get(0),
        )?
    } else {
        Vec::new()
    };
    Ok(Exported {
        folders,
        connections,
        sheets,
        batches,
        notifications,
        modules,
    })
}
