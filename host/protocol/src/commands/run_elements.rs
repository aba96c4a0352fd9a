//! `RunElements`: start a batch instance of sheets, actions or folders (SPEC 4.3), with the envelope's variables; answered with its id at once.

use super::Request;
use crate::elements::{ElementRef, Selection};
use crate::rights::Right;
use serde::{Deserialize, Serialize};

impl Request for RunElements {
    const NAME: &'static str = "RunElements";
    const RIGHT: Right = Right::Operate;
    type Answer = Started;
}

/// `RunElements {batchExecution: {batchName, user, elementList, select?}}`, with the envelope's
/// `variableList`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunElements {
    /// What to run and for whom.
    pub batch_execution: BatchExecution,
    /// `variableList`: sent in the envelope, beside the payload.
    #[serde(skip)]
    pub variables: Vec<Variable>,
}

/// `batchExecution`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchExecution {
    /// The instance's name.
    pub batch_name: String,
    /// Who started it.
    pub user: String,
    /// The sheets, actions and folders to run, each by id or path.
    pub element_list: Vec<ElementRef>,
    /// What is added to them by the data graph: what follows them (`downstream`) or what
    /// they follow (`upstream`).
    #[serde(skip_serializing_if = "is_named")]
    pub select: Selection,
}

fn is_named(s: &Selection) -> bool {
    *s == Selection::Named
}

/// One entry of `variableList`: `{variableName, variableType?, variableValue}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Variable {
    /// The name, `${name}` in action text.
    #[serde(rename = "variableName")]
    pub name: String,
    /// The declared type (SPEC 4.3 sends `String`; weft substitutes text whatever it says).
    #[serde(rename = "variableType", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The value as text (a number or boolean sent is taken as written).
    #[serde(rename = "variableValue")]
    pub value: String,
}

/// `RunElements`' answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Started {
    /// The new instance.
    pub batch_instance_id: i64,
}
