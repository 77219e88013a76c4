//! Least privilege, per component: every permission each of Kite's three
//! components holds, at which scope, and why, as one table, written one
//! part per component.

use super::component::Component;
use super::options::Namespaces;

/// Where a grant holds.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// Every namespace, and cluster-scoped kinds: a ClusterRole and a ClusterRoleBinding.
    Cluster,
    /// One namespace: a Role and a RoleBinding there.
    Namespace(String),
}

/// One rule a component holds, and why it needs it.
#[derive(Clone, Debug)]
pub struct Grant {
    /// Who holds it.
    pub component: Component,
    /// Where.
    pub scope: Scope,
    /// The API group (empty for the core group).
    pub group: &'static str,
    /// The resources (with `/subresource` where one is meant).
    pub resources: &'static [&'static str],
    /// The verbs.
    pub verbs: &'static [&'static str],
    /// Only these objects, where their names are known.
    pub names: Vec<String>,
    /// Why the component needs it.
    pub why: &'static str,
}

const KITE: &str = "hy3ons.github.io";
const READ: &[&str] = &["get", "list", "watch"];
const MANAGE: &[&str] = &["get", "list", "watch", "create", "patch", "delete"];

/// Every grant of every component: the controller's, then the API's, then the gateway's.
pub fn grants(namespaces: &Namespaces) -> Vec<Grant> {
    [controller_on_kite(), controller_on_tenants(), controller_on_machines()]
        .into_iter()
        .flatten()
        .chain(controller_in_namespaces(namespaces))
        .chain(api(namespaces))
        .chain(gateway(namespaces))
        .collect()
}

/// A grant to `component` of `verbs` on `resources` of `group`, at `scope`, for the reason `why`.
fn grant(
    component: Component,
    scope: Scope,
    group: &'static str,
    resources: &'static [&'static str],
    verbs: &'static [&'static str],
    why: &'static str,
) -> Grant {
    Grant { component, scope, group, resources, verbs, names: Vec::new(), why }
}

/// `grant`, on only the objects of these `names`.
fn named(mut grant: Grant, names: &[&str]) -> Grant {
    grant.names = names.iter().map(|n| n.to_string()).collect();
    grant
}

/// Every namespace, and cluster-scoped kinds.
fn cluster() -> Scope {
    Scope::Cluster
}

/// The controller's grants on Kite's own objects.
fn controller_on_kite() -> Vec<Grant> {
    use Component::Controller;
    vec![
        grant(
            Controller,
            cluster(),
            KITE,
            &["kiteusers"],
            &["list", "watch", "patch"],
            "watches users; adds and removes its finalizer",
        ),
        grant(
            Controller,
            cluster(),
            KITE,
            &["kiteusers/status"],
            &["patch"],
            "reports each tenant's namespace as observed",
        ),
        grant(
            Controller,
            cluster(),
            KITE,
            &["kitevirtualmachines"],
            &["list", "watch", "patch", "delete"],
            "watches machines; its finalizer; deletes a machine whose `spec.delete` is set",
        ),
        grant(Controller, cluster(), KITE, &["kitevirtualmachines/status"], &["patch"], "reports each machine's phase"),
        grant(
            Controller,
            cluster(),
            KITE,
            &["kitevirtualmachineoffers"],
            &["list", "watch", "delete"],
            "deletes an offer nobody claimed at its expiry",
        ),
        grant(Controller, cluster(), KITE, &["kiteplatforms"], READ, "reads the platform's settings"),
        grant(
            Controller,
            cluster(),
            KITE,
            &["kiteplatforms/status"],
            &["patch"],
            "reports storage, golden images and the gateway's address",
        ),
    ]
}

/// The controller's grants on what makes up a tenant: its namespace, secrets, Services, quota, policies, Ingresses and Events.
fn controller_on_tenants() -> Vec<Grant> {
    use Component::Controller;
    vec![
        grant(
            Controller,
            cluster(),
            "",
            &["namespaces"],
            MANAGE,
            "makes each tenant's namespace, and deletes it with its last user",
        ),
        grant(
            Controller,
            cluster(),
            "",
            &["secrets"],
            MANAGE,
            "each machine's `<vm>-ssh-key`, `<vm>-cloud-init-userdata` and `<vm>-tls` (a copy of the platform's certificate), in tenant namespaces",
        ),
        grant(
            Controller,
            cluster(),
            "",
            &["services"],
            MANAGE,
            "each machine's `vps-access-<vm>` and `vps-web-<vm>`, and `kite-gateway-external`",
        ),
        grant(Controller, cluster(), "", &["persistentvolumeclaims"], &["get", "patch"], "grows a machine's disk"),
        grant(
            Controller,
            cluster(),
            "",
            &["nodes"],
            &["list", "watch"],
            "the nodes' addresses, which tenants' machines may not reach",
        ),
        grant(Controller, cluster(), "", &["resourcequotas", "limitranges"], MANAGE, "each tenant's quota"),
        grant(
            Controller,
            cluster(),
            "networking.k8s.io",
            &["networkpolicies"],
            &["get", "list", "watch", "create", "patch"],
            "each tenant's five NetworkPolicies",
        ),
        grant(
            Controller,
            cluster(),
            "networking.k8s.io",
            &["ingresses"],
            MANAGE,
            "each machine's Ingress for `<domainPrefix>.<baseDomain>`, and the platform's `kite-platform`",
        ),
        grant(
            Controller,
            cluster(),
            "events.k8s.io",
            &["events"],
            &["create", "patch"],
            "Events on users, machines and the platform",
        ),
    ]
}

/// The controller's grants on the machines, their disks and storage, and the roles it makes for them.
fn controller_on_machines() -> Vec<Grant> {
    use Component::Controller;
    vec![
        grant(
            Controller,
            cluster(),
            "cdi.kubevirt.io",
            &["datavolumes"],
            MANAGE,
            "each machine's disk, cloned from a golden image; the golden images",
        ),
        grant(Controller, cluster(), "kubevirt.io", &["virtualmachines"], MANAGE, "each machine"),
        grant(
            Controller,
            cluster(),
            "kubevirt.io",
            &["virtualmachineinstances"],
            READ,
            "the node a running machine is on (watched)",
        ),
        grant(
            Controller,
            cluster(),
            "storage.k8s.io",
            &["storageclasses"],
            MANAGE,
            "the single-replica Longhorn StorageClass",
        ),
        grant(
            Controller,
            cluster(),
            "rbac.authorization.k8s.io",
            &["roles", "rolebindings"],
            MANAGE,
            "the golden-image cloner Role, and each machine's grant to the gateway",
        ),
    ]
}

/// The controller's grants within one namespace: its leader election's Lease, the golden images' clone source, Longhorn's nodes and the API server's addresses.
fn controller_in_namespaces(namespaces: &Namespaces) -> Vec<Grant> {
    use Component::Controller;
    let platform = || Scope::Namespace(namespaces.platform.clone());
    vec![
        grant(
            Controller,
            platform(),
            "coordination.k8s.io",
            &["leases"],
            &["create"],
            "leader election: the Lease, made once",
        ),
        named(
            grant(Controller, platform(), "coordination.k8s.io", &["leases"], &["get", "patch"], "leader election"),
            &[crate::controller::LEASE_NAME],
        ),
        grant(
            Controller,
            Scope::Namespace(namespaces.golden_images.clone()),
            "cdi.kubevirt.io",
            &["datavolumes/source"],
            &["create"],
            "CDI allows a clone from a golden image to whoever may create its source; Kubernetes lets the controller grant that to itself only if it holds it",
        ),
        grant(
            Controller,
            Scope::Namespace(namespaces.longhorn.clone()),
            "longhorn.io",
            &["nodes"],
            &["list", "watch"],
            "whether Longhorn is ready (watched, not polled)",
        ),
        grant(
            Controller,
            Scope::Namespace("default".into()),
            "discovery.k8s.io",
            &["endpointslices"],
            &["list", "watch"],
            "the API server's addresses (the `kubernetes` Service's), which tenants' machines may not reach",
        ),
    ]
}

/// The API's grants.
fn api(namespaces: &Namespaces) -> Vec<Grant> {
    use Component::Api;
    let platform = || Scope::Namespace(namespaces.platform.clone());
    vec![
        grant(Api, cluster(), KITE, &["kiteusers"], MANAGE, "sign-up, sign-in, and the administrators' user pages"),
        grant(
            Api,
            cluster(),
            KITE,
            &["kitevirtualmachines"],
            &["get", "list", "watch", "create", "patch"],
            "users' machines: create, power, password, delete intent",
        ),
        grant(
            Api,
            cluster(),
            KITE,
            &["kitevirtualmachineoffers"],
            &["list", "watch", "create", "delete"],
            "offers of machines to users",
        ),
        grant(Api, cluster(), KITE, &["kitevirtualmachineoffers/status"], &["patch"], "claims an offer"),
        grant(
            Api,
            cluster(),
            KITE,
            &["kiteplatforms"],
            &["list", "watch", "create", "patch"],
            "the administrators' settings page",
        ),
        grant(Api, platform(), "", &["secrets"], &["create"], "the session signing key, made once"),
        named(
            grant(Api, platform(), "", &["secrets"], &["get", "delete"], "the session signing key"),
            &[crate::api::session::KEY_SECRET],
        ),
        named(
            grant(Api, platform(), "", &["secrets"], &["get"], "the gateway's control token (the sessions pages)"),
            &[crate::names::CONTROL_TOKEN_SECRET],
        ),
        grant(
            Api,
            platform(),
            "",
            &["configmaps"],
            &["get", "list", "create", "delete"],
            "reservations of unique names (hashed, so not nameable); records of redeemed console tickets, swept when stale",
        ),
        grant(
            Api,
            cluster(),
            "subresources.kubevirt.io",
            &["virtualmachineinstances/console"],
            &["get"],
            "the serial console in the web UI (after its own owner check)",
        ),
    ]
}

/// The gateway's grants.
fn gateway(namespaces: &Namespaces) -> Vec<Grant> {
    use Component::Gateway;
    let platform = || Scope::Namespace(namespaces.platform.clone());
    vec![
        grant(
            Gateway,
            cluster(),
            KITE,
            &["kitevirtualmachines", "kiteusers"],
            &["list", "watch"],
            "routes `ssh <id>@host` to a machine; users' public keys",
        ),
        named(
            grant(
                Gateway,
                cluster(),
                KITE,
                &["kiteplatforms"],
                &["get", "list", "watch"],
                "its session recording settings",
            ),
            &[kite_core::api::PLATFORM_NAME],
        ),
        grant(Gateway, platform(), "", &["secrets"], &["create"], "its host key and control token, made once"),
        named(
            grant(
                Gateway,
                platform(),
                "",
                &["secrets"],
                &["get"],
                "its host key and control token, shared by its replicas; the S3 store's keys",
            ),
            &[
                crate::names::HOST_KEY_SECRET,
                crate::names::CONTROL_TOKEN_SECRET,
                kite_core::api::s3_credentials::SECRET,
            ],
        ),
    ]
}
