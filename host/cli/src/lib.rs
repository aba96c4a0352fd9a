//! The `weft` command line: one file per subcommand in [`commands`], each a clap argument
//! struct and what it does. The server (`weft serve`) and the schema upgrade (`weft schema`)
//! call the host's library; the clients of a running server (`weft deploy`, `run`,
//! `next-runs`, `hosts`, `plugins --url`) speak to it through `weft_protocol`'s types over
//! HTTP ([`client`]); `weft jdbc` is jdbcManager ([`jdbc_manager`]); `weft keys` and
//! `weft getkey` work on the key file. Exit codes: 0 done, 1 failed, 2 refused (a mistake in
//! the command line or its input), as each subcommand's help says.

pub mod client;
pub mod commands;
pub mod jdbc_manager;

pub use commands::Cli;
