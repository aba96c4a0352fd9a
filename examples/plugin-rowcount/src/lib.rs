//! `Rowcount`: counts the rows of each source table and fails when one has fewer than
//! `minRows`. An example of a weft plugin: a module with an attribute, a `validate` that
//! points at that attribute, and a `run` that queries through the host's connections.

use weft_sdk::{
    ActionModule, AttributeKind, AttributeSpec, AttributeValue, Datum, ModuleInfo, PluginError,
    PluginResult, Problem, RunContext, RunOutcome, ValidateInput, ValidateOutput, export_plugin,
    query_all,
};

/// The module.
#[derive(Debug, Default)]
pub struct Rowcount;

/// `minRows` of the action, 0 when not given.
fn min_rows(attribute: Option<&AttributeValue>) -> i64 {
    attribute.and_then(AttributeValue::as_integer).unwrap_or(0)
}

impl ActionModule for Rowcount {
    fn info(&self) -> ModuleInfo {
        ModuleInfo {
            name: "Rowcount".into(),
            description: "counts the rows of each source table".into(),
            attributes: vec![AttributeSpec::new(
                "minRows",
                AttributeKind::Integer,
                Some("0"),
                "fail when a source table has fewer rows",
            )]
            .into(),
            min_sources: 1,
            max_sources: u32::MAX,
            min_targets: 0,
            max_targets: 0,
        }
    }

    fn validate(&self, input: &ValidateInput) -> ValidateOutput {
        let mut out = ValidateOutput::default();
        let min = min_rows(input.attribute("minRows"));
        if min < 0 {
            // Placed at `minRows` in the .dsr file, answered as `Rowcount.minRows`.
            out.problems.push(
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
        let min = min_rows(ctx.attribute("minRows"));
        let mut total = 0u64;
        for source in ctx.sources.clone().iter() {
            let sql = format!(
                "SELECT COUNT(*) FROM \"{}\"",
                source.name.replace('"', "\"\"")
            );
            let (_, rows) = query_all(ctx.connection(source.connection_id)?, &sql, &[])?;
            let count = match rows.first().and_then(|r| r.first()).map(|v| v.get()) {
                Some(Datum::Int(n)) => n,
                other => {
                    return Err(PluginError::new(format!(
                        "counting {}: expected a number, got {other:?}",
                        source.name
                    )));
                }
            };
            ctx.log(&format!("{}: {count} rows", source.name));
            if count < min {
                return Err(PluginError::new(format!(
                    "{} has {count} rows, fewer than minRows {min}",
                    source.name
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

    #[test]
    fn a_negative_min_rows_is_refused_at_the_attribute() {
        let input = ValidateInput {
            action_id: 1,
            action: None.into(),
            attributes: vec![weft_sdk::abi_stable::std_types::Tuple2(
                "minRows".into(),
                AttributeValue::integer(-1),
            )]
            .into(),
            sources: Default::default(),
            targets: Default::default(),
        };
        let out = Rowcount.validate(&input);
        assert_eq!(out.problems.len(), 1);
        assert_eq!(
            out.problems[0]
                .attribute
                .as_ref()
                .map(|a| a.as_str())
                .into_option(),
            Some("minRows")
        );
    }
}
