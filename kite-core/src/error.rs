//! kite-core's errors.

/// What can go wrong computing what the cluster should hold, or converging it.
///
/// Every variant names the object or step it is about. These texts go to the
/// log and to Kubernetes Events; what users see is the sentence in the
/// object's status, never one of these. The variants about the API server
/// (`Error::Kube`, `Error::Finalizer`) exist with the feature `runtime`
/// only, so the enum is `#[non_exhaustive]`: a match that holds without the
/// feature holds with it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
    /// A request to the API server failed (feature `runtime`).
    #[cfg(feature = "runtime")]
    #[error("{action}: {source}")]
    Kube {
        /// What the reconciler was doing, for example `applying Service kite/vps-access-web`.
        action: String,
        /// What the client said.
        #[source]
        source: kube::Error,
    },
    /// An object of the name Kite would create exists and does not carry
    /// Kite's label: Kite neither adopts nor overwrites it.
    #[error("{kind} {namespace}/{name} exists and is not managed by Kite; it is left untouched")]
    NotOurs {
        /// The kind of the object.
        kind: String,
        /// Its namespace (empty for cluster-scoped objects).
        namespace: String,
        /// Its name.
        name: String,
    },
    /// An object could not be turned into JSON or back.
    #[error("{what}: {source}")]
    Serde {
        /// What was being converted.
        what: String,
        /// What serde said.
        #[source]
        source: serde_json::Error,
    },
    /// Generating an SSH key pair failed.
    #[error("generating an SSH key pair: {0}")]
    KeyGeneration(String),
    /// A Secret Kite wrote lacks a key it needs, or holds a value that does not parse.
    #[error("the Secret {namespace}/{name} has no usable {key}")]
    BadSecret {
        /// The Secret's namespace.
        namespace: String,
        /// The Secret's name.
        name: String,
        /// The key that is missing or unusable.
        key: &'static str,
    },
    /// Rendering the cloud-init user data failed.
    #[error("rendering cloud-init user data: {0}")]
    CloudInit(String),
    /// An API the controller needs is not served by the cluster.
    #[error("{api} is not served by this cluster; {hint}")]
    ApiNotInstalled {
        /// The missing API, as `group/version resource`.
        api: String,
        /// What the operator should install.
        hint: &'static str,
    },
    /// Not a failure: a step waits for objects to go away (a KubeVirt
    /// VirtualMachine stopping, a namespace terminating) and is retried soon.
    #[error("waiting for {0}")]
    Waiting(String),
    /// The finalizer helper failed (adding, running cleanup, or removing it; feature `runtime`).
    #[cfg(feature = "runtime")]
    #[error("finalizer: {0}")]
    Finalizer(#[source] Box<kube::runtime::finalizer::Error<Error>>),
}

impl Error {
    /// [`Error::Incomplete`]: an object of `kind` lacks `field`.
    pub fn incomplete(kind: &'static str, field: &'static str) -> Self {
        Error::Incomplete { kind, field }
    }

    /// A short, fixed label for metrics: the variant's name in snake case.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Error::Incomplete { .. } => "incomplete",
            #[cfg(feature = "runtime")]
            Error::Kube { .. } => "kube",
            Error::NotOurs { .. } => "not_ours",
            Error::Serde { .. } => "serde",
            Error::KeyGeneration(_) => "key_generation",
            Error::BadSecret { .. } => "bad_secret",
            Error::CloudInit(_) => "cloud_init",
            Error::ApiNotInstalled { .. } => "api_not_installed",
            Error::Waiting(_) => "waiting",
            #[cfg(feature = "runtime")]
            Error::Finalizer(_) => "finalizer",
        }
    }

    /// Whether this is [`Error::Waiting`] (directly or inside the finalizer
    /// helper's error): a step that waits, to be retried soon, not a failure.
    pub fn is_waiting(&self) -> bool {
        #[cfg(feature = "runtime")]
        use kube::runtime::finalizer::Error as F;
        match self {
            Error::Waiting(_) => true,
            #[cfg(feature = "runtime")]
            Error::Finalizer(inner) => matches!(&**inner, F::ApplyFailed(e) | F::CleanupFailed(e) if e.is_waiting()),
            _ => false,
        }
    }

    /// Wraps a client error with what was being done.
    #[cfg(feature = "runtime")]
    pub fn kube(action: impl Into<String>) -> impl FnOnce(kube::Error) -> Error {
        let action = action.into();
        move |source| Error::Kube { action, source }
    }
}
