//! The repository: what weft keeps (deployed sheets, connections, batches and their planned
//! starts, batch instances and their actions), behind domain-typed stores ([`store`]) over
//! domain types ([`model`]), on two backends: [`sqlite`] (a file in HOME) and [`postgres`]
//! (several hosts on one repository); the section below says what a backend implements.
//! It knows nothing of HTTP; what the web page browses it reads straight into
//! `weft_protocol`'s answer types (a types-only leaf), and no type of its own is an answer.
//! Callers bring a parsed and validated document.
//!
//! # The repository layer, and what a backend implements
//!
//! The detail behind docs/ARCHITECTURE.md's map.
//!
//! Nothing outside this crate sees the repository's SQL or its storage formats: of the host's
//! crates only this one and `weft_core` (its `connect`: the native SQLite connection type,
//! which also carries the test helpers other crates' tests use to read SQLite files; the
//! commit markers' statements go to data connections) depend on rusqlite (the host's benches
//! aside). `connect` (a raw connection to a SQLite repository file) serves tests and `weft
//! schema` only. The parts:
//!
//! - `repo::model`: the domain types every backend stores and reads: `InstanceState` and
//!   `ActionState` (`weft_protocol`'s enums, stored and answered as a word and a letter), `NewInstance` and
//!   `NewAction`, `InstanceRow` (typed elements, variables and each action's `ActionPlan`,
//!   which the repository stores as JSON text and reads back), `InstanceSummary` (the
//!   protocol's `Listed`, read straight into the answer), `ActionEnd`, `Change`, `Restarted`,
//!   and `LATE_AFTER_SECONDS` (the scheduler's, re-exported). `api::protocol::instances`
//!   makes `GetBatchInstance`'s answer from them, and `deploy::Touched` the deploy's lists. The browse answers (`Tree`,
//!   `SheetDetail`, `BatchItem`, `DeployItem`, `HistoryDetail`) are `weft_protocol::browse`'s
//!   types, which the repository reads in that shape (`ListSheets`, `GetSheet`, `ListBatches`,
//!   `ListDeploys`, `GetDeployChange`): no type of the repository's own is an answer.
//! - `repo::error`: `Error` (each variant names the statement or the place), `Fault` (what a
//!   client is told: full, I/O, busy, other, from SQLite's codes or PostgreSQL's SQLSTATE),
//!   `Result`, `now_utc`, `stored_time`, `parse_stored_time`.
//! - `repo::store`: the traits callers use. `InstanceStore` (create an instance, with a
//!   scheduled start in the same transaction; read, list, state changes, halt, restart as one
//!   check-and-reset, recovery after a crash, commit-marker bookkeeping), `SheetStore` (the
//!   stored plans of the deployed sheets a run reads when it starts), and the scheduler's
//!   `sched::scheduler::PlannedStarts` (due planned starts, one batch's schedule,
//!   compare-and-set of a planned start, whether a batch runs). Every method is one
//!   transaction; what must happen together is one method.
//! - `repo::Facts` and `repo::DeployWriter`: a deploy's questions and writes inside its one
//!   transaction (`Repository::write`), and `Repository::read` for the questions outside it.
//! - `repo::sql`: the statement layer the backends share. A `Session` (one connection, in a
//!   transaction or not) runs a SQL text with numbered parameters (`?1`, written with `args![]`
//!   from the values the repository stores) and hands back rows of plain `Value`s, read with
//!   `Row::get`. `execute_all` and `first_values` take several statements at once, which the
//!   PostgreSQL session sends before it waits for the first answer (one round trip; SQLite
//!   runs them one by one): a deploy writes a sheet's row, nodes, edges and history line so.
//!   On PostgreSQL a transaction's `BEGIN` (with its advisory lock) goes in the round trip of
//!   its first statements, and `defer_all` writes (the deploy's lines of the data graph) in
//!   that of the `COMMIT`: a one-sheet deploy takes three round trips inside its lock (the
//!   facts it judges, read ahead by `Writer::prefetch`; its writes; the commit).
//!   The store's statements are written once on it, in the SQL that SQLite and
//!   PostgreSQL both read (`INSERT ... RETURNING id` for a new instance, `ON CONFLICT ... DO
//!   UPDATE`, `substr`/`length`, `CASE`): `repo::writer` (the deploy's `Writer`, which is the
//!   `DeployWriter` and answers `Facts`), `repo::instances` and `repo::schedules`.
//! - `repo::Repository`: the one type callers hold, over either backend, chosen in one place
//!   for the server and `weft schema` alike (`repo::Place::of`: the key file's entry 0 of type
//!   `postgresql` puts the repository into that database, else it is `HOME/repository.db`).
//!   It alone implements the store traits, each method running the shared statements on the
//!   backend's `Session` (`with` outside a transaction, `tx` in one), and keeps the sheets'
//!   plans parsed by sheet and version (`repo::plans_cache`: a run reads the current version,
//!   a claim finds its action's plan at the version its instance runs, and a version's text
//!   is read and parsed once while it stays kept); the backend is a
//!   `Box<dyn repo::backend::Backend>`, a trait both backends implement.
//! - `repo::browse`: what the web page reads of the deployed repository (the folder tree, a
//!   sheet with its nodes and edges as drawn, the scheduled batches with their missed starts,
//!   the deploy history), answered through `SheetStore` as `ListSheets`, `GetSheet`,
//!   `ListBatches`, `ListDeploys` and `GetDeployChange`. The deploy's `Writer` makes the
//!   deploy's row in `deploys` at its first real change (so a deploy that changes nothing
//!   writes nothing) and ties every history line to it; `PlannedStarts::advance_start` records
//!   a missed start (`sched::scheduler::Missed`) in the transaction that moves the planned
//!   start on, so that it is recorded once across hosts.
//! - `repo::schema`: the schema's versions (`MIGRATIONS`), the same for both backends, written
//!   in SQLite's SQL; `postgres_ddl` is how PostgreSQL runs a step (integers `BIGINT`, an
//!   `id INTEGER PRIMARY KEY` an identity column, its own random text), so that the two cannot
//!   drift apart; `fill_plans` (version 6) runs on either.
//! - `repo::postgres`: the PostgreSQL backend: `Postgres` (up to 8 idle connections from
//!   `weft_pg_client`, each statement prepared once per connection; `session` binds each
//!   parameter as the type the server inferred and reads a column by its type), `migrations`
//!   (the version in `weft_schema_version`, every upgrade one transaction under an advisory
//!   lock, so hosts starting together upgrade once), a deploy's transaction under the advisory
//!   lock `DEPLOY_LOCK` (deploys never number ids from the same maxima), `dump`. Ids of new
//!   instances and history rows come from identity sequences (`INSERT ... RETURNING id`).
//! - `repo::sqlite`: the SQLite backend: `Sqlite` (one writer connection behind a mutex,
//!   `BEGIN IMMEDIATE` transactions, a background WAL checkpointer; `with`, `tx_if`),
//!   `connect`, `migrations` (the steps of `repo::schema` under `PRAGMA user_version`), `dump`,
//!   `session` (the `Session` on a rusqlite connection: statements prepared once per
//!   connection). `sqlite::testing` lets other modules' tests write and read the repository's
//!   tables as a sheet or a person would.
//!
//! What a backend implements, then (PostgreSQL did): a `Session` on its connections (so the
//! shared statements run on it), the trait `repo::backend::Backend` (a session, a transaction
//! committed or rolled back as its work says, under an advisory lock where a deploy must lock
//! out other deploys, whether a lost deadlock runs again, where it is, its change feed,
//! `dump`), a variant of `repo::Place` that opens it, its `Error` variants with
//! their `fault()`, and how it runs each step of `repo::schema::MIGRATIONS` (PostgreSQL:
//! `postgres_ddl`), under these rules: ids of instances are allocated by the store
//! (SQLite: the row id; PostgreSQL: an identity column), and ids of sheets, nodes and edges
//! renumbered by a deploy are the largest stored id plus one, read inside the deploy's
//! transaction (`DeployWriter::max_id`), which must lock out other deploys (SQLite: the one writer;
//! PostgreSQL: an advisory lock or `LOCK TABLE` in that transaction); times written by the
//! store are its own UTC now as `YYYY-MM-DD HH:MM:SS` (answered as ISO 8601 with `Z`), and
//! planned starts are wall-clock text the caller computed, compared as text (a `T` between
//! date and time counts as a space), so the store does no time-zone arithmetic;
//! `create_instance` with a `ScheduledStart` is one transaction that fails with
//! `Error::Conflict` and stores nothing when the planned start is no longer `from`;
//! `restart` checks and resets in one transaction; errors are classified by `Error::fault`
//! (full, I/O, busy, other) for what a client is told.

pub mod audit;
mod backend;
mod backfills;
mod browse;
mod delete;
mod error;
mod export;
mod facts;
mod flow;
pub mod instances;
pub mod model;
pub mod notifications;
pub mod place;
mod plans_cache;
pub mod postgres;
mod repository;
pub mod retention;
mod schedules;
pub mod schema;
mod schemas_cache;
pub mod scope;
pub mod sql;
pub mod sqlite;
pub mod store;
pub mod users;
pub mod work;
pub(crate) mod writer;

pub use error::{Error, Fault, Result, now_utc, parse_stored_time, stored_time};
pub use facts::{Facts, NotificationRefs};
pub use model::{Change, ChangeKind, IdTable, ObjectKind};
pub use place::Place;
pub use repository::Repository;
pub use sqlite::{connect, dump, migrations, schema_version, upgrade};
pub use store::{DeployWriter, InstanceStore, SheetStore};

#[cfg(test)]
mod tests;
