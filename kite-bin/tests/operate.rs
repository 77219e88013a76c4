//! `kite install` and `kite doctor`, run as an operator runs them: the real
//! binary against kite-fake-apiserver authorizing by RBAC over HTTPS, with
//! the simulated kubelet (Deployments become Available), KubeVirt and CDI
//! (golden images import), and kubectl alongside. The controller runs as a
//! process under its own ServiceAccount once the install has created it, as
//! its Deployment's pod would.

mod support;

use kite_testkit::FakeApiServer;
use kite_testkit::fixtures::eventually;
use kite_testkit::openssh::{free_port, text};
use serde_json::Value;
use std::time::Duration;
use support::operator::{Cluster, a_user_with_a_machine, lines_with, said};
use support::{Process, kubectl};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn install_plans_then_installs_records_what_it_installed_and_the_doctor_finds_it_healthy() {
    let cluster = Cluster::new(FakeApiServer::builder()).await;
    let platform = cluster.platform_file();
    let platform = platform.to_str().unwrap();

    // --plan shows the checks and the steps, and changes nothing.
    let writes = cluster.server.write_count();
    let planned = cluster.kite(&["install", "--skip-stack", "--plan", "--platform", platform]).await;
    let plan = said(&planned);
    assert!(planned.status.success(), "{plan}");
    assert_eq!(cluster.server.write_count(), writes, "--plan wrote to the cluster:\n{plan}");
    for expected in [
        "ok   Kubernetes version: v1.32.0-kite-testkit",
        "ok   nodes: 1 of 1 Ready",
        "ok   KubeVirt: kubevirt.io/v1 serves VirtualMachine, VirtualMachineInstance",
        "create CustomResourceDefinition kiteplatforms.hy3ons.github.io",
        "create Deployment kite/kite-api",
        "then wait for Deployments kite-controller, kite-api, kite-gateway in kite to be Available",
        "create KitePlatform kite",
    ] {
        assert!(plan.contains(expected), "the plan lacks {expected:?}:\n{plan}");
    }

    // Without --yes and without a terminal, it asks for --yes and changes nothing.
    let refused = cluster.kite(&["install", "--skip-stack", "--platform", platform]).await;
    assert!(!refused.status.success());
    assert!(said(&refused).contains("pass --yes"), "{}", said(&refused));
    assert_eq!(cluster.server.write_count(), writes);

    // The install, with the controller starting once its Deployment exists.
    let install = cluster.kite(&["install", "--skip-stack", "--yes", "--platform", platform]);
    let (installed, _controller) = tokio::join!(install, cluster.controller_when_deployed());
    let log = said(&installed);
    assert!(installed.status.success(), "{log}");
    assert!(log.contains("waiting for the KitePlatform's golden images"), "each wait reports: {log}");
    let image = format!("done: image {}: Ready", kite_testkit::fixtures::IMAGE);
    assert!(log.contains(&image), "{log}");
    assert!(log.contains("kite install: Kite is installed"), "{log}");

    let platform_object = cluster.get(&["kiteplatform", "kite"]);
    let recorded = &platform_object["status"]["installation"];
    assert_eq!(recorded["operation"], "Install", "{platform_object}");
    assert_eq!(recorded["kiteVersion"], env!("CARGO_PKG_VERSION"));
    assert_eq!(recorded["image"], kite_bin::manifests::DEFAULT_IMAGE);
    assert_eq!(recorded["installedBy"], "kubernetes-admin", "who ran it, as the API server knows them");
    assert!(recorded["stack"].as_array().is_some_and(|s| s.len() == 3), "{recorded}");
    assert!(platform_object["status"]["goldenImages"][0]["ready"] == true, "the controller's status is kept beside it");

    let doctor = cluster.kite(&["doctor"]).await;
    assert!(doctor.status.success(), "{}", said(&doctor));
    assert!(lines_with(&said(&doctor), "FAIL").is_empty(), "{}", said(&doctor));
    assert!(said(&doctor).contains("ok   installation: Kite"), "{}", said(&doctor));
    assert!(
        said(&doctor).contains("WARN admin: none, and KitePlatform spec.signup.adminEmail names none"),
        "a platform nobody can sign up to is said: {}",
        said(&doctor)
    );

    // Again: nothing to create or update, and it completes.
    let again = cluster.kite(&["install", "--skip-stack", "--yes", "--output", "json"]).await;
    assert!(again.status.success(), "{}", said(&again));
    let events: Vec<Value> = text(&again.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let plan = events.iter().find(|e| e["event"] == "plan").unwrap();
    let changed: Vec<&Value> = plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["changes"].as_array().unwrap())
        .filter(|c| c["change"] != "unchanged")
        .collect();
    assert!(changed.is_empty(), "a second install changes nothing: {changed:?}");
    assert_eq!(events.last().unwrap()["event"], "finished");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn install_refuses_to_take_over_a_namespace_that_is_not_kites_and_changes_nothing() {
    let cluster = Cluster::new(FakeApiServer::builder()).await;
    let admin = cluster.admin.clone();
    tokio::task::spawn_blocking(move || kubectl(&admin, &["create", "namespace", "kite"])).await.unwrap();
    let writes = cluster.server.write_count();
    let platform = cluster.platform_file();
    let refused = cluster.kite(&["install", "--skip-stack", "--yes", "--platform", platform.to_str().unwrap()]).await;
    let log = said(&refused);
    assert!(!refused.status.success(), "{log}");
    assert!(log.contains("FAIL Namespace kite: exists and is not Kite's"), "{log}");
    assert!(log.contains("nothing was changed"), "{log}");
    assert_eq!(cluster.server.write_count(), writes, "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn install_refuses_an_external_ssh_port_that_is_22_or_held_by_another_load_balancer() {
    let cluster = Cluster::new(FakeApiServer::builder()).await;
    let exposed = |port: u16| {
        let mut spec = kite_testkit::fixtures::a_platform();
        spec.ssh_gateway.external_enabled = true;
        spec.ssh_gateway.external_port = Some(port);
        spec
    };
    let on_22 = cluster.platform_file_with(exposed(22));
    let refused = cluster.kite(&["install", "--skip-stack", "--yes", "--platform", on_22.to_str().unwrap()]).await;
    let log = said(&refused);
    assert!(!refused.status.success(), "{log}");
    assert!(log.contains("FAIL external SSH port 22: 22 is the nodes' own sshd: Kite never takes it over"), "{log}");
    assert!(log.contains("WARN nodes for machines: no node is labelled kubevirt.io/schedulable=true"), "{log}");

    let held = cluster.dir.path().join("held.yaml");
    std::fs::write(&held, HELD_PORT).unwrap();
    let admin = cluster.admin.clone();
    tokio::task::spawn_blocking(move || kubectl(&admin, &["apply", "-f", held.to_str().unwrap()])).await.unwrap();
    let on_2222 = cluster.platform_file_with(exposed(2222));
    let refused = cluster.kite(&["install", "--skip-stack", "--yes", "--platform", on_2222.to_str().unwrap()]).await;
    let log = said(&refused);
    assert!(!refused.status.success(), "{log}");
    assert!(
        log.contains("FAIL external SSH port 2222: already held by the LoadBalancer Service default/git-ssh: ServiceLB binds it on every node"),
        "{log}"
    );
    let on_2223 = cluster.platform_file_with(exposed(2223));
    let planned = cluster.kite(&["install", "--skip-stack", "--plan", "--platform", on_2223.to_str().unwrap()]).await;
    assert!(
        said(&planned).contains("ok   external SSH port 2223: no other LoadBalancer Service holds it"),
        "{}",
        said(&planned)
    );
}

/// Another team's service already exposed on 2222.
const HELD_PORT: &str = r#"
apiVersion: v1
kind: Service
metadata:
  name: git-ssh
  namespace: default
spec:
  type: LoadBalancer
  selector: { app: git }
  ports:
    - { name: ssh, port: 2222, targetPort: 22 }
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_stack_or_a_platform_install_says_what_to_do() {
    let cluster = Cluster::new(FakeApiServer::builder()).await;
    let refused = cluster.kite(&["install", "--yes"]).await;
    let log = said(&refused);
    assert!(!refused.status.success(), "{log}");
    assert!(
        log.contains("FAIL KubeVirt, CDI and Longhorn: kite install applies them from their release files in a directory, and no --from DIR was given"),
        "{log}"
    );
    assert!(
        log.contains("https://raw.githubusercontent.com/longhorn/longhorn/v1.11.3/deploy/longhorn.yaml"),
        "it names where each file comes from: {log}"
    );
    assert!(log.contains("FAIL KitePlatform: the cluster has none and no --platform was given"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_install_right_after_an_uninstall_waits_for_the_terminating_namespace_then_succeeds() {
    let cluster = Cluster::new(FakeApiServer::builder().namespace_termination(Duration::from_secs(3))).await;
    let platform = cluster.platform_file();
    let platform = platform.to_str().unwrap();
    let install = cluster.kite(&["install", "--skip-stack", "--yes", "--platform", platform]);
    let (installed, controller) = tokio::join!(install, cluster.controller_when_deployed());
    assert!(installed.status.success(), "{}", said(&installed));
    drop(controller);

    // The namespace goes (as an uninstall leaves it: Terminating), and the install runs at once.
    let admin = cluster.admin.clone();
    tokio::task::spawn_blocking(move || kubectl(&admin, &["delete", "namespace", "kite", "--wait=false"]))
        .await
        .unwrap();
    let install = cluster.kite(&["install", "--skip-stack", "--yes"]);
    let (installed, _controller) = tokio::join!(install, async {
        // The old Deployment goes with the namespace; the controller's pod comes back with the new one.
        eventually(Duration::from_secs(30), "the namespace to be gone", || async {
            let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(cluster.server.client());
            namespaces.get_opt("kite").await.ok().flatten().is_none().then_some(())
        })
        .await;
        cluster.controller_when_deployed().await
    });
    let log = said(&installed);
    assert!(installed.status.success(), "{log}");
    assert!(log.contains("WARN namespace kite: still Terminating from an earlier uninstall"), "{log}");
    assert!(log.contains("waiting for namespace kite to be gone: kite: Terminating since"), "{log}");
    let waited = log.find("waiting for namespace kite to be gone").unwrap();
    let applied = log.find("apply Kite's CustomResourceDefinitions").unwrap();
    assert!(log.find("[1]   done: gone").is_some_and(|done| done > waited), "{log}");
    assert!(applied < waited, "the plan lists the steps before any runs: {log}");
    assert!(log.contains("kite install: Kite is installed"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_install_that_gives_up_says_what_it_observed_and_a_second_run_completes_it() {
    let cluster = Cluster::new(FakeApiServer::builder()).await;
    let platform = cluster.platform_file();
    let platform = platform.to_str().unwrap();
    // No controller runs: the golden image is never imported, and the wait gives up.
    let cut = cluster.kite(&["install", "--skip-stack", "--yes", "--timeout", "2", "--platform", platform]).await;
    let log = said(&cut);
    assert!(!cut.status.success(), "{log}");
    let expected = format!(
        "gave up after 2s waiting for the KitePlatform's golden images (and the gateway's exposure) to be Ready. \
         Last observed: image {}: not reported yet. What to do: `kubectl get kiteplatform kite -o yaml`",
        kite_testkit::fixtures::IMAGE
    );
    assert!(log.contains(&expected), "{log}");
    assert!(cluster.get(&["kiteplatform", "kite"])["status"]["installation"].is_null(), "nothing is recorded");

    // Run again, with the controller: what is there is unchanged, the rest completes.
    let install = cluster.kite(&["install", "--skip-stack", "--yes", "--platform", platform]);
    let (installed, _controller) = tokio::join!(install, cluster.controller_when_deployed());
    let log = said(&installed);
    assert!(installed.status.success(), "{log}");
    assert!(!log.contains("     create "), "everything was applied by the first run: {log}");
    assert_eq!(cluster.get(&["kiteplatform", "kite"])["status"]["installation"]["operation"], "Install");
}

/// Installs Kite with the controller running; the controller's process.
async fn installed(cluster: &Cluster) -> Process {
    let platform = cluster.platform_file();
    let install = cluster.kite(&["install", "--skip-stack", "--yes", "--platform", platform.to_str().unwrap()]);
    let (installed, controller) = tokio::join!(install, cluster.controller_when_deployed());
    assert!(installed.status.success(), "{}", said(&installed));
    controller
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uninstall_refuses_while_machines_exist_then_removes_kite_in_order_and_keeps_the_golden_images() {
    let cluster = Cluster::new(FakeApiServer::builder()).await;
    let _controller = installed(&cluster).await;
    a_user_with_a_machine(&cluster).await;

    let refused = cluster.kite(&["uninstall", "--yes"]).await;
    let log = said(&refused);
    assert!(!refused.status.success(), "{log}");
    assert!(log.contains("FAIL machines: 1 exist: KiteVirtualMachine kite-user-bob/web"), "{log}");
    assert!(log.contains("--delete-machines"), "{log}");

    let removed = cluster.kite(&["uninstall", "--yes", "--delete-machines"]).await;
    let log = said(&removed);
    assert!(removed.status.success(), "{log}");
    for expected in [
        "delete KiteVirtualMachine kite-user-bob/web",
        "delete KiteUser bob",
        "delete KitePlatform kite",
        "delete Deployment kite/kite-api",
        "delete ClusterRole kite-controller",
        "keep Namespace kite (it holds the golden images)",
        "delete CustomResourceDefinition kitevirtualmachines.hy3ons.github.io",
        "wait for every KiteVirtualMachine to be gone",
        "kite uninstall: Kite is removed",
    ] {
        assert!(log.contains(expected), "{expected:?} is missing:\n{log}");
    }
    // The plan comes before any step, and the machines go before the users, the users before the CRDs.
    let at = |text: &str| log.find(text).unwrap_or_else(|| panic!("{text:?} is missing:\n{log}"));
    assert!(at("kite uninstall: plan") < at("[1] delete the machines"));
    assert!(at("[1]   done: gone") < at("[3] delete the users"));
    assert!(at("[3]   done: gone") < at("[8] delete Kite's CustomResourceDefinitions"));
    let crds = cluster.get(&["crd"]);
    let kites: Vec<&Value> =
        crds["items"].as_array().unwrap().iter().filter(|c| c["spec"]["group"] == "hy3ons.github.io").collect();
    assert!(kites.is_empty(), "Kite's CRDs are gone");
    let namespaces = cluster.get(&["namespaces"]);
    let names: Vec<&str> =
        namespaces["items"].as_array().unwrap().iter().filter_map(|n| n["metadata"]["name"].as_str()).collect();
    assert!(!names.contains(&"kite-user-bob"), "the user's namespace is gone: {names:?}");
    assert!(names.contains(&"kite"), "the namespace holding the golden images is kept: {names:?}");
    let images = cluster.get(&["datavolumes", "-n", "kite"]);
    let image = &images["items"][0];
    assert_eq!(image["metadata"]["name"], kite_testkit::fixtures::IMAGE, "the golden image is kept: {images}");
    assert!(image["metadata"]["ownerReferences"].as_array().is_none_or(|o| o.is_empty()), "and orphaned: {image}");
    let deployments = cluster.get(&["deployments", "-n", "kite"]);
    assert!(deployments["items"].as_array().unwrap().is_empty(), "{deployments}");
    assert!(names.contains(&"longhorn-system"), "what is not Kite's stays");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uninstall_with_the_images_ends_only_when_the_namespace_is_gone_and_an_install_can_follow_at_once() {
    let cluster = Cluster::new(FakeApiServer::builder().namespace_termination(Duration::from_secs(2))).await;
    let controller = installed(&cluster).await;
    let removed = cluster.kite(&["uninstall", "--yes", "--delete-images"]).await;
    let log = said(&removed);
    assert!(removed.status.success(), "{log}");
    assert!(log.contains("delete Namespace kite"), "{log}");
    assert!(
        log.contains("to be gone: Namespace kite (Terminating since"),
        "the wait shows the namespace's state: {log}"
    );
    let namespaces = cluster.get(&["namespaces"]);
    assert!(
        !namespaces["items"].as_array().unwrap().iter().any(|n| n["metadata"]["name"] == "kite"),
        "uninstall ended only once the namespace was gone: {namespaces}"
    );
    drop(controller);
    // At once, a new install: nothing to wait for, and it completes.
    let _controller = installed(&cluster).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aggregated_api_that_is_down_is_named_before_the_uninstall_and_when_its_namespace_wait_gives_up() {
    let cluster = Cluster::new(FakeApiServer::builder()).await;
    let _controller = installed(&cluster).await;
    let faults = cluster.dir.path().join("faults.yaml");
    std::fs::write(&faults, left_behind()).unwrap();
    let admin = cluster.admin.clone();
    tokio::task::spawn_blocking(move || kubectl(&admin, &["apply", "-f", faults.to_str().unwrap()])).await.unwrap();
    let apiservices: kube::Api<k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService> =
        kube::Api::all(cluster.server.client());
    eventually(Duration::from_secs(30), "the APIService to be seen unavailable", || async {
        let service = apiservices.get_opt("v1.subresources.kubevirt.io").await.ok().flatten()?;
        let conditions = service.status?.conditions?;
        conditions.iter().any(|c| c.type_ == "Available" && c.status == "False").then_some(())
    })
    .await;

    let stalled = cluster.kite(&["uninstall", "--yes", "--delete-images", "--timeout", "3"]).await;
    let log = said(&stalled);
    assert!(!stalled.status.success(), "{log}");
    assert!(log.contains("WARN APIService v1.subresources.kubevirt.io: not Available"), "{log}");
    assert!(log.contains("it is not Kite's, so it is left alone"), "{log}");
    assert!(
        log.contains(
            "gave up after 3s waiting for Namespace kite to be gone. Last observed: Namespace kite (Terminating since"
        ),
        "{log}"
    );
    assert!(log.contains("NamespaceDeletionDiscoveryFailure"), "the wait says what holds it: {log}");
    assert!(
        apiservices.get_opt("v1.subresources.kubevirt.io").await.unwrap().is_some(),
        "what is not Kite's is left alone"
    );

    // Once the operator removes it, the same command completes.
    let admin = cluster.admin.clone();
    tokio::task::spawn_blocking(move || kubectl(&admin, &["delete", "apiservice", "v1.subresources.kubevirt.io"]))
        .await
        .unwrap();
    let removed = cluster.kite(&["uninstall", "--yes", "--delete-images"]).await;
    assert!(removed.status.success(), "{}", said(&removed));
}

const OLD_IMAGE: &str = "localhost/kite@sha256:1111111111111111111111111111111111111111111111111111111111111111";
const NEW_IMAGE: &str = "localhost/kite@sha256:2222222222222222222222222222222222222222222222222222222222222222";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_to_a_new_image_rolls_out_replaces_what_cannot_change_in_place_and_records_it() {
    let cluster = Cluster::new(FakeApiServer::builder()).await;
    let platform = cluster.platform_file();
    let install = cluster.kite(&[
        "install",
        "--skip-stack",
        "--yes",
        "--image",
        OLD_IMAGE,
        "--platform",
        platform.to_str().unwrap(),
    ]);
    let (installed, _controller) = tokio::join!(install, cluster.controller_when_deployed());
    assert!(installed.status.success(), "{}", said(&installed));
    assert_eq!(
        cluster.get(&["kiteplatform", "kite"])["status"]["installation"]["imageDigest"],
        OLD_IMAGE.split_once('@').unwrap().1
    );

    // Someone recreated the API's Deployment with another selector: it cannot be patched back.
    let admin = cluster.admin.clone();
    let mut api = cluster.get(&["deployment", "kite-api", "-n", "kite"]);
    for field in ["uid", "resourceVersion", "creationTimestamp", "generation", "managedFields"] {
        api["metadata"].as_object_mut().unwrap().remove(field);
    }
    api.as_object_mut().unwrap().remove("status");
    api["spec"]["selector"] = serde_json::json!({ "matchLabels": { "app": "kite-api", "by": "hand" } });
    api["spec"]["template"]["metadata"]["labels"]["by"] = "hand".into();
    let file = cluster.dir.path().join("api.json");
    std::fs::write(&file, api.to_string()).unwrap();
    tokio::task::spawn_blocking(move || {
        kubectl(&admin, &["delete", "deployment", "kite-api", "-n", "kite"]);
        kubectl(&admin, &["create", "-f", file.to_str().unwrap()]);
    })
    .await
    .unwrap();

    let upgraded = cluster.kite(&["upgrade", "--yes", "--image", NEW_IMAGE]).await;
    let log = said(&upgraded);
    assert!(upgraded.status.success(), "{log}");
    for expected in [
        "ok   version: from 0.1.0 to 0.1.0",
        "WARN Deployment kite/kite-api: its spec.selector",
        "cannot change in place: it is replaced",
        "replace what cannot change in place",
        "update Deployment kite/kite-controller",
        "then wait for Deployments kite-controller, kite-api, kite-gateway in kite to be Available",
        "record Kite 0.1.0 as upgraded",
        "kite upgrade: Kite is upgraded",
    ] {
        assert!(log.contains(expected), "{expected:?} is missing:\n{log}");
    }
    let deployment = cluster.get(&["deployment", "kite-api", "-n", "kite"]);
    assert_eq!(deployment["spec"]["template"]["spec"]["containers"][0]["image"], NEW_IMAGE);
    assert!(deployment["spec"]["selector"]["matchLabels"].get("by").is_none(), "replaced: {deployment}");
    let recorded = cluster.get(&["kiteplatform", "kite"])["status"]["installation"].clone();
    assert_eq!(recorded["operation"], "Upgrade", "{recorded}");
    assert_eq!(recorded["image"], NEW_IMAGE);
    assert_eq!(recorded["imageDigest"], NEW_IMAGE.split_once('@').unwrap().1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_downgrade_is_refused_unless_forced_and_an_unrecorded_installation_is_not_upgraded() {
    let cluster = Cluster::new(FakeApiServer::builder()).await;
    let refused = cluster.kite(&["upgrade", "--yes"]).await;
    assert!(!refused.status.success());
    assert!(said(&refused).contains("FAIL installation: there is no KitePlatform"), "{}", said(&refused));

    let _controller = installed(&cluster).await;
    // The cluster runs a newer Kite than this binary.
    let admin = cluster.admin.clone();
    tokio::task::spawn_blocking(move || {
        let newer = r#"{"status":{"installation":{"kiteVersion":"9.1.0"}}}"#;
        kubectl(&admin, &["patch", "kiteplatform", "kite", "--subresource=status", "--type=merge", "-p", newer]);
    })
    .await
    .unwrap();
    let writes = cluster.server.write_count();
    let refused = cluster.kite(&["upgrade", "--yes"]).await;
    let log = said(&refused);
    assert!(!refused.status.success(), "{log}");
    assert!(log.contains("FAIL version: a downgrade from 9.1.0 to 0.1.0 is refused"), "{log}");
    assert!(log.contains("pass --force if you are sure"), "{log}");
    assert_eq!(cluster.server.write_count(), writes, "nothing was changed");

    let forced = cluster.kite(&["upgrade", "--yes", "--force"]).await;
    assert!(forced.status.success(), "{}", said(&forced));
    assert!(said(&forced).contains("WARN version: a downgrade from 9.1.0 to 0.1.0, forced"), "{}", said(&forced));
    assert_eq!(cluster.get(&["kiteplatform", "kite"])["status"]["installation"]["kiteVersion"], "0.1.0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_doctor_checks_from_outside_what_users_meet_the_api_answering_and_the_gateways_host_key() {
    let cluster = Cluster::new(FakeApiServer::builder()).await;
    let _controller = installed(&cluster).await;
    let (api_port, ssh_port, gateway_http, impostor_port, impostor_http) =
        (free_port(), free_port(), free_port(), free_port(), free_port());
    let _api =
        cluster.component("kite-api", &["api", "--namespace", "kite", "--listen", &format!("127.0.0.1:{api_port}")]);
    let gateway_args = |ssh: u16, http: u16| {
        vec![
            "gateway".to_string(),
            "--kube".into(),
            "--namespace".into(),
            "kite".into(),
            "--listen".into(),
            format!("127.0.0.1:{ssh}"),
            "--http".into(),
            format!("127.0.0.1:{http}"),
            // Two gateways on one host: each its own control port.
            "--control-listen".into(),
            "127.0.0.1:0".into(),
        ]
    };
    let args = gateway_args(ssh_port, gateway_http);
    let _gateway = cluster.component("kite-gateway", &args.iter().map(String::as_str).collect::<Vec<_>>());
    // Another SSH server on the public address: a gateway with a key of its own.
    let mut args = gateway_args(impostor_port, impostor_http);
    let key = cluster.dir.path().join("impostor_key");
    args.extend(["--host-key".to_string(), key.to_str().unwrap().to_string()]);
    let _impostor = cluster.component("kite-gateway", &args.iter().map(String::as_str).collect::<Vec<_>>());
    for port in [api_port, ssh_port, impostor_port] {
        tokio::task::spawn_blocking(move || kite_testkit::openssh::wait_for_port(port)).await.unwrap();
    }

    let url = format!("http://127.0.0.1:{api_port}");
    let ssh = format!("127.0.0.1:{ssh_port}");
    let healthy = cluster.kite(&["doctor", "--public-url", &url, "--ssh-address", &ssh]).await;
    let log = said(&healthy);
    assert!(healthy.status.success(), "{log}");
    assert!(log.contains(&format!("ok   public URL {url}: {url}/api/v1/health answers 200 OK")), "{log}");
    assert!(log.contains(&format!("ok   public SSH {ssh}: presents SHA256:")), "{log}");
    assert!(log.contains("the key kite-gateway-host-key holds"), "{log}");

    let nowhere = format!("http://127.0.0.1:{}", free_port());
    let impostor = format!("127.0.0.1:{impostor_port}");
    let faulty = cluster.kite(&["doctor", "--public-url", &nowhere, "--ssh-address", &impostor]).await;
    let log = said(&faulty);
    assert!(!faulty.status.success(), "{log}");
    assert!(log.contains(&format!("FAIL public URL {nowhere}: {nowhere}/api/v1/health does not answer")), "{log}");
    assert!(log.contains(&format!("FAIL public SSH {impostor}: presents SHA256:")), "{log}");
    assert!(log.contains("but kite-gateway-host-key holds SHA256:"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_doctor_names_each_fault_with_its_evidence_and_fix_and_fails() {
    let cluster = Cluster::new(FakeApiServer::builder()).await;
    // Before any install: everything of Kite's is missing.
    let doctor = cluster.kite(&["doctor"]).await;
    let log = said(&doctor);
    assert!(!doctor.status.success(), "{log}");
    assert!(log.contains("FAIL CRD kiteplatforms.hy3ons.github.io: missing"), "{log}");
    assert!(log.contains("FAIL Deployment kite/kite-api: missing"), "{log}");

    // The existing platform's incidents: an aggregated API whose backend is gone, a webhook
    // configuration whose Service is gone, and a namespace stuck on them.
    let faults = cluster.dir.path().join("faults.yaml");
    std::fs::write(&faults, left_behind()).unwrap();
    let admin = cluster.admin.clone();
    tokio::task::spawn_blocking(move || {
        kubectl(&admin, &["apply", "-f", faults.to_str().unwrap()]);
        kubectl(&admin, &["delete", "namespace", "stuck", "--wait=false"]);
    })
    .await
    .unwrap();
    let json = eventually(Duration::from_secs(30), "the doctor to see the stuck namespace", || async {
        let doctor = cluster.kite(&["doctor", "--output", "json"]).await;
        let report: Value = serde_json::from_slice(&doctor.stdout).ok()?;
        let stuck = report["checks"].as_array()?.iter().find(|c| c["name"] == "namespace stuck")?.clone();
        stuck["observed"].as_str()?.contains("NamespaceDeletionDiscoveryFailure").then_some((doctor, report))
    })
    .await;
    let (doctor, report) = json;
    assert!(!doctor.status.success());
    assert_eq!(report["healthy"], false);
    let check = |name: &str| -> Value {
        report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no check {name}: {report}"))
    };
    let api_service = check("APIService v1.subresources.kubevirt.io");
    assert_eq!(api_service["outcome"], "fail");
    assert!(api_service["observed"].as_str().unwrap().contains("Service kubevirt/virt-api"), "{api_service}");
    assert_eq!(
        api_service["fix"],
        "if its component was removed: kubectl delete apiservice v1.subresources.kubevirt.io; otherwise repair Service kubevirt/virt-api"
    );
    let webhook = check("validatingwebhookconfiguration longhorn-webhook-validator");
    assert!(
        webhook["observed"]
            .as_str()
            .unwrap()
            .contains("Service longhorn-system/longhorn-admission-webhook, which does not exist"),
        "{webhook}"
    );
    assert_eq!(
        webhook["fix"],
        "if its component was removed: kubectl delete validatingwebhookconfiguration longhorn-webhook-validator"
    );
    let stuck = check("namespace stuck");
    assert!(stuck["observed"].as_str().unwrap().contains("NamespaceDeletionDiscoveryFailure"), "{stuck}");
    assert!(stuck["observed"].as_str().unwrap().contains("subresources.kubevirt.io/v1"), "{stuck}");
}

/// What the existing platform's uninstall left behind: KubeVirt's aggregated
/// API without virt-api, and Longhorn's validating webhook without its Service
/// (names as in their release manifests), and a namespace to delete.
fn left_behind() -> String {
    format!("{}---{LEFT_BEHIND}", kite_testkit::fixtures::KUBEVIRT_SUBRESOURCES_APISERVICE)
}

/// Longhorn's validating webhook (as its release manifest names it) and a namespace.
const LEFT_BEHIND: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: longhorn-webhook-validator
webhooks:
  - name: validator.longhorn.io
    admissionReviewVersions: ["v1"]
    sideEffects: None
    failurePolicy: Ignore
    clientConfig:
      service:
        namespace: longhorn-system
        name: longhorn-admission-webhook
        path: /v1/webhook/validation
    rules:
      - apiGroups: ["longhorn.io"]
        apiVersions: ["v1beta2"]
        operations: ["CREATE", "UPDATE"]
        resources: ["volumes"]
---
apiVersion: v1
kind: Namespace
metadata:
  name: stuck
"#;
