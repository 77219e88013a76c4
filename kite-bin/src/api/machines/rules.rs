//! What a machine may be: the sizes each level may ask for, the images
//! that can be used, and how users reach a machine over SSH.

use crate::api::error::ApiError;
use crate::api::models::Connection;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kite_core::api::{GatewayPhase, KitePlatform, KitePlatformSpec, KiteVirtualMachine};

/// Virtual CPUs of a level-1 user's machines.
pub const USER_LEVEL_CPU: u32 = 2;
/// Memory of a level-1 user's machines.
pub const USER_LEVEL_MEMORY: &str = "4Gi";
/// Disk of a level-1 user's machines.
pub const USER_LEVEL_DISK: &str = "25Gi";
/// How many machines (not being deleted) a level-1 user may have.
pub const USER_LEVEL_MAX_MACHINES: u32 = 2;
/// Memory of a machine when none is asked for.
pub const DEFAULT_MEMORY: &str = "4Gi";
/// Virtual CPUs of a machine when none are asked for.
pub const DEFAULT_CPU: u32 = 2;

/// The golden image `requested` (or the first the platform lists), when it
/// is listed and its import finished; else a 422 that lists what can be used.
pub fn ready_image(
    requested: Option<&str>,
    spec: &KitePlatformSpec,
    platform: Option<&KitePlatform>,
) -> Result<(String, Quantity), ApiError> {
    let statuses = platform.and_then(|p| p.status.as_ref()).map(|s| s.golden_images.as_slice()).unwrap_or_default();
    let is_ready = |name: &str| statuses.iter().any(|s| s.name == name && s.ready);
    let listed: Vec<&str> = spec.golden_images.iter().map(|i| i.name.as_str()).collect();
    let name = match requested.map(str::trim).filter(|r| !r.is_empty()) {
        Some(name) => name.to_string(),
        None => match listed.first() {
            Some(first) => first.to_string(),
            None => return Err(ApiError::invalid("image", "the platform offers no images yet; ask an admin")),
        },
    };
    let Some(image) = spec.golden_images.iter().find(|i| i.name == name) else {
        return Err(ApiError::invalid(
            "image",
            format!("'{name}' is not offered; choose one of: {}", listed.join(", ")),
        ));
    };
    if !is_ready(&name) {
        let progress = statuses.iter().find(|s| s.name == name).and_then(|s| s.progress.clone());
        let detail = progress.map(|p| format!(" (imported {p})")).unwrap_or_default();
        return Err(ApiError::invalid("image", format!("'{name}' is still being prepared{detail}; try again soon")));
    }
    Ok((name, image.size.clone()))
}

/// How to reach `vm`: the command and `~/.ssh/config` block from the
/// gateway's observed state, or a sentence saying why there is none yet.
pub fn connection(vm: &KiteVirtualMachine, spec: &KitePlatformSpec, platform: Option<&KitePlatform>) -> Connection {
    let unavailable = |explanation: &str| Connection {
        available: false,
        host: None,
        port: None,
        command: None,
        ssh_config: None,
        explanation: explanation.to_string(),
    };
    let gateway = platform.and_then(|p| p.status.as_ref()).and_then(|s| s.ssh_gateway.as_ref());
    if !spec.ssh_gateway.external_enabled {
        return unavailable(
            "The SSH gateway is not reachable from outside the cluster yet. An admin can expose it in Settings.",
        );
    }
    match gateway.map(|g| g.phase) {
        Some(GatewayPhase::Ready) => {}
        Some(GatewayPhase::Blocked | GatewayPhase::Failed) => {
            return unavailable("The SSH gateway could not be exposed. An admin can see why in Settings.");
        }
        _ => return unavailable("The SSH gateway is being exposed; the command appears here once it has an address."),
    }
    let Some(host) = spec.base_domain.clone().filter(|d| !d.is_empty()) else {
        return unavailable(
            "No base domain is set, so there is no address to connect to. An admin can set it in Settings.",
        );
    };
    let Some(port) = spec.ssh_gateway.public_port.or(gateway.and_then(|g| g.observed_external_port)) else {
        return unavailable("The SSH gateway has no port yet. An admin can set it in Settings.");
    };
    let user = &vm.spec.ssh_id;
    let command = if port == 22 { format!("ssh {user}@{host}") } else { format!("ssh -p {port} {user}@{host}") };
    let alias = vm.metadata.name.as_deref().unwrap_or(user);
    let ssh_config = format!("Host kite-{alias}\n    HostName {host}\n    User {user}\n    Port {port}\n");
    let explanation = if vm.spec.delete {
        "This machine is being deleted."
    } else if vm.status.as_ref().and_then(|s| s.phase) == Some(kite_core::api::VirtualMachinePhase::Running) {
        "Sign in with the machine's SSH password."
    } else {
        "The command works once the machine is Running."
    };
    Connection {
        available: true,
        host: Some(host),
        port: Some(port),
        command: Some(command),
        ssh_config: Some(ssh_config),
        explanation: explanation.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kite_core::api::{GoldenImageStatus, KitePlatformStatus, SshGatewayStatus};
    use kite_testkit::fixtures::{IMAGE, a_platform, a_vm};

    fn platform(ready: bool, gateway: Option<GatewayPhase>) -> (KitePlatformSpec, KitePlatform) {
        let mut spec = a_platform();
        spec.base_domain = Some("vms.example.org".into());
        spec.ssh_gateway.external_enabled = true;
        spec.ssh_gateway.external_port = Some(2222);
        let mut object = KitePlatform::new("kite", spec.clone());
        object.status = Some(KitePlatformStatus {
            golden_images: vec![GoldenImageStatus {
                name: IMAGE.into(),
                ready,
                phase: None,
                progress: Some("40.0%".into()),
                message: None,
            }],
            ssh_gateway: gateway.map(|phase| SshGatewayStatus {
                phase,
                reason: None,
                message: None,
                observed_external_port: Some(2222),
                observed_service_name: None,
                last_transition_time: None,
            }),
            ..Default::default()
        });
        (spec, object)
    }

    #[test]
    fn only_a_listed_and_imported_image_can_be_used() {
        let (spec, object) = platform(false, None);
        let error = ready_image(Some(IMAGE), &spec, Some(&object)).unwrap_err();
        assert!(error.message().contains("still being prepared (imported 40.0%)"), "{}", error.message());
        assert!(ready_image(Some("debian"), &spec, Some(&object)).unwrap_err().message().contains("not offered"));
        let (spec, object) = platform(true, None);
        assert_eq!(ready_image(None, &spec, Some(&object)).unwrap().0, IMAGE);
    }

    #[test]
    fn the_command_appears_only_once_the_gateway_is_ready() {
        let vm = a_vm("web").with_ssh_id("ada").build();
        let (spec, object) = platform(true, Some(GatewayPhase::Reconciling));
        assert!(!connection(&vm, &spec, Some(&object)).available);
        let (spec, object) = platform(true, Some(GatewayPhase::Ready));
        let ready = connection(&vm, &spec, Some(&object));
        assert_eq!(ready.command.as_deref(), Some("ssh -p 2222 ada@vms.example.org"));
        assert!(ready.ssh_config.unwrap().contains("Port 2222"));
        let mut on_22 = spec.clone();
        on_22.ssh_gateway.public_port = Some(22);
        assert_eq!(connection(&vm, &on_22, Some(&object)).command.as_deref(), Some("ssh ada@vms.example.org"));
        let mut no_domain = spec;
        no_domain.base_domain = None;
        assert!(connection(&vm, &no_domain, Some(&object)).explanation.contains("No base domain"));
    }
}
