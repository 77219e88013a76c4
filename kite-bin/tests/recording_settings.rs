//! `KitePlatform.spec.sessionRecording` as the gateway follows it, with
//! `kite demo` (whose gateway keeps its store under the state folder), the
//! real kubectl, the real OpenSSH client and sshd guests, and moto's S3
//! server: sessions are recorded by default; switched `Off`, the next
//! session is audited but not recorded; pointed at a bucket, with its keys in
//! the Secret `kite-gateway-s3`, the next session's events and recording
//! land in the bucket, and the API lists it from there.

mod support;

use kite_testkit::fixtures::eventually;
use kite_testkit::moto::{ACCESS_KEY_ID, Moto, SECRET_ACCESS_KEY};
use kite_testkit::openssh::{free_port, require, text};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;
use support::{
    Session, answering, create_machine_when_accepted, kubectl_async, signed_up, ssh_with_password, start_demo,
};

/// A session through the gateway that prints `marker`; then the newest session the API lists, once it has ended.
async fn a_session(ada: &Session, ssh: u16, dir: &Path, marker: &str) -> Value {
    let done = ssh_with_password(ssh, "ada_web", "machine-password", &format!("echo {marker}"), dir);
    assert!(text(&done.stdout).contains(marker), "{}", text(&done.stderr));
    eventually(Duration::from_secs(20), "the session to be listed as ended", || async {
        let (status, body) = ada.get("/ssh-sessions").await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let sessions = body["sessions"].as_array().cloned().unwrap_or_default();
        sessions.into_iter().find(|s| s["channels"][0]["detail"] == format!("echo {marker}") && s["live"] == false)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_follows_the_platforms_recording_settings_to_off_and_to_a_bucket() {
    require("sshd");
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let (http, ssh) = (free_port(), free_port());
    let _demo = start_demo(&state, http, ssh);
    let kubeconfig = state.join("kubeconfig");
    let base = format!("http://127.0.0.1:{http}");
    let ada = signed_up(&answering(&base).await, "ada").await;
    create_machine_when_accepted(&ada, json!({ "name": "web", "sshId": "ada_web", "sshPassword": "machine-password" }))
        .await;
    eventually(Duration::from_secs(90), "the machine to run", || async {
        (ada.get("/vms/web").await.1["vm"]["phase"] == "Running").then_some(())
    })
    .await;

    // By default: recorded, on the gateway's volume (the demo's state folder).
    let first = a_session(&ada, ssh, dir.path(), "first-session").await;
    assert_eq!(first["channels"][0]["recorded"], true, "{first}");
    assert!(state.join("audit/recordings").exists());

    // Off: the next session is audited, not recorded.
    kubectl_async(
        &kubeconfig,
        &["patch", "kiteplatform", "kite", "--type=merge", "-p", r#"{"spec":{"sessionRecording":{"record":"Off"}}}"#],
    )
    .await;
    let (_, envelope) = eventually(Duration::from_secs(20), "the API to say recording is off", || async {
        let answer = ada.get("/ssh-sessions").await;
        (answer.1["recording"] == false).then_some(answer)
    })
    .await;
    assert_eq!(envelope["recordingInput"], false);
    // The gateway follows the platform's watch; give it the moment it takes.
    let second = eventually(Duration::from_secs(20), "a session that is not recorded", || async {
        let session = a_session(&ada, ssh, dir.path(), &format!("second-session-{}", free_port())).await;
        (session["channels"][0]["recorded"] == false).then_some(session)
    })
    .await;
    assert_eq!(second["machine"], "web");

    // A bucket, with its keys in the Secret: the next session goes there.
    let moto = Moto::start();
    let bucket = moto.bucket("kite-audit");
    kubectl_async(
        &kubeconfig,
        &[
            "create",
            "secret",
            "generic",
            "kite-gateway-s3",
            "-n",
            "kite",
            &format!("--from-literal=accessKeyId={ACCESS_KEY_ID}"),
            &format!("--from-literal=secretAccessKey={SECRET_ACCESS_KEY}"),
        ],
    )
    .await;
    let s3 = json!({ "spec": { "sessionRecording": { "record": "Output",
        "s3": { "endpoint": moto.endpoint(), "bucket": bucket, "prefix": "kite/" } } } });
    kubectl_async(&kubeconfig, &["patch", "kiteplatform", "kite", "--type=merge", "-p", &s3.to_string()]).await;
    let third = eventually(Duration::from_secs(30), "a session recorded in the bucket", || async {
        let marker = format!("third-session-{}", free_port());
        let session = a_session(&ada, ssh, dir.path(), &marker).await;
        let keys = moto.keys(&bucket);
        let id = session["id"].as_str()?.to_string();
        keys.iter().any(|key| key.starts_with("kite/recordings/") && key.contains(&id)).then_some(session)
    })
    .await;
    assert_eq!(third["channels"][0]["recorded"], true, "{third}");
    let keys = moto.keys(&bucket);
    assert!(keys.iter().any(|key| key.starts_with("kite/audit/")), "{keys:?}");
    // Replayed from the bucket, through the API.
    let id = third["id"].as_str().unwrap();
    let channel = third["channels"][0]["channel"].as_u64().unwrap();
    let cast = ada
        .http
        .get(format!("{base}/api/v1/ssh-sessions/{id}/recordings/{channel}"))
        .bearer_auth(ada.token.as_deref().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(cast.status(), StatusCode::OK);
    assert!(cast.text().await.unwrap().contains("third-session-"));
}
