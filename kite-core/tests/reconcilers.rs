//! The tenant, VM and gateway reconcilers, run as `kite controller` runs
//! them (`kube::runtime::Controller`), against kite-testkit's API server
//! and its simulated KubeVirt and CDI.

mod fixtures;

use fixtures::*;
use k8s_openapi::api::core::v1::{Namespace, Secret, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kite_core::api::*;
use kite_core::reconcile::resources;
use kite_core::{labels, ssh_secret, tenant, vm};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::json;
use std::time::Duration;

const WITHIN: Duration = Duration::from_secs(20);

fn phase_of(vm: &KiteVirtualMachine) -> Option<VirtualMachinePhase> {
    vm.status.as_ref().and_then(|s| s.phase)
}

/// A cluster with the platform, user `alice` Ready and her machine `web` Running.
async fn alice_with_a_running_machine() -> (Cluster, String) {
    alice_with_a_running_machine_on(Cluster::new().await).await
}

/// User `alice`, created and Ready on `cluster`; her namespace.
async fn alice_ready(cluster: &Cluster) -> String {
    let user = cluster.create_user(a_user("alice")).await;
    let users: Api<KiteUser> = Api::all(cluster.client.clone());
    eventually(WITHIN, "alice's namespace to be ready", || async {
        let user = users.get("alice").await.unwrap();
        (user.status.as_ref().and_then(|s| s.phase) == Some(UserPhase::Ready)).then_some(())
    })
    .await;
    user.spec.namespace
}

/// The same on `cluster`.
async fn alice_with_a_running_machine_on(mut cluster: Cluster) -> (Cluster, String) {
    cluster.with_platform(a_platform()).await;
    cluster.run();
    let ns = alice_ready(&cluster).await;
    cluster.create_vm(&ns, a_vm("web").build()).await;
    eventually(WITHIN, "web to run", || async {
        let vm = cluster.vm(&ns, "web").await?;
        (phase_of(&vm) == Some(VirtualMachinePhase::Running)).then_some(())
    })
    .await;
    (cluster, ns)
}

#[tokio::test]
async fn a_user_and_a_machine_converge_to_running() {
    let (mut cluster, ns) = alice_with_a_running_machine().await;
    let client = cluster.client.clone();

    // The tenant: a labelled namespace and the five policies, each saying why.
    let namespace = Api::<Namespace>::all(client.clone()).get(&ns).await.unwrap();
    assert!(labels::is_managed_by_controller(namespace.metadata.labels.as_ref()));
    let policies = Api::<NetworkPolicy>::namespaced(client.clone(), &ns).list(&ListParams::default()).await.unwrap();
    let mut names: Vec<String> = policies.items.iter().map(|p| p.name_any()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "kite-allow-cdi-upload",
            "kite-allow-ssh-from-platform",
            "kite-allow-vm-egress",
            "kite-allow-web-from-ingress",
            "kite-default-deny"
        ]
    );
    assert!(policies.items.iter().all(|p| p.annotations().contains_key(tenant::desired::WHY)));
    let user = Api::<KiteUser>::all(client.clone()).get("alice").await.unwrap();
    let status = user.status.unwrap();
    assert_eq!(status.observed_namespace.as_deref(), Some(ns.as_str()));
    assert_eq!(status.conditions[0].type_, "NamespaceReady");
    assert_eq!(status.conditions[0].status, ConditionStatus::True);

    // The machine: status mirrors what was observed, and names the children.
    let vm = cluster.vm(&ns, "web").await.unwrap();
    let status = vm.status.clone().unwrap();
    assert_eq!(status.current_power_state, Some(PowerState::On));
    assert_eq!(status.domain.as_deref(), Some("web.example.org"));
    assert_eq!(status.node_name.as_deref(), Some("kite-node-1"));
    assert_eq!(status.data_volume_phase.as_deref(), Some("Succeeded"));
    assert_eq!(status.observed_generation, vm.metadata.generation);
    assert!(vm.finalizers().iter().any(|f| f == labels::VM_CLEANUP_FINALIZER));
    let ready = &status.conditions[0];
    assert_eq!((ready.type_.as_str(), ready.status), ("VirtualMachineReady", ConditionStatus::True));

    // The children exist, are Kite's, and are owned by the machine.
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    let keys = secrets.get("web-ssh-key").await.unwrap();
    assert_eq!(keys.type_.as_deref(), Some("kubernetes.io/ssh-auth"));
    let data = keys.data.unwrap();
    for key in
        [ssh_secret::PRIVATE_KEY, ssh_secret::PUBLIC_KEY, ssh_secret::HOST_PRIVATE_KEY, ssh_secret::HOST_PUBLIC_KEY]
    {
        assert!(data.contains_key(key), "the SSH Secret has no {key}");
    }
    let user_data = secrets.get("web-cloud-init-userdata").await.unwrap().data.unwrap()["userdata"].0.clone();
    let user_data = String::from_utf8(user_data).unwrap();
    let gateway_key = String::from_utf8(data[ssh_secret::PUBLIC_KEY].0.clone()).unwrap();
    assert!(user_data.starts_with("#cloud-config\n"));
    let parsed: serde_json::Value = serde_saphyr::from_str(&user_data).unwrap();
    assert_eq!(
        parsed["users"][0]["ssh_authorized_keys"][0],
        gateway_key.trim(),
        "cloud-init must trust the gateway's key"
    );
    assert_eq!(parsed["users"][0]["name"], "web");
    let service = Api::<Service>::namespaced(client.clone(), &ns).get("vps-access-web").await.unwrap();
    assert_eq!(service.owner_references()[0].kind, "KiteVirtualMachine");
    for (resource, name) in [(resources::data_volume(), "web-disk"), (resources::kubevirt_virtual_machine(), "web")] {
        let object = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &resource).get(name).await.unwrap();
        assert_eq!(object.owner_references()[0].uid, vm.uid().unwrap());
        assert_eq!(object.labels()[labels::VM_NAME], "web");
        assert_eq!(object.labels()[labels::VM_NAMESPACE], ns);
    }
    cluster.stop().await;
}

/// The writes the cluster was asked for since its requests were last reset.
fn writes_of(cluster: &Cluster) -> Vec<String> {
    cluster
        .server
        .requests()
        .iter()
        .filter(|r| r.verb.is_write())
        .map(|r| format!("{:?} {}", r.verb, r.resource))
        .collect()
}

#[tokio::test]
async fn a_second_pass_over_converged_objects_writes_nothing() {
    let (mut cluster, ns) = alice_with_a_running_machine().await;
    cluster.stop().await;
    let client = cluster.client.clone();
    let vm = cluster.vm(&ns, "web").await.unwrap();
    let user = Api::<KiteUser>::all(client.clone()).get("alice").await.unwrap();
    cluster.server.reset_requests();
    vm::reconcile(std::sync::Arc::new(vm), cluster.context(vm::Config::default())).await.unwrap();
    let tenants = cluster.context(tenant::Config { platform_namespace: PLATFORM_NS.into() });
    tenant::reconcile(std::sync::Arc::new(user), tenants).await.unwrap();
    let writes = writes_of(&cluster);
    assert_eq!(writes, Vec::<String>::new(), "a steady-state pass must only read");
    assert!(cluster.server.request_counts().keys().any(|k| k.starts_with("get ")), "the pass did read");
}

#[tokio::test]
async fn a_running_controller_reads_a_machines_children_from_its_caches() {
    let (mut cluster, ns) = alice_with_a_running_machine().await;
    let services: Api<Service> = Api::namespaced(cluster.client.clone(), &ns);
    let before = services.get("vps-access-web").await.unwrap();
    cluster.server.reset_requests();
    // A deleted child brings the machine back for a pass, which makes the Service again.
    services.delete("vps-access-web", &DeleteParams::default()).await.unwrap();
    // Listed, not read: the reads counted below are the controller's.
    let by_name = ListParams::default().fields("metadata.name=vps-access-web");
    eventually(WITHIN, "the Service to be made again", || async {
        let after = services.list(&by_name).await.unwrap().items.pop()?;
        (after.uid() != before.uid()).then_some(())
    })
    .await;
    let reads: Vec<String> = cluster
        .server
        .requests()
        .iter()
        .filter(|r| r.verb == kite_testkit::Verb::Get && r.namespace.as_deref() == Some(ns.as_str()))
        .map(|r| format!("{} {}", r.resource, r.name.clone().unwrap_or_default()))
        .collect();
    let cached = [
        "secrets",
        "services",
        "datavolumes",
        "virtualmachines",
        "virtualmachineinstances",
        "roles",
        "rolebindings",
        "ingresses",
    ];
    let uncached: Vec<&String> =
        reads.iter().filter(|r| cached.iter().any(|kind| r.split(' ').next() == Some(kind))).collect();
    assert!(uncached.is_empty(), "the pass read children the caches hold: {uncached:?} (all reads: {reads:?})");
    assert!(
        !cluster.server.request_counts().contains_key("get kiteplatforms"),
        "the platform is read from the cache: {:?}",
        cluster.server.request_counts()
    );
    cluster.stop().await;
}

#[tokio::test]
async fn a_deleted_child_comes_back() {
    let (mut cluster, ns) = alice_with_a_running_machine().await;
    let services: Api<Service> = Api::namespaced(cluster.client.clone(), &ns);
    let before = services.get("vps-access-web").await.unwrap();
    services.delete("vps-access-web", &DeleteParams::default()).await.unwrap();
    let policies: Api<NetworkPolicy> = Api::namespaced(cluster.client.clone(), &ns);
    policies.delete("kite-default-deny", &DeleteParams::default()).await.unwrap();
    eventually(Duration::from_secs(5), "the Service to come back", || async {
        let again = services.get_opt("vps-access-web").await.unwrap()?;
        (uid(&again) != uid(&before)).then_some(())
    })
    .await;
    eventually(Duration::from_secs(5), "the policy to come back", || async {
        policies.get_opt("kite-default-deny").await.unwrap().map(|_| ())
    })
    .await;
    cluster.stop().await;
}

#[tokio::test]
async fn an_edited_child_is_put_back() {
    let (mut cluster, ns) = alice_with_a_running_machine().await;
    let services: Api<Service> = Api::namespaced(cluster.client.clone(), &ns);
    // A field Kite owns, changed to another value. (A field someone else adds
    // stays: server-side apply leaves other managers' fields alone.)
    let elsewhere = json!({"spec": {"selector": {kite_core::vm::desired::VM_POD_LABEL: "other"}}});
    services.patch("vps-access-web", &PatchParams::default(), &Patch::Merge(&elsewhere)).await.unwrap();
    let policies: Api<NetworkPolicy> = Api::namespaced(cluster.client.clone(), &ns);
    let open = json!({"spec": {"ingress": [{}]}});
    policies.patch("kite-allow-ssh-from-platform", &PatchParams::default(), &Patch::Merge(&open)).await.unwrap();
    eventually(Duration::from_secs(5), "the Service's selector to be put back", || async {
        let service = services.get("vps-access-web").await.unwrap();
        let selector = service.spec?.selector?;
        (selector.get(kite_core::vm::desired::VM_POD_LABEL).map(String::as_str) == Some("web")).then_some(())
    })
    .await;
    eventually(Duration::from_secs(5), "the policy's rule to be put back", || async {
        let policy = policies.get("kite-allow-ssh-from-platform").await.unwrap();
        let rules = policy.spec?.ingress?;
        (rules.len() == 1 && rules[0].ports.is_some()).then_some(())
    })
    .await;
    cluster.stop().await;
}

async fn kites_children_of_web(cluster: &Cluster, ns: &str) -> Vec<String> {
    let selector = format!("{}=web", labels::VM_NAME);
    let mut left = vec![];
    for resource in [
        kube::core::ApiResource::erase::<Secret>(&()),
        kube::core::ApiResource::erase::<Service>(&()),
        resources::data_volume(),
        resources::kubevirt_virtual_machine(),
    ] {
        let api = Api::<DynamicObject>::namespaced_with(cluster.client.clone(), ns, &resource);
        for object in api.list(&ListParams::default().labels(&selector)).await.unwrap() {
            left.push(format!("{} {}", resource.kind, object.name_any()));
        }
    }
    left
}

#[tokio::test]
async fn deleting_a_machine_leaves_no_child_behind() {
    let (mut cluster, ns) = alice_with_a_running_machine().await;
    let vms: Api<KiteVirtualMachine> = Api::namespaced(cluster.client.clone(), &ns);
    vms.delete("web", &DeleteParams::default()).await.unwrap();
    eventually(WITHIN, "web to be gone", || async { vms.get_opt("web").await.unwrap().is_none().then_some(()) }).await;
    assert_eq!(kites_children_of_web(&cluster, &ns).await, Vec::<String>::new());
    cluster.stop().await;
}

#[tokio::test]
async fn a_delete_request_in_the_spec_removes_the_machine_and_then_the_object() {
    let (mut cluster, ns) = alice_with_a_running_machine().await;
    let vms: Api<KiteVirtualMachine> = Api::namespaced(cluster.client.clone(), &ns);
    vms.patch("web", &PatchParams::default(), &Patch::Merge(json!({"spec": {"delete": true}}))).await.unwrap();
    eventually(WITHIN, "web to be gone", || async { vms.get_opt("web").await.unwrap().is_none().then_some(()) }).await;
    assert_eq!(kites_children_of_web(&cluster, &ns).await, Vec::<String>::new());
    cluster.stop().await;
}

#[tokio::test]
async fn a_failing_disk_gives_failed_with_a_sentence_for_people() {
    let mut cluster = Cluster::new().await;
    cluster.with_platform(a_platform()).await;
    cluster.run();
    let ns = cluster.create_user(a_user("bob")).await.spec.namespace;
    eventually(WITHIN, "bob's namespace", || async {
        Api::<Namespace>::all(cluster.client.clone()).get_opt(&ns).await.unwrap().map(|_| ())
    })
    .await;
    cluster.simulation.fail_data_volume(&ns, "db-disk", "clone source pod: connection refused to 10.42.0.7:8443");
    cluster.create_vm(&ns, a_vm("db").build()).await;
    let vm = eventually(WITHIN, "db to fail", || async {
        let vm = cluster.vm(&ns, "db").await?;
        (phase_of(&vm) == Some(VirtualMachinePhase::Failed)).then_some(vm)
    })
    .await;
    let status = vm.status.unwrap();
    let condition = &status.conditions[0];
    assert_eq!(condition.reason.as_deref(), Some("DataVolumeFailed"));
    let sentence = condition.message.as_deref().unwrap();
    assert!(!sentence.contains("10.42") && !sentence.contains("db-disk"), "no internals for users: {sentence}");
    assert!(status.data_volume_message.unwrap().contains("connection refused"), "the raw message is kept for admins");
    assert_eq!(status.data_volume_phase.as_deref(), Some("Failed"));
    cluster.stop().await;
}

#[tokio::test]
async fn an_image_the_platform_does_not_offer_is_refused_and_nothing_is_cloned() {
    let mut cluster = Cluster::new().await;
    cluster.with_platform(a_platform()).await;
    // A PVC of the platform namespace that is no golden image.
    cluster.run();
    let ns = cluster.create_user(a_user("carol")).await.spec.namespace;
    eventually(WITHIN, "carol's namespace", || async {
        Api::<Namespace>::all(cluster.client.clone()).get_opt(&ns).await.unwrap().map(|_| ())
    })
    .await;
    cluster.create_vm(&ns, a_vm("sneaky").of_image("kite-api-database").build()).await;
    cluster.create_vm(&ns, a_vm("tiny").with_disk("1Gi").build()).await;
    for (name, reason) in [("sneaky", "ImageNotOffered"), ("tiny", "DiskTooSmall")] {
        let vm = eventually(WITHIN, "the machine to fail", || async {
            let vm = cluster.vm(&ns, name).await?;
            (phase_of(&vm) == Some(VirtualMachinePhase::Failed)).then_some(vm)
        })
        .await;
        assert_eq!(vm.status.unwrap().conditions[0].reason.as_deref(), Some(reason));
    }
    let volumes = Api::<DynamicObject>::namespaced_with(cluster.client.clone(), &ns, &resources::data_volume());
    assert!(volumes.list(&ListParams::default()).await.unwrap().items.is_empty(), "nothing may be cloned");
    cluster.stop().await;
}

#[tokio::test]
async fn an_existing_namespace_that_is_not_kites_is_refused_not_adopted() {
    let mut cluster = Cluster::new().await;
    cluster.create_namespace("kite-user-dave", false).await;
    cluster.run();
    cluster.create_user(a_user("dave")).await;
    let users: Api<KiteUser> = Api::all(cluster.client.clone());
    let user = eventually(WITHIN, "dave to fail", || async {
        let user = users.get("dave").await.unwrap();
        (user.status.as_ref().and_then(|s| s.phase) == Some(UserPhase::Failed)).then_some(user)
    })
    .await;
    assert_eq!(user.status.unwrap().conditions[0].reason.as_deref(), Some("NamespaceNotManaged"));
    let policies = Api::<NetworkPolicy>::namespaced(cluster.client.clone(), "kite-user-dave");
    assert!(policies.list(&ListParams::default()).await.unwrap().items.is_empty());
    let ns = Api::<Namespace>::all(cluster.client.clone()).get("kite-user-dave").await.unwrap();
    assert!(!labels::is_managed_by_controller(ns.metadata.labels.as_ref()));
    cluster.stop().await;
}

#[tokio::test]
async fn deleting_a_user_releases_their_namespace() {
    let mut cluster = Cluster::new().await;
    cluster.run();
    let ns = cluster.create_user(a_user("erin")).await.spec.namespace;
    let namespaces: Api<Namespace> = Api::all(cluster.client.clone());
    eventually(WITHIN, "erin's namespace", || async { namespaces.get_opt(&ns).await.unwrap().map(|_| ()) }).await;
    Api::<KiteUser>::all(cluster.client.clone()).delete("erin", &DeleteParams::default()).await.unwrap();
    eventually(WITHIN, "the namespace to go", || async {
        namespaces.get_opt(&ns).await.unwrap().is_none().then_some(())
    })
    .await;
    cluster.stop().await;
}

#[tokio::test]
async fn the_gateway_is_exposed_only_as_asked_and_ready_only_with_an_address() {
    let mut cluster = Cluster::new().await;
    let mut spec = KitePlatformSpec::default();
    spec.ssh_gateway.external_enabled = true;
    cluster.with_platform(spec).await;
    cluster.run();
    let platforms: Api<KitePlatform> = Api::all(cluster.client.clone());
    let gateway_phase =
        || async { platforms.get(PLATFORM_NAME).await.unwrap().status.and_then(|s| s.ssh_gateway).map(|g| g.phase) };
    eventually(WITHIN, "Blocked", || async { (gateway_phase().await == Some(GatewayPhase::Blocked)).then_some(()) })
        .await;

    let enable = json!({"spec": {"sshGateway": {"externalEnabled": true, "externalPort": 2222}}});
    platforms.patch(PLATFORM_NAME, &PatchParams::default(), &Patch::Merge(&enable)).await.unwrap();
    eventually(WITHIN, "Reconciling", || async {
        (gateway_phase().await == Some(GatewayPhase::Reconciling)).then_some(())
    })
    .await;
    let services: Api<Service> = Api::namespaced(cluster.client.clone(), PLATFORM_NS);
    let service = services.get("kite-gateway-external").await.unwrap();
    let spec = service.spec.unwrap();
    assert_eq!(spec.type_.as_deref(), Some("LoadBalancer"));
    assert_eq!(spec.ports.unwrap()[0].port, 2222);

    // The load balancer reports an address: now, and only now, Ready.
    let address = json!({"status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}}});
    services.patch_status("kite-gateway-external", &PatchParams::default(), &Patch::Merge(&address)).await.unwrap();
    eventually(WITHIN, "Ready", || async { (gateway_phase().await == Some(GatewayPhase::Ready)).then_some(()) }).await;
    let status = platforms.get(PLATFORM_NAME).await.unwrap().status.unwrap().ssh_gateway.unwrap();
    assert_eq!(status.observed_external_port, Some(2222));
    assert!(status.message.unwrap().contains("203.0.113.7"));

    let disable = json!({"spec": {"sshGateway": {"externalEnabled": false}}});
    platforms.patch(PLATFORM_NAME, &PatchParams::default(), &Patch::Merge(&disable)).await.unwrap();
    eventually(WITHIN, "Disabled", || async { (gateway_phase().await == Some(GatewayPhase::Disabled)).then_some(()) })
        .await;
    assert!(services.get_opt("kite-gateway-external").await.unwrap().is_none(), "disabled removes the Service");
    cluster.stop().await;
}

#[tokio::test]
async fn stopping_a_machine_is_observed_as_stopped() {
    let (mut cluster, ns) = alice_with_a_running_machine().await;
    let vms: Api<KiteVirtualMachine> = Api::namespaced(cluster.client.clone(), &ns);
    vms.patch("web", &PatchParams::default(), &Patch::Merge(json!({"spec": {"powerState": "Off"}}))).await.unwrap();
    let vm = eventually(WITHIN, "web to stop", || async {
        let vm = cluster.vm(&ns, "web").await?;
        (phase_of(&vm) == Some(VirtualMachinePhase::Stopped)).then_some(vm)
    })
    .await;
    assert_eq!(vm.status.unwrap().current_power_state, Some(PowerState::Off));
    let machine =
        Api::<DynamicObject>::namespaced_with(cluster.client.clone(), &ns, &resources::kubevirt_virtual_machine())
            .get("web")
            .await
            .unwrap();
    assert_eq!(machine.data["spec"]["runStrategy"], "Halted");
    cluster.stop().await;
}

#[tokio::test]
async fn the_gateway_may_read_each_machines_key_secret_and_no_other_secret() {
    use k8s_openapi::api::authorization::v1::SubjectAccessReview;
    use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
    let (mut cluster, ns) = alice_with_a_running_machine_on(Cluster::with_rbac().await).await;
    let client = cluster.client.clone();
    eventually(WITHIN, "the gateway's grant", || async {
        Api::<RoleBinding>::namespaced(client.clone(), &ns).get_opt("web-gateway-access").await.unwrap()
    })
    .await;
    let role = Api::<Role>::namespaced(client.clone(), &ns).get("web-gateway-access").await.unwrap();
    assert!(labels::is_managed_by_controller(role.metadata.labels.as_ref()));
    assert_eq!(role.owner_references()[0].name, "web");

    let reviews: Api<SubjectAccessReview> = Api::all(client.clone());
    let gateway = format!("system:serviceaccount:{PLATFORM_NS}:{GATEWAY_ACCOUNT}");
    let may_get = |namespace: &str, secret: &str| {
        let review: SubjectAccessReview = serde_json::from_value(json!({ "spec": { "user": gateway,
            "groups": ["system:serviceaccounts", format!("system:serviceaccounts:{PLATFORM_NS}"), "system:authenticated"],
            "resourceAttributes": { "namespace": namespace, "verb": "get", "resource": "secrets", "name": secret } } }))
        .unwrap();
        let reviews = reviews.clone();
        async move { reviews.create(&Default::default(), &review).await.unwrap().status.unwrap().allowed }
    };
    assert!(may_get(&ns, "web-ssh-key").await, "the machine's key Secret");
    assert!(!may_get(&ns, "web-cloud-init-userdata").await, "not its cloud-init Secret (its host key and password)");
    assert!(!may_get("kube-system", "web-ssh-key").await, "not another namespace");

    Api::<KiteVirtualMachine>::namespaced(client.clone(), &ns).delete("web", &DeleteParams::default()).await.unwrap();
    eventually(WITHIN, "the grant to go with the machine", || async {
        let role = Api::<Role>::namespaced(client.clone(), &ns).get_opt("web-gateway-access").await.unwrap();
        let binding = Api::<RoleBinding>::namespaced(client.clone(), &ns).get_opt("web-gateway-access").await.unwrap();
        (role.is_none() && binding.is_none()).then_some(())
    })
    .await;
    assert!(!may_get(&ns, "web-ssh-key").await);
    assert!(cluster.server.denials().is_empty(), "the controller was refused nothing: {:?}", cluster.server.denials());
    cluster.stop().await;
}

/// The IPv4 ranges the machines' egress policy in `namespace` refuses.
async fn refused_egress(cluster: &Cluster, namespace: &str) -> Option<Vec<String>> {
    let policies = Api::<NetworkPolicy>::namespaced(cluster.client.clone(), namespace);
    let egress = serde_json::to_value(policies.get_opt("kite-allow-vm-egress").await.unwrap()?).unwrap();
    let except = egress["spec"]["egress"][1]["to"][0]["ipBlock"]["except"].as_array()?.clone();
    Some(except.iter().filter_map(|v| v.as_str().map(String::from)).collect())
}

#[tokio::test]
async fn machines_are_kept_from_the_nodes_and_the_api_server_as_their_addresses_change() {
    use k8s_openapi::api::core::v1::Node;
    use k8s_openapi::api::discovery::v1::EndpointSlice;
    let mut cluster = Cluster::new().await;
    let nodes: Api<Node> = Api::all(cluster.client.clone());
    let node: Node = serde_json::from_value(json!({"metadata": {"name": "public-node"}})).unwrap();
    nodes.create(&Default::default(), &node).await.unwrap();
    let addresses = |external: &str| {
        json!({"status": {"addresses": [
            {"type": "InternalIP", "address": "10.0.0.5"},
            {"type": "ExternalIP", "address": external},
            {"type": "Hostname", "address": "public-node"}
        ]}})
    };
    let status = Patch::Merge(addresses("203.0.113.10"));
    nodes.patch_status("public-node", &PatchParams::default(), &status).await.unwrap();
    if Api::<Namespace>::all(cluster.client.clone()).get_opt("default").await.unwrap().is_none() {
        cluster.create_namespace("default", false).await;
    }
    let slice: EndpointSlice = serde_json::from_value(json!({
        "metadata": {"name": "kubernetes", "labels": {"kubernetes.io/service-name": "kubernetes"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["198.51.100.20"]}],
        "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}]
    }))
    .unwrap();
    Api::<EndpointSlice>::namespaced(cluster.client.clone(), "default")
        .create(&Default::default(), &slice)
        .await
        .unwrap();
    cluster.run();
    let ns = cluster.create_user(a_user("hana")).await.spec.namespace;
    let refused = eventually(WITHIN, "the egress policy to refuse the node and the API server", || async {
        let refused = refused_egress(&cluster, &ns).await?;
        (refused.iter().any(|r| r == "203.0.113.10/32") && refused.iter().any(|r| r == "198.51.100.20/32"))
            .then_some(refused)
    })
    .await;
    assert!(refused.iter().any(|r| r == "10.0.0.0/8"), "{refused:?}");
    // The node's public address changes: the policy follows, without the old one.
    let status = Patch::Merge(addresses("203.0.113.11"));
    nodes.patch_status("public-node", &PatchParams::default(), &status).await.unwrap();
    eventually(WITHIN, "the policy to follow the node's new address", || async {
        let refused = refused_egress(&cluster, &ns).await?;
        (refused.iter().any(|r| r == "203.0.113.11/32") && !refused.iter().any(|r| r == "203.0.113.10/32"))
            .then_some(())
    })
    .await;
    cluster.stop().await;
}

#[tokio::test]
async fn an_offer_nobody_claims_goes_at_its_expiry_and_a_claimed_one_stays() {
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    let mut cluster = Cluster::new().await;
    cluster.create_namespace("kite-user-ines", true).await;
    let offers: Api<KiteVirtualMachineOffer> = Api::namespaced(cluster.client.clone(), "kite-user-ines");
    let offer = |name: &str, in_seconds: i64| {
        let expires = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(in_seconds);
        KiteVirtualMachineOffer::new(
            name,
            KiteVirtualMachineOfferSpec {
                cpu: 1,
                memory: Quantity("1Gi".into()),
                disk: Quantity("20Gi".into()),
                image: "ubuntu-22.04".into(),
                expires_at: Time(expires),
                created_by: "ada".into(),
            },
        )
    };
    for (name, seconds) in [("soon", 2), ("later", 3600), ("taken", 2)] {
        offers.create(&Default::default(), &offer(name, seconds)).await.unwrap();
    }
    let claimed = json!({"status": {"phase": "Claimed", "claimedBy": "ines"}});
    offers.patch_status("taken", &PatchParams::default(), &Patch::Merge(&claimed)).await.unwrap();
    cluster.run();
    eventually(Duration::from_secs(15), "the unclaimed offer to go at its expiry", || async {
        offers.get_opt("soon").await.unwrap().is_none().then_some(())
    })
    .await;
    // Looked at again when it expired, not on a poll: it went within seconds of its time.
    assert!(offers.get_opt("later").await.unwrap().is_some(), "an offer still valid stays");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(offers.get_opt("taken").await.unwrap().is_some(), "a claimed offer stays");
    cluster.stop().await;
}

#[tokio::test]
async fn a_machines_certificate_is_copied_but_never_over_a_secret_kite_did_not_make() {
    let mut cluster = Cluster::new().await;
    let mut platform = a_platform();
    platform.base_domain = Some("vms.example.com".into());
    platform.machine_domains = MachineDomainsSpec {
        tls: MachineTls::PlatformCertificate,
        certificate_secret: Some("wildcard".into()),
        ..MachineDomainsSpec::default()
    };
    cluster.with_platform(platform).await;
    let certificate: Secret = serde_json::from_value(json!({
        "metadata": {"name": "wildcard", "namespace": "kite"}, "type": "kubernetes.io/tls",
        "data": {"tls.crt": "Y2VydA==", "tls.key": "a2V5"}
    }))
    .unwrap();
    Api::<Secret>::namespaced(cluster.client.clone(), "kite").create(&Default::default(), &certificate).await.unwrap();
    cluster.run();
    let ns = alice_ready(&cluster).await;
    // Someone's own Secret under the name the second machine's copy would take.
    let theirs: Secret = serde_json::from_value(json!({
        "metadata": {"name": "shop-tls", "namespace": ns}, "type": "kubernetes.io/tls",
        "data": {"tls.crt": "bWluZQ==", "tls.key": "bWluZQ=="}
    }))
    .unwrap();
    let secrets: Api<Secret> = Api::namespaced(cluster.client.clone(), &ns);
    secrets.create(&Default::default(), &theirs).await.unwrap();
    cluster.create_vm(&ns, a_vm("web").with_domain_prefix("web").build()).await;
    cluster.create_vm(&ns, a_vm("shop").with_ssh_id("alice_shop").with_domain_prefix("shop").build()).await;
    // The ingress controller publishes its address on each machine's Ingress.
    let ingresses: Api<k8s_openapi::api::networking::v1::Ingress> = Api::namespaced(cluster.client.clone(), &ns);
    for name in ["web", "shop"] {
        eventually(WITHIN, "the machine's Ingress", || async { ingresses.get_opt(name).await.unwrap().map(|_| ()) })
            .await;
        let address = json!({"status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.10"}]}}});
        ingresses.patch_status(name, &PatchParams::default(), &Patch::Merge(&address)).await.unwrap();
    }
    for name in ["web", "shop"] {
        eventually(WITHIN, "the machine to run with its HTTPS address", || async {
            let vm = cluster.vm(&ns, name).await?;
            (phase_of(&vm) == Some(VirtualMachinePhase::Running)
                && vm.status.as_ref()?.url.as_deref() == Some(&format!("https://{name}.vms.example.com")))
            .then_some(())
        })
        .await;
    }
    let copy = secrets.get("web-tls").await.unwrap();
    assert_eq!(copy.data.as_ref().unwrap()["tls.crt"].0, b"cert");
    assert!(labels::is_managed_by_controller(copy.metadata.labels.as_ref()));
    let left_alone = secrets.get("shop-tls").await.unwrap();
    assert_eq!(
        left_alone.data.as_ref().unwrap()["tls.crt"].0,
        b"mine",
        "a Secret Kite did not make is not written over"
    );
    assert!(!labels::is_managed_by_controller(left_alone.metadata.labels.as_ref()));
    // Deleting that machine leaves their Secret too.
    Api::<KiteVirtualMachine>::namespaced(cluster.client.clone(), &ns)
        .delete("shop", &DeleteParams::default())
        .await
        .unwrap();
    eventually(WITHIN, "shop to be gone", || async { cluster.vm(&ns, "shop").await.is_none().then_some(()) }).await;
    assert!(secrets.get_opt("shop-tls").await.unwrap().is_some());
    cluster.stop().await;
}

#[tokio::test]
async fn the_platforms_ingress_follows_its_settings_and_its_url_waits_for_an_address() {
    use k8s_openapi::api::networking::v1::Ingress;
    let mut cluster = Cluster::new().await;
    cluster.with_platform(KitePlatformSpec::default()).await;
    cluster.run();
    let ingresses: Api<Ingress> = Api::namespaced(cluster.client.clone(), PLATFORM_NS);
    let platforms: Api<KitePlatform> = Api::all(cluster.client.clone());
    // By default: one plain Ingress for any host, to the API.
    let plain =
        eventually(WITHIN, "the platform's Ingress", || async { ingresses.get_opt("kite-platform").await.unwrap() })
            .await;
    let rule = &plain.spec.as_ref().unwrap().rules.as_ref().unwrap()[0];
    assert_eq!(rule.host, None);
    assert_eq!(rule.http.as_ref().unwrap().paths[0].backend.service.as_ref().unwrap().name, "kite-api");
    let url = || async { platforms.get(PLATFORM_NAME).await.unwrap().status.and_then(|s| s.platform_url) };
    assert_eq!(url().await, None, "no address yet, so no URL");

    // A host and a certificate: HTTPS, a plain companion for the redirect, and the URL once there is an address.
    let secure =
        json!({"spec": {"platformIngress": {"host": "kite.example.org", "tlsSecret": "kite-tls", "forceHttps": true}}});
    platforms.patch(PLATFORM_NAME, &PatchParams::default(), &Patch::Merge(&secure)).await.unwrap();
    eventually(WITHIN, "the plain companion", || async { ingresses.get_opt("kite-platform-http").await.unwrap() })
        .await;
    let tls = ingresses.get("kite-platform").await.unwrap().spec.unwrap().tls.unwrap();
    assert_eq!(tls[0].secret_name.as_deref(), Some("kite-tls"));
    let address = json!({"status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.9"}]}}});
    ingresses.patch_status("kite-platform", &PatchParams::default(), &Patch::Merge(&address)).await.unwrap();
    eventually(WITHIN, "the platform's URL", || async {
        (url().await.as_deref() == Some("https://kite.example.org")).then_some(())
    })
    .await;

    // Disabled: both go.
    let off = json!({"spec": {"platformIngress": {"enabled": false, "forceHttps": false}}});
    platforms.patch(PLATFORM_NAME, &PatchParams::default(), &Patch::Merge(&off)).await.unwrap();
    eventually(WITHIN, "the Ingresses to go", || async {
        let left = ingresses.list(&Default::default()).await.unwrap().items;
        left.is_empty().then_some(())
    })
    .await;
    eventually(WITHIN, "the URL to go", || async { url().await.is_none().then_some(()) }).await;
    cluster.stop().await;
}

#[tokio::test]
async fn a_quota_written_in_other_units_is_not_rewritten_on_every_pass() {
    use k8s_openapi::api::core::v1::ResourceQuota;
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    let mut cluster = Cluster::new().await;
    let mut platform = a_platform();
    platform.tenant_quotas = vec![TenantQuota {
        access_level: AccessLevel::User,
        hard: [
            ("requests.cpu".to_string(), Quantity("0.5".into())),
            ("requests.memory".to_string(), Quantity("1024Mi".into())),
        ]
        .into(),
        container_limits: None,
    }];
    cluster.with_platform(platform).await;
    cluster.run();
    let user = cluster.create_user(a_user("alice")).await;
    let ns = user.spec.namespace.clone();
    let quotas: Api<ResourceQuota> = Api::namespaced(cluster.client.clone(), &ns);
    let quota = eventually(WITHIN, "alice's quota", || async {
        quotas.list(&ListParams::default()).await.unwrap().items.into_iter().next()
    })
    .await;
    // The server stores them as it writes quantities.
    let hard = quota.spec.unwrap().hard.unwrap();
    assert_eq!((hard["requests.cpu"].0.as_str(), hard["requests.memory"].0.as_str()), ("500m", "1Gi"));
    cluster.stop().await;
    let user = Api::<KiteUser>::all(cluster.client.clone()).get("alice").await.unwrap();
    cluster.server.reset_requests();
    let tenants = cluster.context(tenant::Config { platform_namespace: PLATFORM_NS.into() });
    tenant::reconcile(std::sync::Arc::new(user), tenants).await.unwrap();
    let writes = writes_of(&cluster);
    assert_eq!(writes, Vec::<String>::new(), "0.5 and 500m are the same quantity: nothing to write");
}
