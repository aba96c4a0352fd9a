//! The repository's data graph (`data_flow`): which objects each action reads and writes
//! with dependency `Y`, one row per pair, replaced with its sheet's actions at every deploy
//! (clustered by action, so a deploy's lines are one place on disk). A deploy
//! walks it from the actions it changed to find a cycle it closes (the rows of an action and
//! of an object are each one indexed read), never reading every plan.

use crate::error::{Error, Result};
use crate::model::{ActionPlace, BatchScope, FlowRow, ObjectKey};
use crate::sql::{Param, Row, Session, Statement, args};
use std::borrow::Cow;

/// The lines of the data graph with each action's name, sheet and folder, as
/// [`lineage_row`] reads them.
const LINEAGE_ROWS: &str =
    "SELECT d.action_id, d.writes, d.connection_id, d.schema_name, d.object_name,
                COALESCE(n.name, ''), s.id, s.name, f.path
           FROM data_flow d
           JOIN nodes n ON n.id = d.action_id
           JOIN sheets s ON s.id = n.sheet_id
           JOIN folders f ON f.id = s.folder_id";

/// A line of [`LINEAGE_ROWS`].
fn lineage_row(r: &Row) -> Result<crate::model::LineageRow> {
    Ok(crate::model::LineageRow {
        action_id: r.get(0)?,
        writes: r.get::<i64>(1)? != 0,
        object: ObjectKey {
            connection_id: r.get(2)?,
            schema: r.get(3)?,
            name: r.get(4)?,
        },
        action_name: r.get(5)?,
        sheet_id: r.get(6)?,
        sheet_name: r.get(7)?,
        folder: r.get(8)?,
    })
}

/// The actions of the whole repository that read or write the table `table` (any case; on
/// `connection` and in `schema` when given), writers first, each with its sheet and folder:
/// at most `limit`.
///
/// # Errors
///
/// A repository error.
pub fn lineage(
    conn: &dyn Session,
    table: &str,
    connection: Option<i64>,
    schema: Option<&str>,
    limit: i64,
) -> Result<Vec<crate::model::LineageRow>> {
    conn.rows(
        &format!(
            "{LINEAGE_ROWS}
          WHERE LOWER(d.object_name) = LOWER(?1)
            AND (CAST(?2 AS BIGINT) IS NULL OR d.connection_id = ?2)
            AND (CAST(?3 AS TEXT) IS NULL OR LOWER(d.schema_name) = LOWER(?3))
          ORDER BY d.writes DESC, f.path, s.name, 6, d.action_id
          LIMIT ?4"
        ),
        args![table, connection, schema, limit],
        lineage_row,
    )
}

/// The other sheets that share tables with sheet `sheet`: those whose actions write what its
/// actions read (`downstream` false), or read what they write (`downstream` true), as
/// (sheet, name, folder, table), by folder, name and table; at most `limit` lines. Tables are
/// matched by their identity as the object type stores it (as the dependencies are), each
/// line of the sheet one indexed read.
///
/// # Errors
///
/// A repository error.
pub fn sheet_links(
    conn: &dyn Session,
    sheet: i64,
    downstream: bool,
    limit: i64,
) -> Result<Vec<(i64, String, String, String)>> {
    let (mine, theirs) = if downstream { (1, 0) } else { (0, 1) };
    conn.rows(
        "SELECT DISTINCT s.id, s.name, f.path, o.object_name
           FROM data_flow m
           JOIN nodes mn ON mn.id = m.action_id
           JOIN data_flow o ON o.connection_id = m.connection_id
                AND o.object_name = m.object_name AND o.schema_name = m.schema_name
                AND o.writes = ?3
           JOIN nodes onode ON onode.id = o.action_id
           JOIN sheets s ON s.id = onode.sheet_id
           JOIN folders f ON f.id = s.folder_id
          WHERE mn.sheet_id = ?1 AND m.writes = ?2 AND onode.sheet_id <> ?1
          ORDER BY f.path, s.name, s.id, o.object_name
          LIMIT ?4",
        args![sheet, mine, theirs, limit],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
    )
}

/// Every line of the data graph, each with its action's name, sheet and folder, by action:
/// at most `limit`.
///
/// # Errors
///
/// A repository error.
pub fn graph(conn: &dyn Session, limit: i64) -> Result<Vec<crate::model::LineageRow>> {
    conn.rows(
        &format!(
            "{LINEAGE_ROWS}
          ORDER BY d.action_id, d.writes, d.connection_id, d.schema_name, d.object_name
          LIMIT ?1"
        ),
        args![limit],
        lineage_row,
    )
}

/// The lines of the data graph of the actions `actions`, by action: what each reads and
/// writes, at most `most` of each action (by name; one more tells the caller there are
/// more), 500 actions a query.
///
/// # Errors
///
/// A repository error.
pub fn tables_of(conn: &dyn Session, actions: &[i64], most: i64) -> Result<Vec<FlowRow>> {
    let mut out = Vec::new();
    for chunk in actions.chunks(500) {
        let ids = chunk
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(",");
        out.extend(conn.rows(
            &format!(
                "SELECT action_id, writes, connection_id, schema_name, object_name
                   FROM (SELECT d.*, ROW_NUMBER() OVER (PARTITION BY action_id
                                     ORDER BY writes, object_name, schema_name) AS n
                           FROM data_flow d WHERE action_id IN ({ids})) t
                  WHERE n <= ?1
                  ORDER BY action_id, writes, object_name, schema_name"
            ),
            args![most + 1],
            |r| {
                Ok(FlowRow {
                    action_id: r.get(0)?,
                    writes: r.get::<i64>(1)? != 0,
                    object: ObjectKey {
                        connection_id: r.get(2)?,
                        schema: r.get(3)?,
                        name: r.get(4)?,
                    },
                })
            },
        )?);
    }
    Ok(out)
}

/// Replaces the lines of the actions `clear` (a redeployed sheet's actions, those it no
/// longer holds included) with `rows`; with `sheet`, marks that sheet's flow recorded (a
/// sheet stored before the data graph; one a deploy writes is marked as it is written).
///
/// # Errors
///
/// A repository error.
pub fn record(tx: &dyn Session, sheet: Option<i64>, clear: &[i64], rows: &[FlowRow]) -> Result<()> {
    let mut writes: Vec<Statement<'_>> = Vec::with_capacity(clear.len() + rows.len() + 1);
    for &action in clear {
        writes.push((
            "DELETE FROM data_flow WHERE action_id = ?1",
            vec![Param::Int(action)],
        ));
    }
    for r in rows {
        writes.push((
            "INSERT INTO data_flow (action_id, writes, connection_id, schema_name, object_name) VALUES (?1, ?2, ?3, ?4, ?5)",
            vec![
                Param::Int(r.action_id),
                Param::Int(i64::from(r.writes)),
                Param::Int(r.object.connection_id),
                Param::Text(Cow::Borrowed(&r.object.schema)),
                Param::Text(Cow::Borrowed(&r.object.name)),
            ],
        ));
    }
    if let Some(sheet) = sheet {
        writes.push((
            "UPDATE sheets SET flow_recorded = 1 WHERE id = ?1",
            vec![Param::Int(sheet)],
        ));
    }
    // Nothing waits for their answers: on PostgreSQL they go with the commit.
    tx.defer_all(&writes)
}

/// The sheets whose data flow is not recorded yet (stored before schema version 11), each
/// with its stored plans (`None` when an upgrade could not read its definition).
///
/// # Errors
///
/// A repository error.
pub fn unrecorded(tx: &dyn Session) -> Result<Vec<(i64, Option<String>)>> {
    tx.rows(
        "SELECT s.id, p.plans FROM sheets s
         LEFT JOIN plans_versions v ON v.sheet_id = s.id
         LEFT JOIN sheet_plans p ON p.sheet_id = s.id AND p.version = v.version
         WHERE s.flow_recorded IS NULL ORDER BY s.id",
        args![],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

/// The actions next to `action` in the data graph, with the object between: with `forward`
/// those that read what it writes, else those that write what it reads. Never itself.
///
/// # Errors
///
/// A repository error.
pub fn neighbours(tx: &dyn Session, action: i64, forward: bool) -> Result<Vec<(i64, ObjectKey)>> {
    tx.rows(
        "SELECT o.action_id, o.connection_id, o.schema_name, o.object_name
           FROM data_flow a JOIN data_flow o
             ON o.connection_id = a.connection_id AND o.object_name = a.object_name
            AND o.schema_name = a.schema_name AND o.writes = ?3
          WHERE a.action_id = ?1 AND a.writes = ?2 AND o.action_id <> ?1
          ORDER BY o.action_id, o.connection_id, o.schema_name, o.object_name",
        args![action, i64::from(forward), i64::from(!forward)],
        |r| {
            Ok((
                r.get(0)?,
                ObjectKey {
                    connection_id: r.get(1)?,
                    schema: r.get(2)?,
                    name: r.get(3)?,
                },
            ))
        },
    )
}

/// Every action that reads, directly or through others, what action `seed` writes
/// (`downstream`), or that writes what it reads (else), by the data graph as deployed, with
/// its sheet; not `seed` itself.
///
/// # Errors
///
/// A repository error.
pub fn related(tx: &dyn Session, seed: i64, downstream: bool) -> Result<Vec<(i64, i64)>> {
    // Downstream: from what an action writes (writes = 1) to who reads it (writes = 0).
    let (from, to) = if downstream { (1, 0) } else { (0, 1) };
    tx.rows(
        "WITH RECURSIVE reached(action_id) AS (
             SELECT CAST(?1 AS BIGINT)
             UNION
             SELECT o.action_id FROM reached r
             JOIN data_flow a ON a.action_id = r.action_id AND a.writes = ?2
             JOIN data_flow o ON o.connection_id = a.connection_id AND o.object_name = a.object_name
                 AND o.schema_name = a.schema_name AND o.writes = ?3)
         SELECT r.action_id, n.sheet_id FROM reached r JOIN nodes n ON n.id = r.action_id
         WHERE r.action_id <> ?1 ORDER BY r.action_id",
        args![seed, from, to],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

/// Where action `action` lives; `None` when it is no action of a stored sheet.
///
/// # Errors
///
/// A repository error.
pub fn place(tx: &dyn Session, action: i64) -> Result<Option<ActionPlace>> {
    tx.row(
        "SELECT COALESCE(n.name, ''), n.sheet_id, f.path FROM nodes n
           JOIN sheets s ON s.id = n.sheet_id JOIN folders f ON f.id = s.folder_id
          WHERE n.id = ?1 AND n.type = 0",
        args![action],
        |r| {
            Ok(ActionPlace {
                name: r.get(0)?,
                sheet_id: r.get(1)?,
                folder: r.get(2)?,
            })
        },
    )
}

/// Every deployed batch with its elements, by id.
///
/// # Errors
///
/// A repository error; [`Error::Corrupt`] for elements that cannot be read.
pub fn batches(tx: &dyn Session) -> Result<Vec<BatchScope>> {
    tx.rows(
        "SELECT id, name, enabled, elements FROM batches ORDER BY id",
        args![],
        |r| {
            let id: i64 = r.get(0)?;
            let elements: String = r.get(3)?;
            Ok(BatchScope {
                id,
                name: r.get(1)?,
                enabled: r.get(2)?,
                elements: serde_json::from_str(&elements).map_err(|e| {
                    Error::Corrupt(format!(
                        "batch {id}: its stored elements cannot be read: {e}"
                    ))
                })?,
            })
        },
    )
}

/// The actions of the data graph in sheet `sheet`.
///
/// # Errors
///
/// A repository error.
pub fn actions_in_sheet(tx: &dyn Session, sheet: i64) -> Result<Vec<i64>> {
    tx.rows(
        "SELECT DISTINCT d.action_id FROM nodes n JOIN data_flow d ON d.action_id = n.id
          WHERE n.sheet_id = ?1 ORDER BY d.action_id",
        args![sheet],
        |r| r.get(0),
    )
}
