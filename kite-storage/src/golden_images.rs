//! Golden images: one CDI `DataVolume` import per entry of
//! `KitePlatform.spec.goldenImages`, named after the image, in
//! `goldenImageNamespace`; and the RBAC that lets the controller clone them
//! across namespaces (CDI checks `create` on `datavolumes/source` in the
//! source namespace).

use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kite_core::Error;
use kite_core::api::{GoldenImage, GoldenImageStatus, KitePlatform, KitePlatformSpec};
use kite_core::labels::{self, COMPONENT};
use kite_core::required::Required;
use serde_json::{Value, json};

/// The value of [`COMPONENT`] on golden images.
pub const COMPONENT_VALUE: &str = "golden-image";

/// The Role and RoleBinding that allow cloning the golden images.
pub const CLONER: &str = "kite-golden-image-cloner";

/// CDI's annotation that keeps a DataVolume after it succeeded (the VM
/// reconciler reads the golden image's DataVolume to know it is ready).
const KEEP_AFTER_COMPLETION: &str = "cdi.kubevirt.io/storage.deleteAfterCompletion";

fn owner(platform: &KitePlatform) -> Result<OwnerReference, Error> {
    platform.required_owner()
}

fn meta(name: &str, platform: &KitePlatform) -> Result<ObjectMeta, Error> {
    Ok(ObjectMeta {
        name: Some(name.into()),
        namespace: Some(platform.spec.golden_image_namespace.clone()),
        labels: Some(labels::owned_labels(COMPONENT, COMPONENT_VALUE)),
        owner_references: Some(vec![owner(platform)?]),
        ..ObjectMeta::default()
    })
}

/// The import of `image`: an HTTP source, on the platform's StorageClass.
pub fn data_volume(image: &GoldenImage, platform: &KitePlatform) -> Result<Value, Error> {
    let mut metadata = serde_json::to_value(meta(&image.name, platform)?)
        .map_err(|source| Error::Serde { what: "a golden image's metadata".into(), source })?;
    metadata["annotations"] = json!({KEEP_AFTER_COMPLETION: "false"});
    Ok(json!({
        "apiVersion": "cdi.kubevirt.io/v1beta1",
        "kind": "DataVolume",
        "metadata": metadata,
        "spec": {
            "source": {"http": {"url": image.source.http.url}},
            "storage": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": platform.spec.vm_storage_class_name,
                "resources": {"requests": {"storage": image.size.0}}
            }
        }
    }))
}

/// The Role allowing `create` on `datavolumes/source` for exactly the
/// golden images (never any other PVC of the namespace); `None` when there
/// are no images, since a rule without names would allow every one.
pub fn clone_role(platform: &KitePlatform) -> Result<Option<Role>, Error> {
    let names: Vec<String> = platform.spec.golden_images.iter().map(|i| i.name.clone()).collect();
    if names.is_empty() {
        return Ok(None);
    }
    Ok(Some(Role {
        metadata: meta(CLONER, platform)?,
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec!["cdi.kubevirt.io".into()]),
            resources: Some(vec!["datavolumes/source".into()]),
            verbs: vec!["create".into()],
            resource_names: Some(names),
            ..PolicyRule::default()
        }]),
    }))
}

/// Binds [`clone_role`] to the ServiceAccount that creates the machines'
/// DataVolumes (the controller's), `namespace/name`.
pub fn clone_role_binding(platform: &KitePlatform, account: (&str, &str)) -> Result<RoleBinding, Error> {
    Ok(RoleBinding {
        metadata: meta(CLONER, platform)?,
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "Role".into(),
            name: CLONER.into(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: account.1.into(),
            namespace: Some(account.0.into()),
            ..Subject::default()
        }]),
    })
}

/// What was observed of `image`'s import.
pub fn status(image: &GoldenImage, live: Option<&Value>) -> GoldenImageStatus {
    let text = |dv: &Value, pointer: &str| {
        dv.pointer(pointer).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string)
    };
    let Some(dv) = live else {
        return GoldenImageStatus {
            name: image.name.clone(),
            ready: false,
            phase: None,
            progress: None,
            message: Some("The import has not started yet.".into()),
        };
    };
    let phase = text(dv, "/status/phase");
    let ready = phase.as_deref() == Some("Succeeded");
    let message = match phase.as_deref() {
        Some("Succeeded") => "Imported; machines can be created from it.".to_string(),
        Some("Failed") => {
            let detail = dv.pointer("/status/conditions").and_then(Value::as_array).and_then(|c| {
                c.iter().find_map(|c| c["message"].as_str().filter(|m| !m.is_empty()).map(str::to_string))
            });
            format!("The import failed{}", detail.map(|d| format!(": {d}")).unwrap_or_default())
        }
        _ => "Importing.".to_string(),
    };
    GoldenImageStatus {
        name: image.name.clone(),
        ready,
        phase,
        progress: text(dv, "/status/progress"),
        message: Some(message),
    }
}

/// The names of golden images the platform no longer lists.
pub fn unlisted<'a>(spec: &KitePlatformSpec, live_names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    live_names
        .into_iter()
        .filter(|name| !spec.golden_images.iter().any(|image| image.name == *name))
        .map(str::to_string)
        .collect()
}
