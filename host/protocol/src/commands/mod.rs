//! The commands and their answers as types. Each command has its own file here: its payload
//! (a struct named for it), its answer, and `impl Request` naming the two. The one list of
//! the commands is [`for_each_command!`](crate::for_each_command); [`Command`] (the
//! envelope), its serialisation and [`COMMANDS`] are made from it here, and the server makes
//! its reading and answering of commands from the same list, so that a command cannot be
//! listed on one side and missing on the other.
//!
//! Adding a command: its file here, its name in the list, its file in the host's
//! `api::commands` (how its payload is read and how it is answered), and docs/api.md.

mod add_user;
mod advance_clock;
mod backfill_batch;
mod change_user;
mod create_token;
mod delete_objects;
mod deploy_project;
mod deploy_repository;
mod envelope;
mod export_repository;
mod get_batch_instance;
mod get_deploy_change;
mod get_lineage;
mod get_lineage_graph;
mod get_sheet;
mod halt_batch_instance;
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
mod wait_batch_instance;
mod who_am_i;

pub use add_user::*;
pub use advance_clock::*;
pub use backfill_batch::*;
pub use change_user::*;
pub use create_token::*;
pub use delete_objects::*;
pub use deploy_project::*;
pub use deploy_repository::*;
pub use envelope::*;
pub use export_repository::*;
pub use get_batch_instance::*;
pub use get_deploy_change::*;
pub use get_lineage::*;
pub use get_lineage_graph::*;
pub use get_sheet::*;
pub use halt_batch_instance::*;
pub use list_audit::*;
pub use list_batch_instances::*;
pub use list_batches::*;
pub use list_deploys::*;
pub use list_hosts::*;
pub use list_notifications::*;
pub use list_plugins::*;
pub use list_run_days::*;
pub use list_run_groups::*;
pub use list_sheets::*;
pub use list_users::*;
pub use next_runs::*;
pub use pause_batch::*;
pub use restart_batch_instance::*;
pub use revoke_token::*;
pub use run_elements::*;
pub use wait_batch_instance::*;
pub use who_am_i::*;

use serde::Serialize;
use serde::ser::SerializeMap as _;

/// The one service path: commands are sent as POST to it.
pub const SERVICE_PATH: &str = "/weft/service";

/// The commands, each by its payload type, in the order `--help` texts and errors list them:
/// calls `$then! { DeployRepository, RunElements, ... }` with the payload types (which the
/// caller has in scope, from `weft_protocol::commands`). Everything kept per command (the
/// envelope [`Command`], [`COMMANDS`], the server's reader and its answers) is made from
/// this list, so that a command is listed once.
#[macro_export]
macro_rules! for_each_command {
    ($then:ident) => {
        $then! {
            DeployRepository,
            DeployProject,
            RunElements,
            GetBatchInstance,
            WaitBatchInstance,
            ListBatchInstances,
            ListRunGroups,
            ListRunDays,
            HaltBatchInstance,
            RestartBatchInstance,
            BackfillBatch,
            PauseBatch,
            ListNotifications,
            NextRuns,
            ListPlugins,
            ListHosts,
            ListSheets,
            GetSheet,
            GetLineage,
            GetLineageGraph,
            ListBatches,
            ListDeploys,
            GetDeployChange,
            DeleteObjects,
            ExportRepository,
            AdvanceClock,
            WhoAmI,
            AddUser,
            ListUsers,
            ChangeUser,
            CreateToken,
            RevokeToken,
            ListAudit,
        }
    };
}

/// A command's payload: its name and the type of its answer.
pub trait Request: Into<Command> {
    /// The command's name, as the envelope's `command` says it.
    const NAME: &'static str;
    /// What the caller must be allowed to do to send it.
    const RIGHT: crate::rights::Right;
    /// The answer's payload.
    type Answer: serde::de::DeserializeOwned + Serialize;
}

macro_rules! envelope {
    ($($name:ident),* $(,)?) => {
        /// The commands the server answers, by name.
        pub const COMMANDS: &[&str] = &[$(<$name as Request>::NAME),*];

        /// Each command's name with the right it needs.
        pub const RIGHTS: &[(&str, crate::rights::Right)] =
            &[$((<$name as Request>::NAME, <$name as Request>::RIGHT)),*];

        /// A command with its payload.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Command {
            $(
                #[doc = concat!("`", stringify!($name), "`.")]
                $name($name),
            )*
        }

        impl Command {
            /// The command's name, as the envelope's `command` says it.
            pub fn name(&self) -> &'static str {
                match self {
                    $(Command::$name(_) => <$name as Request>::NAME,)*
                }
            }

            /// What the caller must be allowed to do to send it.
            pub fn right(&self) -> crate::rights::Right {
                match self {
                    $(Command::$name(_) => <$name as Request>::RIGHT,)*
                }
            }

            fn payload<M: serde::ser::SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
                match self {
                    $(Command::$name(p) => map.serialize_entry("payload", p),)*
                }
            }
        }

        $(
            impl From<$name> for Command {
                fn from(p: $name) -> Command {
                    Command::$name(p)
                }
            }
        )*

        /// The payload types' names, for the test that each command's name is its type's.
        #[cfg(test)]
        pub(crate) const TYPE_NAMES: &[&str] = &[$(stringify!($name)),*];
    };
}

for_each_command!(envelope);

/// The envelope `{command, payload, variableList?}`.
impl Serialize for Command {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let variables = match self {
            Command::RunElements(r) if !r.variables.is_empty() => Some(&r.variables),
            _ => None,
        };
        let mut map = s.serialize_map(Some(2 + usize::from(variables.is_some())))?;
        map.serialize_entry("command", self.name())?;
        self.payload(&mut map)?;
        if let Some(v) = variables {
            map.serialize_entry("variableList", v)?;
        }
        map.end()
    }
}
