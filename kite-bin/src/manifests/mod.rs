//! `kite manifests`: Kite's reference deployment on K3s, generated from
//! typed objects like the CRDs. One multi-document YAML stream: the CRDs,
//! the `kite` namespace (Pod Security `restricted`), one ServiceAccount per
//! component with exactly the rights of [`rbac::grants`], the three
//! Deployments with their probes and PodDisruptionBudgets, their Services,
//! and the namespace's NetworkPolicies. The web UI's Ingress is the
//! controller's, from `KitePlatform.spec.platformIngress`.
//! `deploy/k3s/kite.yaml` is its output with the defaults; CI fails when
//! they differ.

mod network;
pub mod rbac;
mod workloads;

use anyhow::Context;
use clap::Args;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use std::collections::BTreeMap;
use std::io::Write;

pub use workloads::RUN_AS;

/// The image the committed manifests name: what `scripts/build-image.sh`
/// tags and `k3s ctr images import` makes known to the node.
pub const DEFAULT_IMAGE: &str = concat!("localhost/kite:", env!("CARGO_PKG_VERSION"));

/// The options of `kite manifests`.
#[derive(Args, Debug, Clone)]
pub struct ManifestArgs {
    /// The image, best pinned by digest (`localhost/kite@sha256:…`, as `scripts/build-image.sh` prints it).
    #[arg(long, default_value = DEFAULT_IMAGE)]
    pub image: String,
    /// The platform namespace.
    #[arg(long, default_value = "kite")]
    pub namespace: String,
    /// `KitePlatform.spec.goldenImageNamespace`, where machines are cloned from (default: the platform namespace).
    #[arg(long)]
    pub golden_image_namespace: Option<String>,
    /// `KitePlatform.spec.storage.longhornNamespace`.
    #[arg(long, default_value = "longhorn-system")]
    pub longhorn_namespace: String,
    /// The namespace of the ingress controller (K3s runs Traefik in `kube-system`).
    #[arg(long, default_value = "kube-system")]
    pub ingress_namespace: String,
    /// The cluster's pod network, from which the ingress controller forwards (K3s' default).
    #[arg(long, default_value = "10.42.0.0/16")]
    pub pod_cidr: String,
    /// The gateway's replicas. With one, it keeps audit events and recordings on its own
    /// volume (the claim `kite-gateway-audit`); more than one share nothing on disk, so they
    /// need `KitePlatform.spec.sessionRecording.s3`, and get no volume.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(i32).range(1..=16))]
    pub gateway_replicas: i32,
    /// The size of the gateway's audit volume (with one replica).
    #[arg(long, default_value = "10Gi")]
    pub audit_volume_size: String,
}

/// What the manifests are made from.
pub type Options = ManifestArgs;

impl Default for ManifestArgs {
    fn default() -> Self {
        use clap::Parser;
        #[derive(Parser)]
        struct Defaults {
            #[command(flatten)]
            args: ManifestArgs,
        }
        Defaults::parse_from(["kite-manifests"]).args
    }
}

impl ManifestArgs {
    /// The namespaces the grants name.
    pub fn namespaces(&self) -> rbac::Namespaces {
        rbac::Namespaces {
            platform: self.namespace.clone(),
            golden_images: self.golden_image_namespace.clone().unwrap_or_else(|| self.namespace.clone()),
            longhorn: self.longhorn_namespace.clone(),
        }
    }
}

/// The labels of everything `kite manifests` makes: what `kite uninstall` may remove.
pub fn labels() -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".to_string(), "kite".to_string()),
        ("app.kubernetes.io/part-of".to_string(), "kite".to_string()),
        ("app.kubernetes.io/managed-by".to_string(), "kite-manifests".to_string()),
        ("app.kubernetes.io/version".to_string(), env!("CARGO_PKG_VERSION").to_string()),
    ])
}

fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: namespace.map(str::to_string),
        labels: Some(labels()),
        ..ObjectMeta::default()
    }
}

/// The platform namespace, held to the `restricted` Pod Security profile.
fn namespace(options: &Options) -> Namespace {
    let mut metadata = meta(&options.namespace, None);
    if let Some(labels) = metadata.labels.as_mut() {
        for mode in ["enforce", "audit", "warn"] {
            labels.insert(format!("pod-security.kubernetes.io/{mode}"), "restricted".into());
        }
        labels.insert("pod-security.kubernetes.io/enforce-version".into(), "latest".into());
    }
    Namespace { metadata, ..Namespace::default() }
}

/// Every object, in the order they apply: CRDs, the namespace, RBAC, workloads, network.
pub fn objects(options: &Options) -> anyhow::Result<Vec<serde_json::Value>> {
    let mut objects = Vec::new();
    for crd in kite_core::api::crds() {
        objects.push(serde_json::to_value(crd).context("could not render a CRD")?);
    }
    objects.push(serde_json::to_value(namespace(options)).context("could not render the namespace")?);
    objects.extend(rbac::objects(&options.namespaces()).context("could not render the RBAC objects")?);
    objects.extend(workloads::objects(options).context("could not render the workloads")?);
    objects.extend(network::objects(options).context("could not render the Services and policies")?);
    Ok(objects)
}

const HEADER: &str = "# Kite's reference deployment on K3s: the CRDs, the platform namespace, one\n\
# ServiceAccount per component with least-privilege RBAC, the controller, the\n\
# API and the gateway, their Services and NetworkPolicies (the controller makes\n\
# the Ingress of the web UI from KitePlatform.spec.platformIngress).\n\
# Generated by `kite manifests` from typed objects; do not edit. CI fails when\n\
# this file differs from what the code generates: regenerate it with\n\
#   cargo run -p kite-bin -- manifests > deploy/k3s/kite.yaml\n";

/// The manifests as one multi-document YAML stream, with a header comment.
pub fn render(options: &Options) -> anyhow::Result<String> {
    let objects = objects(options)?;
    let body = serde_saphyr::to_string_multiple(&objects).context("could not render the manifests as YAML")?;
    Ok(format!("{HEADER}{body}"))
}

/// `kite manifests`: prints [`render`] to standard output.
pub fn print(options: &Options) -> anyhow::Result<()> {
    let yaml = render(options)?;
    let mut out = std::io::stdout().lock();
    out.write_all(yaml.as_bytes()).context("could not write the manifests to standard output")?;
    out.flush().context("could not write the manifests to standard output")
}
