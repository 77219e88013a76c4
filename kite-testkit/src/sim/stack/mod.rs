//! The stack's operators, for a cluster that starts without KubeVirt, CDI
//! and Longhorn ([`super::config::StackSimulation::Operators`]): once an operator's
//! own Deployment (or Longhorn's manager DaemonSet) runs, it does what the
//! upstream operator does with its custom resource.
//!
//! - **KubeVirt** ([`kubevirt`]): a `KubeVirt` gets the finalizer
//!   `kubevirt.io/foregroundDeleteKubeVirt`, KubeVirt's CRDs, `virt-api`
//!   (Deployment and Service), `virt-controller`, the `virt-handler`
//!   DaemonSet, the APIService `v1.subresources.kubevirt.io`, the webhook
//!   configuration `virt-api-validator`, the node label
//!   `kubevirt.io/schedulable=true`, and the status `phase: Deployed` with
//!   `Available` once they run. Deleted, it removes them all, then its
//!   finalizer; with `uninstallStrategy: BlockUninstallIfWorkloadsExist` it
//!   waits while instances exist.
//! - **CDI** ([`cdi`]): the same for the cluster-scoped `CDI` (finalizer
//!   `operator.cdi.kubevirt.io`): CDI's CRDs, `cdi-apiserver` and its
//!   Service `cdi-api`, `cdi-deployment`, `cdi-uploadproxy`, the APIService
//!   `v1beta1.upload.cdi.kubevirt.io` and the webhook configuration
//!   `cdi-api-dataimportcron-validate`.
//! - **Longhorn** ([`longhorn`]): while `longhorn-manager` runs, a
//!   `nodes.longhorn.io` per node (finalizer `longhorn.io`, `Ready` and
//!   `Schedulable`), the settings `deleting-confirmation-flag` and
//!   `current-longhorn-version`, the StorageClass `longhorn` of the
//!   `longhorn-storageclass` ConfigMap, and the webhook configurations
//!   `longhorn-webhook-validator` and `longhorn-webhook-mutator` served by
//!   `longhorn-admission-webhook`. The Job `longhorn-uninstall` fails unless
//!   `deleting-confirmation-flag` is `"true"`; then it removes Longhorn's
//!   objects, its webhooks, its StorageClass and the manager, and completes.
//!
//! A webhook is answered (allowed) only while the pods behind its Service
//! run; after that, calling it fails as on a real cluster.

pub(super) mod cdi;
pub(super) mod kubevirt;
pub(super) mod longhorn;
mod objects;

use crate::state::Inner;
use std::sync::Arc;

/// One pass of every operator.
pub(super) fn step(inner: &Arc<Inner>, node: &str, rules: &super::rules::Rules) {
    kubevirt::step(inner, node);
    cdi::step(inner);
    longhorn::step(inner, rules);
}
