//! Least privilege, per component: the RBAC objects of `kite manifests` and
//! the book's table, both made from the table of [`grants`] (which the
//! deployment test checks the components need, every rule and nothing more).
//!
//! No rule has a `*`. The API and the gateway cannot read Secrets across
//! the cluster: the gateway reads a machine's `<vm>-ssh-key` through a Role
//! the controller makes for that machine alone (`kite_core::vm::desired::gateway_access_role`).

use super::labels::meta;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject};
use std::collections::BTreeMap;

pub use super::component::Component;
pub use super::grants::{Grant, Scope, grants};
pub use super::options::Namespaces;

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
