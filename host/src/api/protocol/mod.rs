//! The service's commands and answers as the server and the client use them: the types are
//! `weft_protocol`'s (re-exported here, so that `api::protocol::X` is the protocol's `X`),
//! and this module adds what needs the host: [`read`], the readers of a request's values on
//! the one positioned reader of `dsr::fields`, every problem with its line, column and path;
//! the instance
//! answers made from the repository's rows ([`instances`]); and `ListPlugins`' answer made
//! from the loaded plugins ([`plugin_list`]). The client writes a command with serde
//! ([`Command`] serialises to the envelope). Nothing here knows HTTP.

pub mod instances;
mod plugins;
pub mod read;

pub use plugins::{module_view, plugin_list};
pub use weft_protocol::commands::*;
pub use weft_protocol::instances::{Action, Instance, Listed};
pub use weft_protocol::plugins::*;

#[cfg(test)]
mod tests;
