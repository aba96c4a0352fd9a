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
/// The most bytes the templates of one deploy may render in all.
pub const MAX_RENDERED_TOTAL: usize = 64 << 20;
/// The steps the templates of one deploy may take in all: a document of many actions of
/// one heavy template module cannot hold the deploy for long.
const FUEL_TOTAL: u64 = 50_000_000;

/// What the templates of one deploy may still render and take, shared by every template
/// it renders (template modules and `template: true` alike).
#[derive(Debug)]
pub struct RenderBudget {
    bytes: usize,
    fuel: u64,
}

impl Default for RenderBudget {
    fn default() -> Self {
        RenderBudget {
            bytes: MAX_RENDERED_TOTAL,
            fuel: FUEL_TOTAL,
        }
    }
}

/// What a template writes, refused past `limit` bytes as it is written (`refused` then
/// says why: minijinja's error only says that writing failed).
struct Capped {
    out: Vec<u8>,
    limit: usize,
    refused: Option<String>,
}

impl std::io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.out.len() + buf.len() > self.limit {
            let why = if self.limit < MAX_RENDERED {
                format!("the deploy's templates render more than {MAX_RENDERED_TOTAL} bytes in all")
            } else {
                format!("the template renders more than {MAX_RENDERED} bytes")
            };
            self.refused = Some(why.clone());
            return Err(std::io::Error::other(why));
        }
        self.out.extend_from_slice(buf);
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
    budget: &mut RenderBudget,
    problems: &mut Problems,
) -> std::collections::HashSet<i64> {
    let mut failed = std::collections::HashSet::new();
    for (i, s) in doc.sheets.iter_mut().enumerate() {
        for (j, n) in s.nodes.iter_mut().enumerate() {
            let NodeAttributes::Action(a) = &mut n.attributes else {
                continue;
            };
            // (An action of a template module holds what its module rendered already.)
            if !a.template || a.rendered {
                continue;
            }
            let Some(source) = a.action.clone() else {
                continue;
            };
            let apath = Path::node_attributes(i, j);
            match render_str(&source.v, minijinja::context! {}, budget) {
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

impl Failure {
    /// minijinja's error `e` in template `source`: the place of the mistake in the template,
    /// where minijinja knows it, and what it says.
    pub(super) fn of(e: &minijinja::Error, source: &str) -> Failure {
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
        Failure { offset, message }
    }
}

/// `source` rendered with `context`: Jinja as minijinja reads it, a name the context does
/// not hold refused (not rendered empty), at most [`FUEL`] steps and [`MAX_RENDERED`] bytes,
/// and within what `budget` has left for the deploy (which it takes).
pub(super) fn render_str(
    source: &str,
    context: minijinja::Value,
    budget: &mut RenderBudget,
) -> Result<String, Failure> {
    if budget.fuel == 0 {
        return Err(Failure {
            offset: None,
            message: format!(
                "the deploy's templates take more than {FUEL_TOTAL} steps in all; deploy fewer actions of heavy templates at once"
            ),
        });
    }
    let mut env = minijinja::Environment::new();
    env.set_fuel(Some(FUEL.min(budget.fuel)));
    env.set_keep_trailing_newline(true);
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    let mut out = Capped {
        out: Vec::new(),
        limit: MAX_RENDERED.min(budget.bytes),
        refused: None,
    };
    let rendered = env.template_from_str(source).and_then(|t| {
        let captured = t.render_captured_to(context, &mut out)?;
        Ok(captured
            .state()
            .fuel_levels()
            .map_or(0, |(consumed, _)| consumed))
    });
    match rendered {
        Ok(consumed) => {
            budget.fuel = budget.fuel.saturating_sub(consumed.max(1));
            budget.bytes = budget.bytes.saturating_sub(out.out.len());
            Ok(String::from_utf8_lossy(&out.out).into_owned())
        }
        Err(e) => {
            // One that ran out of fuel took all it was given; the others stopped early.
            let took = if e.kind() == minijinja::ErrorKind::OutOfFuel {
                FUEL.min(budget.fuel)
            } else {
                1
            };
            budget.fuel = budget.fuel.saturating_sub(took);
            let mut failure = Failure::of(&e, source);
            if let Some(why) = out.refused.take() {
                failure.message = why;
            }
            Err(failure)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deploys_templates_share_one_budget_of_bytes_and_steps() {
        let mut budget = RenderBudget {
            bytes: 10,
            fuel: 1_000,
        };
        let ctx = || minijinja::context! {};
        assert_eq!(
            render_str("abc", ctx(), &mut budget).ok().as_deref(),
            Some("abc")
        );
        assert_eq!(budget.bytes, 7);
        let over = render_str("{{ 'x' * 8 }}", ctx(), &mut budget).expect_err("over");
        assert!(
            over.message.contains("render more than"),
            "{}",
            over.message
        );
        assert!(over.message.contains("in all"), "{}", over.message);
        // A loop that runs out of the steps left takes them all; the next is refused at once.
        let mut budget = RenderBudget {
            bytes: 1 << 20,
            fuel: 50,
        };
        let out = render_str(
            "{% for i in range(1000) %}{{ i }}{% endfor %}",
            ctx(),
            &mut budget,
        )
        .expect_err("out of fuel");
        assert!(out.message.contains("fuel"), "{}", out.message);
        assert_eq!(budget.fuel, 0);
        let refused = render_str("a", ctx(), &mut budget).expect_err("refused");
        assert!(
            refused.message.contains("steps in all"),
            "{}",
            refused.message
        );
    }
}
