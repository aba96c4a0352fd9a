//! The databases' own parsers, asked about text that sqlparser cannot read: PostgreSQL's
//! (libpg_query, the server's grammar built as a library) and SQLite itself (a statement
//! prepared on an empty in-memory database). A syntax error is an error only when the
//! database's parser refuses the text too; what it reads is left to the database ("not
//! checked"), so that a statement the database accepts is never refused at deploy.
//!
//! This copy of SQLite (linked into each SQL plugin) opens in-memory databases only: it
//! never holds a file, so it cannot drop the POSIX locks the host's SQLite holds on one.

use std::ops::Range;
use weft_sdk::Dialect;

/// What the database's own parser says about an action's text (variables masked).
#[derive(Debug, PartialEq, Eq)]
#[cfg_attr(
    not(any(feature = "postgres-parser", feature = "sqlite-parser")),
    allow(dead_code)
)]
pub(crate) enum Judgement {
    /// It refuses the text: its message, and the byte offset of the error when known.
    Refused {
        message: String,
        offset: Option<usize>,
    },
    /// It reads the text, as these statements: each one's place in the text and the tables
    /// it reads as the parser names them (`schema.table` or `table`; empty when not known).
    Read(Vec<(Range<usize>, Vec<String>)>),
}

/// Asks the own parser of `dialect`, when weft has one; `None` when it has none (then a
/// parse failure stays a warning).
pub(crate) fn judge(masked: &str, dialect: Dialect) -> Option<Judgement> {
    let _ = masked;
    match dialect {
        #[cfg(feature = "postgres-parser")]
        Dialect::Postgres => Some(postgres::judge(masked)),
        #[cfg(feature = "sqlite-parser")]
        Dialect::Sqlite => Some(sqlite::judge(masked)),
        _ => None,
    }
}

/// The range `piece` (a slice of `whole`) takes in `whole`.
#[cfg(feature = "postgres-parser")]
fn range_in(whole: &str, piece: &str) -> Range<usize> {
    let start = (piece.as_ptr() as usize).saturating_sub(whole.as_ptr() as usize);
    let start = start.min(whole.len());
    start..(start + piece.len()).min(whole.len())
}

/// `r` without the white space at its ends.
#[cfg(any(feature = "postgres-parser", feature = "sqlite-parser"))]
fn trimmed(text: &str, r: Range<usize>) -> Range<usize> {
    let piece = &text[r.clone()];
    let start = r.start + (piece.len() - piece.trim_start().len());
    start..(r.end - (piece.len() - piece.trim_end().len())).max(start)
}

#[cfg(feature = "postgres-parser")]
mod postgres {
    use super::{Judgement, range_in, trimmed};

    pub(super) fn judge(masked: &str) -> Judgement {
        match pg_query::parse(masked) {
            Ok(_) => {
                let pieces = pg_query::split_with_parser(masked).unwrap_or_else(|_| vec![masked]);
                Judgement::Read(
                    pieces
                        .into_iter()
                        .map(|p| trimmed(masked, range_in(masked, p)))
                        .filter(|r| !r.is_empty())
                        .map(|r| {
                            let reads = pg_query::parse(&masked[r.clone()])
                                .map(|p| p.select_tables())
                                .unwrap_or_default();
                            (r, reads)
                        })
                        .collect(),
                )
            }
            Err(pg_query::Error::Conversion(_)) => Judgement::Refused {
                message: "the text holds a NUL character".to_owned(),
                offset: masked.find('\0'),
            },
            Err(pg_query::Error::Parse(message)) => Judgement::Refused {
                message,
                offset: place(masked),
            },
            Err(e) => Judgement::Refused {
                message: e.to_string(),
                offset: place(masked),
            },
        }
    }

    /// Where PostgreSQL's parser stops (its library keeps the position to itself): the
    /// first statement it refuses on its own, at the place sqlparser stops in it, or else
    /// its start.
    fn place(masked: &str) -> Option<usize> {
        let pieces = pg_query::split_with_scanner(masked).ok()?;
        let bad = pieces.into_iter().find(|p| pg_query::parse(p).is_err())?;
        let r = trimmed(masked, range_in(masked, bad));
        let within = crate::parse(&masked[r.clone()], weft_sdk::Dialect::Postgres)
            .err()
            .and_then(|(_, o)| o)
            .map_or(0, |o| o as usize);
        Some(r.start + within)
    }
}

#[cfg(feature = "sqlite-parser")]
mod sqlite {
    use super::{Judgement, trimmed};
    use std::cell::RefCell;

    thread_local! {
        /// An empty database to prepare statements on, one per thread.
        static EMPTY: RefCell<Option<rusqlite::Connection>> = const { RefCell::new(None) };
    }

    /// What SQLite says of one statement.
    enum One {
        Fine,
        /// A syntax error, at this offset of the statement.
        Syntax(String, Option<usize>),
        /// The statement stops before its end (a trigger's body cut at one of its `;`).
        Incomplete,
    }

    /// Prepares `statement` (never runs it). Errors other than syntax ("no such table": the
    /// database is empty) mean SQLite read it.
    fn prepare(statement: &str) -> One {
        EMPTY.with(|cell| {
            let mut cell = cell.borrow_mut();
            if cell.is_none() {
                *cell = rusqlite::Connection::open_in_memory().ok();
            }
            let Some(db) = cell.as_ref() else {
                return One::Fine;
            };
            match db.prepare(statement) {
                Ok(_) => One::Fine,
                Err(rusqlite::Error::SqlInputError { msg, offset, .. }) => {
                    classify(msg, usize::try_from(offset).ok())
                }
                Err(rusqlite::Error::SqliteFailure(_, Some(msg))) => classify(msg, None),
                Err(_) => One::Fine,
            }
        })
    }

    fn classify(msg: String, offset: Option<usize>) -> One {
        if msg == "incomplete input" {
            One::Incomplete
        } else if msg.ends_with("syntax error") || msg.starts_with("unrecognized token") {
            One::Syntax(msg, offset)
        } else {
            One::Fine
        }
    }

    /// Whether `text` ends a statement in SQLite's eyes (a trigger's body goes on past the
    /// `;` of its statements): `sqlite3_complete`, which reads the text only.
    #[allow(unsafe_code)]
    fn complete(text: &str) -> bool {
        let Ok(c) = std::ffi::CString::new(format!("{text};")) else {
            return true;
        };
        // SAFETY: `c` is a NUL-terminated string that lives across the call;
        // sqlite3_complete only reads it and keeps no pointer to it.
        unsafe { rusqlite::ffi::sqlite3_complete(c.as_ptr()) != 0 }
    }

    pub(super) fn judge(masked: &str) -> Judgement {
        let ranges = crate::statement_ranges(masked, weft_sdk::Dialect::Sqlite);
        let mut out = Vec::new();
        let mut i = 0;
        while i < ranges.len() {
            let start = ranges[i].start;
            let mut j = i;
            while j + 1 < ranges.len() && !complete(&masked[start..ranges[j].end]) {
                j += 1;
            }
            match prepare(&masked[start..ranges[j].end]) {
                One::Fine => {}
                One::Incomplete => {
                    return Judgement::Refused {
                        message: "incomplete input".to_owned(),
                        offset: Some(ranges[j].end),
                    };
                }
                One::Syntax(message, offset) => {
                    return Judgement::Refused {
                        message,
                        offset: Some(start + offset.unwrap_or(0)),
                    };
                }
            }
            out.push((trimmed(masked, start..ranges[j].end), Vec::new()));
            i = j + 1;
        }
        Judgement::Read(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(sql: &str, dialect: Dialect) -> (String, Option<usize>) {
        match judge(sql, dialect) {
            Some(Judgement::Refused { message, offset }) => (message, offset),
            other => panic!("{sql}: {other:?}"),
        }
    }

    fn read(sql: &str, dialect: Dialect) -> Vec<(String, Vec<String>)> {
        match judge(sql, dialect) {
            Some(Judgement::Read(s)) => {
                s.into_iter().map(|(r, t)| (sql[r].to_owned(), t)).collect()
            }
            other => panic!("{sql}: {other:?}"),
        }
    }

    #[cfg(feature = "postgres-parser")]
    #[test]
    fn postgresql_reads_what_it_runs_and_refuses_what_it_refuses() {
        let sql = "DO $$ BEGIN RAISE NOTICE 'x;y'; END $$;\n\
                   CREATE FUNCTION f() RETURNS int BEGIN ATOMIC SELECT 1; SELECT 2; END;\n\
                   COPY t FROM STDIN;\n\
                   SELECT a FROM s WHERE b ~~ 'x%'";
        let r = read(sql, Dialect::Postgres);
        assert_eq!(r.len(), 4, "{r:?}");
        assert!(r[1].0.ends_with("SELECT 2; END"), "{r:?}");
        assert_eq!(r[3].1, vec!["s".to_owned()]);
        let sql = "SELECT 1;\nSELECT a FROM t WHERE x = = 1";
        let (message, offset) = refused(sql, Dialect::Postgres);
        assert_eq!(message, "syntax error at or near \"=\"");
        assert_eq!(&sql[offset.expect("a place")..], "= 1");
    }

    #[cfg(feature = "sqlite-parser")]
    #[test]
    fn sqlite_reads_what_it_runs_and_refuses_what_it_refuses() {
        let sql = "CREATE TRIGGER tr AFTER INSERT ON t BEGIN UPDATE u SET n = n + 1; DELETE FROM v; END;\n\
                   INSERT OR REPLACE INTO nosuch VALUES (1)";
        let r = read(sql, Dialect::Sqlite);
        assert_eq!(r.len(), 2, "{r:?}");
        assert!(r[0].0.ends_with("DELETE FROM v; END"), "{r:?}");
        let sql = "SELECT 1;\nSELECT a FROM t WHERE x = = 1";
        let (message, offset) = refused(sql, Dialect::Sqlite);
        assert_eq!(message, "near \"=\": syntax error");
        assert_eq!(&sql[offset.expect("a place")..], "= 1");
        let (message, _) = refused("SELECT 'open", Dialect::Sqlite);
        assert!(message.starts_with("unrecognized token"), "{message}");
    }

    #[test]
    fn other_databases_have_no_parser_here() {
        assert_eq!(judge("SELEC 1", Dialect::MySql), None);
        assert_eq!(judge("SELEC 1", Dialect::Generic), None);
    }
}
