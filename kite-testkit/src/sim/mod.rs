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
mod cloud_init;
mod config;
mod guest;
mod guest_shell;
mod guest_ssh;
mod kubevirt;
mod object_fields;
mod rules;
mod serial_login;
mod service_lb;
mod stack;
mod store_io;
pub mod workloads;

pub use config::{SimulationConfig, StackSimulation};
pub use guest::{GuestConfig, GuestNetwork, GuestSsh, Guests, sshd_path, start_guests};
pub use rules::{FAIL_ANNOTATION, STUCK_ANNOTATION};

use crate::state::Inner;
use crate::{Error, FakeApiServer};
use rules::Rules;
use std::sync::{Arc, Mutex, Weak};

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
