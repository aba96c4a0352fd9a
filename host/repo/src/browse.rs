//! What the web page reads of the deployed repository: the folders and sheets of its tree,
//! one sheet with its nodes and edges as drawn, the scheduled batches with their missed
//! starts, and the deploy history.

use crate::error::Result;
use crate::instances::iso;
use crate::model::{
    BatchItem, DeployItem, EdgeItem, FolderItem, HistoryDetail, HistoryItem, MissedItem, NodeItem,
    PreviousVersion, SheetDetail, SheetItem, Tree,
};
use crate::sql::{Row, Session, args};

/// Every folder by path, and the first `limit` sheets by folder path and order.
pub fn tree(conn: &dyn Session, limit: i64) -> Result<Tree> {
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
    // Limits are written in (numbers): bound, the bundled SQLite prepares a statement again
    // at every call.
    let mut sheets = conn.rows(
        &format!(
            "SELECT s.id, s.name, s.folder_id, f.path FROM sheets s JOIN folders f ON f.id = s.folder_id ORDER BY f.path, s.order_key, s.id LIMIT {}",
            limit.saturating_add(1)
        ),
        args![],
        sheet_item,
    )?;
    let more = sheets.len() as i64 > limit;
    sheets.truncate(usize::try_from(limit).unwrap_or(0));
    Ok(Tree {
        folders,
        sheets,
        more,
    })
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

/// Every scheduled batch, by name, with its newest missed starts.
pub fn batches(conn: &dyn Session) -> Result<Vec<BatchItem>> {
    let mut batches = conn.rows(
        "SELECT id, name, schedule, enabled, paused_by, paused_at FROM batches ORDER BY name, id",
        args![],
        |r| {
            let paused_at: Option<String> = r.get(5)?;
            Ok(BatchItem {
                batch_id: r.get(0)?,
                name: r.get(1)?,
                schedule: r.get(2)?,
                enabled: r.get::<i64>(3)? != 0,
                paused: paused_at.is_some(),
                paused_by: r.get(4)?,
                paused_at: paused_at.map(|t| iso(&t)),
                missed: Vec::new(),
            })
        },
    )?;
    let missed: Vec<(i64, MissedItem)> = conn.rows(
        "SELECT batch_id, planned, decided_at, reason FROM (
             SELECT batch_id, planned, decided_at, reason, id,
                    ROW_NUMBER() OVER (PARTITION BY batch_id ORDER BY id DESC) AS n
             FROM missed_starts) m
         WHERE n <= ?1 ORDER BY batch_id, id DESC",
        args![BatchItem::MISSED_SHOWN],
        |r| {
            Ok((
                r.get(0)?,
                MissedItem {
                    planned: r.get(1)?,
                    decided: iso(&r.get::<String>(2)?),
                    reason: r.get(3)?,
                },
            ))
        },
    )?;
    for (batch, m) in missed {
        if let Some(b) = batches.iter_mut().find(|b| b.batch_id == batch) {
            b.missed.push(m);
        }
    }
    Ok(batches)
}

/// A page of the deploy history: at most `limit` deploys before deploy `before` (or the
/// newest), newest first, each with its first `changes` changes.
pub fn deploys(
    conn: &dyn Session,
    before: Option<i64>,
    limit: i64,
    changes: i64,
) -> Result<Vec<DeployItem>> {
    let mut deploys = conn.rows(
        &format!(
            "SELECT id, deployed_at, user_name FROM deploys WHERE CAST(?1 AS BIGINT) IS NULL OR id < ?1 ORDER BY id DESC LIMIT {limit}"
        ),
        args![before],
        |r| {
            Ok(DeployItem {
                deploy_id: r.get(0)?,
                deployed: iso(&r.get::<String>(1)?),
                user: r.get(2)?,
                created: 0,
                updated: 0,
                deleted: 0,
                changes: Vec::new(),
                more: 0,
            })
        },
    )?;
    let (Some(newest), Some(oldest)) = (deploys.first(), deploys.last()) else {
        return Ok(deploys);
    };
    let (oldest, newest) = (oldest.deploy_id, newest.deploy_id);
    let counts: Vec<(i64, String, i64)> = conn.rows(
        "SELECT deploy_id, change, COUNT(*) FROM deploy_history WHERE deploy_id BETWEEN ?1 AND ?2 GROUP BY deploy_id, change",
        args![oldest, newest],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    for (id, change, n) in counts {
        if let Some(d) = deploys.iter_mut().find(|d| d.deploy_id == id) {
            match change.as_str() {
                "created" => d.created += n,
                "updated" => d.updated += n,
                _ => d.deleted += n,
            }
        }
    }
    let lines: Vec<(i64, HistoryItem)> = conn.rows(
        "SELECT deploy_id, id, kind, object_id, name, change FROM (
             SELECT deploy_id, id, kind, object_id, name, change,
                    ROW_NUMBER() OVER (PARTITION BY deploy_id ORDER BY id) AS n
             FROM deploy_history WHERE deploy_id BETWEEN ?1 AND ?2) h
         WHERE n <= ?3 ORDER BY deploy_id, id",
        args![oldest, newest, changes],
        |r| Ok((r.get(0)?, history_item(r, 1)?)),
    )?;
    for (id, line) in lines {
        if let Some(d) = deploys.iter_mut().find(|d| d.deploy_id == id) {
            d.changes.push(line);
        }
    }
    for d in &mut deploys {
        d.more = d.created + d.updated + d.deleted - d.changes.len() as i64;
    }
    Ok(deploys)
}

/// A history line's columns `id, kind, object_id, name, change` from column `at` on.
fn history_item(r: &Row, at: usize) -> Result<HistoryItem> {
    Ok(HistoryItem {
        history_id: r.get(at)?,
        kind: r.get(at + 1)?,
        object_id: r.get(at + 2)?,
        name: r.get(at + 3)?,
        change: r.get(at + 4)?,
    })
}

/// History line `id` with its definition and the object's version before it; `None` when
/// there is no such line.
pub fn history_detail(conn: &dyn Session, id: i64) -> Result<Option<HistoryDetail>> {
    let line = conn.row(
        "SELECT id, kind, object_id, name, change, deploy_id, deployed_at, definition FROM deploy_history WHERE id = ?1",
        args![id],
        |r| {
            Ok(HistoryDetail {
                item: history_item(r, 0)?,
                deploy_id: r.get(5)?,
                deployed: iso(&r.get::<String>(6)?),
                definition: r.get(7)?,
                previous: None,
            })
        },
    )?;
    let Some(mut line) = line else {
        return Ok(None);
    };
    line.previous = conn.row(
        "SELECT id, deploy_id, deployed_at, definition FROM deploy_history
         WHERE kind = ?1 AND object_id = ?2 AND id < ?3 ORDER BY id DESC LIMIT 1",
        args![line.item.kind, line.item.object_id, id],
        |r| {
            Ok(PreviousVersion {
                history_id: r.get(0)?,
                deploy_id: r.get(1)?,
                deployed: iso(&r.get::<String>(2)?),
                definition: r.get(3)?,
            })
        },
    )?;
    Ok(Some(line))
}
