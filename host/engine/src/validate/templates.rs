//! Templates in action text: an action with `template: true` has its text rendered at
//! deploy by minijinja (Jinja, as dbt users write it: `{% set %}`, `{% for %}`, `{% if %}`,
//! macros, filters), and the rendered SQL is what is checked, stored and run. A mistake in
//! the template is refused at its place in the template (`action.template`); the rendering
//! is bounded (fuel, and the size of what it writes). `${name}` variables are left for the
//! run, as in any text.

use weft_dsr::model::{Document, NodeAttributes};
use weft_dsr::{Path, Problems};

/// The most bytes a template may render.
pub const MAX_RENDERED: usize = 4 << 20;
/// The steps a template may take (minijinja's fuel): loops cannot run away.
const FUEL: u64 = 2_000_000;

/// What a template writes, refused past [`MAX_RENDERED`] bytes as it is written.
struct Capped(Vec<u8>);

impl std::io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.0.len() + buf.len() > MAX_RENDERED {
            return Err(std::io::Error::other(format!(
                "the template renders more than {MAX_RENDERED} bytes"
            )));
        }
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Renders the text of each action of `doc` that says `template: true`; `text` is the
/// deploy's (the actions' spans point into it). Answers the actions whose template did not
/// render (said at its place), for the checks that follow to leave alone.
pub fn render(
    doc: &mut Document,
    text: &str,
    problems: &mut Problems,
) -> std::collections::HashSet<i64> {
    let mut failed = std::collections::HashSet::new();
    for (i, s) in doc.sheets.iter_mut().enumerate() {
        for (j, n) in s.nodes.iter_mut().enumerate() {
            let NodeAttributes::Action(a) = &mut n.attributes else {
                continue;
            };
            if !a.template {
                continue;
            }
            let Some(source) = a.action.clone() else {
                continue;
            };
            let apath = Path::node_attributes(i, j);
            match render_str(&source.v, minijinja::context! {}) {
                Ok(out) => {
                    a.action = Some(weft_dsr::model::At::new(out, source.span));
                    a.rendered = true;
                }
                Err(e) => {
                    failed.insert(n.id.v);
                    let (span, path) = match e.offset {
                        Some(o) => {
                            super::actions::place(a, &apath, text, u32::try_from(o).ok(), None)
                        }
                        None => (source.span, apath.key("action")),
                    };
                    problems.error(
                        "action.template",
                        format!(
                            "action {}: the template does not render: {}",
                            n.id.v, e.message
                        ),
                        span,
                        &path,
                    );
                }
            }
        }
    }
    failed
}

/// A template that did not render: where in it (a byte offset) when known, and why.
pub(super) struct Failure {
    /// The byte offset of the mistake in the template.
    pub offset: Option<usize>,
    /// What went wrong.
    pub message: String,
}

/// `source` rendered with `context`: Jinja as minijinja reads it, a name the context does
/// not hold refused (not rendered empty), at most [`FUEL`] steps and [`MAX_RENDERED`] bytes.
pub(super) fn render_str(source: &str, context: minijinja::Value) -> Result<String, Failure> {
    let mut env = minijinja::Environment::new();
    env.set_fuel(Some(FUEL));
    env.set_keep_trailing_newline(true);
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    let mut out = Capped(Vec::new());
    let rendered = env
        .template_from_str(source)
        .and_then(|t| t.render_captured_to(context, &mut out).map(|_| ()));
    match rendered {
        Ok(()) => Ok(String::from_utf8_lossy(&out.0).into_owned()),
        Err(e) => {
            // The place of the mistake in the template, where minijinja knows it.
            let offset = e.range().map(|r| r.start).or_else(|| {
                e.line().map(|l| {
                    source
                        .split_inclusive('\n')
                        .take(l.saturating_sub(1))
                        .map(str::len)
                        .sum()
                })
            });
            let message = e
                .detail()
                .map_or_else(|| e.kind().to_string(), |d| format!("{}: {d}", e.kind()));
            Err(Failure { offset, message })
        }
    }
}
