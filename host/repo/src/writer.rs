//! The writes of a deploy, inside one transaction: folders, connections and sheets are
//! created, updated or found unchanged; a sheet's nodes and edges are replaced by the new
//! version's, and what it lacks is deleted. Nothing is written for an unchanged object, so
//! an identical redeploy leaves the file byte-identical.

use crate::delete;
use crate::error::{Error, Result, now_utc};
use crate::facts::Facts;
use crate::flow;
use crate::model::{
    ActionPlace, BatchScope, Change, ChangeKind, FlowRow, IdTable, Lookup, Named, ObjectKey,
    ObjectKind,
};
use crate::sql::{FromValue, Param, Session, Statement, ToParam, Value, args};
use std::borrow::Cow;
use weft_core::plan::ActionPlan;
use weft_dsr::model::{Batch, Connection, Folder, NodeAttributes, Sheet};

/// The row of a deploy, made at its first real change; answers its number.
const NEW_DEPLOY: &str =
    "INSERT INTO deploys (deployed_at, user_name) VALUES (?1, ?2) RETURNING id";

/// What the facts a deploy judges ask of a sheet's stored state, by id ([`Writer::prefetch`]
/// asks them ahead).
const FOLDER_PATH: &str = "SELECT path FROM folders WHERE id = ?1";
const SHEET_DEFINITION: &str = "SELECT definition FROM sheets WHERE id = ?1";
const NODE_SHEET: &str = "SELECT sheet_id FROM nodes WHERE id = ?1";
const EDGE_SHEET: &str = "SELECT sheet_id FROM edges WHERE id = ?1";

/// The plans a deploy wrote: sheet, version (the deploy's number) and text.
pub(super) type NewPlans = std::cell::RefCell<Vec<(i64, i64, String)>>;

/// Writes inside one transaction; see [`super::Repository::write`].
pub struct Writer<'t> {
    tx: &'t dyn Session,
    /// The repository's knowledge that every sheet's data-graph lines are recorded
    /// (`Repository::flow_recorded`).
    flow_recorded: Option<&'t std::sync::atomic::AtomicBool>,
    /// The deploy's number and time, once its first change made its row in `deploys`.
    deploy: std::cell::RefCell<Option<(i64, String)>>,
    /// Who deploys, for the row in `deploys`.
    by: Option<&'t str>,
    /// The sheets' new plans as written, with their version (the deploy's number), for the
    /// repository to keep parsed once they are committed (`repo::plans_cache`).
    plans: Option<&'t NewPlans>,
    /// Answers read ahead by [`Writer::prefetch`] (statement and id), good until the
    /// deploy's first write.
    known: std::cell::RefCell<std::collections::HashMap<(&'static str, i64), Option<Value>>>,
}

impl<'t> Writer<'t> {
    pub(super) fn new(
        tx: &'t dyn Session,
        flow_recorded: Option<&'t std::sync::atomic::AtomicBool>,
        plans: Option<&'t NewPlans>,
    ) -> Self {
        Writer {
            tx,
            flow_recorded,
            deploy: std::cell::RefCell::new(None),
            by: None,
            plans,
            known: std::cell::RefCell::new(std::collections::HashMap::new()),
        }
    }

    /// Reads ahead, in one round trip (PostgreSQL sends the statements before it waits for
    /// the first answer, and with the transaction's beginning), what judging and writing
    /// `sheets` asks by id: each one's folder, stored definition, and the sheets its nodes
    /// and edges belong to. The answers serve until the first write.
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn prefetch(&self, sheets: &[Sheet]) -> Result<()> {
        let mut keys: Vec<(&'static str, i64)> = Vec::new();
        for s in sheets {
            keys.push((FOLDER_PATH, s.attributes.folder_id.v));
            keys.push((SHEET_DEFINITION, s.id.v));
            keys.extend(s.nodes.iter().map(|n| (NODE_SHEET, n.id.v)));
            keys.extend(s.edges.iter().map(|e| (EDGE_SHEET, e.id.v)));
        }
        keys.sort_unstable();
        keys.dedup();
        let queries: Vec<Statement<'_>> = keys
            .iter()
            .map(|(sql, id)| (*sql, vec![Param::Int(*id)]))
            .collect();
        let answers = self.tx.first_values(&queries)?;
        self.known
            .borrow_mut()
            .extend(keys.into_iter().zip(answers));
        Ok(())
    }

    /// What was read ahead is of no use once the deploy writes.
    fn forget(&self) {
        self.known.borrow_mut().clear();
    }

    /// The first value of `sql` for `id`: read ahead, or read now.
    fn known<T: FromValue>(&self, sql: &'static str, id: i64) -> Result<Option<T>> {
        let ahead = self.known.borrow().get(&(sql, id)).cloned();
        match ahead {
            Some(v) => v
                .map(|v| {
                    T::from_value(&v)
                        .ok_or_else(|| Error::Corrupt(format!("`{sql}` for {id} answered {v:?}")))
                })
                .transpose(),
            None => self.one(sql, id),
        }
    }

    /// The same writer, its deploy recorded as made by `by`.
    pub(super) fn by(self, by: &'t str) -> Self {
        Writer {
            by: Some(by),
            ..self
        }
    }

    /// A writer over `conn` used only to read facts outside a transaction.
    pub fn reader(conn: &'t dyn Session) -> Self {
        Self::new(conn, None, None)
    }

    /// The number of this deploy and its time: its row in `deploys` is made at its first
    /// real change, so that a deploy that changes nothing writes nothing.
    ///
    /// # Errors
    ///
    /// A repository error.
    fn deploy(&self) -> Result<(i64, String)> {
        if let Some(d) = self.deploy.borrow().as_ref() {
            return Ok(d.clone());
        }
        let at = now_utc();
        let id: i64 = self
            .tx
            .value(NEW_DEPLOY, args![at, self.by])?
            .ok_or_else(|| Error::Corrupt("a new deploy's row answered no id".to_owned()))?;
        *self.deploy.borrow_mut() = Some((id, at.clone()));
        Ok((id, at))
    }

    fn one<T: FromValue>(&self, sql: &str, id: impl ToParam) -> Result<Option<T>> {
        self.tx.value(sql, &[id.to_param()])
    }

    fn exec(&self, sql: &str, params: &[Param<'_>]) -> Result<usize> {
        self.tx.execute(sql, params)
    }

    fn history(
        &self,
        (kind, id, name): (&str, i64, &str),
        change: ChangeKind,
        definition: Option<&str>,
    ) -> Result<()> {
        if change == ChangeKind::Unchanged {
            return Ok(());
        }
        let (deploy, at) = self.deploy()?;
        if let Some(line) = history_line((kind, id, name), change, definition, (Some(deploy), &at))
        {
            self.tx.execute_all(&[line])?;
        }
        Ok(())
    }

    /// The largest id in use for `kind` (`sheets`, `nodes`, `edges`), 0 when none.
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn max_id(&self, table: IdTable) -> Result<i64> {
        let sql = match table {
            IdTable::Sheets => "SELECT COALESCE(MAX(id), 0) FROM sheets",
            IdTable::Nodes => "SELECT COALESCE(MAX(id), 0) FROM nodes",
            IdTable::Edges => "SELECT COALESCE(MAX(id), 0) FROM edges",
        };
        Ok(self.tx.value(sql, args![])?.unwrap_or_default())
    }

    /// Creates or updates a folder.
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn folder(&self, f: &Folder) -> Result<Change> {
        self.forget();
        let sql = "SELECT path, documentation FROM folders WHERE id = ?1";
        let old: Option<(String, Option<String>)> = self
            .tx
            .row(sql, args![f.id.v], |r| Ok((r.get(0)?, r.get(1)?)))?;
        let definition = serde_json::to_string(f).map_err(|e| Error::Corrupt(e.to_string()))?;
        let change = match old {
            Some((path, doc)) if path == f.path.v && doc == f.documentation => {
                ChangeKind::Unchanged
            }
            Some(_) => {
                self.exec(
                    "UPDATE folders SET path = ?2, documentation = ?3, updated_at = ?4 WHERE id = ?1",
                    args![f.id.v, f.path.v, f.documentation, now_utc()],
                )?;
                ChangeKind::Updated
            }
            None => {
                let now = now_utc();
                self.exec(
                    "INSERT INTO folders (id, path, documentation, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?4)",
                    args![f.id.v, f.path.v, f.documentation, now],
                )?;
                ChangeKind::Created
            }
        };
        self.history(("folder", f.id.v, &f.path.v), change, Some(&definition))?;
        Ok(Change {
            kind: ObjectKind::Folder,
            id: f.id.v,
            change,
            sheet_id: None,
        })
    }

    /// Creates or updates a connection.
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn connection(&self, c: &Connection) -> Result<Change> {
        self.forget();
        let sql = "SELECT name, schema_name, type FROM connections WHERE id = ?1";
        let old: Option<(String, Option<String>, String)> =
            self.tx.row(sql, args![c.id.v], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?;
        let schema = c.schema.as_ref().map(|s| s.v.clone());
        let definition = serde_json::to_string(c).map_err(|e| Error::Corrupt(e.to_string()))?;
        let change = match old {
            Some((name, s, kind)) if name == c.name.v && s == schema && kind == c.kind.v => {
                ChangeKind::Unchanged
            }
            Some(_) => {
                self.exec(
                    "UPDATE connections SET name = ?2, schema_name = ?3, type = ?4, updated_at = ?5 WHERE id = ?1",
                    args![c.id.v, c.name.v, schema, c.kind.v, now_utc()],
                )?;
                ChangeKind::Updated
            }
            None => {
                self.exec(
                    "INSERT INTO connections (id, name, schema_name, type, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
                    args![c.id.v, c.name.v, schema, c.kind.v, now_utc()],
                )?;
                ChangeKind::Created
            }
        };
        self.history(("connection", c.id.v, &c.name.v), change, Some(&definition))?;
        Ok(Change {
            kind: ObjectKind::Connection,
            id: c.id.v,
            change,
            sheet_id: None,
        })
    }

    /// Creates or updates a batch. A new batch, one whose schedule or clock-change policies
    /// changed, or one that lost its planned start gets its first planned start in
    /// `service_batch_next_run`: the first one after `now` in `zone`. Otherwise its planned start stays, so that a shift made by a
    /// sheet (the DST procedure) survives an unrelated redeploy.
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn batch(
        &self,
        b: &Batch,
        schedule: &weft_core::sched::schedule::Schedule,
        first: Option<weft_core::sched::schedule::Planned>,
    ) -> Result<Change> {
        self.forget();
        let definition = serde_json::to_string(b).map_err(|e| Error::Corrupt(e.to_string()))?;
        let elements =
            serde_json::to_string(&b.elements).map_err(|e| Error::Corrupt(e.to_string()))?;
        let variables =
            serde_json::to_string(&b.variables).map_err(|e| Error::Corrupt(e.to_string()))?;
        let when = schedule.repeat.to_string();
        let gap = schedule.gap.name();
        let overlap = schedule.overlap.name();
        let if_running = b.if_running.as_ref().map_or("skip", |r| r.v.as_str());
        let after = serde_json::to_string(&b.after.iter().map(|a| a.v).collect::<Vec<i64>>())
            .map_err(|e| Error::Corrupt(e.to_string()))?;
        let after_minutes = b.after_timeout_minutes.as_ref().map_or(120, |m| m.v);
        let after_timeout = b.after_timeout.as_ref().map_or("skip", |t| t.v.as_str());
        let manual_runs = b.manual_runs.as_ref().map_or("allow", |t| t.v.as_str());
        let notifications =
            serde_json::to_string(&b.notifications).map_err(|e| Error::Corrupt(e.to_string()))?;
        let retry = serde_json::to_string(&weft_core::plan::RetryPlan::of(&b.retry))
            .map_err(|e| Error::Corrupt(e.to_string()))?;
        type Row = (
            String,
            String,
            String,
            String,
            String,
            bool,
            String,
            String,
            Option<String>,
            String,
            i64,
            (String, String, String, String),
        );
        let sql = "SELECT name, schedule, spring_gap, autumn_overlap, if_running, enabled, elements, variables, documentation, after_batches, after_timeout_minutes, after_timeout, manual_runs, notifications, retry FROM batches WHERE id = ?1";
        let old: Option<Row> = self.tx.row(sql, args![b.id.v], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
                r.get(7)?,
                r.get(8)?,
                r.get(9)?,
                r.get(10)?,
                (r.get(11)?, r.get(12)?, r.get(13)?, r.get(14)?),
            ))
        })?;
        let new: Row = (
            b.name.v.clone(),
            when.clone(),
            gap.to_owned(),
            overlap.to_owned(),
            if_running.to_owned(),
            b.enabled,
            elements,
            variables,
            b.documentation.clone(),
            after,
            after_minutes,
            (
                after_timeout.to_owned(),
                manual_runs.to_owned(),
                notifications,
                retry,
            ),
        );
        let planned: Option<String> = self.one(
            "SELECT start_dt FROM service_batch_next_run WHERE batch_id = ?1",
            b.id.v,
        )?;
        let (change, reschedule) = match &old {
            Some(o) if *o == new => (ChangeKind::Unchanged, false),
            Some(o) => {
                self.exec(
                    "UPDATE batches SET name = ?2, schedule = ?3, spring_gap = ?4, autumn_overlap = ?5, if_running = ?6, enabled = ?7, elements = ?8, variables = ?9, documentation = ?10, updated_at = ?11, after_batches = ?12, after_timeout_minutes = ?13, after_timeout = ?14, manual_runs = ?15, notifications = ?16, retry = ?17 WHERE id = ?1",
                    args![b.id.v, new.0, new.1, new.2, new.3, new.4, new.5, new.6, new.7, new.8, now_utc(), new.9, new.10, new.11.0, new.11.1, new.11.2, new.11.3],
                )?;
                (
                    ChangeKind::Updated,
                    o.1 != new.1 || o.2 != new.2 || o.3 != new.3,
                )
            }
            None => {
                self.exec(
                    "INSERT INTO batches (id, name, schedule, spring_gap, autumn_overlap, if_running, enabled, elements, variables, documentation, created_at, updated_at, after_batches, after_timeout_minutes, after_timeout, manual_runs, notifications, retry) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
                    args![b.id.v, new.0, new.1, new.2, new.3, new.4, new.5, new.6, new.7, new.8, now_utc(), new.9, new.10, new.11.0, new.11.1, new.11.2, new.11.3],
                )?;
                (ChangeKind::Created, true)
            }
        };
        // A batch without a planned start (a sheet deleted its row) gets one again; that is a
        // change, so the deploy commits it.
        let restore = old.is_some() && planned.is_none();
        let change = if restore && change == ChangeKind::Unchanged {
            ChangeKind::Updated
        } else {
            change
        };
        if reschedule || restore {
            match first {
                Some(first) => {
                    let start = weft_core::sched::clock::wall(first.local);
                    self.exec(
                        "INSERT INTO service_batch_next_run (batch_id, start_dt) VALUES (?1, ?2) ON CONFLICT (batch_id) DO UPDATE SET start_dt = excluded.start_dt",
                        args![b.id.v, start],
                    )?;
                    self.exec(
                        "UPDATE batches SET second_of = ?2 WHERE id = ?1",
                        args![b.id.v, first.second.then_some(start)],
                    )?;
                }
                None => {
                    self.exec(
                        "DELETE FROM service_batch_next_run WHERE batch_id = ?1",
                        args![b.id.v],
                    )?;
                }
            }
        }
        self.history(("batch", b.id.v, &b.name.v), change, Some(&definition))?;
        Ok(Change {
            kind: ObjectKind::Batch,
            id: b.id.v,
            change,
            sheet_id: None,
        })
    }

    /// Replaces the notification setup (channels and the rules for every batch) with `n`;
    /// unchanged when it is the same.
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn notifications(&self, n: &weft_dsr::model::Notifications) -> Result<Change> {
        self.forget();
        let definition = serde_json::to_string(n).map_err(|e| Error::Corrupt(e.to_string()))?;
        let id = crate::notifications::SETUP_ID;
        let old: Option<String> = self.one(
            "SELECT definition FROM notification_setup WHERE id = ?1",
            id,
        )?;
        let change = match old {
            Some(o) if o == definition => ChangeKind::Unchanged,
            Some(_) => {
                self.exec(
                    "UPDATE notification_setup SET definition = ?2, updated_at = ?3 WHERE id = ?1",
                    args![id, definition, now_utc()],
                )?;
                ChangeKind::Updated
            }
            None => {
                self.exec(
                    "INSERT INTO notification_setup (id, definition, updated_at) VALUES (?1, ?2, ?3)",
                    args![id, definition, now_utc()],
                )?;
                ChangeKind::Created
            }
        };
        self.history(
            ("notifications", id, "notifications"),
            change,
            Some(&definition),
        )?;
        Ok(Change {
            kind: ObjectKind::Notifications,
            id,
            change,
            sheet_id: None,
        })
    }

    /// Creates or replaces the template module `m` (by its name); unchanged when its
    /// definition is the same. Its id, in the answer and the history, is made from its name.
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn template_module(&self, m: &weft_dsr::model::TemplateModule) -> Result<Change> {
        let definition = serde_json::to_string(m).map_err(|e| Error::Corrupt(e.to_string()))?;
        let name = m.name.v.as_str();
        let id = weft_core::names::id_of("module", name);
        let old: Option<String> = self.one(
            "SELECT definition FROM template_modules WHERE name = ?1",
            name,
        )?;
        let change = match old {
            Some(o) if o == definition => ChangeKind::Unchanged,
            Some(_) => {
                self.exec(
                    "UPDATE template_modules SET definition = ?2, updated_at = ?3 WHERE name = ?1",
                    args![name, definition, now_utc()],
                )?;
                ChangeKind::Updated
            }
            None => {
                self.exec(
                    "INSERT INTO template_modules (id, name, definition, updated_at) VALUES (?1, ?2, ?3, ?4)",
                    args![id, name, definition, now_utc()],
                )?;
                ChangeKind::Created
            }
        };
        self.history(("module", id, name), change, Some(&definition))?;
        Ok(Change {
            kind: ObjectKind::Module,
            id,
            change,
            sheet_id: None,
        })
    }

    /// Creates or replaces a sheet with its nodes and edges. Returns the sheet's change
    /// first, then every node and edge the new version no longer holds (deleted).
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn sheet(&self, s: &Sheet) -> Result<Vec<Change>> {
        let definition = serde_json::to_string(s).map_err(|e| Error::Corrupt(e.to_string()))?;
        let old: Option<String> = self.known(SHEET_DEFINITION, s.id.v)?;
        self.forget();
        let a = &s.attributes;
        let now = now_utc();
        let mut changes = Vec::new();
        // The plans a run reads, made once here rather than at every run.
        let plans = || {
            serde_json::to_string(&weft_core::plan::stored_plans(s))
                .map_err(|e| Error::Corrupt(e.to_string()))
        };
        let new_plans = match &old {
            Some(d) if *d == definition => None,
            _ => Some(plans()?),
        };
        // The sheet's row, its nodes and edges and its history line go to the repository
        // together (one round trip on PostgreSQL).
        let order_key = a.order_key();
        let row = |sql| -> Result<Statement<'_>> {
            Ok((
                sql,
                vec![
                    Param::Int(s.id.v),
                    a.name.v.to_param(),
                    order_key.to_param(),
                    Param::Int(a.folder_id.v),
                    a.documentation.to_param(),
                    definition.to_param(),
                    now.to_param(),
                ],
            ))
        };
        let (change, mut writes) = match old {
            Some(d) if d == definition => (ChangeKind::Unchanged, Vec::new()),
            Some(_) => {
                changes.extend(self.delete_missing(s)?);
                (
                    ChangeKind::Updated,
                    vec![row(
                        "UPDATE sheets SET name = ?2, order_key = ?3, folder_id = ?4, documentation = ?5, definition = ?6, updated_at = ?7, flow_recorded = 1 WHERE id = ?1",
                    )?],
                )
            }
            None => (
                ChangeKind::Created,
                vec![row(
                    "INSERT INTO sheets (id, name, order_key, folder_id, documentation, definition, created_at, updated_at, flow_recorded) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, 1)",
                )?],
            ),
        };
        if let Some(plans) = new_plans.as_deref() {
            // The plans' version: this deploy's number (the newest: it holds the lock).
            writes.push((
                "INSERT INTO sheet_plans (sheet_id, version, plans) VALUES (?1, (SELECT MAX(id) FROM deploys), ?2) ON CONFLICT (sheet_id, version) DO UPDATE SET plans = excluded.plans",
                vec![Param::Int(s.id.v), Param::Text(Cow::Borrowed(plans))],
            ));
            writes.push((
                "INSERT INTO plans_versions (sheet_id, version) VALUES (?1, (SELECT MAX(id) FROM deploys)) ON CONFLICT(sheet_id) DO UPDATE SET version = excluded.version",
                vec![Param::Int(s.id.v)],
            ));
            // The versions before it are kept while an instance runs them (an instance names
            // the plans it runs; a new one holds the deploy's lock shared while it does).
            if change == ChangeKind::Updated {
                writes.push((
                    "DELETE FROM sheet_plans WHERE sheet_id = ?1 AND version < (SELECT MAX(id) FROM deploys)
                     AND NOT EXISTS (SELECT 1 FROM instance_sheets i
                                     WHERE i.sheet_id = ?1 AND i.version = sheet_plans.version)",
                    vec![Param::Int(s.id.v)],
                ));
            }
        }
        if change != ChangeKind::Unchanged {
            writes.extend(Self::nodes_and_edges(s));
        }
        // The deploy's own row, when this is its first change, goes in the same round trip:
        // made first, its number read back from it, the history line naming it as the
        // newest (the deploy holds the repository's write lock, so the newest is its own).
        let known = self.deploy.borrow().clone();
        let new_deploy = (change != ChangeKind::Unchanged && known.is_none()).then(now_utc);
        if let Some(at) = &new_deploy {
            writes.insert(0, (NEW_DEPLOY, vec![at.to_param(), self.by.to_param()]));
        }
        let latest: (Option<i64>, &str) = match (&known, &new_deploy) {
            (Some((id, at)), _) => (Some(*id), at.as_str()),
            (None, Some(at)) => (None, at.as_str()),
            (None, None) => (None, ""),
        };
        if change != ChangeKind::Unchanged {
            writes.extend(history_line(
                ("sheet", s.id.v, &a.name.v),
                change,
                Some(&definition),
                latest,
            ));
        }
        let answers = self.tx.first_values(&writes)?;
        drop(writes);
        if let Some(at) = new_deploy {
            let id = answers
                .first()
                .cloned()
                .flatten()
                .and_then(|v| i64::from_value(&v))
                .ok_or_else(|| Error::Corrupt("a new deploy's row answered no id".to_owned()))?;
            *self.deploy.borrow_mut() = Some((id, at));
        }
        // Kept for the repository to parse once committed, at this deploy's number (the
        // version the row gets).
        if let (Some(pending), Some(text), Some((version, _))) =
            (self.plans, new_plans, self.deploy.borrow().as_ref())
        {
            pending.borrow_mut().push((s.id.v, *version, text));
        }
        changes.insert(
            0,
            Change {
                kind: ObjectKind::Sheet,
                id: s.id.v,
                change,
                sheet_id: None,
            },
        );
        Ok(changes)
    }

    /// Removes `objects` in their order, with a history line each, in one round trip.
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn delete(&self, objects: &[(ObjectKind, Named)]) -> Result<Vec<Change>> {
        self.forget();
        if objects.is_empty() {
            return Ok(Vec::new());
        }
        let (deploy, at) = self.deploy()?;
        let mut writes: Vec<Statement<'_>> = Vec::with_capacity(objects.len() * 4);
        for (kind, named) in objects {
            writes.extend(delete::removal(*kind, named.id));
            writes.extend(history_line(
                (kind.word(), named.id, &named.name),
                ChangeKind::Deleted,
                None,
                (Some(deploy), &at),
            ));
        }
        self.tx.execute_all(&writes)?;
        Ok(objects
            .iter()
            .map(|(kind, named)| Change {
                kind: *kind,
                id: named.id,
                change: ChangeKind::Deleted,
                sheet_id: None,
            })
            .collect())
    }

    fn delete_missing(&self, s: &Sheet) -> Result<Vec<Change>> {
        let mut deleted = Vec::new();
        for (table, kind, ids) in [
            (
                "nodes",
                ObjectKind::Node,
                s.nodes.iter().map(|n| n.id.v).collect::<Vec<_>>(),
            ),
            (
                "edges",
                ObjectKind::Edge,
                s.edges.iter().map(|e| e.id.v).collect::<Vec<_>>(),
            ),
        ] {
            let sql = format!("SELECT id FROM {table} WHERE sheet_id = ?1 ORDER BY id");
            let existing: Vec<i64> = self.tx.rows(&sql, args![s.id.v], |r| r.get(0))?;
            let del = format!("DELETE FROM {table} WHERE id = ?1");
            for id in existing.into_iter().filter(|id| !ids.contains(id)) {
                self.exec(&del, args![id])?;
                deleted.push(Change {
                    kind,
                    id,
                    change: ChangeKind::Deleted,
                    sheet_id: Some(s.id.v),
                });
            }
        }
        Ok(deleted)
    }

    /// The statements that write a sheet's nodes and edges (each inserted, or updated where
    /// its id exists), several rows a statement ([`rows_of`]).
    fn nodes_and_edges<'a>(s: &'a Sheet) -> Vec<Statement<'a>> {
        let text = |v: Option<&'a str>| v.map_or(Param::Null, |t| Param::Text(Cow::Borrowed(t)));
        let mut out = Vec::new();
        let mut node_params = Vec::with_capacity(s.nodes.len() * 18);
        for n in &s.nodes {
            let l = &n.layout;
            let (mut module, mut name, mut documentation, mut action) = (None, None, None, None);
            let mut attributes = Param::Null;
            let (mut field1, mut field2, mut field3, mut dependency) = (None, None, None, None);
            let (mut object_type_id, mut connection_id) = (Param::Null, Param::Null);
            match &n.attributes {
                NodeAttributes::Action(a) => {
                    module = Some(a.module.v.as_str());
                    name = Some(a.name.v.as_str());
                    documentation = a.documentation.as_deref();
                    action = a.action.as_ref().map(|x| x.v.as_str());
                    if !a.extra.is_empty() {
                        let map: serde_json::Map<String, serde_json::Value> = a
                            .extra
                            .iter()
                            .map(|(k, v)| (k.v.clone(), v.value.to_json()))
                            .collect();
                        attributes =
                            Param::Text(Cow::Owned(serde_json::Value::Object(map).to_string()));
                    }
                }
                NodeAttributes::Object(o) => {
                    field1 = Some(o.field1.v.as_str());
                    field2 = o.field2.as_deref();
                    field3 = o.field3.as_deref();
                    object_type_id = Param::Int(o.object_type_id.v);
                    connection_id = Param::Int(o.connection_id.v);
                    dependency = Some(o.dependency.v.as_str());
                }
                NodeAttributes::Invalid => {}
            }
            node_params.extend([
                Param::Int(n.id.v),
                Param::Int(s.id.v),
                Param::Int(n.kind.v),
                Param::Int(l.x),
                Param::Int(l.y),
                Param::Int(l.width),
                Param::Int(l.height),
                text(module),
                text(name),
                text(documentation),
                text(action),
                attributes,
                text(field1),
                text(field2),
                text(field3),
                object_type_id,
                connection_id,
                text(dependency),
            ]);
        }
        let mut edge_params = Vec::with_capacity(s.edges.len() * 4);
        for e in &s.edges {
            edge_params.extend([
                Param::Int(e.id.v),
                Param::Int(s.id.v),
                Param::Int(e.from.v),
                Param::Int(e.to.v),
            ]);
        }
        out.extend(rows_of(&NODE_INSERTS, 18, node_params));
        out.extend(rows_of(&EDGE_INSERTS, 4, edge_params));
        out
    }
}

/// The row counts the multi-row writes of a sheet's nodes and edges are cut into, largest
/// first: a sheet of up to 127 nodes takes at most six statements.
const ROW_CHUNKS: [usize; 6] = [64, 16, 8, 4, 2, 1];

/// `INSERT INTO nodes ... VALUES (...), ... ON CONFLICT (id) DO UPDATE ...` for each of
/// [`ROW_CHUNKS`].
static NODE_INSERTS: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(|| {
    upserts(
        "INSERT INTO nodes (id, sheet_id, type, x, y, width, height, module, name, documentation, action, attributes, field1, field2, field3, object_type_id, connection_id, dependency)",
        18,
        " ON CONFLICT(id) DO UPDATE SET sheet_id = excluded.sheet_id, type = excluded.type, x = excluded.x, y = excluded.y,
           width = excluded.width, height = excluded.height, module = excluded.module, name = excluded.name,
           documentation = excluded.documentation, action = excluded.action, attributes = excluded.attributes,
           field1 = excluded.field1, field2 = excluded.field2, field3 = excluded.field3,
           object_type_id = excluded.object_type_id, connection_id = excluded.connection_id, dependency = excluded.dependency",
    )
});

/// The same for edges.
static EDGE_INSERTS: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(|| {
    upserts(
        "INSERT INTO edges (id, sheet_id, from_node, to_node)",
        4,
        " ON CONFLICT(id) DO UPDATE SET sheet_id = excluded.sheet_id, from_node = excluded.from_node, to_node = excluded.to_node",
    )
});

/// `head VALUES (?1, ...), ... tail` for each of [`ROW_CHUNKS`], in its order.
fn upserts(head: &str, columns: usize, tail: &str) -> Vec<String> {
    ROW_CHUNKS
        .iter()
        .map(|&rows| {
            let values: Vec<String> = (0..rows)
                .map(|r| {
                    let cells: Vec<String> = (1..=columns)
                        .map(|c| format!("?{}", r * columns + c))
                        .collect();
                    format!("({})", cells.join(", "))
                })
                .collect();
            format!("{head} VALUES {}{tail}", values.join(", "))
        })
        .collect()
}

/// `params` (rows of `columns` each) as statements of `texts` ([`upserts`]), largest first.
fn rows_of<'a>(texts: &'a [String], columns: usize, params: Vec<Param<'a>>) -> Vec<Statement<'a>> {
    let mut left = params.len() / columns;
    let mut params = params.into_iter();
    let mut out = Vec::new();
    for (text, &size) in texts.iter().zip(&ROW_CHUNKS) {
        while left >= size {
            out.push((
                text.as_str(),
                params.by_ref().take(size * columns).collect(),
            ));
            left -= size;
        }
    }
    out
}

/// The statement that adds a change to the history of `deploy` (its number and time; with no
/// number, the newest deploy's, made in the same round trip), none for an unchanged object.
fn history_line<'a>(
    (kind, id, name): (&'a str, i64, &'a str),
    change: ChangeKind,
    definition: Option<&'a str>,
    (deploy, at): (Option<i64>, &'a str),
) -> Option<Statement<'a>> {
    let change = match change {
        ChangeKind::Created => "created",
        ChangeKind::Updated => "updated",
        ChangeKind::Deleted => "deleted",
        ChangeKind::Unchanged => return None,
    };
    let mut params = vec![
        Param::Text(Cow::Borrowed(at)),
        Param::Text(Cow::Borrowed(kind)),
        Param::Int(id),
        Param::Text(Cow::Borrowed(change)),
        definition.map_or(Param::Null, |d| Param::Text(Cow::Borrowed(d))),
        Param::Text(Cow::Borrowed(name)),
    ];
    let sql = match deploy {
        Some(deploy) => {
            params.push(Param::Int(deploy));
            "INSERT INTO deploy_history (deployed_at, kind, object_id, change, definition, name, deploy_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
        }
        None => {
            "INSERT INTO deploy_history (deployed_at, kind, object_id, change, definition, name, deploy_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, (SELECT MAX(id) FROM deploys))"
        }
    };
    Some((sql, params))
}

impl Facts for Writer<'_> {
    fn stored_template_module(&self, name: &str) -> Result<Option<String>> {
        self.one(
            "SELECT definition FROM template_modules WHERE name = ?1",
            name,
        )
    }

    fn sheet_exists(&self, id: i64) -> Result<bool> {
        Ok(self
            .one::<i64>("SELECT 1 FROM sheets WHERE id = ?1", id)?
            .is_some())
    }

    fn notification_refs(&self) -> Result<crate::facts::NotificationRefs> {
        let channels = crate::notifications::setup(self.tx)?
            .map(|s| s.channels.into_iter().map(|c| c.name).collect());
        let rows: Vec<(i64, String, String)> = self.tx.rows(
            "SELECT id, name, notifications FROM batches WHERE notifications <> '[]' ORDER BY id",
            args![],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        let mut used = Vec::new();
        for (id, name, rules) in rows {
            let rules: Vec<crate::notifications::RuleDef> =
                serde_json::from_str(&rules).map_err(|e| {
                    Error::Corrupt(format!("the notification rules of batch {id}: {e}"))
                })?;
            for channel in rules.into_iter().flat_map(|r| r.to) {
                used.push((id, name.clone(), channel));
            }
        }
        Ok(crate::facts::NotificationRefs { channels, used })
    }

    fn batch_exists(&self, id: i64) -> Result<bool> {
        Ok(self
            .one::<i64>("SELECT 1 FROM batches WHERE id = ?1", id)?
            .is_some())
    }

    fn sheets_at(&self, folder: &str, sheet: &str) -> Result<Vec<i64>> {
        self.tx.rows(
            "SELECT s.id FROM sheets s JOIN folders f ON f.id = s.folder_id
              WHERE f.path = ?1 AND s.name = ?2 ORDER BY s.id",
            args![folder, sheet],
            |r| r.get(0),
        )
    }

    fn connections_named(&self, name: &str) -> Result<Vec<i64>> {
        self.tx.rows(
            "SELECT id FROM connections WHERE name = ?1 ORDER BY id",
            args![name],
            |r| r.get(0),
        )
    }

    fn batches_named(&self, name: &str) -> Result<Vec<i64>> {
        self.tx.rows(
            "SELECT id FROM batches WHERE name = ?1 ORDER BY id",
            args![name],
            |r| r.get(0),
        )
    }

    fn actions_at(&self, folder: &str, sheet: &str, action: &str) -> Result<Vec<i64>> {
        self.tx.rows(
            "SELECT n.id FROM nodes n JOIN sheets s ON s.id = n.sheet_id JOIN folders f ON f.id = s.folder_id
              WHERE f.path = ?1 AND s.name = ?2 AND n.type = 0 AND n.name = ?3 ORDER BY n.id",
            args![folder, sheet, action],
            |r| r.get(0),
        )
    }

    fn action_exists(&self, id: i64) -> Result<bool> {
        Ok(self
            .one::<i64>("SELECT 1 FROM nodes WHERE id = ?1 AND type = 0", id)?
            .is_some())
    }

    fn folder_path(&self, id: i64) -> Result<Option<String>> {
        self.known(FOLDER_PATH, id)
    }

    fn folder_at(&self, path: &str) -> Result<Option<i64>> {
        self.one("SELECT id FROM folders WHERE path = ?1", path)
    }

    fn sheet_folder(&self, id: i64) -> Result<Option<String>> {
        self.one(
            "SELECT f.path FROM sheets s JOIN folders f ON f.id = s.folder_id WHERE s.id = ?1",
            id,
        )
    }

    fn node_sheet(&self, id: i64) -> Result<Option<i64>> {
        self.known(NODE_SHEET, id)
    }

    fn edge_sheet(&self, id: i64) -> Result<Option<i64>> {
        self.known(EDGE_SHEET, id)
    }

    /// One statement per id, all sent in one round trip. (Lists of ids in one statement,
    /// `id IN (?1, ...)`, were tried: PostgreSQL's generic plan for them scanned the whole
    /// table once it had cached it for a small one.)
    fn owners(&self, nodes: &[i64], edges: &[i64]) -> Result<crate::facts::Owners> {
        // What was read ahead is not asked again.
        let keys: Vec<(&'static str, i64)> = nodes
            .iter()
            .map(|&id| (NODE_SHEET, id))
            .chain(edges.iter().map(|&id| (EDGE_SHEET, id)))
            .collect();
        let mut values: Vec<Option<Option<Value>>> = {
            let known = self.known.borrow();
            keys.iter().map(|k| known.get(k).cloned()).collect()
        };
        let queries: Vec<Statement<'static>> = keys
            .iter()
            .zip(&values)
            .filter(|(_, v)| v.is_none())
            .map(|((sql, id), _)| (*sql, vec![Param::Int(*id)]))
            .collect();
        let mut asked = self.tx.first_values(&queries)?.into_iter();
        for v in values.iter_mut().filter(|v| v.is_none()) {
            *v = asked.next();
        }
        let mut sheets = values
            .into_iter()
            .map(Option::flatten)
            .map(|v| {
                v.map(|v| {
                    i64::from_value(&v).ok_or_else(|| {
                        Error::Corrupt(format!("a sheet id that is not a number: {v:?}"))
                    })
                })
                .transpose()
            })
            .collect::<Result<Vec<_>>>()?;
        let edges = sheets.split_off(nodes.len());
        Ok(crate::facts::Owners {
            nodes: sheets,
            edges,
        })
    }

    fn folder_has_contents(&self, id: i64, path: &str) -> Result<bool> {
        let sheets = self.one::<i64>("SELECT 1 FROM sheets WHERE folder_id = ?1 LIMIT 1", id)?;
        let prefix = format!("{path}/");
        let folders = self.one::<i64>(
            "SELECT 1 FROM folders WHERE substr(path, 1, length(?1)) = ?1 LIMIT 1",
            prefix.as_str(),
        )?;
        Ok(sheets.is_some() || folders.is_some())
    }

    fn connection_facts(&self, id: i64) -> Result<Option<(String, Option<String>)>> {
        self.tx.row(
            "SELECT type, schema_name FROM connections WHERE id = ?1",
            args![id],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get::<Option<String>>(1)?.filter(|s| !s.is_empty()),
                ))
            },
        )
    }
}

impl crate::store::DeployWriter for Writer<'_> {
    fn prefetch(&self, sheets: &[Sheet]) -> Result<()> {
        Writer::prefetch(self, sheets)
    }

    fn max_id(&self, table: IdTable) -> Result<i64> {
        Writer::max_id(self, table)
    }

    fn folder(&self, f: &Folder) -> Result<Change> {
        Writer::folder(self, f)
    }

    fn connection(&self, c: &Connection) -> Result<Change> {
        Writer::connection(self, c)
    }

    fn sheet(&self, s: &Sheet) -> Result<Vec<Change>> {
        Writer::sheet(self, s)
    }

    fn batch(
        &self,
        b: &Batch,
        schedule: &weft_core::sched::schedule::Schedule,
        first: Option<weft_core::sched::schedule::Planned>,
    ) -> Result<Change> {
        Writer::batch(self, b, schedule, first)
    }

    fn notifications(&self, n: &weft_dsr::model::Notifications) -> Result<Change> {
        Writer::notifications(self, n)
    }

    fn template_module(&self, m: &weft_dsr::model::TemplateModule) -> Result<Change> {
        Writer::template_module(self, m)
    }

    fn deploy_id(&self) -> Option<i64> {
        self.deploy.borrow().as_ref().map(|d| d.0)
    }

    fn record_flow(&self, clear: &[i64], rows: &[FlowRow]) -> Result<()> {
        self.forget();
        flow::record(self.tx, None, clear, rows)
    }

    fn record_unrecorded_flow(&self, sheet: i64, rows: &[FlowRow]) -> Result<()> {
        self.forget();
        flow::record(self.tx, Some(sheet), &[], rows)
    }

    fn unrecorded_flow(&self) -> Result<Vec<(i64, Option<Vec<ActionPlan>>)>> {
        use std::sync::atomic::Ordering;
        if self.flow_recorded.is_some_and(|f| f.load(Ordering::SeqCst)) {
            return Ok(Vec::new());
        }
        let unrecorded = flow::unrecorded(self.tx)?;
        if unrecorded.is_empty()
            && let Some(f) = self.flow_recorded
        {
            f.store(true, Ordering::SeqCst);
        }
        unrecorded
            .into_iter()
            .map(|(id, plans)| {
                let plans = plans.map(|p| serde_json::from_str(&p)).transpose();
                // Plans that cannot be read leave the sheet out of the graph, as its runs
                // fail until it is deployed again.
                Ok((id, plans.ok().flatten()))
            })
            .collect()
    }

    fn flow_neighbours(&self, action: i64, forward: bool) -> Result<Vec<(i64, ObjectKey)>> {
        flow::neighbours(self.tx, action, forward)
    }

    fn action_place(&self, action: i64) -> Result<Option<ActionPlace>> {
        flow::place(self.tx, action)
    }

    fn batch_scopes(&self) -> Result<Vec<BatchScope>> {
        flow::batches(self.tx)
    }

    fn flow_actions_in_sheet(&self, sheet: i64) -> Result<Vec<i64>> {
        flow::actions_in_sheet(self.tx, sheet)
    }

    fn sheets_below(&self, folder: i64) -> Result<Option<Vec<i64>>> {
        crate::instances::sheets_below(self.tx, folder)
    }

    fn find(&self, kind: ObjectKind, key: &Lookup) -> Result<Vec<Named>> {
        delete::find(self.tx, kind, key)
    }

    fn folders_below(&self, path: &str) -> Result<Vec<Named>> {
        delete::folders_below(self.tx, path)
    }

    fn sheets_in(&self, folder: i64) -> Result<Vec<Named>> {
        delete::sheets_in(self.tx, folder)
    }

    fn connection_users(&self, connection: i64) -> Result<Vec<(Named, i64)>> {
        delete::connection_users(self.tx, connection)
    }

    fn delete(&self, objects: &[(ObjectKind, Named)]) -> Result<Vec<Change>> {
        Writer::delete(self, objects)
    }

    fn exported(&self, below: Option<&str>) -> Result<crate::model::Exported> {
        crate::export::exported(self.tx, below)
    }
}
