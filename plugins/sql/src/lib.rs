//! The `Sql` action module: runs the action text (one or several statements) on the target
//! connection (or, for an action without a target, on its source's connection).
//!
//! Validation parses the text in the connection's dialect and names the tables it reads.

// `export_plugin!` expands to abi_stable's export code, which is unsafe; this crate writes
// no unsafe code of its own.
#![allow(unsafe_code)]

use weft_sdk::{
    ActionModule, Dialect, ModuleInfo, PluginError, PluginResult, Problem, RunContext, RunOutcome,
    ValidateInput, ValidateOutput, WrittenTable, export_plugin,
};

/// The `Sql` module.
#[derive(Debug, Default)]
pub struct Sql;

impl ActionModule for Sql {
    fn info(&self) -> ModuleInfo {
        ModuleInfo::new(
            "Sql",
            "Runs the action text (one or several statements) on the target connection.",
        )
        .with_attributes(weft_sql_support::sql_attributes())
    }

    fn validate(&self, input: &ValidateInput) -> ValidateOutput {
        let object = input.targets().first().or_else(|| input.sources().first());
        let dialect = object.map_or(Dialect::Unknown, |o| o.dialect());
        let mut out = weft_sql_support::check(input, dialect);
        if let Some(o) = object {
            for src in input
                .sources()
                .iter()
                .filter(|s| s.connection_id() != o.connection_id())
            {
                out.push(Problem::error(
                    "module.sources",
                    format!(
                        "Sql runs on connection {}, but source `{}` is on connection {}",
                        o.connection_id(),
                        src.name(),
                        src.connection_id()
                    ),
                    None,
                ));
            }
        }
        if object.is_none() {
            out.push(Problem::error(
                "module.targets",
                "Sql runs on the connection of its target (or source) object, and this action has none: add a node of type 1 for the table it writes (field1: the table, objectTypeId: 1, connectionId: the connection) and an edge from the action to it",
                None,
            ));
        }
        out
    }

    fn writes(&self, input: &ValidateInput) -> Vec<WrittenTable> {
        let object = input.targets().first().or_else(|| input.sources().first());
        let dialect = object.map_or(Dialect::Unknown, |o| o.dialect());
        weft_sql_support::written_tables(input, dialect)
    }

    fn run(&self, ctx: &mut RunContext) -> PluginResult<RunOutcome> {
        let connection_id = ctx
            .targets()
            .first()
            .or_else(|| ctx.sources().first())
            .map(|o| o.connection_id())
            .ok_or_else(|| {
                PluginError::new("Sql needs a target (or source) object to know its connection: add a node of type 1 for the table it writes and an edge from the action to it")
            })?;
        let sql = ctx.action().to_string();
        let changed = ctx.connection(connection_id)?.execute_batch(&sql)?;
        ctx.log(&format!(
            "Ran the action's SQL on connection {connection_id}: {changed} row(s) changed."
        ));
        Ok(RunOutcome {
            rows_read: 0,
            rows_written: changed,
            rows_updated: 0,
            rows_deleted: 0,
        })
    }
}

export_plugin! {
    modules: [Sql],
    object_types: [],
    bridges: [],
}
