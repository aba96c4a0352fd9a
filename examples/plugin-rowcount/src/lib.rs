//! `Rowcount`: counts the rows of each source table and fails when one has fewer than
//! `minRows`. An example of a weft plugin: a module with an attribute, a `validate` that
//! points at that attribute, and a `run` that queries through the host's connections.

use weft_sdk::{
    ActionModule, AttributeKind, AttributeSpec, Datum, ModuleInfo, PluginError, PluginResult,
    Problem, RunContext, RunOutcome, ValidateInput, ValidateOutput, export_plugin,
};

/// The module.
#[derive(Debug, Default)]
pub struct Rowcount;

impl ActionModule for Rowcount {
    fn info(&self) -> ModuleInfo {
        ModuleInfo::new("Rowcount", "counts the rows of each source table")
            .sources(1, u32::MAX)
            .targets(0, 0)
            .attribute(AttributeSpec::new(
                "minRows",
                AttributeKind::Integer,
                Some("0"),
                "fail when a source table has fewer rows",
            ))
    }

    fn validate(&self, input: &ValidateInput) -> ValidateOutput {
        let mut out = ValidateOutput::new();
        // The host gives the declared default (0) when the action does not write it.
        let min = input.integer("minRows").unwrap_or(0);
        if min < 0 {
            // Placed at `minRows` in the .dsr file, answered as `Rowcount.minRows`.
            out.push(
                Problem::error(
                    "minRows",
                    format!("`minRows` is a number of rows, 0 or more; found {min}"),
                    None,
                )
                .on_attribute("minRows"),
            );
        }
        out
    }

    fn run(&self, ctx: &mut RunContext) -> PluginResult<RunOutcome> {
        let min = ctx.integer("minRows").unwrap_or(0);
        let mut total = 0u64;
        for source in ctx.sources().to_vec() {
            // Between tables, a halt of the batch stops the module.
            ctx.stop_if_halted()?;
            let table =
                weft_sql_support::qualified(source.dialect(), source.schema(), source.name());
            let sql = format!("SELECT COUNT(*) FROM {table}");
            let (_, rows) = ctx
                .connection(source.connection_id())?
                .query_all(&sql, &[])?;
            let count = match rows.first().and_then(|r| r.first()).map(|v| v.get()) {
                Some(Datum::Int(n)) => n,
                other => {
                    return Err(PluginError::new(format!(
                        "counting {}: expected a number, got {other:?}",
                        source.name()
                    )));
                }
            };
            ctx.log(&format!("{}: {count} rows", source.name()));
            if count < min {
                return Err(PluginError::new(format!(
                    "{} has {count} rows, fewer than minRows {min}",
                    source.name()
                )));
            }
            total += count.unsigned_abs();
        }
        Ok(RunOutcome {
            rows_read: total,
            ..RunOutcome::default()
        })
    }
}

export_plugin! {
    modules: [Rowcount],
    object_types: [],
    bridges: [],
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_sdk::testing::{self, Run, Validate};
    use weft_sdk::{AttributeValue, HaltSignal};

    #[test]
    fn a_negative_min_rows_is_refused_at_the_attribute() {
        let input = Validate::new(None)
            .attribute("minRows", AttributeValue::integer(-1))
            .build();
        let out = Rowcount.validate(&input);
        assert_eq!(out.problems().len(), 1);
        assert_eq!(out.problems()[0].attribute(), Some("minRows"));
    }

    #[test]
    fn it_counts_the_rows_and_fails_below_min_rows() {
        let db = "CREATE TABLE t (x); INSERT INTO t VALUES (1), (2);";
        let (mut ctx, log) = Run::new("")
            .source(testing::table(10, 1, "t"))
            .connection(1, testing::sqlite(db).expect("db"))
            .attribute("minRows", AttributeValue::integer(2))
            .build();
        assert_eq!(Rowcount.run(&mut ctx).expect("ran").rows_read, 2);
        assert_eq!(log.lines(), ["t: 2 rows"]);

        let (mut ctx, _) = Run::new("")
            .source(testing::table(10, 1, "t"))
            .connection(1, testing::sqlite(db).expect("db"))
            .attribute("minRows", AttributeValue::integer(3))
            .build();
        let e = Rowcount.run(&mut ctx).expect_err("too few");
        assert!(e.message().contains("fewer than minRows 3"), "{e}");
    }

    #[test]
    fn a_halted_run_stops_before_the_next_table() {
        let halt = HaltSignal::new();
        halt.raise();
        let (mut ctx, log) = Run::new("")
            .source(testing::table(10, 1, "t"))
            .connection(1, testing::sqlite("CREATE TABLE t (x);").expect("db"))
            .halt(halt)
            .build();
        let e = Rowcount.run(&mut ctx).expect_err("halted");
        assert_eq!(e.kind(), weft_sdk::ErrorKind::Halted);
        assert!(log.lines().is_empty());
    }
}
