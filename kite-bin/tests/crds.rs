//! `kite crds` prints the four CRDs, and the copy committed under
//! `deploy/crds/` is exactly what the code generates.

use std::process::Command;

fn kite_crds() -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_kite")).arg("crds").output().unwrap();
    assert!(output.status.success(), "kite crds failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn kite_crds_prints_the_four_kite_crds() {
    let documents: Vec<serde_json::Value> = serde_saphyr::from_multiple(&kite_crds()).unwrap();
    let names: Vec<&str> = documents.iter().map(|d| d["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "kiteusers.hy3ons.github.io",
            "kitevirtualmachines.hy3ons.github.io",
            "kitevirtualmachineoffers.hy3ons.github.io",
            "kiteplatforms.hy3ons.github.io"
        ]
    );
    for document in &documents {
        assert_eq!(document["apiVersion"], "apiextensions.k8s.io/v1");
        assert_eq!(document["kind"], "CustomResourceDefinition");
    }
}

#[test]
fn the_committed_crds_match_the_generated_ones() {
    let committed_path = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/crds/kite-crds.yaml");
    let committed = std::fs::read_to_string(committed_path).unwrap();
    assert!(
        committed == kite_crds(),
        "deploy/crds/kite-crds.yaml is stale: run `cargo run -p kite-bin -- crds > deploy/crds/kite-crds.yaml`"
    );
}
