//! The Kubernetes backend routes from `KiteVirtualMachine` objects in
//! kite-testkit's API server to a real sshd playing the VM, with the real
//! OpenSSH client as the user.

mod common;

use common::*;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kite_core::api::*;
use kite_core::ssh_secret;
use kite_ssh::kube::{AddressResolver, KubeBackend, messages};
use kube::api::{Api, Patch, PatchParams, PostParams};
use russh::keys::ssh_key::LineEnding;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const NS: &str = "kite-user-ku-1";

/// Maps every Service to the address the test sets.
#[derive(Clone, Default)]
struct ToLoopback(Arc<Mutex<BTreeMap<String, String>>>);

impl AddressResolver for ToLoopback {
    fn address(&self, namespace: &str, service: &str, _port: u16) -> String {
        self.0.lock().unwrap().get(&format!("{namespace}/{service}")).cloned().unwrap_or_else(|| "127.0.0.1:1".into())
    }
}

struct Cluster {
    server: kite_testkit::FakeApiServer,
    resolver: ToLoopback,
    _sshd: Sshd,
    sshd_address: String,
    upstream_key: russh::keys::PrivateKey,
    host_key: russh::keys::PublicKey,
}

async fn cluster() -> Cluster {
    let server = kite_testkit::FakeApiServer::new().unwrap();
    for crd in kite_core::api::crds() {
        server.install_crd(&crd).unwrap();
    }
    let namespaces: Api<Namespace> = Api::all(server.client());
    let mut ns = Namespace::default();
    ns.metadata.name = Some(NS.into());
    namespaces.create(&PostParams::default(), &ns).await.unwrap();
    let upstream_key = new_key();
    let sshd = Sshd::start(upstream_key.public_key());
    let (sshd_address, host_key) = (sshd.address(), sshd.host_key.public_key().clone());
    Cluster { server, resolver: ToLoopback::default(), _sshd: sshd, sshd_address, upstream_key, host_key }
}

impl Cluster {
    /// A VM routed by `ssh_id` (as root on the test sshd), in `phase`, with its Secret and Service name.
    async fn vm(&self, name: &str, ssh_id: &str, phase: &str) {
        let vms: Api<KiteVirtualMachine> = Api::namespaced(self.server.client(), NS);
        let vm = kite_testkit::fixtures::a_vm(name)
            .with_ssh_id(ssh_id)
            .with_password_hash(&kite_ssh::password::hash_for_tests("vm-password").unwrap())
            .in_namespace(NS)
            .build();
        vms.create(&PostParams::default(), &vm).await.unwrap();
        let status = json!({"status": {"phase": phase, "serviceName": format!("vps-access-{name}"), "sshKeySecretName": format!("{name}-ssh-key")}});
        vms.patch_status(name, &PatchParams::default(), &Patch::Merge(status)).await.unwrap();
        let secrets: Api<Secret> = Api::namespaced(self.server.client(), NS);
        let mut secret = Secret::default();
        secret.metadata.name = Some(format!("{name}-ssh-key"));
        secret.type_ = Some(ssh_secret::SECRET_TYPE.into());
        secret.data = Some(BTreeMap::from([
            (
                ssh_secret::PRIVATE_KEY.to_string(),
                ByteString(self.upstream_key.to_openssh(LineEnding::LF).unwrap().as_bytes().to_vec()),
            ),
            (ssh_secret::PUBLIC_KEY.to_string(), ByteString(public_line(self.upstream_key.public_key()).into_bytes())),
            (ssh_secret::HOST_PUBLIC_KEY.to_string(), ByteString(public_line(&self.host_key).into_bytes())),
        ]));
        secrets.create(&PostParams::default(), &secret).await.unwrap();
        self.resolver.0.lock().unwrap().insert(format!("{NS}/vps-access-{name}"), self.sshd_address.clone());
    }

    async fn router(&self) -> (RunningRouter, Arc<()>) {
        // The test sshd has only root; a real VM has the sshId user cloud-init made.
        let backend = KubeBackend::start(self.server.client(), self.resolver.clone()).with_upstream_user("root");
        assert!(backend.wait_synced(Duration::from_secs(10)).await, "the backend's watchers did not sync");
        (RunningRouter::start(backend, test_options()).await, Arc::new(()))
    }
}

async fn ssh_password(router: &RunningRouter, login: &str, remote: &'static str) -> std::process::Output {
    let ssh = Ssh::to(router, login).password("vm-password", "password");
    tokio::task::spawn_blocking(move || ssh.run(&[remote])).await.unwrap()
}

/// Waits until a login gets past authentication (the watchers see changes asynchronously).
async fn until_output(router: &RunningRouter, login: &str, expected: &str) -> std::process::Output {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let output = ssh_password(router, login, "echo routed").await;
        if text(&output.stdout) == expected || tokio::time::Instant::now() > deadline {
            return output;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_vm_is_reached_by_its_ssh_id_with_its_password_and_its_users_key() {
    let c = cluster().await;
    c.vm("web", "alice", "Running").await;
    let user_key = UserKey::new();
    let users: Api<KiteUser> = Api::all(c.server.client());
    let user = KiteUser::new(
        "ku-1",
        KiteUserSpec {
            username: "alice".into(),
            email: "alice@example.com".into(),
            password: "x".into(),
            namespace: NS.into(),
            profile_image: String::new(),
            access_level: AccessLevel::User,
            ssh_authorized_keys: vec![public_line(user_key.key.public_key())],
            session_generation: 0,
        },
    );
    users.create(&PostParams::default(), &user).await.unwrap();
    let (router, _) = c.router().await;
    let output = ssh_password(&router, "alice", "echo routed; whoami").await;
    assert_eq!(text(&output.stdout), "routed\nroot\n", "{}", text(&output.stderr));
    let ssh = Ssh::to(&router, "alice").key(&user_key);
    let output = tokio::task::spawn_blocking(move || ssh.run(&["echo by-key"])).await.unwrap();
    assert_eq!(text(&output.stdout), "by-key\n", "{}", text(&output.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_vms_with_the_same_ssh_id_are_both_refused() {
    let c = cluster().await;
    c.vm("one", "twin", "Running").await;
    c.vm("two", "twin", "Running").await;
    let (router, _) = c.router().await;
    let output = ssh_password(&router, "twin", "echo routed").await;
    assert_eq!(output.status.code(), Some(255));
    assert!(text(&output.stderr).contains("Permission denied"), "{}", text(&output.stderr));
    // Once one goes, the other is routed: the index follows events.
    let vms: Api<KiteVirtualMachine> = Api::namespaced(c.server.client(), NS);
    vms.delete("two", &Default::default()).await.unwrap();
    let output = until_output(&router, "twin", "routed\n").await;
    assert_eq!(text(&output.stdout), "routed\n", "{}", text(&output.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vm_with_delete_intent_is_no_route() {
    let c = cluster().await;
    c.vm("web", "alice", "Running").await;
    let (router, _) = c.router().await;
    let output = until_output(&router, "alice", "routed\n").await;
    assert_eq!(text(&output.stdout), "routed\n");
    let vms: Api<KiteVirtualMachine> = Api::namespaced(c.server.client(), NS);
    vms.patch("web", &PatchParams::default(), &Patch::Merge(json!({"spec": {"delete": true}}))).await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let output = ssh_password(&router, "alice", "echo routed").await;
        if output.status.code() == Some(255) && text(&output.stderr).contains("Permission denied") {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "a VM being deleted is still routed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_vm_says_so_and_a_starting_one_is_retried() {
    let c = cluster().await;
    c.vm("off", "stopped", "Stopped").await;
    c.vm("boot", "booting", "Starting").await;
    let (router, _) = c.router().await;
    let output = ssh_password(&router, "stopped", "true").await;
    assert_eq!(output.status.code(), Some(255));
    assert_eq!(text(&output.stderr).trim(), format!("kite: {}", messages::STOPPED));
    // The controller reports Running a moment later; the waiting session then runs.
    let vms: Api<KiteVirtualMachine> = Api::namespaced(c.server.client(), NS);
    let later = vms.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(800)).await;
        later
            .patch_status("boot", &PatchParams::default(), &Patch::Merge(json!({"status": {"phase": "Running"}})))
            .await
            .unwrap();
    });
    let output = ssh_password(&router, "booting", "echo up").await;
    assert_eq!(text(&output.stdout), "up\n", "{}", text(&output.stderr));
    assert!(text(&output.stderr).contains(messages::STARTING), "{}", text(&output.stderr));
}
