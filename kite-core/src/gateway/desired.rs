//! The gateway's exposure as pure functions: what `KitePlatform.spec.sshGateway`
//! asks for, the Service that carries it out, and what to report about it.

use crate::Error;
use crate::api::{GatewayPhase, KitePlatform, SshGatewaySpec, SshGatewayStatus};
use crate::labels::{self, COMPONENT};
use crate::required::Required;
use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeMap;

/// The `LoadBalancer` Service that exposes the gateway.
pub const EXTERNAL_SERVICE: &str = "kite-gateway-external";

/// The label that selects the gateway's pods.
pub const GATEWAY_SELECTOR: (&str, &str) = ("app", "kite-gateway");

/// The name of the gateway container's SSH port.
pub const GATEWAY_PORT_NAME: &str = "ssh";

/// What the spec asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Not exposed: no external Service.
    Disabled,
    /// Enabled without a port: nothing can be exposed.
    MissingPort,
    /// Exposed on this port.
    Expose(u16),
}

/// What `spec` asks for.
///
/// ```
/// use kite_core::api::SshGatewaySpec;
/// use kite_core::gateway::desired::{plan, Plan};
/// assert_eq!(plan(&SshGatewaySpec::default()), Plan::Disabled);
/// let enabled = SshGatewaySpec { external_enabled: true, ..Default::default() };
/// assert_eq!(plan(&enabled), Plan::MissingPort);
/// ```
pub fn plan(spec: &SshGatewaySpec) -> Plan {
    match (spec.external_enabled, spec.external_port) {
        (false, _) => Plan::Disabled,
        (true, None) => Plan::MissingPort,
        (true, Some(port)) => Plan::Expose(port),
    }
}

/// The Service [`EXTERNAL_SERVICE`] in the platform namespace: `LoadBalancer`,
/// `port` → the gateway's `ssh` port, owned by the `KitePlatform`.
pub fn external_service(platform: &KitePlatform, namespace: &str, port: u16) -> Result<Service, Error> {
    let owner = platform.required_owner()?;
    Ok(Service {
        metadata: ObjectMeta {
            name: Some(EXTERNAL_SERVICE.into()),
            namespace: Some(namespace.into()),
            labels: Some(labels::owned_labels(COMPONENT, "gateway")),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        spec: Some(ServiceSpec {
            type_: Some("LoadBalancer".into()),
            // Clients keep their own source address (no SNAT to a node's), so the
            // gateway's per-address limits count each client, not each node. K3s'
            // ServiceLB then advertises only the nodes that run a gateway pod.
            external_traffic_policy: Some("Local".into()),
            selector: Some(BTreeMap::from([(GATEWAY_SELECTOR.0.to_string(), GATEWAY_SELECTOR.1.to_string())])),
            ports: Some(vec![ServicePort {
                name: Some("ssh".into()),
                port: i32::from(port),
                target_port: Some(IntOrString::String(GATEWAY_PORT_NAME.into())),
                protocol: Some("TCP".into()),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    })
}

/// The address the load balancer reports, if any (IP or host name).
pub fn load_balancer_address(service: &Service) -> Option<String> {
    let ingress = service.status.as_ref()?.load_balancer.as_ref()?.ingress.as_ref()?;
    ingress.iter().find_map(|i| i.ip.clone().or_else(|| i.hostname.clone()))
}

/// The port the live Service listens on.
pub fn observed_port(service: &Service) -> Option<u16> {
    let port = service.spec.as_ref()?.ports.as_ref()?.first()?.port;
    u16::try_from(port).ok()
}

/// What to report: `Ready` only once the load balancer has an address.
pub fn observe(plan: Plan, service: Option<&Service>) -> (GatewayPhase, &'static str, String) {
    match (plan, service) {
        (Plan::Disabled, _) => (
            GatewayPhase::Disabled,
            "ExternalDisabled",
            "The SSH gateway is not exposed outside the cluster, as configured.".into(),
        ),
        (Plan::MissingPort, _) => (
            GatewayPhase::Blocked,
            "MissingExternalPort",
            "Exposure is turned on but no external port is set; set sshGateway.externalPort.".into(),
        ),
        (Plan::Expose(_), None) => {
            (GatewayPhase::Reconciling, "ServicePending", "The gateway's Service is being created.".into())
        }
        (Plan::Expose(port), Some(service)) => match load_balancer_address(service) {
            Some(address) => {
                (GatewayPhase::Ready, "ServiceReady", format!("The gateway is reachable at {address} on port {port}."))
            }
            None => (
                GatewayPhase::Reconciling,
                "WaitingForLoadBalancer",
                "The Service is applied; the load balancer has not reported an address yet.".into(),
            ),
        },
    }
}

/// The status, keeping `lastTransitionTime` while the phase stays the same.
pub fn status(
    previous: Option<&SshGatewayStatus>,
    (phase, reason, message): (GatewayPhase, &'static str, String),
    service: Option<&Service>,
    now: Time,
) -> SshGatewayStatus {
    let since = match previous {
        Some(previous) if previous.phase == phase => previous.last_transition_time.clone().or(Some(now)),
        _ => Some(now),
    };
    let exposed = phase != GatewayPhase::Disabled && phase != GatewayPhase::Blocked;
    SshGatewayStatus {
        phase,
        reason: Some(reason.into()),
        message: Some(message),
        observed_external_port: service.filter(|_| exposed).and_then(observed_port),
        observed_service_name: service.filter(|_| exposed).map(|_| EXTERNAL_SERVICE.to_string()),
        last_transition_time: since,
    }
}
