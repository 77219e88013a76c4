//! The example objects in `examples/manifests/` are valid: they read as
//! typed Kite objects, pass their CRD's schema and its CEL rules, and one of
//! each kind is there.

mod common;

use common::{cel_failures, openapi_schema, schema_failures};
use kite_core::api::{KitePlatform, KiteUser, KiteVirtualMachine, KiteVirtualMachineOffer};
use kube::CustomResourceExt;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;

fn manifests_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/manifests")
}

/// Reads `document` as `K` and checks it against `K`'s CRD schema and CEL rules.
fn check<K: CustomResourceExt + DeserializeOwned>(file: &str, document: &Value) {
    serde_json::from_value::<K>(document.clone())
        .unwrap_or_else(|e| panic!("{file}: does not read as {}: {e}", K::crd_name()));
    let schema = openapi_schema::<K>();
    let failures = schema_failures(&schema, document);
    assert!(failures.is_empty(), "{file}: schema: {failures:?}");
    let failures = cel_failures(&schema, document, None);
    assert!(failures.is_empty(), "{file}: CEL rules: {failures:?}");
}

#[test]
fn every_example_manifest_is_a_valid_kite_object() {
    let mut kinds = BTreeSet::new();
    let mut entries: Vec<_> = std::fs::read_dir(manifests_dir()).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries.into_iter().filter(|p| p.extension().is_some_and(|e| e == "yaml")) {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        let documents: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        for document in documents {
            let kind = document["kind"].as_str().unwrap_or_else(|| panic!("{file}: no kind")).to_string();
            match kind.as_str() {
                "KiteUser" => check::<KiteUser>(&file, &document),
                "KiteVirtualMachine" => check::<KiteVirtualMachine>(&file, &document),
                "KiteVirtualMachineOffer" => check::<KiteVirtualMachineOffer>(&file, &document),
                "KitePlatform" => check::<KitePlatform>(&file, &document),
                other => panic!("{file}: {other} is not a Kite kind"),
            }
            kinds.insert(kind);
        }
    }
    let expected: BTreeSet<String> =
        ["KitePlatform", "KiteUser", "KiteVirtualMachine", "KiteVirtualMachineOffer"].map(String::from).into();
    assert_eq!(kinds, expected, "examples/manifests/ must hold one object of each kind");
}

#[test]
fn the_schema_check_refuses_a_broken_object() {
    // The check above must be able to fail: an sshId with an upper-case letter,
    // a negative cpu and a power state that is not an enum value.
    let broken = serde_json::json!({
        "apiVersion": "hy3ons.github.io/v1", "kind": "KiteVirtualMachine", "metadata": {"name": "x"},
        "spec": {"cpu": 0, "memory": "4Gi", "disk": "-1Gi", "image": "ubuntu-22.04",
                 "sshId": "Alice", "powerState": "Maybe"}
    });
    let failures = schema_failures(&openapi_schema::<KiteVirtualMachine>(), &broken);
    let paths: BTreeSet<String> = failures.iter().map(|f| f.split(':').next().unwrap().to_string()).collect();
    let expected: BTreeSet<String> =
        ["/spec/cpu", "/spec/disk", "/spec/sshId", "/spec/powerState"].map(String::from).into();
    assert_eq!(paths, expected, "{failures:?}");
}
