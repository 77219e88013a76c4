//! A plan, the ground every command stands on: what was checked before
//! acting, and the steps, each with the changes it makes and the observed
//! state it then waits for; and the shapes a plan is made of (whose objects
//! they are, what a look at the cluster saw, a finalizer to release).
//!
//! Nothing here reads the cluster: a command observes first, then makes
//! its plan from what it observed with these.

pub mod change;
pub mod check;
pub mod observation;
pub mod owner;
pub mod release;
pub mod state;
pub mod wait;

pub use change::{Change, ChangeKind};
pub use check::{Check, Outcome};
pub use observation::Observation;
pub use owner::Owner;
pub use release::{Release, Scope};
pub use wait::Wait;

use serde_json::Value;
/// What a step does before it waits.
#[derive(Clone, Debug)]
pub enum Action {
    /// Nothing: the step only waits.
    Nothing,
    /// Applies these objects server-side, in order.
    Apply(Vec<Value>),
    /// Deletes these objects, in order, each only if it is `owner`'s.
    Delete {
        /// The objects.
        objects: Vec<Value>,
        /// Keep their dependents (the garbage collector removes their owner references instead).
        orphan: bool,
        /// Whose objects they must be.
        owner: Owner,
    },
    /// Releases a finalizer that nothing else would release: its operator is not running.
    Release(Box<Release>),
    /// Deletes the webhook configurations and APIServices that call a
    /// Service in these namespaces (when `stale_only`, only those whose Service is gone).
    RemoveHooks {
        /// The namespaces being removed.
        namespaces: Vec<String>,
        /// Only those whose Service is gone.
        stale_only: bool,
    },
    /// Deletes every object of a kind, in every namespace.
    DeleteAll {
        /// Its `apiVersion`.
        api_version: String,
        /// Its kind.
        kind: String,
    },
    /// Records what was installed in the `KitePlatform`'s status; who acted,
    /// the stack's versions and the time are read when it is recorded.
    Record {
        /// What was installed.
        installation: Box<kite_core::api::Installation>,
        /// Where Longhorn's settings are, for its version.
        longhorn_namespace: String,
    },
}

/// One step: what it changes, then what it waits for.
#[derive(Clone, Debug)]
pub struct Step {
    /// What the step does, for people.
    pub title: String,
    /// The objects it changes, as planned.
    pub changes: Vec<Change>,
    /// What it does.
    pub action: Action,
    /// What it then waits for.
    pub wait: Option<Wait>,
}

/// A command's plan: its checks, then its steps.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The command, `install` for example.
    pub operation: String,
    /// What was checked before anything is done.
    pub checks: Vec<Check>,
    /// What will be done, in order.
    pub steps: Vec<Step>,
}

impl Plan {
    /// Whether a check failed: then nothing may be done.
    pub fn blocked(&self) -> bool {
        self.checks.iter().any(|c| c.outcome == Outcome::Fail)
    }
}
