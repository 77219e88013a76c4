//! Each machine's web domain, against `kite demo` with the real kubectl and
//! headless Chromium: with a base domain, a machine with a domain prefix
//! gets `vps-web-<vm>` and an Ingress for `<prefix>.<baseDomain>`, its page
//! links the URL once the Ingress has an address (plain HTTP first; HTTPS
//! once the platform's certificate is copied into its namespace), the
//! tenant lets port 80 in from the ingress controller only, and all of it
//! goes with the machine.

mod support;

use kite_testkit::openssh::free_port;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;
use support::browser::{browser, until};
use support::{answering, create_machine_when_accepted, kubectl_async, signed_up, start_demo};

async fn json_of(kubeconfig: &Path, args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.extend(["-o", "json"]);
    serde_json::from_str(&kubectl_async(kubeconfig, &args).await).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machines_domain_is_served_linked_secured_and_removed_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let (http, ssh) = (free_port(), free_port());
    let _demo = start_demo(&state, http, ssh);
    let kubeconfig = state.join("kubeconfig");
    let base = format!("http://127.0.0.1:{http}");
    let ada = signed_up(&answering(&base).await, "ada").await;
    let (status, body) = ada.patch("/admin/settings", json!({ "baseDomain": "kite.test" })).await;
    assert!(status.is_success(), "{status} {body}");
    let created = create_machine_when_accepted(
        &ada,
        json!({ "name": "blog", "sshId": "ada_blog", "sshPassword": "machine-password", "domainPrefix": "blog" }),
    )
    .await;
    let namespace = created["vm"]["namespace"].as_str().unwrap().to_string();
    let vm = until(Duration::from_secs(90), "the machine's URL", || async {
        let (_, body) = ada.get("/vms/blog").await;
        body["vm"]["url"].is_string().then_some(body)
    })
    .await;
    assert_eq!(vm["vm"]["url"], "http://blog.kite.test");

    // What the controller made for it.
    let ingress = json_of(&kubeconfig, &["get", "ingress", "blog", "-n", &namespace]).await;
    assert_eq!(ingress["spec"]["rules"][0]["host"], "blog.kite.test");
    assert_eq!(ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]["name"], "vps-web-blog");
    assert_eq!(ingress["spec"]["ingressClassName"], "traefik");
    let service = json_of(&kubeconfig, &["get", "service", "vps-web-blog", "-n", &namespace]).await;
    assert_eq!(service["spec"]["ports"][0]["port"], 80);
    let policy = json_of(&kubeconfig, &["get", "networkpolicy", "kite-allow-web-from-ingress", "-n", &namespace]).await;
    assert_eq!(policy["spec"]["ingress"][0]["ports"][0]["port"], 80);

    // The page links it.
    let browser = browser().await;
    let client = &browser.client;
    browser.sign_in(&base, "ada").await;
    client.goto(&format!("{base}/vms/blog")).await.unwrap();
    assert_eq!(browser.text_of("#vm-url").await.as_deref(), Some("http://blog.kite.test"));
    let href = client.find(fantoccini::Locator::Css("#vm-url")).await.unwrap().attr("href").await.unwrap();
    assert_eq!(href.as_deref(), Some("http://blog.kite.test"));

    // The platform's certificate: copied into the machine's namespace, and the URL is HTTPS.
    let certificate = json!({ "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": { "name": "wildcard-kite-test", "namespace": "kite" },
        "data": { "tls.crt": "Y2VydA==", "tls.key": "a2V5" } });
    let file = dir.path().join("certificate.json");
    std::fs::write(&file, certificate.to_string()).unwrap();
    kubectl_async(&kubeconfig, &["apply", "-f", file.to_str().unwrap()]).await;
    let tls = json!({ "spec": { "machineDomains": { "tls": "PlatformCertificate", "certificateSecret": "wildcard-kite-test" } } });
    kubectl_async(&kubeconfig, &["patch", "kiteplatform", "kite", "--type=merge", "-p", &tls.to_string()]).await;
    until(Duration::from_secs(30), "the HTTPS URL", || async {
        (ada.get("/vms/blog").await.1["vm"]["url"] == "https://blog.kite.test").then_some(())
    })
    .await;
    let copy = json_of(&kubeconfig, &["get", "secret", "blog-tls", "-n", &namespace]).await;
    assert_eq!(copy["data"]["tls.crt"], "Y2VydA==");
    let ingress = json_of(&kubeconfig, &["get", "ingress", "blog", "-n", &namespace]).await;
    assert_eq!(ingress["spec"]["tls"][0]["secretName"], "blog-tls");
    client.goto(&format!("{base}/vms/blog")).await.unwrap();
    assert_eq!(browser.text_of("#vm-url").await.as_deref(), Some("https://blog.kite.test"));
    let problems = browser.console_problems().await;
    assert!(problems.is_empty(), "console problems: {problems:?}");
    browser.client.clone().close().await.unwrap();

    // Deleting the machine takes its domain's objects with it.
    let (status, body) = ada.delete("/vms/blog").await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    until(Duration::from_secs(60), "the Ingress, Service and certificate copy to go", || async {
        let left = kubectl_async(&kubeconfig, &["get", "ingress,service,secret", "-n", &namespace, "-o", "name"]).await;
        (!left.contains("ingress.networking.k8s.io/blog")
            && !left.contains("service/vps-web-blog")
            && !left.contains("secret/blog-tls"))
        .then_some(())
    })
    .await;
}
