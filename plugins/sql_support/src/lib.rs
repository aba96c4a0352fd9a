//! What the SQL action modules (Sql, Insert, Upsert, Transfer) share.
//!
//! - [`check`]: the validation every SQL module does: `${name}` variables masked by a token
//!   of the same length (so positions stay true), the text parsed with the `sqlparser`
//!   dialect of the connection, a parse error reported with its byte offset in the action
//!   text (an error where the dialect is SQLite, PostgreSQL, MySQL or MS SQL, a warning
//!   elsewhere), and the tables the text reads. The attribute `validateSql: false` skips the
//!   parse.
//! - Identifier quoting and the column matching the modules use at run time.
//!
//! This is a plain library linked into each module's plugin; it is not a plugin itself.

use sqlparser::ast::ObjectName;
pub use sqlparser::ast::Statement;
use sqlparser::dialect::{self as sp, Dialect as SpDialect};
use sqlparser::parser::Parser;
use std::collections::HashMap;
use std::ops::ControlFlow;
use weft_sdk::abi_stable::std_types::{ROption, RString, RVec};
use weft_sdk::{
    AttributeValue, Dialect, PluginError, Problem, TableName, ValidateInput, ValidateOutput,
};

/// Replaces every `${name}` by `v___…` of the same byte length; `$${` (a literal `${`) is
/// left alone.
pub fn mask_variables(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        if b[i] == b'$' && b.get(i + 1) == Some(&b'$') && b.get(i + 2) == Some(&b'{') {
            i += 3;
            continue;
        }
        if b[i] == b'$'
            && b.get(i + 1) == Some(&b'{')
            && let Some(close) = text[i + 2..].find('}')
        {
            let end = i + 2 + close + 1;
            out.push_str(&text[copied..i]);
            out.push('v');
            out.push_str(&"_".repeat(end - i - 1));
            copied = end;
            i = end;
            continue;
        }
        i += 1;
    }
    out.push_str(&text[copied..]);
    out
}

fn sp_dialect(d: Dialect) -> Box<dyn SpDialect> {
    match d {
        Dialect::Sqlite => Box::new(sp::SQLiteDialect {}),
        Dialect::Postgres => Box::new(sp::PostgreSqlDialect {}),
        Dialect::MySql => Box::new(sp::MySqlDialect {}),
        Dialect::MsSql => Box::new(sp::MsSqlDialect {}),
        _ => Box::new(sp::GenericDialect {}),
    }
}

/// The byte offset of a 1-based line and character column in `text`.
pub fn offset_of(text: &str, line: u64, column: u64) -> usize {
    let mut offset = 0;
    for (n, l) in text.split_inclusive('\n').enumerate() {
        if n as u64 + 1 == line {
            let col = column.saturating_sub(1) as usize;
            return offset + l.char_indices().nth(col).map_or(l.len(), |(i, _)| i);
        }
        offset += l.len();
    }
    text.len()
}

/// `(line, column)` of sqlparser's "... at Line: L, Column: C" messages.
fn error_position(message: &str) -> Option<(u64, u64)> {
    let at = message.rfind("Line: ")?;
    let rest = &message[at + 6..];
    let (line, rest) = rest.split_once(", Column: ")?;
    let column: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some((line.trim().parse().ok()?, column.parse().ok()?))
}

/// Parses `sql` (variables masked) in `dialect`.
///
/// # Errors
///
/// The parser's message without its position, and the byte offset of the position.
pub fn parse(sql: &str, dialect: Dialect) -> Result<Vec<Statement>, (String, Option<u32>)> {
    let masked = mask_variables(sql);
    Parser::parse_sql(sp_dialect(dialect).as_ref(), &masked).map_err(|e| {
        let message = e.to_string();
        let offset = error_position(&message).map(|(l, c)| offset_of(&masked, l, c) as u32);
        let clean = message
            .trim_start_matches("sql parser error: ")
            .split(" at Line: ")
            .next()
            .unwrap_or_default()
            .to_owned();
        (clean, offset)
    })
}

/// The parts of a dotted name, each with its line and column when known.
type NameParts = Vec<(String, Option<(u64, u64)>)>;

fn name_parts(name: &ObjectName) -> NameParts {
    name.0
        .iter()
        .filter_map(|p| p.as_ident())
        .map(|i| {
            let loc = i.span.start;
            let pos = (loc.line > 0).then_some((loc.line, loc.column));
            (i.value.clone(), pos)
        })
        .collect()
}

/// The tables `statements` read: every relation they name, less the targets of INSERT,
/// DELETE and CREATE that are not read elsewhere, and less the names of CTEs.
pub fn reads(statements: &[Statement], sql: &str) -> Vec<TableName> {
    let masked = mask_variables(sql);
    let mut seen: Vec<(NameParts, usize)> = Vec::new();
    for st in statements {
        let _ = sqlparser::ast::visit_relations(st, |name| {
            seen.push((name_parts(name), 0));
            ControlFlow::<()>::Continue(())
        });
    }
    let mut written: HashMap<String, usize> = HashMap::new();
    let mut ctes: Vec<String> = Vec::new();
    for s in statements {
        let target = match s {
            Statement::Insert(i) => match &i.table {
                sqlparser::ast::TableObject::TableName(n) => Some(n.clone()),
                _ => None,
            },
            Statement::CreateTable(c) => Some(c.name.clone()),
            Statement::Drop { names, .. } => {
                for n in names {
                    *written.entry(key(&name_parts(n))).or_default() += 1;
                }
                None
            }
            _ => None,
        };
        if let Some(n) = target {
            *written.entry(key(&name_parts(&n))).or_default() += 1;
        }
        let _ = sqlparser::ast::visit_statements(s, |st| {
            if let Statement::Query(q) = st
                && let Some(with) = &q.with
            {
                ctes.extend(
                    with.cte_tables
                        .iter()
                        .map(|c| c.alias.name.value.to_lowercase()),
                );
            }
            ControlFlow::<()>::Continue(())
        });
        if let Statement::Insert(i) = s
            && let Some(src) = &i.source
            && let Some(with) = &src.with
        {
            ctes.extend(
                with.cte_tables
                    .iter()
                    .map(|c| c.alias.name.value.to_lowercase()),
            );
        }
    }
    let mut out = Vec::new();
    let mut emitted: Vec<String> = Vec::new();
    for (parts, _) in seen {
        let k = key(&parts);
        if let Some(n) = written.get_mut(&k)
            && *n > 0
        {
            *n -= 1;
            continue;
        }
        if parts.len() == 1 && ctes.contains(&parts[0].0.to_lowercase()) {
            continue;
        }
        if emitted.contains(&k) {
            continue;
        }
        emitted.push(k);
        let Some((name, pos)) = parts.last().cloned() else {
            continue;
        };
        let schema = (parts.len() >= 2).then(|| parts[parts.len() - 2].0.clone());
        out.push(TableName {
            schema: schema.map(RString::from).into(),
            name: name.into(),
            offset: pos.map(|(l, c)| offset_of(&masked, l, c) as u32).into(),
        });
    }
    out
}

fn key(parts: &[(String, Option<(u64, u64)>)]) -> String {
    parts
        .iter()
        .map(|(p, _)| p.to_lowercase())
        .collect::<Vec<_>>()
        .join(".")
}

/// The validation every SQL module does on its action text, in `dialect`.
pub fn check(input: &ValidateInput, dialect: Dialect) -> ValidateOutput {
    let mut out = ValidateOutput::default();
    let Some(sql) = input
        .action
        .as_ref()
        .into_option()
        .map(|s| s.as_str())
        .filter(|s| !s.trim().is_empty())
    else {
        out.problems.push(Problem::error(
            "sql.missing",
            "the action has no SQL text (`action`)",
            None,
        ));
        return out;
    };
    if matches!(
        input.attribute("validateSql"),
        Some(AttributeValue::Bool(false))
    ) {
        return out;
    }
    match parse(sql, dialect) {
        Ok(statements) => {
            out.reads = RVec::from(reads(&statements, sql));
        }
        Err((message, offset)) => {
            let text = format!("the SQL does not parse as {}: {message}", dialect.name());
            let p = if dialect.parse_errors_are_errors() {
                Problem::error("sql.syntax", text, offset)
            } else {
                Problem::warning("sql.syntax", text, offset)
            };
            out.problems.push(p);
        }
    }
    out
}

/// The problems of the source and target counts `info` allows, for `validate` to add.
pub fn count_problems(
    input: &ValidateInput,
    module: &str,
    min_sources: u32,
    max_sources: u32,
    min_targets: u32,
    max_targets: u32,
) -> Vec<Problem> {
    let mut v = Vec::new();
    let (s, t) = (input.sources.len() as u32, input.targets.len() as u32);
    let range = |min: u32, max: u32| match (min, max) {
        (a, b) if a == b => format!("exactly {a}"),
        (a, u32::MAX) => format!("at least {a}"),
        (a, b) => format!("{a} to {b}"),
    };
    if s < min_sources || s > max_sources {
        v.push(Problem::error(
            "module.sources",
            format!(
                "{module} takes {} source object(s); this action has {s}",
                range(min_sources, max_sources)
            ),
            None,
        ));
    }
    if t < min_targets || t > max_targets {
        v.push(Problem::error(
            "module.targets",
            format!(
                "{module} takes {} target object(s); this action has {t}",
                range(min_targets, max_targets)
            ),
            None,
        ));
    }
    v
}

/// Quotes an identifier for `dialect`.
pub fn quote(dialect: Dialect, ident: &str) -> String {
    match dialect {
        Dialect::MySql => format!("`{}`", ident.replace('`', "``")),
        Dialect::MsSql => format!("[{}]", ident.replace(']', "]]")),
        _ => format!("\"{}\"", ident.replace('"', "\"\"")),
    }
}

/// `schema.table`, quoted, for `dialect`.
pub fn qualified(dialect: Dialect, schema: Option<&str>, table: &str) -> String {
    match schema.filter(|s| !s.is_empty()) {
        // SQLite's `main` is the default schema; naming it is harmless.
        Some(s) => format!("{}.{}", quote(dialect, s), quote(dialect, table)),
        None => quote(dialect, table),
    }
}

/// Matches `names` (a query's columns) to `target` columns by name, ignoring case; returns the
/// target's spelling of each.
///
/// # Errors
///
/// When a name has no column in the target, naming it and the target.
pub fn match_columns(
    names: &[RString],
    target: &weft_sdk::TableInfo,
) -> Result<Vec<String>, PluginError> {
    let mut out = Vec::with_capacity(names.len());
    let mut missing = Vec::new();
    for n in names {
        match target
            .columns
            .iter()
            .find(|c| c.name.eq_ignore_ascii_case(n))
        {
            Some(c) => out.push(c.name.to_string()),
            None => missing.push(n.to_string()),
        }
    }
    if !missing.is_empty() {
        let have: Vec<&str> = target.columns.iter().map(|c| c.name.as_str()).collect();
        return Err(PluginError::new(format!(
            "the query's column(s) {} have no column of the same name in table {} (its columns: {}); name them with aliases",
            missing.join(", "),
            target.name,
            have.join(", ")
        )));
    }
    Ok(out)
}

/// The schema of an object, as the connection calls it.
pub fn schema_of(o: &weft_sdk::ObjectRef) -> Option<&str> {
    match &o.schema {
        ROption::RSome(s) if !s.is_empty() => Some(s.as_str()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_variables_keeping_length() {
        let sql = "SELECT * FROM t WHERE d >= '${since}' AND n > ${n} AND x = '$${lit}'";
        let m = mask_variables(sql);
        assert_eq!(m.len(), sql.len());
        assert!(m.contains("'v_______'") && m.contains("> v___ AND"), "{m}");
        assert!(m.contains("$${lit}"), "{m}");
    }

    #[test]
    fn parse_errors_have_offsets() {
        let sql = "SELECT a,\n  FROM t WHERE";
        let (msg, offset) = parse(sql, Dialect::Sqlite).expect_err("bad");
        assert!(!msg.contains("Line:"), "{msg}");
        let offset = offset.expect("offset") as usize;
        assert!(offset > 9 && offset <= sql.len(), "{offset}");
    }

    #[test]
    fn reads_are_the_tables_read() {
        let sql = "INSERT INTO dst (a) WITH x AS (SELECT a FROM s1) SELECT x.a FROM x JOIN main.s2 ON 1 = 1 WHERE x.a IN (SELECT a FROM dst)";
        let st = parse(sql, Dialect::Sqlite).expect("parses");
        let r: Vec<String> = reads(&st, sql)
            .iter()
            .map(|t| {
                format!(
                    "{}{}",
                    t.schema
                        .as_ref()
                        .map(|s| format!("{s}."))
                        .unwrap_or_default(),
                    t.name
                )
            })
            .collect();
        assert_eq!(r, vec!["s1", "main.s2", "dst"]);
        let t = &reads(&st, sql)[0];
        assert_eq!(&sql[t.offset.unwrap_or_default() as usize..][..2], "s1");
    }
}
