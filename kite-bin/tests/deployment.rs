//! The reference deployment, run as it would run. `deploy/k3s/kite.yaml` is
//! applied with the real kubectl to kite-fake-apiserver authorizing by RBAC,
//! over HTTPS; the simulated kubelet makes the Deployments Available. Then
//! the components run, each with a kubeconfig holding its own
//! ServiceAccount's token (never the admin's):
//! - `kite controller`, `kite api` and `kite gateway --kube` as processes.
//!
//! The gateway reaches a machine as it does on a cluster, by the cluster DNS
//! name of the machine's Service, port 22. So the journey runs in a network
//! namespace of its own (`kite_testkit::netns`, which needs root), where
//! each of kite-testkit's guests listens on port 22 of a loopback address
//! of its own and its Services' names are in the namespace's `/etc/hosts`.
//! The guests' sshd logs in only the user running the test, so the gateway
//! runs with `--upstream-user` set to that user.
//!
//! The whole journey runs: sign-up, a machine, its Running phase, an SSH
//! login through the gateway, a disk grown by the operator, an offer made and
//! claimed, a user deleted, SSH exposed outside the cluster, the machine deleted. No
//! request of any component is refused, and every rule granted is used.
//! A second test removes one rule from the API's Role, and sign-up fails,
//! with the API server's 403 in the API's log.

mod support;

use kite_bin::manifests::rbac::{self, Component, Scope};
use kite_bin::manifests::{ManifestArgs, objects};
use kite_testkit::FakeApiServer;
use kite_testkit::fixtures::eventually;
use kite_testkit::openssh::{free_port, require, text};
use kite_testkit::sim::{GuestConfig, GuestNetwork, GuestSsh, SimulationConfig};
use reqwest::StatusCode;
use serde_json::json;
use std::process::Command;
use std::time::Duration;
use support::console::{open, send, ticket, until_shown};
use support::rbac_cluster::RbacCluster;
use support::{Process, Session, create_machine_when_accepted, kubectl, ssh_with_password};

const DEPLOYMENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/k3s/kite.yaml");

/// The user running the test: the guests' sshd logs in no other.
fn login_user() -> String {
    std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| text(&Command::new("id").arg("-un").output().unwrap().stdout).trim().to_string())
}

/// The cluster with the deployment applied and its Deployments Available.
struct Cluster(RbacCluster);

impl std::ops::Deref for Cluster {
    type Target = RbacCluster;
    fn deref(&self) -> &RbacCluster {
        &self.0
    }
}

impl Cluster {
    async fn with_deployment() -> Self {
        let simulation = SimulationConfig { load_balancer_ip: Some("127.0.0.1".into()), ..SimulationConfig::default() };
        let cluster = RbacCluster::start(FakeApiServer::builder(), simulation).await;
        let kubeconfig = cluster.admin.clone();
        tokio::task::spawn_blocking(move || {
            kubectl(&kubeconfig, &["apply", "-f", DEPLOYMENT]);
            let wait = ["wait", "--for=condition=Available", "deployment", "--all", "-n", "kite", "--timeout=30s"];
            kubectl(&kubeconfig, &wait);
            // The operator's platform: one golden image, imported by the controller,
            // and Ada named as the first admin.
            let mut spec = kite_testkit::fixtures::a_platform();
            spec.signup.admin_email = Some("ada@example.org".into());
            let platform =
                serde_json::to_string(&kite_core::api::KitePlatform::new(kite_core::api::PLATFORM_NAME, spec)).unwrap();
            let path = kubeconfig.with_file_name("platform.json");
            std::fs::write(&path, platform).unwrap();
            kubectl(&kubeconfig, &["apply", "-f", path.to_str().unwrap()]);
        })
        .await
        .unwrap();
        Self(cluster)
    }

    /// Starts `kite <args>` as `component`, logging to its file.
    fn start(&self, component: Component, args: &[&str]) -> Process {
        self.component(component.name(), args)
    }

    /// `kite api` as its account, asking the gateway's control API at
    /// `control`; its base URL once it answers healthy.
    async fn start_api(&self, control: u16) -> (Process, String) {
        let port = free_port();
        let api = self.start(
            Component::Api,
            &[
                "api",
                "--namespace",
                "kite",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--gateway-control",
                &format!("127.0.0.1:{control}"),
            ],
        );
        let base = format!("http://127.0.0.1:{port}");
        let http = reqwest::Client::new();
        eventually(Duration::from_secs(30), "kite api to answer healthy", || async {
            let answer = http.get(format!("{base}/api/v1/health")).send().await.ok()?;
            (answer.status() == StatusCode::OK).then_some(())
        })
        .await;
        (api, base)
    }

    fn logs(&self) -> String {
        Component::ALL
            .iter()
            .map(|c| format!("--- {}:\n{}", c.name(), std::fs::read_to_string(self.log(c.name())).unwrap_or_default()))
            .collect()
    }
}

fn session(base: &str) -> Session {
    Session { http: reqwest::Client::new(), base: base.to_string(), token: None, cookies: None, csrf: None }
}

async fn sign_up(base: &str, name: &str) -> (StatusCode, serde_json::Value) {
    session(base)
        .post(
            "/auth/signup",
            json!({ "username": name, "email": format!("{name}@example.org"), "password": format!("{name}-password") }),
        )
        .await
}

async fn signed_in(base: &str, name: &str) -> Session {
    let (status, login) = session(base)
        .post("/auth/login", json!({ "email": format!("{name}@example.org"), "password": format!("{name}-password") }))
        .await;
    assert_eq!(status, StatusCode::OK, "{login}");
    Session { token: login["token"].as_str().map(str::to_string), ..session(base) }
}

/// `kite gateway --kube` as its account, logging in to the guests as the
/// test's user; its SSH port once it is Ready (the machines and users listed).
async fn start_gateway(cluster: &Cluster, control: u16) -> (Process, u16) {
    let (ssh, http) = (free_port(), free_port());
    let audit = cluster.dir.path().join("audit");
    let gateway = cluster.start(
        Component::Gateway,
        &[
            "gateway",
            "--kube",
            "--namespace",
            "kite",
            "--listen",
            &format!("127.0.0.1:{ssh}"),
            "--http",
            &format!("127.0.0.1:{http}"),
            "--upstream-user",
            &login_user(),
            "--control-listen",
            &format!("127.0.0.1:{control}"),
            "--audit-dir",
            audit.to_str().unwrap(),
        ],
    );
    let client = reqwest::Client::new();
    eventually(Duration::from_secs(30), "kite gateway to be Ready", || async {
        let answer = client.get(format!("http://127.0.0.1:{http}/readyz")).send().await.ok()?;
        (answer.status() == StatusCode::OK).then_some(())
    })
    .await;
    (gateway, ssh)
}

/// Whether `component` made a request that `grant` allows.
fn used(requests: &[kite_testkit::RequestRecord], component: Component, grant: &rbac::Grant) -> bool {
    let account = format!("system:serviceaccount:kite:{}", component.name());
    requests.iter().any(|r| {
        r.user.as_deref() == Some(account.as_str())
            && grant.resources.contains(&r.resource.as_str())
            && grant.verbs.contains(&r.verb.as_str())
            && match &grant.scope {
                Scope::Cluster => true,
                Scope::Namespace(namespace) => r.namespace.as_deref() == Some(namespace.as_str()),
            }
            && (grant.names.is_empty() || r.name.as_ref().is_some_and(|n| grant.names.contains(n)))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_deployment_runs_the_whole_journey_with_each_component_under_its_own_account() {
    let this = "the_deployment_runs_the_whole_journey_with_each_component_under_its_own_account";
    let Some(hosts_file) = tokio::task::block_in_place(|| kite_testkit::netns::rerun_isolated(this)) else { return };
    require("sshd");
    let cluster = Cluster::with_deployment().await;
    let guests = kite_testkit::sim::start_guests(
        &cluster.server,
        GuestConfig {
            root: cluster.dir.path().join("machines"),
            login_user: login_user(),
            poll: Duration::from_millis(100),
            network: GuestNetwork::ServiceNames { hosts_file, domain: "cluster.local".into() },
            ssh: GuestSsh::OpenSsh,
        },
    );
    let controller_port = free_port();
    let _controller = cluster.start(
        Component::Controller,
        &[
            "controller",
            "--namespace",
            "kite",
            "--listen",
            &format!("127.0.0.1:{controller_port}"),
            "--identity",
            "test",
        ],
    );
    let control = free_port();
    let (_api, base) = cluster.start_api(control).await;
    let (_gateway, ssh) = start_gateway(&cluster, control).await;

    // Sign-up: the account the platform names is the admin.
    let (status, body) = sign_up(&base, "ada").await;
    assert_eq!(status, StatusCode::CREATED, "{body}\n{}", cluster.logs());
    let ada = signed_in(&base, "ada").await;
    let created = create_machine_when_accepted(
        &ada,
        json!({ "name": "web", "sshId": "ada_web", "sshPassword": "machine-password" }),
    )
    .await;
    let namespace = created["vm"]["namespace"].as_str().unwrap_or_default().to_string();
    eventually(Duration::from_secs(90), "the machine to run", || async {
        (ada.get("/vms/web").await.1["vm"]["phase"] == "Running").then_some(())
    })
    .await;
    let session = eventually(Duration::from_secs(30), "an SSH session in the machine", || async {
        let output = ssh_with_password(ssh, "ada_web", "machine-password", "echo kite-deployed", cluster.dir.path());
        output.status.success().then_some(output)
    })
    .await;
    assert!(text(&session.stdout).contains("kite-deployed"));
    // The session is audited and recorded, and its owner sees it through the API
    // (which reads the gateway's control token from its Secret).
    let sessions = eventually(Duration::from_secs(20), "the session in the list", || async {
        let (status, body) = ada.get("/ssh-sessions").await;
        assert_eq!(status, StatusCode::OK, "{body}\n{}", cluster.logs());
        let sessions = body["sessions"].as_array().cloned().unwrap_or_default();
        sessions.iter().any(|s| s["live"] == false).then_some(sessions)
    })
    .await;
    assert_eq!(sessions[0]["machine"], "web");
    assert_eq!(sessions[0]["channels"][0]["recorded"], true, "{sessions:?}");
    // The serial console, which the API dials as its own account: the guest's login prompt answers.
    let mut console = open(&ada, &ticket(&ada, "/vms/web/console-ticket").await).await;
    let mut shown = String::new();
    send(&mut console, "\r").await;
    until_shown(&mut console, &mut shown, "web login: ").await;
    drop(console);

    // The operator grows the machine's disk; the controller expands its claim.
    let kubeconfig = cluster.admin.clone();
    let grown = namespace.clone();
    tokio::task::spawn_blocking(move || {
        let disk = r#"{"spec":{"disk":"64Gi"}}"#;
        let namespace = if grown.is_empty() { "--all-namespaces".to_string() } else { format!("--namespace={grown}") };
        kubectl(&kubeconfig, &["patch", "ktvm", "web", &namespace, "--type=merge", "-p", disk]);
    })
    .await
    .unwrap();
    eventually(Duration::from_secs(30), "the claim to grow", || async {
        let requests = cluster.server.requests();
        requests.iter().any(|r| r.resource == "persistentvolumeclaims" && r.verb.as_str() == "patch").then_some(())
    })
    .await;

    // An offer for a second user, claimed; then that user is deleted.
    let (status, body) = sign_up(&base, "bob").await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let bob = signed_in(&base, "bob").await;
    let bob_id = bob.get("/me").await.1["user"]["name"].as_str().unwrap().to_string();
    let (status, body) =
        ada.post("/admin/vm-offers", json!({ "targetUser": bob_id, "cpu": 1, "memory": "1Gi", "disk": "20Gi" })).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let offer = body["offer"]["name"].as_str().unwrap().to_string();
    eventually(Duration::from_secs(60), "the offer to be claimed", || async {
        let (status, body) = bob
            .post(
                &format!("/vm-offers/{offer}/claim"),
                json!({ "sshId": "bob_gift", "sshPassword": "machine-password" }),
            )
            .await;
        match status {
            StatusCode::CREATED => Some(()),
            StatusCode::NOT_FOUND | StatusCode::CONFLICT | StatusCode::UNPROCESSABLE_ENTITY => None,
            other => panic!("claiming the offer: {other} {body}"),
        }
    })
    .await;
    let (status, body) = ada.delete("/admin/users/bob").await;
    assert!(status.is_success(), "{status} {body}");
    // The operator exposes SSH outside the cluster, from the settings page: on
    // 2222, never the node's own sshd port. ServiceLB (here, the simulation)
    // gives the Service an address, and only then is the gateway Ready.
    let exposure =
        json!({ "baseDomain": "example.net", "sshGateway": { "externalEnabled": true, "externalPort": 2222 } });
    let (status, body) = ada.patch("/admin/settings", exposure).await;
    assert!(status.is_success(), "{status} {body}");
    let kubeconfig = cluster.admin.clone();
    let (platform, service) = tokio::task::spawn_blocking(move || {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let platform: serde_json::Value =
                serde_json::from_str(&kubectl(&kubeconfig, &["get", "kiteplatform", "kite", "-o", "json"])).unwrap();
            if platform["status"]["sshGateway"]["phase"] == "Ready" {
                let service =
                    kubectl(&kubeconfig, &["get", "service", "kite-gateway-external", "-n", "kite", "-o", "json"]);
                break (platform, serde_json::from_str::<serde_json::Value>(&service).unwrap());
            }
            assert!(std::time::Instant::now() < deadline, "the gateway is not Ready: {platform}");
            std::thread::sleep(Duration::from_millis(100));
        }
    })
    .await
    .unwrap();
    assert_eq!(platform["status"]["sshGateway"]["observedExternalPort"], 2222, "{platform}");
    assert_eq!(service["spec"]["type"], "LoadBalancer");
    assert_eq!(service["spec"]["selector"]["app"], "kite-gateway", "it selects the Deployment's pods");
    assert_eq!(service["status"]["loadBalancer"]["ingress"][0]["ip"], "127.0.0.1");

    // The machine goes, and with it the gateway's grant.
    let (status, body) = ada.delete("/vms/web").await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    eventually(Duration::from_secs(60), "the machine to be gone", || async {
        (ada.get("/vms/web").await.0 == StatusCode::NOT_FOUND).then_some(())
    })
    .await;
    // Bob's namespace goes with him.
    eventually(Duration::from_secs(60), "the deleted user's namespace to be deleted", || async {
        cluster
            .server
            .requests()
            .iter()
            .any(|r| r.resource == "namespaces" && r.verb.as_str() == "delete")
            .then_some(())
    })
    .await;

    let denied = cluster.server.denials();
    assert!(denied.is_empty(), "no component was refused anything: {denied:#?}\n{}", cluster.logs());
    let requests = cluster.server.requests();
    let gateway = "system:serviceaccount:kite:kite-gateway";
    assert!(
        requests.iter().any(|r| r.user.as_deref() == Some(gateway)
            && r.resource == "secrets"
            && r.name.as_deref() == Some("web-ssh-key")),
        "the gateway read the machine's key Secret through the machine's own grant"
    );
    // Every rule is used, but one: the controller holds `create` on
    // `datavolumes/source` so that Kubernetes lets it grant that right (the
    // golden-image cloner Role), and CDI checks it; nobody calls it.
    let grants = rbac::grants(&ManifestArgs::default().namespaces());
    let unused: Vec<String> = grants
        .iter()
        .filter(|g| !g.resources.contains(&"datavolumes/source"))
        .filter(|g| !used(&requests, g.component, g))
        .map(|g| format!("{} {:?} {:?} {:?} in {:?}", g.component.name(), g.resources, g.verbs, g.names, g.scope))
        .collect();
    assert!(unused.is_empty(), "rules granted and never used: {unused:#?}");
    drop(guests);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_one_rule_of_its_role_the_api_fails_and_its_log_names_the_refusal() {
    let cluster = Cluster::with_deployment().await;
    let role = json!([{ "op": "remove", "path": format!("/rules/{}", api_role_rule_index("configmaps")) }]).to_string();
    let kubeconfig = cluster.admin.clone();
    tokio::task::spawn_blocking(move || {
        kubectl(&kubeconfig, &["patch", "role", "kite-api", "-n", "kite", "--type=json", "-p", &role]);
    })
    .await
    .unwrap();
    let (_api, base) = cluster.start_api(free_port()).await;
    let (status, body) = sign_up(&base, "ada").await;
    assert!(status.is_server_error(), "sign-up cannot reserve the name: {status} {body}");
    assert!(!body.to_string().contains("forbidden"), "the user gets a sentence, not the API server's: {body}");
    let refusal = "configmaps is forbidden: User \"system:serviceaccount:kite:kite-api\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"kite\"";
    eventually(Duration::from_secs(5), "the refusal in the API's log", || async {
        std::fs::read_to_string(cluster.log(Component::Api.name())).unwrap_or_default().contains(refusal).then_some(())
    })
    .await;
    assert!(cluster.server.denials().iter().any(|d| d["resource"] == "configmaps" && d["verb"] == "create"));
}

/// The index of the rule on `resource` in the API's Role in the platform namespace.
fn api_role_rule_index(resource: &str) -> usize {
    let all = objects(&ManifestArgs::default()).unwrap();
    let role = all
        .iter()
        .find(|o| o["kind"] == "Role" && o["metadata"]["name"] == "kite-api" && o["metadata"]["namespace"] == "kite")
        .unwrap();
    role["rules"].as_array().unwrap().iter().position(|r| r["resources"][0] == resource).unwrap()
}
