//! The defaults the API server gives workloads on every write
//! (`pkg/apis/apps/v1/defaults.go`, `pkg/apis/batch/v1/defaults.go`): the
//! replicas, the update strategies `kubectl rollout status` reads, history
//! limits, and a Job's counts.

use serde_json::{Value, json};

/// Sets `object[field]` to `value` when it is missing or `null`.
fn default(object: &mut Value, field: &str, value: Value) {
    if object.get(field).is_none_or(Value::is_null) {
        object[field] = value;
    }
}

/// Applies the defaults of `kind` (in `apps` or `batch`) to `object`.
pub fn apply(kind: &str, object: &mut Value) {
    if !object["spec"].is_object() {
        return;
    }
    let spec = &mut object["spec"];
    match kind {
        "Deployment" => {
            default(spec, "replicas", json!(1));
            default(spec, "strategy", json!({ "type": "RollingUpdate" }));
            if spec["strategy"]["type"] == "RollingUpdate" {
                default(&mut spec["strategy"], "rollingUpdate", json!({}));
                default(&mut spec["strategy"]["rollingUpdate"], "maxUnavailable", json!("25%"));
                default(&mut spec["strategy"]["rollingUpdate"], "maxSurge", json!("25%"));
            }
            default(spec, "revisionHistoryLimit", json!(10));
            default(spec, "progressDeadlineSeconds", json!(600));
        }
        "ReplicaSet" => default(spec, "replicas", json!(1)),
        "StatefulSet" => {
            default(spec, "replicas", json!(1));
            default(spec, "podManagementPolicy", json!("OrderedReady"));
            default(spec, "updateStrategy", json!({ "type": "RollingUpdate" }));
            if spec["updateStrategy"]["type"] == "RollingUpdate" {
                default(&mut spec["updateStrategy"], "rollingUpdate", json!({ "partition": 0 }));
            }
            default(spec, "revisionHistoryLimit", json!(10));
            default(
                spec,
                "persistentVolumeClaimRetentionPolicy",
                json!({ "whenDeleted": "Retain", "whenScaled": "Retain" }),
            );
        }
        "DaemonSet" => {
            default(spec, "updateStrategy", json!({ "type": "RollingUpdate" }));
            if spec["updateStrategy"]["type"] == "RollingUpdate" {
                default(&mut spec["updateStrategy"], "rollingUpdate", json!({ "maxUnavailable": 1, "maxSurge": 0 }));
            }
            default(spec, "revisionHistoryLimit", json!(10));
        }
        "Job" => {
            if spec["completions"].is_null() && spec["parallelism"].is_null() {
                spec["completions"] = json!(1);
            }
            default(spec, "parallelism", json!(1));
            default(spec, "backoffLimit", json!(6));
            default(spec, "completionMode", json!("NonIndexed"));
            default(spec, "suspend", json!(false));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rollout_strategies_default_to_rolling_updates() {
        let mut set = json!({ "spec": { "template": {} } });
        apply("StatefulSet", &mut set);
        assert_eq!(
            set["spec"]["updateStrategy"],
            json!({ "type": "RollingUpdate", "rollingUpdate": { "partition": 0 } })
        );
        let mut deployment = json!({ "spec": { "replicas": 3, "strategy": { "type": "Recreate" } } });
        apply("Deployment", &mut deployment);
        assert_eq!(deployment["spec"]["replicas"], 3);
        assert!(
            deployment["spec"]["strategy"].get("rollingUpdate").is_none(),
            "a Recreate strategy gets no rolling update"
        );
    }
}
