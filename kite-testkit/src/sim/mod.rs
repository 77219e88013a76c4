//! The simulated KubeVirt and CDI runtime: a task that plays the
//! controllers a real cluster would run, so that what Kite creates moves
//! through the upstream phases.
//!
//! - **CDI:** a `DataVolume` gets its PVC (Bound), then goes
//!   `ImportScheduled` → `ImportInProgress` (HTTP or registry source) or
//!   `CloneScheduled` → `CloneInProgress` (PVC source, once the source is
//!   populated) with `status.progress`, then `Succeeded`.
//! - **KubeVirt:** a `VirtualMachine` to run shows `Provisioning` while its
//!   DataVolumes are not ready, then gets a `VirtualMachineInstance` that goes
//!   `Pending` → `Scheduling` → `Scheduled` → `Running` (`printableStatus`
//!   `Starting`, then `Running`); `runStrategy: Halted` stops it (`Stopping`,
//!   then `Stopped`, the VMI deleted).
//!
//! - **Service load balancer** (when [`SimulationConfig::load_balancer_ip`]
//!   is set): a `LoadBalancer` Service gets that address as its ingress,
//!   and every Ingress the same address, as K3s' Traefik publishes it.
//! - **Guests** ([`start_guests`]): a running instance boots an SSH server
//!   (OpenSSH's sshd, or one in this process where sshd is missing)
//!   configured from its cloud-init user data.
//!
//! Failures on demand, by annotation (so `kubectl` can ask too) or through
//! [`Simulation`]: a DataVolume annotated [`FAIL_ANNOTATION`] fails with its
//! value as the message; a VirtualMachine annotated [`STUCK_ANNOTATION`]
//! stays `Starting`.

mod cdi;
mod guest;
mod guest_shell;
mod guest_ssh;
mod kubevirt;
mod serial_login;
mod service_lb;
mod stack;
pub mod workloads;

pub use guest::{GuestConfig, GuestNetwork, GuestSsh, Guests, sshd_path, start_guests};

use crate::state::Inner;
use crate::write::PatchKind;
use crate::write_context::WriteCtx;
use crate::{Error, FakeApiServer};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// On a DataVolume: fail it, with the annotation's value as the message.
pub const FAIL_ANNOTATION: &str = "kite-testkit.hy3ons.github.io/fail";
/// On a VirtualMachine: keep it `Starting` (its VMI never runs).
pub const STUCK_ANNOTATION: &str = "kite-testkit.hy3ons.github.io/stuck-starting";

/// How fast the simulated cluster moves.
#[derive(Clone, Debug)]
pub struct SimulationConfig {
    /// The time between two steps.
    pub step: Duration,
    /// Steps an import takes from 0% to 100%.
    pub import_steps: u32,
    /// Steps a clone takes from 0% to 100%.
    pub clone_steps: u32,
    /// The node VMIs are scheduled on.
    pub node_name: String,
    /// The address a `LoadBalancer` Service gets as its ingress; none are given one when `None`.
    pub load_balancer_ip: Option<String>,
    /// Whether KubeVirt, CDI and Longhorn are there from the start, or come from their operators.
    pub stack: StackSimulation,
}

/// How the stack Kite runs on comes to the simulated cluster.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StackSimulation {
    /// Their CRDs are installed at start, as on a cluster where they already run.
    #[default]
    Installed,
    /// Nothing is installed at start: applying their release manifests and
    /// custom resources brings them, their operators simulated (see the
    /// `stack` module's documentation), and deleting the resources removes them.
    Operators,
}

impl Default for SimulationConfig {
    fn default() -> Self {
        Self {
            step: Duration::from_millis(20),
            import_steps: 5,
            clone_steps: 3,
            node_name: "kite-node-1".into(),
            load_balancer_ip: None,
            stack: StackSimulation::Installed,
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct Rules {
    /// (namespace, name) of DataVolumes to fail, with the message.
    pub failing_volumes: Vec<(String, String, String)>,
    /// (namespace, name) of VirtualMachines that stay Starting.
    pub stuck_machines: Vec<(String, String)>,
    /// Longhorn's uninstall job leaves its webhook configurations behind.
    pub longhorn_leaves_webhooks: bool,
}

/// The running simulation; it stops when dropped.
#[derive(Debug)]
pub struct Simulation {
    rules: Arc<Mutex<Rules>>,
    task: tokio::task::JoinHandle<()>,
}

impl Simulation {
    fn rules(&self) -> std::sync::MutexGuard<'_, Rules> {
        self.rules.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Makes the DataVolume `namespace/name` fail with `message` (now or when it appears).
    pub fn fail_data_volume(&self, namespace: &str, name: &str, message: &str) {
        self.rules().failing_volumes.push((namespace.into(), name.into(), message.into()));
    }

    /// Keeps the VirtualMachine `namespace/name` in `Starting`.
    pub fn hold_in_starting(&self, namespace: &str, name: &str) {
        self.rules().stuck_machines.push((namespace.into(), name.into()));
    }

    /// Makes Longhorn's uninstall job leave its webhook configurations
    /// behind, as the existing platform once saw them outlive their Service.
    pub fn leave_longhorn_webhooks(&self) {
        self.rules().longhorn_leaves_webhooks = true;
    }
}

impl Drop for Simulation {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Installs the KubeVirt, CDI and Longhorn CRDs (if they are not there yet).
pub fn install(server: &FakeApiServer) -> Result<(), Error> {
    for crd in crate::upstream::crds() {
        let name = crd["metadata"]["name"].as_str().unwrap_or("").to_string();
        let exists = server.inner.registry().all().iter().any(|t| t.crd_name.as_deref() == Some(name.as_str()));
        if !exists {
            server.create("apiextensions.k8s.io", "v1", "customresourcedefinitions", None, crd)?;
        }
    }
    Ok(())
}

/// Installs the CRDs (unless the stack comes from its operators) and starts the simulated runtime.
pub fn start(server: &FakeApiServer, config: SimulationConfig) -> Result<Simulation, Error> {
    if config.stack == StackSimulation::Installed {
        install(server)?;
    }
    let rules = Arc::new(Mutex::new(Rules::default()));
    let weak = Arc::downgrade(&server.inner);
    let task = server.inner.runtime.spawn(run(weak, config, rules.clone()));
    Ok(Simulation { rules, task })
}

async fn run(weak: Weak<Inner>, config: SimulationConfig, rules: Arc<Mutex<Rules>>) {
    let mut ticker = tokio::time::interval(config.step);
    loop {
        ticker.tick().await;
        let Some(inner) = weak.upgrade() else { return };
        let rules = rules.lock().unwrap_or_else(|p| p.into_inner());
        if config.stack == StackSimulation::Operators {
            stack::step(&inner, &config.node_name, &rules);
        }
        cdi::step(&inner, &config, &rules);
        kubevirt::step(&inner, &config, &rules);
        if let Some(ip) = &config.load_balancer_ip {
            service_lb::step(&inner, ip);
            service_lb::ingresses(&inner, ip);
        }
    }
}

/// The objects of one served type.
pub(crate) fn objects(inner: &Arc<Inner>, group: &str, plural: &str) -> Vec<Value> {
    objects_where(inner, group, plural, |_, _| true)
}

/// The objects of one served type that `wanted` picks, looking at each in
/// the store (with the store at hand, to look at others): a step copies
/// only the objects it has work to do on, not a thousand settled ones every
/// step.
pub(crate) fn objects_where(
    inner: &Arc<Inner>,
    group: &str,
    plural: &str,
    wanted: impl Fn(&crate::store::Store, &Value) -> bool,
) -> Vec<Value> {
    let key = crate::registry::ResourceKey { group: group.into(), plural: plural.into() };
    let store = inner.store();
    store.list(&key).filter(|(_, o)| wanted(&store, o)).map(|(_, o)| o.clone()).collect()
}

pub(crate) fn find(inner: &Arc<Inner>, group: &str, plural: &str, namespace: &str, name: &str) -> Option<Value> {
    let key = crate::registry::ResourceKey { group: group.into(), plural: plural.into() };
    inner.store().get(&key, &(namespace.to_string(), name.to_string())).cloned()
}

/// Writes as the named controller would, through the server's own write path.
pub(crate) fn write(
    inner: &Arc<Inner>,
    manager: &str,
    (group, version, plural): (&str, &str, &str),
    namespace: &str,
    name: Option<&str>,
    body: Value,
    status: bool,
) {
    let Some(resource) = inner.registry().find(group, version, plural) else { return };
    let mut ctx = WriteCtx::internal(&resource.api_version(version));
    ctx.manager = manager.into();
    if status && resource.status_subresource {
        ctx.subresource = Some("status".into());
    }
    let result = match name {
        Some(name) => crate::write::patch(
            inner,
            &resource,
            Some(namespace),
            name,
            crate::write::PatchRequest { kind: PatchKind::Merge, body: &body, force: false },
            &mut ctx,
        ),
        None => crate::write::create(inner, &resource, Some(namespace), body, &mut ctx),
    };
    if let Err(error) = result {
        tracing::debug!(manager, plural, namespace, message = %error.message, "a simulated controller's write was refused");
    }
}

pub(crate) fn delete(inner: &Arc<Inner>, group: &str, plural: &str, namespace: &str, name: &str) {
    let key = crate::registry::ResourceKey { group: group.into(), plural: plural.into() };
    let result = {
        let mut store = inner.store();
        crate::lifecycle::delete(
            inner,
            &mut store,
            &key,
            &(namespace.into(), name.into()),
            crate::lifecycle::DeleteOptions::BACKGROUND,
        )
    };
    // A CRD deleted goes on as the API server's does: its objects removed, then the CRD.
    // (The registry's guard must be gone before: finishing a CRD withdraws its kind from the registry.)
    let resource = inner.registry().by_key(&key);
    if let (Ok(deleted), Some(resource)) = (result, resource) {
        crate::crd::after_write(inner, &resource, &deleted);
    }
}

/// A condition in the upstream shape, keeping `lastTransitionTime` while the status stays.
pub(crate) fn condition(
    previous: &Value,
    type_: &str,
    status: bool,
    reason: &str,
    message: &str,
    extra: &[(&str, Value)],
) -> Value {
    let status_text = if status { "True" } else { "False" };
    let old = previous.as_array().and_then(|c| c.iter().find(|c| c["type"] == type_));
    let since = match old {
        Some(old) if old["status"] == status_text => old["lastTransitionTime"].clone(),
        _ => json!(crate::meta::now()),
    };
    let mut condition = json!({"type": type_, "status": status_text, "reason": reason, "message": message, "lastTransitionTime": since});
    for (key, value) in extra {
        condition[*key] = value.clone();
    }
    condition
}

pub(crate) fn namespace_of(object: &Value) -> &str {
    object["metadata"]["namespace"].as_str().unwrap_or("")
}

pub(crate) fn name_of(object: &Value) -> &str {
    object["metadata"]["name"].as_str().unwrap_or("")
}

pub(crate) fn owner_reference(object: &Value, api_version: &str, kind: &str) -> Value {
    json!({"apiVersion": api_version, "kind": kind, "name": object["metadata"]["name"], "uid": object["metadata"]["uid"],
           "controller": true, "blockOwnerDeletion": true})
}
