//! `kite gateway`: the SSH router, with the static routes of a config file
//! (`--config`) or with the Kubernetes backend (`--kube`), which routes
//! each login to the `KiteVirtualMachine` whose `sshId` it is.

mod config;
pub mod control;
mod kube;
pub mod store;

pub use kube::{CONTROL_TOKEN_FIELD, control_token_from_secret, host_key_from_secret, random_token};

use anyhow::Context;
use clap::Args;
use kite_ssh::{Router, StaticBackend};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

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

/// The default name of the Secret holding the gateway's control token.
pub const CONTROL_TOKEN_SECRET: &str = "kite-gateway-control";

/// The default name of the Secret holding the gateway's host key.
pub const HOST_KEY_SECRET: &str = "kite-gateway-host-key";

/// `kite gateway`.
pub async fn run(args: GatewayArgs) -> anyhow::Result<()> {
    match &args.config {
        Some(path) => run_with_config(path).await,
        None => kube::run(args).await,
    }
}

/// Runs the gateway with the routes of `config_path` until Ctrl-C or SIGTERM.
async fn run_with_config(config_path: &Path) -> anyhow::Result<()> {
    let config = config::load(config_path)?;
    let backend = StaticBackend::new(config.routes).context("the routes are not usable")?;
    let host_key = kite_ssh::host_key::load_or_generate(&config.host_key)?;
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("cannot listen on {}", config.listen))?;
    let address = listener.local_addr().context("cannot read the listening address")?;
    let store = match &config.recording {
        Some(config::Recording { store: config::RecordingStore::Dir(dir), spec }) => store::Store::files(dir, spec)
            .with_context(|| format!("cannot keep audit events under {}", dir.display()))?,
        Some(config::Recording { store: config::RecordingStore::S3(settings), spec }) => {
            let bucket = settings.bucket.clone();
            store::Store::s3(settings.clone(), spec)
                .with_context(|| format!("cannot keep audit events in the bucket {bucket}"))?
        }
        None => store::Store::log_only(),
    };
    let store = store::SwitchStore::new(store);
    let router = Router::with_audit(backend, host_key, config.options, std::sync::Arc::new(store.clone()));
    if let Some(control) = &config.control {
        let token = control_token_from_file(&control.token_file)?;
        let bound = control::Control::new(router.sessions(), store, &token).serve(control.listen).await?;
        tracing::info!(%bound, "the control API listening");
    }
    tracing::info!(%address, "kite gateway listening");
    eprintln!("kite gateway listening on {address}");
    router.serve(listener, crate::signal::shutdown()).await?;
    Ok(())
}

/// The control token in `path`, made (32 random bytes, hexadecimal, readable
/// by the owner only) when the file is missing.
fn control_token_from_file(path: &Path) -> anyhow::Result<String> {
    match std::fs::read_to_string(path) {
        Ok(token) if token.trim().len() >= 32 => return Ok(token.trim().to_string()),
        Ok(_) => anyhow::bail!("{} holds no usable control token (32 characters or more)", path.display()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(error).with_context(|| format!("cannot read the control token {}", path.display())),
    }
    let token = random_token();
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).with_context(|| format!("cannot create the control token {}", path.display()))?;
    std::io::Write::write_all(&mut file, format!("{token}\n").as_bytes())
        .with_context(|| format!("cannot write the control token {}", path.display()))?;
    Ok(token)
}
