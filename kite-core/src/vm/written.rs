//! The statuses the VM reconciler wrote last and when: a pass on a stale
//! cached copy of a machine neither writes the same status again nor
//! repeats an Event, and progress within a phase is written at most once
//! per [`STATUS_INTERVAL`] (see `status_write`).

use crate::api::KiteVirtualMachineStatus;
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
