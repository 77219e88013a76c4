//! Least privilege, per component: every permission each of Kite's three
//! components holds, at which scope, and why, as one table. The RBAC
//! objects of `kite manifests` are built from it, the book's table is
//! rendered from it, and the deployment test checks that the components
//! need every rule and nothing more.
//!
//! No rule has a `*`. The API and the gateway cannot read Secrets across
//! the cluster: the gateway reads a machine's `<vm>-ssh-key` through a Role
//! the controller makes for that machine alone (`kite_core::vm::desired::gateway_access_role`).

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use std::collections::BTreeMap;

/// One of Kite's components, each with its own ServiceAccount.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Component {
    /// `kite controller`: the reconcilers.
    Controller,
    /// `kite api`: the HTTP API and the web UI.
    Api,
    /// `kite gateway --kube`: the SSH gateway.
    Gateway,
}

impl Component {
    /// Every component.
    pub const ALL: [Component; 3] = [Component::Controller, Component::Api, Component::Gateway];

    /// Its name: of the ServiceAccount, the Deployment, the roles.
    pub fn name(self) -> &'static str {
        match self {
            Component::Controller => "kite-controller",
            Component::Api => "kite-api",
            Component::Gateway => "kite-gateway",
        }
    }

    /// Its short name, as a subcommand and the `app.kubernetes.io/component` label.
    pub fn short(self) -> &'static str {
        match self {
            Component::Controller => "controller",
            Component::Api => "api",
            Component::Gateway => "gateway",
        }
    }
}

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

/// The namespaces the grants name.
#[derive(Clone, Debug)]
pub struct Namespaces {
    /// The platform namespace, where Kite runs.
    pub platform: String,
    /// `KitePlatform.spec.goldenImageNamespace`.
    pub golden_images: String,
    /// `KitePlatform.spec.storage.longhornNamespace`.
    pub longhorn: String,
}

const KITE: &str = "hy3ons.github.io";
const READ: &[&str] = &["get", "list", "watch"];
const MANAGE: &[&str] = &["get", "list", "watch", "create", "patch", "delete"];

/// Every grant of every component.
pub fn grants(namespaces: &Namespaces) -> Vec<Grant> {
    use Component::{Api, Controller, Gateway};
    let cluster = || Scope::Cluster;
    let platform = || Scope::Namespace(namespaces.platform.clone());
    let grant = |component, scope, group, resources, verbs, why| Grant {
        component,
        scope,
        group,
        resources,
        verbs,
        names: Vec::new(),
        why,
    };
    let named = |mut grant: Grant, names: &[&str]| {
        grant.names = names.iter().map(|n| n.to_string()).collect();
        grant
    };
    vec![
        // The controller.
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
        // The API.
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
            &[crate::gateway::CONTROL_TOKEN_SECRET],
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
        // The gateway.
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
                crate::gateway::HOST_KEY_SECRET,
                crate::gateway::CONTROL_TOKEN_SECRET,
                kite_core::api::s3_credentials::SECRET,
            ],
        ),
    ]
}

fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: namespace.map(str::to_string),
        labels: Some(super::labels()),
        ..ObjectMeta::default()
    }
}

fn rule(grant: &Grant) -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec![grant.group.to_string()]),
        resources: Some(grant.resources.iter().map(|r| r.to_string()).collect()),
        verbs: grant.verbs.iter().map(|v| v.to_string()).collect(),
        resource_names: (!grant.names.is_empty()).then(|| grant.names.clone()),
        ..PolicyRule::default()
    }
}

fn subject(component: Component, platform: &str) -> Vec<Subject> {
    vec![Subject {
        kind: "ServiceAccount".into(),
        name: component.name().into(),
        namespace: Some(platform.into()),
        ..Subject::default()
    }]
}

/// The RBAC objects of every grant: per component, a ClusterRole and its
/// binding, and a Role and its binding in each namespace it has grants in.
pub fn objects(namespaces: &Namespaces) -> Result<Vec<serde_json::Value>, serde_json::Error> {
    let mut by_place: BTreeMap<(Component, Scope), Vec<PolicyRule>> = BTreeMap::new();
    for grant in grants(namespaces) {
        by_place.entry((grant.component, grant.scope.clone())).or_default().push(rule(&grant));
    }
    let mut objects = Vec::new();
    for ((component, scope), rules) in by_place {
        let name = component.name();
        let subjects = Some(subject(component, &namespaces.platform));
        let value = match scope {
            Scope::Cluster => {
                let role = ClusterRole { metadata: meta(name, None), rules: Some(rules), ..ClusterRole::default() };
                let binding = ClusterRoleBinding {
                    metadata: meta(name, None),
                    role_ref: RoleRef {
                        api_group: Some("rbac.authorization.k8s.io".into()),
                        kind: "ClusterRole".into(),
                        name: name.into(),
                    },
                    subjects,
                };
                [serde_json::to_value(role)?, serde_json::to_value(binding)?]
            }
            Scope::Namespace(namespace) => {
                let role = Role { metadata: meta(name, Some(&namespace)), rules: Some(rules) };
                let binding = RoleBinding {
                    metadata: meta(name, Some(&namespace)),
                    role_ref: RoleRef {
                        api_group: Some("rbac.authorization.k8s.io".into()),
                        kind: "Role".into(),
                        name: name.into(),
                    },
                    subjects,
                };
                [serde_json::to_value(role)?, serde_json::to_value(binding)?]
            }
        };
        objects.extend(value);
    }
    Ok(objects)
}

/// The book's table of every grant, in Markdown.
pub fn markdown_table(namespaces: &Namespaces) -> String {
    let mut table = String::from(
        "| component | scope | API group | resources | verbs | only | why |\n|---|---|---|---|---|---|---|\n",
    );
    for grant in grants(namespaces) {
        let scope = match &grant.scope {
            Scope::Cluster => "cluster".to_string(),
            Scope::Namespace(namespace) => format!("`{namespace}`"),
        };
        let group = if grant.group.is_empty() { "core".to_string() } else { format!("`{}`", grant.group) };
        let list = |items: &[&str]| items.iter().map(|i| format!("`{i}`")).collect::<Vec<_>>().join(", ");
        let names: Vec<&str> = grant.names.iter().map(String::as_str).collect();
        table.push_str(&format!(
            "| {} | {scope} | {group} | {} | {} | {} | {} |\n",
            grant.component.name(),
            list(grant.resources),
            list(grant.verbs),
            if names.is_empty() { "".to_string() } else { list(&names) },
            grant.why
        ));
    }
    table
}
