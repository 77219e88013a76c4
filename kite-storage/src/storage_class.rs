//! The StorageClass of machine disks and golden images: Longhorn, with one
//! replica by default (a single node cannot place more), volumes on disks
//! tagged `kite`, and a local replica where possible.
//!
//! A StorageClass's parameters cannot change after it is created, so a live
//! class that differs is reported as drifted, field by field ([`drift`]),
//! rather than silently left as it is.

use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kite_core::Error;
use kite_core::api::{KitePlatform, KitePlatformSpec};
use kite_core::labels::{self, COMPONENT};
use kite_core::required::Required;
use std::collections::BTreeMap;

/// Longhorn's CSI driver.
pub const LONGHORN_PROVISIONER: &str = "driver.longhorn.io";

/// The StorageClass `spec.vmStorageClassName` as the platform asks for it.
///
/// ```
/// use kite_core::api::KitePlatformSpec;
/// let class = kite_storage::storage_class::desired(&KitePlatformSpec::default(), None).unwrap();
/// assert_eq!(class.metadata.name.as_deref(), Some("kite-vm-storage"));
/// assert_eq!(class.parameters.unwrap()["numberOfReplicas"], "1");
/// ```
pub fn desired(spec: &KitePlatformSpec, owner: Option<&KitePlatform>) -> Result<StorageClass, Error> {
    let storage = &spec.storage;
    let mut parameters = BTreeMap::from([
        ("numberOfReplicas".to_string(), storage.number_of_replicas.to_string()),
        ("dataLocality".to_string(), storage.data_locality.as_str().to_string()),
        ("staleReplicaTimeout".to_string(), "30".to_string()),
    ]);
    if !storage.disk_selector.is_empty() {
        parameters.insert("diskSelector".into(), storage.disk_selector.clone());
    }
    if !storage.node_selector.is_empty() {
        parameters.insert("nodeSelector".into(), storage.node_selector.clone());
    }
    let owner_references = match owner {
        Some(platform) => Some(vec![platform.required_owner()?]),
        None => None,
    };
    Ok(StorageClass {
        metadata: ObjectMeta {
            name: Some(spec.vm_storage_class_name.clone()),
            labels: Some(labels::owned_labels(COMPONENT, "storage")),
            owner_references,
            ..ObjectMeta::default()
        },
        provisioner: LONGHORN_PROVISIONER.into(),
        parameters: Some(parameters),
        reclaim_policy: Some("Delete".into()),
        volume_binding_mode: Some("Immediate".into()),
        allow_volume_expansion: Some(true),
        ..StorageClass::default()
    })
}

/// The fields that cannot change in place and differ between `live` and
/// `desired`: `provisioner`, each differing `parameters.<key>`,
/// `reclaimPolicy` and `volumeBindingMode`. Empty when the live class is as desired.
pub fn drift(live: &StorageClass, desired: &StorageClass) -> Vec<String> {
    let mut fields = Vec::new();
    if live.provisioner != desired.provisioner {
        fields.push("provisioner".to_string());
    }
    let empty = BTreeMap::new();
    let (have, want) = (live.parameters.as_ref().unwrap_or(&empty), desired.parameters.as_ref().unwrap_or(&empty));
    let keys: std::collections::BTreeSet<&String> = have.keys().chain(want.keys()).collect();
    fields.extend(keys.into_iter().filter(|k| have.get(*k) != want.get(*k)).map(|k| format!("parameters.{k}")));
    // The API server fills these in: an absent one means the default.
    let or = |value: &Option<String>, default: &str| value.clone().unwrap_or_else(|| default.to_string());
    if or(&live.reclaim_policy, "Delete") != or(&desired.reclaim_policy, "Delete") {
        fields.push("reclaimPolicy".to_string());
    }
    if or(&live.volume_binding_mode, "Immediate") != or(&desired.volume_binding_mode, "Immediate") {
        fields.push("volumeBindingMode".to_string());
    }
    fields
}
