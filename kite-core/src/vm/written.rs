//! The statuses the VM reconciler wrote last, so that a pass on a stale
//! cached copy of a machine neither writes the same status again nor
//! repeats an Event.

use crate::api::KiteVirtualMachineStatus;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The status last written to each machine (by uid). The reconciler is its
/// status's only writer, so what it wrote last is the machine's status; a
/// pass that runs on a cached copy of the machine that does not show that
/// write yet compares with it, and neither writes the same status again nor
/// repeats the Event of a phase it already announced.
#[derive(Clone, Default)]
pub struct WrittenStatuses(Arc<Mutex<HashMap<String, KiteVirtualMachineStatus>>>);

impl WrittenStatuses {
    pub(super) fn get(&self, uid: &str) -> Option<KiteVirtualMachineStatus> {
        self.0.lock().ok()?.get(uid).cloned()
    }

    pub(super) fn set(&self, uid: &str, status: KiteVirtualMachineStatus) {
        if let Ok(mut written) = self.0.lock() {
            written.insert(uid.to_string(), status);
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
        assert_eq!(written.get("uid-1"), Some(status));
        assert_eq!(written.get("uid-2"), None, "another machine has none");
        written.forget("uid-1");
        assert_eq!(written.get("uid-1"), None);
    }
}
