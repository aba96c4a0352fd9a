//! `weft lsp`: the language server for editors, over standard input and output
//! ([`crate::lsp`]).

use super::args::Home;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// `weft lsp`'s arguments.
#[derive(Debug, Args)]
pub struct Lsp {
    /// The project's directory (default: the editor's `initializationOptions.project`, else
    /// its workspace).
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    /// A .dsr file deployed before the project, as the server holds it already (the
    /// connections of an environment, say); repeatable.
    #[arg(long = "with", value_name = "FILE")]
    with: Vec<PathBuf>,
    /// Accepted for editors that pass it; standard input and output are the only transport.
    #[arg(long, hide = true)]
    stdio: bool,
}

impl Lsp {
    /// Serves until the editor says `exit`; 0 then, 1 when the connection failed.
    pub fn run(self, home: &Home) -> ExitCode {
        let options = crate::lsp::Options {
            project: self.project,
            with: self.with,
        };
        match crate::lsp::serve(&home.dir, options) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("weft lsp: {e}");
                ExitCode::from(1)
            }
        }
    }
}
