//! RBAC as the API server's authorizer evaluates it
//! (`plugin/pkg/auth/authorizer/rbac`): the rules of the ClusterRoles bound
//! cluster-wide, and of the Roles and ClusterRoles bound in the request's
//! namespace, to the user, one of their groups, or their ServiceAccount;
//! aggregated ClusterRoles take the rules of the ClusterRoles their
//! selectors pick. `system:masters` may do everything.

use crate::identity::UserInfo;
use crate::registry::ResourceKey;
use crate::request_attributes::Attributes;
use crate::selector::{LabelSelector, labels_of};
use crate::store::Store;
use serde_json::Value;

fn key(plural: &str) -> ResourceKey {
    ResourceKey { group: "rbac.authorization.k8s.io".into(), plural: plural.into() }
}

fn listed(list: &Value, value: &str) -> bool {
    list.as_array().is_some_and(|l| l.iter().any(|x| x == "*" || x == value))
}

/// Whether `subject` of a binding (in `namespace`) is `user`.
fn subject_is(subject: &Value, user: &UserInfo, namespace: &str) -> bool {
    let name = subject["name"].as_str().unwrap_or_default();
    match subject["kind"].as_str() {
        Some("User") => user.name == name,
        Some("Group") => user.groups.iter().any(|g| g == name),
        Some("ServiceAccount") => {
            let account_namespace = subject["namespace"].as_str().filter(|n| !n.is_empty()).unwrap_or(namespace);
            user.name == format!("system:serviceaccount:{account_namespace}:{name}")
        }
        _ => false,
    }
}

fn binds(binding: &Value, user: &UserInfo, namespace: &str) -> bool {
    binding["subjects"].as_array().is_some_and(|s| s.iter().any(|s| subject_is(s, user, namespace)))
}

/// The rules of ClusterRole `name`, with those an aggregation rule adds.
fn cluster_role_rules(store: &Store, name: &str) -> Vec<Value> {
    let Some(role) = store.get(&key("clusterroles"), &(String::new(), name.to_string())) else { return Vec::new() };
    let mut rules = role["rules"].as_array().cloned().unwrap_or_default();
    for selector in role["aggregationRule"]["clusterRoleSelectors"].as_array().into_iter().flatten() {
        let text = crate::selector::selector_text(selector);
        let Ok(selector) = LabelSelector::parse(&text) else { continue };
        for (_, other) in store.list(&key("clusterroles")) {
            if other["metadata"]["name"] != name && !text.is_empty() && selector.matches(&labels_of(other)) {
                rules.extend(other["rules"].as_array().cloned().unwrap_or_default());
            }
        }
    }
    rules
}

fn rule_allows(rule: &Value, request: &Attributes) -> bool {
    if !listed(&rule["verbs"], request.verb) {
        return false;
    }
    match request.path {
        Some(path) => rule["nonResourceURLs"].as_array().is_some_and(|urls| {
            urls.iter().filter_map(Value::as_str).any(|url| {
                url == "*" || url == path || url.strip_suffix('*').is_some_and(|prefix| path.starts_with(prefix))
            })
        }),
        None => {
            let combined = match request.subresource {
                Some(sub) => format!("{}/{sub}", request.resource),
                None => request.resource.to_string(),
            };
            let resource_ok = rule["resources"].as_array().is_some_and(|resources| {
                resources.iter().filter_map(Value::as_str).any(|r| {
                    r == "*" || r == combined || request.subresource.is_some_and(|sub| r == format!("*/{sub}"))
                })
            });
            let names_ok = match rule["resourceNames"].as_array().filter(|n| !n.is_empty()) {
                None => true,
                Some(names) => request.name.is_some_and(|name| names.iter().any(|n| n == name)),
            };
            listed(&rule["apiGroups"], request.group) && resource_ok && names_ok
        }
    }
}

/// Every rule that applies to `user` for a request in `namespace` (cluster-wide when `None`).
pub(crate) fn rules_for(store: &Store, user: &UserInfo, namespace: Option<&str>) -> Vec<Value> {
    let mut rules = Vec::new();
    for (_, binding) in store.list(&key("clusterrolebindings")) {
        if binds(binding, user, "") && binding["roleRef"]["kind"] == "ClusterRole" {
            rules.extend(cluster_role_rules(store, binding["roleRef"]["name"].as_str().unwrap_or_default()));
        }
    }
    if let Some(namespace) = namespace {
        for (object_key, binding) in store.list(&key("rolebindings")) {
            if object_key.0 != namespace || !binds(binding, user, namespace) {
                continue;
            }
            let role = binding["roleRef"]["name"].as_str().unwrap_or_default();
            match binding["roleRef"]["kind"].as_str() {
                Some("ClusterRole") => rules.extend(cluster_role_rules(store, role)),
                Some("Role") => {
                    if let Some(role) = store.get(&key("roles"), &(namespace.to_string(), role.to_string())) {
                        rules.extend(role["rules"].as_array().cloned().unwrap_or_default());
                    }
                }
                _ => {}
            }
        }
    }
    rules
}

/// Whether `user` may make `request`.
pub(super) fn allows(store: &Store, user: &UserInfo, request: &Attributes) -> bool {
    user.groups.iter().any(|g| g == "system:masters")
        || rules_for(store, user, request.namespace).iter().any(|rule| rule_allows(rule, request))
}
