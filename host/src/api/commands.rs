//! The commands, each a function from its typed request to its typed answer: `DeployRepository`
//! (SPEC 4.2), `RunElements` (SPEC 4.3) and the project's monitoring and operation commands
//! `GetBatchInstance`, `WaitBatchInstance`, `ListBatchInstances`, `HaltBatchInstance`,
//! `RestartBatchInstance`, `NextRuns` and `AdvanceClock`. The services run on blocking
//! threads; their errors become [`ApiError`]s by `?`.

use super::error::ApiError;
use super::protocol::{
    AdvanceClock, ClockAdvanced, DeployRepository, GetBatchInstance, HaltBatchInstance,
    HaltRequested, HostList, HostView, InstanceList, ListBatchInstances, ListHosts, ListPlugins,
    NextRuns, PluginList, RestartBatchInstance, Restarting, RunElements, ScheduledRun, Started,
    WaitBatchInstance, Waited,
};
use super::protocol::{Instance, Listed};
use super::state::AppState;
use crate::deploy;
use crate::exec::batch::RunRequest;
use crate::repo::InstanceStore;
use crate::repo::store::SheetStore as _;
use crate::sched::{clock, scheduler};
use std::sync::Arc;
use std::time::Duration;

/// `DeployRepository`: validates and writes the content in one transaction.
pub async fn deploy_repository(
    state: &Arc<AppState>,
    request: DeployRepository,
    request_id: u64,
) -> Result<deploy::Report, ApiError> {
    let state = Arc::clone(state);
    let report = tokio::task::spawn_blocking(move || {
        let catalog = crate::validate::PluginCatalog {
            registry: &state.registry,
            keys: state.keys.as_ref().and_then(|k| k.current().ok()),
        };
        deploy::deploy(
            &state.repo,
            &catalog,
            &request.content,
            request.deploy_options,
            state.settings.environment,
        )
    })
    .await?;
    crate::metrics::deployed(match &report {
        Ok(r) if r.dry_run => crate::metrics::Deployed::DryRun,
        Ok(r) if r.created.is_empty() && r.updated.is_empty() && r.deleted.is_empty() => {
            crate::metrics::Deployed::Unchanged
        }
        Ok(_) => crate::metrics::Deployed::Applied,
        Err(deploy::Error::Invalid(_) | deploy::Error::IntoFolderRefused(_)) => {
            crate::metrics::Deployed::Rejected
        }
        Err(_) => crate::metrics::Deployed::Failed,
    });
    let report = report?;
    tracing::info!(
        message = "Deployed.",
        request_id,
        created = report.created.len(),
        updated = report.updated.len(),
        unchanged = report.unchanged.len(),
        dry_run = report.dry_run
    );
    Ok(report)
}

/// `RunElements`: starts an instance and answers with its id at once.
pub async fn run_elements(
    state: &Arc<AppState>,
    request: RunElements,
) -> Result<Started, ApiError> {
    let execution = request.batch_execution;
    let run = RunRequest {
        batch_name: execution.batch_name,
        user: execution.user,
        elements: execution.element_list,
        variables: request
            .variables
            .into_iter()
            .map(|v| (v.name, v.value))
            .collect(),
    };
    let exec = Arc::clone(&state.executor);
    let id = tokio::task::spawn_blocking(move || exec.start(run)).await??;
    Ok(Started {
        batch_instance_id: id,
    })
}

async fn read_instance(state: &Arc<AppState>, id: i64) -> Result<Instance, ApiError> {
    let repo = Arc::clone(state.executor.repo());
    tokio::task::spawn_blocking(move || repo.instance(id))
        .await??
        .map(Instance::from)
        .ok_or(ApiError::NoInstance(id))
}

/// `GetBatchInstance`.
pub async fn get_instance(
    state: &Arc<AppState>,
    request: GetBatchInstance,
) -> Result<Instance, ApiError> {
    read_instance(state, request.batch_instance_id).await
}

/// `WaitBatchInstance`: answers when the run has ended or the time is up (`timedOut`);
/// with `changedFrom`, also as soon as the instance differs from that version. The wait
/// holds one of the server's places for waits, and is woken by the instance's one watcher
/// (`api::waits`), which reads the repository for all its waiters.
pub async fn wait_instance(
    state: &Arc<AppState>,
    request: WaitBatchInstance,
) -> Result<Waited, ApiError> {
    let id = request.batch_instance_id;
    let mut seconds = request
        .timeout_seconds
        .unwrap_or(WaitBatchInstance::DEFAULT_SECONDS)
        .min(WaitBatchInstance::MAX_SECONDS);
    if request.changed_from.is_some() {
        seconds = seconds.min(WaitBatchInstance::MAX_CHANGE_SECONDS);
    }
    let _place = state.waits.enter()?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs_f64(seconds);
    let mut seen = state.waits.watch(&state.executor, id);
    let mut timed_out = false;
    // The watcher may still hold an older read than the one the caller's `changedFrom` came
    // from: one look of the waiter's own settles which is newer.
    if let Some(from) = &request.changed_from {
        let fresh = fingerprint(state, id).await?;
        if let Some((current, version)) = &fresh
            && version == from
            && current.is_ongoing()
        {
            state.waits.saw(id, fresh.clone());
            seen.borrow_and_update();
        }
    }
    let version = loop {
        let now = seen.borrow_and_update().clone();
        match now {
            Some(None) => return Err(ApiError::NoInstance(id)),
            Some(Some((current, version))) => {
                let moved = request
                    .changed_from
                    .as_ref()
                    .is_some_and(|from| *from != version);
                if moved || !current.is_ongoing() || timed_out {
                    break version;
                }
            }
            // Not read yet.
            None if timed_out => break String::new(),
            None => {}
        }
        match tokio::time::timeout_at(deadline, seen.changed()).await {
            Ok(Ok(())) => {}
            // The watcher is gone (it cannot be while this waits); look once more, as at the
            // end of the time.
            Ok(Err(_)) | Err(_) => timed_out = true,
        }
    };
    // Read once for all the waiters that end at this version.
    let (instance, version) = match state.waits.answer(id, &version) {
        Some(known) => ((*known).clone(), version),
        None => {
            let (instance, version) = with_version(state, id, version).await?;
            state
                .waits
                .remember(id, &version, Arc::new(instance.clone()));
            (instance, version)
        }
    };
    let ongoing = instance.summary.state.is_ongoing();
    Ok(Waited {
        timed_out: match &request.changed_from {
            Some(from) => *from == version && ongoing,
            None => timed_out && ongoing,
        },
        instance,
        version,
    })
}

/// Instance `id`'s state and its version as `Waited` answers it (its fingerprint in hex).
async fn fingerprint(
    state: &Arc<AppState>,
    id: i64,
) -> Result<Option<(crate::repo::model::InstanceState, String)>, ApiError> {
    let repo = Arc::clone(state.executor.repo());
    crate::metrics::wait_read();
    Ok(
        tokio::task::spawn_blocking(move || repo.instance_fingerprint(id))
            .await??
            .map(|(s, f)| (s, format!("{f:016x}"))),
    )
}

/// Instance `id` read whole with the version that is its own: `version` (read just before)
/// when the fingerprint is the same after the read, else read again (at most three times;
/// then the version read before the last read, which at worst wakes a follower once more).
async fn with_version(
    state: &Arc<AppState>,
    id: i64,
    mut version: String,
) -> Result<(Instance, String), ApiError> {
    for _ in 0..3 {
        let instance = read_instance(state, id).await?;
        match fingerprint(state, id).await? {
            Some((_, after)) if after == version => return Ok((instance, version)),
            Some((_, after)) => version = after,
            None => return Err(ApiError::NoInstance(id)),
        }
    }
    let instance = read_instance(state, id).await?;
    Ok((instance, version))
}

/// `ListBatchInstances {limit?}`: the most recent instances, newest first.
pub async fn list_instances(
    state: &Arc<AppState>,
    request: ListBatchInstances,
) -> Result<InstanceList, ApiError> {
    let repo = Arc::clone(state.executor.repo());
    let filter = crate::repo::model::InstanceFilter {
        limit: request.limit,
        state: request.state,
        name: request.name,
        before: request.before,
        batch_id: request.batch_id,
    };
    let instances = tokio::task::spawn_blocking(move || repo.list_instances(&filter)).await??;
    Ok(InstanceList {
        instances: instances.into_iter().map(Listed::from).collect(),
    })
}

/// `NextRuns {batchId, count?}`: the next planned starts of a scheduled batch in local time
/// and UTC, with clock changes marked.
pub async fn next_runs(
    state: &Arc<AppState>,
    request: NextRuns,
) -> Result<scheduler::NextRuns, ApiError> {
    let repo = Arc::clone(state.executor.repo());
    let zone = clock::current().zone;
    let id = request.batch_id;
    tokio::task::spawn_blocking(move || scheduler::next_runs(&*repo, id, request.count, zone))
        .await??
        .ok_or(ApiError::NoBatch(id))
}

/// `ListPlugins`: what this server loaded at its start.
pub fn list_plugins(state: &Arc<AppState>, _request: ListPlugins) -> PluginList {
    super::protocol::plugin_list(&state.registry)
}

/// `ListHosts`: the hosts on the repository with their last heartbeat (one, alone on
/// SQLite).
pub async fn list_hosts(state: &Arc<AppState>, _request: ListHosts) -> Result<HostList, ApiError> {
    let repo = Arc::clone(state.executor.repo());
    let hosts = tokio::task::spawn_blocking(move || repo.hosts()).await??;
    Ok(HostList {
        this_host: state.executor.host().to_owned(),
        hosts: hosts
            .into_iter()
            .map(|h| HostView {
                host: h.id,
                url: h.url,
                slots: h.slots,
                started: crate::repo::instances::iso(&h.started_at),
                silent_ms: h.silent_ms.max(0),
                running: h.running,
            })
            .collect(),
    })
}

/// `ListSheets`: every folder and sheet, for the web page's tree.
pub async fn list_sheets(
    state: &Arc<AppState>,
    request: crate::api::protocol::ListSheets,
) -> Result<crate::repo::model::Tree, ApiError> {
    let repo = Arc::clone(state.executor.repo());
    Ok(tokio::task::spawn_blocking(move || repo.tree(request.limit)).await??)
}

/// `ListBatches`: the scheduled batches, for the web page's schedules.
pub async fn list_batches(
    state: &Arc<AppState>,
) -> Result<crate::api::protocol::BatchList, ApiError> {
    let repo = Arc::clone(state.executor.repo());
    let batches = tokio::task::spawn_blocking(move || repo.batches()).await??;
    Ok(crate::api::protocol::BatchList { batches })
}

/// `ListDeploys {limit?, before?, changes?}`: a page of the deploy history, newest first.
pub async fn list_deploys(
    state: &Arc<AppState>,
    request: crate::api::protocol::ListDeploys,
) -> Result<crate::api::protocol::DeployList, ApiError> {
    let repo = Arc::clone(state.executor.repo());
    let deploys = tokio::task::spawn_blocking(move || {
        repo.deploys(request.before, request.limit, request.changes)
    })
    .await??;
    Ok(crate::api::protocol::DeployList { deploys })
}

/// `GetDeployChange {historyId}`: one change of a deploy with the definition it deployed
/// and the one it replaced.
pub async fn get_deploy_change(
    state: &Arc<AppState>,
    request: crate::api::protocol::GetDeployChange,
) -> Result<crate::repo::model::HistoryDetail, ApiError> {
    let id = request.history_id;
    let repo = Arc::clone(state.executor.repo());
    tokio::task::spawn_blocking(move || repo.history_detail(id))
        .await??
        .ok_or(ApiError::NoDeployChange(id))
}

/// `GetSheet {sheetId}`: the sheet as drawn, and its last runs.
pub async fn get_sheet(
    state: &Arc<AppState>,
    request: crate::api::protocol::GetSheet,
) -> Result<crate::api::protocol::SheetView, ApiError> {
    let id = request.sheet_id;
    let repo = Arc::clone(state.executor.repo());
    let (sheet, runs) = tokio::task::spawn_blocking(move || {
        let sheet = repo.sheet_detail(id)?;
        let runs = match sheet {
            Some(_) => repo.sheet_runs(id, crate::api::protocol::SheetView::RUNS)?,
            None => Vec::new(),
        };
        Ok::<_, crate::repo::Error>((sheet, runs))
    })
    .await??;
    Ok(crate::api::protocol::SheetView {
        sheet: sheet.ok_or(ApiError::NoSheet(id))?,
        runs: runs.into_iter().map(Listed::from).collect(),
    })
}

/// `HaltBatchInstance`.
pub async fn halt_instance(
    state: &Arc<AppState>,
    request: HaltBatchInstance,
) -> Result<HaltRequested, ApiError> {
    let id = request.batch_instance_id;
    let exec = Arc::clone(&state.executor);
    tokio::task::spawn_blocking(move || exec.halt(id)).await??;
    Ok(HaltRequested {
        batch_instance_id: id,
        halt_requested: true,
    })
}

/// `RestartBatchInstance`.
pub async fn restart_instance(
    state: &Arc<AppState>,
    request: RestartBatchInstance,
) -> Result<Restarting, ApiError> {
    let id = request.batch_instance_id;
    let exec = Arc::clone(&state.executor);
    let actions_to_run = tokio::task::spawn_blocking(move || exec.restart(id)).await??;
    Ok(Restarting {
        batch_instance_id: id,
        actions_to_run,
    })
}

/// `AdvanceClock {seconds}` or `{to}` (development servers started with `--stepped-clock`):
/// moves the service clock forward, runs one scheduler tick at the new instant, and answers
/// with what the tick started, so that a test knows every start without waiting for one.
pub async fn advance_clock(
    state: &Arc<AppState>,
    request: AdvanceClock,
) -> Result<ClockAdvanced, ApiError> {
    let time = clock::current();
    if !time.clock.is_stepped() {
        return Err(ApiError::ClockNotStepped);
    }
    let to = match request {
        AdvanceClock::By { seconds } => time.clock.now() + chrono::Duration::seconds(seconds),
        AdvanceClock::To { to } => {
            clock::parse_timestamp(&to, time.zone).map_err(ApiError::ClockTime)?
        }
    };
    let now = time.clock.advance(to).map_err(ApiError::ClockBackwards)?;
    let exec = Arc::clone(&state.executor);
    let zone = time.zone;
    let tick = tokio::task::spawn_blocking(move || scheduler::tick(&exec, zone, now)).await??;
    Ok(ClockAdvanced {
        now: now.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        local: clock::wall(now.with_timezone(&zone).naive_local()),
        started: tick
            .started
            .iter()
            .map(|&(batch_id, batch_instance_id)| ScheduledRun {
                batch_id,
                batch_instance_id,
            })
            .collect(),
        passed: tick.passed,
        waiting: tick.waiting,
    })
}
