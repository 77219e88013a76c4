//! Step 4 of the VM reconciler, the status write, and the statuses it
//! wrote last and when: a pass on a stale cached copy of a machine neither
//! writes the same status again nor repeats an Event, and progress within
//! a phase is written at most once per [`STATUS_INTERVAL`].

use super::status::{self, Observed, Verdict};
use super::{Config, STATUS_MANAGER, name_of};
use crate::Error;
use crate::api::{KiteVirtualMachine, KiteVirtualMachineStatus, VirtualMachinePhase};
use crate::reconcile::{Context, apply_status};
use kube::api::Api;
use kube::runtime::events::EventType;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The least time between two status writes of one machine in the same
/// phase (a disk's copy progress, a condition): a new phase is written at
/// once, progress waits for the rest of the interval.
pub const STATUS_INTERVAL: Duration = Duration::from_secs(1);

/// The status last written to each machine (by uid). The reconciler is its
/// status's only writer, so what it wrote last is the machine's status; a
/// pass that runs on a cached copy of the machine that does not show that
/// write yet compares with it, and neither writes the same status again nor
/// repeats the Event of a phase it already announced.
#[derive(Clone, Default)]
pub struct WrittenStatuses(Arc<Mutex<HashMap<String, (KiteVirtualMachineStatus, Instant)>>>);

impl WrittenStatuses {
    /// The status last written to the machine `uid`, and when.
    pub(super) fn get(&self, uid: &str) -> Option<(KiteVirtualMachineStatus, Instant)> {
        self.0.lock().ok()?.get(uid).cloned()
    }

    pub(super) fn set(&self, uid: &str, status: KiteVirtualMachineStatus) {
        if let Ok(mut written) = self.0.lock() {
            written.insert(uid.to_string(), (status, Instant::now()));
        }
    }

    pub(super) fn forget(&self, uid: &str) {
        if let Ok(mut written) = self.0.lock() {
            written.remove(uid);
        }
    }
}

/// Step 4: the status, written only when it changed, with an Event when the
/// phase did. A change within the phase written less than [`STATUS_INTERVAL`]
/// after the last write waits: the answer is how long, for the next pass.
pub(super) async fn write_status(
    vm: &KiteVirtualMachine,
    ctx: &Context<Config>,
    observed: &Observed<'_>,
    verdict: &Verdict,
) -> Result<Option<Duration>, Error> {
    let (name, namespace) = name_of(vm)?;
    let uid = vm.metadata.uid.clone().unwrap_or_default();
    let written = ctx.config.written.get(&uid);
    let previous = written.as_ref().map(|(status, _)| status).or(vm.status.as_ref());
    let next = status::status(vm, previous, observed, verdict, crate::reconcile::now());
    if previous == Some(&next) {
        return Ok(None);
    }
    // Progress within a phase waits for the rest of the interval; a new phase does not.
    if let Some((status, at)) = &written
        && status.phase == next.phase
        && let Some(rest) = STATUS_INTERVAL.checked_sub(at.elapsed())
    {
        return Ok(Some(rest));
    }
    let api: Api<KiteVirtualMachine> = Api::namespaced(ctx.client.clone(), &namespace);
    apply_status(&api, &name, STATUS_MANAGER, &next).await?;
    ctx.config.written.set(&uid, next.clone());
    if previous.and_then(|s| s.phase) != Some(verdict.phase) {
        let type_ = if verdict.phase == VirtualMachinePhase::Failed { EventType::Warning } else { EventType::Normal };
        tracing::info!(vm = %name, %namespace, phase = ?verdict.phase, reason = verdict.reason, "phase changed");
        ctx.event(vm, type_, verdict.reason, "Reconcile", verdict.message.clone()).await;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::VirtualMachinePhase;

    #[test]
    fn a_written_status_is_remembered_per_machine_until_forgotten() {
        let written = WrittenStatuses::default();
        let status = KiteVirtualMachineStatus { phase: Some(VirtualMachinePhase::Running), ..Default::default() };
        written.set("uid-1", status.clone());
        let (remembered, at) = written.get("uid-1").unwrap();
        assert_eq!(remembered, status);
        assert!(at.elapsed() < STATUS_INTERVAL, "the time of the write is remembered");
        assert_eq!(written.get("uid-2"), None, "another machine has none");
        written.forget("uid-1");
        assert_eq!(written.get("uid-1"), None);
    }
}
