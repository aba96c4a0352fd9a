//! What every request handler shares: the repository, settings, key file, plugins,
//! executor, the rules for `Host` and `Origin`, the failed sign-ins of each client, the
//! users' secrets verified, and the request counter.

use super::error::{ApiError, Reply};
use super::guard;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use weft_core::keys::KeyStore;
use weft_core::settings::Settings;
use weft_repo::Repository;

/// What every request handler shares.
#[derive(Debug)]
pub struct AppState {
    /// The repository.
    pub repo: Arc<Repository>,
    /// Settings in force.
    pub settings: Settings,
    /// The key file; consulted for the token when one is required.
    pub keys: Option<Arc<KeyStore>>,
    /// Whether requests need `Authorization: Bearer TOKEN` (listening beyond loopback, or
    /// `require_token_on_loopback`).
    pub require_token: bool,
    /// The failed sign-ins of each client.
    pub(super) throttle: super::throttle::Throttle,
    /// The users' secrets verified.
    pub(super) verified: super::verified::Verified,
    /// The loaded plugins.
    pub registry: Arc<weft_core::plugins::Registry>,
    /// Runs batch instances.
    pub executor: Arc<weft_engine::exec::batch::Executor>,
    /// Which `Host` and `Origin` name this server.
    pub hosts: guard::HostRules,
    /// Whether the page's session cookie is marked `Secure` (the server speaks TLS).
    pub secure_cookies: bool,
    /// The `WaitBatchInstance` requests in flight: at most a quarter of `max_connections`.
    pub waits: Arc<super::waits::Waits>,
    next_request: AtomicU64,
}

impl AppState {
    /// State for a server. Request ids start from the clock, so they keep growing across
    /// restarts without being stored.
    pub fn new(
        repo: Arc<Repository>,
        settings: Settings,
        keys: Option<Arc<KeyStore>>,
        require_token: bool,
        registry: Arc<weft_core::plugins::Registry>,
        executor: Arc<weft_engine::exec::batch::Executor>,
    ) -> Self {
        let start = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_millis() as u64);
        let hosts = guard::HostRules::new(None, &settings.allowed_hosts, require_token);
        let waits = Arc::new(super::waits::Waits::new(settings.max_connections / 4));
        AppState {
            waits,
            repo,
            settings,
            keys,
            require_token,
            secure_cookies: false,
            throttle: super::throttle::Throttle::default(),
            verified: super::verified::Verified::default(),
            registry,
            executor,
            hosts,
            next_request: AtomicU64::new(start),
        }
    }

    /// The same state for a server listening on `addr` (which `Host` values name it).
    #[must_use]
    pub fn listening_on(mut self, addr: std::net::SocketAddr) -> Self {
        // On loopback `Host` is checked whether or not a token is asked for too
        // (`require_token_on_loopback`): a rebound name is refused before the token is read.
        let beyond = self.require_token && !addr.ip().is_loopback();
        self.hosts = guard::HostRules::new(Some(addr), &self.settings.allowed_hosts, beyond);
        self
    }

    /// The same state for a server that speaks TLS (its session cookie `Secure`).
    #[must_use]
    pub fn over_tls(mut self, tls: bool) -> Self {
        self.secure_cookies = tls;
        self
    }

    pub(super) fn request_id(&self) -> u64 {
        self.next_request.fetch_add(1, Ordering::Relaxed)
    }

    /// The answer to a request refused before it was read.
    pub(super) fn refuse(&self, e: ApiError) -> Response {
        Reply {
            request_id: self.request_id(),
            result: Err(e),
        }
        .into_response()
    }
}
