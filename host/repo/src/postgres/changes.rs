//! The change feed of a PostgreSQL repository: one connection per host that listens on
//! [`CHANGES_CHANNEL`] (the notices schema version 12's triggers send at the commit of any
//! change to instances and their actions, made by any host) and says each to its caller, so
//! that waits wake at a change made on another host instead of polling for it.
//!
//! The feed runs on a thread of its own with a current-thread runtime, reconnecting with a
//! growing pause (up to 30 seconds) when its connection is lost; it says when it is up
//! and when it is down, because notices sent while it is down are lost and its caller must
//! then look for itself. It ends within a quarter second of its [`Feed`] being dropped.

use crate::schema::CHANGES_CHANNEL;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use weft_pg_client::tls::MakeRustlsConnect;
use weft_pg_client::tokio_postgres::{AsyncMessage, Config};

/// How often the feed looks whether it should end.
const LOOK: Duration = Duration::from_millis(250);

/// The longest pause between two tries to connect.
const MOST_PAUSE: Duration = Duration::from_secs(30);

/// What the feed tells its caller.
pub trait Listener: Send + Sync + 'static {
    /// Something of some instance changed (or may have: the feed has just come up, and what
    /// changed while it was down was not said).
    fn changed(&self);
    /// The feed is up (every change from now on is said) or down.
    fn up(&self, up: bool);
}

/// A running feed; it ends when this is dropped.
#[derive(Debug)]
pub struct Feed {
    stop: Arc<AtomicBool>,
}

impl Drop for Feed {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Starts the feed of the repository `config` names.
///
/// # Errors
///
/// When its thread cannot be started.
pub fn listen(
    config: Config,
    tls: MakeRustlsConnect,
    listener: Arc<dyn Listener>,
) -> std::io::Result<Feed> {
    let stop = Arc::new(AtomicBool::new(false));
    let ended = Arc::clone(&stop);
    std::thread::Builder::new()
        .name("weft-changes".to_owned())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(r) => r,
                Err(e) => {
                    tracing::error!(message = "The repository's change feed cannot start; waits look for changes once a second.", error = %e);
                    return;
                }
            };
            runtime.block_on(run(&config, &tls, &*listener, &ended));
        })?;
    Ok(Feed { stop })
}

/// Connects, listens and says what comes, again after each loss, until `stop`.
async fn run(config: &Config, tls: &MakeRustlsConnect, listener: &dyn Listener, stop: &AtomicBool) {
    let mut pause = LOOK;
    while !stop.load(Ordering::SeqCst) {
        match follow(config, tls, listener, stop).await {
            Ok(()) => return,
            Err(e) => {
                listener.up(false);
                tracing::warn!(message = "The repository's change feed is down; waits look for changes once a second until it is back.", error = %e, retry_in_ms = pause.as_millis() as u64);
            }
        }
        let until = tokio::time::Instant::now() + pause;
        while tokio::time::Instant::now() < until && !stop.load(Ordering::SeqCst) {
            tokio::time::sleep(LOOK).await;
        }
        pause = (pause * 2).min(MOST_PAUSE);
    }
}

/// One connection's life: `LISTEN`, then every notice said, until `stop` (`Ok`) or the
/// connection's end (`Err`, said).
async fn follow(
    config: &Config,
    tls: &MakeRustlsConnect,
    listener: &dyn Listener,
    stop: &AtomicBool,
) -> Result<(), String> {
    let (client, mut connection) = config
        .connect(tls.clone())
        .await
        .map_err(|e| weft_pg_client::describe_error(&e))?;
    let listen = format!("LISTEN {CHANGES_CHANNEL}");
    let listened = client.batch_execute(&listen);
    tokio::pin!(listened);
    let mut listening = false;
    loop {
        if stop.load(Ordering::SeqCst) {
            return Ok(());
        }
        tokio::select! {
            done = &mut listened, if !listening => {
                done.map_err(|e| weft_pg_client::describe_error(&e))?;
                listening = true;
                listener.up(true);
                // What changed before the feed was up was not said.
                listener.changed();
            }
            message = std::future::poll_fn(|cx| connection.poll_message(cx)) => match message {
                Some(Ok(AsyncMessage::Notification(_))) => listener.changed(),
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(weft_pg_client::describe_error(&e)),
                None => return Err("the server closed the connection".to_owned()),
            },
            () = tokio::time::sleep(LOOK) => {}
        }
    }
}
