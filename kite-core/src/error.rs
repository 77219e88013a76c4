//! kite-core's errors.

/// What can go wrong computing what the cluster should hold.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    /// An object lacks a field the computation needs (name, namespace or uid),
    /// as one not read from the API server would.
    #[error("the {kind} has no {field}; it must come from the API server")]
    Incomplete {
        /// The kind of the object.
        kind: &'static str,
        /// The missing field.
        field: &'static str,
    },
}
