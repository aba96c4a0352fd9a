//! The repository of a running server, on either backend: the SQLite file in HOME (the
//! default) or the PostgreSQL database of the key file's entry 0. Callers see only this type
//! and the store traits; each trait method runs the shared statements ([`super::instances`],
//! [`super::schedules`], [`super::writer`]) on a [`Session`] of the backend, as one
//! transaction where it must be one.

use super::backend::Backend;
use super::backfills;
use super::error::{Error, Result};
use super::model::{
    ActionEnd, InstanceRow, InstanceState, InstanceSummary, NewInstance, Restarted, SheetPlans,
};
use super::plans_cache::PlansCache;
use super::postgres::{self, Postgres};
use super::schemas_cache::SchemasCache;
use super::sql::Session;
use super::sqlite::Sqlite;
use super::store::{Created, DeployWriter, InstanceStore, SheetStore};
use super::work::{self, Claimed, Ended, Halted, HostRow, InstanceInfo, Pinned, Settle};
use super::writer::Writer;
use super::{instances, schedules};
use std::path::Path;
use std::sync::Arc;
use weft_core::sched::schedule::Planned;
use weft_core::sched::scheduler::{PlannedStarts, ScheduledStart, StoredStart};

/// The repository of a running server.
#[derive(Debug)]
pub struct Repository {
    backend: Box<dyn Backend>,
    /// Set once a deploy found every sheet's lines of the data graph recorded: sheets are
    /// written with them since schema version 11, so none is missing again and later
    /// deploys need not look (one round trip less inside the deploy's lock).
    flow_recorded: std::sync::atomic::AtomicBool,
    /// The sheets' plans as runs last read them, kept parsed.
    plans: PlansCache,
    /// The connections' default schemas as actions last read them (SQLite only).
    schemas: SchemasCache,
}

impl Repository {
    /// Opens (creating if needed) the SQLite repository at `path` and brings its schema to the
    /// current version.
    ///
    /// # Errors
    ///
    /// When the file cannot be opened, or its schema is newer than this program's, or a
    /// migration fails.
    pub fn open(path: &Path) -> Result<Self> {
        Ok(Repository {
            backend: Box::new(Sqlite::open(path)?),
            flow_recorded: std::sync::atomic::AtomicBool::new(false),
            plans: PlansCache::default(),
            schemas: SchemasCache::default(),
        })
    }

    /// Connects to the PostgreSQL repository of `entry` and brings its schema to the current
    /// version.
    ///
    /// # Errors
    ///
    /// When the server cannot be reached or refuses, or its schema is newer than this
    /// program's, or a migration fails.
    pub fn open_postgres(entry: &postgres::Entry) -> Result<Self> {
        Ok(Repository {
            backend: Box::new(Postgres::open(entry)?),
            flow_recorded: std::sync::atomic::AtomicBool::new(false),
            plans: PlansCache::default(),
            schemas: SchemasCache::default(),
        })
    }

    /// The SQLite file, for a repository that is one.
    pub fn path(&self) -> Option<&Path> {
        self.backend.sqlite().map(Sqlite::path)
    }

    /// Starts the repository's change feed, when it has one: PostgreSQL's, which says the
    /// changes every host makes to instances (`None` on SQLite, which one host alone
    /// changes, so that its own changes are all there are).
    ///
    /// # Errors
    ///
    /// When the feed's thread cannot be started.
    pub fn change_feed(
        &self,
        listener: std::sync::Arc<dyn super::postgres::changes::Listener>,
    ) -> Option<std::io::Result<super::postgres::changes::Feed>> {
        self.backend.change_feed(listener)
    }

    /// Where it is, for messages: the file, or the PostgreSQL server's `host:port`.
    pub fn location(&self) -> String {
        self.backend.location()
    }

    /// How many background checkpoints copied something so far (SQLite; 0 on PostgreSQL).
    pub fn checkpoints(&self) -> u64 {
        self.backend.sqlite().map_or(0, Sqlite::checkpoints)
    }

    /// Tests only: makes every use of the SQLite writer connection fail as on a full disk
    /// (`true`), or work again (`false`).
    #[cfg(any(test, feature = "testing"))]
    pub fn fill_disk(&self, full: bool) {
        if let Some(s) = self.backend.sqlite() {
            s.fill_disk(full);
        }
    }

    /// Tests only: how long the SQLite writer waits for another writer's lock.
    #[cfg(any(test, feature = "testing"))]
    pub fn set_busy_timeout(&self, patience: std::time::Duration) {
        if let Some(s) = self.backend.sqlite() {
            s.set_busy_timeout(patience);
        }
    }

    /// Claimed actions with their plans, found at the version of its sheet's plans each
    /// instance runs (kept parsed, or read on `c` and kept). An action whose plans cannot be
    /// read carries why: it fails, the others run.
    ///
    /// # Errors
    ///
    /// A repository error while reading plans.
    fn with_plans(&self, c: &dyn Session, pinned: Vec<Pinned>) -> Result<Vec<Claimed>> {
        pinned
            .into_iter()
            .map(|p| {
                let plan = match p.version {
                    None => Err(format!(
                        "its batch instance names no version of sheet {}'s plans",
                        p.sheet
                    )),
                    Some(v) => self.plans_at(c, p.sheet, v)?.and_then(|plans| {
                        plans.get(p.action).cloned().ok_or_else(|| {
                            format!(
                                "sheet {}'s plans (version {v}) have no plan for it",
                                p.sheet
                            )
                        })
                    }),
                };
                Ok(Claimed {
                    instance: p.instance,
                    action: p.action,
                    attempt: p.attempt,
                    plan,
                    unmarked: p.unmarked,
                })
            })
            .collect()
    }

    /// Sheet `sheet`'s plans at `version`, kept parsed, or read on `c` (the inner `Err`
    /// says why they cannot be had).
    ///
    /// # Errors
    ///
    /// A repository error while reading them.
    fn plans_at(
        &self,
        c: &dyn Session,
        sheet: i64,
        version: i64,
    ) -> Result<std::result::Result<Arc<SheetPlans>, String>> {
        if let Some(plans) = self.plans.at(sheet, version) {
            return Ok(Ok(plans));
        }
        let Some(text) = instances::plans_at(c, sheet, version)? else {
            return Ok(Err(format!(
                "sheet {sheet}'s plans of version {version} are no longer stored"
            )));
        };
        Ok(self
            .plans
            .plans(sheet, version, &text, |t| instances::parse_plans(sheet, t))
            .map_err(|e| format!("{e}; deploy its sheet again")))
    }

    /// The actions instance `id` would run again whose sheet's plans deployed now have no
    /// plan for them (sheet, action).
    ///
    /// # Errors
    ///
    /// A repository error while reading plans.
    fn not_deployed(&self, c: &dyn Session, id: i64, only: &[i64]) -> Result<Vec<(i64, i64)>> {
        let mut gone = Vec::new();
        for to_run in work::to_run_again(c, id, only)? {
            let sheet = to_run.sheet;
            let plans = match to_run.current {
                Some(v) => self.plans_at(c, sheet, v)?.ok(),
                None => None,
            };
            gone.extend(
                to_run
                    .actions
                    .into_iter()
                    .filter(|a| plans.as_ref().is_none_or(|p| p.get(*a).is_none()))
                    .map(|a| (sheet, a)),
            );
        }
        Ok(gone)
    }

    /// The instances of `claimed` (but `running`) start running, after their claim, in a
    /// transaction of its own ([`work::mark_running`]).
    fn mark_running(&self, claimed: &[Claimed], running: Option<i64>) {
        let mut instances: Vec<i64> = claimed
            .iter()
            .map(|c| c.instance)
            .filter(|i| Some(*i) != running)
            .collect();
        instances.dedup();
        if !instances.is_empty()
            && let Err(e) = self.with(|c| work::mark_running(c, &instances))
        {
            // The actions are claimed and will run: only the instance's word lags (an
            // instance ends from `waiting` as from `running`).
            tracing::warn!(message = "Claimed actions' instances cannot be marked running now.", instances = ?instances, error = %e);
        }
    }

    /// Runs `f` on a connection outside any explicit transaction (reads, and single
    /// statements, each its own transaction).
    ///
    /// # Errors
    ///
    /// What `f` returns.
    pub(super) fn with<R>(&self, f: impl FnOnce(&dyn Session) -> Result<R>) -> Result<R> {
        let mut f = Some(f);
        let mut out = None;
        self.backend.session(&mut |s| {
            if let Some(f) = f.take() {
                out = Some(f(s));
            }
            Ok(())
        })?;
        out.unwrap_or(Err(Error::NotRun("a session")))
    }

    /// Runs `f` in one transaction, committed when `f` succeeds. On PostgreSQL a
    /// transaction that another one's locks chose as the deadlock's victim, or that could
    /// not be serialized, is run again from the start, a few times.
    ///
    /// # Errors
    ///
    /// What `f` returns, or a failure to begin or commit.
    pub(super) fn tx<R>(&self, f: impl FnMut(&dyn Session) -> Result<R>) -> Result<R> {
        self.tx_with(None, f)
    }

    /// Runs `f` in one transaction that on PostgreSQL holds the advisory lock `lock` (no
    /// other transaction holding it runs beside); on SQLite the one writer is that lock.
    /// Run again as [`Repository::tx`] says.
    ///
    /// # Errors
    ///
    /// What `f` returns, or a failure to begin or commit.
    fn tx_locked<R>(&self, lock: i64, f: impl FnMut(&dyn Session) -> Result<R>) -> Result<R> {
        self.tx_with(Some(lock), f)
    }

    fn tx_with<R>(
        &self,
        lock: Option<i64>,
        mut f: impl FnMut(&dyn Session) -> Result<R>,
    ) -> Result<R> {
        let mut once = || {
            let mut out = None;
            self.backend.transaction(lock, &mut |s| {
                out = Some(f(s)?);
                Ok(true)
            })?;
            out.ok_or(Error::NotRun("a transaction"))
        };
        if self.backend.runs_conflicts_again() {
            again_on_conflict(once)
        } else {
            once()
        }
    }

    /// One round of retention: what `keep` lets go, each kind in its own short transaction
    /// of at most [`retention::ROUND`](super::retention::ROUND) rows.
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn prune(&self, keep: &super::retention::Retention) -> Result<super::retention::Pruned> {
        use super::retention;
        let mut pruned = retention::Pruned::default();
        if let Some(before) = &keep.runs_before {
            pruned.instances = self.tx(|c| retention::instances(c, before))?;
        }
        pruned.plans = self.tx(retention::plans)?;
        if let Some(before) = &keep.runs_before {
            pruned.audit = self.tx(|c| super::audit::prune(c, before))?;
        }
        if let Some(before) = &keep.logs_before {
            pruned.logs = self.tx(|c| retention::logs(c, before))?;
        }
        if let Some(before) = &keep.deploys_before {
            pruned.history = self.tx(|c| retention::history(c, before))?;
        }
        if let Some(before) = &keep.runs_before {
            pruned.notifications = self.tx(|c| retention::notifications(c, before))?;
        }
        Ok(pruned)
    }

    /// Adds user `name` (role, folders) made by `by`, with its first token; false when a
    /// user of that name exists.
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn add_user(
        &self,
        user: (&str, &str, &[String]),
        by: &str,
        token: &super::users::TokenToStore<'_>,
    ) -> Result<bool> {
        self.tx(|c| super::users::add(c, user, by, token))
    }

    /// Changes user `name`; false when there is none.
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn change_user(&self, name: &str, change: &super::users::UserChange<'_>) -> Result<bool> {
        self.tx(|c| super::users::change(c, name, change))
    }

    /// Adds a token to user `name` (with `replace`, revoking its others); false when there
    /// is no such user.
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn add_token(
        &self,
        name: &str,
        by: &str,
        token: &super::users::TokenToStore<'_>,
        replace: bool,
    ) -> Result<bool> {
        self.tx(|c| super::users::add_token(c, name, by, token, replace))
    }

    /// Revokes token `id`; its user, or `None` when there is no such token.
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn revoke_token(&self, id: &str) -> Result<Option<String>> {
        self.tx(|c| super::users::revoke_token(c, id))
    }

    /// Every user with its tokens.
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn users(&self) -> Result<Vec<super::users::UserRow>> {
        self.with(super::users::list)
    }

    /// What admitting a request with token `id` needs.
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn sign_in(&self, id: &str) -> Result<Option<super::users::SignIn>> {
        self.with(|c| super::users::sign_in(c, id))
    }

    /// Records that token `id` was used at `at`.
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn token_used(&self, id: &str, at: &str) -> Result<()> {
        self.tx(|c| super::users::used(c, id, at))
    }

    /// The folder path of each element (`S`, `A`, `F` by id); `None` for one gone.
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn folders_of_elements(&self, elements: &[(char, i64)]) -> Result<Vec<Option<String>>> {
        self.with(|c| super::scope::of_elements(c, elements))
    }

    /// The folder path of each sheet instance `id` ran; `None` for a sheet gone.
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn folders_of_instance(&self, id: i64) -> Result<Vec<(i64, Option<String>)>> {
        self.with(|c| super::scope::of_instance(c, id))
    }

    /// Appends `entry` to the audit.
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn audit(&self, entry: &super::audit::Entry) -> Result<()> {
        self.tx(|c| super::audit::append(c, entry))
    }

    /// The audit's entries `filter` asks for, newest first.
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn audit_list(
        &self,
        filter: &super::audit::Filter,
    ) -> Result<Vec<weft_protocol::commands::AuditEntry>> {
        self.with(|c| super::audit::list(c, filter))
    }

    /// Claims up to `limit` due notifications for `host` until `until` (one transaction;
    /// on PostgreSQL, rows another host is claiming are skipped).
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn claim_notifications(
        &self,
        host: &str,
        now: &str,
        until: &str,
        limit: i64,
    ) -> Result<Vec<super::notifications::Outgoing>> {
        self.tx(|c| super::notifications::claim(c, host, now, until, limit))
    }

    /// Lets go of the claims a stopped process held: `host`'s, or all (`None`).
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn release_notification_claims(&self, host: Option<&str>) -> Result<usize> {
        self.tx(|c| super::notifications::release(c, host))
    }

    /// Marks notification `id` sent; false when `host` no longer held it.
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn notification_sent(&self, id: i64, host: &str, now: &str) -> Result<bool> {
        self.tx(|c| super::notifications::sent(c, id, host, now))
    }

    /// Records a failed send of notification `id`: due again at `next`, or given up.
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn notification_failed(
        &self,
        id: i64,
        host: &str,
        error: &str,
        next: Option<&str>,
    ) -> Result<bool> {
        self.tx(|c| super::notifications::failed(c, id, host, error, next))
    }

    /// When the next pending notification is due.
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn notifications_next_due(&self) -> Result<Option<String>> {
        self.with(super::notifications::next_due)
    }

    /// The actions that read or write table `table` (see `flow::lineage`), writers first.
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn lineage(
        &self,
        table: &str,
        connection: Option<i64>,
        schema: Option<&str>,
        limit: i64,
    ) -> Result<Vec<crate::model::LineageRow>> {
        self.with(|c| super::flow::lineage(c, table, connection, schema, limit))
    }

    /// The other sheets that share tables with sheet `sheet` (see `flow::sheet_links`).
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn sheet_links(
        &self,
        sheet: i64,
        downstream: bool,
        limit: i64,
    ) -> Result<Vec<(i64, String, String, String)>> {
        self.with(|c| super::flow::sheet_links(c, sheet, downstream, limit))
    }

    /// The whole data graph of the repository: every action's reads and writes with its
    /// sheet and folder (see `flow::graph`), at most `limit` lines.
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn lineage_graph(&self, limit: i64) -> Result<Vec<crate::model::LineageRow>> {
        self.with(|c| super::flow::graph(c, limit))
    }

    /// What each of `actions` reads and writes, by the data graph, at most `most` tables of
    /// each and one more when it has more (see `flow::tables_of`).
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn tables_of(&self, actions: &[i64], most: i64) -> Result<Vec<crate::model::FlowRow>> {
        self.with(|c| super::flow::tables_of(c, actions, most))
    }

    /// The notifications `filter` asks for, newest first.
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn list_notifications(
        &self,
        filter: &crate::model::NotificationFilter,
    ) -> Result<Vec<crate::model::Notification>> {
        self.with(|c| super::notifications::list(c, filter))
    }

    /// Every rule `on` late with what it watches.
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn late_watches(&self) -> Result<Vec<super::notifications::LateWatch>> {
        self.with(super::notifications::late_watches)
    }

    /// Whether a run of batch `batch_id` planned from `from` to `to` (wall-clock text)
    /// finished.
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn finished_planned(&self, batch_id: i64, from: &str, to: &str) -> Result<bool> {
        self.with(|c| super::notifications::finished_planned(c, batch_id, from, to))
    }

    /// The unfinished runs (of batch `batch_id`, or any) started before `before` (UTC).
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn running_since(&self, batch_id: Option<i64>, before: &str) -> Result<Vec<(i64, String)>> {
        self.with(|c| super::notifications::running_since(c, batch_id, before))
    }

    /// Records a lateness by `rule` once (one transaction); how many notifications were new.
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn record_late(
        &self,
        event: &super::notifications::Event<'_>,
        batch: &str,
        rule: &super::notifications::RuleDef,
        now: &str,
    ) -> Result<usize> {
        self.tx(|c| super::notifications::record_late(c, event, batch, rule, now))
    }

    /// What a notification of instance `id` tells of it (its first `max` failed actions).
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn run_facts(&self, id: i64, max: i64) -> Result<Option<super::notifications::RunFacts>> {
        self.with(|c| super::notifications::run_facts(c, id, max))
    }

    /// Runs `f` on a read-only view of the deployed state (the [`super::Facts`] a deploy
    /// judges against, outside its transaction).
    ///
    /// # Errors
    ///
    /// What `f` returns.
    pub fn read<R>(&self, f: impl FnOnce(&dyn DeployWriter) -> Result<R>) -> Result<R> {
        self.with(|c| f(&Writer::reader(c)))
    }

    /// Runs `f` in one transaction that no other deploy runs beside (SQLite: `BEGIN
    /// IMMEDIATE` on the one writer; PostgreSQL: an advisory lock). It commits when `f`
    /// returns `Ok((value, true))` and rolls back otherwise, so a rejected or dry-run deploy
    /// changes nothing.
    ///
    /// # Errors
    ///
    /// A repository error from `f`, or from beginning or committing the transaction.
    pub fn write<R>(
        &self,
        by: &str,
        f: impl FnOnce(&dyn DeployWriter) -> Result<(R, bool)>,
    ) -> Result<R> {
        let mut f = Some(f);
        let mut out = None;
        let mut committed = false;
        let new_plans = std::cell::RefCell::new(Vec::new());
        self.backend
            .transaction(Some(postgres::DEPLOY_LOCK), &mut |s| match f.take() {
                Some(f) => {
                    let (value, commit) =
                        f(&Writer::new(s, Some(&self.flow_recorded), Some(&new_plans)).by(by))?;
                    out = Some(value);
                    committed = commit;
                    Ok(commit)
                }
                None => Ok(false),
            })?;
        if committed {
            self.schemas.changed();
        }
        // The plans this deploy committed, parsed for their sheets' first runs (after the
        // commit, outside the deploy's lock), where parsing them at a run would cost it more
        // than a millisecond: a small sheet's plans parse in microseconds, which a deploy
        // would pay for every sheet.
        for (sheet, version, text) in new_plans
            .into_inner()
            .into_iter()
            .filter(|(_, _, text)| committed && text.len() >= PARSED_AT_DEPLOY)
        {
            if let Err(e) = self
                .plans
                .plans(sheet, version, &text, |t| instances::parse_plans(sheet, t))
            {
                tracing::warn!(message = "The plans a deploy stored cannot be read back; its runs will say so.", sheet_id = sheet, error = %e);
            }
        }
        out.ok_or(Error::NotRun("the deploy's transaction"))
    }

    /// How many sheets' plans are kept parsed, and their bytes of text.
    #[cfg(test)]
    pub(crate) fn plans_kept(&self) -> (usize, usize) {
        self.plans.size()
    }

    /// The whole repository as text, in a stable order: tests compare dumps taken before and
    /// after a request to prove that it changed nothing.
    ///
    /// # Errors
    ///
    /// A repository error while reading.
    pub fn dump(&self) -> Result<String> {
        self.backend.dump()
    }
}

impl InstanceStore for Repository {
    fn repository_id(&self) -> Result<String> {
        self.with(instances::repository_id)
    }

    fn create_instance(
        &self,
        new: &NewInstance,
        scheduled: Option<&ScheduledStart>,
        max_waiting: usize,
    ) -> Result<Created> {
        // On PostgreSQL, instances are created one at a time, so that hosts counting the
        // waiting ones at once never pass the limit together.
        self.tx_locked(postgres::INSTANCE_LOCK, |c| {
            // No deploy runs beside on PostgreSQL (deploys hold its lock alone), so that the
            // plans the instance runs are not replaced unseen while it is stored (SQLite's
            // one writer is that lock already).
            if c.dialect() == crate::sql::Dialect::Postgres {
                c.execute(
                    "SELECT pg_advisory_xact_lock_shared(?1)",
                    crate::sql::args![postgres::DEPLOY_LOCK],
                )?;
            }
            let waiting = work::waiting(c)?;
            if waiting >= max_waiting as i64 {
                return Ok(Created::Busy(waiting));
            }
            if let Some(why) = instances::excluded(c, new)? {
                return Ok(Created::Excluded(why));
            }
            // The scheduled batch the instance runs for, whose default retry its actions take.
            let batch_id = match (scheduled, &new.backfill) {
                (Some(s), _) => Some(s.batch_id),
                (None, Some(b)) => c.value::<i64>(
                    "SELECT batch_id FROM backfills WHERE id = ?1",
                    crate::sql::args![b.backfill_id],
                )?,
                (None, None) => None,
            };
            let id = instances::create(c, new, batch_id)?;
            if let Some(b) = &new.backfill
                && !backfills::attach(c, id, b)?
            {
                return Err(Error::Conflict(format!(
                    "start {} of backfill {} began elsewhere, or the backfill has no place free",
                    b.seq, b.backfill_id
                )));
            }
            if let Some(s) = scheduled {
                if !schedules::advance(
                    c,
                    s.batch_id,
                    &s.from,
                    s.from_second,
                    s.next.as_ref(),
                    None,
                )? {
                    return Err(Error::Conflict(format!(
                        "the planned start of batch {} changed while it was being started",
                        s.batch_id
                    )));
                }
                schedules::record_start(c, id, s.batch_id, &s.from, s.late_seconds)?;
            }
            crate::notifications::record(
                c,
                &crate::notifications::Event::Started { instance: id },
                &crate::error::now_utc(),
            )?;
            Ok(Created::Stored(id))
        })
    }

    fn instance(&self, id: i64) -> Result<Option<InstanceRow>> {
        self.with(|c| instances::get(c, id))
    }

    fn create_backfill(
        &self,
        batch: (i64, &str),
        user: &str,
        parallel: i64,
        starts: &[String],
    ) -> Result<i64> {
        self.tx(|c| backfills::create(c, batch, user, parallel, starts))
    }

    fn backfill_pending(&self) -> Result<(Vec<crate::model::PendingStart>, bool)> {
        self.with(backfills::pending)
    }

    fn backfill_failed(&self, start: &crate::model::BackfillStart, error: &str) -> Result<()> {
        self.tx(|c| backfills::fail(c, start, error))
    }

    fn instance_info(&self, id: i64) -> Result<Option<InstanceInfo>> {
        self.with(|c| work::info(c, id))
    }

    fn instance_state(&self, id: i64) -> Result<Option<InstanceState>> {
        self.with(|c| instances::state_of(c, id))
    }

    fn instance_fingerprint(&self, id: i64) -> Result<Option<(InstanceState, u64)>> {
        self.with(|c| instances::fingerprint(c, id))
    }

    fn list_instances(
        &self,
        filter: &crate::model::InstanceFilter,
    ) -> Result<Vec<InstanceSummary>> {
        self.with(|c| instances::list(c, filter))
    }

    fn pause_batch(
        &self,
        id: i64,
        paused: bool,
        by: &str,
    ) -> Result<Option<weft_protocol::commands::BatchPause>> {
        self.tx(|c| crate::schedules::pause(c, id, paused, by))
    }

    fn count_instances(&self, filter: &crate::model::InstanceFilter) -> Result<i64> {
        self.with(|c| instances::count(c, filter))
    }

    fn run_days(
        &self,
        from: &str,
        until: &str,
        batch_id: Option<i64>,
    ) -> Result<Vec<(i64, weft_protocol::commands::RunDay)>> {
        self.with(|c| instances::run_days(c, from, until, batch_id))
    }

    fn run_groups(
        &self,
        filter: &crate::model::InstanceFilter,
    ) -> Result<Vec<weft_protocol::commands::RunGroup>> {
        self.with(|c| instances::run_groups(c, filter))
    }

    fn state_counts(&self) -> Result<crate::model::StateCounts> {
        self.with(instances::counts)
    }

    fn claim(&self, host: &str, limit: usize) -> Result<Vec<Claimed>> {
        let claimed = self.tx(|c| {
            let pinned = work::claim(c, host, limit)?;
            self.with_plans(c, pinned)
        })?;
        self.mark_running(&claimed, None);
        Ok(claimed)
    }

    fn end_action(
        &self,
        host: &str,
        id: i64,
        action: i64,
        attempt: i64,
        end: &ActionEnd<'_>,
        claim: usize,
    ) -> Result<(Ended, Vec<Claimed>)> {
        let (ended, claimed) = self.tx(|c| {
            let ended = work::end(c, host, id, action, attempt, end)?;
            // The claim last: on PostgreSQL it locks action rows after the instance's row,
            // and skips the rows others hold, so it waits for no one.
            let claimed = if ended.recorded && claim > 0 {
                let pinned = work::claim(c, host, claim)?;
                self.with_plans(c, pinned)?
            } else {
                Vec::new()
            };
            Ok((ended, claimed))
        })?;
        // The ended action's instance runs already (or has just ended, and has nothing left
        // to claim).
        self.mark_running(&claimed, Some(id));
        Ok((ended, claimed))
    }

    fn halt(&self, id: i64) -> Result<Halted> {
        self.tx(|c| work::halt(c, id))
    }

    fn halts_asked(&self, ids: &[i64]) -> Result<Vec<i64>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        self.with(|c| work::halts_asked(c, ids))
    }

    fn restart(
        &self,
        id: i64,
        definitions: crate::model::Definitions,
        only: &[i64],
    ) -> Result<Restarted> {
        self.tx(|c| {
            if !only.is_empty() {
                if let Some(refused) = work::not_restartable(c, id)? {
                    return Ok(refused);
                }
                let not = work::not_to_run_again(c, id, only)?;
                if !not.is_empty() {
                    return Ok(Restarted::NotToRunAgain(not));
                }
            }
            if definitions == crate::model::Definitions::Current {
                // No deploy runs beside on PostgreSQL, so that the plans the instance will
                // run are not dropped unseen (SQLite's one writer is that lock already).
                if c.dialect() == crate::sql::Dialect::Postgres {
                    c.execute(
                        "SELECT pg_advisory_xact_lock_shared(?1)",
                        crate::sql::args![postgres::DEPLOY_LOCK],
                    )?;
                }
                if let Some(refused) = work::not_restartable(c, id)? {
                    return Ok(refused);
                }
                let gone = self.not_deployed(c, id, only)?;
                if !gone.is_empty() {
                    return Ok(Restarted::NotDeployed(gone));
                }
            }
            work::restart(c, id, definitions, only)
        })
    }

    fn unfinished(&self) -> Result<Vec<i64>> {
        self.with(instances::unfinished)
    }

    fn recover(&self) -> Result<Vec<i64>> {
        self.tx(instances::recover)
    }

    fn set_unmarked(&self, id: i64, action: i64, connections: &[i64]) -> Result<()> {
        self.with(|c| instances::set_unmarked(c, id, action, connections))
    }

    fn append_log(&self, id: i64, action: i64, lines: &[String]) -> Result<bool> {
        self.with(|c| instances::append_log(c, id, action, lines))
    }

    fn register_host(&self, host: &str, url: &str, slots: usize, process: &str) -> Result<()> {
        self.with(|c| work::register(c, host, url, slots, process))
    }

    fn heartbeat(&self, host: &str, process: &str) -> Result<work::Beat> {
        self.with(|c| work::heartbeat(c, host, process))
    }

    fn host_holder(&self, host: &str) -> Result<Option<work::Holder>> {
        self.with(|c| work::holder(c, host))
    }

    fn leave(&self, host: &str, process: &str) -> Result<()> {
        self.with(|c| work::leave(c, host, process))
    }

    fn hosts(&self) -> Result<Vec<HostRow>> {
        self.with(work::hosts)
    }

    fn take_over(&self, host: &str, lease_ms: i64) -> Result<Vec<Claimed>> {
        self.tx(|c| {
            let pinned = work::take_over(c, host, lease_ms)?;
            self.with_plans(c, pinned)
        })
    }

    fn settled(
        &self,
        host: &str,
        claimed: &Claimed,
        outcome: &Settle,
        note: &str,
        follow: bool,
    ) -> Result<Ended> {
        self.tx(|c| work::settled(c, host, claimed, outcome, note, follow))
    }

    fn running_on(&self, host: &str) -> Result<Vec<Claimed>> {
        self.with(|c| {
            let pinned = work::running_on(c, host)?;
            self.with_plans(c, pinned)
        })
    }
}

/// The size of stored plans from which a deploy keeps them parsed (some 200 actions).
const PARSED_AT_DEPLOY: usize = 64 << 10;

impl SheetStore for Repository {
    fn node(&self, id: i64) -> Result<Option<(i64, i64)>> {
        self.with(|c| instances::node(c, id))
    }

    /// The current version is read first; the text only when the newest plans kept of the
    /// sheet are of another version (or none are).
    fn plans(&self, id: i64) -> Result<Option<(i64, Arc<SheetPlans>)>> {
        let mut known = self.plans.newest(id);
        loop {
            let Some((version, text)) = self.with(|c| instances::plans_text(c, id, known))? else {
                return Ok(None);
            };
            if let Some(text) = text {
                let plans = self
                    .plans
                    .plans(id, version, &text, |t| instances::parse_plans(id, t))?;
                return Ok(Some((version, plans)));
            }
            if let Some(plans) = self.plans.at(id, version) {
                return Ok(Some((version, plans)));
            }
            // Let go meanwhile: read the text.
            known = None;
        }
    }

    fn sheets_below(&self, folder: i64) -> Result<Option<Vec<i64>>> {
        self.with(|c| instances::sheets_below(c, folder))
    }

    fn related_actions(&self, seed: i64, downstream: bool) -> Result<Vec<(i64, i64)>> {
        self.with(|c| super::flow::related(c, seed, downstream))
    }

    fn connection_schemas(&self) -> Result<Arc<std::collections::BTreeMap<i64, String>>> {
        let read = || self.with(instances::connection_schemas);
        // Kept where this server's deploys are the only writers of connections.
        if self.backend.sqlite().is_some() {
            self.schemas.get(read)
        } else {
            read().map(Arc::new)
        }
    }

    fn tree(&self, limit: i64) -> Result<crate::model::Tree> {
        self.with(|c| super::browse::tree(c, limit))
    }

    fn sheet_detail(&self, id: i64) -> Result<Option<crate::model::SheetDetail>> {
        self.with(|c| super::browse::sheet(c, id))
    }

    fn batches(&self) -> Result<Vec<crate::model::BatchItem>> {
        self.with(super::browse::batches)
    }

    fn sheet_runs(&self, id: i64, limit: i64) -> Result<Vec<InstanceSummary>> {
        self.with(|c| instances::of_sheet(c, id, limit))
    }

    fn deploys(
        &self,
        before: Option<i64>,
        limit: i64,
        changes: i64,
    ) -> Result<Vec<crate::model::DeployItem>> {
        self.with(|c| super::browse::deploys(c, before, limit, changes))
    }

    fn history_detail(&self, id: i64) -> Result<Option<crate::model::HistoryDetail>> {
        self.with(|c| super::browse::history_detail(c, id))
    }
}

/// How often a PostgreSQL transaction that met a deadlock or a serialization failure is run
/// in all before its error is given to the caller.
const CONFLICT_TRIES: u32 = 5;

/// Runs `attempt` (a whole transaction) until it passes, fails otherwise than by a conflict
/// with another transaction ([`Error::is_conflict`]), or has run [`CONFLICT_TRIES`] times.
fn again_on_conflict<R>(mut attempt: impl FnMut() -> Result<R>) -> Result<R> {
    let mut tries = 1;
    loop {
        match attempt() {
            Err(e) if e.is_conflict() && tries < CONFLICT_TRIES => {
                tracing::debug!(message = "A repository transaction met another one's locks; running it again.", error = %e, tries);
                // Apart, so that the two do not meet again at once.
                std::thread::sleep(std::time::Duration::from_millis(
                    u64::from(tries) * 5 + u64::from(std::process::id() % 5),
                ));
                tries += 1;
            }
            other => return other,
        }
    }
}

impl PlannedStarts for Repository {
    type Error = Error;

    fn batch_is_running(&self, batch_id: i64) -> Result<bool> {
        self.with(|c| instances::batch_is_running(c, batch_id))
    }

    fn finished_on(&self, batch_id: i64, day: &str) -> Result<bool> {
        self.with(|c| schedules::finished_on(c, batch_id, day))
    }

    fn due_starts(&self, until: &str) -> Result<Vec<StoredStart>> {
        self.with(|c| schedules::due(c, until))
    }

    fn batch_schedule(&self, batch_id: i64) -> Result<Option<StoredStart>> {
        self.with(|c| schedules::batch(c, batch_id))
    }

    fn advance_start(
        &self,
        batch_id: i64,
        from: &str,
        from_second: bool,
        next: Option<&Planned>,
        missed: Option<&weft_core::sched::scheduler::Missed>,
    ) -> Result<bool> {
        // A conflict rolled the move back: as if it had not been there to move.
        match self.tx(|c| schedules::advance(c, batch_id, from, from_second, next, missed)) {
            Err(Error::Conflict(_)) => Ok(false),
            other => other,
        }
    }
}

#[cfg(test)]
mod conflict_tests {
    use super::{CONFLICT_TRIES, again_on_conflict};
    use crate::error::Error;

    fn pg(code: &str) -> Error {
        Error::Postgres {
            sql: "UPDATE instance_actions ...".to_owned(),
            code: Some(code.to_owned()),
            message: format!("SQLSTATE {code}"),
        }
    }

    #[test]
    fn a_deadlock_victim_or_an_unserializable_transaction_runs_again_and_nothing_else_does() {
        for code in ["40P01", "40001"] {
            let mut calls = 0;
            let out = again_on_conflict(|| {
                calls += 1;
                if calls < 3 { Err(pg(code)) } else { Ok(calls) }
            });
            assert_eq!(out.expect("passes the third time"), 3, "{code}");
        }
        let mut calls = 0;
        let out: crate::Result<()> = again_on_conflict(|| {
            calls += 1;
            Err(pg("40P01"))
        });
        assert!(out.is_err_and(|e| e.is_conflict()));
        assert_eq!(calls, CONFLICT_TRIES, "given up after the last try");
        for code in ["23505", "53100", "08006"] {
            let mut calls = 0;
            let out: crate::Result<()> = again_on_conflict(|| {
                calls += 1;
                Err(pg(code))
            });
            assert!(out.is_err());
            assert_eq!(calls, 1, "{code} is not run again");
        }
    }
}
