//! What a command is to the server: a [`Handler`], which reads its payload at its place in
//! the request and answers it.

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

/// A command as the server knows it: how its payload is read and how it is answered.
pub trait Handler: Request + Sized + Send + 'static {
    /// The payload read, or `None` after each of its problems is in `problems` with its
    /// place. Reading goes on after a problem, so that the answer lists them all.
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self>;

    /// The answer. Work that blocks (the repository, the executor) runs on blocking threads.
    fn handle(
        self,
        state: &Arc<AppState>,
        request_id: u64,
    ) -> impl Future<Output = Result<Self::Answer, ApiError>> + Send;
}
