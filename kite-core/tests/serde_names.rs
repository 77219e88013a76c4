//! Every field of every Kite kind round-trips through serde under the exact
//! JSON name the existing platform uses.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kite_core::api::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::fmt::Debug;

fn time(s: &str) -> Time {
    Time(s.parse().unwrap())
}

fn condition(type_: &str) -> Condition {
    Condition {
        type_: type_.into(),
        status: ConditionStatus::True,
        reason: Some("Reconciled".into()),
        message: Some("all good".into()),
        observed_generation: Some(3),
        last_transition_time: Some(time("2026-07-01T10:00:00Z")),
    }
}

fn condition_json(type_: &str) -> Value {
    json!({
        "type": type_, "status": "True", "reason": "Reconciled", "message": "all good",
        "observedGeneration": 3, "lastTransitionTime": "2026-07-01T10:00:00Z"
    })
}

/// Asserts `object` serializes to exactly `expected`, and `expected` reads back as `object`.
fn assert_round_trip<T: Serialize + DeserializeOwned + PartialEq + Debug>(object: &T, expected: Value) {
    let written = serde_json::to_value(object).unwrap();
    assert_eq!(written, expected, "serialized JSON differs from the expected field names");
    let read: T = serde_json::from_value(expected).unwrap();
    assert_eq!(&read, object, "the expected JSON does not read back as the object");
}

#[test]
fn kite_user_round_trips_with_its_snake_case_field_names() {
    let mut user = KiteUser::new(
        "ku-0b6f7c1e",
        KiteUserSpec {
            username: "alice".into(),
            email: "alice@example.com".into(),
            password: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA".into(),
            namespace: "kite-user-ku-0b6f7c1e".into(),
            profile_image: String::new(),
            access_level: AccessLevel::Manager,
            ssh_authorized_keys: vec!["ssh-ed25519 AAAAC3Nza alice@laptop".into()],
            session_generation: 2,
        },
    );
    user.status = Some(KiteUserStatus {
        phase: Some(UserPhase::Ready),
        observed_generation: Some(3),
        observed_namespace: Some("kite-user-ku-0b6f7c1e".into()),
        message: Some("ready".into()),
        conditions: vec![condition("NamespaceReady")],
    });
    assert_round_trip(
        &user,
        json!({
            "apiVersion": "hy3ons.github.io/v1", "kind": "KiteUser",
            "metadata": {"name": "ku-0b6f7c1e"},
            "spec": {
                "username": "alice", "email": "alice@example.com",
                "password": "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA",
                "namespace": "kite-user-ku-0b6f7c1e", "profile_image": "", "access_level": 2,
                "sshAuthorizedKeys": ["ssh-ed25519 AAAAC3Nza alice@laptop"], "sessionGeneration": 2
            },
            "status": {
                "phase": "Ready", "observedGeneration": 3, "observedNamespace": "kite-user-ku-0b6f7c1e",
                "message": "ready", "conditions": [condition_json("NamespaceReady")]
            }
        }),
    );
}

#[test]
fn a_user_written_by_the_existing_platform_still_reads() {
    // The Go platform wrote no sshAuthorizedKeys and conditions with only some fields.
    let legacy: KiteUser = serde_json::from_value(json!({
        "apiVersion": "hy3ons.github.io/v1", "kind": "KiteUser", "metadata": {"name": "ku-1"},
        "spec": {"username": "bob", "email": "bob@example.com", "password": "$2a$12$abc",
                 "namespace": "kite-user-ku-1", "profile_image": "", "access_level": 3},
        "status": {"phase": "Ready", "conditions": [{"type": "NamespaceReady", "status": "True"}]}
    }))
    .unwrap();
    assert_eq!(legacy.spec.access_level, AccessLevel::Admin);
    assert!(legacy.spec.ssh_authorized_keys.is_empty());
    assert_eq!(legacy.status.unwrap().conditions[0].reason, None);
}

#[test]
fn an_access_level_outside_zero_to_three_is_refused() {
    let error = serde_json::from_value::<AccessLevel>(json!(4)).unwrap_err();
    assert!(error.to_string().contains('4'), "{error}");
}

#[test]
fn kite_virtual_machine_round_trips_with_its_camel_case_field_names() {
    let mut vm = KiteVirtualMachine::new(
        "web",
        KiteVirtualMachineSpec {
            cpu: 2,
            memory: Quantity("4Gi".into()),
            disk: Quantity("25Gi".into()),
            image: "ubuntu-22.04".into(),
            power_state: PowerState::On,
            domain_prefix: Some("web".into()),
            ssh_id: "alice_web".into(),
            ssh_password_hash: Some("$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA".into()),
            console_password_hash: Some("$6$c2FsdHNhbHQ$aGFzaGhhc2hoYXNo".into()),
            delete: false,
        },
    );
    vm.metadata.namespace = Some("kite-user-ku-1".into());
    vm.status = Some(KiteVirtualMachineStatus {
        phase: Some(VirtualMachinePhase::Running),
        current_power_state: Some(PowerState::On),
        observed_generation: Some(3),
        domain: Some("web.example.com".into()),
        url: Some("https://web.example.com".into()),
        node_name: Some("node-1".into()),
        ssh_key_secret_name: Some("web-ssh-key".into()),
        cloud_init_secret_name: Some("web-cloud-init-userdata".into()),
        service_name: Some("vps-access-web".into()),
        data_volume_name: Some("web-disk".into()),
        data_volume_phase: Some("Succeeded".into()),
        data_volume_progress: Some("100.0%".into()),
        data_volume_message: Some("clone completed".into()),
        conditions: vec![condition("VirtualMachineReady")],
    });
    assert_round_trip(
        &vm,
        json!({
            "apiVersion": "hy3ons.github.io/v1", "kind": "KiteVirtualMachine",
            "metadata": {"name": "web", "namespace": "kite-user-ku-1"},
            "spec": {
                "cpu": 2, "memory": "4Gi", "disk": "25Gi", "image": "ubuntu-22.04", "powerState": "On",
                "domainPrefix": "web", "sshId": "alice_web",
                "sshPasswordHash": "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA",
                "consolePasswordHash": "$6$c2FsdHNhbHQ$aGFzaGhhc2hoYXNo", "delete": false
            },
            "status": {
                "phase": "Running", "currentPowerState": "On", "observedGeneration": 3,
                "domain": "web.example.com", "url": "https://web.example.com", "nodeName": "node-1", "sshKeySecretName": "web-ssh-key",
                "cloudInitSecretName": "web-cloud-init-userdata", "serviceName": "vps-access-web",
                "dataVolumeName": "web-disk", "dataVolumePhase": "Succeeded", "dataVolumeProgress": "100.0%",
                "dataVolumeMessage": "clone completed", "conditions": [condition_json("VirtualMachineReady")]
            }
        }),
    );
}

#[test]
fn a_vm_phase_this_version_does_not_know_reads_as_unknown() {
    let status: KiteVirtualMachineStatus = serde_json::from_value(json!({"phase": "Hibernating"})).unwrap();
    assert_eq!(status.phase, Some(VirtualMachinePhase::Unknown));
}

#[test]
fn a_vm_without_power_state_or_delete_reads_as_off_and_not_deleted() {
    let spec: KiteVirtualMachineSpec = serde_json::from_value(json!({
        "cpu": 1, "memory": "1Gi", "disk": "20Gi", "image": "ubuntu-22.04", "sshId": "bob"
    }))
    .unwrap();
    assert_eq!(spec.power_state, PowerState::Off);
    assert!(!spec.delete);
}

#[test]
fn kite_virtual_machine_offer_round_trips() {
    let mut offer = KiteVirtualMachineOffer::new(
        "offer-1",
        KiteVirtualMachineOfferSpec {
            cpu: 4,
            memory: Quantity("8Gi".into()),
            disk: Quantity("40Gi".into()),
            image: "ubuntu-22.04".into(),
            expires_at: time("2026-12-31T00:00:00Z"),
            created_by: "ku-admin".into(),
        },
    );
    assert_eq!(offer.phase(), OfferPhase::Available, "an offer with no status is available");
    offer.status = Some(KiteVirtualMachineOfferStatus {
        phase: Some(OfferPhase::Claimed),
        claimed_by: Some("ku-1".into()),
        message: Some("offer claimed".into()),
        observed_generation: Some(1),
    });
    assert_eq!(offer.phase(), OfferPhase::Claimed);
    assert_round_trip(
        &offer,
        json!({
            "apiVersion": "hy3ons.github.io/v1", "kind": "KiteVirtualMachineOffer",
            "metadata": {"name": "offer-1"},
            "spec": {"cpu": 4, "memory": "8Gi", "disk": "40Gi", "image": "ubuntu-22.04",
                     "expiresAt": "2026-12-31T00:00:00Z", "createdBy": "ku-admin"},
            "status": {"phase": "Claimed", "claimedBy": "ku-1", "message": "offer claimed", "observedGeneration": 1}
        }),
    );
}

#[test]
fn kite_platform_round_trips() {
    let mut platform = KitePlatform::new(
        PLATFORM_NAME,
        KitePlatformSpec {
            base_domain: Some("vms.example.com".into()),
            access_token_ttl_minutes: 30,
            console_idle_seconds: 600,
            vm_storage_class_name: "kite-vm-storage".into(),
            golden_image_namespace: "kite".into(),
            ssh_gateway: SshGatewaySpec {
                external_enabled: true,
                external_port: Some(12311),
                public_port: Some(22),
                host_fallback: HostFallbackSpec { enabled: true, address: Some("10.0.0.5:2222".into()) },
            },
            golden_images: vec![GoldenImage {
                name: "ubuntu-22.04".into(),
                source: GoldenImageSource {
                    http: HttpSource { url: "https://cloud-images.ubuntu.com/jammy/current/jammy.img".into() },
                },
                size: Quantity("4Gi".into()),
            }],
            storage: StorageSpec { number_of_replicas: 2, recreate_on_drift: true, ..StorageSpec::default() },
            tenant_network: TenantNetworkSpec::default(),
            tenant_quotas: vec![TenantQuota {
                access_level: AccessLevel::User,
                hard: [("requests.cpu".to_string(), Quantity("4".into()))].into(),
                container_limits: None,
            }],
            signup: SignupSpec {
                mode: SignupMode::Invited,
                invited_emails: vec!["ada@example.org".into()],
                admin_email: Some("root@example.org".into()),
                per_address_per_hour: 5,
                per_hour: 50,
            },
            session_recording: SessionRecordingSpec {
                record: RecordMode::OutputAndInput,
                max_age_days: Some(30),
                max_size_mib: Some(10240),
                s3: Some(S3StoreSpec {
                    endpoint: Some("http://minio.minio.svc:9000".into()),
                    bucket: "kite-audit".into(),
                    region: "us-east-1".into(),
                    prefix: "kite/".into(),
                    path_style: true,
                }),
            },
            machine_domains: MachineDomainsSpec {
                tls: MachineTls::CertManager,
                certificate_secret: None,
                cluster_issuer: Some("letsencrypt".into()),
                ingress_class: "traefik".into(),
                ingress_namespace: "kube-system".into(),
            },
            platform_ingress: PlatformIngressSpec {
                enabled: true,
                host: Some("kite.example.org".into()),
                tls_secret: Some("kite-tls".into()),
                force_https: true,
                ingress_class: "traefik".into(),
            },
        },
    );
    platform.status = Some(KitePlatformStatus {
        observed_generation: Some(2),
        conditions: vec![condition("GoldenImagesReady")],
        ssh_gateway: Some(SshGatewayStatus {
            phase: GatewayPhase::Ready,
            reason: Some("LoadBalancerReady".into()),
            message: Some("reachable".into()),
            observed_external_port: Some(12311),
            observed_service_name: Some("kite-gateway-external".into()),
            last_transition_time: Some(time("2026-07-01T10:00:00Z")),
        }),
        platform_url: Some("https://kite.example.org".into()),
        golden_images: vec![GoldenImageStatus {
            name: "ubuntu-22.04".into(),
            ready: false,
            phase: Some("ImportInProgress".into()),
            progress: Some("45.20%".into()),
            message: Some("Importing.".into()),
        }],
        installation: Some(Installation {
            operation: InstallOperation::Install,
            kite_version: "0.1.0".into(),
            image: "localhost/kite@sha256:ab".into(),
            image_digest: Some("sha256:ab".into()),
            installed_by: "kubernetes-admin".into(),
            completed_at: time("2026-07-01T09:00:00Z"),
            stack: vec![StackComponent {
                name: StackName::KubeVirt,
                version: Some("v1.6.0".into()),
                manifests: vec![ReleaseFile {
                    file: "kubevirt-operator.yaml".into(),
                    sha256: "ab12".into(),
                    pinned: false,
                }],
                installed_by_kite: true,
            }],
        }),
    });
    assert_round_trip(
        &platform,
        json!({
            "apiVersion": "hy3ons.github.io/v1", "kind": "KitePlatform", "metadata": {"name": "kite"},
            "spec": {
                "baseDomain": "vms.example.com", "accessTokenTtlMinutes": 30, "consoleIdleSeconds": 600,
                "vmStorageClassName": "kite-vm-storage", "goldenImageNamespace": "kite",
                "sshGateway": {"externalEnabled": true, "externalPort": 12311, "publicPort": 22,
                               "hostFallback": {"enabled": true, "address": "10.0.0.5:2222"}},
                "goldenImages": [{"name": "ubuntu-22.04",
                                  "source": {"http": {"url": "https://cloud-images.ubuntu.com/jammy/current/jammy.img"}},
                                  "size": "4Gi"}],
                "storage": {"manageStorageClass": true, "numberOfReplicas": 2, "diskSelector": "kite",
                            "dataLocality": "best-effort", "recreateOnDrift": true, "longhornNamespace": "longhorn-system"},
                "tenantNetwork": {"cdiNamespace": "cdi", "dnsNamespace": "kube-system",
                    "blockedCidrs": [], "blockHostAddresses": true,
                                  "clusterCidrs": ["10.42.0.0/16", "10.43.0.0/16"]},
                "tenantQuotas": [{"accessLevel": 1, "hard": {"requests.cpu": "4"}}],
                "signup": {"mode": "Invited", "invitedEmails": ["ada@example.org"], "adminEmail": "root@example.org", "perAddressPerHour": 5, "perHour": 50},
                "sessionRecording": {"record": "OutputAndInput", "maxAgeDays": 30, "maxSizeMiB": 10240,
                    "s3": {"endpoint": "http://minio.minio.svc:9000", "bucket": "kite-audit", "region": "us-east-1",
                           "prefix": "kite/", "pathStyle": true}},
                "machineDomains": {"tls": "CertManager", "clusterIssuer": "letsencrypt", "ingressClass": "traefik", "ingressNamespace": "kube-system"},
                "platformIngress": {"enabled": true, "host": "kite.example.org", "tlsSecret": "kite-tls", "forceHttps": true, "ingressClass": "traefik"}
            },
            "status": {
                "observedGeneration": 2, "conditions": [condition_json("GoldenImagesReady")],
                "sshGateway": {"phase": "Ready", "reason": "LoadBalancerReady", "message": "reachable",
                               "observedExternalPort": 12311, "observedServiceName": "kite-gateway-external",
                               "lastTransitionTime": "2026-07-01T10:00:00Z"},
                "platformUrl": "https://kite.example.org",
                "goldenImages": [{"name": "ubuntu-22.04", "ready": false, "phase": "ImportInProgress",
                                  "progress": "45.20%", "message": "Importing."}],
                "installation": {"operation": "Install", "kiteVersion": "0.1.0", "image": "localhost/kite@sha256:ab",
                                 "imageDigest": "sha256:ab", "installedBy": "kubernetes-admin",
                                 "completedAt": "2026-07-01T09:00:00Z",
                                 "stack": [{"name": "kubevirt", "version": "v1.6.0", "installedByKite": true,
                                            "manifests": [{"file": "kubevirt-operator.yaml", "sha256": "ab12", "pinned": false}]}]}
            }
        }),
    );
}

#[test]
fn an_empty_platform_spec_takes_the_documented_defaults() {
    let spec: KitePlatformSpec = serde_json::from_value(json!({})).unwrap();
    assert_eq!(spec, KitePlatformSpec::default());
    assert_eq!(spec.access_token_ttl_minutes, 60);
    assert_eq!(spec.vm_storage_class_name, "kite-vm-storage");
    assert_eq!(spec.golden_image_namespace, "kite");
    assert!(!spec.ssh_gateway.external_enabled);
    assert!(!spec.ssh_gateway.host_fallback.enabled);
}

#[test]
fn the_public_port_defaults_to_the_external_port() {
    let only_external = SshGatewaySpec { external_enabled: true, external_port: Some(2222), ..Default::default() };
    assert_eq!(only_external.effective_public_port(), Some(2222));
    let both = SshGatewaySpec { public_port: Some(22), ..only_external };
    assert_eq!(both.effective_public_port(), Some(22));
    assert_eq!(SshGatewaySpec::default().effective_public_port(), None);
}
