//! OpenLineage events sent out: each host's [`Emitter`] takes the run events its actions
//! make (built by the engine, `exec::lineage`) into a bounded queue and POSTs them, one
//! after the other, from a thread of its own, to the configured endpoint (setting
//! `openlineage_url`), so that an action never waits for a lineage server. A refused or
//! failed POST is tried again three times (after 1, 2 and 4 s); an event that still does
//! not go, or finds the queue full, is dropped and counted, with a warning: lineage is
//! watched, not part of the data.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError, sync_channel};
use std::time::Duration;

/// The most events waiting to be sent.
pub const QUEUE: usize = 10_000;
/// How long one POST may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The sender of a host's lineage events.
#[derive(Debug)]
pub struct Emitter {
    queue: SyncSender<String>,
    /// Events given up (queue full, or the endpoint never took them).
    dropped: Arc<AtomicU64>,
    /// Events the endpoint took.
    sent: Arc<AtomicU64>,
}

impl Emitter {
    /// Starts the thread that POSTs events to `url`.
    ///
    /// # Errors
    ///
    /// No thread can be made.
    pub fn start(url: &str) -> Result<Emitter, String> {
        // reqwest's rustls takes the process's crypto provider (ring, as the sender's).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let (queue, events) = sync_channel::<String>(QUEUE);
        let dropped = Arc::new(AtomicU64::new(0));
        let sent = Arc::new(AtomicU64::new(0));
        let (url, lost, done) = (url.to_owned(), Arc::clone(&dropped), Arc::clone(&sent));
        std::thread::Builder::new()
            .name("weft-lineage".to_owned())
            .spawn(move || {
                // Made on this thread: reqwest's blocking client cannot be made (or dropped)
                // on the server's async runtime.
                let client = match reqwest::blocking::Client::builder()
                    .timeout(TIMEOUT)
                    .connect_timeout(TIMEOUT)
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                {
                    Ok(c) => c,
                    Err(e) => {
                        tracing::error!(message = "No HTTP client for OpenLineage events; they are dropped.", error = %e);
                        for _ in events {
                            lost.fetch_add(1, Ordering::Relaxed);
                        }
                        return;
                    }
                };
                for body in events {
                    let mut wait = Duration::from_secs(1);
                    let mut tries = 0;
                    loop {
                        tries += 1;
                        let posted = client
                            .post(&url)
                            .header(reqwest::header::CONTENT_TYPE, "application/json")
                            .header(
                                reqwest::header::USER_AGENT,
                                concat!("weft/", env!("CARGO_PKG_VERSION")),
                            )
                            .body(body.clone())
                            .send()
                            .map_err(|e| e.to_string())
                            .and_then(|r| {
                                if r.status().is_success() {
                                    Ok(())
                                } else {
                                    Err(format!("the endpoint answered {}", r.status()))
                                }
                            });
                        match posted {
                            Ok(()) => {
                                done.fetch_add(1, Ordering::Relaxed);
                                break;
                            }
                            Err(e) if tries > 3 => {
                                lost.fetch_add(1, Ordering::Relaxed);
                                tracing::warn!(message = "An OpenLineage event could not be sent; it is dropped.", error = %e);
                                break;
                            }
                            Err(_) => {
                                std::thread::sleep(wait);
                                wait *= 2;
                            }
                        }
                    }
                }
            })
            .map_err(|e| format!("cannot start the OpenLineage thread: {e}"))?;
        Ok(Emitter {
            queue,
            dropped,
            sent,
        })
    }

    /// Queues one event (its JSON text); dropped and counted when the queue is full.
    pub fn emit(&self, event: String) {
        match self.queue.try_send(event) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// How many events were sent and how many dropped so far.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.sent.load(Ordering::Relaxed),
            self.dropped.load(Ordering::Relaxed),
        )
    }
}
