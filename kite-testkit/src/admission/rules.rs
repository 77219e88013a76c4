//! Which webhooks a request meets: a webhook's `rules` (operations, API
//! groups, versions, resources with `*` and `resource/subresource`, scope),
//! its `namespaceSelector` and its `objectSelector`
//! (`k8s.io/apiserver/pkg/admission/plugin/webhook/predicates`).

use crate::selector::{LabelSelector, labels_of};
use serde_json::Value;

/// What a request is, for matching.
pub(crate) struct Attributes<'a> {
    /// `CREATE`, `UPDATE` or `DELETE`.
    pub operation: &'a str,
    /// The API group.
    pub group: &'a str,
    /// The version.
    pub version: &'a str,
    /// The resource (plural).
    pub resource: &'a str,
    /// The subresource, empty for the main resource.
    pub subresource: &'a str,
    /// Whether the resource is namespaced.
    pub namespaced: bool,
    /// The object (the old one for a delete).
    pub object: &'a Value,
    /// The labels of the object's namespace; `None` for a cluster-scoped object.
    pub namespace_labels: Option<&'a Value>,
}

fn listed(list: &Value, value: &str) -> bool {
    list.as_array().is_some_and(|l| l.iter().any(|x| x == "*" || x == value))
}

fn rule_matches(rule: &Value, request: &Attributes) -> bool {
    let resource = if request.subresource.is_empty() {
        request.resource.to_string()
    } else {
        format!("{}/{}", request.resource, request.subresource)
    };
    let resource_ok = rule["resources"].as_array().is_some_and(|resources| {
        resources.iter().filter_map(Value::as_str).any(|r| {
            r == "*/*"
                || r == resource
                || (r == "*" && request.subresource.is_empty())
                || r.strip_suffix("/*").is_some_and(|main| main == request.resource && !request.subresource.is_empty())
                || r.strip_prefix("*/").is_some_and(|sub| sub == request.subresource)
        })
    });
    let scope_ok = match rule["scope"].as_str().unwrap_or("*") {
        "Cluster" => !request.namespaced,
        "Namespaced" => request.namespaced,
        _ => true,
    };
    listed(&rule["operations"], request.operation)
        && listed(&rule["apiGroups"], request.group)
        && listed(&rule["apiVersions"], request.version)
        && resource_ok
        && scope_ok
}

/// Whether a `LabelSelector` selects `labels` (an empty or missing one selects everything).
fn selects(selector: &Value, labels_of_object: &Value) -> bool {
    let text = crate::selector::selector_text(selector);
    if text.is_empty() {
        return true;
    }
    let labels = labels_of(&serde_json::json!({ "metadata": { "labels": labels_of_object } }));
    LabelSelector::parse(&text).is_ok_and(|s| s.matches(&labels))
}

/// Whether `webhook` is called for `request`.
pub(crate) fn matches(webhook: &Value, request: &Attributes) -> bool {
    let rules = webhook["rules"].as_array().into_iter().flatten().any(|rule| rule_matches(rule, request));
    let namespace_ok = match request.namespace_labels {
        Some(labels) => selects(&webhook["namespaceSelector"], labels),
        None => true,
    };
    rules && namespace_ok && selects(&webhook["objectSelector"], &request.object["metadata"]["labels"])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request<'a>(operation: &'a str, object: &'a Value, namespace: Option<&'a Value>) -> Attributes<'a> {
        Attributes {
            operation,
            group: "longhorn.io",
            version: "v1beta2",
            resource: "volumes",
            subresource: "",
            namespaced: true,
            object,
            namespace_labels: namespace,
        }
    }

    #[test]
    fn rules_and_selectors_decide() {
        let webhook = json!({ "rules": [{ "operations": ["CREATE", "DELETE"], "apiGroups": ["longhorn.io"], "apiVersions": ["*"],
            "resources": ["volumes"], "scope": "Namespaced" }],
            "namespaceSelector": { "matchExpressions": [{ "key": "skip", "operator": "DoesNotExist" }] } });
        let object = json!({ "metadata": { "labels": { "app": "x" } } });
        let plain = json!({});
        let skipped = json!({ "skip": "true" });
        assert!(matches(&webhook, &request("DELETE", &object, Some(&plain))));
        assert!(!matches(&webhook, &request("UPDATE", &object, Some(&plain))), "not an operation it names");
        assert!(!matches(&webhook, &request("CREATE", &object, Some(&skipped))), "the namespace is not selected");
        let status = Attributes { subresource: "status", ..request("CREATE", &object, Some(&plain)) };
        assert!(!matches(&webhook, &status), "a subresource is named on its own");
    }
}
