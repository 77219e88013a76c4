//! The real `kubectl` against `kite-fake-apiserver` over loopback: apply,
//! get (JSON, printer columns, watch), patch, delete waiting on a
//! finalizer, and a namespace going through Terminating.

mod common;

use common::kubectl::{require_kubectl, start_server};
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

const NS: &str = "kite-user-ku-4f9a1c2e-7b3d-4e8a-9c1f-2d5e6a7b8c9d";

#[test]
fn kubectl_works_against_the_fake_api_server() {
    require_kubectl();
    let dir = tempfile::tempdir().unwrap();
    let (_server, kubectl) = start_server(dir.path(), &["--simulate"]);

    let out = kubectl.ok(&["apply", "-f", "deploy/crds/kite-crds.yaml"]);
    assert_eq!(out.matches("created").count(), 4, "{out}");
    let namespace = format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {NS}\n");
    kubectl.ok_with(&["apply", "-f", "-"], Some(&namespace));
    let out = kubectl.ok(&["apply", "-f", "examples/manifests/"]);
    assert_eq!(out.matches("created").count(), 4, "one object of each kind: {out}");
    // A second apply changes nothing.
    let out = kubectl.ok(&["apply", "-f", "examples/manifests/"]);
    assert_eq!(out.matches("unchanged").count(), 4, "{out}");

    let json: serde_json::Value =
        serde_json::from_str(&kubectl.ok(&["-n", NS, "get", "ktvm", "web", "-o", "json"])).unwrap();
    assert_eq!(json["spec"]["sshId"], "alice-web");
    assert_eq!(json["metadata"]["generation"], 1);

    let table = kubectl.ok(&["-n", NS, "get", "kitevirtualmachines"]);
    let header: Vec<&str> =
        table.lines().next().unwrap().split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
    assert_eq!(header, ["NAME", "STATUS", "CPU", "MEM", "IMAGE", "SSH ID", "AGE"], "{table}");
    assert!(table.contains("alice-web"), "{table}");

    // A watch sees a merge patch.
    let mut watch = kubectl
        .command(&["-n", NS, "get", "ktvm", "web", "-w", "--output-watch-events"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = BufReader::new(watch.stdout.take().unwrap());
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in lines.lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                return;
            }
        }
    });
    let header = receiver.recv_timeout(Duration::from_secs(10)).expect("the watch prints a header");
    assert!(header.starts_with("EVENT"), "{header}");
    let first = receiver.recv_timeout(Duration::from_secs(10)).expect("the watch prints the object");
    assert!(first.contains("ADDED") && first.contains("alice-web"), "{first}");
    kubectl.ok(&["-n", NS, "patch", "ktvm", "web", "--type", "merge", "-p", r#"{"spec":{"cpu":4}}"#]);
    let modified = receiver.recv_timeout(Duration::from_secs(10)).expect("the watch prints the change");
    assert!(modified.contains("MODIFIED") && modified.contains(" 4 "), "{modified}");
    let _ = watch.kill();
    let _ = watch.wait();

    // A CEL rule of the CRD refuses an sshId change, with its message.
    let (success, _, stderr) = kubectl
        .run(&["-n", NS, "patch", "ktvm", "web", "--type", "merge", "-p", r#"{"spec":{"sshId":"other"}}"#], None);
    assert!(!success && stderr.contains("sshId cannot be changed"), "{stderr}");

    // delete waits on a finalizer.
    kubectl.ok(&[
        "-n",
        NS,
        "patch",
        "ktvm",
        "web",
        "--type",
        "merge",
        "-p",
        r#"{"metadata":{"finalizers":["example.com/hold"]}}"#,
    ]);
    let mut delete = kubectl
        .command(&["-n", NS, "delete", "ktvm", "web", "--timeout=20s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    assert!(delete.try_wait().unwrap().is_none(), "kubectl delete must wait while the finalizer holds the object");
    let marked = kubectl.ok(&["-n", NS, "get", "ktvm", "web", "-o", "jsonpath={.metadata.deletionTimestamp}"]);
    assert!(!marked.is_empty(), "the object is marked for deletion");
    kubectl.ok(&["-n", NS, "patch", "ktvm", "web", "--type", "merge", "-p", r#"{"metadata":{"finalizers":null}}"#]);
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = delete.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "kubectl delete did not finish after the finalizer was removed");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "kubectl delete failed");
    let (found, _, _) = kubectl.run(&["-n", NS, "get", "ktvm", "web"], None);
    assert!(!found, "the VM is gone");

    // A deleted namespace shows Terminating, then goes.
    kubectl.ok(&["delete", "namespace", NS, "--wait=false"]);
    let ns = kubectl.ok(&["get", "namespace", NS]);
    assert!(ns.contains("Terminating"), "{ns}");
    kubectl.ok(&["wait", "--for=delete", &format!("namespace/{NS}"), "--timeout=20s"]);
}
