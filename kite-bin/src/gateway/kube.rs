//! `kite gateway --kube`: the SSH router with kite-ssh's Kubernetes
//! backend, its host key from a Secret (or a file), and probes.

use super::args::GatewayArgs;
use super::control::Control;
use super::store::{self, SwitchStore};
use crate::names::CONTROL_TOKEN_FIELD;
use crate::probes::Probes;
use crate::secret_once::{field, read_or_create};
use anyhow::Context;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kite_core::labels::{COMPONENT, MANAGED_BY};
use kite_core::ssh_secret;
use kite_ssh::kube::{ClusterDns, KubeBackend};
use kite_ssh::{Router, RouterOptions};
use kube::api::Api;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use russh::keys::ssh_key::LineEnding;
use russh::keys::{Algorithm, HashAlg, PrivateKey};
use std::collections::BTreeMap;

/// The value of `hy3ons.github.io/managed-by` on what the gateway creates.
const MANAGER: &str = "kite-gateway";

/// Runs the gateway on the cluster until Ctrl-C or SIGTERM.
pub async fn run(args: GatewayArgs) -> anyhow::Result<()> {
    let client = crate::cluster::connect(args.kubeconfig.as_ref()).await?;
    let host_key = match &args.host_key {
        Some(path) => kite_ssh::host_key::load_or_generate(path)?,
        None => host_key_from_secret(&client, &args.namespace, &args.host_key_secret).await?,
    };
    tracing::info!(fingerprint = %host_key.public_key().fingerprint(HashAlg::Sha256), "host key");

    let mut registry = Registry::default();
    let synced = Gauge::<i64>::default();
    registry.register("kite_gateway_routes_synced", "1 once the machines and users have been listed", synced.clone());
    let probes = Probes::new(registry);
    let http = probes.serve(args.http).await?;

    let mut backend = KubeBackend::start(client.clone(), ClusterDns { domain: args.cluster_domain.clone() });
    if let Some(user) = &args.upstream_user {
        backend = backend.with_upstream_user(user);
    }
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let address = listener.local_addr().context("cannot read the listening address")?;
    // Ready once the machines and users are listed: before, every login would be refused.
    let listed = backend.when_synced();
    tokio::spawn(async move {
        if listed.await {
            tracing::info!("machines and users listed; routing");
            probes.set_ready(true);
            synced.set(1);
        }
    });
    tracing::info!(%address, %http, "kite gateway listening, routing to the cluster's machines");
    eprintln!("kite gateway listening on {address}");
    let options = RouterOptions::default().with_proxy_protocol_from(args.proxy_protocol_from.clone());
    let recording =
        store::platform_setting(&client).await.context("reading the KitePlatform's session recording settings")?;
    let cluster = store::Cluster { client: &client, namespace: &args.namespace };
    let store = SwitchStore::new(store::build(&recording, args.audit_dir.as_ref(), &cluster).await);
    store::follow(client.clone(), args.namespace.clone(), store.clone(), args.audit_dir.clone(), recording);
    let router = Router::builder()
        .backend(backend)
        .host_key(host_key)
        .options(options)
        .audit(store.clone())
        .build()
        .context("assembling the SSH router")?;
    let token = control_token_from_secret(&client, &args.namespace, &args.control_token_secret).await?;
    let control = Control::new(router.sessions(), store, &token).serve(args.control_listen).await?;
    tracing::info!(%control, "the control API listening");
    router.serve(listener, crate::signal::shutdown()).await?;
    Ok(())
}

/// The host key in the Secret `namespace/name` (`ssh-privatekey`), made and
/// stored once when there is none, so replicas and restarts share it.
pub async fn host_key_from_secret(client: &kube::Client, namespace: &str, name: &str) -> anyhow::Result<PrivateKey> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let what = format!("the host key Secret {namespace}/{name}");
    let secret = read_or_create(&secrets, name, || {
        let key = PrivateKey::random(&mut rand::rng(), Algorithm::Ed25519).context("generating a host key")?;
        let text = key.to_openssh(LineEnding::LF).context("encoding the host key")?;
        let mut secret = gateway_secret(namespace, name);
        secret.type_ = Some(ssh_secret::SECRET_TYPE.into());
        secret.data = Some(BTreeMap::from([(ssh_secret::PRIVATE_KEY.into(), ByteString(text.as_bytes().to_vec()))]));
        Ok(secret)
    })
    .await?;
    let text = field(&secret, ssh_secret::PRIVATE_KEY)
        .map(|value| String::from_utf8_lossy(value).into_owned())
        .with_context(|| format!("{what} has no {}", ssh_secret::PRIVATE_KEY))?;
    russh::keys::decode_secret_key(&text, None).with_context(|| format!("{what} does not hold an OpenSSH private key"))
}

/// The control API's token in the Secret `namespace/name` (`token`), made
/// once when there is none; `kite api` reads the same Secret.
pub async fn control_token_from_secret(client: &kube::Client, namespace: &str, name: &str) -> anyhow::Result<String> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let secret = read_or_create(&secrets, name, || {
        let mut secret = gateway_secret(namespace, name);
        secret.data = Some(BTreeMap::from([(CONTROL_TOKEN_FIELD.into(), ByteString(random_token().into_bytes()))]));
        Ok(secret)
    })
    .await?;
    field(&secret, CONTROL_TOKEN_FIELD)
        .map(|value| String::from_utf8_lossy(value).into_owned())
        .filter(|token| token.len() >= 32)
        .with_context(|| {
            format!(
                "the Secret {namespace}/{name} holds no usable {CONTROL_TOKEN_FIELD} (delete it to have a new one made)"
            )
        })
}

/// A new control token: 32 random bytes, hexadecimal.
pub fn random_token() -> String {
    let mut bytes = [0u8; 32];
    rand::RngExt::fill(&mut rand::rng(), &mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A Secret of the gateway's, labelled as its.
fn gateway_secret(namespace: &str, name: &str) -> Secret {
    let mut secret = Secret::default();
    secret.metadata.name = Some(name.into());
    secret.metadata.namespace = Some(namespace.into());
    secret.metadata.labels =
        Some(BTreeMap::from([(MANAGED_BY.into(), MANAGER.into()), (COMPONENT.into(), "gateway".into())]));
    secret
}
