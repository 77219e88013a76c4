//! kite-fake-apiserver as a cluster Kite is deployed on: authorizing by
//! RBAC over HTTPS, with the simulated kubelet (Deployments become
//! Available), KubeVirt and CDI, an admin kubeconfig, Longhorn's namespace
//! (unless the stack comes from its simulated operators),
//! and Kite's components started as processes under their ServiceAccounts.

use super::{Process, kubectl};
use kite_testkit::FakeApiServer;
use kite_testkit::rbac::AuthorizationMode;
use kite_testkit::sim::SimulationConfig;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

/// The cluster, and a folder for its kubeconfigs and the components' logs.
pub struct RbacCluster {
    pub server: FakeApiServer,
    pub address: std::net::SocketAddr,
    pub admin: PathBuf,
    pub dir: tempfile::TempDir,
    _simulation: kite_testkit::sim::Simulation,
    _workloads: kite_testkit::sim::workloads::Workloads,
}

/// The simulation's timings for these tests: quick imports and clones.
pub fn quick(simulation: SimulationConfig) -> SimulationConfig {
    SimulationConfig { step: Duration::from_millis(20), import_steps: 3, clone_steps: 3, ..simulation }
}

impl RbacCluster {
    /// The server `builder` makes, authorizing by RBAC, serving HTTPS on loopback, simulating `simulation`.
    pub async fn start(builder: kite_testkit::Builder, simulation: SimulationConfig) -> Self {
        let server = builder.authorization(AuthorizationMode::Rbac).build().unwrap();
        let with_longhorn = simulation.stack == kite_testkit::sim::StackSimulation::Installed;
        let simulation = kite_testkit::sim::start(&server, quick(simulation)).unwrap();
        let workloads = kite_testkit::sim::workloads::start(&server, Default::default()).unwrap();
        let address = server.listen_tls("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let admin = dir.path().join("admin.kubeconfig");
        kite_testkit::kubeconfig::write_text(&admin, &server.admin_kubeconfig(address).unwrap()).unwrap();
        if with_longhorn {
            let kubeconfig = admin.clone();
            tokio::task::spawn_blocking(move || kubectl(&kubeconfig, &["create", "namespace", "longhorn-system"]))
                .await
                .unwrap();
        }
        Self { server, address, admin, dir, _simulation: simulation, _workloads: workloads }
    }

    /// A kubeconfig for the ServiceAccount `kite/<account>`, with a token from the TokenRequest API.
    pub fn kubeconfig(&self, account: &str) -> PathBuf {
        let text = self.server.service_account_kubeconfig(self.address, "kite", account).unwrap();
        let path = self.dir.path().join(format!("{account}.kubeconfig"));
        kite_testkit::kubeconfig::write_text(&path, &text).unwrap();
        path
    }

    /// Where `kite` running as `account` logs.
    pub fn log(&self, account: &str) -> PathBuf {
        self.dir.path().join(format!("{account}.log"))
    }

    /// `kite <args>` as the ServiceAccount `kite/<account>`, logging to [`Self::log`].
    pub fn component(&self, account: &str, args: &[&str]) -> Process {
        let log = std::fs::File::create(self.log(account)).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_kite"))
            .args(args)
            .arg("--kubeconfig")
            .arg(self.kubeconfig(account))
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        Process(child)
    }
}
