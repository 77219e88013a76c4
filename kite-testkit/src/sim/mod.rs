//! The simulated KubeVirt and CDI runtime (not built yet).

use crate::{Error, FakeApiServer};

/// Installs the KubeVirt, CDI and Longhorn CRDs.
pub fn install(server: &FakeApiServer) -> Result<(), Error> {
    for crd in crate::upstream::crds() {
        server.create("apiextensions.k8s.io", "v1", "customresourcedefinitions", None, crd)?;
    }
    Ok(())
}
