//! A machine's status, computed from what was observed of its DataVolume
//! and KubeVirt VirtualMachine: a pure function, tested without any API.
//!
//! The phase is derived from one condition, `VirtualMachineReady`, whose
//! `lastTransitionTime` moves only when its status changes. One reconciler
//! writes it, so it cannot flap between two writers.

use crate::api::{
    Condition, ConditionStatus, KiteVirtualMachine, KiteVirtualMachineStatus, PowerState, VirtualMachinePhase,
    condition_types, set_condition,
};
use crate::names;
use serde_json::Value;

/// What the reconciler saw of a machine's children, and of the platform.
#[derive(Clone, Copy, Debug, Default)]
pub struct Observed<'a> {
    /// The DataVolume `<vm>-disk`, if it exists.
    pub data_volume: Option<&'a Value>,
    /// The KubeVirt VirtualMachine `<vm>`, if it exists.
    pub virtual_machine: Option<&'a Value>,
    /// The node its VirtualMachineInstance runs on, if it runs.
    pub node_name: Option<&'a str>,
    /// `KitePlatform.spec.baseDomain`.
    pub base_domain: Option<&'a str>,
    /// The machine's URL, once its Ingress has an address.
    pub url: Option<&'a str>,
}

/// Why a machine is where it is: the condition's reason, the phase, the
/// observed power state, and a sentence for its owner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// The phase shown to users.
    pub phase: VirtualMachinePhase,
    /// Whether it was observed running.
    pub power: PowerState,
    /// Whether `VirtualMachineReady` holds.
    pub ready: ConditionStatus,
    /// A CamelCase reason.
    pub reason: &'static str,
    /// A sentence for the machine's owner; never an internal name or raw error.
    pub message: String,
}

impl Verdict {
    /// A verdict that holds the machine back before anything is created,
    /// such as an image that is not offered.
    pub fn blocked(phase: VirtualMachinePhase, reason: &'static str, message: impl Into<String>) -> Self {
        Verdict { phase, power: PowerState::Off, ready: ConditionStatus::False, reason, message: message.into() }
    }
}

fn text<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    value.pointer(pointer).and_then(Value::as_str).filter(|s| !s.is_empty())
}

fn verdict(phase: VirtualMachinePhase, power: PowerState, ready: bool, reason: &'static str, message: &str) -> Verdict {
    let ready = if ready { ConditionStatus::True } else { ConditionStatus::False };
    Verdict { phase, power, ready, reason, message: message.to_string() }
}

/// Where the machine is, from its children as observed.
pub fn judge(vm: &KiteVirtualMachine, observed: &Observed<'_>) -> Verdict {
    use PowerState::{Off, On};
    use VirtualMachinePhase as P;
    let disk_phase = observed.data_volume.and_then(|dv| text(dv, "/status/phase"));
    if disk_phase == Some("Failed") {
        return verdict(
            P::Failed,
            Off,
            false,
            "DataVolumeFailed",
            "The machine's disk could not be created from its image. Delete the machine and try again, or ask an administrator.",
        );
    }
    let Some(machine) = observed.virtual_machine else {
        return match observed.data_volume {
            None => verdict(P::Pending, Off, false, "Pending", "The machine is accepted and about to be created."),
            Some(_) => verdict(P::Provisioning, Off, false, "Provisioning", "The machine's disk is being prepared."),
        };
    };
    let wanted = vm.spec.power_state;
    let printable = text(machine, "/status/printableStatus").unwrap_or("Stopped");
    match printable {
        "Running" | "Migrating" => verdict(P::Running, On, true, "Running", "The machine is running."),
        "Stopped" if wanted == Off => verdict(P::Stopped, Off, true, "Stopped", "The machine is stopped, as asked."),
        "Stopped" if disk_phase != Some("Succeeded") => {
            verdict(P::Provisioning, Off, false, "Provisioning", "The machine's disk is being prepared.")
        }
        "Stopped" => verdict(P::Starting, Off, false, "StartPending", "The machine is about to start."),
        "Provisioning" | "WaitingForVolumeBinding" => {
            verdict(P::Provisioning, Off, false, "Provisioning", "The machine's disk is being prepared.")
        }
        "Starting" => verdict(P::Starting, On, false, "Starting", "The machine is starting."),
        "Stopping" | "Terminating" => verdict(P::Stopping, On, false, "Stopping", "The machine is stopping."),
        "Paused" => verdict(P::Stopped, Off, false, "Paused", "The machine is paused."),
        "ErrorUnschedulable" => verdict(
            P::Failed,
            Off,
            false,
            "Unschedulable",
            "The cluster has no room for this machine right now. Try fewer CPUs or less memory, or ask an administrator.",
        ),
        "CrashLoopBackOff" => verdict(
            P::Failed,
            Off,
            false,
            "CrashLoop",
            "The machine keeps failing to start. Try stopping and starting it, or ask an administrator.",
        ),
        "ErrImagePull" | "ImagePullBackOff" | "ErrorPvcNotFound" | "DataVolumeError" => verdict(
            P::Failed,
            Off,
            false,
            "StartFailed",
            "The machine cannot start because its disk is not available. Ask an administrator.",
        ),
        _ => verdict(P::Unknown, Off, false, "Unknown", "The machine's state is not known yet."),
    }
}

/// The whole status: the verdict, the DataVolume's progress, the names of
/// the children, and the domain. `previous` supplies the condition's
/// `lastTransitionTime` when its status did not change.
pub fn status(
    vm: &KiteVirtualMachine,
    previous: Option<&KiteVirtualMachineStatus>,
    observed: &Observed<'_>,
    verdict: &Verdict,
    now: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
) -> KiteVirtualMachineStatus {
    let generation = vm.metadata.generation;
    let mut conditions = previous.map(|p| p.conditions.clone()).unwrap_or_default();
    set_condition(
        &mut conditions,
        Condition {
            type_: condition_types::VIRTUAL_MACHINE_READY.into(),
            status: verdict.ready,
            reason: Some(verdict.reason.into()),
            message: Some(verdict.message.clone()),
            observed_generation: generation,
            last_transition_time: Some(now),
        },
    );
    let dv = observed.data_volume;
    let domain = match (vm.spec.domain_prefix.as_deref(), observed.base_domain) {
        (Some(prefix), Some(base)) if !prefix.is_empty() && !base.is_empty() => Some(format!("{prefix}.{base}")),
        _ => None,
    };
    let dv_message = dv.and_then(|dv| {
        let conditions = dv.pointer("/status/conditions")?.as_array()?;
        ["Running", "Ready", "Bound"].iter().find_map(|kind| {
            conditions.iter().find(|c| c["type"] == *kind).and_then(|c| text(c, "/message")).map(str::to_string)
        })
    });
    let name = vm.metadata.name.as_deref();
    KiteVirtualMachineStatus {
        phase: Some(verdict.phase),
        current_power_state: Some(verdict.power),
        observed_generation: generation,
        domain,
        url: observed.url.map(str::to_string),
        node_name: observed.node_name.filter(|_| verdict.power == PowerState::On).map(str::to_string),
        ssh_key_secret_name: name.map(names::ssh_key_secret),
        cloud_init_secret_name: name.map(names::cloud_init_secret),
        service_name: name.map(names::ssh_service),
        data_volume_name: name.map(names::data_volume),
        data_volume_phase: dv.map(|dv| text(dv, "/status/phase").unwrap_or("Pending").to_string()),
        data_volume_progress: dv.and_then(|dv| text(dv, "/status/progress")).map(str::to_string),
        data_volume_message: dv_message,
        conditions,
    }
}
