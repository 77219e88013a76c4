//! A check made before a command acts (or by `kite doctor`), and what it found.

use serde::Serialize;

/// What a check found.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// As it should be.
    Ok,
    /// Worth knowing; it does not stop the command.
    Warn,
    /// It stops the command: nothing is changed.
    Fail,
}

/// One check and its evidence.
#[derive(Serialize, Clone, Debug)]
pub struct Check {
    /// What was checked.
    pub name: String,
    /// What it found.
    pub outcome: Outcome,
    /// What was observed, in a sentence.
    pub observed: String,
    /// What to do about it, when it is not `Ok`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Check {
    /// A check that passed.
    pub fn ok(name: impl Into<String>, observed: impl Into<String>) -> Self {
        Self { name: name.into(), outcome: Outcome::Ok, observed: observed.into(), fix: None }
    }

    /// A check that warns, and what to do.
    pub fn warn(name: impl Into<String>, observed: impl Into<String>, fix: impl Into<String>) -> Self {
        Self { name: name.into(), outcome: Outcome::Warn, observed: observed.into(), fix: Some(fix.into()) }
    }

    /// A check that failed, and what to do.
    pub fn fail(name: impl Into<String>, observed: impl Into<String>, fix: impl Into<String>) -> Self {
        Self { name: name.into(), outcome: Outcome::Fail, observed: observed.into(), fix: Some(fix.into()) }
    }
}
