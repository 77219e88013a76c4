//! The names a CustomResourceDefinition may take, as the API server's naming
//! controller decides them (`apiextensions-apiserver/pkg/controller/status/naming_controller.go`):
//! a name another CRD of the same group has already been given is refused,
//! with `NamesAccepted` `False` and the reason of the last conflict found,
//! and a CRD whose names are not all accepted is not served. It also names
//! the store of CRDs and the finalizer that holds a CRD being deleted.

use crate::registry::ResourceKey;
use crate::store::Store;
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// The finalizer the API server puts on a CRD being deleted, held until its objects are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// Whether `key` is the store of CustomResourceDefinitions.
pub fn is_crd_key(key: &ResourceKey) -> bool {
    key.group == "apiextensions.k8s.io" && key.plural == "customresourcedefinitions"
}

/// What the naming controller decided for one CRD.
pub(crate) struct Naming {
    /// `status.acceptedNames`: each requested name that is free or already this CRD's.
    pub accepted_names: Value,
    /// The `NamesAccepted` condition's status, reason and message.
    pub condition: (&'static str, &'static str, String),
}

impl Naming {
    /// Whether every requested name was accepted.
    pub fn accepted(&self) -> bool {
        self.condition.0 == "True"
    }
}

fn crds() -> ResourceKey {
    ResourceKey { group: "apiextensions.k8s.io".into(), plural: "customresourcedefinitions".into() }
}

/// The names the other CRDs of `group` were given: resources (plural,
/// singular, short names) and kinds (kind, list kind).
fn taken(store: &Store, group: &str, except: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut resources = BTreeSet::new();
    let mut kinds = BTreeSet::new();
    for (_, crd) in store.list(&crds()) {
        if crd["spec"]["group"] != group || crd["metadata"]["name"] == except {
            continue;
        }
        let names = &crd["status"]["acceptedNames"];
        let add = |set: &mut BTreeSet<String>, value: &Value| {
            if let Some(name) = value.as_str().filter(|n| !n.is_empty()) {
                set.insert(name.to_string());
            }
        };
        add(&mut resources, &names["plural"]);
        add(&mut resources, &names["singular"]);
        for short in names["shortNames"].as_array().into_iter().flatten() {
            add(&mut resources, short);
        }
        add(&mut kinds, &names["kind"]);
        add(&mut kinds, &names["listKind"]);
    }
    (resources, kinds)
}

/// `equalToAcceptedOrFresh`: a name is fine if it is already this CRD's, or nobody else's.
fn fresh(requested: &str, accepted: &str, used: &BTreeSet<String>) -> Result<(), String> {
    if requested == accepted || !used.contains(requested) {
        Ok(())
    } else {
        Err(format!("\"{requested}\" is already in use"))
    }
}

/// The names `crd` is given next to the other CRDs of its group.
pub(crate) fn decide(store: &Store, crd: &Value) -> Naming {
    let name = crd["metadata"]["name"].as_str().unwrap_or_default();
    let (resources, kinds) = taken(store, crd["spec"]["group"].as_str().unwrap_or_default(), name);
    let requested = &crd["spec"]["names"];
    let accepted = &crd["status"]["acceptedNames"];
    let text = |names: &Value, field: &str| names[field].as_str().unwrap_or_default().to_string();
    let kind = text(requested, "kind");
    let requested_singular = Some(text(requested, "singular")).filter(|s| !s.is_empty()).unwrap_or(kind.to_lowercase());
    let requested_list_kind =
        Some(text(requested, "listKind")).filter(|s| !s.is_empty()).unwrap_or(format!("{kind}List"));
    let mut names = if accepted.is_object() { accepted.clone() } else { json!({}) };
    let mut condition = None;
    let mut check = |field: &str, requested: &str, used: &BTreeSet<String>, reason: &'static str| match fresh(
        requested,
        &text(accepted, field),
        used,
    ) {
        Ok(()) => names[field] = json!(requested),
        Err(message) => condition = Some(("False", reason, message)),
    };
    check("plural", &text(requested, "plural"), &resources, "PluralConflict");
    check("singular", &requested_singular, &resources, "SingularConflict");
    let requested_short: Vec<&str> =
        requested["shortNames"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let accepted_short: Vec<&str> =
        accepted["shortNames"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    if requested_short != accepted_short {
        let conflicts: Vec<String> = requested_short
            .iter()
            .filter(|short| !accepted_short.contains(short))
            .filter_map(|short| fresh(short, "", &resources).err())
            .collect();
        match conflicts.len() {
            0 if requested_short.is_empty() => {
                if let Some(names) = names.as_object_mut() {
                    names.remove("shortNames");
                }
            }
            0 => names["shortNames"] = json!(requested_short),
            1 => condition = Some(("False", "ShortNamesConflict", conflicts[0].clone())),
            _ => condition = Some(("False", "ShortNamesConflict", format!("[{}]", conflicts.join(", ")))),
        }
    }
    let mut check =
        |field: &str, requested: &str, reason: &'static str| match fresh(requested, &text(accepted, field), &kinds) {
            Ok(()) => names[field] = json!(requested),
            Err(message) => condition = Some(("False", reason, message)),
        };
    check("kind", &kind, "KindConflict");
    check("listKind", &requested_list_kind, "ListKindConflict");
    if let Some(categories) = requested.get("categories") {
        names["categories"] = categories.clone();
    }
    Naming {
        accepted_names: names,
        condition: condition.unwrap_or(("True", "NoConflicts", "no conflicts found".to_string())),
    }
}
