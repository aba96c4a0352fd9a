//! A test's attributes read and checked: its kind, the table and columns it looks at, what
//! its kind needs more (`values`, `to`, `min`, `max`) and its severity. Each problem names
//! the attribute it is about.

use weft_sdk::Problem;

/// What a test looks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// No two rows with the same values of the columns (NULLs left out).
    Unique(Vec<String>),
    /// No NULL in any of the columns.
    NotNull(Vec<String>),
    /// No value of the column outside the list (NULLs left out).
    AcceptedValues(String, Vec<String>),
    /// Every value of the column is one of the parent's column (NULLs left out):
    /// `(column, parent table (schema, name), parent column)`.
    Relationships(String, (Option<String>, String), String),
    /// The table holds from `min` to `max` rows.
    RowCount(Option<i64>, Option<i64>),
    /// The action's query returns no row.
    NoRows,
}

/// How a failed test counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// The action fails: the readers of the table are skipped.
    Error,
    /// The action finishes, its log says what failed.
    Warn,
}

/// A test as its attributes ask for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    /// What it looks for.
    pub kind: Kind,
    /// The table it tests, `(schema, name)`, when named (`table`); else its first source.
    pub table: Option<(Option<String>, String)>,
    /// A condition that narrows the rows tested (`where`).
    pub filter: Option<String>,
    /// How a failure counts.
    pub severity: Severity,
}

/// The kinds, as `test` names them.
pub const KINDS: &str = "unique, not_null, accepted_values, relationships, row_count or no_rows";

/// A comma-separated list, each entry trimmed, none empty.
fn list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

impl Spec {
    /// Reads the attributes `text` and `integer` answer by name; `has_text`: whether the
    /// action has a query.
    ///
    /// # Errors
    ///
    /// Every problem, each on its attribute.
    pub fn of<'a>(
        text: impl Fn(&str) -> Option<&'a str>,
        integer: impl Fn(&str) -> Option<i64>,
        has_text: bool,
    ) -> Result<Spec, Vec<Problem>> {
        let mut problems = Vec::new();
        let mut wrong = |attribute: &str, message: String| {
            problems.push(Problem::error("Test.attribute", message, None).on_attribute(attribute));
        };
        let columns = text("column").map(list).unwrap_or_default();
        let needs_column = |kind: &str, wrong: &mut dyn FnMut(&str, String)| {
            if columns.is_empty() {
                wrong(
                    "test",
                    format!(
                        "test `{kind}` needs `column`: the column (or columns, comma-separated) it looks at"
                    ),
                );
            }
        };
        let kind_name = text("test").map(str::trim).map(str::to_owned);
        let kind = match kind_name.as_deref() {
            None if has_text => Kind::NoRows,
            None => {
                wrong(
                    "test",
                    format!(
                        "a Test needs `test`: {KINDS} (no_rows, the default, needs the action's query)"
                    ),
                );
                Kind::NoRows
            }
            Some("unique") => {
                needs_column("unique", &mut wrong);
                Kind::Unique(columns.clone())
            }
            Some("not_null") => {
                needs_column("not_null", &mut wrong);
                Kind::NotNull(columns.clone())
            }
            Some("accepted_values") => {
                if columns.len() != 1 {
                    wrong(
                        "column",
                        "test `accepted_values` looks at one column: `column`".into(),
                    );
                }
                let values = text("values").map(list).unwrap_or_default();
                if values.is_empty() {
                    wrong(
                        "test",
                        "test `accepted_values` needs `values`: the values the column may hold, comma-separated".into(),
                    );
                }
                Kind::AcceptedValues(columns.first().cloned().unwrap_or_default(), values)
            }
            Some("relationships") => {
                if columns.len() != 1 {
                    wrong(
                        "column",
                        "test `relationships` looks at one column: `column`".into(),
                    );
                }
                let to = text("to").and_then(|t| {
                    let (table, column) = t.trim().rsplit_once('.')?;
                    Some((
                        weft_sql_support::attribute_table(table)?,
                        column.trim().to_owned(),
                    ))
                });
                if to.is_none() {
                    wrong(
                        if text("to").is_some() { "to" } else { "test" },
                        "test `relationships` needs `to`: the parent's table and column, `table.column` (or `schema.table.column`)".into(),
                    );
                }
                let (parent, column) = to.unwrap_or_default();
                Kind::Relationships(columns.first().cloned().unwrap_or_default(), parent, column)
            }
            Some("row_count") => {
                let (min, max) = (integer("min"), integer("max"));
                if min.is_none() && max.is_none() {
                    wrong("test", "test `row_count` needs `min`, `max` or both".into());
                }
                if let (Some(a), Some(b)) = (min, max)
                    && a > b
                {
                    wrong("max", format!("`max` ({b}) is below `min` ({a})"));
                }
                Kind::RowCount(min, max)
            }
            Some("no_rows") => {
                if !has_text {
                    wrong(
                        "test",
                        "test `no_rows` needs the action's query (`action` or `file`): the rows it returns are the failures".into(),
                    );
                }
                Kind::NoRows
            }
            Some(other) => {
                wrong(
                    "test",
                    format!("`test: {other}` is not a test; use {KINDS}"),
                );
                Kind::NoRows
            }
        };
        if has_text && kind != Kind::NoRows {
            wrong(
                "test",
                format!(
                    "test `{}` builds its own query: leave out the action's text (a query of your own is test `no_rows`)",
                    kind_name.unwrap_or_default()
                ),
            );
        }
        let table = match text("table") {
            None => None,
            Some(t) => {
                let name = weft_sql_support::attribute_table(t);
                if name.is_none() {
                    wrong(
                        "table",
                        format!("`table: {t}` is not `name` or `schema.name`"),
                    );
                }
                name
            }
        };
        let severity = match text("severity").map(str::trim) {
            None | Some("error") => Severity::Error,
            Some("warn") => Severity::Warn,
            Some(other) => {
                wrong(
                    "severity",
                    format!("`severity: {other}` is not `error` or `warn`"),
                );
                Severity::Error
            }
        };
        let filter = text("where").map(str::to_owned);
        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(Spec {
            kind,
            table,
            filter,
            severity,
        })
    }

    /// The test as its failures name it: `unique(customer_id)`.
    pub fn title(&self) -> String {
        match &self.kind {
            Kind::Unique(c) => format!("unique({})", c.join(", ")),
            Kind::NotNull(c) => format!("not_null({})", c.join(", ")),
            Kind::AcceptedValues(c, v) => format!("accepted_values({c}: {})", v.join(", ")),
            Kind::Relationships(c, (s, t), pc) => format!(
                "relationships({c} -> {}{t}.{pc})",
                s.as_deref().map(|s| format!("{s}.")).unwrap_or_default()
            ),
            Kind::RowCount(min, max) => format!(
                "row_count({}..{})",
                min.map(|m| m.to_string()).unwrap_or_default(),
                max.map(|m| m.to_string()).unwrap_or_default()
            ),
            Kind::NoRows => "no_rows".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(pairs: &[(&str, &str)], has_text: bool) -> Result<Spec, Vec<Problem>> {
        let owned: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let get = |n: &str| owned.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
        Spec::of(
            |n| owned.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str()),
            |n| get(n).and_then(|v| v.parse().ok()),
            has_text,
        )
    }

    #[test]
    fn kinds_read_their_attributes() {
        let s = spec(&[("test", "unique"), ("column", "a, b")], false).expect("ok");
        assert_eq!(s.kind, Kind::Unique(vec!["a".into(), "b".into()]));
        assert_eq!(s.title(), "unique(a, b)");
        let s = spec(
            &[
                ("test", "relationships"),
                ("column", "customer_id"),
                ("to", "dw.customers.id"),
                ("severity", "warn"),
            ],
            false,
        )
        .expect("ok");
        assert_eq!(
            s.kind,
            Kind::Relationships(
                "customer_id".into(),
                (Some("dw".into()), "customers".into()),
                "id".into()
            )
        );
        assert_eq!(s.severity, Severity::Warn);
        assert_eq!(spec(&[], true).expect("ok").kind, Kind::NoRows);
        let s = spec(&[("test", "row_count"), ("min", "1")], false).expect("ok");
        assert_eq!(s.kind, Kind::RowCount(Some(1), None));
        assert_eq!(s.title(), "row_count(1..)");
    }

    #[test]
    fn wrong_attributes_are_named() {
        let on = |r: Result<Spec, Vec<Problem>>| -> Vec<String> {
            r.expect_err("refused")
                .iter()
                .map(|p| format!("{}: {}", p.attribute().unwrap_or(""), p.message()))
                .collect()
        };
        assert!(on(spec(&[], false))[0].starts_with("test: a Test needs `test`"));
        assert!(on(spec(&[("test", "unique")], false))[0].contains("needs `column`"));
        assert!(
            on(spec(&[("test", "accepted_values"), ("column", "s")], false))[0]
                .contains("needs `values`")
        );
        assert!(
            on(spec(
                &[("test", "relationships"), ("column", "s"), ("to", "x")],
                false
            ))[0]
                .starts_with("to: ")
        );
        assert!(
            on(spec(
                &[("test", "row_count"), ("min", "5"), ("max", "1")],
                false
            ))[0]
                .starts_with("max: ")
        );
        assert!(on(spec(&[("test", "no_rows")], false))[0].contains("needs the action's query"));
        assert!(
            on(spec(&[("test", "unique"), ("column", "a")], true))[0]
                .contains("leave out the action's text")
        );
        assert!(
            on(spec(
                &[("test", "unique"), ("column", "a"), ("severity", "fatal")],
                false
            ))[0]
                .starts_with("severity: ")
        );
        assert!(on(spec(&[("test", "uniq")], false))[0].contains("is not a test"));
    }
}
