//! The `History` action module: keeps a type-2 history (a slowly changing dimension) of the
//! target from the action's query, on the target's connection, in the action's transaction.
//!
//! Each row of the target is one period of one key: `validFrom` (default `valid_from_dt`) is
//! when it began, `invalidFrom` (default `invalid_from_dt`) when it ended, NULL (or the
//! attribute `openUntil`, a far-future value) while it is the current one. At each run, with
//! the change time `changeTime` (default: a scheduled run's `schedule_date`, else the
//! action's start in the service zone):
//!
//! - a key whose current row holds the same `compare` values as the query's row (default:
//!   every column of the query that is not a key) is left as it is;
//! - a key whose values changed has its current row closed and a new one opened;
//! - a key the query no longer returns is closed (`closeMissing`, default true) or left open;
//! - a key the target has no current row for (new, or back after it was closed) is opened.
//!
//! Three statements, the same shape on every dialect: one `UPDATE` closes every current row
//! that has no identical row in the query, one `INSERT ... SELECT` opens a row for every key
//! of the query without a current row, and a count first refuses a query that returns a key
//! twice. `truncateBefore` empties the target first.

// `export_plugin!` expands to abi_stable's export code, which is unsafe; this crate writes
// no unsafe code of its own.
#![allow(unsafe_code)]

use weft_sdk::{
    ActionModule, AttributeKind, AttributeSpec, AttributeValue, Connection, Dialect, ModuleInfo,
    PluginError, PluginResult, Problem, RunContext, RunOutcome, TableInfo, ValidateInput,
    ValidateOutput, Value, export_plugin,
};
use weft_sql_support::{
    column_probe, count_of, describe_object, described_table, match_columns, names_with_offsets,
    quote,
};

/// The default name of the column that holds when a period began.
pub const VALID_FROM: &str = "valid_from_dt";
/// The default name of the column that holds when a period ended.
pub const INVALID_FROM: &str = "invalid_from_dt";

/// The `History` module.
#[derive(Debug, Default)]
pub struct History;

fn names(a: Option<&AttributeValue>) -> Vec<String> {
    a.and_then(AttributeValue::as_str)
        .map(|s| names_with_offsets(s).into_iter().map(|(n, _)| n).collect())
        .unwrap_or_default()
}

fn text_attribute<'a>(a: Option<&'a AttributeValue>, default: &'a str) -> &'a str {
    a.and_then(AttributeValue::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or(default)
}

impl ActionModule for History {
    fn info(&self) -> ModuleInfo {
        ModuleInfo::new(
            "History",
            "Keeps a type-2 history of the target from the query: changed rows close their period and open a new one, missing keys are closed, new keys opened.",
        )
        .targets(1, 1)
        .attribute(AttributeSpec::new("keys", AttributeKind::String, None, "key columns, comma-separated; default: the target's primary key without the period columns"))
        .attribute(AttributeSpec::new("validFrom", AttributeKind::String, Some(VALID_FROM), "the column holding when a period began"))
        .attribute(AttributeSpec::new("invalidFrom", AttributeKind::String, Some(INVALID_FROM), "the column holding when a period ended (NULL or openUntil while it is current)"))
        .attribute(AttributeSpec::new("openUntil", AttributeKind::String, None, "the value of invalidFrom in a current period, e.g. 9999-12-31; default NULL"))
        .attribute(AttributeSpec::new("compare", AttributeKind::String, None, "the columns whose change opens a new period, comma-separated; default: every column of the query that is not a key"))
        .attribute(AttributeSpec::new("changeTime", AttributeKind::String, None, "when the changes happened (variables allowed, e.g. ${action_start_utc}); default: a scheduled run's schedule_date, else the action's start in the service zone"))
        .attribute(AttributeSpec::new("closeMissing", AttributeKind::Bool, Some("true"), "close the current period of a key the query no longer returns"))
        .attribute(weft_sql_support::truncate_before_attribute())
        .with_attributes(weft_sql_support::sql_attributes())
    }

    fn validate(&self, input: &ValidateInput) -> ValidateOutput {
        let dialect = input
            .targets()
            .first()
            .map_or(Dialect::Unknown, |t| t.dialect());
        let mut out = weft_sql_support::check(input, dialect);
        for p in weft_sql_support::sources_on_target_connection(
            input,
            "History",
            "load the rows there first (Transfer)",
        ) {
            out.push(p);
        }
        let statements = input
            .action()
            .and_then(|sql| weft_sql_support::parse(sql, dialect).ok());
        if let Some(statements) = &statements
            && !weft_sql_support::is_one_query(statements)
        {
            out.push(Problem::error(
                "sql.not_a_query",
                "History's action text is one query (SELECT ...) whose rows are the target's current state",
                Some(0),
            ));
        }
        for name in ["keys", "compare"] {
            if input
                .attribute(name)
                .and_then(AttributeValue::as_str)
                .is_some_and(|s| names_with_offsets(s).is_empty())
            {
                out.push(
                    Problem::error(
                        "module.attribute",
                        format!(
                            "`{name}` names no column; write them comma-separated, e.g. `id, day`"
                        ),
                        None,
                    )
                    .on_attribute(name),
                );
            }
        }
        // Looped, each iteration's query holds only part of the keys: closing the missing
        // ones would close every other iteration's.
        if input
            .attribute("loopQuery")
            .and_then(AttributeValue::as_str)
            .is_some()
            && input
                .attribute("closeMissing")
                .and_then(AttributeValue::as_bool)
                != Some(false)
        {
            out.push(
                Problem::error(
                    "loop_close_missing",
                    "with loopQuery each run of History sees a part of the keys, and closeMissing would close the others' periods: set closeMissing: false",
                    None,
                )
                .on_attribute("loopQuery"),
            );
        }
        // Keys and compared columns must be columns of the query, the period columns not,
        // when the query names its columns.
        let Some(columns) = statements
            .as_ref()
            .and_then(|s| weft_sql_support::output_columns(s))
        else {
            return out;
        };
        let has = |c: &str| columns.iter().any(|q| q.eq_ignore_ascii_case(c));
        for name in ["keys", "compare"] {
            let Some(text) = input.attribute(name).and_then(AttributeValue::as_str) else {
                continue;
            };
            for (column, offset) in names_with_offsets(text) {
                if !has(&column) {
                    out.push(
                        Problem::error(
                            name,
                            format!(
                                "`{column}` is not a column of the query, which returns {}",
                                columns.join(", ")
                            ),
                            Some(offset as u32),
                        )
                        .on_attribute(name),
                    );
                }
            }
        }
        for (name, default) in [("validFrom", VALID_FROM), ("invalidFrom", INVALID_FROM)] {
            let column = text_attribute(input.attribute(name), default);
            if has(column) {
                out.push(Problem::error(
                    "period_column",
                    format!(
                        "the query returns `{column}`, History's {name} column, which History writes itself; leave it out of the query"
                    ),
                    None,
                ));
            }
        }
        out
    }

    fn run(&self, ctx: &mut RunContext) -> PluginResult<RunOutcome> {
        let target = ctx
            .targets()
            .first()
            .cloned()
            .ok_or_else(|| PluginError::new("History needs one target table"))?;
        let spec = Spec::of(ctx)?;
        let query = ctx.action().trim().trim_end_matches(';').to_owned();
        let (conn, log) = ctx.connection_and_log(target.connection_id())?;
        let info = describe_object(conn, &target)?;
        let plan = Plan::new(conn, &info, &spec, &query)?;
        let removed = if spec.truncate {
            weft_sql_support::empty_before(conn, log, &plan.table)?
        } else {
            0
        };
        let (read, twice) = plan.count(conn)?;
        if twice > 0 {
            return Err(PluginError::new(format!(
                "the query returns {twice} key(s) more than once: a history holds one current row per key ({}); make the query return one row per key",
                plan.keys.join(", ")
            )));
        }
        let closed = conn.execute(&plan.close, &plan.close_params)?;
        let opened = conn.execute(&plan.open, &plan.open_params)?;
        let unchanged = read.saturating_sub(opened);
        log.log(&format!(
            "History of {} by ({}) at {}: {read} row(s) read, {opened} period(s) opened, {closed} closed, {unchanged} unchanged.",
            plan.table,
            plan.keys.join(", "),
            spec.change_time
        ));
        Ok(RunOutcome {
            rows_read: read,
            rows_written: opened,
            rows_updated: closed,
            rows_deleted: removed,
        })
    }
}

/// What the attributes ask, read once.
struct Spec {
    keys: Vec<String>,
    compare: Vec<String>,
    valid_from: String,
    invalid_from: String,
    open_until: Option<String>,
    change_time: String,
    close_missing: bool,
    truncate: bool,
}

impl Spec {
    fn of(ctx: &RunContext) -> PluginResult<Spec> {
        let change_time = match ctx
            .text("changeTime")
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            Some(t) => substitute(t, ctx),
            None => default_change_time(ctx),
        };
        if change_time.is_empty() {
            return Err(PluginError::new(
                "History has no change time: attribute `changeTime` is empty after its variables were put in",
            ));
        }
        Ok(Spec {
            keys: names(ctx.attribute("keys")),
            compare: names(ctx.attribute("compare")),
            valid_from: text_attribute(ctx.attribute("validFrom"), VALID_FROM).to_owned(),
            invalid_from: text_attribute(ctx.attribute("invalidFrom"), INVALID_FROM).to_owned(),
            open_until: ctx
                .text("openUntil")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
            change_time,
            close_missing: ctx.flag("closeMissing", true),
            truncate: ctx.flag("truncateBefore", false),
        })
    }
}

/// The default change time: a scheduled run's `schedule_date` (its planned day), else the
/// action's start in the service zone.
fn default_change_time(ctx: &RunContext) -> String {
    let scheduled = ctx
        .variable("planned_start")
        .is_some_and(|p| !p.trim().is_empty());
    let name = if scheduled {
        "schedule_date"
    } else {
        "action_start_local"
    };
    ctx.variable(name).unwrap_or_default().to_owned()
}

/// `text` with each `${name}` replaced by the run's variable of that name, as in the action
/// text (`$${` writes `${`; an unknown name is left as written).
fn substitute(text: &str, ctx: &RunContext) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        if start > 0 && rest.as_bytes()[start - 1] == b'$' {
            out.push_str(&rest[..start - 1]);
            out.push_str("${");
            rest = &rest[start + 2..];
            continue;
        }
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find('}') {
            Some(end) => {
                let name = &after[..end];
                match ctx.variable(name) {
                    Some(v) => out.push_str(v),
                    None => out.push_str(&rest[start..start + 3 + end]),
                }
                rest = &after[end + 1..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// The statements of one run, with their parameters.
struct Plan {
    table: String,
    keys: Vec<String>,
    count: String,
    close: String,
    close_params: Vec<Value>,
    open: String,
    open_params: Vec<Value>,
}

impl Plan {
    fn new(
        conn: &mut Connection,
        info: &TableInfo,
        spec: &Spec,
        query: &str,
    ) -> PluginResult<Plan> {
        let dialect = conn.dialect();
        let table = described_table(dialect, info);
        let (names, _) = conn.query_all(&column_probe(dialect, query), &[])?;
        let columns = match_columns(&names, info)?;
        let column = |wanted: &str, what: &str| -> PluginResult<&weft_sdk::ColumnInfo> {
            info.columns()
                .iter()
                .find(|c| c.name().eq_ignore_ascii_case(wanted))
                .ok_or_else(|| {
                    PluginError::new(format!(
                        "History keeps periods in table {table}, which has no column `{wanted}` ({what}; its columns: {}); add it or name another in the attribute",
                        info.columns().iter().map(|c| c.name()).collect::<Vec<_>>().join(", ")
                    ))
                })
        };
        let vf = column(&spec.valid_from, "validFrom")?;
        let invalid = column(&spec.invalid_from, "invalidFrom")?;
        for period in [vf.name(), invalid.name()] {
            if columns.iter().any(|c| c.eq_ignore_ascii_case(period)) {
                return Err(PluginError::new(format!(
                    "the query returns `{period}`, a period column History writes itself; leave it out of the query"
                )));
            }
        }
        let in_query = |wanted: &[String], what: &str| -> PluginResult<Vec<usize>> {
            wanted
                .iter()
                .map(|w| {
                    columns
                        .iter()
                        .position(|c| c.eq_ignore_ascii_case(w))
                        .ok_or_else(|| {
                            PluginError::new(format!(
                                "{what} column `{w}` is not a column of the query (its columns: {})",
                                names.join(", ")
                            ))
                        })
                })
                .collect()
        };
        let key_names = if spec.keys.is_empty() {
            info.primary_key()
                .iter()
                .filter(|k| {
                    !k.eq_ignore_ascii_case(vf.name()) && !k.eq_ignore_ascii_case(invalid.name())
                })
                .map(|k| (*k).to_owned())
                .collect()
        } else {
            spec.keys.clone()
        };
        if key_names.is_empty() {
            return Err(PluginError::new(format!(
                "History of {table} needs its key: the table's primary key names none but the period columns; give attribute `keys`"
            )));
        }
        let key_idx = in_query(&key_names, "key")?;
        let compare_idx = if spec.compare.is_empty() {
            (0..columns.len())
                .filter(|i| !key_idx.contains(i))
                .collect()
        } else {
            in_query(&spec.compare, "compared")?
        };
        let q = |c: &str| quote(dialect, c);
        // Target and query spellings of each key and compared column.
        let pairs = |idx: &[usize]| -> Vec<(String, String)> {
            idx.iter()
                .map(|&i| (q(&columns[i]), q(&names[i])))
                .collect()
        };
        let keys = pairs(&key_idx);
        let compared = pairs(&compare_idx);
        let source = format!("({query}\n) AS weft_q");
        let key_match = |t: &str| {
            keys.iter()
                .map(|(tc, sc)| format!("{t}.{tc} = weft_q.{sc}"))
                .collect::<Vec<_>>()
                .join(" AND ")
        };
        let same = |t: &str| {
            compared
                .iter()
                .map(|(tc, sc)| {
                    not_distinct(dialect, &format!("{t}.{tc}"), &format!("weft_q.{sc}"))
                })
                .collect::<Vec<_>>()
        };
        let change = Value::text(spec.change_time.clone());
        let open_value = spec.open_until.clone().map(Value::text);
        let ends = q(invalid.name());
        let is_open = |t: &str| match open_value {
            Some(_) => format!("{t}.{ends} = ?"),
            None => format!("{t}.{ends} IS NULL"),
        };
        let mut identical = vec![key_match(&table)];
        identical.extend(same(&table));
        let mut close = format!(
            "UPDATE {table} SET {ends} = ? WHERE {} AND NOT EXISTS (SELECT 1 FROM {source} WHERE {})",
            is_open(&table),
            identical.join(" AND ")
        );
        if !spec.close_missing {
            close.push_str(&format!(
                " AND EXISTS (SELECT 1 FROM {source} WHERE {})",
                key_match(&table)
            ));
        }
        let mut close_params = vec![change.clone()];
        close_params.extend(open_value.clone());
        // A parameter in a select list has no type of its own: cast to the column's, except
        // on SQLite, whose casts would turn text into a number.
        let typed = |c: &weft_sdk::ColumnInfo| match dialect {
            // MySQL's CAST knows other type names (DATETIME, CHAR), and needs none here.
            Dialect::Sqlite | Dialect::MySql => "?".to_owned(),
            _ => format!("CAST(? AS {})", c.type_name()),
        };
        let target_cols: Vec<String> = columns.iter().map(|c| q(c)).collect();
        let source_cols: Vec<String> = names.iter().map(|c| format!("weft_q.{}", q(c))).collect();
        let open = format!(
            "INSERT INTO {table} ({}, {}, {ends}) SELECT {}, {}, {} FROM {source} WHERE NOT EXISTS (SELECT 1 FROM {table} weft_t WHERE {} AND {})",
            target_cols.join(", "),
            q(vf.name()),
            source_cols.join(", "),
            typed(vf),
            if open_value.is_some() {
                typed(invalid)
            } else {
                "NULL".to_owned()
            },
            key_match("weft_t"),
            is_open("weft_t"),
        );
        let mut open_params = vec![change];
        open_params.extend(open_value.clone());
        open_params.extend(open_value);
        let group: Vec<String> = keys.iter().map(|(_, sc)| format!("weft_q.{sc}")).collect();
        let count = format!(
            "SELECT SUM(weft_n), SUM(CASE WHEN weft_n > 1 THEN 1 ELSE 0 END) FROM (SELECT COUNT(*) AS weft_n FROM {source} GROUP BY {}) weft_g",
            group.join(", ")
        );
        Ok(Plan {
            table,
            keys: key_idx.iter().map(|&i| columns[i].clone()).collect(),
            count,
            close,
            close_params,
            open,
            open_params,
        })
    }

    /// How many rows the query returns, and how many of its keys it returns more than once.
    fn count(&self, conn: &mut Connection) -> PluginResult<(u64, u64)> {
        let (_, rows) = conn.query_all(&self.count, &[])?;
        let row = rows.first();
        let at = |i: usize| count_of(row.and_then(|r| r.get(i))).unwrap_or(0);
        Ok((at(0), at(1)))
    }
}

/// `a` and `b` are equal, two NULLs included, in `dialect`.
fn not_distinct(dialect: Dialect, a: &str, b: &str) -> String {
    match dialect {
        Dialect::Sqlite => format!("{a} IS {b}"),
        Dialect::Postgres | Dialect::H2 | Dialect::Hsqldb => {
            format!("{a} IS NOT DISTINCT FROM {b}")
        }
        Dialect::MySql => format!("{a} <=> {b}"),
        _ => format!("({a} = {b} OR ({a} IS NULL AND {b} IS NULL))"),
    }
}

export_plugin! {
    modules: [History],
    object_types: [],
    bridges: [],
}

#[cfg(test)]
mod tests;
