//! An action's variables: `${name}` substitution in its text, shared by a plain run
//! (`exec::action`) and a loop's iterations (`exec::looped`), and the variables an action
//! of a batch instance runs with ([`of_action`]: the instance's, then the built-ins).

use weft_repo::work::InstanceInfo;

/// A variable the text names that is not set: its name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("variable `{0}` is not set")]
pub struct Unset(pub String);

/// Substitutes `${name}` in `text` with the variables' values, as text; `$${` writes a
/// literal `${`.
///
/// # Errors
///
/// [`Unset`]: the first variable that is not set.
pub fn substitute(text: &str, variables: &[(String, String)]) -> Result<String, Unset> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(after) = tail.strip_prefix("$${") {
            out.push_str("${");
            rest = after;
        } else if let Some(after) = tail.strip_prefix("${") {
            let Some(close) = after.find('}') else {
                out.push_str(tail);
                rest = "";
                break;
            };
            let name = &after[..close];
            match variables.iter().rev().find(|(n, _)| n == name) {
                Some((_, v)) => out.push_str(v),
                None => return Err(Unset(name.to_owned())),
            }
            rest = &after[close + 1..];
        } else {
            out.push('$');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// The variables of one action: the instance's, then the built-ins (which win over a
/// variable of the same name).
pub fn of_action(info: &InstanceInfo, instance: i64, action: i64) -> Vec<(String, String)> {
    let mut vars = info.variables.clone();
    // The service clock, as the scheduler and the SQL clock functions read it.
    let now = weft_core::sched::clock::current().clock.now();
    vars.extend([
        ("batch_instance_id".to_owned(), instance.to_string()),
        ("action_id".to_owned(), action.to_string()),
        ("batch_name".to_owned(), info.batch_name.clone()),
        ("user".to_owned(), info.user.clone()),
        ("schedule_date".to_owned(), schedule_date(info)),
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
            now.with_timezone(&weft_core::sched::clock::current().zone)
                .format("%Y-%m-%d %H:%M:%S")
                .to_string(),
        ),
    ]);
    vars
}

/// The day of `schedule_date`: the planned start's day for a scheduled run, else the day the
/// run started, both in the service time zone.
fn schedule_date(info: &InstanceInfo) -> String {
    match &info.planned_start {
        Some(p) => p.get(..10).unwrap_or_default().to_owned(),
        None => chrono::DateTime::parse_from_rfc3339(&info.start)
            .map(|t| {
                t.with_timezone(&weft_core::sched::clock::current().zone)
                    .format("%Y-%m-%d")
                    .to_string()
            })
            .unwrap_or_else(|_| info.start.get(..10).unwrap_or_default().to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitutes_variables_and_escapes() {
        let vars = vec![
            ("since".to_owned(), "2026-01-01".to_owned()),
            ("n".to_owned(), "5".to_owned()),
        ];
        assert_eq!(
            substitute(
                "a >= '${since}' AND b > ${n} AND c = '$${since}' AND $x",
                &vars
            ),
            Ok("a >= '2026-01-01' AND b > 5 AND c = '${since}' AND $x".to_owned())
        );
        assert_eq!(
            substitute("x = ${missing}", &vars),
            Err(Unset("missing".to_owned()))
        );
    }
}
