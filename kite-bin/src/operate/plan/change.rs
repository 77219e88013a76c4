//! What a step changes, object by object, and how that is worked out from
//! what the cluster holds: [`kite_core::reconcile::apply::contains`] says
//! whether a live object already holds what is desired.

use super::owner::{Owner, describe};
use kite_core::reconcile::apply::contains;
use serde::Serialize;
use serde_json::Value;

/// What a step does to one object.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    /// It does not exist: it is created.
    Create,
    /// It exists and differs: it is updated.
    Update,
    /// It already holds what is desired: nothing is written.
    Unchanged,
    /// It is deleted.
    Delete,
    /// It is kept (the step's title says why).
    Keep,
}

/// One object a step changes.
#[derive(Serialize, Clone, Debug)]
pub struct Change {
    /// What happens to it.
    pub change: ChangeKind,
    /// `Kind namespace/name` or `Kind name`.
    pub object: String,
}

/// What applying `desired` would change, given the `live` object of each
/// (in the same order); and the objects of those names that are not `owner`'s.
pub fn compare(desired: &[Value], live: &[Option<Value>], owner: Owner) -> (Vec<Change>, Vec<String>) {
    let mut changes = Vec::new();
    let mut theirs = Vec::new();
    for (object, live) in desired.iter().zip(live) {
        let what = describe(object);
        let change = match live {
            None => ChangeKind::Create,
            Some(live) if !owner.owns(live) => {
                theirs.push(what);
                continue;
            }
            Some(live) if contains(live, object) => ChangeKind::Unchanged,
            Some(_) => ChangeKind::Update,
        };
        changes.push(Change { change, object: what });
    }
    (changes, theirs)
}

/// The same `change` to each of `objects`.
pub fn each(objects: &[Value], change: ChangeKind) -> Vec<Change> {
    objects.iter().map(|o| Change { change, object: describe(o) }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config_map(name: &str, data: &str, labels: Value) -> Value {
        json!({ "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": { "name": name, "namespace": "kite", "labels": labels }, "data": { "k": data } })
    }

    #[test]
    fn compare_says_what_applying_changes_and_refuses_what_is_not_the_owners() {
        let ours = json!({ "app.kubernetes.io/part-of": "kite" });
        let desired = vec![
            config_map("new", "a", ours.clone()),
            config_map("same", "a", ours.clone()),
            config_map("changed", "a", ours.clone()),
            config_map("theirs", "a", ours.clone()),
        ];
        let live = vec![
            None,
            Some(config_map("same", "a", ours.clone())),
            Some(config_map("changed", "b", ours)),
            Some(config_map("theirs", "a", json!({}))),
        ];
        let (changes, theirs) = compare(&desired, &live, Owner::Kite);
        let kinds: Vec<ChangeKind> = changes.iter().map(|c| c.change).collect();
        assert_eq!(kinds, [ChangeKind::Create, ChangeKind::Unchanged, ChangeKind::Update]);
        assert_eq!(changes[0].object, "ConfigMap kite/new");
        assert_eq!(theirs, ["ConfigMap kite/theirs"]);
    }
}
