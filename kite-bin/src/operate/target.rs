//! The cluster a command acts on: the argument group every operator's
//! command shares, and connecting to it.

use kube::Client;
use std::path::PathBuf;

/// Which cluster: the arguments `kite install`, `upgrade`, `uninstall` and `doctor` share.
#[derive(clap::Args, Debug, Clone)]
pub struct ClusterArgs {
    /// The kubeconfig; without it, `KUBECONFIG`, `~/.kube/config` or the in-cluster account.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
}

impl ClusterArgs {
    /// A client of the cluster.
    pub async fn connect(&self) -> anyhow::Result<Client> {
        crate::cluster::connect(self.kubeconfig.as_ref()).await
    }
}
