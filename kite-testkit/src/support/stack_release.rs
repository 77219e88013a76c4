//! The stack's release files for tests: small fixtures that keep the
//! upstream names that matter (namespaces, CRDs, operator Deployments,
//! Longhorn's manager and webhook Service), each saying which upstream
//! release file it follows, written into a directory as `kite install
//! --from DIR` reads it, at the versions a test asks for.
//!
//! ```
//! let dir = tempfile::tempdir()?;
//! kite_testkit::stack_release::write(dir.path(), &kite_testkit::stack_release::Versions::default())?;
//! assert!(dir.path().join("kubevirt-operator.yaml").exists());
//! # Ok::<(), std::io::Error>(())
//! ```

use std::path::Path;

/// The versions the fixtures are written for.
pub const KUBEVIRT: &str = "v1.9.0";
/// CDI's version in the fixtures.
pub const CDI: &str = "v1.66.0";
/// Longhorn's version in the fixtures.
pub const LONGHORN: &str = "v1.10.0";

/// The files, by name, as their upstream releases name them.
const FILES: [(&str, &str, &str); 5] = [
    ("kubevirt-operator.yaml", KUBEVIRT, include_str!("../../fixtures/stack/kubevirt-operator.yaml")),
    ("kubevirt-cr.yaml", KUBEVIRT, include_str!("../../fixtures/stack/kubevirt-cr.yaml")),
    ("cdi-operator.yaml", CDI, include_str!("../../fixtures/stack/cdi-operator.yaml")),
    ("cdi-cr.yaml", CDI, include_str!("../../fixtures/stack/cdi-cr.yaml")),
    ("longhorn.yaml", LONGHORN, include_str!("../../fixtures/stack/longhorn.yaml")),
];

/// The versions to write the release at.
#[derive(Clone, Debug)]
pub struct Versions {
    /// KubeVirt's (`v1.9.0` by default).
    pub kubevirt: String,
    /// CDI's (`v1.66.0` by default).
    pub cdi: String,
    /// Longhorn's (`v1.10.0` by default).
    pub longhorn: String,
}

impl Default for Versions {
    fn default() -> Self {
        Self { kubevirt: KUBEVIRT.into(), cdi: CDI.into(), longhorn: LONGHORN.into() }
    }
}

/// Writes the five release files into `dir`, each at its version in `versions`.
pub fn write(dir: &Path, versions: &Versions) -> std::io::Result<()> {
    for (name, fixture_version, text) in FILES {
        let version = match fixture_version {
            KUBEVIRT => &versions.kubevirt,
            CDI => &versions.cdi,
            _ => &versions.longhorn,
        };
        std::fs::write(dir.join(name), text.replace(fixture_version, version))?;
    }
    Ok(())
}
