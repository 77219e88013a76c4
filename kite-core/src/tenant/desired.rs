//! A user's namespace and what guards it, as pure functions: the
//! `KiteUser` and the platform in, the desired objects out.
//!
//! The NetworkPolicies, and why each exists (the same sentence is on each
//! policy as the annotation [`WHY`], for `kubectl describe`):
//!
//! | policy | why |
//! |---|---|
//! | `kite-default-deny` | nothing enters or leaves a tenant's pods unless a rule below says so |
//! | `kite-allow-ssh-from-platform` | the SSH gateway's pods (`app: kite-gateway`, in the platform namespace) reach the machines on TCP 22; nobody else does, not even the other pods of the platform namespace |
//! | `kite-allow-vm-egress` | machines resolve names with the cluster DNS and reach the internet, but not private ranges, the cluster's pods and Services, or the metadata address |
//! | `kite-allow-web-from-ingress` | the ingress controller's namespace (`machineDomains.ingressNamespace`) reaches the machines on TCP 80, for their domains; nobody else does |
//! | `kite-allow-cdi-upload` | CDI's host-assisted clone streams the golden image into an upload server in the tenant namespace on TCP 8443, from the clone-source pod in the platform namespace; CDI itself (its namespace) reaches the same port for uploads and progress |

use crate::Error;
use crate::api::{KitePlatformSpec, KiteUser, TenantQuota};
use crate::labels::{self, USER_NAME};
use crate::required::Required;
use k8s_openapi::api::core::v1::{
    LimitRange, LimitRangeItem, LimitRangeSpec, Namespace, ResourceQuota, ResourceQuotaSpec,
};
use k8s_openapi::api::networking::v1::{
    IPBlock, NetworkPolicy, NetworkPolicyEgressRule, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicyPort,
    NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeMap;

/// The annotation that says why a NetworkPolicy exists.
pub const WHY: &str = "hy3ons.github.io/why";

/// The name of the ResourceQuota and the LimitRange Kite puts in a tenant namespace.
pub const QUOTA_NAME: &str = "kite-tenant-quota";

/// The label KubeVirt puts on every VM pod (`virt-launcher`).
const VM_POD: (&str, &str) = ("kubevirt.io", "virt-launcher");

/// Ranges a machine may never reach: private (RFC 1918), shared (RFC 6598),
/// link-local (the metadata address 169.254.169.254 among them), loopback,
/// "this network" (0.0.0.0/8), benchmarking (RFC 2544) and reserved (class E).
const BLOCKED_V4: &[&str] = &[
    "10.0.0.0/8",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "100.64.0.0/10",
    "169.254.0.0/16",
    "127.0.0.0/8",
    "0.0.0.0/8",
    "198.18.0.0/15",
    "240.0.0.0/4",
];
/// The same for IPv6: unique-local, link-local and loopback.
const BLOCKED_V6: &[&str] = &["fc00::/7", "fe80::/10", "::1/128"];

/// The namespace's objects need the user's name, uid and namespace.
struct Tenant<'a> {
    user: &'a str,
    namespace: &'a str,
    owner: OwnerReference,
}

fn tenant(user: &KiteUser) -> Result<Tenant<'_>, Error> {
    Ok(Tenant { user: user.required_name()?, namespace: &user.spec.namespace, owner: user.required_owner()? })
}

fn meta(tenant: &Tenant<'_>, name: &str, why: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some(tenant.namespace.into()),
        labels: Some(labels::owned_labels(USER_NAME, tenant.user)),
        annotations: why.map(|why| BTreeMap::from([(WHY.to_string(), why.to_string())])),
        owner_references: Some(vec![tenant.owner.clone()]),
        ..ObjectMeta::default()
    }
}

fn selector(pairs: &[(&str, &str)]) -> LabelSelector {
    LabelSelector {
        match_labels: Some(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
        ..LabelSelector::default()
    }
}

fn namespace_named(name: &str) -> LabelSelector {
    selector(&[("kubernetes.io/metadata.name", name)])
}

fn port(protocol: &str, number: i32) -> NetworkPolicyPort {
    NetworkPolicyPort { protocol: Some(protocol.into()), port: Some(IntOrString::Int(number)), ..Default::default() }
}

/// The user's namespace, labelled as Kite's and as the user's. It has no
/// owner reference: the tenant reconciler's finalizer releases it, and only
/// when no other user refers to it.
pub fn namespace(user: &KiteUser) -> Result<Namespace, Error> {
    let tenant = tenant(user)?;
    Ok(Namespace {
        metadata: ObjectMeta {
            name: Some(tenant.namespace.into()),
            labels: Some(labels::owned_labels(USER_NAME, tenant.user)),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    })
}

/// The five NetworkPolicies of the table above, in that order.
/// `host_addresses` are the nodes' and the API server's addresses
/// ([`super::host_addresses`]), blocked with the platform's other ranges.
pub fn network_policies(
    user: &KiteUser,
    platform: &KitePlatformSpec,
    platform_namespace: &str,
    host_addresses: &[String],
) -> Result<Vec<NetworkPolicy>, Error> {
    let tenant = tenant(user)?;
    let policies = [
        default_deny(),
        ssh_from_platform(platform_namespace),
        web_from_ingress(platform),
        vm_egress(platform, host_addresses),
        cdi_upload(platform),
    ];
    Ok(policies
        .into_iter()
        .map(|(name, why, spec)| NetworkPolicy { metadata: meta(&tenant, name, Some(why)), spec: Some(spec) })
        .collect())
}

/// A NetworkPolicy's name, the sentence saying why it is there, and its spec.
type Policy = (&'static str, &'static str, NetworkPolicySpec);

fn default_deny() -> Policy {
    (
        "kite-default-deny",
        "Nothing enters or leaves a tenant's pods unless another Kite policy allows it.",
        NetworkPolicySpec {
            pod_selector: Some(LabelSelector::default()),
            policy_types: Some(vec!["Ingress".into(), "Egress".into()]),
            ..Default::default()
        },
    )
}

fn ssh_from_platform(platform_namespace: &str) -> Policy {
    (
        "kite-allow-ssh-from-platform",
        "The SSH gateway's pods (in the platform namespace) reach machines on TCP 22; nothing else may.",
        NetworkPolicySpec {
            pod_selector: Some(selector(&[VM_POD])),
            policy_types: Some(vec!["Ingress".into()]),
            ingress: Some(vec![NetworkPolicyIngressRule {
                // The gateway's pods only: CDI's clone pods run in the platform namespace too.
                from: Some(vec![NetworkPolicyPeer {
                    namespace_selector: Some(namespace_named(platform_namespace)),
                    pod_selector: Some(selector(&[crate::gateway::desired::GATEWAY_SELECTOR])),
                    ..Default::default()
                }]),
                ports: Some(vec![port("TCP", 22)]),
            }]),
            ..Default::default()
        },
    )
}

fn web_from_ingress(platform: &KitePlatformSpec) -> Policy {
    (
        "kite-allow-web-from-ingress",
        "The ingress controller reaches machines on TCP 80, for their domains; nothing else from outside may.",
        NetworkPolicySpec {
            pod_selector: Some(selector(&[VM_POD])),
            policy_types: Some(vec!["Ingress".into()]),
            ingress: Some(vec![NetworkPolicyIngressRule {
                from: Some(vec![NetworkPolicyPeer {
                    namespace_selector: Some(namespace_named(&platform.machine_domains.ingress_namespace)),
                    ..Default::default()
                }]),
                ports: Some(vec![port("TCP", 80)]),
            }]),
            ..Default::default()
        },
    )
}

fn vm_egress(platform: &KitePlatformSpec, host_addresses: &[String]) -> Policy {
    let network = &platform.tenant_network;
    let (cluster_v6, cluster_v4): (Vec<&String>, Vec<&String>) = network
        .cluster_cidrs
        .iter()
        .chain(&network.blocked_cidrs)
        .chain(host_addresses)
        .partition(|cidr| cidr.contains(':'));
    let anywhere_but = |cidr: &str, blocked: &[&str], cluster: Vec<&String>| NetworkPolicyPeer {
        ip_block: Some(IPBlock { cidr: cidr.into(), except: Some(except(blocked, cluster)) }),
        ..Default::default()
    };
    // The IPv6 internet only on a cluster that has IPv6: an IPv6 range among its
    // own, the blocked ones or its hosts' addresses. On an IPv4-only cluster an
    // IPv6 block is a rule the network policy agent cannot program.
    let mut internet = vec![anywhere_but("0.0.0.0/0", BLOCKED_V4, cluster_v4)];
    if !cluster_v6.is_empty() {
        internet.push(anywhere_but("::/0", BLOCKED_V6, cluster_v6));
    }
    (
        "kite-allow-vm-egress",
        "Machines resolve names with the cluster DNS and reach the internet, but not private ranges, the cluster's pods and Services, its nodes and API server, or the metadata address.",
        NetworkPolicySpec {
            pod_selector: Some(selector(&[VM_POD])),
            policy_types: Some(vec!["Egress".into()]),
            egress: Some(vec![
                NetworkPolicyEgressRule {
                    to: Some(vec![NetworkPolicyPeer {
                        namespace_selector: Some(namespace_named(&network.dns_namespace)),
                        pod_selector: Some(selector(&[("k8s-app", "kube-dns")])),
                        ..Default::default()
                    }]),
                    ports: Some(vec![port("UDP", 53), port("TCP", 53)]),
                },
                NetworkPolicyEgressRule { to: Some(internet), ports: None },
            ]),
            ..Default::default()
        },
    )
}

/// The ranges `blocked`, and each of `cluster` that none of them holds already.
fn except(blocked: &[&str], cluster: Vec<&String>) -> Vec<String> {
    let mut ranges: Vec<String> = blocked.iter().map(|r| r.to_string()).collect();
    for cidr in cluster {
        if !ranges.iter().any(|range| cidr_within(cidr, range)) {
            ranges.push(cidr.clone());
        }
    }
    ranges
}

fn cdi_upload(platform: &KitePlatformSpec) -> Policy {
    (
        "kite-allow-cdi-upload",
        "CDI's host-assisted clone streams the golden image from the clone-source pod in the platform namespace to an upload server here on TCP 8443; CDI's own namespace reaches that port for uploads and progress.",
        NetworkPolicySpec {
            pod_selector: Some(selector(&[("cdi.kubevirt.io", "cdi-upload-server")])),
            policy_types: Some(vec!["Ingress".into()]),
            ingress: Some(vec![NetworkPolicyIngressRule {
                from: Some(vec![
                    NetworkPolicyPeer {
                        namespace_selector: Some(namespace_named(&platform.tenant_network.cdi_namespace)),
                        ..Default::default()
                    },
                    NetworkPolicyPeer {
                        namespace_selector: Some(namespace_named(&platform.golden_image_namespace)),
                        pod_selector: Some(selector(&[("cdi.kubevirt.io", "cdi-clone-source")])),
                        ..Default::default()
                    },
                ]),
                ports: Some(vec![port("TCP", 8443)]),
            }]),
            ..Default::default()
        },
    )
}

fn parse_cidr(cidr: &str) -> Option<(u128, u8, bool)> {
    let (address, length) = cidr.split_once('/')?;
    let length: u8 = length.parse().ok()?;
    match address.parse::<std::net::IpAddr>().ok()? {
        std::net::IpAddr::V4(v4) if length <= 32 => Some((u128::from(u32::from(v4)) << 96, length, false)),
        std::net::IpAddr::V6(v6) if length <= 128 => Some((u128::from(v6), length, true)),
        _ => None,
    }
}

/// Whether the range `inner` lies inside `outer` (both `address/length`).
fn cidr_within(inner: &str, outer: &str) -> bool {
    let (Some((inner, inner_length, inner_v6)), Some((outer, outer_length, outer_v6))) =
        (parse_cidr(inner), parse_cidr(outer))
    else {
        return inner == outer;
    };
    if inner_v6 != outer_v6 || inner_length < outer_length {
        return false;
    }
    // IPv4 addresses sit in the top 32 of the 128 bits, so one mask serves both.
    let mask = if outer_length == 0 { 0 } else { u128::MAX << (128 - u32::from(outer_length)) };
    inner & mask == outer & mask
}

/// The quota entry of the user's access level, if the platform has one.
pub fn quota_of<'a>(user: &KiteUser, platform: &'a KitePlatformSpec) -> Option<&'a TenantQuota> {
    platform.tenant_quotas.iter().find(|quota| quota.access_level == user.spec.access_level)
}

/// The ResourceQuota [`QUOTA_NAME`] from the quota of the user's level.
pub fn resource_quota(user: &KiteUser, quota: &TenantQuota) -> Result<ResourceQuota, Error> {
    let tenant = tenant(user)?;
    Ok(ResourceQuota {
        metadata: meta(&tenant, QUOTA_NAME, None),
        spec: Some(ResourceQuotaSpec { hard: Some(quota.hard.clone()), ..Default::default() }),
        ..ResourceQuota::default()
    })
}

/// The LimitRange [`QUOTA_NAME`], when the quota of the user's level has container limits.
pub fn limit_range(user: &KiteUser, quota: &TenantQuota) -> Result<Option<LimitRange>, Error> {
    let tenant = tenant(user)?;
    let Some(limits) = &quota.container_limits else { return Ok(None) };
    let some = |map: &BTreeMap<_, _>| (!map.is_empty()).then(|| map.clone());
    Ok(Some(LimitRange {
        metadata: meta(&tenant, QUOTA_NAME, None),
        spec: Some(LimitRangeSpec {
            limits: vec![LimitRangeItem {
                type_: "Container".into(),
                default: some(&limits.default),
                default_request: some(&limits.default_request),
                max: some(&limits.max),
                ..Default::default()
            }],
        }),
    }))
}
