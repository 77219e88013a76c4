//! The stack Kite runs on, KubeVirt, CDI and Longhorn: installed, upgraded
//! and removed by `kite install --from DIR`, `kite upgrade --from DIR` and
//! `kite uninstall --stack`, from each project's own release files, in the
//! order each project documents.
//!
//! - [`release`] reads the release files from a directory, finds each
//!   component's version in them (its operator's image) and checks each
//!   file's SHA-256 against the pins this build carries.
//! - [`install`] plans applying them (CRDs, then the operator, then its
//!   custom resource, `uninstallStrategy` set explicitly), each waited on
//!   by the component's own signal: `KubeVirt` and `CDI` `Available` at the
//!   new version, Longhorn's manager DaemonSet rolled out and its
//!   `nodes.longhorn.io` schedulable.
//! - [`removal`] plans removing them: CDI and KubeVirt by deleting their
//!   custom resources and waiting while their operators remove what they
//!   made; Longhorn by setting `deleting-confirmation-flag`, running its
//!   uninstall job and waiting for it; then webhooks and APIServices left
//!   behind, the labelled objects and the namespaces.
//! - [`observe`] and [`act`] are the waits and run-time actions these steps use.
//!   The finalizers to release are planned as [`crate::operate::plan::Release`].
//!
//! Everything Kite applies from a release carries the label
//! [`STACK_LABEL`]`=<component>`: that is how Kite knows a component is
//! its own to upgrade or remove. A component found without it was
//! installed by someone else and is never touched.

pub mod act;
pub mod install;
pub mod observe;
pub mod release;
pub mod removal;

pub use crate::operate::plan::owner::STACK_LABEL;
use kite_core::api::StackName;

/// What Kite knows of a component's upstream release.
#[derive(Clone, Copy, Debug)]
pub struct Upstream {
    /// Which component.
    pub name: StackName,
    /// The namespace its release manifest creates.
    pub namespace: &'static str,
    /// The release file with its CRDs and operator.
    pub operator_file: &'static str,
    /// The release file with its custom resource, when it has one.
    pub resource_file: Option<&'static str>,
    /// The workload whose image says which version runs: (kind, name, container).
    pub workload: (&'static str, &'static str),
    /// The CRD that tells the component is installed.
    pub marker_crd: &'static str,
    /// The version this build of Kite was tested with and recommends.
    pub recommended: &'static str,
    /// The finalizer its operator keeps on its custom resource (or on its objects, for Longhorn).
    pub finalizer: &'static str,
}

const KUBEVIRT: Upstream = Upstream {
    name: StackName::KubeVirt,
    namespace: "kubevirt",
    operator_file: "kubevirt-operator.yaml",
    resource_file: Some("kubevirt-cr.yaml"),
    workload: ("Deployment", "virt-operator"),
    marker_crd: "kubevirts.kubevirt.io",
    recommended: "v1.9.0",
    finalizer: "kubevirt.io/foregroundDeleteKubeVirt",
};

const CDI: Upstream = Upstream {
    name: StackName::Cdi,
    namespace: "cdi",
    operator_file: "cdi-operator.yaml",
    resource_file: Some("cdi-cr.yaml"),
    workload: ("Deployment", "cdi-operator"),
    marker_crd: "cdis.cdi.kubevirt.io",
    recommended: "v1.66.0",
    finalizer: "operator.cdi.kubevirt.io",
};

const LONGHORN: Upstream = Upstream {
    name: StackName::Longhorn,
    namespace: "longhorn-system",
    operator_file: "longhorn.yaml",
    resource_file: None,
    workload: ("DaemonSet", "longhorn-manager"),
    marker_crd: "settings.longhorn.io",
    recommended: "v1.11.3",
    finalizer: "longhorn.io",
};

/// The SHA-256 of release files as their projects publish them, by
/// (component, version, file). Longhorn's `deploy/longhorn.yaml` is the file
/// in its release tag, so its hash is known here; KubeVirt's and CDI's are
/// release assets built by their CI, which could not be fetched where this
/// build was made, so they have no pin yet (`--allow-unpinned` records
/// their hashes unverified).
const PINS: [(StackName, &str, &str, &str); 2] = [
    (
        StackName::Longhorn,
        "v1.11.3",
        "longhorn.yaml",
        "67ae1baa5f7121dc0aa55f0be9463c96dd65fefc5b1e5f5474de77b5ff2d9435",
    ),
    (
        StackName::Longhorn,
        "v1.10.1",
        "longhorn.yaml",
        "9dcd2472b009e468424fc708802e4a3a0e1e0880e44add6035ec2426d312994a",
    ),
];

impl Upstream {
    /// The three, in the order they are installed (removed in the reverse order).
    pub fn all() -> [Upstream; 3] {
        [LONGHORN, KUBEVIRT, CDI]
    }

    /// The component `name`.
    pub fn of(name: StackName) -> Upstream {
        match name {
            StackName::KubeVirt => KUBEVIRT,
            StackName::Cdi => CDI,
            StackName::Longhorn => LONGHORN,
        }
    }

    /// Its release files, the operator's first.
    pub fn files(&self) -> Vec<&'static str> {
        std::iter::once(self.operator_file).chain(self.resource_file).collect()
    }

    /// Where the project publishes `file` of `version`.
    pub fn url(&self, version: &str, file: &str) -> String {
        match self.name {
            StackName::KubeVirt => format!("https://github.com/kubevirt/kubevirt/releases/download/{version}/{file}"),
            StackName::Cdi => {
                format!("https://github.com/kubevirt/containerized-data-importer/releases/download/{version}/{file}")
            }
            StackName::Longhorn => {
                format!("https://raw.githubusercontent.com/longhorn/longhorn/{version}/deploy/{file}")
            }
        }
    }

    /// The SHA-256 this build pins for `file` of `version`, when it has one.
    pub fn pin(&self, version: &str, file: &str) -> Option<&'static str> {
        PINS.iter().find(|(n, v, f, _)| *n == self.name && *v == version && *f == file).map(|(_, _, _, hash)| *hash)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pins_are_hex_sha256_of_known_files() {
        for (name, version, file, hash) in PINS {
            assert_eq!(hash.len(), 64, "{name:?} {version} {file}");
            assert!(hash.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
            assert!(Upstream::of(name).files().contains(&file));
        }
        assert_eq!(Upstream::of(StackName::Longhorn).pin("v1.11.3", "longhorn.yaml"), Some(PINS[0].3));
        assert_eq!(Upstream::of(StackName::KubeVirt).pin("v1.9.0", "kubevirt-operator.yaml"), None);
    }

    #[test]
    fn release_urls_follow_each_project() {
        assert_eq!(
            Upstream::of(StackName::Longhorn).url("v1.11.3", "longhorn.yaml"),
            "https://raw.githubusercontent.com/longhorn/longhorn/v1.11.3/deploy/longhorn.yaml"
        );
        assert_eq!(
            Upstream::of(StackName::Cdi).url("v1.66.0", "cdi-cr.yaml"),
            "https://github.com/kubevirt/containerized-data-importer/releases/download/v1.66.0/cdi-cr.yaml"
        );
    }
}
