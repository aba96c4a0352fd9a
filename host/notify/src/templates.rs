//! What a notification says: templates in Jinja syntax (minijinja) over the facts of its
//! event and run, with defaults that read well in a mail client; a template that does not
//! parse is refused at deploy ([`check`]), and one that runs too long or writes too much is
//! stopped ([`render`]).

use minijinja::{Environment, UndefinedBehavior};

/// The default subject of an e-mail.
pub const EMAIL_SUBJECT: &str = "[weft] {{ batch }}: {{ headline }}";

/// The default body of an e-mail (plain text).
pub const EMAIL_BODY: &str = "\
{{ headline | capitalize }}.

Batch:    {{ batch }}
{% if instanceId %}Run:      {{ instanceId }} ({{ state }})
{% endif %}{% if scheduleDate %}Date:     {{ scheduleDate }}
{% endif %}{% if startedAt %}Started:  {{ startedAt }} UTC
{% endif %}{% if endedAt %}Ended:    {{ endedAt }} UTC ({{ duration }})
{% endif %}{% if planned %}Planned:  {{ planned }} ({{ reason }})
{% endif %}{% if error %}
Action {{ actionName or actionId }} failed:
  {{ error }}
{% endif %}{% if failedActions %}
Failed actions ({{ failedCount }}):
{% for a in failedActions %}  - {{ a.name }} ({{ a.id }}): {{ a.firstLine }}
{% endfor %}{% if failedCount > failedActions | length %}  ... and {{ failedCount - failedActions | length }} more
{% endif %}{% endif %}{% if url %}
{{ url }}
{% endif %}
-- 
weft, notification {{ id }} ({{ event }})
";

/// The most a template may do (minijinja's fuel: about one unit an instruction).
const FUEL: u64 = 200_000;

/// The most a rendered text may hold; longer is cut.
pub const MAX_OUTPUT: usize = 256 * 1024;

fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Lenient);
    env.set_fuel(Some(FUEL));
    env.set_keep_trailing_newline(true);
    env
}

/// Whether `source` is a template weft can render; the error says where it is not.
///
/// # Errors
///
/// The template's syntax error, with its line.
pub fn check(source: &str) -> Result<(), String> {
    let env = environment();
    env.template_from_str(source)
        .map(|_| ())
        .map_err(|e| describe(&e))
}

/// `source` rendered over `facts` (cut at [`MAX_OUTPUT`] bytes).
///
/// # Errors
///
/// A syntax error, or one met while rendering (out of fuel, a filter given a wrong value).
pub fn render(source: &str, facts: &serde_json::Value) -> Result<String, String> {
    let env = environment();
    let template = env.template_from_str(source).map_err(|e| describe(&e))?;
    let mut out = template
        .render(minijinja::Value::from_serialize(facts))
        .map_err(|e| describe(&e))?;
    if out.len() > MAX_OUTPUT {
        let mut end = MAX_OUTPUT;
        while !out.is_char_boundary(end) {
            end -= 1;
        }
        out.truncate(end);
    }
    Ok(out)
}

/// An error as one line: what, and the template's line.
fn describe(e: &minijinja::Error) -> String {
    let what = e
        .detail()
        .map_or_else(|| e.kind().to_string(), str::to_owned);
    match e.line() {
        Some(line) => format!("{what} (template line {line})"),
        None => what,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> serde_json::Value {
        serde_json::json!({"id": 7, "event": "failed", "headline": "run 812 failed",
            "batch": "nightly load", "instanceId": 812, "state": "failed",
            "scheduleDate": "2026-11-27", "startedAt": "2026-11-27 01:00:00.000",
            "endedAt": "2026-11-27 01:00:41.200", "duration": "41 s",
            "failedActions": [{"id": 4100, "name": "load orders", "firstLine": "no such table: orders"}],
            "failedCount": 3, "url": "http://weft.example/#/runs/812"})
    }

    #[test]
    fn the_default_mail_names_the_batch_the_run_its_failures_and_the_link() {
        let subject = render(EMAIL_SUBJECT, &facts()).expect("subject");
        assert_eq!(subject, "[weft] nightly load: run 812 failed");
        let body = render(EMAIL_BODY, &facts()).expect("body");
        assert!(
            body.starts_with("Run 812 failed.\n\nBatch:    nightly load\nRun:      812 (failed)\n"),
            "{body}"
        );
        assert!(
            body.contains("  - load orders (4100): no such table: orders\n  ... and 2 more\n"),
            "{body}"
        );
        assert!(body.contains("http://weft.example/#/runs/812"), "{body}");
        assert!(!body.contains("Planned:"), "{body}");
    }

    #[test]
    fn a_slack_body_is_a_template_with_tojson() {
        let t = r#"{"text": {{ ("*" ~ batch ~ "* " ~ headline ~ ": " ~ url) | tojson }}}"#;
        let body = render(t, &facts()).expect("body");
        let v: serde_json::Value = serde_json::from_str(&body).expect("JSON");
        assert_eq!(
            v["text"],
            "*nightly load* run 812 failed: http://weft.example/#/runs/812"
        );
    }

    #[test]
    fn a_broken_template_is_refused_with_its_line_and_a_runaway_one_stopped() {
        let e = check("line one\n{% if batch %}\nno end").expect_err("unclosed block");
        assert!(e.contains("line 3") || e.contains("line 2"), "{e}");
        let e = render(
            "{% for a in range(1000) %}{% for b in range(1000) %}x{% endfor %}{% endfor %}",
            &facts(),
        )
        .expect_err("out of fuel");
        assert!(e.contains("fuel"), "{e}");
        let long = render(
            "{% for a in range(100000) %}xxxxxxxxxx{% endfor %}",
            &facts(),
        );
        // Either stopped for fuel or cut at the limit: never more than the limit.
        if let Ok(out) = long {
            assert!(out.len() <= MAX_OUTPUT);
        }
    }
}
