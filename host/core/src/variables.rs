//! `${...}` in an action's text: a variable's name, or a call of a date function on the
//! built-in variables (`${add_days(schedule_date, -1)}`,
//! `${format(start_of_month(schedule_date), '%Y%m%d')}`), substituted by [`substitute`]; and
//! what a run or a batch may set ([`refused`]). The functions ([`FUNCTIONS`]) take dates as
//! `YYYY-MM-DD` (the first ten characters of a longer value, such as `planned_start`) and give
//! dates in that form, except `format`. The executor computes the variables themselves
//! (`weft_engine::exec::variables`).

use chrono::{Datelike as _, Months, NaiveDate};

/// The variables weft sets for every action. A run may set `schedule_date` itself (a
/// backfill, a rerun of a past day); the others are refused when a run names them.
pub const BUILT_INS: &[&str] = &[
    "batch_instance_id",
    "action_id",
    "batch_name",
    "user",
    "schedule_date",
    "planned_start",
    "action_start_utc",
    "action_start_local",
];

/// Why a `${...}` could not be substituted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unset {
    /// A variable the text names is not set: its name.
    #[error("variable `{0}` is not set")]
    Variable(String),
    /// The expression cannot be read or computed: it, and why.
    #[error("`${{{0}}}`: {1}")]
    Expression(String, String),
}

/// The date functions `${...}` may call: name, arguments, what it gives.
pub const FUNCTIONS: &[(&str, &str, &str)] = &[
    (
        "add_days",
        "date, n",
        "the date n days later (n may be negative)",
    ),
    (
        "add_months",
        "date, n",
        "the date n months later, on the month's last day when it has no such day",
    ),
    (
        "start_of_month",
        "date",
        "the first day of the date's month",
    ),
    ("end_of_month", "date", "the last day of the date's month"),
    (
        "format",
        "date, 'pattern'",
        "the date written with a strftime pattern (`%Y%m%d`, `%d.%m.%Y`)",
    ),
];

/// Substitutes each `${...}` in `text` with its value, as text; `$${` writes a literal `${`.
///
/// # Errors
///
/// [`Unset`]: the first variable that is not set, or expression that cannot be computed.
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
            let inner = &after[..close];
            out.push_str(&evaluate(inner, variables)?);
            rest = &after[close + 1..];
        } else {
            out.push('$');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// The value of one `${...}`'s content: a variable's name (as written, whatever its
/// characters, as before functions existed), or a function call.
fn evaluate(inner: &str, variables: &[(String, String)]) -> Result<String, Unset> {
    let lookup = |name: &str| {
        variables
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    if let Some(v) = lookup(inner) {
        return Ok(v);
    }
    if !inner.contains('(') {
        return Err(Unset::Variable(inner.to_owned()));
    }
    let bad = |why: String| Unset::Expression(inner.to_owned(), why);
    let mut reader = Reader { text: inner, at: 0 };
    let value = reader.expression(&lookup).map_err(|e| match e {
        Fault::Unset(name) => Unset::Variable(name),
        Fault::Bad(why) => bad(why),
    })?;
    reader.blank();
    if reader.at < inner.len() {
        return Err(bad(format!(
            "unexpected `{}` at character {}",
            &inner[reader.at..],
            reader.at + 1
        )));
    }
    match value {
        Arg::Text(t) => Ok(t),
        Arg::Number(n) => Ok(n.to_string()),
    }
}

/// Whether each `${...}` of a run variable's value `text` can be computed from the built-ins
/// (by its shape, functions and names; the built-ins' values are not known yet): the first
/// that cannot, with why. A run's variables are checked so before the run is stored.
pub fn readable(text: &str) -> Result<(), Unset> {
    let built_in = |name: &str| BUILT_INS.contains(&name).then(|| "2000-01-01".to_owned());
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        let tail = &rest[i..];
        if let Some(after) = tail.strip_prefix("$${") {
            rest = after;
            continue;
        }
        let Some(after) = tail.strip_prefix("${") else {
            rest = &tail[1..];
            continue;
        };
        let Some(close) = after.find('}') else { break };
        let inner = &after[..close];
        match inner.contains('(') {
            false if built_in(inner).is_some() => {}
            false => return Err(Unset::Variable(inner.to_owned())),
            true => {
                let mut reader = Reader { text: inner, at: 0 };
                reader.expression(&built_in).map_err(|e| match e {
                    Fault::Unset(name) => Unset::Variable(name),
                    Fault::Bad(why) => Unset::Expression(inner.to_owned(), why),
                })?;
                reader.blank();
                if reader.at < inner.len() {
                    return Err(Unset::Expression(
                        inner.to_owned(),
                        format!(
                            "unexpected `{}` at character {}",
                            &inner[reader.at..],
                            reader.at + 1
                        ),
                    ));
                }
            }
        }
        rest = &after[close + 1..];
    }
    Ok(())
}

/// A value inside an expression.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Arg {
    Text(String),
    Number(i64),
}

/// Why an expression failed.
enum Fault {
    Unset(String),
    Bad(String),
}

/// Reads an expression: `name`, `'text'`, an integer, or `function(arg, ...)`.
struct Reader<'a> {
    text: &'a str,
    at: usize,
}

impl Reader<'_> {
    fn blank(&mut self) {
        while self.text[self.at..].starts_with(' ') {
            self.at += 1;
        }
    }

    fn expression(&mut self, lookup: &dyn Fn(&str) -> Option<String>) -> Result<Arg, Fault> {
        self.blank();
        let rest = &self.text[self.at..];
        if let Some(quoted) = rest.strip_prefix('\'') {
            let Some(end) = quoted.find('\'') else {
                return Err(Fault::Bad("a text in quotes is not closed".to_owned()));
            };
            self.at += end + 2;
            return Ok(Arg::Text(quoted[..end].to_owned()));
        }
        let len = rest
            .char_indices()
            .find(|(i, c)| !(c.is_ascii_alphanumeric() || *c == '_' || (*i == 0 && *c == '-')))
            .map_or(rest.len(), |(i, _)| i);
        let word = &rest[..len];
        if word.is_empty() {
            return Err(Fault::Bad(format!(
                "expected a name, a number or a 'text' at character {}",
                self.at + 1
            )));
        }
        self.at += len;
        if let Ok(n) = word.parse::<i64>() {
            return Ok(Arg::Number(n));
        }
        self.blank();
        if !self.text[self.at..].starts_with('(') {
            return lookup(word)
                .map(Arg::Text)
                .ok_or_else(|| Fault::Unset(word.to_owned()));
        }
        self.at += 1;
        let mut args = Vec::new();
        self.blank();
        if self.text[self.at..].starts_with(')') {
            self.at += 1;
        } else {
            loop {
                args.push(self.expression(lookup)?);
                self.blank();
                match self.text[self.at..].chars().next() {
                    Some(',') => self.at += 1,
                    Some(')') => {
                        self.at += 1;
                        break;
                    }
                    _ => {
                        return Err(Fault::Bad(format!(
                            "expected `,` or `)` at character {} in the arguments of `{word}`",
                            self.at + 1
                        )));
                    }
                }
            }
        }
        call(word, &args).map_err(Fault::Bad)
    }
}

/// Function `name` on `args`.
fn call(name: &str, args: &[Arg]) -> Result<Arg, String> {
    let Some((_, params, _)) = FUNCTIONS.iter().find(|(n, _, _)| *n == name) else {
        let known: Vec<&str> = FUNCTIONS.iter().map(|(n, _, _)| *n).collect();
        return Err(format!(
            "unknown function `{name}`; the functions are {}",
            known.join(", ")
        ));
    };
    let wanted = params.split(',').count();
    if args.len() != wanted {
        return Err(format!(
            "`{name}` takes {wanted} argument(s) ({params}), found {}",
            args.len()
        ));
    }
    let date = |a: &Arg| -> Result<NaiveDate, String> {
        let text = match a {
            Arg::Text(t) => t.as_str(),
            Arg::Number(n) => return Err(format!("`{name}` needs a date, found the number {n}")),
        };
        text.get(..10)
            .and_then(|d| NaiveDate::parse_from_str(d, "%Y-%m-%d").ok())
            .ok_or_else(|| format!("`{name}` needs a date as YYYY-MM-DD, found `{text}`"))
    };
    let number = |a: &Arg| match a {
        Arg::Number(n) => Ok(*n),
        Arg::Text(t) => t
            .trim()
            .parse::<i64>()
            .map_err(|_| format!("`{name}` needs a whole number, found `{t}`")),
    };
    let day = |d: Option<NaiveDate>| {
        d.map(|d| Arg::Text(d.format("%Y-%m-%d").to_string()))
            .ok_or_else(|| format!("`{name}`: the date is out of range"))
    };
    match name {
        "add_days" => {
            let (d, n) = (date(&args[0])?, number(&args[1])?);
            day(chrono::Duration::try_days(n).and_then(|n| d.checked_add_signed(n)))
        }
        "add_months" => {
            let (d, n) = (date(&args[0])?, number(&args[1])?);
            let months = Months::new(u32::try_from(n.unsigned_abs()).unwrap_or(u32::MAX));
            day(if n >= 0 {
                d.checked_add_months(months)
            } else {
                d.checked_sub_months(months)
            })
        }
        "start_of_month" => day(date(&args[0])?.with_day(1)),
        "end_of_month" => {
            let d = date(&args[0])?;
            day(d
                .with_day(1)
                .and_then(|first| first.checked_add_months(Months::new(1)))
                .and_then(|next| next.pred_opt()))
        }
        _ => {
            // format
            let d = date(&args[0])?;
            let Arg::Text(pattern) = &args[1] else {
                return Err("`format` needs a pattern in quotes, such as '%Y%m%d'".to_owned());
            };
            let items: Vec<chrono::format::Item<'_>> =
                chrono::format::StrftimeItems::new(pattern).collect();
            if items
                .iter()
                .any(|i| matches!(i, chrono::format::Item::Error))
            {
                return Err(format!("`format`: `{pattern}` is no strftime pattern"));
            }
            let mut out = String::new();
            use std::fmt::Write as _;
            write!(out, "{}", d.format_with_items(items.into_iter()))
                .map_err(|_| format!("`format`: `{pattern}` does not apply to a date"))?;
            Ok(Arg::Text(out))
        }
    }
}

/// Why a run cannot set variable `name` to `value`, if it cannot: a built-in other than
/// `schedule_date`, a `schedule_date` that is no date, or a `${...}` that cannot be read.
pub fn refused(name: &str, value: &str) -> Option<String> {
    if name == "schedule_date" {
        return NaiveDate::parse_from_str(value, "%Y-%m-%d")
            .is_err()
            .then(|| format!("`schedule_date` must be a date as YYYY-MM-DD, found `{value}`"));
    }
    if BUILT_INS.contains(&name) {
        return Some(format!(
            "variable `{name}` is set by weft for every action and cannot be set by a run \
             (only `schedule_date` can)"
        ));
    }
    readable(value).err().map(|e| match e {
        Unset::Variable(unknown) => format!(
            "variable `{name}`: its value names `${{{unknown}}}`, which is no built-in variable \
             (a run's variables may use {}); write `$${{` for a literal `${{`",
            BUILT_INS.join(", ")
        ),
        e => format!("variable `{name}`: {e}"),
    })
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
            Err(Unset::Variable("missing".to_owned()))
        );
    }

    fn day(d: &str) -> Vec<(String, String)> {
        vec![
            ("schedule_date".to_owned(), d.to_owned()),
            ("planned_start".to_owned(), format!("{d} 02:30:00")),
        ]
    }

    #[test]
    fn date_functions_compute_from_the_built_ins() {
        let vars = day("2026-03-31");
        for (text, want) in [
            ("${add_days(schedule_date, -1)}", "2026-03-30"),
            ("${add_days(schedule_date, 1)}", "2026-04-01"),
            ("${add_days( planned_start , -31 )}", "2026-02-28"),
            ("${add_months(schedule_date, -1)}", "2026-02-28"),
            ("${add_months(schedule_date, 11)}", "2027-02-28"),
            ("${start_of_month(schedule_date)}", "2026-03-01"),
            (
                "${end_of_month(add_months(schedule_date, -1))}",
                "2026-02-28",
            ),
            ("${format(schedule_date, '%Y%m%d')}", "20260331"),
            (
                "${format(add_days(schedule_date, 1), '%d.%m.%Y')}",
                "01.04.2026",
            ),
            ("${format('2024-02-29', '%j')}", "060"),
            (
                "d >= '${start_of_month(schedule_date)}' AND d < '${schedule_date}'",
                "d >= '2026-03-01' AND d < '2026-03-31'",
            ),
        ] {
            assert_eq!(substitute(text, &vars).as_deref(), Ok(want), "{text}");
        }
    }

    #[test]
    fn wrong_expressions_say_what_and_where() {
        let vars = day("2026-03-31");
        let err = |text: &str| substitute(text, &vars).expect_err(text).to_string();
        assert_eq!(
            err("${add_day(schedule_date, 1)}"),
            "`${add_day(schedule_date, 1)}`: unknown function `add_day`; the functions are add_days, add_months, start_of_month, end_of_month, format"
        );
        assert_eq!(
            err("${add_days(schedule_date)}"),
            "`${add_days(schedule_date)}`: `add_days` takes 2 argument(s) (date, n), found 1"
        );
        assert_eq!(
            err("${add_days(load_day, 1)}"),
            "variable `load_day` is not set"
        );
        assert_eq!(
            err("${add_days('31.03.2026', 1)}"),
            "`${add_days('31.03.2026', 1)}`: `add_days` needs a date as YYYY-MM-DD, found `31.03.2026`"
        );
        assert_eq!(
            err("${add_days(schedule_date, 1) x}"),
            "`${add_days(schedule_date, 1) x}`: unexpected `x` at character 28"
        );
        assert_eq!(
            err("${format(schedule_date, '%Q')}"),
            "`${format(schedule_date, '%Q')}`: `format`: `%Q` is no strftime pattern"
        );
        assert_eq!(
            err("${format(schedule_date, '%H')}"),
            "`${format(schedule_date, '%H')}`: `format`: `%H` does not apply to a date"
        );
        assert_eq!(
            err("${add_days(schedule_date, 'x)}"),
            "`${add_days(schedule_date, 'x)}`: a text in quotes is not closed"
        );
    }

    #[test]
    fn a_run_may_set_schedule_date_and_no_other_built_in() {
        assert_eq!(refused("schedule_date", "2026-01-31"), None);
        assert_eq!(
            refused("schedule_date", "yesterday").as_deref(),
            Some("`schedule_date` must be a date as YYYY-MM-DD, found `yesterday`")
        );
        assert!(
            refused("user", "me").is_some_and(|m| m.contains("cannot be set by a run")),
            "built-ins other than schedule_date are refused"
        );
        assert_eq!(refused("load_day", "${add_days(schedule_date, -1)}"), None);
        assert_eq!(refused("literal", "$${not_a_variable}"), None);
        assert!(
            refused("load_day", "${other}")
                .is_some_and(|m| m.contains("`${other}`, which is no built-in")),
        );
        assert!(
            refused("load_day", "${add_days(schedule_date, x)}")
                .is_some_and(|m| m.contains("`${x}`, which is no built-in")),
        );
        assert!(
            refused("load_day", "${nope(schedule_date)}")
                .is_some_and(|m| m.contains("unknown function `nope`")),
        );
    }
}
