//! weft's service protocol as types: the commands with their payloads, the answers, the
//! state words and the problems, shared by the server and every client so that both sides
//! speak one shape and a change to it is a change to a type.
//!
//! A request is `{command, payload, variableList?}` (SPEC 4.1); [`Command`] is one of them,
//! each payload a struct named for its command, and serialises to that envelope. An answer is
//! `{requestId, payload}` or `{requestId, error}` ([`Answer`]); each command names its answer
//! type through [`Request::Answer`].
//!
//! This crate is a leaf: serde and nothing else, no I/O, no other weft crate. The server's
//! positioned reader of commands (every problem with its line, column and path) lives in the
//! host (`api::protocol::read`), because it reads the host's spanned value tree; the
//! repository reads the browse answers ([`browse`]) in these shapes directly.

pub mod browse;
pub mod commands;
pub mod deploys;
pub mod elements;
pub mod instances;
pub mod plugins;
pub mod problems;
pub mod rights;
pub mod schedules;
pub mod states;

pub use browse::*;
pub use commands::*;
pub use deploys::{IdMap, ObjectKind, Options as DeployOptions, Report as DeployReport, Touched};
pub use elements::{Element, ElementKey, ElementRef, Selection};
pub use instances::{Action as InstanceAction, Instance, Listed};
pub use plugins::*;
pub use problems::{Detail, MAX_DETAILS, Severity};
pub use rights::{Right, Role};
pub use schedules::{NextRuns as NextRunsAnswer, NextStart};
pub use states::{ActionState, InstanceState};

#[cfg(test)]
mod tests;
