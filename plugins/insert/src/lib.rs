//! The `Insert` action module: `INSERT INTO target (columns) SELECT ...` from the action's
//! query, on the target's connection. The query's columns are matched to the target's by
//! name (ignoring case), so aliases decide where a value goes. Attribute `truncateBefore`
//! empties the target first (in the same transaction).

// `export_plugin!` expands to abi_stable's export code, which is unsafe; this crate writes
// no unsafe code of its own.
#![allow(unsafe_code)]

use weft_sdk::{
    ActionModule, ModuleInfo, PluginError, PluginResult, Problem, RunContext, RunOutcome,
    ValidateInput, ValidateOutput, export_plugin,
};
use weft_sql_support::{column_probe, describe_object, described_table, match_columns, quote};

/// The `Insert` module.
#[derive(Debug, Default)]
pub struct Insert;

impl ActionModule for Insert {
    fn info(&self) -> ModuleInfo {
        ModuleInfo::new("Insert", "Inserts the rows of the action's query into the target table, columns matched by name.")
            .targets(1, 1)
            .attribute(weft_sql_support::truncate_before_attribute())
            .with_attributes(weft_sql_support::sql_attributes())
    }

    fn validate(&self, input: &ValidateInput) -> ValidateOutput {
        let dialect = input
            .targets()
            .first()
            .map_or(weft_sdk::Dialect::Unknown, |t| t.dialect());
        let mut out = weft_sql_support::check(input, dialect);
        for p in weft_sql_support::sources_on_target_connection(
            input,
            "Insert",
            "use Transfer to move rows between connections",
        ) {
            out.push(p);
        }
        if let Some(sql) = input.action()
            && let Ok(statements) = weft_sql_support::parse(sql, dialect)
            && !weft_sql_support::is_one_query(&statements)
        {
            out.push(Problem::error(
                        "sql.not_a_query",
                        "Insert's action text is one query (SELECT ...) whose rows are inserted into the target",
                        Some(0),
                    ));
        }
        out
    }

    fn run(&self, ctx: &mut RunContext) -> PluginResult<RunOutcome> {
        let target = ctx
            .targets()
            .first()
            .cloned()
            .ok_or_else(|| PluginError::new("Insert needs one target table"))?;
        let truncate = ctx.flag("truncateBefore", false);
        let query = ctx.action().trim().trim_end_matches(';').to_owned();
        let (conn, log) = ctx.connection_and_log(target.connection_id())?;
        let dialect = conn.dialect();
        let info = describe_object(conn, &target)?;
        let table = described_table(dialect, &info);
        let (names, _) = conn.query_all(&column_probe(dialect, &query), &[])?;
        let columns = match_columns(&names, &info)?;
        let removed = if truncate {
            weft_sql_support::empty_before(conn, log, &table)?
        } else {
            0
        };
        let target_cols: Vec<String> = columns.iter().map(|c| quote(dialect, c)).collect();
        let source_cols: Vec<String> = names
            .iter()
            .map(|c: &String| format!("weft_q.{}", quote(dialect, c)))
            .collect();
        let sql = format!(
            "INSERT INTO {table} ({}) SELECT {} FROM ({query}\n) AS weft_q",
            target_cols.join(", "),
            source_cols.join(", ")
        );
        let n = conn.execute(&sql, &[])?;
        log.log(format!("Inserted {n} row(s) into {table}.").as_str());
        Ok(RunOutcome {
            rows_read: n,
            rows_written: n,
            rows_updated: 0,
            rows_deleted: removed,
        })
    }
}

export_plugin! {
    modules: [Insert],
    object_types: [],
    bridges: [],
}
