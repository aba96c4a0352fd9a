//! The variables an action of a batch instance runs with ([`of_action`]: the instance's,
//! each value's own `${...}` computed from the built-ins, then the built-ins), and the day
//! of `schedule_date`. What `${...}` may hold and how it is substituted is
//! `weft_core::variables`'.

use weft_repo::work::InstanceInfo;

pub use weft_core::variables::{Unset, substitute};

/// The variables of one action: the instance's (each value's own `${...}` computed from the
/// built-ins), then the built-ins, which win over a variable of the same name. A
/// `schedule_date` the run set is the built-in's value.
///
/// # Errors
///
/// A variable's value whose `${...}` cannot be computed: the variable's name and why.
pub fn of_action(
    info: &InstanceInfo,
    instance: i64,
    action: i64,
) -> Result<Vec<(String, String)>, String> {
    // The service clock, as the scheduler and the SQL clock functions read it.
    let clock = weft_core::sched::clock::current();
    let now = clock.clock.now();
    let built_in = [
        ("batch_instance_id".to_owned(), instance.to_string()),
        ("action_id".to_owned(), action.to_string()),
        ("batch_name".to_owned(), info.batch_name.clone()),
        ("user".to_owned(), info.user.clone()),
        (
            "schedule_date".to_owned(),
            schedule_date(&info.variables, info.planned_start.as_deref(), &info.start),
        ),
        (
            "planned_start".to_owned(),
            info.planned_start.clone().unwrap_or_default(),
        ),
        (
            "action_start_utc".to_owned(),
            now.format("%Y-%m-%d %H:%M:%S").to_string(),
        ),
        (
            "action_start_local".to_owned(),
            now.with_timezone(&clock.zone)
                .format("%Y-%m-%d %H:%M:%S")
                .to_string(),
        ),
    ];
    let mut vars = Vec::with_capacity(info.variables.len() + built_in.len());
    for (name, value) in &info.variables {
        let value = if value.contains("${") {
            substitute(value, &built_in).map_err(|e| format!("variable `{name}`: {e}"))?
        } else {
            value.clone()
        };
        vars.push((name.clone(), value));
    }
    vars.extend(built_in);
    Ok(vars)
}

/// The day of `schedule_date`: the one the run set, else the planned start's day for a
/// scheduled run, else the day the run started (`start`, UTC ISO 8601), both in the service
/// time zone.
pub fn schedule_date(
    variables: &[(String, String)],
    planned_start: Option<&str>,
    start: &str,
) -> String {
    if let Some((_, set)) = variables.iter().rev().find(|(n, _)| n == "schedule_date") {
        return set.clone();
    }
    match planned_start {
        Some(p) => p.get(..10).unwrap_or_default().to_owned(),
        None => chrono::DateTime::parse_from_rfc3339(start)
            .map(|t| {
                t.with_timezone(&weft_core::sched::clock::current().zone)
                    .format("%Y-%m-%d")
                    .to_string()
            })
            .unwrap_or_else(|_| start.get(..10).unwrap_or_default().to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_explicit_schedule_date_wins_over_the_planned_start_and_the_start() {
        let set = vec![("schedule_date".to_owned(), "2025-12-31".to_owned())];
        assert_eq!(
            schedule_date(&set, Some("2026-11-27 02:30:00"), "2026-11-27T01:30:00Z"),
            "2025-12-31"
        );
        assert_eq!(
            schedule_date(&[], Some("2026-11-27 02:30:00"), "2026-11-27T01:30:00Z"),
            "2026-11-27"
        );
    }
}
