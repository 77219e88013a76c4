//! Reaching the cluster: a kube client from `--kubeconfig` or the default chain.

use anyhow::Context as _;
use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};
use std::path::PathBuf;

/// A kube client from `kubeconfig`, or, without one, from `KUBECONFIG`,
/// `~/.kube/config` or the in-cluster ServiceAccount.
pub async fn connect(kubeconfig: Option<&PathBuf>) -> anyhow::Result<Client> {
    let config = match kubeconfig {
        Some(path) => {
            let file =
                Kubeconfig::read_from(path).with_context(|| format!("reading the kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(file, &KubeConfigOptions::default())
                .await
                .with_context(|| format!("using the kubeconfig {}", path.display()))?
        }
        None => kube::Config::infer()
            .await
            .context("finding a cluster (no --kubeconfig, KUBECONFIG, ~/.kube/config or in-cluster account)")?,
    };
    Client::try_from(config).context("creating the Kubernetes client")
}
