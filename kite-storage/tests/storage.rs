//! The storage reconciler against kite-testkit's API server and its
//! simulated CDI: the StorageClass (and its drift), Longhorn readiness, and
//! golden images with their clone RBAC.

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use k8s_openapi::api::storage::v1::StorageClass;
use kite_core::api::*;
use kite_core::labels;
use kite_core::reconcile::{Context, Metrics, resources};
use kite_storage::reconciler::{self, Config};
use kite_testkit::FakeApiServer;
use kite_testkit::fixtures::a_platform;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

const WITHIN: Duration = Duration::from_secs(20);

struct Cluster {
    server: FakeApiServer,
    _simulation: kite_testkit::sim::Simulation,
    stop: watch::Sender<bool>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Cluster {
    async fn new() -> Self {
        let server = FakeApiServer::new().unwrap();
        for crd in kite_core::api::crds() {
            server.install_crd(&crd).unwrap();
        }
        let config = kite_testkit::sim::SimulationConfig { step: Duration::from_millis(10), ..Default::default() };
        let simulation = kite_testkit::sim::start(&server, config).unwrap();
        for name in ["kite", "longhorn-system"] {
            let mut ns = Namespace::default();
            ns.metadata.name = Some(name.into());
            Api::<Namespace>::all(server.client()).create(&PostParams::default(), &ns).await.unwrap();
        }
        Cluster { server, _simulation: simulation, stop: watch::channel(false).0, task: None }
    }

    /// Creates a Longhorn node, then writes its status (a status subresource ignores status on create).
    async fn create_longhorn_node(&self, node: serde_json::Value) {
        self.server.create("longhorn.io", "v1beta2", "nodes", Some("longhorn-system"), node.clone()).unwrap();
        let nodes =
            Api::<DynamicObject>::namespaced_with(self.client(), "longhorn-system", &resources::longhorn_node());
        let status = json!({"status": node["status"]});
        nodes.patch_status("node-1", &PatchParams::default(), &Patch::Merge(&status)).await.unwrap();
    }

    fn client(&self) -> kube::Client {
        self.server.client()
    }

    fn run(&mut self) {
        let context = Arc::new(Context::new(
            self.client(),
            Config { cloner: ("kite".into(), "kite-controller".into()), longhorn_namespace: "longhorn-system".into() },
            Metrics::default(),
            None,
        ));
        let mut stop = self.stop.subscribe();
        let until = async move {
            let _ = stop.wait_for(|s| *s).await;
        };
        self.task = Some(tokio::spawn(reconciler::run(context, until)));
    }

    async fn stop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take() {
            tokio::time::timeout(Duration::from_secs(10), task).await.unwrap().unwrap();
        }
    }

    async fn platform(&self) -> KitePlatform {
        Api::<KitePlatform>::all(self.client()).get(PLATFORM_NAME).await.unwrap()
    }

    async fn condition(&self, type_: &str) -> Option<Condition> {
        self.platform().await.status?.conditions.into_iter().find(|c| c.type_ == type_)
    }
}

fn platform_with_ubuntu() -> KitePlatform {
    KitePlatform::new(PLATFORM_NAME, a_platform())
}

async fn eventually<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    kite_testkit::fixtures::eventually(WITHIN, what, check).await
}

fn a_longhorn_node(disk_tags: &[&str], ready: bool) -> serde_json::Value {
    let status = if ready { "True" } else { "False" };
    json!({
        "apiVersion": "longhorn.io/v1beta2", "kind": "Node",
        "metadata": {"name": "node-1", "namespace": "longhorn-system"},
        "spec": {"allowScheduling": true, "disks": {"default-disk": {"path": "/var/lib/longhorn", "allowScheduling": true, "tags": disk_tags}}},
        "status": {"conditions": [{"type": "Ready", "status": "True"}],
                   "diskStatus": {"default-disk": {"conditions": [{"type": "Ready", "status": status}, {"type": "Schedulable", "status": status}]}}}
    })
}

#[tokio::test]
async fn a_platform_gets_its_storage_class_golden_images_and_clone_rbac() {
    let mut cluster = Cluster::new().await;
    Api::<KitePlatform>::all(cluster.client()).create(&PostParams::default(), &platform_with_ubuntu()).await.unwrap();
    cluster.run();

    let class = eventually("the StorageClass", || async {
        Api::<StorageClass>::all(cluster.client()).get_opt("kite-vm-storage").await.unwrap()
    })
    .await;
    assert_eq!(class.provisioner, "driver.longhorn.io");
    let parameters = class.parameters.unwrap();
    assert_eq!(parameters["numberOfReplicas"], "1");
    assert_eq!(parameters["diskSelector"], "kite");
    assert_eq!(parameters["dataLocality"], "best-effort");
    assert_eq!(class.allow_volume_expansion, Some(true));

    // The import shows progress, then the image is Ready.
    let images = eventually("the image to be imported", || async {
        let status = cluster.platform().await.status?;
        status.golden_images.first().filter(|i| i.ready).map(|_| status.golden_images.clone())
    })
    .await;
    assert_eq!(images[0].phase.as_deref(), Some("Succeeded"));
    let ready = eventually("GoldenImagesReady", || async { cluster.condition("GoldenImagesReady").await }).await;
    assert_eq!(ready.status, ConditionStatus::True);
    let dv = Api::<DynamicObject>::namespaced_with(cluster.client(), "kite", &resources::data_volume())
        .get("ubuntu-22.04")
        .await
        .unwrap();
    assert_eq!(dv.data["spec"]["source"]["http"]["url"], "https://images.example.org/jammy.img");
    assert_eq!(dv.data["spec"]["storage"]["storageClassName"], "kite-vm-storage");

    // Cloning is allowed for exactly the golden images, to the controller.
    let role = Api::<Role>::namespaced(cluster.client(), "kite").get("kite-golden-image-cloner").await.unwrap();
    let rule = &role.rules.unwrap()[0];
    assert_eq!(rule.resources.as_deref(), Some(&["datavolumes/source".to_string()][..]));
    assert_eq!(rule.resource_names.as_deref(), Some(&["ubuntu-22.04".to_string()][..]));
    let binding =
        Api::<RoleBinding>::namespaced(cluster.client(), "kite").get("kite-golden-image-cloner").await.unwrap();
    assert_eq!(binding.subjects.unwrap()[0].name, "kite-controller");

    // No Longhorn node yet: said so; a tagged, ready disk: Ready.
    let longhorn = cluster.condition("LonghornReady").await.unwrap();
    assert_eq!((longhorn.status, longhorn.reason.as_deref()), (ConditionStatus::False, Some("NoLonghornNodes")));
    cluster.create_longhorn_node(a_longhorn_node(&["kite"], true)).await;
    eventually("LonghornReady", || async {
        (cluster.condition("LonghornReady").await?.status == ConditionStatus::True).then_some(())
    })
    .await;

    // An image no longer listed is removed; with no image, no clone rule is left.
    let none = json!({"spec": {"goldenImages": null}});
    Api::<KitePlatform>::all(cluster.client())
        .patch(PLATFORM_NAME, &PatchParams::default(), &Patch::Merge(&none))
        .await
        .unwrap();
    eventually("the image to go", || async {
        let dvs = Api::<DynamicObject>::namespaced_with(cluster.client(), "kite", &resources::data_volume());
        dvs.get_opt("ubuntu-22.04").await.unwrap().is_none().then_some(())
    })
    .await;
    eventually("the Role to go", || async {
        Api::<Role>::namespaced(cluster.client(), "kite")
            .get_opt("kite-golden-image-cloner")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
    cluster.stop().await;
}

#[tokio::test]
async fn a_disk_without_the_tag_is_not_enough_for_longhorn() {
    let mut cluster = Cluster::new().await;
    cluster.create_longhorn_node(a_longhorn_node(&["ssd"], true)).await;
    Api::<KitePlatform>::all(cluster.client()).create(&PostParams::default(), &platform_with_ubuntu()).await.unwrap();
    cluster.run();
    let condition = eventually("LonghornReady", || async { cluster.condition("LonghornReady").await }).await;
    assert_eq!(condition.status, ConditionStatus::False);
    assert_eq!(condition.reason.as_deref(), Some("NoSchedulableDisk"));
    assert!(condition.message.unwrap().contains("tagged kite"));
    cluster.stop().await;
}

#[tokio::test]
async fn a_drifted_storage_class_is_reported_by_field_and_recreated_only_when_allowed() {
    let mut cluster = Cluster::new().await;
    let classes: Api<StorageClass> = Api::all(cluster.client());
    let mut drifted = kite_storage::storage_class::desired(&KitePlatformSpec::default(), None).unwrap();
    drifted.parameters.as_mut().unwrap().insert("numberOfReplicas".into(), "3".into());
    drifted.reclaim_policy = Some("Retain".into());
    let before = classes.create(&PostParams::default(), &drifted).await.unwrap();
    Api::<KitePlatform>::all(cluster.client()).create(&PostParams::default(), &platform_with_ubuntu()).await.unwrap();
    cluster.run();

    let condition = eventually("StorageClassDrifted", || async {
        cluster.condition("StorageClassDrifted").await.filter(|c| c.status == ConditionStatus::True)
    })
    .await;
    let message = condition.message.unwrap();
    assert!(message.contains("parameters.numberOfReplicas") && message.contains("reclaimPolicy"), "{message}");
    let ready = cluster.condition("StorageClassReady").await.unwrap();
    assert_eq!((ready.status, ready.reason.as_deref()), (ConditionStatus::False, Some("Drifted")));
    let still = classes.get("kite-vm-storage").await.unwrap();
    assert_eq!(still.metadata.uid, before.metadata.uid, "a drifted class is not touched unless allowed");

    let allow = json!({"spec": {"storage": {"recreateOnDrift": true}}});
    Api::<KitePlatform>::all(cluster.client())
        .patch(PLATFORM_NAME, &PatchParams::default(), &Patch::Merge(&allow))
        .await
        .unwrap();
    let recreated = eventually("the class to be recreated", || async {
        classes.get_opt("kite-vm-storage").await.unwrap().filter(|c| c.metadata.uid != before.metadata.uid)
    })
    .await;
    assert_eq!(recreated.parameters.unwrap()["numberOfReplicas"], "1");
    eventually("no drift", || async {
        (cluster.condition("StorageClassDrifted").await?.status == ConditionStatus::False).then_some(())
    })
    .await;
    cluster.stop().await;
}

#[tokio::test]
async fn a_storage_class_kite_did_not_make_is_used_as_it_is() {
    let mut cluster = Cluster::new().await;
    let classes: Api<StorageClass> = Api::all(cluster.client());
    let mut theirs = kite_storage::storage_class::desired(&KitePlatformSpec::default(), None).unwrap();
    theirs.metadata.labels = None;
    theirs.provisioner = "rancher.io/local-path".into();
    classes.create(&PostParams::default(), &theirs).await.unwrap();
    Api::<KitePlatform>::all(cluster.client()).create(&PostParams::default(), &platform_with_ubuntu()).await.unwrap();
    cluster.run();
    let ready = eventually("StorageClassReady", || async { cluster.condition("StorageClassReady").await }).await;
    assert_eq!(ready.reason.as_deref(), Some("ProvidedByOperator"));
    let live = classes.get("kite-vm-storage").await.unwrap();
    assert_eq!(live.provisioner, "rancher.io/local-path");
    assert!(!labels::is_managed_by_controller(live.metadata.labels.as_ref()));
    cluster.stop().await;
}

#[tokio::test]
async fn a_missing_golden_image_namespace_is_reported_not_retried_in_silence() {
    let mut cluster = Cluster::new().await;
    let mut platform = platform_with_ubuntu();
    platform.spec.golden_image_namespace = "kite-images".into();
    Api::<KitePlatform>::all(cluster.client()).create(&PostParams::default(), &platform).await.unwrap();
    cluster.run();
    let condition = eventually("GoldenImagesReady", || async { cluster.condition("GoldenImagesReady").await }).await;
    assert_eq!((condition.status, condition.reason.as_deref()), (ConditionStatus::False, Some("NamespaceMissing")));
    assert!(condition.message.unwrap().contains("kite-images"));
    cluster.stop().await;
}

#[tokio::test]
async fn waiting_for_longhorn_is_watching_it_not_polling() {
    let mut cluster = Cluster::new().await;
    Api::<KitePlatform>::all(cluster.client()).create(&PostParams::default(), &platform_with_ubuntu()).await.unwrap();
    cluster.run();
    let condition = eventually("LonghornReady", || async { cluster.condition("LonghornReady").await }).await;
    assert_eq!(condition.status, ConditionStatus::False, "no Longhorn node yet");
    // Let the images finish and the status settle, then count what an idle wait costs.
    eventually("the golden images to be imported", || async {
        let images = cluster.condition("GoldenImagesReady").await?;
        (images.status == ConditionStatus::True).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    cluster.server.reset_requests();
    tokio::time::sleep(Duration::from_secs(12)).await;
    let calls: Vec<String> = cluster
        .server
        .requests()
        .iter()
        .filter(|r| !matches!(r.verb.as_str(), "watch"))
        .map(|r| format!("{} {}", r.verb.as_str(), r.resource))
        .collect();
    assert_eq!(calls, Vec::<String>::new(), "12 idle seconds waiting for Longhorn cost no request");
    // A node that becomes ready is seen at once, through the watch.
    cluster.create_longhorn_node(a_longhorn_node(&["kite"], true)).await;
    eventually("LonghornReady to turn true", || async {
        (cluster.condition("LonghornReady").await?.status == ConditionStatus::True).then_some(())
    })
    .await;
    cluster.stop().await;
}
