//! What the SQL action modules (Sql, Insert, Upsert, Transfer) share.
//!
//! - [`check`]: the validation every SQL module does: `${name}` variables masked by a token
//!   of the same length (so positions stay true), the text parsed with the `sqlparser`
//!   dialect of the connection, and the tables the text reads. What sqlparser cannot read
//!   goes to the database's own parser (`own_parser`: PostgreSQL's libpg_query, SQLite
//!   itself): an error (`sql.syntax`, with its byte offset in the action text) only when
//!   that parser refuses it too, else a warning "not checked" (`sql.unchecked`) for each
//!   statement sqlparser cannot read. The attribute `validateSql: false` skips the parse.
//! - [`writes`], [`written_tables`]: the tables a text writes, each saying whether it defines
//!   it (DDL), what `Sql`'s `ActionModule::writes` answers (DDL first in a run; objects taken
//!   from the SQL).
//! - Identifier quoting and the column matching the modules use at run time.
//!
//! - [`describe_object`], [`described_table`], [`match_columns`], [`column_probe`]: what a
//!   module that loads a table does at run time.
//! - [`requalify()`]: a SQLite query's tables moved into an attached schema, the rest of its
//!   text kept.
//!
//! A companion of the sdk for plugin authors who write SQL modules, as weft's own do: a plain
//! library linked into each module's plugin, not a plugin itself. Its manifest inherits
//! nothing from weft's workspace, so a plugin outside the repository depends on it by path
//! (or, once published, by version) beside the sdk; `examples/plugin-rowcount` does.

mod own_parser;
mod requalify;
pub use requalify::{Requalified, requalify};

use sqlparser::ast::ObjectName;
pub use sqlparser::ast::Statement;
use sqlparser::dialect::{self as sp, Dialect as SpDialect};
use sqlparser::parser::Parser;
use std::collections::HashMap;
use std::ops::ControlFlow;
use weft_sdk::{
    AttributeValue, Datum, Dialect, PluginError, Problem, TableName, ValidateInput, ValidateOutput,
    Value, WrittenTable,
};

/// Replaces every `${name}` by `v___…` of the same byte length; `$${` (a literal `${`) is
/// left alone.
pub fn mask_variables(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for r in variable_ranges(text) {
        out.push_str(&text[copied..r.start]);
        out.push('v');
        out.push_str(&"_".repeat(r.len() - 1));
        copied = r.end;
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
        // An error at the end of the text has no position in sqlparser's message.
        let offset = error_position(&message)
            .map(|(l, c)| offset_of(&masked, l, c) as u32)
            .or(Some(masked.trim_end().len() as u32));
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

/// Collects the names of every CTE, at any depth.
struct Ctes(Vec<String>);

impl sqlparser::ast::Visitor for Ctes {
    type Break = ();

    fn pre_visit_query(&mut self, q: &sqlparser::ast::Query) -> ControlFlow<()> {
        if let Some(with) = &q.with {
            self.0.extend(
                with.cte_tables
                    .iter()
                    .map(|c| c.alias.name.value.to_lowercase()),
            );
        }
        ControlFlow::Continue(())
    }
}

/// Collects the table functions in FROM (`generate_series(1, 3)`, `unnest(...)`,
/// `pg_sleep(1)`, `json_each(...)`): the parser gives them as relations with arguments, but
/// they are no tables.
struct TableFunctions(Vec<String>);

impl sqlparser::ast::Visitor for TableFunctions {
    type Break = ();

    fn pre_visit_table_factor(&mut self, t: &sqlparser::ast::TableFactor) -> ControlFlow<()> {
        if let sqlparser::ast::TableFactor::Table {
            name,
            args: Some(_),
            ..
        } = t
        {
            self.0.push(key(&name_parts(name)));
        }
        ControlFlow::Continue(())
    }
}

/// The relation written by an UPDATE or DELETE, from its table clause.
fn table_of(t: &sqlparser::ast::TableWithJoins) -> Option<&ObjectName> {
    match &t.relation {
        sqlparser::ast::TableFactor::Table { name, .. } => Some(name),
        _ => None,
    }
}

/// The tables `statements` read: every relation they name, less the targets of INSERT,
/// UPDATE, DELETE, CREATE and DROP (each counted once: a target also read elsewhere in the
/// statement is still a read), less table functions in FROM (`generate_series(...)`), less the
/// names of CTEs, and less names made of a `${name}` variable (they are known only at run
/// time).
pub fn reads(statements: &[Statement], sql: &str) -> Vec<TableName> {
    use sqlparser::ast::Visit as _;
    let masked = mask_variables(sql);
    let variables = variable_ranges(sql);
    let mut seen: Vec<NameParts> = Vec::new();
    for st in statements {
        let _ = sqlparser::ast::visit_relations(st, |name| {
            seen.push(name_parts(name));
            ControlFlow::<()>::Continue(())
        });
    }
    let mut written: HashMap<String, usize> = HashMap::new();
    let mut ctes = Ctes(Vec::new());
    let mut functions = TableFunctions(Vec::new());
    for s in statements {
        let _ = s.visit(&mut ctes);
        let _ = s.visit(&mut functions);
        let mut targets: Vec<&ObjectName> = Vec::new();
        match s {
            Statement::Insert(i) => {
                if let sqlparser::ast::TableObject::TableName(n) = &i.table {
                    targets.push(n);
                }
            }
            Statement::CreateTable(c) => targets.push(&c.name),
            Statement::Drop { names, .. } => targets.extend(names.iter()),
            Statement::Update(u) => targets.extend(table_of(&u.table)),
            Statement::Delete(d) => {
                let from = match &d.from {
                    sqlparser::ast::FromTable::WithFromKeyword(t)
                    | sqlparser::ast::FromTable::WithoutKeyword(t) => t,
                };
                if d.tables.is_empty() {
                    targets.extend(from.iter().filter_map(table_of));
                }
            }
            _ => {}
        }
        for n in targets {
            *written.entry(key(&name_parts(n))).or_default() += 1;
        }
    }
    // A table function is skipped as a target is: once for each time it is called.
    for f in functions.0 {
        *written.entry(f).or_default() += 1;
    }
    let mut out = Vec::new();
    let mut emitted: Vec<String> = Vec::new();
    for parts in seen {
        let k = key(&parts);
        if let Some(n) = written.get_mut(&k)
            && *n > 0
        {
            *n -= 1;
            continue;
        }
        if parts.len() == 1 && ctes.0.contains(&parts[0].0.to_lowercase()) {
            continue;
        }
        let Some(table) = table_name(&parts, &masked, &variables) else {
            continue;
        };
        if emitted.contains(&k) {
            continue;
        }
        emitted.push(k);
        out.push(table);
    }
    out
}

/// The table a dotted name names, placed in the action text (`masked`); `None` for a name
/// with a part made of a `${name}` variable (known only at run time).
fn table_name(
    parts: &NameParts,
    masked: &str,
    variables: &[std::ops::Range<usize>],
) -> Option<TableName> {
    let in_variable = parts
        .iter()
        .filter_map(|(_, p)| p.map(|(l, c)| offset_of(masked, l, c)))
        .any(|o| variables.iter().any(|r| r.contains(&o)));
    if in_variable {
        return None;
    }
    let (name, pos) = parts.last().cloned()?;
    let schema = (parts.len() >= 2).then(|| parts[parts.len() - 2].0.clone());
    Some(TableName::new(
        schema.as_deref(),
        &name,
        pos.map(|(l, c)| offset_of(masked, l, c) as u32),
    ))
}

/// The tables `statements` write: the rows of those of `INSERT`, `UPDATE`, `DELETE`,
/// `MERGE` and `TRUNCATE`, and the tables themselves (DDL: `defines`) of `CREATE TABLE`
/// (with `AS SELECT` too), `CREATE VIEW`, `ALTER TABLE` and `DROP TABLE` or `VIEW`. Each table
/// once, the DDL kept when a text both defines and fills it; names made of a `${name}`
/// variable are left out.
pub fn writes(statements: &[Statement], sql: &str) -> Vec<WrittenTable> {
    use sqlparser::ast::{ObjectType, TableFactor, TableObject};
    let masked = mask_variables(sql);
    let variables = variable_ranges(sql);
    let mut out: Vec<(String, WrittenTable)> = Vec::new();
    let mut add = |name: &ObjectName, defines: bool| {
        let parts = name_parts(name);
        let Some(table) = table_name(&parts, &masked, &variables) else {
            return;
        };
        let k = key(&parts);
        let written = WrittenTable::new(table, defines);
        match out.iter_mut().find(|(seen, _)| *seen == k) {
            Some((_, w)) if defines && !w.defines() => *w = written,
            Some(_) => {}
            None => out.push((k, written)),
        }
    };
    for s in statements {
        match s {
            Statement::Insert(i) => {
                if let TableObject::TableName(n) = &i.table {
                    add(n, false);
                }
            }
            Statement::Update(u) => {
                if let Some(n) = table_of(&u.table) {
                    add(n, false);
                }
            }
            Statement::Delete(d) => {
                let from = match &d.from {
                    sqlparser::ast::FromTable::WithFromKeyword(t)
                    | sqlparser::ast::FromTable::WithoutKeyword(t) => t,
                };
                if d.tables.is_empty() {
                    for n in from.iter().filter_map(table_of) {
                        add(n, false);
                    }
                } else {
                    for n in &d.tables {
                        add(n, false);
                    }
                }
            }
            Statement::Merge(m) => {
                if let TableFactor::Table { name, .. } = &m.table {
                    add(name, false);
                }
            }
            Statement::Truncate(t) => {
                for n in &t.table_names {
                    add(&n.name, false);
                }
            }
            Statement::CreateTable(c) => add(&c.name, true),
            Statement::CreateView(v) => add(&v.name, true),
            Statement::AlterTable(a) => add(&a.name, true),
            Statement::Drop {
                object_type: ObjectType::Table | ObjectType::View | ObjectType::MaterializedView,
                names,
                ..
            } => {
                for n in names {
                    add(n, true);
                }
            }
            _ => {}
        }
    }
    out.into_iter().map(|(_, w)| w).collect()
}

/// The tables the action text of `input` writes (see [`writes`]), in `dialect`; nothing
/// when it does not parse or `validateSql` is off.
pub fn written_tables(input: &ValidateInput, dialect: Dialect) -> Vec<WrittenTable> {
    let Some(sql) = input.action() else {
        return Vec::new();
    };
    if input
        .attribute("validateSql")
        .and_then(AttributeValue::as_bool)
        == Some(false)
    {
        return Vec::new();
    }
    parse(sql, dialect)
        .map(|st| writes(&st, sql))
        .unwrap_or_default()
}

/// The byte ranges of the `${name}` variables in `text`.
pub fn variable_ranges(text: &str) -> Vec<std::ops::Range<usize>> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < b.len() {
        if b[i] == b'$' && b[i + 1] == b'$' && b.get(i + 2) == Some(&b'{') {
            i += 3;
            continue;
        }
        if b[i] == b'$'
            && b[i + 1] == b'{'
            && let Some(close) = text[i + 2..].find('}')
        {
            let end = i + 2 + close + 1;
            out.push(i..end);
            i = end;
            continue;
        }
        i += 1;
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
    let Some(sql) = input.action().filter(|s| !s.trim().is_empty()) else {
        out.push(Problem::error(
            "sql.missing",
            "the action has no SQL text (`action`)",
            None,
        ));
        return out;
    };
    if input
        .attribute("validateSql")
        .and_then(AttributeValue::as_bool)
        == Some(false)
    {
        return out;
    }
    check_text(&mut out, sql, dialect, None);
    // The loop's query reads data too: one query, whose tables order the action as well.
    if let Some(looped) = input.attribute(LOOP_QUERY).and_then(AttributeValue::as_str) {
        if input
            .attribute("truncateBefore")
            .and_then(AttributeValue::as_bool)
            == Some(true)
        {
            out.push(
                Problem::error(
                    "loop_truncate",
                    "truncateBefore with loopQuery would empty the target at every iteration, losing what the earlier ones loaded: empty it in an action before this one",
                    None,
                )
                .on_attribute("truncateBefore"),
            );
        }
        if let Some(statements) = check_text(&mut out, looped, dialect, Some(LOOP_QUERY))
            && !is_one_query(&statements)
        {
            out.push(
                Problem::error(
                    "sql.loop_not_a_query",
                    "`loopQuery` is one query (SELECT ...) whose rows the action runs once each for",
                    Some(0),
                )
                .on_attribute(LOOP_QUERY),
            );
        }
    }
    out
}

/// Checks `sql` (the action text, or the attribute `attribute`) and notes the tables it
/// reads; its statements when sqlparser reads the whole text.
///
/// What sqlparser cannot read goes to the database's own parser (PostgreSQL's, SQLite): a
/// syntax error is an error only when that parser refuses the text too. Each statement it
/// reads is then checked on its own: those sqlparser reads are checked fully, the others
/// are a warning `sql.unchecked` ("not checked") and read the tables the own parser names.
/// Where weft has no parser of the database, a statement sqlparser cannot read is a warning.
fn check_text(
    out: &mut ValidateOutput,
    sql: &str,
    dialect: Dialect,
    attribute: Option<&str>,
) -> Option<Vec<Statement>> {
    let place = |p: Problem| match attribute {
        Some(a) => p.on_attribute(a),
        None => p,
    };
    let offset = match parse(sql, dialect) {
        Ok(statements) => {
            for table in reads(&statements, sql) {
                out.read(table);
            }
            return Some(statements);
        }
        Err((_, offset)) => offset,
    };
    let masked = mask_variables(sql);
    let what = attribute.map_or_else(|| "the SQL".to_owned(), |a| format!("`{a}`"));
    match own_parser::judge(&masked, dialect) {
        Some(own_parser::Judgement::Refused {
            message,
            offset: at,
        }) => {
            out.push(place(Problem::error(
                "sql.syntax",
                format!("{what} does not parse as {}: {message}", dialect.name()),
                at.map(|o| o as u32).or(offset),
            )));
        }
        Some(own_parser::Judgement::Read(statements)) => {
            for (range, tables) in statements {
                check_statement(out, sql, range, dialect, Some(tables), &place);
            }
        }
        None => {
            for range in statement_ranges(&masked, dialect) {
                check_statement(out, sql, range, dialect, None, &place);
            }
        }
    }
    None
}

/// Checks the statement at `range` of `sql` on its own. `own_reads` are the tables the
/// database's own parser found in it (it read it), `None` where weft has no such parser.
fn check_statement(
    out: &mut ValidateOutput,
    sql: &str,
    range: std::ops::Range<usize>,
    dialect: Dialect,
    own_reads: Option<Vec<String>>,
    place: &dyn Fn(Problem) -> Problem,
) {
    let piece = &sql[range.clone()];
    let shift = |o: u32| o + range.start as u32;
    match parse(piece, dialect) {
        Ok(statements) => {
            for t in reads(&statements, piece) {
                out.read(TableName::new(t.schema(), t.name(), t.offset().map(shift)));
            }
        }
        Err((message, offset)) => {
            let opening: String = piece
                .split_whitespace()
                .take(4)
                .collect::<Vec<_>>()
                .join(" ")
                .chars()
                .take(40)
                .collect();
            let db = dialect.name();
            let text = match &own_reads {
                Some(_) => format!(
                    "not checked: `{opening}` ...: weft's SQL parser cannot read it ({message}); {db}'s own parser can, so it is left to the database"
                ),
                None => format!(
                    "not checked: `{opening}` ... does not parse as {db} here ({message}); the database checks it when it runs"
                ),
            };
            out.push(place(Problem::warning(
                "sql.unchecked",
                text,
                Some(shift(offset.unwrap_or(0))),
            )));
            for table in own_reads.unwrap_or_default() {
                let (schema, name) = match table.rsplit_once('.') {
                    Some((s, n)) => (Some(s), n),
                    None => (None, table.as_str()),
                };
                out.read(TableName::new(schema, name, None));
            }
        }
    }
}

/// The names of the columns a single query returns, when its outermost `SELECT` names every
/// one (a column, `t.column` or `AS alias`); `None` for a `*`, an unnamed expression, or
/// anything but one query.
pub fn output_columns(statements: &[Statement]) -> Option<Vec<String>> {
    use sqlparser::ast::{Expr, SelectItem, SetExpr};
    let [Statement::Query(query)] = statements else {
        return None;
    };
    let mut body = query.body.as_ref();
    // A UNION's columns are named by its first query.
    while let SetExpr::SetOperation { left, .. } = body {
        body = left.as_ref();
    }
    let SetExpr::Select(select) = body else {
        return None;
    };
    select
        .projection
        .iter()
        .map(|item| match item {
            SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.clone()),
            SelectItem::UnnamedExpr(Expr::Identifier(i)) => Some(i.value.clone()),
            SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) => {
                parts.last().map(|i| i.value.clone())
            }
            _ => None,
        })
        .collect()
}

/// The attribute every SQL module takes: `validateSql` (default true; false skips the parse
/// at deploy).
pub fn validate_sql_attribute() -> weft_sdk::AttributeSpec {
    weft_sdk::AttributeSpec::new(
        "validateSql",
        weft_sdk::AttributeKind::Bool,
        Some("true"),
        "parse the SQL at deploy; false skips the check",
    )
}

/// The attributes every SQL module takes: `validateSql`, and the loop the host runs the
/// action in (`loopQuery`, `errorIfLoopEmpty`, `loopContinueOnError`; docs/modules/loop-query.md).
pub fn sql_attributes() -> [weft_sdk::AttributeSpec; 4] {
    use weft_sdk::{AttributeKind, AttributeSpec};
    [
        validate_sql_attribute(),
        AttributeSpec::new(
            LOOP_QUERY,
            AttributeKind::String,
            None,
            "a query run first on the action's connection: the action runs once per row, with its columns as variables and ${iteration}",
        ),
        AttributeSpec::new(
            "errorIfLoopEmpty",
            AttributeKind::Bool,
            Some("false"),
            "fail the action when loopQuery returns no row (else it does nothing)",
        ),
        AttributeSpec::new(
            "loopContinueOnError",
            AttributeKind::Bool,
            Some("false"),
            "go on after a failing iteration (its work rolled back) instead of failing the action",
        ),
    ]
}

/// The attribute that makes the host run an action once per row of a query.
pub const LOOP_QUERY: &str = "loopQuery";

/// Whether `statements` are one query (`SELECT ...`, a `UNION`, a `WITH`).
pub fn is_one_query(statements: &[Statement]) -> bool {
    matches!(statements, [Statement::Query(_)])
}

/// The names of a comma-separated list, each with its byte offset in `text` (for problems
/// that point inside an attribute); empty names are left out.
pub fn names_with_offsets(text: &str) -> Vec<(String, usize)> {
    let mut at = 0;
    let mut out = Vec::new();
    for part in text.split(',') {
        let name = part.trim();
        if !name.is_empty() {
            out.push((name.to_owned(), at + (part.len() - part.trim_start().len())));
        }
        at += part.len() + 1;
    }
    out
}

/// A problem for each source of `module`'s action that is not on its target's connection,
/// where its query runs; `instead` says what to do.
pub fn sources_on_target_connection(
    input: &ValidateInput,
    module: &str,
    instead: &str,
) -> Vec<Problem> {
    let Some(t) = input.targets().first() else {
        return Vec::new();
    };
    input
        .sources()
        .iter()
        .filter(|s| s.connection_id() != t.connection_id())
        .map(|src| {
            Problem::error(
                "module.sources",
                format!(
                    "{module} runs its query on the target's connection {}, but source `{}` is on connection {}; {instead}",
                    t.connection_id(),
                    src.name(),
                    src.connection_id()
                ),
                None,
            )
        })
        .collect()
}

/// A problem when the sources of `module`'s action are not all on one connection (the query
/// runs on theirs).
pub fn sources_on_one_connection(input: &ValidateInput, module: &str) -> Option<Problem> {
    let mut ids = input.sources().iter().map(|s| s.connection_id());
    let first = ids.next()?;
    ids.any(|c| c != first).then(|| {
        Problem::error(
            "module.sources",
            format!("{module}'s sources must all be on one connection: the query runs there"),
            None,
        )
    })
}

/// A statement that returns no row but the columns of `query`, in `dialect`.
pub fn column_probe(dialect: Dialect, query: &str) -> String {
    match dialect {
        Dialect::MsSql => format!("SELECT TOP 0 * FROM ({query}\n) AS weft_q"),
        _ => format!("SELECT * FROM ({query}\n) AS weft_q LIMIT 0"),
    }
}

/// Quotes an identifier for `dialect`.
pub fn quote(dialect: Dialect, ident: &str) -> String {
    match dialect {
        Dialect::MySql => format!("`{}`", ident.replace('`', "``")),
        Dialect::MsSql => format!("[{}]", ident.replace(']', "]]")),
        _ => format!("\"{}\"", ident.replace('"', "\"\"")),
    }
}

/// A table named in an attribute, `name` or `schema.name`, as `(schema, name)`; `None` for
/// an empty text or more than two parts.
pub fn attribute_table(text: &str) -> Option<(Option<String>, String)> {
    let t = text.trim();
    match t.split_once('.') {
        None if !t.is_empty() => Some((None, t.to_owned())),
        Some((s, n)) if !s.is_empty() && !n.is_empty() && !n.contains('.') => {
            Some((Some(s.to_owned()), n.to_owned()))
        }
        _ => None,
    }
}

/// A file's name without its folders and extension (`seeds/raw_orders.csv`: `raw_orders`),
/// the table a module of a file makes by default, as dbt names seeds and models.
pub fn file_stem(path: &str) -> Option<String> {
    let base = path.rsplit('/').next().unwrap_or(path);
    let stem = base.rsplit_once('.').map_or(base, |(stem, _)| stem);
    (!stem.is_empty()).then(|| stem.to_owned())
}

/// `schema.table`, quoted, for `dialect`.
pub fn qualified(dialect: Dialect, schema: Option<&str>, table: &str) -> String {
    match schema.filter(|s| !s.is_empty()) {
        // SQLite's `main` is the default schema; naming it is harmless.
        Some(s) => format!("{}.{}", quote(dialect, s), quote(dialect, table)),
        None => quote(dialect, table),
    }
}

/// The target (or source) object's table, described by its connection.
///
/// # Errors
///
/// The connection's, e.g. when the table does not exist.
pub fn describe_object(
    conn: &mut weft_sdk::Connection,
    object: &weft_sdk::ObjectRef,
) -> weft_sdk::PluginResult<weft_sdk::TableInfo> {
    conn.describe(schema_of(object), object.name())
}

/// A described table's name as the database spells it (unquoted names fold to upper case in
/// H2 and HSQLDB, to lower case in PostgreSQL), quoted and qualified for `dialect`.
pub fn described_table(dialect: Dialect, info: &weft_sdk::TableInfo) -> String {
    qualified(dialect, info.schema(), info.name())
}

/// Matches `names` (a query's columns) to `target` columns by name, ignoring case; returns the
/// target's spelling of each.
///
/// # Errors
///
/// When a name has no column in the target, naming it and the target.
pub fn match_columns(
    names: &[String],
    target: &weft_sdk::TableInfo,
) -> Result<Vec<String>, PluginError> {
    let mut out = Vec::with_capacity(names.len());
    let mut missing = Vec::new();
    for n in names {
        match target
            .columns()
            .iter()
            .find(|c| c.name().eq_ignore_ascii_case(n))
        {
            Some(c) => out.push(c.name().to_owned()),
            None => missing.push(n.to_string()),
        }
    }
    if !missing.is_empty() {
        let have: Vec<&str> = target.columns().iter().map(|c| c.name()).collect();
        return Err(PluginError::new(format!(
            "the query's column(s) {} have no column of the same name in table {} (its columns: {}); name them with aliases",
            missing.join(", "),
            target.name(),
            have.join(", ")
        )));
    }
    Ok(out)
}

/// A whole number as a database answers a count: an integer, or (Oracle's `NUMBER`, some
/// drivers' `DECIMAL`) a decimal or double without a fraction.
pub fn count_of(v: Option<&Value>) -> Option<u64> {
    match v?.get() {
        Datum::Int(n) => u64::try_from(n).ok(),
        Datum::Decimal(d) | Datum::Text(d) => {
            let d = d.trim();
            let whole =
                d.split_once('.').map_or(
                    d,
                    |(w, f)| {
                        if f.chars().all(|c| c == '0') { w } else { "x" }
                    },
                );
            whole.parse().ok()
        }
        Datum::Float(f) if f.fract() == 0.0 && (0.0..1.8e19).contains(&f) => Some(f as u64),
        _ => None,
    }
}

/// The attribute `truncateBefore` of the loading modules (Insert, Transfer, Upsert, History).
pub fn truncate_before_attribute() -> weft_sdk::AttributeSpec {
    weft_sdk::AttributeSpec::new(
        "truncateBefore",
        weft_sdk::AttributeKind::Bool,
        Some("false"),
        "empty the target first, in the action's transaction (a failed load leaves the old rows)",
    )
}

/// Empties `table` (quoted and qualified) for `truncateBefore`, inside the action's
/// transaction, so that a failed load leaves the old rows: `TRUNCATE` on PostgreSQL (whose
/// TRUNCATE a rollback undoes, and which reads no row; the rows are counted first; where
/// PostgreSQL refuses it, a foreign key naming the table say, `DELETE`), `DELETE`
/// elsewhere (SQLite has no TRUNCATE; MySQL's, H2's and HSQLDB's commit at once or are not
/// undone by a rollback). Answers how many rows it removed, and logs it.
///
/// # Errors
///
/// The connection's.
pub fn empty_before(
    conn: &mut weft_sdk::Connection,
    log: &mut weft_sdk::Log,
    table: &str,
) -> weft_sdk::PluginResult<u64> {
    if conn.dialect() == Dialect::Postgres {
        // TRUNCATE is refused where DELETE works (a table other tables' foreign keys name,
        // a view, no TRUNCATE privilege): tried in a savepoint, DELETE after a refusal.
        let (_, rows) = conn.query_all(&format!("SELECT COUNT(*) FROM {table}"), &[])?;
        let n = count_of(rows.first().and_then(|r| r.first())).unwrap_or(0);
        conn.begin()?;
        match conn.execute_batch(&format!("TRUNCATE TABLE {table}")) {
            Ok(_) => {
                conn.commit()?;
                log.log(&format!(
                    "Emptied {table} (TRUNCATE): {n} row(s) removed (truncateBefore)."
                ));
                return Ok(n);
            }
            Err(e) => {
                conn.rollback()?;
                log.log(&format!(
                    "TRUNCATE of {table} was refused ({}); emptied by DELETE instead.",
                    e.message()
                ));
            }
        }
    }
    let removed = conn.execute_batch(&format!("DELETE FROM {table}"))?;
    log.log(&format!(
        "Emptied {table}: {removed} row(s) deleted (truncateBefore)."
    ));
    Ok(removed)
}

/// The schema of an object, as the connection calls it.
pub fn schema_of(o: &weft_sdk::ObjectRef) -> Option<&str> {
    o.schema().filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_come_as_integers_decimals_or_doubles() {
        assert_eq!(count_of(Some(&Value::int(3))), Some(3));
        assert_eq!(count_of(Some(&Value::decimal("12"))), Some(12));
        assert_eq!(count_of(Some(&Value::decimal("12.000"))), Some(12));
        assert_eq!(count_of(Some(&Value::decimal("1.5"))), None);
        assert_eq!(count_of(Some(&Value::float(4.0))), Some(4));
        assert_eq!(count_of(Some(&Value::NULL)), None);
        assert_eq!(count_of(None), None);
    }

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

    fn names(sql: &str) -> Vec<String> {
        let st = parse(sql, Dialect::Sqlite).expect("parses");
        reads(&st, sql)
            .iter()
            .map(|t| t.name().to_string())
            .collect()
    }

    #[test]
    fn reads_skip_ctes_at_any_depth_variables_and_written_tables() {
        assert_eq!(
            names("CREATE TABLE s AS WITH t AS (SELECT id FROM src) SELECT * FROM t"),
            vec!["src"]
        );
        assert_eq!(
            names("SELECT * FROM (WITH t AS (SELECT 1 AS x FROM a) SELECT x FROM t) q"),
            vec!["a"]
        );
        assert_eq!(
            names("SELECT * FROM ${schema}.orders JOIN b ON 1 = 1"),
            vec!["b"]
        );
        assert_eq!(
            names("DELETE FROM audit_log WHERE id IN (SELECT id FROM old_ids)"),
            vec!["old_ids"]
        );
        assert_eq!(
            names("UPDATE t SET v = (SELECT v FROM s WHERE s.id = t.id)"),
            vec!["s"]
        );
        assert_eq!(names("UPDATE t SET v = v + 1"), Vec::<String>::new());
    }

    #[test]
    fn an_error_at_the_end_has_the_end_as_offset() {
        let sql = "SELECT a FROM t WHERE   ";
        let (_, offset) = parse(sql, Dialect::Sqlite).expect_err("incomplete");
        assert_eq!(offset, Some(sql.trim_end().len() as u32));
    }

    #[test]
    fn a_trailing_comment_does_not_swallow_the_wrapper() {
        let q = "SELECT a AS id FROM src -- all of them";
        assert!(parse(&column_probe(Dialect::Sqlite, q), Dialect::Sqlite).is_ok());
        assert!(column_probe(Dialect::MsSql, q).starts_with("SELECT TOP 0"));
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
                    t.schema()
                        .as_ref()
                        .map(|s| format!("{s}."))
                        .unwrap_or_default(),
                    t.name()
                )
            })
            .collect();
        assert_eq!(r, vec!["s1", "main.s2", "dst"]);
        let t = &reads(&st, sql)[0];
        assert_eq!(&sql[t.offset().unwrap_or_default() as usize..][..2], "s1");
    }

    #[test]
    fn table_functions_in_from_are_no_tables() {
        for (dialect, sql, read) in [
            (Dialect::Postgres, "SELECT 1 FROM pg_sleep(1)", vec![]),
            (
                Dialect::Postgres,
                "SELECT g, t.x FROM generate_series(1, 3) AS g JOIN t ON t.x = g",
                vec!["t"],
            ),
            (
                Dialect::Postgres,
                "SELECT * FROM unnest(ARRAY[1, 2]) u, json_each('{}') j",
                vec![],
            ),
            (
                Dialect::Sqlite,
                "SELECT value FROM json_each('[1]')",
                vec![],
            ),
            // A table of the same name read as a table still counts.
            (
                Dialect::Postgres,
                "SELECT * FROM generate_series(1, 2), generate_series",
                vec!["generate_series"],
            ),
        ] {
            let st = parse(sql, dialect).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
            let r: Vec<String> = reads(&st, sql)
                .iter()
                .map(|t| t.name().to_owned())
                .collect();
            assert_eq!(r, read, "{sql}");
        }
    }
}

/// Splits a script into its statements at the semicolons that end them (not those inside
/// strings, quoted names, comments or dollar-quoted bodies), for connections that run one
/// statement at a time. Empty statements are dropped; text the tokenizer cannot read is
/// returned whole, so that the database reports the error.
pub fn split_statements(sql: &str, dialect: Dialect) -> Vec<String> {
    statement_ranges(sql, dialect)
        .into_iter()
        .map(|r| sql[r].to_owned())
        .collect()
}

/// Where each statement of `sql` lies in it, as [`split_statements`] cuts them (trimmed,
/// empty ones left out): byte ranges, so that an error in one statement can be placed in
/// the whole text.
pub fn statement_ranges(sql: &str, dialect: Dialect) -> Vec<std::ops::Range<usize>> {
    let trimmed = |r: std::ops::Range<usize>| {
        let piece = &sql[r.clone()];
        let start = r.start + (piece.len() - piece.trim_start().len());
        start..(r.end - (piece.len() - piece.trim_end().len())).max(start)
    };
    let d = sp_dialect(dialect);
    let Ok(tokens) = sqlparser::tokenizer::Tokenizer::new(d.as_ref(), sql).tokenize_with_location()
    else {
        return vec![trimmed(0..sql.len())]
            .into_iter()
            .filter(|r| !r.is_empty())
            .collect();
    };
    let mut out = Vec::new();
    let mut start = 0;
    for t in tokens {
        if t.token == sqlparser::tokenizer::Token::SemiColon {
            let at = offset_of(sql, t.span.start.line, t.span.start.column);
            out.push(trimmed(start..at));
            start = at + 1;
        }
    }
    out.push(trimmed(start..sql.len()));
    out.retain(|r| !r.is_empty());
    out
}

#[cfg(test)]
mod writes_tests {
    use super::*;

    fn written(sql: &str) -> Vec<String> {
        let st = parse(sql, Dialect::Postgres).expect("parses");
        writes(&st, sql)
            .iter()
            .map(|w| {
                let t = w.table();
                let schema = t.schema().map(|s| format!("{s}.")).unwrap_or_default();
                let kind = if w.defines() { "ddl" } else { "rows" };
                format!("{schema}{} {kind}", t.name())
            })
            .collect()
    }

    #[test]
    fn ddl_defines_its_table_and_dml_writes_its_rows() {
        assert_eq!(
            written(
                "DROP TABLE IF EXISTS dw.orders; CREATE TABLE dw.orders AS SELECT * FROM raw; INSERT INTO dw.orders SELECT 1"
            ),
            vec!["dw.orders ddl"]
        );
        assert_eq!(
            written("CREATE OR REPLACE VIEW v AS SELECT 1; ALTER TABLE t ADD COLUMN c int"),
            vec!["v ddl", "t ddl"]
        );
        assert_eq!(
            written(
                "INSERT INTO a SELECT 1; UPDATE b SET x = 1; DELETE FROM c; TRUNCATE d;
                 MERGE INTO e USING s ON e.id = s.id WHEN MATCHED THEN UPDATE SET x = s.x"
            ),
            vec!["a rows", "b rows", "c rows", "d rows", "e rows"]
        );
        // Read tables, CTEs, variables and indexes are written by no one.
        assert_eq!(
            written(
                "WITH w AS (SELECT 1) SELECT * FROM w JOIN t ON true; INSERT INTO ${target} SELECT 1; CREATE INDEX i ON t (x)"
            ),
            Vec::<String>::new()
        );
        let sql = "SELECT 1;\nCREATE TABLE made (x int)";
        let st = parse(sql, Dialect::Sqlite).expect("parses");
        let w = writes(&st, sql);
        assert_eq!(
            &sql[w[0].table().offset().unwrap_or(0) as usize..],
            "made (x int)"
        );
    }
}

#[cfg(test)]
mod check_tests {
    use super::*;
    use weft_sdk::Severity;

    /// A problem as `(severity, code, offset)`.
    type Found = (Severity, String, Option<u32>);

    /// Each problem, and the tables read.
    fn checked(sql: &str, dialect: Dialect) -> (Vec<Found>, Vec<String>) {
        let out = check(
            &weft_sdk::testing::Validate::new(Some(sql)).build(),
            dialect,
        );
        (
            out.problems()
                .iter()
                .map(|p| (p.severity(), p.code().to_owned(), p.offset()))
                .collect(),
            out.reads().iter().map(|t| t.name().to_owned()).collect(),
        )
    }

    #[test]
    fn what_the_database_reads_is_a_warning_at_its_statement_and_the_rest_is_checked() {
        let sql = "CREATE TRIGGER tr AFTER INSERT ON a BEGIN DELETE FROM b INDEXED BY i; END;\nINSERT INTO c SELECT x FROM d";
        let (problems, reads) = checked(sql, Dialect::Sqlite);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(
            (problems[0].0, problems[0].1.as_str()),
            (Severity::Warning, "sql.unchecked")
        );
        assert_eq!(reads, vec!["d"]);
        // Where weft has no parser of the database: each statement on its own.
        let sql = "SELEC 1; SELECT x FROM e";
        let (problems, reads) = checked(sql, Dialect::MySql);
        assert_eq!(
            problems,
            vec![(Severity::Warning, "sql.unchecked".to_owned(), Some(0))]
        );
        assert_eq!(reads, vec!["e"]);
    }

    #[test]
    fn what_the_database_refuses_is_an_error_at_its_place() {
        for dialect in [Dialect::Sqlite, Dialect::Postgres] {
            let sql = "SELECT 1;\nSELECT x FROM t WHERE x = = 1";
            let (problems, _) = checked(sql, dialect);
            assert_eq!(problems.len(), 1, "{problems:?}");
            let (severity, code, offset) = &problems[0];
            assert_eq!((*severity, code.as_str()), (Severity::Error, "sql.syntax"));
            assert_eq!(
                &sql[offset.map_or(0, |o| o as usize)..],
                "= 1",
                "{dialect:?}"
            );
        }
    }
}

#[cfg(test)]
mod split_tests {
    use super::*;

    #[test]
    fn splits_at_statement_ends_only() {
        let sql = "insert into t values ('a;b'); -- c;d\n\
                   create function f() returns int as $$ select 1; $$ language sql;\n\
                   update \"x;y\" set a = 1;;  ";
        assert_eq!(
            split_statements(sql, Dialect::Postgres),
            vec![
                "insert into t values ('a;b')".to_owned(),
                "-- c;d\ncreate function f() returns int as $$ select 1; $$ language sql"
                    .to_owned(),
                "update \"x;y\" set a = 1".to_owned(),
            ]
        );
    }

    #[test]
    fn unreadable_text_is_kept_whole() {
        assert_eq!(
            split_statements("select 'open; string", Dialect::H2),
            vec!["select 'open; string".to_owned()]
        );
        assert!(split_statements(" ; ;\n", Dialect::Generic).is_empty());
    }

    #[test]
    fn ranges_place_each_statement_in_the_whole_text() {
        let sql = "DROP TABLE t;\n  CREATE TABLE t AS\n  SELECT 'é;' FORM s ;  ";
        let ranges = statement_ranges(sql, Dialect::Sqlite);
        assert_eq!(ranges, vec![0..12, 16..55]);
        assert_eq!(
            &sql[ranges[1].clone()],
            "CREATE TABLE t AS\n  SELECT 'é;' FORM s"
        );
        assert_eq!(
            statement_ranges("  select 'open; string ", Dialect::H2),
            vec![2..22]
        );
    }
}
