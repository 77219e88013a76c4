//! The tenant's and the gateway's desired objects, as pure functions.

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kite_core::api::*;
use kite_core::gateway::desired::{self as exposure, Plan};
use kite_core::tenant::desired;
use std::collections::BTreeMap;

fn a_user(level: AccessLevel) -> KiteUser {
    let mut user = KiteUser::new(
        "ku-1",
        KiteUserSpec {
            username: "alice".into(),
            email: "alice@example.com".into(),
            password: "x".into(),
            namespace: "kite-user-alice".into(),
            profile_image: String::new(),
            access_level: level,
            ssh_authorized_keys: vec![],
            session_generation: 0,
        },
    );
    user.metadata.uid = Some("0b6f7c1e-0000-4000-8000-000000000002".into());
    user
}

fn policy(name: &str, platform: &KitePlatformSpec) -> serde_json::Value {
    policy_with_hosts(name, platform, &[])
}

fn policy_with_hosts(name: &str, platform: &KitePlatformSpec, hosts: &[String]) -> serde_json::Value {
    let policies = desired::network_policies(&a_user(AccessLevel::User), platform, "kite", hosts).unwrap();
    let found = policies.into_iter().find(|p| p.metadata.name.as_deref() == Some(name)).unwrap();
    serde_json::to_value(found).unwrap()
}

#[test]
fn the_web_port_is_reached_only_from_the_ingress_controllers_namespace() {
    let web = policy("kite-allow-web-from-ingress", &KitePlatformSpec::default());
    assert_eq!(web["spec"]["podSelector"]["matchLabels"]["kubevirt.io"], "virt-launcher");
    let rule = &web["spec"]["ingress"][0];
    assert_eq!(rule["from"][0]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"], "kube-system");
    assert_eq!(rule["ports"], serde_json::json!([{"protocol": "TCP", "port": 80}]));
}

#[test]
fn everything_is_denied_unless_a_policy_allows_it() {
    let deny = policy("kite-default-deny", &KitePlatformSpec::default());
    assert_eq!(deny["spec"]["podSelector"], serde_json::json!({}));
    assert_eq!(deny["spec"]["policyTypes"], serde_json::json!(["Ingress", "Egress"]));
    assert!(deny["metadata"]["annotations"][desired::WHY].as_str().unwrap().len() > 20);
}

#[test]
fn ssh_reaches_machines_only_from_the_gateways_pods_on_port_22() {
    let ssh = policy("kite-allow-ssh-from-platform", &KitePlatformSpec::default());
    assert_eq!(ssh["spec"]["podSelector"]["matchLabels"]["kubevirt.io"], "virt-launcher");
    let rule = &ssh["spec"]["ingress"][0];
    let from = rule["from"].as_array().unwrap();
    assert_eq!(from.len(), 1, "one peer: the gateway's pods, in the platform namespace: {from:?}");
    assert_eq!(from[0]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"], "kite");
    // Not every pod of the platform namespace (CDI's clone pods run there too): the gateway's only.
    assert_eq!(from[0]["podSelector"]["matchLabels"], serde_json::json!({ "app": "kite-gateway" }));
    assert_eq!(rule["ports"], serde_json::json!([{"protocol": "TCP", "port": 22}]));
}

#[test]
fn machines_reach_dns_and_the_internet_but_not_private_ranges_the_cluster_or_metadata() {
    let mut platform = KitePlatformSpec::default();
    platform.tenant_network.cluster_cidrs =
        vec!["10.42.0.0/16".into(), "198.18.0.0/15".into(), "100.96.0.0/11".into(), "2001:db8:42::/56".into()];
    let egress = policy("kite-allow-vm-egress", &platform);
    let dns = &egress["spec"]["egress"][0];
    assert_eq!(dns["to"][0]["podSelector"]["matchLabels"]["k8s-app"], "kube-dns");
    assert_eq!(dns["ports"].as_array().unwrap().len(), 2);
    let v4 = &egress["spec"]["egress"][1]["to"][0]["ipBlock"];
    assert_eq!(v4["cidr"], "0.0.0.0/0");
    let except: Vec<&str> = v4["except"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    for range in ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "198.18.0.0/15"] {
        assert!(except.contains(&range), "{range} must be refused");
    }
    // "This network", benchmarking and the reserved class E ranges are not the internet either.
    let defaults = policy("kite-allow-vm-egress", &KitePlatformSpec::default());
    let default_except: Vec<String> = defaults["spec"]["egress"][1]["to"][0]["ipBlock"]["except"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    for range in ["0.0.0.0/8", "198.18.0.0/15", "240.0.0.0/4"] {
        assert!(default_except.iter().any(|r| r == range), "{range} must be refused by default: {default_except:?}");
    }
    assert_eq!(except.iter().filter(|r| r.starts_with("10.")).count(), 1, "10.42.0.0/16 is inside 10.0.0.0/8 already");
    assert!(!except.contains(&"100.96.0.0/11"));
    let v6 = &egress["spec"]["egress"][1]["to"][1]["ipBlock"];
    assert_eq!(v6["cidr"], "::/0");
    assert!(v6["except"].as_array().unwrap().contains(&serde_json::json!("2001:db8:42::/56")));
}

#[test]
fn an_ipv4_only_cluster_gets_no_ipv6_egress_rule() {
    let hosts = ["10.0.0.5/32", "203.0.113.10/32"].map(String::from);
    let egress = policy_with_hosts("kite-allow-vm-egress", &KitePlatformSpec::default(), &hosts);
    let peers = egress["spec"]["egress"][1]["to"].as_array().unwrap();
    assert_eq!(peers.len(), 1, "IPv4 only: {peers:?}");
    assert_eq!(peers[0]["ipBlock"]["cidr"], "0.0.0.0/0");
    // A node with an IPv6 address makes it a dual-stack cluster.
    let dual = ["10.0.0.5/32", "2001:db8::5/128"].map(String::from);
    let egress = policy_with_hosts("kite-allow-vm-egress", &KitePlatformSpec::default(), &dual);
    assert_eq!(egress["spec"]["egress"][1]["to"][1]["ipBlock"]["cidr"], "::/0");
}

fn egress_except(egress: &serde_json::Value, family: usize) -> Vec<String> {
    egress["spec"]["egress"][1]["to"][family]["ipBlock"]["except"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn machines_cannot_reach_the_nodes_the_api_server_or_the_ranges_the_platform_adds() {
    let mut platform = KitePlatformSpec::default();
    platform.tenant_network.blocked_cidrs = vec!["192.0.2.0/24".into(), "2001:db8:7::/48".into()];
    let hosts = ["10.0.0.5/32", "203.0.113.10/32", "198.51.100.20/32", "2001:db8::5/128"].map(String::from);
    let egress = policy_with_hosts("kite-allow-vm-egress", &platform, &hosts);
    let v4 = egress_except(&egress, 0);
    for range in ["203.0.113.10/32", "198.51.100.20/32", "192.0.2.0/24"] {
        assert!(v4.iter().any(|r| r == range), "{range} must be refused: {v4:?}");
    }
    assert!(!v4.iter().any(|r| r == "10.0.0.5/32"), "a node address inside 10.0.0.0/8 is refused already: {v4:?}");
    let v6 = egress_except(&egress, 1);
    for range in ["2001:db8::5/128", "2001:db8:7::/48"] {
        assert!(v6.iter().any(|r| r == range), "{range} must be refused: {v6:?}");
    }
}

#[test]
fn cdi_may_stream_a_clone_into_the_tenant_namespace() {
    let cdi = policy("kite-allow-cdi-upload", &KitePlatformSpec::default());
    assert_eq!(cdi["spec"]["podSelector"]["matchLabels"]["cdi.kubevirt.io"], "cdi-upload-server");
    let from = &cdi["spec"]["ingress"][0]["from"];
    assert_eq!(from[0]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"], "cdi");
    assert_eq!(from[1]["podSelector"]["matchLabels"]["cdi.kubevirt.io"], "cdi-clone-source");
    assert_eq!(cdi["spec"]["ingress"][0]["ports"][0]["port"], 8443);
}

#[test]
fn the_quota_follows_the_access_level() {
    let platform = KitePlatformSpec {
        tenant_quotas: vec![TenantQuota {
            access_level: AccessLevel::User,
            hard: BTreeMap::from([("count/virtualmachines.kubevirt.io".to_string(), Quantity("2".into()))]),
            container_limits: Some(ContainerLimits {
                max: BTreeMap::from([("memory".to_string(), Quantity("8Gi".into()))]),
                ..Default::default()
            }),
        }],
        ..KitePlatformSpec::default()
    };
    let user = a_user(AccessLevel::User);
    let quota = desired::quota_of(&user, &platform).unwrap();
    let resource_quota = desired::resource_quota(&user, quota).unwrap();
    assert_eq!(resource_quota.metadata.name.as_deref(), Some(desired::QUOTA_NAME));
    assert_eq!(resource_quota.spec.unwrap().hard.unwrap()["count/virtualmachines.kubevirt.io"].0, "2");
    let limits = desired::limit_range(&user, quota).unwrap().unwrap();
    assert_eq!(limits.spec.unwrap().limits[0].max.as_ref().unwrap()["memory"].0, "8Gi");
    assert!(desired::quota_of(&a_user(AccessLevel::Manager), &platform).is_none());
}

#[test]
fn the_gateway_plan_follows_the_spec() {
    let spec = |enabled, port| SshGatewaySpec { external_enabled: enabled, external_port: port, ..Default::default() };
    assert_eq!(exposure::plan(&spec(false, Some(22))), Plan::Disabled);
    assert_eq!(exposure::plan(&spec(true, None)), Plan::MissingPort);
    assert_eq!(exposure::plan(&spec(true, Some(2222))), Plan::Expose(2222));
}

fn platform_with_uid() -> KitePlatform {
    let mut platform = KitePlatform::new(PLATFORM_NAME, KitePlatformSpec::default());
    platform.metadata.uid = Some("0b6f7c1e-0000-4000-8000-000000000003".into());
    platform
}

#[test]
fn the_external_service_forwards_the_chosen_port_to_the_gateways_ssh_port() {
    let service = exposure::external_service(&platform_with_uid(), "kite", 2222).unwrap();
    let spec = service.spec.unwrap();
    assert_eq!(spec.type_.as_deref(), Some("LoadBalancer"));
    let port = &spec.ports.unwrap()[0];
    assert_eq!(port.port, 2222);
    assert_eq!(serde_json::to_value(&port.target_port).unwrap(), "ssh");
    assert_eq!(spec.selector.unwrap()["app"], "kite-gateway");
    // Clients keep their own address (no SNAT to a node's), so the gateway's
    // per-address limits count each client, not every client behind one node.
    assert_eq!(spec.external_traffic_policy.as_deref(), Some("Local"));
}

#[test]
fn ready_only_with_an_address_and_the_transition_time_moves_only_with_the_phase() {
    let service = exposure::external_service(&platform_with_uid(), "kite", 2222).unwrap();
    let (phase, reason, _) = exposure::observe(Plan::Expose(2222), Some(&service));
    assert_eq!((phase, reason), (GatewayPhase::Reconciling, "WaitingForLoadBalancer"));
    let at = |day: &str| Time(format!("2026-01-{day}T00:00:00Z").parse().unwrap());
    let pending =
        exposure::status(None, exposure::observe(Plan::Expose(2222), Some(&service)), Some(&service), at("01"));
    let still = exposure::status(
        Some(&pending),
        exposure::observe(Plan::Expose(2222), Some(&service)),
        Some(&service),
        at("02"),
    );
    assert_eq!(pending, still);
    let mut live: Service = service.clone();
    live.status =
        serde_json::from_value(serde_json::json!({"loadBalancer": {"ingress": [{"hostname": "lb.example.org"}]}}))
            .unwrap();
    let ready =
        exposure::status(Some(&still), exposure::observe(Plan::Expose(2222), Some(&live)), Some(&live), at("03"));
    assert_eq!(ready.phase, GatewayPhase::Ready);
    assert_eq!(ready.last_transition_time, Some(at("03")));
    assert_eq!(ready.observed_external_port, Some(2222));
}
