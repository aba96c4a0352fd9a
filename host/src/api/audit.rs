//! Writing the audit (issue 28): every command that changes something with its outcome
//! (`commands::answer`), and every refused attempt (no token or a wrong one, a right or a
//! folder missing). A failure to write is logged and does not fail the request, whose work
//! is done (or refused) by then.

use super::auth::Caller;
use super::state::AppState;
use std::sync::Arc;

/// Appends an entry by `caller` for `command` with `outcome` and `what`.
pub async fn record(
    state: &Arc<AppState>,
    caller: &Caller,
    command: &str,
    outcome: &str,
    what: String,
) {
    let entry = weft_repo::audit::Entry {
        host: state.executor.host().to_owned(),
        user: caller.name.clone(),
        via: caller.via.word(),
        client: caller.client.to_string(),
        command: command.to_owned(),
        outcome: outcome.to_owned(),
        what,
    };
    write(state, entry).await;
}

/// Appends an entry for a request refused before its caller was known (`who`: `none`).
pub async fn refused_unknown(state: &Arc<AppState>, client: std::net::IpAddr, what: String) {
    let entry = weft_repo::audit::Entry {
        host: state.executor.host().to_owned(),
        user: "none".to_owned(),
        via: "none".to_owned(),
        client: client.to_string(),
        command: String::new(),
        outcome: "refused".to_owned(),
        what,
    };
    write(state, entry).await;
}

async fn write(state: &Arc<AppState>, entry: weft_repo::audit::Entry) {
    let repo = Arc::clone(&state.repo);
    let written = tokio::task::spawn_blocking(move || repo.audit(&entry)).await;
    match written {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            tracing::error!(message = "An entry of the audit could not be written.", error = %e);
        }
        Err(e) => {
            tracing::error!(message = "An entry of the audit could not be written.", error = %e);
        }
    }
}
