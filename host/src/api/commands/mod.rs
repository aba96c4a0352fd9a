//! The commands as the server answers them: one file per command, each a [`Handler`] that
//! reads the command's payload at its place and answers it (the payload and answer types
//! are `weft_protocol`'s, one file per command there too). The reading and the answering of
//! a command by its name are made here from the protocol's one list,
//! [`weft_protocol::for_each_command!`], so that a listed command without its file here
//! does not compile, and a name not listed is refused before any payload is read.
//!
//! The commands: `DeployRepository` (SPEC 4.2), `RunElements` (SPEC 4.3), and the
//! monitoring and operation commands of docs/api.md.

mod add_user;
mod advance_clock;
mod backfill_batch;
mod change_user;
mod create_token;
mod delete_objects;
mod deploy_project;
mod deploy_repository;
mod export_repository;
mod get_batch_instance;
mod get_deploy_change;
mod get_lineage;
mod get_lineage_graph;
mod get_sheet;
mod halt_batch_instance;
mod handler;
mod list_audit;
mod list_batch_instances;
mod list_batches;
mod list_deploys;
mod list_hosts;
mod list_notifications;
mod list_plugins;
mod list_run_days;
mod list_run_groups;
mod list_sheets;
mod list_users;
mod next_runs;
mod pause_batch;
mod restart_batch_instance;
mod revoke_token;
mod run_elements;
mod users;
mod wait_batch_instance;
mod who_am_i;

pub use handler::{Call, Handler, Payload};
pub use who_am_i::identity;

use super::error::ApiError;
use super::state::AppState;
use std::sync::Arc;
use weft_dsr::Problems;
use weft_protocol::commands::*;

macro_rules! by_name {
    ($($name:ident),* $(,)?) => {
        /// Reads the payload of the command named `name` (one of
        /// [`COMMANDS`](weft_protocol::COMMANDS)); `None` after its problems are in
        /// `problems`, or for a name not listed.
        pub fn read(name: &str, payload: Payload<'_>, problems: &mut Problems) -> Option<Command> {
            $(
                if name == <$name as Request>::NAME {
                    return <$name as Handler>::read(payload, problems).map(Command::$name);
                }
            )*
            None
        }

        /// Answers `command`: its typed answer as the payload of the reply. A command that
        /// changes something is audited with its outcome.
        pub async fn answer(
            command: Command,
            state: &Arc<AppState>,
            call: &Call,
        ) -> Result<serde_json::Value, ApiError> {
            match command {
                $(Command::$name(r) => {
                    let audited = <$name as Handler>::audited();
                    let what = if audited { r.audit() } else { String::new() };
                    let answer = r.handle(state, call).await;
                    // What changed something, and what was refused; a failure changed
                    // nothing and is in the server's log.
                    let entry = match &answer {
                        Ok(a) if audited => <$name as Handler>::audit_answer(a).map(|made| {
                            let what = if made.is_empty() { what } else { format!("{made}: {what}") };
                            ("done", what)
                        }),
                        Err(e) if audited && refused(e) => Some(("refused", format!("{}: {what}", e.message()))),
                        _ => None,
                    };
                    if let Some((outcome, what)) = entry {
                        super::audit::record(state, &call.caller, <$name as Request>::NAME, outcome, what).await;
                    }
                    to_payload(answer)
                })*
            }
        }
    };
}

weft_protocol::for_each_command!(by_name);

/// Whether `e` refuses the caller (a right missing, outside its folders) rather than fails.
fn refused(e: &ApiError) -> bool {
    matches!(
        e,
        ApiError::NoRight { .. }
            | ApiError::OutsideFolders { .. }
            | ApiError::Deploy(weft_engine::deploy::Error::OutsideFolders(_))
    )
}

/// A command's typed answer as the payload of the reply.
fn to_payload<T: serde::Serialize>(
    result: Result<T, ApiError>,
) -> Result<serde_json::Value, ApiError> {
    serde_json::to_value(result?)
        .map_err(|e| ApiError::internal(format!("an answer could not be written: {e}")))
}
