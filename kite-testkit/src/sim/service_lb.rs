//! A service load balancer, as K3s' ServiceLB plays one: a `LoadBalancer`
//! Service gets the configured address as its ingress, so what waits for an
//! external address (the gateway's exposure) sees one. K3s' Traefik then
//! publishes the same address on every Ingress it serves, which is what
//! tells a machine's domain is live.

use crate::sim::object_fields::{name_of, namespace_of};
use crate::sim::store_io::{objects_where, write};
use crate::state::Inner;
use serde_json::{Value, json};
use std::sync::Arc;

/// Gives every `LoadBalancer` Service without an ingress the address `ip`.
pub(super) fn step(inner: &Arc<Inner>, ip: &str) {
    let without_address = |_: &crate::store::Store, service: &Value| {
        service["spec"]["type"] == "LoadBalancer" && !published(&service["status"]["loadBalancer"]["ingress"], ip)
    };
    for service in objects_where(inner, "", "services", without_address) {
        let status = json!({"status": {"loadBalancer": {"ingress": [{"ip": ip, "ipMode": "VIP"}]}}});
        write(
            inner,
            "service-lb-controller",
            ("", "v1", "services"),
            namespace_of(&service),
            Some(name_of(&service)),
            status,
            true,
        );
    }
}

/// Gives every Ingress without an address the address `ip`, as Traefik
/// publishes its load balancer's address on the Ingresses it serves.
pub(super) fn ingresses(inner: &Arc<Inner>, ip: &str) {
    let without_address =
        |_: &crate::store::Store, ingress: &Value| !published(&ingress["status"]["loadBalancer"]["ingress"], ip);
    for ingress in objects_where(inner, "networking.k8s.io", "ingresses", without_address) {
        let status = json!({"status": {"loadBalancer": {"ingress": [{"ip": ip}]}}});
        write(
            inner,
            "traefik",
            ("networking.k8s.io", "v1", "ingresses"),
            namespace_of(&ingress),
            Some(name_of(&ingress)),
            status,
            true,
        );
    }
}

/// Whether a load balancer's `ingress` list holds `ip`.
fn published(ingress: &Value, ip: &str) -> bool {
    ingress.as_array().is_some_and(|i| i.iter().any(|a| a["ip"] == ip))
}
