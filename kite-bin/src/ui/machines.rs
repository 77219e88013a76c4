//! Pieces that show machines: the phase with the disk's import progress,
//! and the buttons that act on a machine.

use crate::api::models::VmView;
use kite_core::api::PowerState;
use maud::{Markup, html};

/// The phase, with the disk import's progress while it runs.
pub fn phase(vm: &VmView) -> Markup {
    let importing = vm.phase == "Provisioning" || vm.phase == "Creating";
    html! {
        span.phase data-phase=(vm.phase) { (vm.phase) }
        @if importing {
            @if let Some(progress) = &vm.data_volume_progress {
                " " span.progress { "disk " (progress) }
            }
        }
    }
}

/// A request a button makes: `METHOD /path`, and its JSON body.
pub struct Action {
    /// `METHOD /path`.
    pub request: String,
    /// The JSON body, if any.
    pub body: Option<String>,
}

/// How a page reaches a machine's start, stop and delete.
pub struct Actions {
    /// Starts it.
    pub start: Action,
    /// Stops it.
    pub stop: Action,
    /// Deletes it.
    pub delete: Action,
}

impl Actions {
    /// The owner's endpoints: `/api/v1/vms/<name>/...`.
    pub fn own(name: &str) -> Self {
        let base = format!("/api/v1/vms/{name}");
        Self {
            start: Action { request: format!("POST {base}/start"), body: None },
            stop: Action { request: format!("POST {base}/stop"), body: None },
            delete: Action { request: format!("DELETE {base}"), body: None },
        }
    }

    /// An admin's endpoints: `/api/v1/admin/vms/<namespace>/<name>/...`.
    pub fn admin(namespace: &str, name: &str) -> Self {
        let base = format!("/api/v1/admin/vms/{namespace}/{name}");
        Self {
            start: Action { request: format!("PATCH {base}/power"), body: Some(r#"{"powerState":"On"}"#.into()) },
            stop: Action { request: format!("PATCH {base}/power"), body: Some(r#"{"powerState":"Off"}"#.into()) },
            delete: Action { request: format!("DELETE {base}"), body: None },
        }
    }
}

/// Start or stop, and delete after a confirmation.
pub fn buttons(vm: &VmView, actions: &Actions) -> Markup {
    html! {
        @if vm.delete {
            span.hint { "being deleted" }
        } @else {
            @if vm.power_state == PowerState::On {
                button type="button" data-action=(actions.stop.request) data-body=[actions.stop.body.as_deref()] aria-label=(format!("Stop {}", vm.name)) { "Stop" }
            } @else {
                button type="button" data-action=(actions.start.request) data-body=[actions.start.body.as_deref()] aria-label=(format!("Start {}", vm.name)) { "Start" }
            }
            " "
            button.danger type="button" data-action=(actions.delete.request)
                data-confirm=(format!("Delete the machine {} and its disk? This cannot be undone.", vm.name))
                aria-label=(format!("Delete {}", vm.name)) { "Delete" }
        }
    }
}
