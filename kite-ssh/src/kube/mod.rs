//! The Kubernetes backend (feature `kube`): routes logins to
//! `KiteVirtualMachine`s by their `spec.sshId`.
//!
//! - **Routes** come from a cluster-wide watcher of `KiteVirtualMachine`s,
//!   indexed by `sshId`. Machines with `spec.delete` or a
//!   `deletionTimestamp` are skipped; two machines with the same `sshId` are
//!   both refused, and logged.
//! - **Passwords** are checked against `spec.sshPasswordHash`; **public keys**
//!   against the `sshAuthorizedKeys` of the `KiteUser` whose namespace the
//!   machine is in.
//! - **Upstream:** the Service named in `status.serviceName`, port 22, at the
//!   address an [`AddressResolver`] gives (cluster DNS by default), logging
//!   in as the `sshId` with the key in the Secret `status.sshKeySecretName`
//!   and pinning the host key in it (key names in [`kite_core::ssh_secret`]).
//! - **Readiness** comes from the machine's status: stopped, failed or being
//!   deleted is final, with a sentence for the user; provisioning or starting
//!   is retried.

mod index;

use crate::backend::{Backend, HostKeyCheck, Readiness, Route, Upstream, UpstreamAuth};
use ::kube::{Api, Client};
use index::Lookup;
use k8s_openapi::api::core::v1::Secret;
use kite_core::api::{KiteUser, KiteVirtualMachine, PowerState, VirtualMachinePhase};
use kite_core::cache::Cache;
use kite_core::key::object_key;
use kite_core::ssh_secret;
use russh::keys::PublicKey;
use std::sync::Arc;
use std::time::Duration;

/// Turns a Service into an address to connect to.
pub trait AddressResolver: Send + Sync + 'static {
    /// `host:port` of `port` on the Service `service` in `namespace`.
    fn address(&self, namespace: &str, service: &str, port: u16) -> String;
}

/// The cluster DNS name of a Service: `<service>.<namespace>.svc.<domain>:<port>`.
#[derive(Clone, Debug)]
pub struct ClusterDns {
    /// The cluster domain, `cluster.local` on most clusters.
    pub domain: String,
}

impl Default for ClusterDns {
    fn default() -> Self {
        Self { domain: "cluster.local".into() }
    }
}

impl AddressResolver for ClusterDns {
    fn address(&self, namespace: &str, service: &str, port: u16) -> String {
        format!("{service}.{namespace}.svc.{}:{port}", self.domain)
    }
}

/// What users are told about a machine that cannot be reached.
pub mod messages {
    /// The machine is stopped.
    pub const STOPPED: &str = "VirtualMachine is stopped; start it from the dashboard, then connect again.";
    /// The machine's disk is being prepared.
    pub const PROVISIONING: &str = "VirtualMachine's disk is being prepared; retry in a moment.";
    /// The machine is booting.
    pub const STARTING: &str = "VirtualMachine is starting its SSH server; retry in a moment.";
    /// The machine failed.
    pub const FAILED: &str = "VirtualMachine failed to start; see the dashboard for details.";
    /// The machine is going away.
    pub const DELETING: &str = "VirtualMachine is being deleted.";
    /// The machine is gone.
    pub const GONE: &str = "VirtualMachine no longer exists.";
}

/// Routes from `KiteVirtualMachine` objects; see the module documentation.
/// Its watches stop when it is dropped.
pub struct KubeBackend {
    client: Client,
    vms: Cache<KiteVirtualMachine>,
    users: Cache<KiteUser>,
    resolver: Arc<dyn AddressResolver>,
    upstream_user: Option<String>,
}

impl KubeBackend {
    /// Starts watching `KiteVirtualMachine`s and `KiteUser`s cluster-wide.
    pub fn start(client: Client, resolver: impl AddressResolver) -> Self {
        let (vms, users) = index::start(&client);
        Self { client, vms, users, resolver: Arc::new(resolver), upstream_user: None }
    }

    /// Logs in to every machine as `user` instead of as its `sshId` (the
    /// user Kite's cloud-init creates), for images whose gateway account is fixed.
    pub fn with_upstream_user(mut self, user: impl Into<String>) -> Self {
        self.upstream_user = Some(user.into());
        self
    }

    /// Waits until both watchers have listed once; `false` after `timeout`.
    pub async fn wait_synced(&self, timeout: Duration) -> bool {
        tokio::time::timeout(timeout, self.when_synced()).await.unwrap_or(false)
    }

    /// Completes with `true` once both watchers have listed once (`false`
    /// if the backend is dropped first); it does not borrow the backend, so
    /// it can be awaited after the backend moved into a router.
    pub fn when_synced(&self) -> impl std::future::Future<Output = bool> + Send + 'static {
        let (vms, users) = (self.vms.when_synced(), self.users.when_synced());
        async move { vms.await && users.await }
    }

    /// The machine of `route`, if it can still be routed to.
    fn vm(&self, route: &Route) -> Option<Arc<KiteVirtualMachine>> {
        self.vms.get(&route.id).filter(|vm| index::routable(vm))
    }

    async fn ready(&self, vm: &KiteVirtualMachine) -> Readiness {
        let namespace = vm.metadata.namespace.clone().unwrap_or_default();
        let status = vm.status.clone().unwrap_or_default();
        let (Some(service), Some(secret_name)) = (status.service_name, status.ssh_key_secret_name) else {
            return Readiness::Starting { message: messages::STARTING.into() };
        };
        let secret = match Api::<Secret>::namespaced(self.client.clone(), &namespace).get_opt(&secret_name).await {
            Ok(Some(secret)) => secret,
            Ok(None) => return Readiness::Starting { message: messages::STARTING.into() },
            Err(error) => {
                tracing::warn!(%namespace, secret = %secret_name, %error, "reading a VM's SSH Secret failed");
                return Readiness::Starting { message: messages::STARTING.into() };
            }
        };
        let text = |key: &str| {
            secret.data.as_ref().and_then(|d| d.get(key)).map(|b| String::from_utf8_lossy(&b.0).into_owned())
        };
        let key = text(ssh_secret::PRIVATE_KEY).and_then(|k| russh::keys::decode_secret_key(&k, None).ok());
        let host_key = text(ssh_secret::HOST_PUBLIC_KEY).and_then(|k| PublicKey::from_openssh(k.trim()).ok());
        let (Some(key), Some(host_key)) = (key, host_key) else {
            tracing::warn!(%namespace, secret = %secret_name, "the VM's SSH Secret lacks a usable key or host key");
            return Readiness::Starting { message: messages::STARTING.into() };
        };
        Readiness::Ready(Upstream {
            address: self.resolver.address(&namespace, &service, 22),
            user: self.upstream_user.clone().unwrap_or_else(|| vm.spec.ssh_id.clone()),
            auth: UpstreamAuth::Key(Arc::new(key)),
            host_key: HostKeyCheck::Pinned(host_key),
        })
    }
}

impl Backend for KubeBackend {
    async fn resolve(&self, login: &str) -> Option<Route> {
        match index::lookup(&self.vms, login) {
            Lookup::One(vm) => Some(Route::new(object_key(vm.as_ref()))),
            Lookup::None => None,
            Lookup::Duplicate(keys) => {
                tracing::warn!(ssh_id = login, machines = ?keys, "two or more VMs have this sshId; none is routed");
                None
            }
        }
    }

    async fn check_password(&self, route: &Route, password: &str) -> bool {
        let hash = self.vm(route).and_then(|vm| vm.spec.ssh_password_hash.clone());
        crate::password::verify_off_runtime(password, hash).await
    }

    async fn check_public_key(&self, route: &Route, key: &PublicKey) -> bool {
        let Some(vm) = self.vm(route) else { return false };
        let namespace = vm.metadata.namespace.clone().unwrap_or_default();
        index::allows(&self.users, &namespace, key)
    }

    async fn upstream(&self, route: &Route) -> Readiness {
        let Some(vm) = self.vm(route) else { return Readiness::Unavailable { message: messages::GONE.into() } };
        let phase = vm.status.as_ref().and_then(|s| s.phase);
        match phase {
            Some(VirtualMachinePhase::Running | VirtualMachinePhase::Ready) => self.ready(&vm).await,
            Some(VirtualMachinePhase::Failed) => Readiness::Unavailable { message: messages::FAILED.into() },
            Some(VirtualMachinePhase::Deleting) => Readiness::Unavailable { message: messages::DELETING.into() },
            Some(VirtualMachinePhase::Stopped | VirtualMachinePhase::Stopping) => {
                Readiness::Unavailable { message: messages::STOPPED.into() }
            }
            _ if vm.spec.power_state == PowerState::Off => Readiness::Unavailable { message: messages::STOPPED.into() },
            Some(VirtualMachinePhase::Provisioning) => Readiness::Starting { message: messages::PROVISIONING.into() },
            _ => Readiness::Starting { message: messages::STARTING.into() },
        }
    }
}
