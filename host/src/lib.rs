//! weft: a server for data transformations.
//!
//! It keeps a repository of worksheets, connections and folders, deploys them from `.dsr`
//! files through one HTTP endpoint or a script, validates them before it accepts them, and
//! (in later versions) runs them as batches through plugins. This crate is the host: the
//! `weft` binary and the library behind it.
//!
//! Data flows one way: a request goes `api` -> `deploy` -> `dsr` (read) -> `validate` ->
//! `repo` (write). `api` never touches SQL, `repo` never knows HTTP. See
//! `docs/ARCHITECTURE.md` for the whole picture.

pub mod api;
pub mod client;
pub mod connect;
pub mod deploy;
pub mod dsr;
pub mod exec;
pub mod fault;
pub mod jdbc_manager;
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
