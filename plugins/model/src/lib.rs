//! The `Model` action module: the action's SELECT built into its table, as dbt builds a
//! model, on the target's connection and in the action's transaction.
//!
//! `materialize` says how:
//!
//! - `table` (the default): the query's rows into a new table under a temporary name, then
//!   the old table (or view) dropped and the new one renamed to its name; readers of the old
//!   one are blocked only for the swap, and a failure leaves the old one as it was.
//! - `view`: the old view (or table) dropped and the view made again, so that a view whose
//!   columns change is replaced (where `CREATE OR REPLACE VIEW` fails).
//! - `incremental`: the first run builds the table; later runs put the query's rows that
//!   `filter` keeps (a condition on them in which `{{this}}` names the table as it stands)
//!   into it: with `uniqueKey`, a row with the key of a new one is replaced by it; without,
//!   rows are added.
//!
//! On PostgreSQL a dropped table or view takes the views on it with it (`CASCADE`), as dbt
//! does: the models that make them, later in the run, make them again.
//!
//! The table is the target: `table`, else the name of the action's `file` without its
//! extension (`models/customers.sql`: `customers`), else the target object's.

// `export_plugin!` expands to abi_stable's export code, which is unsafe; this crate writes
// no unsafe code of its own.
#![allow(unsafe_code)]

pub mod build;

use weft_sdk::{
    ActionModule, AttributeKind, AttributeSpec, Dialect, ModuleInfo, PluginError, PluginResult,
    Problem, RunContext, RunOutcome, TableName, ValidateInput, ValidateOutput, WrittenTable,
    export_plugin,
};

/// How a model is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Materialize {
    /// A table, built and swapped in.
    Table,
    /// A view, made again.
    View,
    /// A table that later runs add to.
    Incremental,
}

/// A model's attributes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// How it is built.
    pub materialize: Materialize,
    /// The table, `(schema, name)`, when `table` or `file` names it.
    pub table: Option<(Option<String>, String)>,
    /// `incremental`: the key columns.
    pub unique_key: Vec<String>,
    /// `incremental`: the condition on the query's rows once the table stands.
    pub filter: Option<String>,
}

impl Options {
    /// Reads the attributes `text` answers by name.
    ///
    /// # Errors
    ///
    /// Every problem, each on its attribute.
    pub fn of<'a>(text: impl Fn(&str) -> Option<&'a str>) -> Result<Options, Vec<Problem>> {
        let mut problems = Vec::new();
        let mut wrong = |attribute: &str, message: String| {
            problems.push(Problem::error("Model.attribute", message, None).on_attribute(attribute));
        };
        let materialize = match text("materialize").map(str::trim) {
            None | Some("table") => Materialize::Table,
            Some("view") => Materialize::View,
            Some("incremental") => Materialize::Incremental,
            Some(other) => {
                wrong(
                    "materialize",
                    format!("`materialize: {other}` is not `table`, `view` or `incremental`"),
                );
                Materialize::Table
            }
        };
        let table = match (text("table"), text("file")) {
            (Some(t), _) => {
                let n = weft_sql_support::attribute_table(t);
                if n.is_none() {
                    wrong(
                        "table",
                        format!("`table: {t}` is not `name` or `schema.name`"),
                    );
                }
                n
            }
            (None, Some(f)) => weft_sql_support::file_stem(f).map(|s| (None, s)),
            (None, None) => None,
        };
        let unique_key: Vec<String> = text("uniqueKey")
            .map(|k| {
                k.split(',')
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let filter = text("filter").map(str::to_owned);
        if materialize != Materialize::Incremental {
            for a in ["uniqueKey", "filter"] {
                if text(a).is_some() {
                    wrong(a, format!("`{a}` is for `materialize: incremental`"));
                }
            }
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(Options {
            materialize,
            table,
            unique_key,
            filter,
        })
    }
}

/// The `Model` module.
#[derive(Debug, Default)]
pub struct Model;

impl ActionModule for Model {
    fn info(&self) -> ModuleInfo {
        let text = |name: &str, description: &str| {
            AttributeSpec::new(name, AttributeKind::String, None, description)
        };
        ModuleInfo::new(
            "Model",
            "Builds the action's SELECT into its table: materialize table (built under a temporary name and swapped in), view (made again), or incremental (rows added or replaced by uniqueKey).",
        )
        .targets(1, 1)
        .attribute(AttributeSpec::new(
            "materialize",
            AttributeKind::String,
            Some("table"),
            "table, view or incremental",
        ))
        .attribute(text("table", "the table or view built, `name` or `schema.name`; default the name of `file` without its extension, else the target object"))
        .attribute(text("uniqueKey", "incremental: the key columns, comma-separated; a new row replaces the row of its key"))
        .attribute(text("filter", "incremental: a condition on the query's rows once the table stands, `{{this}}` naming it (`order_date > (SELECT max(order_date) FROM {{this}})`)"))
        .attribute(weft_sql_support::validate_sql_attribute())
    }

    fn validate(&self, input: &ValidateInput) -> ValidateOutput {
        let mut out = ValidateOutput::new();
        if let Err(problems) = Options::of(|n| input.text(n)) {
            for p in problems {
                out.push(p);
            }
        }
        let dialect = input
            .targets()
            .first()
            .map_or(Dialect::Unknown, |o| o.dialect());
        out.append(weft_sql_support::check(input, dialect));
        if let Some(text) = input.action()
            && !out.has_errors()
            && let Ok(statements) =
                weft_sql_support::parse(&weft_sql_support::mask_variables(text), dialect)
            && !weft_sql_support::is_one_query(&statements)
        {
            out.push(Problem::error(
                "Model.query",
                "a Model's text is one query (SELECT ..., WITH ... SELECT ...), whose rows become its table",
                None,
            ));
        }
        out
    }

    fn writes(&self, input: &ValidateInput) -> Vec<WrittenTable> {
        let Ok(opts) = Options::of(|n| input.text(n)) else {
            return Vec::new();
        };
        let named = opts.table.or_else(|| {
            input
                .targets()
                .first()
                .filter(|t| !t.name().is_empty())
                .map(|t| {
                    (
                        t.schema().filter(|s| !s.is_empty()).map(str::to_owned),
                        t.name().to_owned(),
                    )
                })
        });
        named
            .map(|(s, n)| WrittenTable::new(TableName::new(s.as_deref(), &n, None), true))
            .into_iter()
            .collect()
    }

    fn run(&self, ctx: &mut RunContext) -> PluginResult<RunOutcome> {
        let opts = Options::of(|n| ctx.text(n)).map_err(|p| {
            PluginError::new(
                p.iter()
                    .map(Problem::message)
                    .collect::<Vec<_>>()
                    .join("; "),
            )
        })?;
        let target = ctx.targets().first().cloned().ok_or_else(|| {
            PluginError::new("a Model builds its target table: name its `connection` and `table` (or `file`), or give it a target object")
        })?;
        let query = ctx.action().trim().trim_end_matches(';').trim().to_owned();
        build::build(ctx, &target, &opts, &query)
    }
}

export_plugin! {
    modules: [Model],
    object_types: [],
    bridges: [],
}

#[cfg(test)]
mod tests;
