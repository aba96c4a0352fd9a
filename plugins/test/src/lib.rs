//! The `Test` action module: a data test, as dbt's generic tests and its singular ones.
//!
//! `test` says what it looks for in its table (`table`, else its first source): `unique`,
//! `not_null`, `accepted_values`, `relationships` (to a parent's column), `row_count` (from
//! `min` to `max`), or `no_rows`: the action's own query, whose rows are the failures. A
//! failing test fails its action (`severity: error`, the default), naming the test, how
//! many rows failed and the first ten of them; the run then skips the actions that read the
//! table, because the deploy notes the table as checked (`ActionModule::checks`): readers of
//! a checked table wait for its tests. With `severity: warn` the action finishes and its log
//! says what failed.
//!
//! Tests are written as actions of this module, or attached to an action that writes the
//! table (`tests: [...]`, docs/dsr-format.md): the deploy then makes these actions itself.

// `export_plugin!` expands to abi_stable's export code, which is unsafe; this crate writes
// no unsafe code of its own.
#![allow(unsafe_code)]

pub mod query;
pub mod spec;

use spec::{Kind, Severity, Spec};
use weft_sdk::{
    ActionModule, AttributeKind, AttributeSpec, Datum, Dialect, ModuleInfo, PluginError,
    PluginResult, Problem, RunContext, RunOutcome, TableName, ValidateInput, ValidateOutput, Value,
    export_plugin,
};

/// How many failing rows a failure shows.
pub const SAMPLES: u32 = 10;

/// The `Test` module.
#[derive(Debug, Default)]
pub struct Test;

/// The table a test looks at, `(schema, name)`: `table`, else its first source's.
fn tested(spec: &Spec, sources: &[weft_sdk::ObjectRef]) -> Option<(Option<String>, String)> {
    spec.table.clone().or_else(|| {
        sources.first().map(|s| {
            (
                s.schema().filter(|s| !s.is_empty()).map(str::to_owned),
                s.name().to_owned(),
            )
        })
    })
}

fn spec_of_input(input: &ValidateInput) -> Result<Spec, Vec<Problem>> {
    Spec::of(
        |n| input.text(n),
        |n| input.integer(n),
        input.action().is_some_and(|t| !t.trim().is_empty()),
    )
}

impl ActionModule for Test {
    fn info(&self) -> ModuleInfo {
        let text = |name: &str, description: &str| {
            AttributeSpec::new(name, AttributeKind::String, None, description)
        };
        ModuleInfo::new(
            "Test",
            "A data test: unique, not_null, accepted_values, relationships, row_count, or the action's query returning no rows; a failure fails the action (severity error) and skips the table's readers, or is logged (warn).",
        )
        .targets(0, 0)
        .attribute(text("test", "unique, not_null, accepted_values, relationships, row_count or no_rows (default with a query)"))
        .attribute(text("table", "the table tested, `name` or `schema.name`; default the first source"))
        .attribute(text("column", "the column(s) looked at, comma-separated"))
        .attribute(text("values", "accepted_values: the values allowed, comma-separated"))
        .attribute(text("to", "relationships: the parent's `table.column`"))
        .attribute(AttributeSpec::new("min", AttributeKind::Integer, None, "row_count: the fewest rows"))
        .attribute(AttributeSpec::new("max", AttributeKind::Integer, None, "row_count: the most rows"))
        .attribute(text("where", "a condition narrowing the rows tested"))
        .attribute(AttributeSpec::new(
            "severity",
            AttributeKind::String,
            Some("error"),
            "error: a failure fails the action and skips the table's readers; warn: it is logged",
        ))
    }

    fn validate(&self, input: &ValidateInput) -> ValidateOutput {
        let mut out = ValidateOutput::new();
        let spec = match spec_of_input(input) {
            Ok(s) => s,
            Err(problems) => {
                for p in problems {
                    out.push(p);
                }
                return out;
            }
        };
        let dialect = input
            .sources()
            .first()
            .or_else(|| input.targets().first())
            .map_or(Dialect::Unknown, |o| o.dialect());
        if spec.kind == Kind::NoRows {
            out.append(weft_sql_support::check(input, dialect));
            return out;
        }
        match tested(&spec, input.sources()) {
            Some((schema, name)) => out.read(TableName::new(schema.as_deref(), &name, None)),
            None => out.push(Problem::error(
                "Test.table",
                format!(
                    "test {} needs its table: `table` (with the action's `connection`), or a source object",
                    spec.title()
                ),
                None,
            )),
        }
        if let Kind::Relationships(_, (schema, parent), _) = &spec.kind {
            out.read(TableName::new(schema.as_deref(), parent, None));
        }
        out
    }

    fn checks(&self, input: &ValidateInput) -> Vec<TableName> {
        let Ok(spec) = spec_of_input(input) else {
            return Vec::new();
        };
        if spec.kind == Kind::NoRows && spec.table.is_none() {
            return Vec::new();
        }
        tested(&spec, input.sources())
            .map(|(schema, name)| TableName::new(schema.as_deref(), &name, None))
            .into_iter()
            .collect()
    }

    fn run(&self, ctx: &mut RunContext) -> PluginResult<RunOutcome> {
        let has_text = !ctx.action().trim().is_empty();
        let spec = Spec::of(|n| ctx.text(n), |n| ctx.integer(n), has_text).map_err(|p| {
            PluginError::new(
                p.iter()
                    .map(Problem::message)
                    .collect::<Vec<_>>()
                    .join("; "),
            )
        })?;
        let source = ctx.sources().first().cloned().ok_or_else(|| {
            PluginError::new("a Test runs on the connection of its table: give it `table` with `connection`, or a source object")
        })?;
        let (schema, name) = tested(&spec, ctx.sources()).unwrap_or_default();
        let own = ctx.action().to_owned();
        let (c, log) = ctx.connection_and_log(source.connection_id())?;
        let dialect = c.dialect();
        let table = weft_sql_support::qualified(dialect, schema.as_deref(), &name);
        let title = format!("{} of {table}", spec.title());
        let count_of = |c: &mut weft_sdk::Connection, sql: &str| -> PluginResult<i64> {
            let (_, rows) = c.query_all(sql, &[])?;
            let first = rows.first().and_then(|r| r.first());
            match first.map(Value::get) {
                Some(Datum::Int(n)) => Ok(n),
                Some(Datum::Decimal(t) | Datum::Text(t)) if t.trim().parse::<i64>().is_ok() => {
                    Ok(t.trim().parse().unwrap_or_default())
                }
                Some(Datum::Float(f)) => Ok(f as i64),
                // A test that cannot count its failures must not pass.
                _ => Err(PluginError::new(format!(
                    "the count of `{sql}` is not a number: {first:?}"
                ))),
            }
        };
        let failed: Option<(i64, String)> = match &spec.kind {
            Kind::RowCount(min, max) => {
                let n = count_of(c, &query::rows_of(&spec, &table))?;
                let low = min.is_some_and(|m| n < m);
                let high = max.is_some_and(|m| n > m);
                (low || high).then(|| (n, format!("{table} holds {n} rows")))
            }
            kind => {
                let q = match kind {
                    Kind::NoRows => own.trim().trim_end_matches(';').to_owned(),
                    _ => query::failures(&spec, dialect, &table).unwrap_or_default(),
                };
                let n = count_of(c, &query::count(&q))?;
                if n == 0 {
                    None
                } else {
                    let (columns, rows) = c.query_all(&query::first(&q, dialect, SAMPLES), &[])?;
                    let shown = rows
                        .iter()
                        .map(|r| {
                            columns
                                .iter()
                                .zip(r.iter())
                                .map(|(col, v)| format!("{col}={}", shown(v)))
                                .collect::<Vec<_>>()
                                .join(", ")
                        })
                        .collect::<Vec<_>>()
                        .join("; ");
                    let first = if n as u64 > u64::from(SAMPLES) {
                        format!("the first {SAMPLES}")
                    } else {
                        "each".to_owned()
                    };
                    Some((n, format!("{n} failing row(s); {first}: {shown}")))
                }
            }
        };
        let Some((n, what)) = failed else {
            log.log(&format!("test {title} passed."));
            return Ok(RunOutcome::default());
        };
        let message = format!("test {title} failed: {what}");
        match spec.severity {
            Severity::Error => Err(PluginError::new(message)),
            Severity::Warn => {
                log.log(&format!("warning (severity warn): {message}"));
                Ok(RunOutcome {
                    rows_read: u64::try_from(n).unwrap_or(0),
                    ..RunOutcome::default()
                })
            }
        }
    }
}

/// A value as a failure shows it.
fn shown(v: &Value) -> String {
    match v.get() {
        Datum::Null => "NULL".to_owned(),
        Datum::Bool(b) => b.to_string(),
        Datum::Int(i) => i.to_string(),
        Datum::Float(f) => f.to_string(),
        Datum::Decimal(t)
        | Datum::Date(t)
        | Datum::Time(t)
        | Datum::Timestamp(t)
        | Datum::TimestampTz(t) => t.to_owned(),
        Datum::Text(t) => {
            let short: String = t.chars().take(60).collect();
            if short.len() < t.len() {
                format!("'{short}...'")
            } else {
                format!("'{short}'")
            }
        }
        Datum::Bytes(b) => format!("{} bytes", b.len()),
        _ => "?".to_owned(),
    }
}

export_plugin! {
    modules: [Test],
    object_types: [],
    bridges: [],
}

#[cfg(test)]
mod tests;
