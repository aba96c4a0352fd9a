//! The query of a test's failures, as dbt writes its generic tests: each row it returns is
//! one failure (a duplicated value and how often, a row with a NULL, a value not accepted,
//! an orphan), and a count of the table for `row_count`.

use crate::spec::{Kind, Spec};
use weft_sdk::Dialect;
use weft_sql_support::{qualified, quote};

/// A string literal.
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// The rows a test looks at: the table, narrowed by `where`.
fn rows(spec: &Spec, table: &str) -> String {
    match &spec.filter {
        Some(w) => format!("(SELECT * FROM {table} WHERE {w})"),
        None => table.to_owned(),
    }
}

/// The query of the failures of `spec` on `table` (written as SQL already); `None` for
/// `row_count` and `no_rows` (`query` is the action's own).
pub fn failures(spec: &Spec, dialect: Dialect, table: &str) -> Option<String> {
    let q = |c: &str| quote(dialect, c);
    let from = rows(spec, table);
    Some(match &spec.kind {
        Kind::Unique(cols) => {
            let list = cols.iter().map(|c| q(c)).collect::<Vec<_>>().join(", ");
            let not_null = cols
                .iter()
                .map(|c| format!("{} IS NOT NULL", q(c)))
                .collect::<Vec<_>>()
                .join(" AND ");
            format!(
                "SELECT {list}, COUNT(*) AS n FROM {from} t WHERE {not_null} GROUP BY {list} HAVING COUNT(*) > 1"
            )
        }
        Kind::NotNull(cols) => {
            let any_null = cols
                .iter()
                .map(|c| format!("{} IS NULL", q(c)))
                .collect::<Vec<_>>()
                .join(" OR ");
            format!("SELECT * FROM {from} t WHERE {any_null}")
        }
        Kind::AcceptedValues(c, values) => {
            let list = values
                .iter()
                .map(|v| literal(v))
                .collect::<Vec<_>>()
                .join(", ");
            format!(
                "SELECT {c}, COUNT(*) AS n FROM {from} t WHERE {c} IS NOT NULL AND {c} NOT IN ({list}) GROUP BY {c}",
                c = q(c)
            )
        }
        Kind::Relationships(c, (schema, parent), pc) => {
            let parent = qualified(dialect, schema.as_deref(), parent);
            format!(
                "SELECT child.{c} FROM {from} child LEFT JOIN {parent} parent ON child.{c} = parent.{pc} WHERE child.{c} IS NOT NULL AND parent.{pc} IS NULL",
                c = q(c),
                pc = q(pc)
            )
        }
        Kind::RowCount(..) | Kind::NoRows => return None,
    })
}

/// How many rows `query` returns.
pub fn count(query: &str) -> String {
    // On lines of its own: a `--` comment ending the query cannot swallow the parenthesis.
    format!("SELECT COUNT(*) FROM (\n{query}\n) f")
}

/// The first `n` rows of `query`.
pub fn first(query: &str, dialect: Dialect, n: u32) -> String {
    match dialect {
        Dialect::MsSql => format!("SELECT TOP {n} * FROM (\n{query}\n) f"),
        _ => format!("SELECT * FROM (\n{query}\n) f LIMIT {n}"),
    }
}

/// How many rows the tested rows are (for `row_count`).
pub fn rows_of(spec: &Spec, table: &str) -> String {
    format!("SELECT COUNT(*) FROM {} t", rows(spec, table))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Severity;

    fn spec(kind: Kind) -> Spec {
        Spec {
            kind,
            table: None,
            filter: None,
            severity: Severity::Error,
        }
    }

    #[test]
    fn dbts_queries_in_the_dialect() {
        let pg = Dialect::Postgres;
        assert_eq!(
            failures(&spec(Kind::Unique(vec!["id".into()])), pg, "\"orders\"").as_deref(),
            Some(
                "SELECT \"id\", COUNT(*) AS n FROM \"orders\" t WHERE \"id\" IS NOT NULL GROUP BY \"id\" HAVING COUNT(*) > 1"
            )
        );
        assert_eq!(
            failures(
                &spec(Kind::AcceptedValues(
                    "s".into(),
                    vec!["a".into(), "it's".into()]
                )),
                pg,
                "o"
            )
            .as_deref(),
            Some(
                "SELECT \"s\", COUNT(*) AS n FROM o t WHERE \"s\" IS NOT NULL AND \"s\" NOT IN ('a', 'it''s') GROUP BY \"s\""
            )
        );
        let mut narrowed = spec(Kind::NotNull(vec!["a".into(), "b".into()]));
        narrowed.filter = Some("day > '2020-01-01'".into());
        assert_eq!(
            failures(&narrowed, pg, "o").as_deref(),
            Some(
                "SELECT * FROM (SELECT * FROM o WHERE day > '2020-01-01') t WHERE \"a\" IS NULL OR \"b\" IS NULL"
            )
        );
        assert_eq!(
            first("SELECT 1 -- one", Dialect::MsSql, 10),
            "SELECT TOP 10 * FROM (\nSELECT 1 -- one\n) f"
        );
    }
}
