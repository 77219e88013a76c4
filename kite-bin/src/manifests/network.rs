//! How the components are reached: their Services and the NetworkPolicies
//! of the platform namespace. The Ingress of the web UI and the API is the
//! controller's, from `KitePlatform.spec.platformIngress` (it follows the
//! platform's host and TLS settings as they change). The SSH gateway's exposure outside the cluster is
//! not here: it is the operator's choice, in `KitePlatform`, and the
//! controller's `kite-gateway-external`.

use super::component::{CONTROL_PORT, CONTROL_SERVICE, Component, selector};
use super::labels::meta;
use super::options::Options;
use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::api::networking::v1::{
    NetworkPolicy, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicyPort, NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeMap;

/// The API's Service port.
pub const API_PORT: i32 = 8080;
/// The gateway's Service port, inside the cluster.
pub const GATEWAY_PORT: i32 = 2222;
/// The gateway's control API, headless: `kite api` asks every replica.
fn control_service(options: &Options) -> Service {
    let mut service = service(Component::Gateway, CONTROL_PORT, "control", options);
    service.metadata.name = Some(CONTROL_SERVICE.into());
    if let Some(spec) = service.spec.as_mut() {
        spec.cluster_ip = Some("None".into());
    }
    service
}

fn service(component: Component, port: i32, target: &str, options: &Options) -> Service {
    Service {
        metadata: meta(component.name(), Some(&options.namespace)),
        spec: Some(ServiceSpec {
            type_: Some("ClusterIP".into()),
            selector: Some(selector(component)),
            ports: Some(vec![ServicePort {
                name: Some(target.into()),
                port,
                target_port: Some(IntOrString::String(target.into())),
                protocol: Some("TCP".into()),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    }
}

/// A NetworkPolicy of the platform namespace: `pods` (all when `None`)
/// admit only what `rules` lists.
fn policy(
    name: &str,
    pods: Option<Component>,
    rules: Vec<NetworkPolicyIngressRule>,
    options: &Options,
) -> NetworkPolicy {
    let pod_selector = LabelSelector { match_labels: pods.map(selector), ..LabelSelector::default() };
    NetworkPolicy {
        metadata: meta(name, Some(&options.namespace)),
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(pod_selector),
            policy_types: Some(vec!["Ingress".into()]),
            ingress: Some(rules),
            ..NetworkPolicySpec::default()
        }),
    }
}

/// Admits TCP to the named `port` from `from` (anywhere when `None`).
fn allow(port: &str, from: Option<Vec<NetworkPolicyPeer>>) -> NetworkPolicyIngressRule {
    NetworkPolicyIngressRule {
        from,
        ports: Some(vec![NetworkPolicyPort {
            port: Some(IntOrString::String(port.into())),
            protocol: Some("TCP".into()),
            ..NetworkPolicyPort::default()
        }]),
    }
}

/// The platform namespace admits only the web UI and the API from the
/// ingress controller's namespace, and SSH to the gateway from anywhere
/// (letting in only who may log in is the gateway's job). Nothing else
/// reaches the components; the kubelet's probes come from the node, which
/// K3s' policy controller always admits.
fn network_policies(options: &Options) -> Vec<NetworkPolicy> {
    let ingress_controller = NetworkPolicyPeer {
        namespace_selector: Some(LabelSelector {
            match_labels: Some(BTreeMap::from([(
                "kubernetes.io/metadata.name".to_string(),
                options.ingress_namespace.clone(),
            )])),
            ..LabelSelector::default()
        }),
        ..NetworkPolicyPeer::default()
    };
    vec![
        policy("kite-default-deny", None, Vec::new(), options),
        policy(
            "kite-api-from-ingress",
            Some(Component::Api),
            vec![allow("http", Some(vec![ingress_controller]))],
            options,
        ),
        policy("kite-gateway-ssh", Some(Component::Gateway), vec![allow("ssh", None)], options),
        // The control API ends sessions and reads recordings: the API's pods only.
        policy(
            "kite-gateway-control-from-api",
            Some(Component::Gateway),
            vec![allow(
                "control",
                Some(vec![NetworkPolicyPeer {
                    pod_selector: Some(LabelSelector {
                        match_labels: Some(selector(Component::Api)),
                        ..LabelSelector::default()
                    }),
                    ..NetworkPolicyPeer::default()
                }]),
            )],
            options,
        ),
    ]
}

/// The Services and the NetworkPolicies.
pub fn objects(options: &Options) -> Result<Vec<serde_json::Value>, serde_json::Error> {
    [
        serde_json::to_value(service(Component::Api, API_PORT, "http", options)),
        serde_json::to_value(service(Component::Gateway, GATEWAY_PORT, "ssh", options)),
        serde_json::to_value(control_service(options)),
    ]
    .into_iter()
    .chain(network_policies(options).into_iter().map(serde_json::to_value))
    .collect()
}
