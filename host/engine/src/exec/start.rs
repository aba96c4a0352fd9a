//! Starting batch instances: `RunElements` (and the scheduler's starts) expanded into
//! actions, ordered by the data they share, and stored with their plans and dependencies
//! in one transaction; halts and restarts asked of an instance.

use super::batch::{Executor, RunRequest, StartError};
use super::expand::{describe_cycle, expand};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use weft_core::plan::{dependencies, dependency_cycle};
use weft_core::sched::scheduler::ScheduledStart;
use weft_repo::model::{Definitions, NewAction, NewInstance, Restarted};
use weft_repo::store::Created;
use weft_repo::work::Halted;
use weft_repo::{self as repo, InstanceStore as _, Repository};

/// How many times a start reads the plans of sheets deployed again meanwhile.
const START_TRIES: usize = 3;

impl Executor {
    /// Expands `req` into actions, orders them, stores the instance, and wakes the worker.
    /// Answers with the instance id at once; the run goes on in the background, on
    /// whichever host has a free slot.
    ///
    /// # Errors
    ///
    /// [`StartError::NotFound`] naming a missing element, [`StartError::Cycle`] naming the
    /// actions and objects of a cycle, [`StartError::Busy`]; nothing is stored then.
    pub fn start(&self, req: RunRequest) -> Result<i64, StartError> {
        self.start_scheduled(req, None)
    }

    /// [`Executor::start`] for a scheduled start: the instance records its batch and planned
    /// start, and the batch's next planned start is written in the same transaction, so
    /// that a kill between the two can neither lose nor repeat a start, and of several
    /// hosts one starts it.
    ///
    /// # Errors
    ///
    /// As [`Executor::start`]; [`repo::Error::Conflict`] (nothing started) when the planned
    /// start changed meanwhile.
    pub fn start_scheduled(
        &self,
        req: RunRequest,
        scheduled: Option<&ScheduledStart>,
    ) -> Result<i64, StartError> {
        let mut tries = 1;
        loop {
            match self.start_once(&req, scheduled, None) {
                // A sheet was deployed again between reading its plans and storing the
                // instance: read the new ones.
                Err(StartError::Repo(repo::Error::Redeployed(sheet))) if tries < START_TRIES => {
                    tracing::debug!(
                        message = "A sheet was deployed again while a run of it started; reading its plans again.",
                        sheet_id = sheet
                    );
                    tries += 1;
                }
                done => return done,
            }
        }
    }

    /// One try of a start: of a scheduled one with `scheduled`, of a backfill's start with
    /// `backfill` (claimed in the transaction that stores the instance).
    pub(super) fn start_once(
        &self,
        req: &RunRequest,
        scheduled: Option<&ScheduledStart>,
        backfill: Option<&weft_repo::model::BackfillStart>,
    ) -> Result<i64, StartError> {
        let began = std::time::Instant::now();
        let dialect = self.dialect_fn();
        let expanded = expand(&*self.repo, &req.elements, req.select, &dialect)?
            .map_err(|e| StartError::NotFound(e.to_string()))?;
        let expanded_at = began.elapsed();
        let plans = &expanded.plans;
        let deps = dependencies(&self.registry, plans);
        if let Some(c) = dependency_cycle(&deps) {
            return Err(StartError::Cycle(describe_cycle(&self.registry, plans, &c)));
        }
        let ordered_at = began.elapsed();
        let held = held_actions(&self.repo, req, &deps, &dialect)?;
        let actions = plans.len();
        let new = NewInstance {
            batch_name: req.batch_name.clone(),
            user: req.user.clone(),
            elements: req.elements.clone(),
            variables: req.variables.clone(),
            actions: expanded
                .plans
                .into_iter()
                .zip(expanded.sheets)
                .zip(expanded.versions)
                .map(|((p, sheet), version)| NewAction {
                    action_id: p.id,
                    sheet_id: sheet,
                    name: p.name,
                    module: p.module,
                    plan_version: version,
                    depends_on: deps.get(&p.id).cloned().unwrap_or_default(),
                    held: held.contains(&p.id),
                    priority: p.priority,
                    retry: p.retry,
                })
                .collect(),
            backfill: backfill.cloned(),
            exclusion: req.exclusion,
        };
        let max = self.max_waiting.load(Ordering::SeqCst);
        match self.repo.create_instance(&new, scheduled, max)? {
            Created::Stored(id) => {
                self.changed();
                // Where a large start spends its time: reading the plans, ordering them,
                // storing the instance.
                let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
                tracing::info!(
                    message = "Batch instance started.",
                    batch_instance_id = id,
                    batch_name = %req.batch_name,
                    actions,
                    expand_ms = ms(expanded_at),
                    order_ms = ms(ordered_at - expanded_at),
                    store_ms = ms(began.elapsed() - ordered_at),
                );
                self.wake.ring();
                Ok(id)
            }
            Created::Excluded(why) => Err(StartError::Excluded(why)),
            Created::Busy(waiting) => Err(StartError::Busy(format!(
                "{waiting} batch instances wait for a free slot already (setting max_waiting_instances = {max}); try again later"
            ))),
        }
    }

    /// Asks an instance to halt: what waits is halted at once, nothing new starts, and its
    /// running actions stop (their running statements interrupted where the connection
    /// allows it, their modules told through the halt signal), are rolled back and recorded
    /// halted; one that commits first is recorded finished. The instance ends halted with
    /// the last of them. Actions running on another host stop at its next look at the
    /// repository.
    ///
    /// # Errors
    ///
    /// [`StartError::NotFound`] or [`StartError::Conflict`] when it is not running.
    pub fn halt(&self, id: i64) -> Result<(), StartError> {
        match self.repo.halt(id)? {
            Halted::NotFound => Err(StartError::NotFound(format!(
                "batch instance {id} does not exist"
            ))),
            Halted::NotRunning(state) => Err(StartError::Conflict(format!(
                "batch instance {id} is {state}, not running"
            ))),
            Halted::Asked { running } => {
                self.changed();
                let halt = self.local().instances.get(&id).map(|(h, _)| Arc::clone(h));
                if let Some(h) = halt {
                    h.raise();
                }
                tracing::info!(
                    message = "Batch instance asked to halt.",
                    batch_instance_id = id,
                    running_actions = running
                );
                Ok(())
            }
        }
    }

    /// Runs again what failed, was skipped, halted or interrupted in an instance that has
    /// ended (with what was skipped because of them); never what finished. `definitions`
    /// says whether each sheet runs its plans deployed now (a fix deployed since) or those
    /// the instance ran; `only`, when not empty, the actions to run again (with what was
    /// skipped or halted because of them). Returns how many actions run again. The check and the reset are one
    /// transaction: two restarts at once, on any hosts, start one run.
    ///
    /// # Errors
    ///
    /// [`StartError::NotFound`], or [`StartError::Conflict`] for a running or finished one,
    /// or one with actions to run again that are no longer deployed.
    pub fn restart(
        &self,
        id: i64,
        definitions: Definitions,
        only: &[i64],
    ) -> Result<usize, StartError> {
        match self.repo.restart(id, definitions, only)? {
            Restarted::NotFound => Err(StartError::NotFound(format!(
                "batch instance {id} does not exist"
            ))),
            Restarted::Finished => Err(StartError::Conflict(format!(
                "batch instance {id} finished; there is nothing to run again"
            ))),
            Restarted::Running => Err(StartError::Conflict(format!(
                "batch instance {id} is still running"
            ))),
            Restarted::NotDeployed(gone) => Err(StartError::Conflict(format!(
                "batch instance {id} cannot run the current definitions: {} no longer deployed; \
                 restart it with asStarted to run the definitions it ran, or start a new run",
                not_deployed(&gone)
            ))),
            Restarted::NotToRunAgain(not) => Err(StartError::Conflict(format!(
                "batch instance {id}: {} did not fail, and {} not skipped, halted or interrupted: there is nothing to run again",
                match not.as_slice() {
                    [one] => format!("action {one}"),
                    _ => format!(
                        "actions {}",
                        not.iter()
                            .map(i64::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                },
                if not.len() == 1 { "was" } else { "were" }
            ))),
            Restarted::Reset(n) => {
                self.changed();
                tracing::info!(
                    message = "Batch instance restarted.",
                    batch_instance_id = id,
                    actions = n
                );
                self.wake.ring();
                Ok(n)
            }
        }
    }
}

/// The actions a restart would run that are no longer deployed, for a message: "action 7
/// of sheet 2, actions 8 and 9 of sheet 3" (the first ten).
fn not_deployed(gone: &[(i64, i64)]) -> String {
    const SHOWN: usize = 10;
    let mut groups: Vec<(i64, Vec<i64>)> = Vec::new();
    for &(sheet, action) in gone.iter().take(SHOWN) {
        match groups.last_mut() {
            Some((s, actions)) if *s == sheet => actions.push(action),
            _ => groups.push((sheet, vec![action])),
        }
    }
    let mut parts: Vec<String> = groups
        .into_iter()
        .map(|(sheet, actions)| {
            let list: Vec<String> = actions.iter().map(i64::to_string).collect();
            match list.split_last() {
                Some((last, init)) if !init.is_empty() => {
                    format!("actions {} and {last} of sheet {sheet}", init.join(", "))
                }
                _ => format!("action {} of sheet {sheet}", list.join("")),
            }
        })
        .collect();
    let more = gone.len().saturating_sub(SHOWN);
    if more > 0 {
        parts.push(format!("{more} more"));
    }
    let verb = if gone.len() == 1 { "is" } else { "are" };
    format!("{} {verb}", parts.join(", "))
}

/// The scheduler starts its batches through the executor.
impl weft_core::sched::scheduler::Starter for Executor {
    type Store = Repository;

    fn store(&self) -> &Repository {
        &self.repo
    }

    fn start_scheduled(
        self: &Arc<Self>,
        due: &weft_core::sched::scheduler::Due,
        scheduled: &ScheduledStart,
    ) -> Result<i64, weft_core::sched::scheduler::NotStarted> {
        use weft_core::sched::scheduler::{NotStarted, USER};
        let req = RunRequest {
            batch_name: due.name.clone(),
            user: USER.to_owned(),
            elements: due.elements.clone(),
            variables: due.variables.clone(),
            select: weft_protocol::Selection::Named,
            held: due.held.clone(),
            exclusion: if due.exclusive {
                weft_repo::model::Exclusion::Batch
            } else {
                weft_repo::model::Exclusion::None
            },
        };
        Executor::start_scheduled(self, req, Some(scheduled)).map_err(|e| match e {
            StartError::Repo(repo::Error::Conflict(_)) => NotStarted::Changed,
            e @ (StartError::Repo(_) | StartError::Busy(_) | StartError::Excluded(_)) => {
                NotStarted::Later(e.to_string())
            }
            e => NotStarted::Never(e.to_string()),
        })
    }
}

/// The actions of `req.held`'s elements and every action that depends on them, directly
/// or through others: they start halted.
fn held_actions(
    repo: &Repository,
    req: &RunRequest,
    deps: &std::collections::BTreeMap<i64, Vec<i64>>,
    dialect: &dyn Fn(i64) -> weft_sdk::Dialect,
) -> Result<std::collections::HashSet<i64>, StartError> {
    let mut held = std::collections::HashSet::new();
    if req.held.is_empty() {
        return Ok(held);
    }
    let seeds = expand(repo, &req.held, weft_protocol::Selection::Named, dialect)?
        .map_err(|e| StartError::NotFound(e.to_string()))?;
    let mut dependents: std::collections::HashMap<i64, Vec<i64>> = std::collections::HashMap::new();
    for (action, on) in deps {
        for d in on {
            dependents.entry(*d).or_default().push(*action);
        }
    }
    let mut todo: Vec<i64> = seeds.plans.iter().map(|p| p.id).collect();
    while let Some(a) = todo.pop() {
        if held.insert(a) {
            todo.extend(dependents.get(&a).into_iter().flatten().copied());
        }
    }
    Ok(held)
}

#[cfg(test)]
mod tests;
