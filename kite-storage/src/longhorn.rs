//! Whether Longhorn can place a volume of the StorageClass: a Ready,
//! schedulable disk carrying every tag of the class's `diskSelector`, on a
//! Ready node that allows scheduling.
//!
//! Longhorn keeps this in its `nodes.longhorn.io` objects: `spec.disks.<disk>`
//! has `allowScheduling` and `tags`; `status.diskStatus.<disk>.conditions`
//! has `Ready` and `Schedulable`.

use serde_json::Value;

/// What was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Readiness {
    /// Whether a usable disk exists.
    pub ready: bool,
    /// A CamelCase reason.
    pub reason: &'static str,
    /// A sentence for the operator.
    pub message: String,
}

fn condition_true(conditions: &Value, type_: &str) -> bool {
    match conditions {
        // Longhorn writes conditions as a list; older versions as a map by type.
        Value::Array(list) => list.iter().any(|c| c["type"] == type_ && c["status"] == "True"),
        Value::Object(map) => map.get(type_).is_some_and(|c| c["status"] == "True"),
        _ => false,
    }
}

/// The disks of `nodes` that can hold a volume with `tags`, as `node/disk`.
pub fn usable_disks(nodes: &[Value], tags: &[&str]) -> Vec<String> {
    let mut usable = Vec::new();
    for node in nodes {
        let node_name = node["metadata"]["name"].as_str().unwrap_or("?");
        if node["spec"]["allowScheduling"] == Value::Bool(false)
            || !condition_true(&node["status"]["conditions"], "Ready")
        {
            continue;
        }
        let Some(disks) = node["spec"]["disks"].as_object() else { continue };
        for (disk_name, disk) in disks {
            let disk_tags: Vec<&str> =
                disk["tags"].as_array().map(|t| t.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
            let status = &node["status"]["diskStatus"][disk_name]["conditions"];
            if disk["allowScheduling"] == Value::Bool(true)
                && tags.iter().all(|tag| disk_tags.contains(tag))
                && condition_true(status, "Ready")
                && condition_true(status, "Schedulable")
            {
                usable.push(format!("{node_name}/{disk_name}"));
            }
        }
    }
    usable
}

/// The readiness for a `diskSelector` (comma-separated tags) over `nodes`.
///
/// ```
/// use serde_json::json;
/// let node = json!({
///     "metadata": {"name": "n1"},
///     "spec": {"allowScheduling": true, "disks": {"d1": {"allowScheduling": true, "tags": ["kite"]}}},
///     "status": {"conditions": [{"type": "Ready", "status": "True"}],
///                "diskStatus": {"d1": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Schedulable", "status": "True"}]}}}
/// });
/// assert!(kite_storage::longhorn::readiness(&[node.clone()], "kite").ready);
/// assert!(!kite_storage::longhorn::readiness(&[node], "kite,ssd").ready);
/// ```
pub fn readiness(nodes: &[Value], disk_selector: &str) -> Readiness {
    let tags: Vec<&str> = disk_selector.split(',').map(str::trim).filter(|t| !t.is_empty()).collect();
    let tagged = if tags.is_empty() { "any disk".to_string() } else { format!("a disk tagged {}", tags.join(", ")) };
    if nodes.is_empty() {
        return Readiness {
            ready: false,
            reason: "NoLonghornNodes",
            message: "Longhorn reports no nodes; is it running?".into(),
        };
    }
    let usable = usable_disks(nodes, &tags);
    match usable.is_empty() {
        true => Readiness {
            ready: false,
            reason: "NoSchedulableDisk",
            message: format!(
                "No Ready, schedulable Longhorn disk is {tagged}: volumes cannot be placed. Add the tag to a disk in Longhorn's node settings."
            ),
        },
        false => Readiness {
            ready: true,
            reason: "DiskAvailable",
            message: format!("Longhorn can place volumes on {}.", usable.join(", ")),
        },
    }
}
