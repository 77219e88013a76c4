//! A finalizer to release, planned: what holds it and whose operator would
//! release it. It is released when the step runs, only if that operator is
//! not running then.

use serde_json::Value;

/// A finalizer to release when the operator that would release it is not running.
#[derive(Clone, Debug)]
pub struct Release {
    /// What holds the finalizer.
    pub scope: Scope,
    /// The finalizer.
    pub finalizer: String,
    /// The operator's workload (`apiVersion`, `kind`, `metadata`): while it
    /// runs, the finalizer is left to it.
    pub operator: Value,
}

/// The objects a [`Release`] looks at.
#[derive(Clone, Debug)]
pub enum Scope {
    /// These objects, when they are being deleted.
    Objects(Vec<Value>),
    /// Every object of this API group in this namespace.
    Group {
        /// The API group, `longhorn.io`.
        group: String,
        /// The namespace.
        namespace: String,
    },
}
