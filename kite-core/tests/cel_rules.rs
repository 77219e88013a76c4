//! The CRDs' CEL rules do what they say, evaluated with the Kubernetes CEL
//! libraries as the API server would: immutable fields stay, disks do not
//! shrink, the platform is a singleton.

mod common;

use common::{cel_failures, openapi_schema};
use kite_core::api::{KitePlatform, KiteUser, KiteVirtualMachine};
use serde_json::{Value, json};

fn vm(spec: Value) -> Value {
    let mut full = json!({
        "cpu": 2, "memory": "4Gi", "disk": "25Gi", "image": "ubuntu-22.04",
        "powerState": "On", "sshId": "alice", "delete": false
    });
    full.as_object_mut().unwrap().extend(spec.as_object().unwrap().clone());
    json!({"apiVersion": "hy3ons.github.io/v1", "kind": "KiteVirtualMachine",
           "metadata": {"name": "web", "namespace": "t"}, "spec": full})
}

fn vm_update_failures(old: Value, new: Value) -> Vec<String> {
    cel_failures(&openapi_schema::<KiteVirtualMachine>(), &vm(new), Some(&vm(old)))
}

#[test]
fn a_valid_vm_passes_on_create_and_on_an_unchanged_update() {
    let schema = openapi_schema::<KiteVirtualMachine>();
    assert_eq!(cel_failures(&schema, &vm(json!({})), None), Vec::<String>::new());
    assert_eq!(vm_update_failures(json!({}), json!({})), Vec::<String>::new());
}

#[test]
fn ssh_id_cannot_change() {
    let failures = vm_update_failures(json!({"sshId": "alice"}), json!({"sshId": "mallory"}));
    assert_eq!(failures, ["sshId cannot be changed; create a new virtual machine instead"]);
}

#[test]
fn an_ssh_id_the_system_reserves_is_refused() {
    let schema = openapi_schema::<KiteVirtualMachine>();
    for reserved in ["root", "daemon", "nobody", "sshd"] {
        let failures = cel_failures(&schema, &vm(json!({ "sshId": reserved })), None);
        assert_eq!(
            failures,
            ["sshId is an account the machine's system reserves (root, daemon, nobody...); choose another"]
        );
    }
    assert!(cel_failures(&schema, &vm(json!({ "sshId": "rooted" })), None).is_empty());
}

#[test]
fn image_cannot_change() {
    let failures = vm_update_failures(json!({"image": "ubuntu-22.04"}), json!({"image": "debian-12"}));
    assert_eq!(failures, ["image cannot be changed; create a new virtual machine instead"]);
}

#[test]
fn disk_may_grow_but_not_shrink() {
    assert_eq!(vm_update_failures(json!({"disk": "25Gi"}), json!({"disk": "30Gi"})), Vec::<String>::new());
    // Written another way but the same size is no shrink.
    assert_eq!(vm_update_failures(json!({"disk": "1Gi"}), json!({"disk": "1024Mi"})), Vec::<String>::new());
    assert_eq!(
        vm_update_failures(json!({"disk": "25Gi"}), json!({"disk": "20Gi"})),
        ["disk can grow but cannot shrink"]
    );
    // 1000Gi is less than 1Ti (1024Gi): units are compared as quantities, not as text.
    assert_eq!(
        vm_update_failures(json!({"disk": "1Ti"}), json!({"disk": "1000Gi"})),
        ["disk can grow but cannot shrink"]
    );
}

#[test]
fn a_zero_size_is_refused() {
    let schema = openapi_schema::<KiteVirtualMachine>();
    let failures = cel_failures(&schema, &vm(json!({"memory": "0"})), None);
    assert_eq!(failures, ["must be a size greater than zero, such as 4Gi"]);
}

#[test]
fn a_delete_request_cannot_be_withdrawn() {
    assert_eq!(vm_update_failures(json!({"delete": false}), json!({"delete": true})), Vec::<String>::new());
    assert_eq!(
        vm_update_failures(json!({"delete": true}), json!({"delete": false})),
        ["a delete request cannot be withdrawn"]
    );
}

#[test]
fn a_users_namespace_cannot_change() {
    let user = |ns: &str| {
        json!({"apiVersion": "hy3ons.github.io/v1", "kind": "KiteUser", "metadata": {"name": "ku-1"},
               "spec": {"username": "a", "email": "a@b.c", "password": "x", "namespace": ns}})
    };
    let schema = openapi_schema::<KiteUser>();
    assert_eq!(cel_failures(&schema, &user("kite-user-ku-1"), Some(&user("kite-user-ku-1"))), Vec::<String>::new());
    assert_eq!(
        cel_failures(&schema, &user("other"), Some(&user("kite-user-ku-1"))),
        ["namespace cannot be changed once set"]
    );
}

#[test]
fn a_users_session_generation_only_grows() {
    let user = |generation: u32| {
        json!({"apiVersion": "hy3ons.github.io/v1", "kind": "KiteUser", "metadata": {"name": "ku-1"},
               "spec": {"username": "a", "email": "a@b.c", "password": "x", "namespace": "n",
                        "sessionGeneration": generation}})
    };
    let schema = openapi_schema::<KiteUser>();
    assert_eq!(cel_failures(&schema, &user(3), Some(&user(2))), Vec::<String>::new());
    assert_eq!(
        cel_failures(&schema, &user(1), Some(&user(2))),
        ["sessionGeneration only grows: lowering it would bring signed-out sessions back"]
    );
}

fn platform(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "hy3ons.github.io/v1", "kind": "KitePlatform", "metadata": {"name": name}, "spec": spec})
}

#[test]
fn the_platform_must_be_named_kite() {
    let schema = openapi_schema::<KitePlatform>();
    assert_eq!(cel_failures(&schema, &platform("kite", json!({})), None), Vec::<String>::new());
    assert_eq!(
        cel_failures(&schema, &platform("prod", json!({})), None),
        ["the KitePlatform is a singleton and must be named kite"]
    );
}

#[test]
fn an_enabled_host_fallback_needs_an_address() {
    let schema = openapi_schema::<KitePlatform>();
    let fallback = |f: Value| platform("kite", json!({"sshGateway": {"hostFallback": f}}));
    assert_eq!(cel_failures(&schema, &fallback(json!({"enabled": false})), None), Vec::<String>::new());
    assert_eq!(
        cel_failures(&schema, &fallback(json!({"enabled": true, "address": "127.0.0.1:2222"})), None),
        Vec::<String>::new()
    );
    assert_eq!(
        cel_failures(&schema, &fallback(json!({"enabled": true})), None),
        ["hostFallback.address is required when hostFallback is enabled"]
    );
}

#[test]
fn machine_domains_tls_names_where_its_certificate_comes_from() {
    let schema = openapi_schema::<KitePlatform>();
    let domains = |d: Value| platform("kite", json!({"machineDomains": d}));
    assert_eq!(cel_failures(&schema, &domains(json!({"tls": "None"})), None), Vec::<String>::new());
    assert_eq!(
        cel_failures(&schema, &domains(json!({"tls": "PlatformCertificate", "certificateSecret": "wildcard"})), None),
        Vec::<String>::new()
    );
    assert_eq!(
        cel_failures(&schema, &domains(json!({"tls": "PlatformCertificate"})), None),
        ["tls PlatformCertificate needs certificateSecret"]
    );
    assert_eq!(
        cel_failures(&schema, &domains(json!({"tls": "CertManager"})), None),
        ["tls CertManager needs clusterIssuer"]
    );
}

#[test]
fn force_https_needs_a_certificate() {
    let schema = openapi_schema::<KitePlatform>();
    let ingress = |i: Value| platform("kite", json!({"platformIngress": i}));
    assert_eq!(cel_failures(&schema, &ingress(json!({"forceHttps": false})), None), Vec::<String>::new());
    assert_eq!(
        cel_failures(&schema, &ingress(json!({"forceHttps": true, "tlsSecret": "kite-tls"})), None),
        Vec::<String>::new()
    );
    assert_eq!(
        cel_failures(&schema, &ingress(json!({"forceHttps": true})), None),
        ["forceHttps needs tlsSecret: HTTPS needs a certificate"]
    );
}
