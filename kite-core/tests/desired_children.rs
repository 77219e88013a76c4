//! A machine's desired children: checked against the strict upstream
//! KubeVirt and CDI schemas, and the admission rules the schemas cannot
//! express (from `../shared/schemas/README.md`).

use kite_core::api::{KitePlatformSpec, KiteVirtualMachine, PowerState};
use kite_core::vm::desired::{self, VM_POD_LABEL};
use kite_core::vm::{cloud_init, keys::KeyPair};
use kite_testkit::fixtures;
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
    let vm = fixtures::a_vm("web").sized(2, "4Gi").with_ssh_id("alice").in_namespace("kite-user-ku-1").as_stored();
    match power {
        PowerState::On => vm.build(),
        PowerState::Off => vm.stopped().build(),
    }
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
    assert!(matches!(
        desired::virtual_machine(&vm).unwrap_err(),
        kite_core::Error::Incomplete { kind: "KiteVirtualMachine", field: "uid" }
    ));
}

#[test]
fn the_strict_check_catches_a_misspelt_field() {
    let mut vm = desired::virtual_machine(&a_vm(PowerState::On)).unwrap();
    vm["spec"]["runStrategyy"] = serde_json::json!("Always");
    assert_eq!(strict_failures("kubevirt-virtualmachine-v1.strict.schema.json", &vm).len(), 1);
}

fn a_pair(name: &str) -> KeyPair {
    KeyPair {
        private_openssh: format!("-----BEGIN OPENSSH PRIVATE KEY-----\n{name}\n"),
        public_openssh: format!("ssh-ed25519 AAAA{name}"),
    }
}

#[test]
fn the_ssh_secret_holds_both_pairs_under_the_names_the_gateway_reads() {
    let secret = desired::ssh_key_secret(&a_vm(PowerState::On), &a_pair("login"), &a_pair("host")).unwrap();
    assert_eq!(secret.metadata.name.as_deref(), Some("web-ssh-key"));
    assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/ssh-auth"));
    let data = secret.data.unwrap();
    let text = |key: &str| String::from_utf8(data[key].0.clone()).unwrap();
    assert_eq!(text(kite_core::ssh_secret::PUBLIC_KEY), "ssh-ed25519 AAAAlogin");
    assert_eq!(text(kite_core::ssh_secret::HOST_PUBLIC_KEY), "ssh-ed25519 AAAAhost");
    assert!(text(kite_core::ssh_secret::PRIVATE_KEY).contains("login"));
    assert!(text(kite_core::ssh_secret::HOST_PRIVATE_KEY).contains("host"));
    assert_eq!(secret.metadata.owner_references.unwrap()[0].kind, "KiteVirtualMachine");
}

fn user_data(password_hash: Option<&str>) -> Value {
    user_data_with(password_hash, None)
}

fn user_data_with(password_hash: Option<&str>, console_password_hash: Option<&str>) -> Value {
    let text = cloud_init::render(&cloud_init::UserData {
        hostname: "web",
        user: "alice",
        gateway_public_key: "ssh-ed25519 AAAAgateway kite-gateway@web",
        host_private_key: "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n",
        host_public_key: "ssh-ed25519 AAAAhost root@web",
        password_hash,
        console_password_hash,
    })
    .unwrap();
    assert!(text.starts_with("#cloud-config\n"), "cloud-init reads only user data that starts so");
    serde_saphyr::from_str(&text).unwrap()
}

#[test]
fn the_cloud_init_user_data_parses_back_and_says_what_it_should() {
    let data = user_data(Some("$6$salt$hash"));
    assert_eq!(data["hostname"], "web");
    assert_eq!(data["ssh_pwauth"], false, "no password login over SSH");
    assert_eq!(data["ssh_keys"]["ed25519_public"], "ssh-ed25519 AAAAhost root@web");
    assert!(data["ssh_keys"]["ed25519_private"].as_str().unwrap().ends_with("-----END OPENSSH PRIVATE KEY-----\n"));
    let user = &data["users"][0];
    assert_eq!(user["name"], "alice");
    assert_eq!(user["sudo"], "ALL=(ALL) NOPASSWD:ALL");
    assert_eq!(user["ssh_authorized_keys"], serde_json::json!(["ssh-ed25519 AAAAgateway kite-gateway@web"]));
    assert_eq!(user["hashed_passwd"], "$6$salt$hash");
    assert_eq!(user["lock_passwd"], false);
}

#[test]
fn the_console_password_hash_is_the_one_the_guest_gets_beside_an_argon2id_one() {
    let argon2 = "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA";
    let data = user_data_with(Some(argon2), Some("$6$salt$consolehash"));
    assert_eq!(data["users"][0]["hashed_passwd"], "$6$salt$consolehash");
    assert_eq!(data["users"][0]["lock_passwd"], false);
}

#[test]
fn a_hash_only_the_gateway_can_check_leaves_the_console_password_locked() {
    for hash in [None, Some("$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA")] {
        let data = user_data(hash);
        assert!(data["users"][0].get("hashed_passwd").is_none());
        assert_eq!(data["users"][0]["lock_passwd"], true);
    }
}

#[test]
fn a_machine_the_simulation_has_not_seen_is_pending_and_a_stopped_one_that_should_run_is_starting() {
    use kite_core::vm::status::{Observed, judge};
    let vm = a_vm(PowerState::On);
    assert_eq!(judge(&vm, &Observed::default()).phase, kite_core::api::VirtualMachinePhase::Pending);
    let dv = serde_json::json!({"status": {"phase": "Succeeded"}});
    let stopped = serde_json::json!({"status": {"printableStatus": "Stopped"}});
    let verdict =
        judge(&vm, &Observed { data_volume: Some(&dv), virtual_machine: Some(&stopped), ..Observed::default() });
    assert_eq!((verdict.phase, verdict.reason), (kite_core::api::VirtualMachinePhase::Starting, "StartPending"));
    let unschedulable = serde_json::json!({"status": {"printableStatus": "ErrorUnschedulable"}});
    let verdict =
        judge(&vm, &Observed { data_volume: Some(&dv), virtual_machine: Some(&unschedulable), ..Observed::default() });
    assert_eq!(verdict.phase, kite_core::api::VirtualMachinePhase::Failed);
    assert!(!verdict.message.contains("Unschedulable"), "a sentence, not a code: {}", verdict.message);
}

#[test]
fn the_ready_condition_keeps_its_transition_time_while_its_status_stays() {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use kite_core::vm::status::{Observed, judge, status};
    let vm = a_vm(PowerState::On);
    let running = serde_json::json!({"status": {"printableStatus": "Running"}});
    let observed = Observed { virtual_machine: Some(&running), ..Observed::default() };
    let verdict = judge(&vm, &observed);
    let first = status(&vm, None, &observed, &verdict, Time("2026-01-01T00:00:00Z".parse().unwrap()));
    let again = status(&vm, Some(&first), &observed, &verdict, Time("2026-01-02T00:00:00Z".parse().unwrap()));
    assert_eq!(first, again, "the same observation later changes nothing, so nothing is written");
}

#[test]
fn the_gateway_may_get_the_machines_key_secret_and_nothing_else() {
    use kite_core::vm::gateway_access::{self, GatewayAccount};
    let vm = a_vm(PowerState::On);
    let role = gateway_access::role(&vm).unwrap();
    assert_eq!(role.metadata.name.as_deref(), Some("web-gateway-access"));
    assert_eq!(role.metadata.namespace.as_deref(), Some("kite-user-ku-1"));
    let rules = role.rules.unwrap();
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0].verbs, vec!["get"]);
    assert_eq!(rules[0].resources.as_deref(), Some(&["secrets".to_string()][..]));
    assert_eq!(
        rules[0].resource_names.as_deref(),
        Some(&["web-ssh-key".to_string()][..]),
        "never an empty list, which means every name"
    );
    assert_eq!(role.metadata.owner_references.unwrap()[0].name, "web", "it goes with the machine");

    let account = GatewayAccount { namespace: "kite".into(), name: "kite-gateway".into() };
    let binding = gateway_access::binding(&vm, &account).unwrap();
    assert_eq!((binding.role_ref.kind.as_str(), binding.role_ref.name.as_str()), ("Role", "web-gateway-access"));
    let subject = &binding.subjects.unwrap()[0];
    assert_eq!(
        (subject.kind.as_str(), subject.name.as_str(), subject.namespace.as_deref()),
        ("ServiceAccount", "kite-gateway", Some("kite"))
    );
}
