//! The three Deployments, their PodDisruptionBudgets and their
//! ServiceAccounts: the restricted Pod Security profile, probes on the
//! components' own endpoints, resources, and replicas spread over nodes.

use super::component::{CONTROL_PORT, CONTROL_SERVICE, Component, ports, selector};
use super::labels::{labels, meta};
use super::options::Options;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, DeploymentStrategy};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, EnvVar, EnvVarSource, HTTPGetAction, ObjectFieldSelector,
    PersistentVolumeClaim, PersistentVolumeClaimSpec, PersistentVolumeClaimVolumeSource, PodSecurityContext, PodSpec,
    PodTemplateSpec, Probe, ResourceRequirements, SeccompProfile, SecurityContext, ServiceAccount,
    TopologySpreadConstraint, Volume, VolumeMount, VolumeResourceRequirements,
};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeMap;

/// The user the image runs as (the `nonroot` user of distroless images).
pub const RUN_AS: i64 = 65532;

/// The gateway's audit volume claim, and where it is mounted.
pub const AUDIT_CLAIM: &str = "kite-gateway-audit";
const AUDIT_DIR: &str = "/var/lib/kite/audit";

/// Whether the gateway keeps its store on a volume of its own (one replica).
fn audit_volume(options: &Options) -> bool {
    options.gateway_replicas == 1
}

fn pod_labels(component: Component) -> BTreeMap<String, String> {
    let mut all = labels();
    all.extend(selector(component));
    all.insert("app.kubernetes.io/component".into(), component.short().into());
    all
}

fn args(component: Component, options: &Options) -> Vec<String> {
    let namespace = options.namespace.clone();
    let mut args: Vec<String> = match component {
        Component::Controller => vec![
            "controller".into(),
            "--namespace".into(),
            namespace,
            "--service-account".into(),
            component.name().into(),
            "--gateway-service-account".into(),
            Component::Gateway.name().into(),
            "--longhorn-namespace".into(),
            options.longhorn_namespace.clone(),
        ],
        Component::Api => vec![
            "api".into(),
            "--namespace".into(),
            namespace.clone(),
            "--gateway-control".into(),
            // Headless: the name resolves to every gateway replica.
            format!("{}.{namespace}.svc:{CONTROL_PORT}", CONTROL_SERVICE),
        ],
        Component::Gateway => vec!["gateway".into(), "--kube".into(), "--namespace".into(), namespace],
    };
    if component == Component::Gateway && audit_volume(options) {
        args.extend(["--audit-dir".to_string(), AUDIT_DIR.to_string()]);
    }
    if component == Component::Api {
        // Traefik forwards from a pod of the cluster network (K3s' default cluster CIDR).
        args.extend(["--trusted-proxy".to_string(), options.pod_cidr.clone()]);
    }
    args
}

fn http_probe(path: &str, port: &str, period: i32, failures: i32) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.into()),
            port: IntOrString::String(port.into()),
            ..HTTPGetAction::default()
        }),
        period_seconds: Some(period),
        failure_threshold: Some(failures),
        timeout_seconds: Some(2),
        ..Probe::default()
    }
}

fn container(component: Component, options: &Options) -> Container {
    let ready = match component {
        // `/api/v1/health` answers 200 once the caches are synced and the cluster answers.
        Component::Api => "/api/v1/health",
        Component::Controller | Component::Gateway => "/readyz",
    };
    let quantity = |q: &str| Quantity(q.to_string());
    Container {
        name: component.short().into(),
        image: Some(options.image.clone()),
        image_pull_policy: Some("IfNotPresent".into()),
        args: Some(args(component, options)),
        env: Some(vec![
            EnvVar {
                name: "POD_NAME".into(),
                value_from: Some(EnvVarSource {
                    field_ref: Some(ObjectFieldSelector {
                        field_path: "metadata.name".into(),
                        ..ObjectFieldSelector::default()
                    }),
                    ..EnvVarSource::default()
                }),
                ..EnvVar::default()
            },
            EnvVar { name: "RUST_LOG".into(), value: Some("info".into()), ..EnvVar::default() },
        ]),
        ports: Some(
            ports(component)
                .iter()
                .map(|(name, port)| ContainerPort {
                    name: Some(name.to_string()),
                    container_port: *port,
                    ..ContainerPort::default()
                })
                .collect(),
        ),
        startup_probe: Some(http_probe("/healthz", "http", 2, 30)),
        liveness_probe: Some(http_probe("/healthz", "http", 10, 3)),
        readiness_probe: Some(http_probe(ready, "http", 5, 2)),
        resources: Some(ResourceRequirements {
            requests: Some(BTreeMap::from([("cpu".into(), quantity("50m")), ("memory".into(), quantity("64Mi"))])),
            limits: Some(BTreeMap::from([("memory".into(), quantity("256Mi"))])),
            ..ResourceRequirements::default()
        }),
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            read_only_root_filesystem: Some(true),
            capabilities: Some(Capabilities { drop: Some(vec!["ALL".into()]), ..Capabilities::default() }),
            ..SecurityContext::default()
        }),
        volume_mounts: (component == Component::Gateway && audit_volume(options)).then(|| {
            vec![VolumeMount { name: "audit".into(), mount_path: AUDIT_DIR.into(), ..VolumeMount::default() }]
        }),
        ..Container::default()
    }
}

/// The gateway's audit volume claim (with one replica).
fn audit_claim(options: &Options) -> PersistentVolumeClaim {
    PersistentVolumeClaim {
        metadata: meta(AUDIT_CLAIM, Some(&options.namespace)),
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteOnce".into()]),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([("storage".into(), Quantity(options.audit_volume_size.clone()))])),
                ..VolumeResourceRequirements::default()
            }),
            ..PersistentVolumeClaimSpec::default()
        }),
        ..PersistentVolumeClaim::default()
    }
}

fn deployment(component: Component, options: &Options) -> Deployment {
    let with_volume = component == Component::Gateway && audit_volume(options);
    Deployment {
        metadata: meta(component.name(), Some(&options.namespace)),
        spec: DeploymentSpec {
            replicas: Some(if component == Component::Gateway { options.gateway_replicas } else { 2 }),
            // A volume that one node mounts at a time: the old pod goes before the new one comes.
            strategy: with_volume
                .then(|| DeploymentStrategy { type_: Some("Recreate".into()), ..DeploymentStrategy::default() }),
            selector: LabelSelector { match_labels: Some(selector(component)), ..LabelSelector::default() },
            template: PodTemplateSpec {
                metadata: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                    labels: Some(pod_labels(component)),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    service_account_name: Some(component.name().into()),
                    security_context: Some(PodSecurityContext {
                        run_as_non_root: Some(true),
                        run_as_user: Some(RUN_AS),
                        run_as_group: Some(RUN_AS),
                        fs_group: with_volume.then_some(RUN_AS),
                        seccomp_profile: Some(SeccompProfile {
                            type_: "RuntimeDefault".into(),
                            ..SeccompProfile::default()
                        }),
                        ..PodSecurityContext::default()
                    }),
                    containers: vec![container(component, options)],
                    topology_spread_constraints: Some(vec![TopologySpreadConstraint {
                        max_skew: 1,
                        topology_key: "kubernetes.io/hostname".into(),
                        when_unsatisfiable: "ScheduleAnyway".into(),
                        label_selector: Some(LabelSelector {
                            match_labels: Some(selector(component)),
                            ..LabelSelector::default()
                        }),
                        ..TopologySpreadConstraint::default()
                    }]),
                    termination_grace_period_seconds: Some(30),
                    volumes: with_volume.then(|| {
                        vec![Volume {
                            name: "audit".into(),
                            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                                claim_name: AUDIT_CLAIM.into(),
                                ..PersistentVolumeClaimVolumeSource::default()
                            }),
                            ..Volume::default()
                        }]
                    }),
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        },
        ..Deployment::default()
    }
}

fn disruption_budget(component: Component, options: &Options) -> PodDisruptionBudget {
    PodDisruptionBudget {
        metadata: meta(component.name(), Some(&options.namespace)),
        spec: Some(PodDisruptionBudgetSpec {
            max_unavailable: Some(IntOrString::Int(1)),
            selector: Some(LabelSelector { match_labels: Some(selector(component)), ..LabelSelector::default() }),
            ..PodDisruptionBudgetSpec::default()
        }),
        ..PodDisruptionBudget::default()
    }
}

/// Per component: its ServiceAccount, Deployment and PodDisruptionBudget.
pub fn objects(options: &Options) -> Result<Vec<serde_json::Value>, serde_json::Error> {
    let mut objects = Vec::new();
    for component in Component::ALL {
        let account =
            ServiceAccount { metadata: meta(component.name(), Some(&options.namespace)), ..ServiceAccount::default() };
        objects.push(serde_json::to_value(account)?);
    }
    if audit_volume(options) {
        objects.push(serde_json::to_value(audit_claim(options))?);
    }
    for component in Component::ALL {
        objects.push(serde_json::to_value(deployment(component, options))?);
        objects.push(serde_json::to_value(disruption_budget(component, options))?);
    }
    Ok(objects)
}
