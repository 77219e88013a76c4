//! `kite`'s operator commands run as an operator runs them, against
//! kite-fake-apiserver authorizing by RBAC: the cluster, and reading what they said.

use super::Process;
use super::kubectl;
use super::rbac_cluster::RbacCluster;
use kite_testkit::fixtures::eventually;
use kite_testkit::openssh::{free_port, run_bounded, text};
use kite_testkit::sim::SimulationConfig;
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::Duration;

/// The fake cluster: KubeVirt, CDI and Longhorn's APIs served, one Ready node, nothing of Kite.
pub struct Cluster(pub RbacCluster);

impl std::ops::Deref for Cluster {
    type Target = RbacCluster;
    fn deref(&self) -> &RbacCluster {
        &self.0
    }
}

impl Cluster {
    pub async fn new(builder: kite_testkit::Builder) -> Self {
        Self(RbacCluster::start(builder, SimulationConfig::default()).await)
    }

    /// A cluster with none of the stack: KubeVirt, CDI and Longhorn come
    /// when their release files are applied, their operators simulated.
    pub async fn without_the_stack(builder: kite_testkit::Builder) -> Self {
        let simulation =
            SimulationConfig { stack: kite_testkit::sim::StackSimulation::Operators, ..Default::default() };
        Self(RbacCluster::start(builder, simulation).await)
    }

    /// The operator's platform file: one golden image.
    pub fn platform_file(&self) -> PathBuf {
        self.platform_file_with(kite_testkit::fixtures::a_platform())
    }

    pub fn platform_file_with(&self, spec: kite_core::api::KitePlatformSpec) -> PathBuf {
        let platform = kite_core::api::KitePlatform::new(kite_core::api::PLATFORM_NAME, spec);
        let path = self.dir.path().join("platform.yaml");
        std::fs::write(&path, serde_json::to_string(&platform).unwrap()).unwrap();
        path
    }

    /// `kite <args> --kubeconfig <admin>`, bounded in time, on a blocking thread.
    pub fn kite(&self, args: &[&str]) -> impl Future<Output = Output> + use<> {
        let mut command = Command::new(env!("CARGO_BIN_EXE_kite"));
        command.args(args).arg("--kubeconfig").arg(&self.admin).env("RUST_LOG", "warn");
        async move {
            tokio::task::spawn_blocking(move || run_bounded(command, None, Duration::from_secs(120))).await.unwrap()
        }
    }

    /// `kite controller` under its own ServiceAccount, once the install has made its Deployment.
    pub async fn controller_when_deployed(&self) -> Process {
        let client = self.server.client();
        let deployments: kube::Api<k8s_openapi::api::apps::v1::Deployment> = kube::Api::namespaced(client, "kite");
        eventually(Duration::from_secs(60), "the controller's Deployment", || async {
            deployments.get_opt("kite-controller").await.ok().flatten().map(|_| ())
        })
        .await;
        let port = free_port();
        self.component(
            "kite-controller",
            &["controller", "--namespace", "kite", "--identity", "test", "--listen", &format!("127.0.0.1:{port}")],
        )
    }

    pub fn get(&self, args: &[&str]) -> Value {
        let mut all = vec!["get"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-o", "json"]);
        serde_json::from_str(&kubectl(&self.admin, &all)).unwrap()
    }
}

pub fn said(output: &Output) -> String {
    format!("{}{}", text(&output.stdout), text(&output.stderr))
}

pub fn lines_with<'a>(output: &'a str, word: &str) -> Vec<&'a str> {
    output.lines().filter(|l| l.contains(word)).collect()
}

/// A user with a machine, made with kubectl; once the controller has taken the machine (its finalizer).
pub async fn a_user_with_a_machine(cluster: &Cluster) {
    let user = serde_json::to_string(&kite_testkit::fixtures::a_user("bob")).unwrap();
    let vm = serde_json::to_string(&kite_testkit::fixtures::a_vm("web").in_namespace("kite-user-bob").build()).unwrap();
    let (user_file, vm_file) = (cluster.dir.path().join("user.json"), cluster.dir.path().join("vm.json"));
    std::fs::write(&user_file, user).unwrap();
    std::fs::write(&vm_file, vm).unwrap();
    let admin = cluster.admin.clone();
    tokio::task::spawn_blocking(move || kubectl(&admin, &["apply", "-f", user_file.to_str().unwrap()])).await.unwrap();
    let vms: kube::Api<kite_core::api::KiteVirtualMachine> = kube::Api::all(cluster.server.client());
    let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(cluster.server.client());
    eventually(Duration::from_secs(30), "bob's namespace", || async {
        namespaces.get_opt("kite-user-bob").await.ok().flatten().map(|_| ())
    })
    .await;
    let admin = cluster.admin.clone();
    tokio::task::spawn_blocking(move || kubectl(&admin, &["apply", "-f", vm_file.to_str().unwrap()])).await.unwrap();
    eventually(Duration::from_secs(30), "the controller to take the machine", || async {
        let vm = vms.list(&Default::default()).await.ok()?.items.into_iter().next()?;
        (!vm.metadata.finalizers.unwrap_or_default().is_empty()).then_some(())
    })
    .await;
}
