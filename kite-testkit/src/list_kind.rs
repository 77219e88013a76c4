//! How a list field merges, [`ListKind`]: known from a resource type's
//! built-in merge keys or from its schema's `x-kubernetes-list-type`, used by
//! server-side apply and strategic merge.

/// How a list field merges under server-side apply and strategic merge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListKind {
    /// Replaced as a whole.
    Atomic,
    /// A set of scalars.
    Set,
    /// A map of objects keyed by these fields.
    Map(Vec<String>),
}
