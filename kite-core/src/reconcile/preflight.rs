//! Checks, before the reconcilers start, that the cluster serves the APIs
//! they need, so that a missing KubeVirt or CDI is one clear sentence at
//! start, not a stream of watch errors.

use crate::Error;
use kube::Client;

/// What the controller needs: `(group/version, resource, what to install)`.
pub const REQUIRED: &[(&str, &str, &str)] = &[
    ("hy3ons.github.io/v1", "kitevirtualmachines", "install Kite's CRDs first: `kite crds | kubectl apply -f -`"),
    ("kubevirt.io/v1", "virtualmachines", "install KubeVirt, then start the controller again"),
    (
        "cdi.kubevirt.io/v1beta1",
        "datavolumes",
        "install CDI (the Containerized Data Importer), then start the controller again",
    ),
];

/// Fails with [`Error::ApiNotInstalled`] naming the first API of
/// [`REQUIRED`] the cluster does not serve.
pub async fn require_apis(client: &Client) -> Result<(), Error> {
    for (group_version, resource, hint) in REQUIRED {
        let missing = || Error::ApiNotInstalled { api: format!("{group_version} {resource}"), hint };
        match client.list_api_group_resources(group_version).await {
            Ok(list) if list.resources.iter().any(|r| r.name == *resource) => {}
            Ok(_) => return Err(missing()),
            Err(kube::Error::Api(status)) if status.is_not_found() => return Err(missing()),
            Err(source) => {
                return Err(Error::Kube { action: format!("discovering {group_version}"), source });
            }
        }
    }
    Ok(())
}
