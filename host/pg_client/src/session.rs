//! One PostgreSQL session used from a plain thread: tokio-postgres's client and the future
//! that drives its socket, on a current-thread runtime of the session's own, polled together
//! whenever the thread waits for the server ([`Driver::block_on`]).
//!
//! This is what the synchronous `postgres` crate does, with one difference that matters for
//! speed: a caller may wait for many rows in one `block_on` (a whole batch of a `COPY ... TO
//! STDOUT` or of a query's rows), where `postgres`'s readers enter the runtime once per row.

use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::task::Poll;
use std::time::Duration;
use tokio_postgres::types::ToSql;
use tokio_postgres::{CancelToken, Client, Error, SimpleQueryMessage, Statement};
use tokio_postgres_rustls::MakeRustlsConnect;

/// The future that drives a session's socket.
type Driving = Pin<Box<dyn Future<Output = Result<(), Error>> + Send>>;

/// A session: its client, and the runtime and connection future that move its bytes.
pub struct Session {
    client: Option<Client>,
    runtime: tokio::runtime::Runtime,
    connection: Driving,
    ended: bool,
    /// Statements of the caller's own kept prepared ([`Session::kept`]).
    kept: std::collections::HashMap<&'static str, Statement>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Connects as `config` says.
    ///
    /// # Errors
    ///
    /// What went wrong, said: no runtime could be made, or the server cannot be reached or
    /// refuses (PostgreSQL's error with its causes).
    pub fn connect(
        config: &tokio_postgres::Config,
        tls: MakeRustlsConnect,
    ) -> Result<Session, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("no runtime for the connection: {e}"))?;
        let (client, connection) = runtime
            .block_on(config.connect(tls))
            .map_err(|e| crate::describe_error(&e))?;
        Ok(Session {
            client: Some(client),
            runtime,
            connection: Box::pin(connection),
            ended: false,
            kept: std::collections::HashMap::new(),
        })
    }

    /// The client, and a driver that runs futures of it: two borrows that can be held at
    /// once (`let (client, driver) = session.parts();`).
    pub fn parts(&mut self) -> (&Client, Driver<'_>) {
        // `client` is taken only by `drop`.
        let client = self
            .client
            .as_ref()
            .expect("a session has its client until it is dropped");
        (
            client,
            Driver {
                runtime: &self.runtime,
                connection: &mut self.connection,
                ended: &mut self.ended,
            },
        )
    }

    /// `Client::execute`.
    ///
    /// # Errors
    ///
    /// PostgreSQL's.
    pub fn execute(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64, Error> {
        let (client, mut driver) = self.parts();
        driver.block_on(client.execute(sql, params))
    }

    /// `Client::query`.
    ///
    /// # Errors
    ///
    /// PostgreSQL's.
    pub fn query(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>, Error> {
        let (client, mut driver) = self.parts();
        driver.block_on(client.query(sql, params))
    }

    /// `sql` prepared on this session, once: a statement the caller runs often (a catalog
    /// query) is parsed and planned by the server only the first time. The caller says when
    /// the server may have forgotten it ([`Session::forget_kept`], after `DISCARD ALL`).
    ///
    /// # Errors
    ///
    /// PostgreSQL's.
    pub fn kept(&mut self, sql: &'static str) -> Result<Statement, Error> {
        if let Some(st) = self.kept.get(sql) {
            return Ok(st.clone());
        }
        let st = self.prepare(sql)?;
        self.kept.insert(sql, st.clone());
        Ok(st)
    }

    /// Forgets the statements [`Session::kept`] prepared (the server deallocated them).
    pub fn forget_kept(&mut self) {
        self.kept.clear();
    }

    /// `Client::query` of a prepared statement.
    ///
    /// # Errors
    ///
    /// PostgreSQL's.
    pub fn query_prepared(
        &mut self,
        statement: &Statement,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>, Error> {
        let (client, mut driver) = self.parts();
        driver.block_on(client.query(statement, params))
    }

    /// `Client::prepare`.
    ///
    /// # Errors
    ///
    /// PostgreSQL's.
    pub fn prepare(&mut self, sql: &str) -> Result<Statement, Error> {
        let (client, mut driver) = self.parts();
        driver.block_on(client.prepare(sql))
    }

    /// `Client::simple_query`.
    ///
    /// # Errors
    ///
    /// PostgreSQL's.
    pub fn simple_query(&mut self, sql: &str) -> Result<Vec<SimpleQueryMessage>, Error> {
        let (client, mut driver) = self.parts();
        driver.block_on(client.simple_query(sql))
    }

    /// `Client::batch_execute`.
    ///
    /// # Errors
    ///
    /// PostgreSQL's.
    pub fn batch_execute(&mut self, sql: &str) -> Result<(), Error> {
        let (client, mut driver) = self.parts();
        driver.block_on(client.batch_execute(sql))
    }

    /// Whether the connection is gone.
    pub fn is_closed(&self) -> bool {
        self.ended || self.client.as_ref().is_none_or(Client::is_closed)
    }

    /// Whether the connection is gone, after reading what the server sent while nobody
    /// listened (a session idle in a pool learns so that the server ended it: restarted, or
    /// `pg_terminate_backend`). Costs no round trip.
    pub fn is_closed_now(&mut self) -> bool {
        if self.is_closed() {
            return true;
        }
        let connection = &mut self.connection;
        let ended = &mut self.ended;
        self.runtime.block_on(async {
            // The runtime's driver turns once: what came on the socket becomes readable.
            tokio::task::yield_now().await;
            poll_fn(|cx| {
                if connection.as_mut().poll(cx).is_ready() {
                    *ended = true;
                }
                Poll::Ready(())
            })
            .await;
        });
        self.is_closed()
    }

    /// What a cancel request for this session's running statement needs.
    pub fn cancel_token(&self) -> Option<CancelToken> {
        self.client.as_ref().map(Client::cancel_token)
    }
}

impl Drop for Session {
    /// Says goodbye to the server (a dropped client makes the connection send `Terminate`),
    /// waiting at most a second for it.
    fn drop(&mut self) {
        drop(self.client.take());
        if self.ended {
            return;
        }
        let connection = &mut self.connection;
        let _ = self.runtime.block_on(async {
            tokio::time::timeout(Duration::from_secs(1), connection.as_mut()).await
        });
    }
}

/// Runs futures of a session's client while driving its socket.
pub struct Driver<'a> {
    runtime: &'a tokio::runtime::Runtime,
    connection: &'a mut Driving,
    ended: &'a mut bool,
}

impl Driver<'_> {
    /// Runs `f` to its end on this thread; the connection is polled whenever `f` waits, so
    /// `f` may wait for many messages (and call synchronous code between them) in one go.
    /// That code must not use another `Session`: a runtime cannot be entered from inside
    /// another one on the same thread (tokio panics), so a caller hands rows to code that
    /// may write elsewhere after the wait, not inside it.
    /// That code must not use another `Session`: a runtime cannot be entered from inside
    /// another one on the same thread (tokio panics), so a caller hands rows to code that
    /// may write elsewhere after the wait, not inside it.
    ///
    /// # Errors
    ///
    /// `f`'s, or the connection's when it fails first.
    pub fn block_on<T>(&mut self, f: impl Future<Output = Result<T, Error>>) -> Result<T, Error> {
        let mut f = pin!(f);
        let connection = &mut *self.connection;
        let ended = &mut *self.ended;
        self.runtime.block_on(poll_fn(|cx| {
            if !*ended && let Poll::Ready(r) = connection.as_mut().poll(cx) {
                *ended = true;
                r?;
            }
            f.as_mut().poll(cx)
        }))
    }
}
