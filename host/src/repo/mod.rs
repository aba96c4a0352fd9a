//! The repository: what weft keeps (deployed sheets, connections, batches and their planned
//! starts, batch instances and their actions), behind domain-typed stores ([`store`]) over
//! domain types ([`model`]), on two backends: [`sqlite`] (a file in HOME) and [`postgres`]
//! (several hosts on one repository); `docs/ARCHITECTURE.md` says what a backend implements.
//! It knows nothing of HTTP; what the web page browses it reads straight into
//! `weft_protocol`'s answer types (a types-only leaf), and no type of its own is an answer.
//! Callers bring a parsed and validated document.

mod browse;
mod error;
mod facts;
mod flow;
pub(crate) mod instances;
pub mod model;
pub mod postgres;
mod repository;
mod schedules;
pub mod schema;
pub mod sql;
pub mod sqlite;
pub mod store;
pub mod work;
pub(crate) mod writer;

pub use error::{Error, Fault, Result, now_utc};
pub use facts::Facts;
pub use model::{Change, ChangeKind, IdTable, ObjectKind};
pub use repository::Repository;
pub use sqlite::{connect, dump, migrations, schema_version, upgrade};
pub use store::{DeployWriter, InstanceStore, SheetStore};

#[cfg(test)]
mod tests;
