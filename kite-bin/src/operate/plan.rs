//! A plan: what was checked before acting, and the steps, each with the
//! changes it makes and the observed state it then waits for.

use serde::Serialize;
use serde_json::Value;

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

/// What a step does to one object.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    /// It does not exist: it is created.
    Create,
    /// It exists and differs: it is updated.
    Update,
    /// It already holds what is desired: nothing is written.
    Unchanged,
    /// It is deleted.
    Delete,
    /// It is kept (the step's title says why).
    Keep,
}

/// One object a step changes.
#[derive(Serialize, Clone, Debug)]
pub struct Change {
    /// What happens to it.
    pub change: ChangeKind,
    /// `Kind namespace/name` or `Kind name`.
    pub object: String,
}

/// An observed state a step waits for.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(tag = "for", rename_all = "camelCase")]
pub enum Wait {
    /// These namespaces are gone (NotFound), not merely Terminating.
    NamespacesGone {
        /// Their names.
        names: Vec<String>,
    },
    /// These CustomResourceDefinitions are `Established`.
    CrdsEstablished {
        /// Their names.
        names: Vec<String>,
    },
    /// These Deployments are `Available` with every replica updated.
    DeploymentsAvailable {
        /// Their namespace.
        namespace: String,
        /// Their names.
        names: Vec<String>,
    },
    /// The `KitePlatform`'s golden images are Ready and, when exposure is
    /// enabled, the gateway is Ready with an address.
    PlatformReady,
    /// These objects are gone (NotFound). Each is `apiVersion`, `kind` and
    /// `metadata.name` (and `namespace`).
    Gone {
        /// The objects.
        objects: Vec<Value>,
    },
    /// A stack component runs at `version`: KubeVirt's and CDI's custom
    /// resource `Available` at it, Longhorn's manager rolled out to it and
    /// its nodes schedulable.
    StackReady {
        /// Which component.
        name: kite_core::api::StackName,
        /// The version it must report.
        version: String,
        /// Its custom resource (`apiVersion`, `kind`, `metadata.name`, `namespace`), when it has one.
        #[serde(skip_serializing_if = "Option::is_none")]
        resource: Option<Value>,
    },
    /// A Job completed; the wait fails at once when the Job fails.
    JobComplete {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// No object of this kind is left, in any namespace.
    NoneLeft {
        /// Its `apiVersion`.
        api_version: String,
        /// Its kind.
        kind: String,
    },
}

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
        owner: super::objects::Owner,
    },
    /// Releases a finalizer that nothing else would release: its operator is not running.
    Release(Box<super::stack::act::Release>),
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
