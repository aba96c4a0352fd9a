//! The repository file format (`.dsr`): HJSON text to a typed model, with a line and column
//! for every problem.
//!
//! [`hjson`] reads the text into a spanned value tree, [`read`] turns the tree into the
//! [`model`], collecting every missing, mistyped, duplicate or unknown field as a
//! [`Problem`]. Graph, module and repository rules are the job of `validate`. [`json`] is the
//! strict JSON reader the endpoint uses for request bodies; it shares the value tree.

pub mod fields;
pub mod format;
pub mod hjson;
pub mod json;
pub mod model;
pub mod problem;
pub mod project;
pub mod read;
pub mod value;
pub mod write;

pub use model::Document;
pub use problem::{Detail, Problem, Problems, Severity};
pub use value::{LineIndex, Path, Position, Span};

/// Reads a `.dsr` text. Syntax errors stop the reading (nothing else can be judged then);
/// every other problem is collected. The document is `None` only after a syntax error.
pub fn parse(text: &str) -> (Option<Document>, Problems) {
    let mut problems = Problems::default();
    match hjson::parse(text) {
        Ok(root) => {
            let doc = read::document(&root, text, &mut problems);
            (Some(doc), problems)
        }
        Err(e) => {
            problems.push(Problem::error(
                e.code,
                e.message,
                Span::new(e.offset, e.offset),
                &Path::root(),
            ));
            (None, problems)
        }
    }
}

#[cfg(test)]
mod tests;
