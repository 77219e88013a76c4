//! What a step waits for, and how that is said to people.

use super::owner::describe;
use serde::Serialize;
use serde_json::Value;

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

impl Wait {
    /// What it waits for, for people.
    pub fn describe(&self) -> String {
        match self {
            Wait::NamespacesGone { names } => format!("namespace {} to be gone", names.join(", ")),
            Wait::CrdsEstablished { names } => format!("{} CustomResourceDefinitions to be Established", names.len()),
            Wait::DeploymentsAvailable { namespace, names } => {
                format!("Deployments {} in {namespace} to be Available", names.join(", "))
            }
            Wait::PlatformReady => "the KitePlatform's golden images (and the gateway's exposure) to be Ready".into(),
            Wait::Gone { objects } => {
                let names: Vec<String> = objects.iter().map(describe).collect();
                if names.len() > 3 {
                    format!("{} objects to be gone", names.len())
                } else {
                    format!("{} to be gone", names.join(", "))
                }
            }
            Wait::NoneLeft { kind, .. } => format!("every {kind} to be gone"),
            Wait::StackReady { name, version, .. } => match name {
                kite_core::api::StackName::Longhorn => {
                    format!("Longhorn {version}'s manager to roll out and its nodes to be schedulable")
                }
                _ => format!("{} {version} to be Available", name.title()),
            },
            Wait::JobComplete { namespace, name } => format!("Job {namespace}/{name} to complete"),
        }
    }

    /// What to do when it does not come.
    pub fn hint(&self) -> &'static str {
        match self {
            Wait::NamespacesGone { .. } => {
                "the conditions above name what holds the namespace (run `kite doctor`); once it is gone, run the command again"
            }
            Wait::CrdsEstablished { .. } => {
                "a CRD that is not Established was refused by the API server: `kubectl describe crd <name>` says why"
            }
            Wait::DeploymentsAvailable { .. } => {
                "`kubectl -n <namespace> describe deployment <name>` and the pods' events say why (an image the nodes cannot pull is the usual cause)"
            }
            Wait::PlatformReady => {
                "`kubectl get kiteplatform kite -o yaml` shows each image's import and the gateway's exposure; `kite doctor` checks both"
            }
            Wait::StackReady { .. } => {
                "the component's operator says why: `kubectl get kubevirt,cdi -A -o yaml` (their conditions), or for Longhorn `kubectl -n longhorn-system get daemonset,pods,nodes.longhorn.io`"
            }
            Wait::JobComplete { .. } => {
                "its pods' logs say why; for Longhorn's uninstall job, the setting deleting-confirmation-flag must be \"true\" and the manager running"
            }
            Wait::Gone { .. } | Wait::NoneLeft { .. } => {
                "the finalizers and conditions above say what holds each; Kite's own finalizers need the controller running (`kite doctor` checks it); then run the command again"
            }
        }
    }
}
