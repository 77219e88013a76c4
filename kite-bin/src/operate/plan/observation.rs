//! One look at the cluster, as a wait sees it.

/// One look at the cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observation {
    /// Whether the wait is over.
    pub done: bool,
    /// What was seen, for people.
    pub now: String,
    /// Whether what it waits for can no longer come (a Job that failed): the wait stops at once.
    pub failed: bool,
}

impl Observation {
    /// Not there yet, having seen `now`.
    pub fn waiting(now: String) -> Self {
        Self { done: false, now, failed: false }
    }
}
