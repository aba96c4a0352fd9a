//! weft: a server for data transformations.
//!
//! It keeps a repository of worksheets, connections and folders, deploys them from `.dsr`
//! files through one HTTP endpoint or a script, validates them before it accepts them, and
//! runs them as batches through plugins. This crate is the host's library: the repository,
//! the engine and the server; the `weft` command line over it is the crate `weft_cli`
//! (`host/cli`), the types of the service protocol the crate `weft_protocol`
//! (`host/protocol`).
//!
//! Data flows one way: a request goes `api` -> `deploy` -> `dsr` (read) -> `validate` ->
//! `repo` (write). `api` never touches SQL, `repo` never knows HTTP. See
//! `docs/ARCHITECTURE.md` for the whole picture.

pub mod api;
pub mod connect;
pub mod deploy;
pub mod exec;
pub mod fault;
pub mod keys;
pub mod metrics;
pub mod plan;
pub mod plugins;
pub mod repo;
pub mod sched;
pub mod server;
pub mod settings;
#[cfg(test)]
pub(crate) mod testing;
pub mod validate;

/// Makes rustls with ring the process's crypto provider, which every HTTP client (reqwest
/// with rustls) needs before it is built. Idempotent.
pub fn init_tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
