//! Workloads on `kite-fake-apiserver`, driven with the real kubectl: a
//! Deployment rolls out (`rollout status`, `wait --for=condition=Available`),
//! scales, and rolls a new image out; a Service lists its ready pods in an
//! EndpointSlice; pods that cannot pull or that crash say so.

mod common;

use common::kubectl::{fresh, json, until};
use serde_json::Value;

fn items(list: &Value) -> Vec<Value> {
    list["items"].as_array().cloned().unwrap_or_default()
}

#[test]
fn a_deployment_rolls_out_scales_and_rolls_a_new_image_out() {
    let (_dir, _server, kubectl) = fresh(&[]);
    kubectl.ok(&["create", "namespace", "team"]);
    kubectl.ok(&["create", "deployment", "web", "-n", "team", "--image=nginx:1.26", "--replicas=2", "--port=80"]);
    let out = kubectl.ok(&["rollout", "status", "deployment/web", "-n", "team", "--timeout=20s"]);
    assert!(out.contains("deployment \"web\" successfully rolled out"), "{out}");
    kubectl.ok(&["wait", "--for=condition=Available", "deployment/web", "-n", "team", "--timeout=10s"]);
    let pods = items(&json(&kubectl.ok(&["get", "pods", "-n", "team", "-l", "app=web", "-o", "json"])));
    assert_eq!(pods.len(), 2);
    for pod in &pods {
        assert_eq!(pod["status"]["phase"], "Running", "{pod}");
        assert!(pod["status"]["podIP"].as_str().is_some_and(|ip| ip.starts_with("10.42.")), "{pod}");
        assert_eq!(pod["spec"]["nodeName"], "kite-node-1");
        assert_eq!(pod["metadata"]["ownerReferences"][0]["kind"], "ReplicaSet");
    }
    let deployment = json(&kubectl.ok(&["get", "deployment", "web", "-n", "team", "-o", "json"]));
    let status = &deployment["status"];
    assert_eq!(
        (status["replicas"].as_i64(), status["updatedReplicas"].as_i64(), status["availableReplicas"].as_i64()),
        (Some(2), Some(2), Some(2))
    );
    assert_eq!(status["observedGeneration"], deployment["metadata"]["generation"]);
    let progressing = status["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "Progressing").unwrap();
    assert_eq!(progressing["reason"], "NewReplicaSetAvailable", "{progressing}");

    kubectl.ok(&["scale", "deployment", "web", "-n", "team", "--replicas=3"]);
    kubectl.ok(&["rollout", "status", "deployment/web", "-n", "team", "--timeout=20s"]);
    assert_eq!(items(&json(&kubectl.ok(&["get", "pods", "-n", "team", "-o", "json"]))).len(), 3);

    kubectl.ok(&["set", "image", "deployment/web", "-n", "team", "nginx=nginx:1.27"]);
    kubectl.ok(&["rollout", "status", "deployment/web", "-n", "team", "--timeout=20s"]);
    let sets = items(&json(&kubectl.ok(&["get", "replicasets", "-n", "team", "-o", "json"])));
    let mut replicas: Vec<(String, i64)> = sets
        .iter()
        .map(|s| {
            (
                s["spec"]["template"]["spec"]["containers"][0]["image"].as_str().unwrap().to_string(),
                s["spec"]["replicas"].as_i64().unwrap(),
            )
        })
        .collect();
    replicas.sort();
    assert_eq!(replicas, [("nginx:1.26".to_string(), 0), ("nginx:1.27".to_string(), 3)]);
    let history = kubectl.ok(&["rollout", "history", "deployment/web", "-n", "team"]);
    assert!(history.contains("1 ") && history.contains("2 "), "{history}");
    let pods = items(&json(&kubectl.ok(&["get", "pods", "-n", "team", "-o", "json"])));
    assert!(pods.iter().all(|p| p["spec"]["containers"][0]["image"] == "nginx:1.27"), "the old pods are gone");
}

#[test]
fn a_service_lists_the_ready_pods_it_selects() {
    let (_dir, _server, kubectl) = fresh(&[]);
    kubectl.ok(&["create", "namespace", "team"]);
    kubectl.ok(&["create", "deployment", "web", "-n", "team", "--image=nginx", "--replicas=2", "--port=80"]);
    kubectl.ok(&["expose", "deployment", "web", "-n", "team", "--port=8080", "--target-port=80"]);
    let args = ["get", "endpointslices", "-n", "team", "-l", "kubernetes.io/service-name=web", "-o", "json"];
    let slices = until(&kubectl, &args, "two ready endpoints", |list| {
        items(list).first().is_some_and(|s| {
            s["endpoints"]
                .as_array()
                .is_some_and(|e| e.len() == 2 && e.iter().all(|e| e["conditions"]["ready"] == true))
        })
    });
    let slice = &items(&slices)[0];
    assert_eq!(slice["ports"][0]["port"], 80, "the target port: {slice}");
    assert_eq!(slice["metadata"]["ownerReferences"][0]["kind"], "Service");
    assert_eq!(slice["endpoints"][0]["targetRef"]["kind"], "Pod");
    let endpoints = json(&kubectl.ok(&["get", "endpoints", "web", "-n", "team", "-o", "json"]));
    assert_eq!(endpoints["subsets"][0]["addresses"].as_array().map(Vec::len), Some(2), "{endpoints}");
    kubectl.ok(&["delete", "service", "web", "-n", "team"]);
    until(&kubectl, &["get", "endpointslices,endpoints", "-n", "team", "-o", "json"], "the endpoints to go", |list| {
        items(list).is_empty()
    });
}

#[test]
fn pods_that_cannot_pull_or_that_crash_say_so() {
    let (_dir, _server, kubectl) = fresh(&["--missing-image", "nginx:broken"]);
    kubectl.ok(&["create", "namespace", "team"]);
    kubectl.ok(&["create", "deployment", "pull", "-n", "team", "--image=nginx:broken"]);
    let (ok, _, _) = kubectl.run(&["rollout", "status", "deployment/pull", "-n", "team", "--timeout=2s"], None);
    assert!(!ok, "a rollout whose image cannot be pulled does not finish");
    let pods =
        until(&kubectl, &["get", "pods", "-n", "team", "-l", "app=pull", "-o", "json"], "ImagePullBackOff", |l| {
            items(l).first().is_some_and(|p| {
                p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "ImagePullBackOff"
            })
        });
    assert_eq!(items(&pods)[0]["status"]["phase"], "Pending");
    let deployment = json(&kubectl.ok(&["get", "deployment", "pull", "-n", "team", "-o", "json"]));
    let available = deployment["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Available")
        .unwrap()
        .clone();
    assert_eq!(
        (available["status"].as_str(), available["reason"].as_str()),
        (Some("False"), Some("MinimumReplicasUnavailable"))
    );

    kubectl.ok(&["create", "deployment", "crash", "-n", "team", "--image=nginx"]);
    let annotate =
        r#"{"spec":{"template":{"metadata":{"annotations":{"kite-testkit.hy3ons.github.io/crash":"true"}}}}}"#;
    kubectl.ok(&["patch", "deployment", "crash", "-n", "team", "--type=merge", "-p", annotate]);
    until(&kubectl, &["get", "pods", "-n", "team", "-l", "app=crash", "-o", "json"], "CrashLoopBackOff", |l| {
        let pods = items(l);
        !pods.is_empty()
            && pods.iter().all(|p| {
                p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "CrashLoopBackOff"
                    && p["status"]["containerStatuses"][0]["restartCount"] == 1
            })
    });
}

const STATEFUL_AND_DAEMON: &str = "apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: team}
spec:
  serviceName: db
  replicas: 3
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: postgres:16}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: team}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: agent, image: busybox}]}
";

#[test]
fn stateful_sets_come_up_in_order_and_daemon_sets_on_the_node() {
    let (_dir, _server, kubectl) = fresh(&[]);
    kubectl.ok(&["create", "namespace", "team"]);
    kubectl.ok_with(&["apply", "-f", "-"], Some(STATEFUL_AND_DAEMON));
    let out = kubectl.ok(&["rollout", "status", "statefulset/db", "-n", "team", "--timeout=20s"]);
    assert!(
        out.contains("Waiting for") && out.contains("partitioned roll out complete: 3 new pods have been updated"),
        "{out}"
    );
    let pods = kubectl.ok(&["get", "pods", "-n", "team", "-l", "app=db", "-o", "name"]);
    assert_eq!(pods.lines().collect::<Vec<_>>(), ["pod/db-0", "pod/db-1", "pod/db-2"]);
    let claims = kubectl.ok(&["get", "pvc", "-n", "team", "-o", "name"]);
    assert_eq!(claims.lines().count(), 3, "one claim per pod: {claims}");
    let first = json(&kubectl.ok(&["get", "pod", "db-0", "-n", "team", "-o", "json"]));
    assert_eq!((first["spec"]["hostname"].as_str(), first["spec"]["subdomain"].as_str()), (Some("db-0"), Some("db")));
    kubectl.ok(&["set", "image", "statefulset/db", "-n", "team", "db=postgres:17"]);
    kubectl.ok(&["rollout", "status", "statefulset/db", "-n", "team", "--timeout=20s"]);
    let images = kubectl.ok(&[
        "get",
        "pods",
        "-n",
        "team",
        "-l",
        "app=db",
        "-o",
        "jsonpath={.items[*].spec.containers[0].image}",
    ]);
    assert_eq!(images, "postgres:17 postgres:17 postgres:17");
    let out = kubectl.ok(&["rollout", "status", "daemonset/agent", "-n", "team", "--timeout=20s"]);
    assert!(out.contains("daemon set \"agent\" successfully rolled out"), "{out}");
    let agent = json(&kubectl.ok(&["get", "pods", "-n", "team", "-l", "app=agent", "-o", "json"]));
    assert_eq!(items(&agent).len(), 1);
    assert_eq!(items(&agent)[0]["spec"]["nodeName"], "kite-node-1");
}

const FAILING_JOB: &str = "apiVersion: batch/v1
kind: Job
metadata: {name: fails, namespace: team}
spec:
  backoffLimit: 1
  template:
    metadata: {annotations: {kite-testkit.hy3ons.github.io/crash: \"true\"}}
    spec: {restartPolicy: Never, containers: [{name: job, image: busybox}]}
";

#[test]
fn jobs_complete_or_fail_past_their_backoff_limit() {
    let (_dir, _server, kubectl) = fresh(&[]);
    kubectl.ok(&["create", "namespace", "team"]);
    kubectl.ok(&["create", "job", "once", "-n", "team", "--image=busybox"]);
    kubectl.ok(&["wait", "--for=condition=Complete", "job/once", "-n", "team", "--timeout=10s"]);
    let job = json(&kubectl.ok(&["get", "job", "once", "-n", "team", "-o", "json"]));
    assert_eq!((job["status"]["succeeded"].as_i64(), job["status"]["active"].as_i64()), (Some(1), Some(0)));
    assert!(job["status"]["completionTime"].is_string(), "{job}");
    let pod = &items(&json(&kubectl.ok(&["get", "pods", "-n", "team", "-l", "job-name=once", "-o", "json"])))[0];
    assert_eq!(pod["status"]["phase"], "Succeeded");
    assert_eq!(pod["status"]["containerStatuses"][0]["state"]["terminated"]["reason"], "Completed");

    kubectl.ok_with(&["apply", "-f", "-"], Some(FAILING_JOB));
    kubectl.ok(&["wait", "--for=condition=Failed", "job/fails", "-n", "team", "--timeout=10s"]);
    let job = json(&kubectl.ok(&["get", "job", "fails", "-n", "team", "-o", "json"]));
    assert_eq!(job["status"]["failed"], 2, "the first try and one retry: {job}");
    let failed =
        job["status"]["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "Failed").unwrap().clone();
    assert_eq!(
        (failed["reason"].as_str(), failed["message"].as_str()),
        (Some("BackoffLimitExceeded"), Some("Job has reached the specified backoff limit"))
    );
}
