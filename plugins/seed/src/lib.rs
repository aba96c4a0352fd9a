//! The `Seed` action module: a CSV or JSON lines file loaded into a table, as dbt loads its
//! seeds, without Java or a JDBC driver.
//!
//! The data is the action's text: a project's file read with `file: seeds/customers.csv`
//! (sent with the deploy, checked at deploy time with every mistake at its line), or, for
//! large files on the server's host, `path: /data/big.csv`, read when the action runs. Each
//! column's type is declared (`columnTypes: "amount numeric(10,2), note text"`) or inferred
//! as dbt infers it ([`infer`]). The table is the action's target (its object, or the one
//! the deploy derives from `table`, by default the file's name without its extension).
//!
//! A run loads the table again only when the data, or how it is read, changed: the table
//! carries the digest of what it was loaded from (PostgreSQL: the table's comment; SQLite:
//! a comment in its `CREATE TABLE`). On PostgreSQL a table whose columns stay is emptied
//! (`TRUNCATE`) and loaded through binary `COPY`, so that views on it stay; one whose
//! columns change is dropped (with what depends on it) and made again. On SQLite the table
//! is made again. All of it happens in the action's transaction: a failed load leaves the
//! table as it was.

// `export_plugin!` expands to abi_stable's export code, which is unsafe; this crate writes
// no unsafe code of its own.
#![allow(unsafe_code)]

pub mod infer;
pub mod load;
pub mod options;
pub mod read;

use options::Options;
use weft_sdk::{
    ActionModule, AttributeKind, AttributeSpec, ModuleInfo, PluginError, PluginResult, Problem,
    RunContext, RunOutcome, TableName, ValidateInput, ValidateOutput, WrittenTable, export_plugin,
};

/// The `Seed` module.
#[derive(Debug, Default)]
pub struct Seed;

impl ActionModule for Seed {
    fn info(&self) -> ModuleInfo {
        ModuleInfo::new(
            "Seed",
            "Loads a CSV or JSON lines file (the action's text, from `file`, or `path` on the server's host) into its target table, column types declared or inferred; loads it again only when the data changed.",
        )
        .sources(0, 0)
        .targets(1, 1)
        .attribute(AttributeSpec::new(
            "table",
            AttributeKind::String,
            None,
            "the table to load, `name` or `schema.name`; default the file's name without its extension",
        ))
        .attribute(AttributeSpec::new(
            "format",
            AttributeKind::String,
            None,
            "`csv` or `jsonl` (an object a line); default by the file's extension (.jsonl, .ndjson: jsonl), else csv",
        ))
        .attribute(AttributeSpec::new(
            "delimiter",
            AttributeKind::String,
            Some(","),
            "the character between a CSV line's fields",
        ))
        .attribute(AttributeSpec::new(
            "columnTypes",
            AttributeKind::String,
            None,
            "declared types of some columns, `name type` separated by commas (`amount numeric(10,2), note text`); the others are inferred",
        ))
        .attribute(AttributeSpec::new(
            "path",
            AttributeKind::String,
            None,
            "an absolute path on the server's host to read the data from when the action runs (for files too large to deploy), instead of the action's text",
        ))
    }

    fn validate(&self, input: &ValidateInput) -> ValidateOutput {
        let mut out = ValidateOutput::new();
        let opts = match Options::of(|n| input.text(n)) {
            Ok(o) => o,
            Err(problems) => {
                for p in problems {
                    out.push(p);
                }
                return out;
            }
        };
        let text = input.action().filter(|t| !t.is_empty());
        match (text, &opts.path) {
            // An empty file holds no header.
            (None, None) if opts.file.is_some() && input.action().is_some() => {
                out.push(Problem::error(
                    "Seed.data",
                    "the file is empty: a CSV seed starts with a header line naming its columns",
                    None,
                ));
            }
            // A `file` the host could not read is reported by the host.
            (None, None) if opts.file.is_none() => out.push(Problem::error(
                "Seed.data",
                "Seed needs its data: `file` (a CSV or JSON lines file of the project, relative to this document) or `path` (a file on the server's host)",
                None,
            )),
            (Some(_), Some(_)) => out.push(
                Problem::error(
                    "Seed.data",
                    "Seed reads its data from its text (or `file`) or from `path`, not both",
                    None,
                )
                .on_attribute("path"),
            ),
            _ => {}
        }
        if let Some(p) = &opts.path
            && let Err(why) = options::allowed_lexically(p)
        {
            out.push(Problem::error("Seed.path", why, None).on_attribute("path"));
        }
        if opts.table.is_none() {
            out.push(Problem::error(
                "Seed.table",
                "Seed needs its table: `table`, or `file` or `path` to take the file's name from",
                None,
            ));
        }
        if let Some(t) = text {
            match read::survey(t, opts.format) {
                Ok(s) => {
                    for (name, _) in &opts.declared {
                        if !s.columns.iter().any(|c| c.eq_ignore_ascii_case(name)) {
                            out.push(
                                Problem::error(
                                    "Seed.columnTypes",
                                    format!(
                                        "`columnTypes` declares column `{name}`, which the data does not have; its columns: {}",
                                        s.columns.join(", ")
                                    ),
                                    None,
                                )
                                .on_attribute("columnTypes"),
                            );
                        }
                    }
                }
                Err(m) => out.push(Problem::error(
                    "Seed.data",
                    m.message,
                    u32::try_from(m.offset).ok(),
                )),
            }
        }
        out
    }

    fn writes(&self, input: &ValidateInput) -> Vec<WrittenTable> {
        let Ok(opts) = Options::of(|n| input.text(n)) else {
            return Vec::new();
        };
        opts.table
            .map(|(schema, name)| {
                WrittenTable::new(TableName::new(schema.as_deref(), &name, None), true)
            })
            .into_iter()
            .collect()
    }

    fn run(&self, ctx: &mut RunContext) -> PluginResult<RunOutcome> {
        let opts = Options::of(|n| ctx.text(n)).map_err(|problems| {
            PluginError::new(
                problems
                    .iter()
                    .map(Problem::message)
                    .collect::<Vec<_>>()
                    .join("; "),
            )
        })?;
        let target = ctx.targets().first().cloned().ok_or_else(|| {
            PluginError::new(
                "Seed loads its target table, and this action has none: name its `connection` (the table is then `table`, or the file's name), or give it a target object",
            )
        })?;
        let owned;
        let (data, from): (&str, String) = match &opts.path {
            Some(path) => {
                owned = options::read_allowed(path)
                    .map_err(|e| PluginError::new(format!("Seed: {e}")))?;
                (&owned, path.clone())
            }
            None => {
                owned = ctx.action().to_owned();
                (
                    &owned,
                    opts.file
                        .clone()
                        .unwrap_or_else(|| "the action's text".into()),
                )
            }
        };
        let outcome = load::load(ctx, &target, &opts, data, &from)?;
        Ok(outcome)
    }
}

export_plugin! {
    modules: [Seed],
    object_types: [],
    bridges: [],
}
