//! The state words of instances and actions: stored in the repository as these words and
//! letters, and answered by the API as the same.

use serde::{Deserialize, Serialize};

/// The state of a batch instance; stored and answered as its word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InstanceState {
    /// `running`: actions are running or waiting for each other or a slot.
    Running,
    /// `waiting`: stored, none of its actions claimed by a host yet (every slot was busy).
    Waiting,
    /// `finished`: every action finished.
    Finished,
    /// `failed`: some action failed or was skipped.
    Failed,
    /// `halted`: halted on request.
    Halted,
    /// `interrupted`: the server stopped during the run.
    Interrupted,
}

impl InstanceState {
    /// The word stored in the repository and answered by the API.
    pub fn word(self) -> &'static str {
        match self {
            InstanceState::Running => "running",
            InstanceState::Waiting => "waiting",
            InstanceState::Finished => "finished",
            InstanceState::Failed => "failed",
            InstanceState::Halted => "halted",
            InstanceState::Interrupted => "interrupted",
        }
    }

    /// The state of a stored word, if it is one.
    pub fn from_word(word: &str) -> Option<Self> {
        Some(match word {
            "running" => InstanceState::Running,
            "waiting" => InstanceState::Waiting,
            "finished" => InstanceState::Finished,
            "failed" => InstanceState::Failed,
            "halted" => InstanceState::Halted,
            "interrupted" => InstanceState::Interrupted,
            _ => return None,
        })
    }

    /// Whether the instance has not ended (`running` or `waiting`).
    pub fn is_ongoing(self) -> bool {
        matches!(self, InstanceState::Running | InstanceState::Waiting)
    }
}

impl std::fmt::Display for InstanceState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.word())
    }
}

/// The state of one action of an instance; stored and answered as its one-letter code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ActionState {
    /// `D`: defined, waiting for the actions it depends on.
    Defined,
    /// `W`: ready, waiting for a slot.
    Waiting,
    /// `R`: running.
    Running,
    /// `F`: finished.
    Finished,
    /// `E`: failed.
    Error,
    /// `S`: skipped, because an action it depends on failed or was skipped.
    Skipped,
    /// `H`: halted before it started.
    Halted,
}

impl ActionState {
    /// The one-letter code stored in the repository and answered by the API.
    pub fn code(self) -> &'static str {
        match self {
            ActionState::Defined => "D",
            ActionState::Waiting => "W",
            ActionState::Running => "R",
            ActionState::Finished => "F",
            ActionState::Error => "E",
            ActionState::Skipped => "S",
            ActionState::Halted => "H",
        }
    }

    /// The state of a one-letter code, if it is one.
    pub fn from_code(code: &str) -> Option<Self> {
        Some(match code {
            "D" => ActionState::Defined,
            "W" => ActionState::Waiting,
            "R" => ActionState::Running,
            "F" => ActionState::Finished,
            "E" => ActionState::Error,
            "S" => ActionState::Skipped,
            "H" => ActionState::Halted,
            _ => return None,
        })
    }

    /// Whether the action has not started yet (`D` or `W`).
    pub fn is_pending(self) -> bool {
        matches!(self, ActionState::Defined | ActionState::Waiting)
    }

    /// Whether the action failed or was skipped, so that what depends on it is skipped.
    pub fn is_failure(self) -> bool {
        matches!(self, ActionState::Error | ActionState::Skipped)
    }
}

impl Serialize for ActionState {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.code())
    }
}

impl<'de> Deserialize<'de> for ActionState {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let code = String::deserialize(d)?;
        ActionState::from_code(&code).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "`{code}` is not an action state (one of D W R F E S H)"
            ))
        })
    }
}

impl std::fmt::Display for ActionState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.code())
    }
}
