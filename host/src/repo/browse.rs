//! What the web page reads of the deployed repository: the folders and sheets of its tree,
//! one sheet with its nodes and edges as drawn, and the scheduled batches.

use crate::repo::error::Result;
use crate::repo::model::{BatchItem, EdgeItem, FolderItem, NodeItem, SheetDetail, SheetItem, Tree};
use crate::repo::sql::{Row, Session, args};

/// Every folder by path, and every sheet by folder path and order.
pub fn tree(conn: &dyn Session) -> Result<Tree> {
    let folders = conn.rows(
        "SELECT id, path FROM folders ORDER BY path, id",
        args![],
        |r| {
            Ok(FolderItem {
                folder_id: r.get(0)?,
                path: r.get(1)?,
            })
        },
    )?;
    let sheets = conn.rows(
        "SELECT s.id, s.name, s.folder_id, f.path FROM sheets s JOIN folders f ON f.id = s.folder_id ORDER BY f.path, s.order_key, s.id",
        args![],
        sheet_item,
    )?;
    Ok(Tree { folders, sheets })
}

fn sheet_item(r: &Row) -> Result<SheetItem> {
    Ok(SheetItem {
        sheet_id: r.get(0)?,
        name: r.get(1)?,
        folder_id: r.get(2)?,
        folder: r.get(3)?,
    })
}

/// Sheet `id` with its nodes and edges; `None` when there is none.
pub fn sheet(conn: &dyn Session, id: i64) -> Result<Option<SheetDetail>> {
    let head = conn.row(
        "SELECT s.id, s.name, s.folder_id, f.path, s.documentation FROM sheets s JOIN folders f ON f.id = s.folder_id WHERE s.id = ?1",
        args![id],
        |r| Ok((sheet_item(r)?, r.get::<Option<String>>(4)?)),
    )?;
    let Some((sheet, documentation)) = head else {
        return Ok(None);
    };
    let nodes = conn.rows(
        "SELECT id, type, x, y, width, height, module, name, documentation, action, attributes, field1, field2, field3, object_type_id, connection_id, dependency
         FROM nodes WHERE sheet_id = ?1 ORDER BY id",
        args![id],
        |r| {
            let fields: Vec<String> = [r.get::<Option<String>>(12)?, r.get::<Option<String>>(13)?]
                .into_iter()
                .flatten()
                .collect();
            Ok(NodeItem {
                node_id: r.get(0)?,
                kind: r.get(1)?,
                x: r.get(2)?,
                y: r.get(3)?,
                width: r.get(4)?,
                height: r.get(5)?,
                module: r.get(6)?,
                name: r.get(7)?,
                documentation: r.get(8)?,
                action: r.get(9)?,
                attributes: r.get(10)?,
                table: r.get(11)?,
                fields,
                object_type_id: r.get(14)?,
                connection_id: r.get(15)?,
                dependency: r.get(16)?,
            })
        },
    )?;
    let edges = conn.rows(
        "SELECT id, from_node, to_node FROM edges WHERE sheet_id = ?1 ORDER BY id",
        args![id],
        |r| {
            Ok(EdgeItem {
                edge_id: r.get(0)?,
                from: r.get(1)?,
                to: r.get(2)?,
            })
        },
    )?;
    Ok(Some(SheetDetail {
        sheet,
        documentation,
        nodes,
        edges,
    }))
}

/// Every scheduled batch, by name.
pub fn batches(conn: &dyn Session) -> Result<Vec<BatchItem>> {
    conn.rows(
        "SELECT id, name, schedule, enabled FROM batches ORDER BY name, id",
        args![],
        |r| {
            Ok(BatchItem {
                batch_id: r.get(0)?,
                name: r.get(1)?,
                schedule: r.get(2)?,
                enabled: r.get::<i64>(3)? != 0,
            })
        },
    )
}
