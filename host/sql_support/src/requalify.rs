//! A SQLite query's tables moved into another schema, in its own text: what a module needs to
//! run a query written for one SQLite file on a connection to which that file is attached
//! (`Transfer` between two SQLite files copies with one `INSERT ... SELECT`, as the `sqlite3`
//! tool does, instead of streaming the rows through the host).
//!
//! Only the names of the tables change: every other byte of the text is kept, so the query
//! means what its author wrote. A query whose tables cannot all be placed with certainty is
//! refused (`None`), and the caller takes its general path.

use sqlparser::ast::{ObjectName, Query, SetExpr, Statement, TableFactor, Visit, Visitor};
use sqlparser::dialect::SQLiteDialect;
use sqlparser::parser::Parser;
use std::ops::{ControlFlow, Range};
use weft_sdk::Dialect;

/// A query whose tables can be moved into another schema ([`requalify`]).
#[derive(Debug, Clone)]
pub struct Requalified {
    text: String,
    /// Where a schema name goes: an insertion before a bare table name (empty range) or the
    /// `main` of a qualified one (its range), in text order.
    places: Vec<Range<usize>>,
    /// The CTE names the query reads, which stay as written.
    ctes: Vec<String>,
}

impl Requalified {
    /// The query with each table read in `schema` (quoted).
    pub fn render(&self, schema: &str) -> String {
        let quoted = crate::quote(Dialect::Sqlite, schema);
        let mut out = String::with_capacity(self.text.len() + self.places.len() * 24);
        let mut copied = 0;
        for place in &self.places {
            out.push_str(&self.text[copied..place.start]);
            if place.is_empty() {
                out.push_str(&quoted);
                out.push('.');
            } else {
                out.push_str(&quoted);
            }
            copied = place.end;
        }
        out.push_str(&self.text[copied..]);
        out
    }

    /// The names of the CTEs the query reads, in lower case: they stay unqualified, so the
    /// caller makes sure no table of the connection it runs on bears one of them.
    pub fn ctes(&self) -> &[String] {
        &self.ctes
    }
}

/// The tables read by the one SQLite query `text` placed for [`Requalified::render`]: bare
/// names and names in `main` move, CTE names and table functions (`json_each(...)`) stay.
/// `None` when `text` is not one query SQLite's dialect of sqlparser reads, when a table
/// names another schema (`temp`, an attached one), when it calls a `pragma_` table function
/// (which would look in the connection's own schema first), or when a name cannot be placed
/// in the text.
pub fn requalify(text: &str) -> Option<Requalified> {
    let statements = Parser::parse_sql(&SQLiteDialect {}, text).ok()?;
    let [Statement::Query(query)] = statements.as_slice() else {
        return None;
    };
    let mut relations = 0usize;
    let _ = sqlparser::ast::visit_relations(query.as_ref(), |_| {
        relations += 1;
        ControlFlow::<()>::Continue(())
    });
    let mut found = Found::default();
    if query.visit(&mut found).is_break() || found.factors != relations {
        return None;
    }
    let mut places = Vec::with_capacity(found.tables.len());
    let mut ctes = Vec::new();
    for name in &found.tables {
        let parts: Vec<_> = name.0.iter().filter_map(|p| p.as_ident()).collect();
        if parts.len() != name.0.len() {
            return None;
        }
        match parts.as_slice() {
            [table] if found.ctes.contains(&table.value.to_lowercase()) => {
                ctes.push(table.value.to_lowercase());
            }
            [table] => {
                let at = byte_offset(text, table.span.start)?;
                places.push(at..at);
            }
            [schema, _] if schema.value.eq_ignore_ascii_case("main") => {
                let start = byte_offset(text, schema.span.start)?;
                let end = byte_offset(text, schema.span.end)?;
                if end <= start || !text[start..end].to_lowercase().contains("main") {
                    return None;
                }
                places.push(start..end);
            }
            _ => return None,
        }
    }
    places.sort_by_key(|r| r.start);
    if places.windows(2).any(|w| w[0].end > w[1].start) {
        return None;
    }
    ctes.sort();
    ctes.dedup();
    Some(Requalified {
        text: text.to_owned(),
        places,
        ctes,
    })
}

/// The byte offset of sqlparser's 1-based line and character column, if it is in `text`.
fn byte_offset(text: &str, at: sqlparser::tokenizer::Location) -> Option<usize> {
    if at.line == 0 {
        return None;
    }
    let offset = crate::offset_of(text, at.line, at.column);
    (offset <= text.len() && text.is_char_boundary(offset)).then_some(offset)
}

/// What the visitor collects: every table factor that names a table (not a table function),
/// every CTE name, and how many table factors with a name it met (tables and functions), to be
/// compared with sqlparser's own count of relations.
#[derive(Default)]
struct Found {
    tables: Vec<ObjectName>,
    ctes: Vec<String>,
    factors: usize,
}

impl Visitor for Found {
    type Break = ();

    fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
        if let Some(with) = &q.with {
            self.ctes.extend(
                with.cte_tables
                    .iter()
                    .map(|c| c.alias.name.value.to_lowercase()),
            );
        }
        // A VALUES list or a nested INSERT is no plain query of tables.
        match q.body.as_ref() {
            SetExpr::Insert(_) | SetExpr::Update(_) | SetExpr::Delete(_) | SetExpr::Merge(_) => {
                ControlFlow::Break(())
            }
            _ => ControlFlow::Continue(()),
        }
    }

    fn pre_visit_table_factor(&mut self, t: &TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table { name, args, .. } = t {
            self.factors += 1;
            if args.is_none() {
                self.tables.push(name.clone());
            } else if name.to_string().to_ascii_lowercase().starts_with("pragma_") {
                // `pragma_table_info('t')` and its kin look in every attached schema, the
                // connection's own first: they would describe the target, not the source.
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moved(text: &str) -> Option<String> {
        requalify(text).map(|r| r.render("src"))
    }

    #[test]
    fn bare_names_and_main_move_into_the_schema_and_the_rest_of_the_text_stays() {
        assert_eq!(
            moved("SELECT a AS x, b FROM t JOIN main.u ON t.k = u.k -- note\nWHERE a > 1")
                .as_deref(),
            Some(
                "SELECT a AS x, b FROM \"src\".t JOIN \"src\".u ON t.k = u.k -- note\nWHERE a > 1"
            )
        );
        assert_eq!(
            moved("select *\n  from \"Odd Name\", [br], `bt`, \"MAIN\".v").as_deref(),
            Some("select *\n  from \"src\".\"Odd Name\", \"src\".[br], \"src\".`bt`, \"src\".v")
        );
    }

    #[test]
    fn tables_in_subqueries_at_any_depth_move() {
        assert_eq!(
            moved("SELECT * FROM (SELECT k FROM t) s WHERE k IN (SELECT k FROM u WHERE EXISTS (SELECT 1 FROM w))").as_deref(),
            Some("SELECT * FROM (SELECT k FROM \"src\".t) s WHERE k IN (SELECT k FROM \"src\".u WHERE EXISTS (SELECT 1 FROM \"src\".w))")
        );
        assert_eq!(
            moved("SELECT k FROM t UNION ALL SELECT k FROM u").as_deref(),
            Some("SELECT k FROM \"src\".t UNION ALL SELECT k FROM \"src\".u")
        );
    }

    #[test]
    fn cte_names_and_table_functions_stay_and_the_ctes_are_named() {
        let r = requalify(
            "WITH Recent AS (SELECT * FROM t) SELECT r.k, j.value FROM recent r, json_each(r.doc) j",
        )
        .expect("a query");
        assert_eq!(
            r.render("src"),
            "WITH Recent AS (SELECT * FROM \"src\".t) SELECT r.k, j.value FROM recent r, json_each(r.doc) j"
        );
        assert_eq!(r.ctes(), ["recent"]);
    }

    #[test]
    fn another_schema_or_no_single_query_is_refused() {
        assert!(moved("SELECT * FROM temp.t").is_none());
        assert!(moved("SELECT * FROM other.t").is_none());
        assert!(moved("SELECT 1; SELECT 2").is_none());
        assert!(moved("INSERT INTO t SELECT * FROM u").is_none());
        assert!(moved("SELECT * FROM").is_none());
    }

    #[test]
    fn places_after_text_of_several_bytes_a_character_are_found() {
        assert_eq!(
            moved("SELECT 'né€' AS x, \"Zürich\".a\nFROM \"Zürich\" WHERE b = 'ü'").as_deref(),
            Some("SELECT 'né€' AS x, \"Zürich\".a\nFROM \"src\".\"Zürich\" WHERE b = 'ü'")
        );
    }

    #[test]
    fn a_pragma_function_is_refused_as_it_would_read_the_target() {
        assert!(moved("SELECT name FROM pragma_table_info('t')").is_none());
        assert!(moved("SELECT k, (SELECT COUNT(*) FROM PRAGMA_INDEX_LIST('t')) FROM t").is_none());
        assert_eq!(
            moved("SELECT name FROM sqlite_master").as_deref(),
            Some("SELECT name FROM \"src\".sqlite_master")
        );
    }

    #[test]
    fn a_query_without_tables_is_kept_whole() {
        assert_eq!(moved("SELECT 1 AS one").as_deref(), Some("SELECT 1 AS one"));
    }

    #[test]
    fn a_schema_name_with_a_quote_is_quoted() {
        assert_eq!(
            requalify("SELECT * FROM t")
                .map(|r| r.render("a\"b"))
                .as_deref(),
            Some("SELECT * FROM \"a\"\"b\".t")
        );
    }
}
