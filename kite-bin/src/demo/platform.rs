//! The demo's platform: the `kite` namespace and a `KitePlatform` with one
//! golden image, whose SSH gateway is exposed on the demo's SSH address.

use anyhow::Context as _;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kite_core::api::{
    GoldenImage, GoldenImageSource, HttpSource, KitePlatform, KitePlatformSpec, PLATFORM_NAME, SshGatewaySpec,
};
use kube::Api;
use kube::api::PostParams;
use std::net::SocketAddr;

/// The golden image the demo offers.
pub const IMAGE: &str = "ubuntu-22.04";

/// Creates the platform namespace and the `KitePlatform`.
pub async fn install(client: &kube::Client, ssh: SocketAddr) -> anyhow::Result<()> {
    let mut namespace = Namespace::default();
    namespace.metadata.name = Some("kite".into());
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .context("creating the kite namespace")?;
    let spec = KitePlatformSpec {
        base_domain: Some(ssh.ip().to_string()),
        ssh_gateway: SshGatewaySpec {
            external_enabled: true,
            external_port: Some(ssh.port()),
            public_port: Some(ssh.port()),
            ..SshGatewaySpec::default()
        },
        golden_images: vec![GoldenImage {
            name: IMAGE.into(),
            source: GoldenImageSource {
                http: HttpSource {
                    url: "https://cloud-images.ubuntu.com/jammy/current/jammy-server-cloudimg-amd64.img".into(),
                },
            },
            size: Quantity("4Gi".into()),
        }],
        ..KitePlatformSpec::default()
    };
    Api::<KitePlatform>::all(client.clone())
        .create(&PostParams::default(), &KitePlatform::new(PLATFORM_NAME, spec))
        .await
        .context("creating the KitePlatform")?;
    Ok(())
}
