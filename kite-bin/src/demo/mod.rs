//! `kite demo`: the whole platform in one process, on loopback, with no
//! cluster: kite-testkit's API server (listening, with a kubeconfig for
//! `kubectl`), its simulated KubeVirt and CDI with one golden image, the
//! controller, `kite api` with the web UI, and the SSH gateway on its
//! Kubernetes backend. Each running machine is a real sshd (or, where
//! OpenSSH's server is not installed, an SSH server in the demo's process)
//! configured from the machine's cloud-init, so `ssh -p <port> <sshId>@127.0.0.1`
//! reaches a shell through the same chain as on a cluster.
//!
//! Everything is kept in memory: stopping the demo forgets it.

mod guests;
mod platform;
mod state_lock;

use crate::api::gateway_control::GatewayControl;
use crate::controller::{Settings, run_reconcilers};
use crate::gateway::control::Control;
use crate::gateway::store::{self, SwitchStore};
use anyhow::Context as _;
use clap::Args;
use kite_core::reconcile::Metrics;
use kite_ssh::Router;
use kite_ssh::kube::KubeBackend;
use kite_testkit::FakeApiServer;
use kite_testkit::sim::{GuestConfig, GuestNetwork, GuestSsh, SimulationConfig};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The options of `kite demo`.
#[derive(Args, Debug, Clone)]
pub struct DemoArgs {
    /// Where the web UI and the API listen.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub http: SocketAddr,
    /// Where the SSH gateway listens.
    #[arg(long, default_value = "127.0.0.1:2222")]
    pub ssh: SocketAddr,
    /// Where the Kubernetes API server listens (for `kubectl`).
    #[arg(long, default_value = "127.0.0.1:6443")]
    pub kube: SocketAddr,
    /// Where to write the kubeconfig; `<state dir>/kubeconfig` when absent.
    #[arg(long)]
    pub kubeconfig_out: Option<PathBuf>,
    /// Where the gateway's host key and the machines' scratch directories go.
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
    /// How long the golden image's import takes, in seconds.
    #[arg(long, default_value_t = 20)]
    pub import_seconds: u64,
    /// Which SSH server the machines run: OpenSSH's sshd when it is
    /// installed (`auto`), always sshd (`openssh`), or one inside the demo (`in-process`).
    #[arg(long, value_enum, default_value_t = MachineSsh::Auto)]
    pub machine_ssh: MachineSsh,
}

/// Which SSH server the demo's machines run.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum MachineSsh {
    /// OpenSSH's sshd when it is installed, else the in-process server.
    Auto,
    /// OpenSSH's sshd; the demo refuses to start without it.
    Openssh,
    /// An SSH server inside the demo (russh), with the same keys and a pseudo-terminal shell.
    InProcess,
}

impl MachineSsh {
    /// The guests' server, given where sshd is (if anywhere).
    fn choose(self, sshd: Option<&std::path::Path>) -> anyhow::Result<GuestSsh> {
        match self {
            Self::Auto => Ok(GuestSsh::detect(sshd)),
            Self::InProcess => Ok(GuestSsh::InProcess),
            Self::Openssh => {
                anyhow::ensure!(
                    sshd.is_some(),
                    "--machine-ssh openssh needs OpenSSH's server, and sshd is missing: install it \
                     (Debian: apt-get install openssh-server), or leave --machine-ssh at auto. The demo only runs \
                     sshd on loopback ports of its own; it never starts the system's sshd or uses port 22"
                );
                Ok(GuestSsh::OpenSsh)
            }
        }
    }
}

/// The account of this machine that SSH sessions into demo machines run as.
fn login_user() -> anyhow::Result<String> {
    if let Ok(user) = std::env::var("USER").or_else(|_| std::env::var("LOGNAME"))
        && !user.is_empty()
    {
        return Ok(user);
    }
    let output =
        std::process::Command::new("id").arg("-un").output().context("running `id -un` to learn the user name")?;
    let user = String::from_utf8_lossy(&output.stdout).trim().to_string();
    anyhow::ensure!(!user.is_empty(), "cannot tell which user runs the demo (USER is not set)");
    Ok(user)
}

/// Runs the demo until Ctrl-C or SIGTERM.
pub async fn run(args: DemoArgs) -> anyhow::Result<()> {
    run_until(args, crate::signal::shutdown()).await
}

/// Runs the demo until `shutdown` completes, then stops every part.
pub async fn run_until(
    args: DemoArgs,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    anyhow::ensure!(
        [args.http, args.ssh, args.kube].iter().all(|a| a.ip().is_loopback()),
        "the demo listens on loopback only: give --http, --ssh and --kube loopback addresses"
    );
    let machine_ssh = args.machine_ssh.choose(kite_testkit::sim::sshd_path())?;
    let state_dir = args.state_dir.clone().unwrap_or_else(|| std::env::temp_dir().join("kite-demo"));
    // Held until the demo returns: a second demo on this directory is refused.
    let _state = state_lock::take(&state_dir)?;
    let guests_dir = fresh_machines_dir(&state_dir)?;
    let login_user = login_user()?;

    let cluster = start_cluster(&args, &state_dir).await?;
    let client = cluster.server.client();
    platform::install(&client, args.ssh).await?;

    // The controller.
    let (stop_sender, stop) = watch::channel(false);
    let settings = Settings {
        namespace: "kite".into(),
        service_account: "kite-controller".into(),
        gateway_service_account: "kite-gateway".into(),
        identity: "kite-demo".into(),
        longhorn_namespace: "longhorn-system".into(),
    };
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = Metrics::register(&mut registry);
    let controller = {
        let client = client.clone();
        tokio::spawn(async move { run_reconcilers(client, &settings, metrics, stop).await })
    };

    // The machines' guests and the gateway routing to them.
    let guests = Arc::new(kite_testkit::sim::start_guests(
        &cluster.server,
        GuestConfig {
            root: guests_dir,
            login_user: login_user.clone(),
            poll: Duration::from_millis(200),
            network: GuestNetwork::LoopbackPorts,
            ssh: machine_ssh,
        },
    ));
    let resolver = guests::Resolver(guests.clone());
    let gateway = start_gateway(&args, &state_dir, &client, resolver, login_user, &stop_sender).await?;
    let api = start_api(&args, cluster.kube, &gateway.control, &stop_sender).await?;

    println!("Kite demo is running. Its state is kept in memory: stopping it forgets every account and machine.");
    println!();
    println!("  Web UI:      http://{}/", args.http);
    println!("  SSH:         ssh -p {} <sshId>@{}", args.ssh.port(), args.ssh.ip());
    println!("  kubectl:     kubectl --kubeconfig {} get kiteusers,ktvm -A", cluster.kubeconfig.display());
    println!("  Machines:    {}", machine_ssh.describe());
    println!();
    println!("Open the web UI, sign up (the first account is the admin), create a machine, and connect.");
    println!("The golden image imports first (about {} s). Press Ctrl-C to stop.", args.import_seconds);

    shutdown.await;
    println!("Stopping the demo...");
    let _ = stop_sender.send(true);
    let stopped = tokio::time::timeout(Duration::from_secs(10), async {
        let _ = api.await;
        let _ = gateway.task.await;
        let _ = controller.await;
    })
    .await;
    if stopped.is_err() {
        tracing::warn!("some parts did not stop within 10 s");
    }
    drop(guests);
    drop(cluster);
    println!("Stopped.");
    Ok(())
}

/// `<state dir>/machines`, emptied: the machines of an earlier demo on
/// this directory are gone (the state lock says no demo runs on it now).
fn fresh_machines_dir(state_dir: &std::path::Path) -> anyhow::Result<PathBuf> {
    let guests_dir = state_dir.join("machines");
    if guests_dir.exists() {
        std::fs::remove_dir_all(&guests_dir).with_context(|| format!("clearing {}", guests_dir.display()))?;
    }
    std::fs::create_dir_all(&guests_dir).with_context(|| format!("creating {}", guests_dir.display()))?;
    Ok(guests_dir)
}

/// The demo's cluster: the in-memory API server listening on `--kube`, its
/// simulated runtime (running while this is kept), and its kubeconfig.
struct Cluster {
    server: FakeApiServer,
    _simulation: kite_testkit::sim::Simulation,
    kube: SocketAddr,
    kubeconfig: PathBuf,
}

/// Starts the API server with Kite's CRDs, the simulated KubeVirt and CDI
/// with a load balancer on the SSH address, and writes the kubeconfig.
async fn start_cluster(args: &DemoArgs, state_dir: &std::path::Path) -> anyhow::Result<Cluster> {
    let server = FakeApiServer::new().context("starting the in-memory API server")?;
    for crd in kite_core::api::crds() {
        server.install_crd(&crd).context("installing Kite's CRDs")?;
    }
    let step = Duration::from_millis(250);
    let import_steps = u32::try_from((args.import_seconds * 1000 / 250).max(1)).unwrap_or(u32::MAX);
    let simulation = SimulationConfig {
        step,
        import_steps,
        clone_steps: 12,
        load_balancer_ip: Some(args.ssh.ip().to_string()),
        ..SimulationConfig::default()
    };
    let simulation =
        kite_testkit::sim::start(&server, simulation).context("starting the simulated KubeVirt and CDI")?;
    let kube =
        server.listen(args.kube).await.with_context(|| format!("listening on {} for the Kubernetes API", args.kube))?;
    let kubeconfig = args.kubeconfig_out.clone().unwrap_or_else(|| state_dir.join("kubeconfig"));
    kite_testkit::kubeconfig::write(&kubeconfig, kube).with_context(|| format!("writing {}", kubeconfig.display()))?;
    Ok(Cluster { server, _simulation: simulation, kube, kubeconfig })
}

/// The running gateway: its task, and how `kite api` reaches its control API.
struct Gateway {
    task: tokio::task::JoinHandle<()>,
    control: GatewayControl,
}

/// Starts the gateway on `--ssh`, routing to the guests, keeping audit
/// events and recordings under the state folder as the platform says, with
/// its control API on loopback.
async fn start_gateway(
    args: &DemoArgs,
    state_dir: &std::path::Path,
    client: &kube::Client,
    resolver: guests::Resolver,
    login_user: String,
    stop_sender: &watch::Sender<bool>,
) -> anyhow::Result<Gateway> {
    let host_key = kite_ssh::host_key::load_or_generate(&state_dir.join("gateway_host_key"))
        .context("loading the gateway's host key")?;
    let backend = KubeBackend::start(client.clone(), resolver).with_upstream_user(login_user);
    let ssh_listener =
        tokio::net::TcpListener::bind(args.ssh).await.with_context(|| format!("listening on {} for SSH", args.ssh))?;
    let audit_dir = state_dir.join("audit");
    let recording =
        store::platform_setting(client).await.context("reading the KitePlatform's session recording settings")?;
    let cluster = store::Cluster { client, namespace: "kite" };
    let store = SwitchStore::new(store::build(&recording, Some(&audit_dir), &cluster).await);
    store::follow(client.clone(), "kite".into(), store.clone(), Some(audit_dir), recording);
    let router = Router::builder()
        .backend(backend)
        .host_key(host_key)
        .audit(store.clone())
        .build()
        .context("assembling the gateway's SSH router")?;
    let control_token = crate::gateway::random_token();
    let control =
        Control::new(router.sessions(), store, &control_token).serve(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
    let mut gateway_stop = stop_sender.subscribe();
    let task = tokio::spawn(async move {
        let until = async move {
            let _ = gateway_stop.wait_for(|s| *s).await;
        };
        if let Err(error) = router.serve(ssh_listener, until).await {
            tracing::error!(%error, "the SSH gateway stopped");
        }
    });
    Ok(Gateway { task, control: GatewayControl::new(&control.to_string(), &control_token) })
}

/// Starts the API and the web UI on `--http`. The API talks to the API
/// server over loopback TCP, as on a cluster: the serial console is a
/// WebSocket upgrade, which needs a connection that an in-process client
/// does not have.
async fn start_api(
    args: &DemoArgs,
    kube: SocketAddr,
    gateway: &GatewayControl,
    stop_sender: &watch::Sender<bool>,
) -> anyhow::Result<tokio::task::JoinHandle<anyhow::Result<()>>> {
    let api_client = kube::Client::try_from(kube::Config::new(
        format!("http://{kube}").parse().context("the API server's address as a URL")?,
    ))
    .context("a client of the in-memory API server")?;
    let state = crate::api::state(
        api_client,
        "kite",
        // The demo listens on loopback only: its first account is its admin.
        crate::api::Options {
            first_signup_is_admin: true,
            gateway: Some(gateway.clone()),
            ..crate::api::Options::default()
        },
    )
    .await?;
    let http_listener = tokio::net::TcpListener::bind(args.http)
        .await
        .with_context(|| format!("listening on {} for the web UI", args.http))?;
    let mut api_stop = stop_sender.subscribe();
    Ok(tokio::spawn(crate::app::serve(http_listener, crate::app::app(state)?, async move {
        let _ = api_stop.wait_for(|s| *s).await;
    })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn auto_runs_sshd_when_it_is_installed_and_the_in_process_server_when_not() {
        let sshd = Some(Path::new("/usr/sbin/sshd"));
        assert_eq!(MachineSsh::Auto.choose(sshd).unwrap(), GuestSsh::OpenSsh);
        assert_eq!(MachineSsh::Auto.choose(None).unwrap(), GuestSsh::InProcess);
        assert_eq!(MachineSsh::InProcess.choose(sshd).unwrap(), GuestSsh::InProcess);
    }

    #[test]
    fn openssh_without_sshd_is_refused_with_what_to_install() {
        let error = MachineSsh::Openssh.choose(None).unwrap_err().to_string();
        assert!(error.contains("apt-get install openssh-server") && error.contains("--machine-ssh"), "{error}");
        assert_eq!(MachineSsh::Openssh.choose(Some(Path::new("/usr/sbin/sshd"))).unwrap(), GuestSsh::OpenSsh);
    }
}
