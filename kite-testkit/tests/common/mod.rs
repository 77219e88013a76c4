//! Builders shared by kite-testkit's tests.
#![allow(dead_code)]

pub mod kubectl;

use kite_testkit::FakeApiServer;
use kube::core::Status;
use std::time::Duration;

/// A fresh server, with namespaces that terminate quickly.
pub fn server() -> FakeApiServer {
    FakeApiServer::builder().namespace_termination(Duration::from_millis(50)).build().unwrap()
}

/// Waits, up to five seconds, for `check` to hold.
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        if check().await {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A ConfigMap named `name` with one label.
pub fn config_map(name: &str, label: &str) -> k8s_openapi::api::core::v1::ConfigMap {
    let mut cm = k8s_openapi::api::core::v1::ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.metadata.labels = Some([("app".to_string(), label.to_string())].into());
    cm.data = Some([("key".to_string(), "value".to_string())].into());
    cm
}

/// The Status of an API error; panics on any other error.
pub fn api_error(error: kube::Error) -> Status {
    match error {
        kube::Error::Api(status) => *status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// A Kubernetes object from its JSON.
pub fn object<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).unwrap()
}

/// The VirtualMachineInstances of the namespace `tenant`.
pub fn tenant_vmis(client: kube::Client) -> kube::Api<kube::api::DynamicObject> {
    use kube::api::{ApiResource, GroupVersionKind};
    let gvk = GroupVersionKind::gvk("kubevirt.io", "v1", "VirtualMachineInstance");
    kube::Api::namespaced_with(client, "tenant", &ApiResource::from_gvk_with_plural(&gvk, "virtualmachineinstances"))
}

/// Creates the instance `web` in `tenant`, with `labels`, its cloud-init from
/// the Secret `web-cloud-init`, and marks it Running when `running`.
pub async fn create_web_instance(client: kube::Client, labels: serde_json::Value, running: bool) {
    use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
    let instance: DynamicObject = object(serde_json::json!({
        "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
        "metadata": {"name": "web", "labels": labels},
        "spec": {"domain": {"devices": {}}, "volumes": [{"name": "cloudinit", "cloudInitNoCloud": {"secretRef": {"name": "web-cloud-init"}}}]}
    }));
    tenant_vmis(client.clone()).create(&PostParams::default(), &instance).await.unwrap();
    if running {
        let status = serde_json::json!({"status": {"phase": "Running"}});
        tenant_vmis(client).patch("web", &PatchParams::default(), &Patch::Merge(status)).await.unwrap();
    }
}
