//! The command line of `kite gateway`.

use crate::names::{CONTROL_TOKEN_SECRET, HOST_KEY_SECRET};
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;

/// The options of `kite gateway`.
#[derive(Args, Debug, Clone)]
pub struct GatewayArgs {
    /// Route with the static routes of this TOML file (see the book's chapter on kite-ssh).
    #[arg(long, conflicts_with = "kube", required_unless_present = "kube")]
    pub config: Option<PathBuf>,
    /// Route logins to the cluster's KiteVirtualMachines by their sshId.
    #[arg(long)]
    pub kube: bool,
    /// With --kube: the kubeconfig; without it, `KUBECONFIG`, `~/.kube/config` or the in-cluster account.
    #[arg(long, requires = "kube")]
    pub kubeconfig: Option<PathBuf>,
    /// With --kube: where SSH is served.
    #[arg(long, default_value = "0.0.0.0:2222")]
    pub listen: SocketAddr,
    /// With --kube: the host key as an OpenSSH key file (generated there once when missing),
    /// instead of the Secret `--host-key-secret`.
    #[arg(long, requires = "kube")]
    pub host_key: Option<PathBuf>,
    /// With --kube: the Secret (in `--namespace`) holding the host key under `ssh-privatekey`;
    /// generated once when missing, so every replica and restart presents the same key.
    #[arg(long, default_value = HOST_KEY_SECRET)]
    pub host_key_secret: String,
    /// With --kube: the platform namespace, where the host key Secret lives.
    #[arg(long, default_value = "kite")]
    pub namespace: String,
    /// With --kube: where `/healthz`, `/readyz` and `/metrics` are served.
    #[arg(long, default_value = "0.0.0.0:8082")]
    pub http: SocketAddr,
    /// With --kube: the cluster's DNS domain, for the machines' Service names.
    #[arg(long, default_value = "cluster.local")]
    pub cluster_domain: String,
    /// With --kube: log in to every machine as this account instead of as its sshId (the
    /// account Kite's cloud-init creates), for golden images whose gateway account is fixed.
    #[arg(long, requires = "kube")]
    pub upstream_user: Option<String>,
    /// With --kube: a load balancer (address or CIDR; repeatable) whose connections start with a
    /// PROXY protocol v2 header naming the client; the header is then required from it, and the
    /// client's address is the one limits and logs use.
    #[arg(long = "proxy-protocol-from", value_name = "CIDR", value_parser = crate::net_arg::parse_net, requires = "kube")]
    pub proxy_protocol_from: Vec<ipnet::IpNet>,
    /// With --kube: the folder (a volume) audit events and recordings are kept in, as
    /// `KitePlatform.spec.sessionRecording` says; without it, and without S3, they are only logged.
    #[arg(long, requires = "kube")]
    pub audit_dir: Option<PathBuf>,
    /// With --kube: where the control API for `kite api` (sessions, recordings, ending a session) is served.
    #[arg(long, default_value = "0.0.0.0:8083")]
    pub control_listen: SocketAddr,
    /// With --kube: the Secret (in `--namespace`) holding the control API's token; made once when missing.
    #[arg(long, default_value = CONTROL_TOKEN_SECRET)]
    pub control_token_secret: String,
}
