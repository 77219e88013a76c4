//! Step 4 of the VM reconciler: the status write, checked against the
//! statuses it wrote last ([`WrittenStatuses`](super::written::WrittenStatuses)).

use super::config::{Config, STATUS_MANAGER, name_of};
use super::status::{self, Observed, Verdict};
use super::written::STATUS_INTERVAL;
use crate::Error;
use crate::api::{KiteVirtualMachine, VirtualMachinePhase};
use crate::reconcile::{Context, apply_status};
use kube::api::Api;
use kube::runtime::events::EventType;
use std::time::Duration;

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
