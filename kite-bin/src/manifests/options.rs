//! The options of `kite manifests` (what the deployment is made from), and
//! the namespaces they name.

use clap::Args;

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
    pub fn namespaces(&self) -> Namespaces {
        Namespaces {
            platform: self.namespace.clone(),
            golden_images: self.golden_image_namespace.clone().unwrap_or_else(|| self.namespace.clone()),
            longhorn: self.longhorn_namespace.clone(),
        }
    }
}

/// The namespaces the grants name.
#[derive(Clone, Debug)]
pub struct Namespaces {
    /// The platform namespace, where Kite runs.
    pub platform: String,
    /// `KitePlatform.spec.goldenImageNamespace`.
    pub golden_images: String,
    /// `KitePlatform.spec.storage.longhornNamespace`.
    pub longhorn: String,
}
