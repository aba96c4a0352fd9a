//! weft: a server for data transformations.
//!
//! It keeps a repository of worksheets, connections and folders, deploys them from `.dsr`
//! files through one HTTP endpoint or a script, validates them before it accepts them, and
//! runs them as batches through plugins. This crate is the server's library: the service
//! endpoint (`api`) and the server (`server`). It stands on `weft_engine` (validation, runs,
//! deploys), `weft_repo` (the repository), `weft_core` (settings, keys, plugins, plans,
//! schedules, connections), `weft_dsr` (the `.dsr` reader) and `weft_protocol` (the
//! service's types); the `weft` command line over it is `weft_cli`.
//!
//! Data flows one way: a request goes `api` -> `weft_engine::deploy` -> `weft_dsr` (read) ->
//! `weft_engine::validate` -> `weft_repo` (write). `api` never touches SQL, the repository
//! never knows HTTP. See `docs/ARCHITECTURE.md` for the whole picture.

pub mod api;
pub mod server;

/// Makes rustls with ring the process's crypto provider, which every HTTP client (reqwest
/// with rustls) needs before it is built. Idempotent.
pub fn init_tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
