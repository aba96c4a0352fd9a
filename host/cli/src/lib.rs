//! The `weft` command line: one file per subcommand in [`commands`], each a clap argument
//! struct and what it does. The server (`weft serve`) and the schema upgrade (`weft schema`)
//! call the host's library; the clients of a running server (`weft deploy`, `run`,
//! `next-runs`, `hosts`, `plugins --url`) speak to it through `weft_protocol`'s types over
//! HTTP ([`client`]); `weft jdbc` is jdbcManager ([`jdbc_manager`]); `weft keys` and
//! `weft getkey` work on the key file. Exit codes: 0 done, 1 failed, 2 refused (a mistake in
//! the command line or its input), as each subcommand's help says.
//!
//! # Clients
//!
//! The detail behind docs/ARCHITECTURE.md's map.
//!
//! `weft deploy` is the back end of `bin/deploySheet.sh`: it reads the file (or standard
//! input), sends `DeployRepository`, and prints each problem as
//! `FILE:LINE:COLUMN: message [code]`. It, `weft run`, `next-runs`, `hosts` and
//! `plugins --url` send the typed commands of `weft_protocol` and read the typed answers
//! (`client::Service::call`); `--option` is read by the server's own reader of
//! `deployOptions`, so a bad option is refused before sending, with its place in the option
//! text. The scripts in `bin/` are thin wrappers that find the binary (`$WEFT_BIN`, `weft`
//! beside the script, `target/release/weft`, `target/debug/weft`, `PATH`).

pub mod client;
pub mod commands;
pub mod jdbc_manager;
pub mod lsp;
pub mod offline;
pub mod project;

pub use commands::Cli;
