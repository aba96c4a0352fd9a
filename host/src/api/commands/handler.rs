//! What a command is to the server: a [`Handler`], which reads its payload at its place in
//! the request and answers it.

use crate::api::auth::Caller;
use crate::api::error::ApiError;
use crate::api::state::AppState;
use std::future::Future;
use std::sync::Arc;
use weft_dsr::value::Spanned;
use weft_dsr::{Path, Problems};
use weft_protocol::commands::{Request, Variable};

/// A command's payload as the envelope brought it.
pub struct Payload<'a> {
    /// The payload's value.
    pub value: &'a Spanned,
    /// Its path in the request (`payload`).
    pub path: Path,
    /// The envelope's `variableList`, already read (its problems said): `RunElements` takes
    /// it, the other commands have none to take.
    pub variables: Vec<weft_protocol::commands::Variable>,
}

impl Payload<'_> {
    /// The variables, for the one command that has them.
    pub fn take_variables(&mut self) -> Vec<Variable> {
        std::mem::take(&mut self.variables)
    }
}

/// A request as its handler sees it: its id and who sent it.
#[derive(Debug, Clone)]
pub struct Call {
    /// The request's id.
    pub request_id: u64,
    /// Who sent it.
    pub caller: Caller,
}

/// The longest line of the audit made from a payload.
const AUDIT_LINE: usize = 400;

/// `line` cut to [`AUDIT_LINE`] bytes (at a character's boundary), `...` marking the cut.
pub fn cut_line(mut line: String) -> String {
    if line.len() > AUDIT_LINE {
        let mut end = AUDIT_LINE;
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        line.truncate(end);
        line.push_str("...");
    }
    line
}

/// A command as the server knows it: how its payload is read and how it is answered.
pub trait Handler: Request + serde::Serialize + Sized + Send + 'static {
    /// The payload read, or `None` after each of its problems is in `problems` with its
    /// place. Reading goes on after a problem, so that the answer lists them all.
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self>;

    /// The answer. Work that blocks (the repository, the executor) runs on blocking threads.
    fn handle(
        self,
        state: &Arc<AppState>,
        call: &Call,
    ) -> impl Future<Output = Result<Self::Answer, ApiError>> + Send;

    /// Whether the command is audited: those that need more than the right to read (the
    /// admin's reading of users and of the audit itself aside).
    fn audited() -> bool {
        Self::RIGHT != weft_protocol::Right::Read
    }

    /// What the audit says of the command, in a line: its payload as JSON, cut.
    fn audit(&self) -> String {
        cut_line(serde_json::to_string(self).unwrap_or_default())
    }

    /// What the audit adds of a success: what it made (an instance, a deploy); `None` for
    /// one that changed nothing (a dry run, a deploy of what was deployed), which is not
    /// audited.
    fn audit_answer(_answer: &Self::Answer) -> Option<String> {
        Some(String::new())
    }
}
