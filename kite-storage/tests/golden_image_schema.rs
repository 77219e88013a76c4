//! The golden image's DataVolume passes CDI's strict upstream schema, and
//! CDI's admission rules the schema cannot express.

use kite_core::api::*;

#[test]
fn the_golden_image_import_passes_the_strict_cdi_schema() {
    let mut platform = KitePlatform::new(PLATFORM_NAME, kite_testkit::fixtures::a_platform());
    platform.metadata.uid = Some("0b6f7c1e-0000-4000-8000-000000000004".into());
    let dv = kite_storage::golden_images::data_volume(&platform.spec.golden_images[0], &platform).unwrap();
    let mut schema = kite_testkit::upstream::data_volume_strict_schema();
    // ObjectMeta is checked by the API server, not by the CRD schema.
    schema["properties"]["metadata"] = serde_json::json!({"type": "object"});
    let validator = jsonschema::validator_for(&schema).unwrap();
    let failures: Vec<String> = validator.iter_errors(&dv).map(|e| format!("{}: {e}", e.instance_path())).collect();
    assert_eq!(failures, Vec::<String>::new());
    // Exactly one source and exactly one of storage/pvc (CDI's webhook).
    assert_eq!(dv["spec"]["source"].as_object().unwrap().len(), 1);
    assert!(dv["spec"].get("pvc").is_none());
    assert_eq!(dv["metadata"]["namespace"], "kite");
    assert_eq!(dv["metadata"]["ownerReferences"][0]["kind"], "KitePlatform");

    // And the strict check can fail: a misspelt field is caught.
    let mut wrong = dv.clone();
    wrong["spec"]["storag"] = serde_json::json!({});
    assert_eq!(validator.iter_errors(&wrong).count(), 1);
}
