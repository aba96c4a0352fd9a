//! weft: a server for data transformations.
//!
//! It keeps a repository of worksheets, connections and folders, deploys them from `.dsr`
//! files through one HTTP endpoint or a script, validates them before it accepts them, and
//! runs them as batches through plugins. This crate is the host's library: validation, the
//! executor, deploys and the server. It stands on `weft_repo` (the repository), `weft_core`
//! (settings, keys, plugins, plans, schedules, connections), `weft_dsr` (the `.dsr` reader)
//! and `weft_protocol` (the service's types); the `weft` command line over it is `weft_cli`.
//!
//! Data flows one way: a request goes `api` -> `deploy` -> `weft_dsr` (read) -> `validate`
//! -> `weft_repo` (write). `api` never touches SQL, `repo` never knows HTTP. See
//! `docs/ARCHITECTURE.md` for the whole picture.

pub mod api;
pub mod deploy;
pub mod exec;
pub mod fault;
pub mod server;
#[cfg(test)]
pub(crate) mod testing;
pub mod validate;

/// Makes rustls with ring the process's crypto provider, which every HTTP client (reqwest
/// with rustls) needs before it is built. Idempotent.
pub fn init_tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
