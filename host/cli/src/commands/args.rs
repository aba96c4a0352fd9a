//! What several subcommands share: the data directory ([`Home`]) and the address and token
//! of a running server ([`Endpoint`]).

use clap::Args;
use std::path::PathBuf;
use weft_core::settings::HomeSource;

/// The data directory the command works on, and where it came from (for messages).
#[derive(Debug, Clone)]
pub struct Home {
    /// The folder.
    pub dir: PathBuf,
    /// `--home`, `$WEFT_HOME`, the installation's default or `./weft-home`.
    pub from: HomeSource,
}

/// The batch instance an operator's subcommand works on, how it prints, and the server.
#[derive(Debug, Clone, Args)]
pub struct OneInstance {
    /// The batch instance.
    #[arg(value_name = "ID")]
    pub id: i64,
    /// Print the answer as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub endpoint: Endpoint,
}

/// Where a running server is and how to prove the right to ask it: the options of every
/// client subcommand.
#[derive(Debug, Clone, Args)]
pub struct Endpoint {
    /// The service endpoint; default the URL of key file entry weft_server, else http://localhost:17491/weft/service.
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// The bearer token of a server listening beyond loopback; default option token of key file entry weft_server.
    #[arg(long, env = "WEFT_TOKEN", hide_env_values = true, value_name = "TOKEN")]
    pub token: Option<String>,
    /// For an https URL: trust only the CA certificates in FILE (PEM), such as a private
    /// CA's; default option ca of key file entry weft_server, else the system's roots.
    #[arg(long, env = "WEFT_CA_FILE", value_name = "FILE")]
    pub ca: Option<std::path::PathBuf>,
}
