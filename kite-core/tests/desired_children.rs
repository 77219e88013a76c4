//! A machine's desired children: checked against the strict upstream
//! KubeVirt and CDI schemas, and the admission rules the schemas cannot
//! express (from `../shared/schemas/README.md`).

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kite_core::api::{KitePlatformSpec, KiteVirtualMachine, KiteVirtualMachineSpec, PowerState};
use kite_core::desired::{self, VM_POD_LABEL};
use serde_json::Value;

fn schema(file: &str) -> Value {
    let path = format!("{}/../kite-testkit/schemas/{file}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))).unwrap()
}

fn strict_failures(file: &str, object: &Value) -> Vec<String> {
    let mut schema = schema(file);
    // ObjectMeta is validated by the API server, not by the CRD schema.
    schema["properties"]["metadata"] = serde_json::json!({"type": "object"});
    let validator = jsonschema::validator_for(&schema).unwrap();
    validator.iter_errors(object).map(|e| format!("{}: {e}", e.instance_path())).collect()
}

/// A machine as the API server returns it: with a namespace and a uid.
fn a_vm(power: PowerState) -> KiteVirtualMachine {
    let mut vm = KiteVirtualMachine::new(
        "web",
        KiteVirtualMachineSpec {
            cpu: 2,
            memory: Quantity("4Gi".into()),
            disk: Quantity("25Gi".into()),
            image: "ubuntu-22.04".into(),
            power_state: power,
            domain_prefix: None,
            ssh_id: "alice".into(),
            ssh_password_hash: None,
            delete: false,
        },
    );
    vm.metadata.namespace = Some("kite-user-ku-1".into());
    vm.metadata.uid = Some("0b6f7c1e-0000-4000-8000-000000000001".into());
    vm
}

#[test]
fn the_data_volume_clones_the_golden_image_and_passes_the_strict_cdi_schema() {
    let dv = desired::data_volume(&a_vm(PowerState::On), &KitePlatformSpec::default()).unwrap();
    assert_eq!(strict_failures("cdi-datavolume-v1beta1.strict.schema.json", &dv), Vec::<String>::new());
    assert_eq!(dv["metadata"]["name"], "web-disk");
    assert_eq!(dv["spec"]["source"]["pvc"]["name"], "ubuntu-22.04");
    assert_eq!(dv["spec"]["source"]["pvc"]["namespace"], "kite");
    assert_eq!(dv["spec"]["storage"]["storageClassName"], "kite-vm-storage");
    assert_eq!(dv["spec"]["storage"]["resources"]["requests"]["storage"], "25Gi");
    // Exactly one of pvc/storage, and exactly one source (CDI's webhook rules).
    assert!(dv["spec"].get("pvc").is_none());
    assert_eq!(dv["spec"]["source"].as_object().unwrap().len(), 1);
    assert_eq!(dv["metadata"]["ownerReferences"][0]["kind"], "KiteVirtualMachine");
    assert_eq!(dv["metadata"]["labels"]["hy3ons.github.io/managed-by"], "kite-controller");
}

#[test]
fn the_virtual_machine_passes_the_strict_kubevirt_schema_and_its_admission_rules() {
    for (power, strategy) in [(PowerState::On, "Always"), (PowerState::Off, "Halted")] {
        let vm = desired::virtual_machine(&a_vm(power)).unwrap();
        assert_eq!(strict_failures("kubevirt-virtualmachine-v1.strict.schema.json", &vm), Vec::<String>::new());
        assert_eq!(vm["spec"]["runStrategy"], strategy);
        assert!(vm["spec"].get("running").is_none(), "runStrategy and running are exclusive; running is deprecated");
        let spec = &vm["spec"]["template"]["spec"];
        assert_eq!(spec["domain"]["resources"]["requests"]["memory"], "4Gi", "memory comes from resources.requests");
        assert_eq!(spec["domain"]["cpu"]["cores"], 2);
        // Every disk has a volume, and the cloud-init user data is a Secret (inline is capped at 2048 bytes).
        let volumes: Vec<&str> =
            spec["volumes"].as_array().unwrap().iter().map(|v| v["name"].as_str().unwrap()).collect();
        for disk in spec["domain"]["devices"]["disks"].as_array().unwrap() {
            assert!(volumes.contains(&disk["name"].as_str().unwrap()), "{disk} has no volume");
        }
        let cloud_init = &spec["volumes"][1]["cloudInitNoCloud"];
        assert_eq!(cloud_init["secretRef"]["name"], "web-cloud-init-userdata");
        assert!(cloud_init.get("userData").is_none() && cloud_init.get("userDataBase64").is_none());
        assert_eq!(spec["volumes"][0]["dataVolume"]["name"], "web-disk");
        assert_eq!(spec["domain"]["devices"]["interfaces"][0]["masquerade"], serde_json::json!({}));
        assert_eq!(vm["spec"]["template"]["metadata"]["labels"][VM_POD_LABEL], "web");
    }
}

#[test]
fn the_ssh_service_selects_the_vm_pod_on_port_22_without_a_node_port() {
    let service = desired::ssh_service(&a_vm(PowerState::On)).unwrap();
    let spec = service.spec.unwrap();
    assert_eq!(service.metadata.name.as_deref(), Some("vps-access-web"));
    assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
    assert_eq!(spec.selector.unwrap()[VM_POD_LABEL], "web");
    let port = &spec.ports.unwrap()[0];
    assert_eq!((port.port, port.node_port), (22, None));
}

#[test]
fn a_machine_not_read_from_the_api_server_is_an_error_not_a_panic() {
    let mut vm = a_vm(PowerState::On);
    vm.metadata.uid = None;
    assert_eq!(
        desired::virtual_machine(&vm).unwrap_err(),
        kite_core::Error::Incomplete { kind: "KiteVirtualMachine", field: "uid" }
    );
}

#[test]
fn the_strict_check_catches_a_misspelt_field() {
    let mut vm = desired::virtual_machine(&a_vm(PowerState::On)).unwrap();
    vm["spec"]["runStrategyy"] = serde_json::json!("Always");
    assert_eq!(strict_failures("kubevirt-virtualmachine-v1.strict.schema.json", &vm).len(), 1);
}
