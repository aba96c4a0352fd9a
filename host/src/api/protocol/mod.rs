//! The service's commands and answers as types, shared by the server (`api`) and the client
//! (`client.rs`), so that both sides speak one shape and a change to it is a change to a type.
//!
//! A request is `{command, payload, variableList?}` (SPEC 4.1); [`Command`] is one of them,
//! each payload a struct named for its command. The server reads a command with [`read`],
//! the positional reader that collects every problem of the body at once with its line,
//! column and path; the client writes one with serde ([`Command`] serialises to the
//! envelope). An answer is `{requestId, payload}` or `{requestId, error}` ([`Answer`]); each
//! command names its payload type through [`Request::Answer`]. Nothing here knows HTTP.

pub mod commands;
pub mod instances;
pub mod read;

pub use commands::*;

#[cfg(test)]
mod tests;
