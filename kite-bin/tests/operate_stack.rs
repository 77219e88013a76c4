//! `kite install --from DIR`, `kite upgrade --from DIR` and `kite uninstall
//! --stack`: KubeVirt, CDI and Longhorn installed, upgraded and removed from
//! their release files (kite-testkit's small fixtures of them) on a cluster
//! that starts without them, their operators simulated; the real binary and
//! kubectl, RBAC over HTTPS. Then the existing platform's incidents on that
//! path, each reproduced first: namespaces deleted before their operators
//! finished, leaving an APIService that stalls every namespace, Longhorn's
//! webhooks without their Service and finalizers nobody will release.

mod support;

use kite_testkit::FakeApiServer;
use kite_testkit::fixtures::eventually;
use kite_testkit::stack_release::{self, Versions};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::operator::{Cluster, a_user_with_a_machine, lines_with, said};
use support::{Process, kubectl};

/// The release files at `versions`, in a directory of their own under the cluster's.
fn release(cluster: &Cluster, name: &str, versions: &Versions) -> PathBuf {
    let dir = cluster.dir.path().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    stack_release::write(&dir, versions).unwrap();
    dir
}

fn sha256(path: &Path) -> String {
    Sha256::digest(std::fs::read(path).unwrap()).iter().map(|b| format!("{b:02x}")).collect()
}

/// `kite install --from DIR --allow-unpinned --yes` with the controller starting once deployed; its log.
async fn install_everything(cluster: &Cluster, dir: &Path) -> (String, Process) {
    let platform = cluster.platform_file();
    let install = cluster.kite(&[
        "install",
        "--from",
        dir.to_str().unwrap(),
        "--allow-unpinned",
        "--yes",
        "--platform",
        platform.to_str().unwrap(),
    ]);
    let (installed, controller) = tokio::join!(install, cluster.controller_when_deployed());
    let log = said(&installed);
    assert!(installed.status.success(), "{log}");
    (log, controller)
}

/// The writes the admin (the operator running `kite`) made: not those of the controller running beside.
fn admin_writes(cluster: &Cluster) -> usize {
    let requests = cluster.server.requests();
    requests.iter().filter(|r| r.verb.is_write() && r.user.as_deref() == Some("kubernetes-admin")).count()
}

fn absent(cluster: &Cluster, args: &[&str]) -> bool {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--ignore-not-found", "-o", "name"]);
    kubectl(&cluster.admin, &all).trim().is_empty()
}

fn before(log: &str, first: &str, second: &str) -> bool {
    matches!((log.find(first), log.find(second)), (Some(a), Some(b)) if a < b)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stack_installs_from_its_release_files_then_kite_and_uninstall_stack_removes_it_in_order() {
    let cluster = Cluster::without_the_stack(FakeApiServer::builder()).await;
    let dir = release(&cluster, "release", &Versions::default());
    let from = dir.to_str().unwrap();
    let operator_hash = sha256(&dir.join("kubevirt-operator.yaml"));

    // Files this build pins no hash for are refused, naming their hashes; nothing is written.
    let writes = admin_writes(&cluster);
    let refused = cluster.kite(&["install", "--from", from, "--plan"]).await;
    let log = said(&refused);
    assert!(!refused.status.success(), "{log}");
    let expected = format!(
        "FAIL KubeVirt release: KubeVirt v1.9.0: this build pins no SHA-256 for it (kubevirt-operator.yaml sha256:{operator_hash}"
    );
    assert!(log.contains(&expected), "{log}");
    assert!(log.contains("then pass --allow-unpinned"), "{log}");

    // With --allow-unpinned, the plan: Longhorn, KubeVirt, CDI, then Kite.
    let platform = cluster.platform_file();
    let platform = platform.to_str().unwrap();
    let planned =
        cluster.kite(&["install", "--from", from, "--allow-unpinned", "--plan", "--platform", platform]).await;
    let plan = said(&planned);
    assert!(planned.status.success(), "{plan}");
    for expected in [
        "WARN KubeVirt release: KubeVirt v1.9.0: this build pins no SHA-256 for it",
        "ok   Longhorn: not installed: Longhorn v1.10.0 will be",
        "create DaemonSet longhorn-system/longhorn-manager",
        "create CustomResourceDefinition kubevirts.kubevirt.io",
        "create Deployment kubevirt/virt-operator",
        "create KubeVirt kubevirt/kubevirt",
        "create CDI cdi",
        "then wait for KubeVirt v1.9.0 to be Available",
        "then wait for Longhorn v1.10.0's manager to roll out and its nodes to be schedulable",
    ] {
        assert!(plan.contains(expected), "the plan lacks {expected:?}:\n{plan}");
    }
    assert!(before(&plan, "apply Longhorn v1.10.0", "apply KubeVirt v1.9.0"), "{plan}");
    assert!(before(&plan, "apply KubeVirt v1.9.0", "apply CDI v1.66.0"), "{plan}");
    assert!(before(&plan, "apply CDI v1.66.0", "apply Kite's CustomResourceDefinitions"), "{plan}");
    assert_eq!(admin_writes(&cluster), writes, "planning wrote to the cluster");

    // The install: each component waited on by its own signal, then Kite.
    let (log, controller) = install_everything(&cluster, &dir).await;
    for expected in [
        "done: longhorn-manager v1.10.0: 1/1 ready, 1/1 updated; Longhorn nodes schedulable: 1/1",
        "done: KubeVirt kubevirt/kubevirt: phase Deployed, Available True, version v1.9.0",
        "done: CDI cdi: phase Deployed, Available True, version v1.66.0",
        "kite install: Kite is installed",
    ] {
        assert!(log.contains(expected), "the install lacks {expected:?}:\n{log}");
    }
    let kubevirt = cluster.get(&["kubevirt", "-n", "kubevirt", "kubevirt"]);
    assert_eq!(kubevirt["spec"]["uninstallStrategy"], "BlockUninstallIfWorkloadsExist", "set explicitly");
    assert_eq!(kubevirt["metadata"]["labels"]["hy3ons.github.io/stack"], "kubevirt");
    let recorded = cluster.get(&["kiteplatform", "kite"])["status"]["installation"]["stack"].clone();
    let entry = |name: &str| recorded.as_array().unwrap().iter().find(|c| c["name"] == name).cloned().unwrap();
    assert_eq!(entry("kubevirt")["version"], "v1.9.0", "{recorded}");
    assert_eq!(entry("kubevirt")["installedByKite"], true, "{recorded}");
    assert_eq!(entry("kubevirt")["manifests"][0]["sha256"], operator_hash.as_str(), "{recorded}");
    assert_eq!(entry("kubevirt")["manifests"][0]["pinned"], false, "{recorded}");
    assert_eq!(entry("cdi")["version"], "v1.66.0", "{recorded}");
    assert_eq!(entry("longhorn")["version"], "v1.10.0", "{recorded}");
    assert_eq!(entry("longhorn")["manifests"][0]["file"], "longhorn.yaml", "{recorded}");

    let doctor = cluster.kite(&["doctor"]).await;
    assert!(doctor.status.success(), "{}", said(&doctor));
    assert!(lines_with(&said(&doctor), "FAIL").is_empty(), "{}", said(&doctor));
    let provenance = format!(
        "KubeVirt v1.9.0 (installed by kite install from kubevirt-operator.yaml sha256:{}…, unpinned",
        &operator_hash[..12]
    );
    assert!(said(&doctor).contains(&provenance), "the doctor shows where the stack came from: {}", said(&doctor));

    // Installing again changes nothing.
    let again = cluster.kite(&["install", "--from", from, "--allow-unpinned", "--plan"]).await;
    let plan = said(&again);
    assert!(plan.contains("ok   KubeVirt: KubeVirt v1.9.0 is installed by kite install"), "{plan}");
    assert!(lines_with(&plan, "     create ").is_empty() && lines_with(&plan, "     update ").is_empty(), "{plan}");

    // Another team's webhook without its Service is reported and left alone.
    let foreign = cluster.dir.path().join("foreign.yaml");
    std::fs::write(&foreign, FOREIGN_WEBHOOK).unwrap();
    kubectl(&cluster.admin, &["apply", "-f", foreign.to_str().unwrap()]);

    let refused = cluster.kite(&["uninstall", "--stack", "--yes"]).await;
    assert!(!refused.status.success());
    assert!(said(&refused).contains("FAIL golden images: --stack removes Longhorn"), "{}", said(&refused));

    let uninstall = cluster.kite(&["uninstall", "--stack", "--delete-images", "--yes", "--timeout", "60"]).await;
    let log = said(&uninstall);
    assert!(uninstall.status.success(), "{log}");
    drop(controller);
    assert!(log.contains("WARN ValidatingWebhookConfiguration other-team-validator: ValidatingWebhookConfiguration other-team-validator (calls Service other-team/gone, which is gone): not of a component being removed, so left alone"), "{log}");
    assert!(before(&log, "delete Kite's CustomResourceDefinitions", "delete CDI's custom resource"), "{log}");
    assert!(before(&log, "delete CDI's custom resource", "delete KubeVirt's custom resource"), "{log}");
    assert!(before(&log, "delete KubeVirt's custom resource", "confirm Longhorn's uninstall"), "{log}");
    assert!(log.contains("done: Job longhorn-system/longhorn-uninstall Complete"), "{log}");
    assert!(log.contains("kite uninstall: Kite is removed"), "{log}");
    for gone in [
        &["namespace", "kubevirt"][..],
        &["namespace", "cdi"],
        &["namespace", "longhorn-system"],
        &["crd", "kubevirts.kubevirt.io"],
        &["crd", "virtualmachines.kubevirt.io"],
        &["crd", "datavolumes.cdi.kubevirt.io"],
        &["crd", "settings.longhorn.io"],
        &["apiservice", "v1.subresources.kubevirt.io"],
        &["validatingwebhookconfiguration", "virt-api-validator"],
        &["validatingwebhookconfiguration", "longhorn-webhook-validator"],
        &["mutatingwebhookconfiguration", "longhorn-webhook-mutator"],
        &["storageclass", "longhorn"],
        &["clusterrole", "longhorn-uninstall-role"],
        &["priorityclass", "kubevirt-cluster-critical"],
    ] {
        let mut shown = vec!["get"];
        shown.extend_from_slice(gone);
        shown.extend_from_slice(&["--ignore-not-found", "-o", "yaml"]);
        assert!(absent(&cluster, gone), "{gone:?} is left: {}\n{log}", kubectl(&cluster.admin, &shown));
    }
    assert!(!absent(&cluster, &["validatingwebhookconfiguration", "other-team-validator"]), "not the stack's: kept");
    let node = cluster.get(&["node", "kite-node-1"]);
    assert!(node["metadata"]["labels"]["kubevirt.io/schedulable"].is_null(), "{node}");
}

const FOREIGN_WEBHOOK: &str = "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: other-team-validator}
webhooks:
- name: check.other-team.example.org
  failurePolicy: Ignore
  sideEffects: None
  admissionReviewVersions: [v1]
  clientConfig: {service: {namespace: other-team, name: gone, port: 443}}
  rules: [{apiGroups: [example.org], apiVersions: [v1], operations: [CREATE], resources: [widgets]}]
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespaces_deleted_before_their_operators_finished_are_reproduced_then_uninstall_stack_completes() {
    let cluster = Cluster::without_the_stack(FakeApiServer::builder()).await;
    let dir = release(&cluster, "release", &Versions::default());
    let (_, controller) = install_everything(&cluster, &dir).await;

    // What the existing platform's scripts did: delete the namespaces, not the custom resources.
    for namespace in ["longhorn-system", "kubevirt"] {
        kubectl(&cluster.admin, &["delete", "namespace", namespace, "--wait=false"]);
    }
    kubectl(&cluster.admin, &["create", "namespace", "scratch"]);
    kubectl(&cluster.admin, &["delete", "namespace", "scratch", "--wait=false"]);
    // Reproduced: KubeVirt's APIService is left without virt-api and stalls every namespace ...
    eventually(Duration::from_secs(30), "scratch to stall on KubeVirt's APIService", || async {
        let scratch = cluster.get(&["namespace", "scratch"]);
        let stalled = scratch["status"]["conditions"].as_array().into_iter().flatten().any(|c| {
            c["type"] == "NamespaceDeletionDiscoveryFailure"
                && c["status"] == "True"
                && c["message"].as_str().is_some_and(|m| m.contains("subresources.kubevirt.io/v1"))
        });
        stalled.then_some(())
    })
    .await;
    // ... the KubeVirt resource keeps its finalizer with nobody to release it, and Longhorn's nodes theirs,
    // which nobody may release by hand: Longhorn's webhooks outlived their Service.
    let kubevirt = cluster.get(&["kubevirt", "-n", "kubevirt", "kubevirt"]);
    assert!(kubevirt["metadata"]["deletionTimestamp"].is_string(), "{kubevirt}");
    let patch = kite_testkit::openssh::run_bounded(
        {
            let mut command = std::process::Command::new("kubectl");
            command.arg("--kubeconfig").arg(&cluster.admin).args([
                "-n",
                "longhorn-system",
                "patch",
                "nodes.longhorn.io",
                "kite-node-1",
                "--type=merge",
                "-p",
                r#"{"metadata":{"finalizers":null}}"#,
            ]);
            command
        },
        None,
        Duration::from_secs(30),
    );
    let refusal = said(&patch);
    assert!(!patch.status.success() && refusal.contains("failed calling webhook"), "{refusal}");

    let doctor = cluster.kite(&["doctor"]).await;
    let found = said(&doctor);
    assert!(!doctor.status.success(), "{found}");
    assert!(found.contains("FAIL APIService v1.subresources.kubevirt.io"), "{found}");
    assert!(found.contains("FAIL validatingwebhookconfiguration longhorn-webhook-validator"), "{found}");

    // Handled: the stale APIService and webhooks go first, then the finalizers their operators cannot release.
    let uninstall = cluster.kite(&["uninstall", "--stack", "--delete-images", "--delete-machines", "--yes"]).await;
    let log = said(&uninstall);
    assert!(uninstall.status.success(), "{log}");
    drop(controller);
    for expected in [
        "deleted APIService v1.subresources.kubevirt.io (calls Service kubevirt/virt-api, which is gone)",
        "deleted ValidatingWebhookConfiguration longhorn-webhook-validator (calls Service longhorn-system/longhorn-admission-webhook, which is gone)",
        "KubeVirt kubevirt/kubevirt: finalizer kubevirt.io/foregroundDeleteKubeVirt released, since Deployment kubevirt/virt-operator is not running",
        "Node longhorn-system/kite-node-1: finalizer longhorn.io released, since DaemonSet longhorn-system/longhorn-manager is not running",
        "Longhorn's manager is not running, so its uninstall job cannot run",
    ] {
        assert!(log.contains(expected), "the uninstall lacks {expected:?}:\n{log}");
    }
    for namespace in ["kubevirt", "cdi", "longhorn-system", "scratch"] {
        assert!(absent(&cluster, &["namespace", namespace]), "namespace {namespace} is left:\n{log}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stack_upgrade_refuses_a_downgrade_a_skipped_longhorn_minor_and_a_changed_file_then_rolls_out() {
    let cluster = Cluster::without_the_stack(FakeApiServer::builder()).await;
    let dir = release(&cluster, "release", &Versions::default());
    let (_, controller) = install_everything(&cluster, &dir).await;
    let writes = admin_writes(&cluster);
    let upgrade = |dir: PathBuf| {
        let from = dir.to_str().unwrap().to_string();
        cluster.kite(&["upgrade", "--from", &from, "--allow-unpinned", "--yes"])
    };

    let skip = release(&cluster, "skip", &Versions { longhorn: "v1.12.0".into(), ..Versions::default() });
    let refused = upgrade(skip).await;
    let log = said(&refused);
    assert!(!refused.status.success(), "{log}");
    assert!(log.contains("FAIL Longhorn: Longhorn v1.10.0 → v1.12.0 skips a minor version: Longhorn upgrades one minor version at a time (to v1.11.x first)"), "{log}");

    let older = release(&cluster, "older", &Versions { kubevirt: "v1.8.2".into(), ..Versions::default() });
    let refused = upgrade(older).await;
    let log = said(&refused);
    assert!(!refused.status.success(), "{log}");
    assert!(log.contains("FAIL KubeVirt: KubeVirt v1.9.0 → v1.8.2 is a downgrade"), "{log}");

    // Longhorn v1.11.3's longhorn.yaml is pinned: a file that claims it and differs is refused, even unpinned ones allowed.
    let changed = release(&cluster, "changed", &Versions { longhorn: "v1.11.3".into(), ..Versions::default() });
    let hash = sha256(&changed.join("longhorn.yaml"));
    let refused = upgrade(changed).await;
    let log = said(&refused);
    assert!(!refused.status.success(), "{log}");
    let expected = format!(
        "FAIL Longhorn release: longhorn.yaml of v1.11.3 has SHA-256 {hash}, but Longhorn publishes 67ae1baa5f7121dc0aa55f0be9463c96dd65fefc5b1e5f5474de77b5ff2d9435"
    );
    assert!(log.contains(&expected), "{log}");
    assert_eq!(admin_writes(&cluster), writes, "a refused upgrade writes nothing");

    let next = release(
        &cluster,
        "next",
        &Versions { longhorn: "v1.11.0".into(), kubevirt: "v1.9.1".into(), ..Versions::default() },
    );
    let upgraded = upgrade(next.clone()).await;
    let log = said(&upgraded);
    assert!(upgraded.status.success(), "{log}");
    for expected in [
        "ok   Longhorn: Longhorn v1.10.0 → v1.11.0",
        "ok   KubeVirt: KubeVirt v1.9.0 → v1.9.1",
        "update DaemonSet longhorn-system/longhorn-manager",
        "update Deployment kubevirt/virt-operator",
        "done: longhorn-manager v1.11.0: 1/1 ready, 1/1 updated",
        "done: KubeVirt kubevirt/kubevirt: phase Deployed, Available True, version v1.9.1",
    ] {
        assert!(log.contains(expected), "the upgrade lacks {expected:?}:\n{log}");
    }
    let installation = cluster.get(&["kiteplatform", "kite"])["status"]["installation"].clone();
    assert_eq!(installation["operation"], "Upgrade");
    let entry =
        |name: &str| installation["stack"].as_array().unwrap().iter().find(|c| c["name"] == name).cloned().unwrap();
    assert_eq!(entry("longhorn")["version"], "v1.11.0", "{installation}");
    assert_eq!(entry("longhorn")["manifests"][0]["sha256"], sha256(&next.join("longhorn.yaml")).as_str());
    assert_eq!(entry("kubevirt")["version"], "v1.9.1", "{installation}");
    assert_eq!(entry("cdi")["version"], "v1.66.0", "{installation}");

    // The doctor then finds the platform's StorageClass drifted from its settings, and a machine without its VirtualMachine.
    a_user_with_a_machine(&cluster).await;
    kubectl(
        &cluster.admin,
        &["patch", "kiteplatform", "kite", "--type=merge", "-p", r#"{"spec":{"storage":{"dataLocality":"disabled"}}}"#],
    );
    eventually(Duration::from_secs(30), "the controller to see the drift and the machine to run", || async {
        let platform = cluster.get(&["kiteplatform", "kite"]);
        let drifted = platform["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "StorageClassDrifted" && c["status"] == "True");
        let machine = cluster.get(&["kitevirtualmachine", "-n", "kite-user-bob", "web"]);
        (drifted && machine["status"]["phase"] == "Running").then_some(())
    })
    .await;
    drop(controller);
    kubectl(&cluster.admin, &["-n", "kite-user-bob", "delete", "virtualmachine", "web"]);
    let doctor = cluster.kite(&["doctor"]).await;
    let found = said(&doctor);
    assert!(!doctor.status.success(), "{found}");
    assert!(
        found.contains("FAIL StorageClass kite-vm-storage: differs from the platform's storage settings"),
        "{found}"
    );
    assert!(
        found.contains("FAIL Kite's objects: KiteVirtualMachine kite-user-bob/web has no VirtualMachine"),
        "{found}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_installed_by_someone_else_is_never_taken_over() {
    let cluster = Cluster::without_the_stack(FakeApiServer::builder()).await;
    let dir = release(&cluster, "release", &Versions::default());
    // KubeVirt's operator applied by hand, as its project documents.
    kubectl(&cluster.admin, &["apply", "-f", dir.join("kubevirt-operator.yaml").to_str().unwrap()]);
    let platform = cluster.platform_file();
    let writes = admin_writes(&cluster);
    let from = dir.to_str().unwrap();
    let refused = cluster
        .kite(&["install", "--from", from, "--allow-unpinned", "--yes", "--platform", platform.to_str().unwrap()])
        .await;
    let log = said(&refused);
    assert!(!refused.status.success(), "{log}");
    assert!(
        log.contains(
            "FAIL KubeVirt: installed (kubevirts.kubevirt.io exists) but not by kite install: Kite never takes it over"
        ),
        "{log}"
    );
    assert!(log.contains("fix: use it as it is: kite install --skip-stack"), "{log}");
    assert!(lines_with(&log, "FAIL Deployment kubevirt/virt-operator").is_empty(), "said once, not per object: {log}");
    assert_eq!(admin_writes(&cluster), writes, "nothing was written");

    let uninstall = cluster.kite(&["uninstall", "--stack", "--delete-images", "--plan"]).await;
    let plan = said(&uninstall);
    assert!(plan.contains("WARN KubeVirt: installed, but not by kite install (kubevirts.kubevirt.io has no hy3ons.github.io/stack label): left alone"), "{plan}");
    assert!(lines_with(&plan, "delete Deployment kubevirt/virt-operator").is_empty(), "{plan}");
}
