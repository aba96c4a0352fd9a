//! Where a HOME's repository is, decided in one place for the server and `weft schema`: the
//! PostgreSQL database of key file entry 0 when its type is `postgresql`, else the SQLite
//! file `HOME/repository.db`.

use super::error::Result;
use super::postgres::{Entry, Postgres};
use super::repository::Repository;
use super::schema::Upgrade;
use std::path::{Path, PathBuf};
use weft_core::keys::KeyFile;

/// The name of the SQLite repository in HOME.
pub const FILE_NAME: &str = "repository.db";

/// Where a HOME's repository is.
#[derive(Debug, Clone)]
pub enum Place {
    /// The SQLite file (which may not exist yet).
    File(PathBuf),
    /// The PostgreSQL database of key file entry 0.
    Postgres(Entry),
}

impl Place {
    /// HOME's repository, by its key file `keys` (when there is one). Entry 0's password
    /// comes from its secret store's program, when it names one, now (once a start).
    ///
    /// # Errors
    ///
    /// When that program fails.
    pub fn of(home: &Path, keys: Option<&KeyFile>) -> Result<Place> {
        Ok(match keys.map(Entry::of).transpose()?.flatten() {
            Some(entry) => Place::Postgres(entry),
            None => Place::File(home.join(FILE_NAME)),
        })
    }

    /// Whether it is a file that does not exist yet (opening it makes a new repository).
    pub fn is_missing_file(&self) -> bool {
        matches!(self, Place::File(path) if !path.exists())
    }

    /// Opens it (creating a missing file) and brings its schema to the current version.
    ///
    /// # Errors
    ///
    /// When it cannot be opened or reached, its schema is newer than this program's, or a
    /// migration fails.
    pub fn open(&self) -> Result<Repository> {
        match self {
            Place::File(path) => Repository::open(path),
            Place::Postgres(entry) => Repository::open_postgres(entry),
        }
    }

    /// Its schema version, changing nothing (`None`: a file that does not exist yet), with
    /// where it is for messages.
    ///
    /// # Errors
    ///
    /// When it cannot be read or reached.
    pub fn version(&self) -> Result<(String, Option<i64>)> {
        match self {
            Place::File(path) if !path.exists() => Ok((path.display().to_string(), None)),
            Place::File(path) => Ok((
                path.display().to_string(),
                Some(super::sqlite::schema_version(path)?),
            )),
            Place::Postgres(entry) => {
                let db = Postgres::connect(entry)?;
                Ok((where_on(&db), Some(db.schema_version()?)))
            }
        }
    }

    /// Brings its schema to the current version (creating a missing file), with where it is
    /// for messages.
    ///
    /// # Errors
    ///
    /// When it cannot be opened or reached, its schema is newer than this program's, or a
    /// migration fails.
    pub fn upgrade(&self) -> Result<(String, Upgrade)> {
        match self {
            Place::File(path) => Ok((path.display().to_string(), super::sqlite::upgrade(path)?)),
            Place::Postgres(entry) => {
                let db = Postgres::connect(entry)?;
                Ok((where_on(&db), db.upgrade()?))
            }
        }
    }
}

fn where_on(db: &Postgres) -> String {
    format!("postgresql at {}", db.place())
}
