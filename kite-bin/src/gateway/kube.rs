//! `kite gateway --kube`: the SSH router with kite-ssh's Kubernetes
//! backend, its host key from a Secret (or a file), and probes.

use super::GatewayArgs;
use crate::probes::Probes;
use anyhow::Context;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kite_core::labels::{COMPONENT, MANAGED_BY};
use kite_core::ssh_secret;
use kite_ssh::kube::{ClusterDns, KubeBackend};
use kite_ssh::{Router, RouterOptions};
use kube::api::{Api, PostParams};
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

    let mut backend = KubeBackend::start(client, ClusterDns { domain: args.cluster_domain.clone() });
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
    let options = RouterOptions { proxy_protocol_from: args.proxy_protocol_from.clone(), ..RouterOptions::default() };
    let router = Router::new(backend, host_key, options);
    router.serve(listener, crate::signal::shutdown()).await?;
    Ok(())
}

/// The host key in the Secret `namespace/name` (`ssh-privatekey`), made and
/// stored once when there is none, so replicas and restarts share it.
pub async fn host_key_from_secret(client: &kube::Client, namespace: &str, name: &str) -> anyhow::Result<PrivateKey> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let what = format!("the host key Secret {namespace}/{name}");
    for _ in 0..3 {
        if let Some(secret) = secrets.get_opt(name).await.with_context(|| format!("reading {what}"))? {
            let text = secret
                .data
                .as_ref()
                .and_then(|data| data.get(ssh_secret::PRIVATE_KEY))
                .map(|value| String::from_utf8_lossy(&value.0).into_owned())
                .with_context(|| format!("{what} has no {}", ssh_secret::PRIVATE_KEY))?;
            return russh::keys::decode_secret_key(&text, None)
                .with_context(|| format!("{what} does not hold an OpenSSH private key"));
        }
        let key = PrivateKey::random(&mut rand::rng(), Algorithm::Ed25519).context("generating a host key")?;
        let text = key.to_openssh(LineEnding::LF).context("encoding the host key")?;
        let mut secret = Secret::default();
        secret.metadata.name = Some(name.into());
        secret.metadata.namespace = Some(namespace.into());
        secret.metadata.labels =
            Some(BTreeMap::from([(MANAGED_BY.into(), MANAGER.into()), (COMPONENT.into(), "gateway".into())]));
        secret.type_ = Some(ssh_secret::SECRET_TYPE.into());
        secret.data = Some(BTreeMap::from([(ssh_secret::PRIVATE_KEY.into(), ByteString(text.as_bytes().to_vec()))]));
        match secrets.create(&PostParams::default(), &secret).await {
            Ok(_) => {
                tracing::info!(secret = %format!("{namespace}/{name}"), "generated the gateway's host key");
                return Ok(key);
            }
            // Another replica made it first: read theirs.
            Err(kube::Error::Api(status)) if status.is_already_exists() => continue,
            Err(error) => return Err(error).with_context(|| format!("creating {what}")),
        }
    }
    anyhow::bail!("{what} kept changing while it was read")
}
