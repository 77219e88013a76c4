//! The doctor's checks from outside the cluster, as a user meets Kite: the
//! public URL answers `/api/v1/health`, and the public SSH address presents
//! the host key that the Secret `kite-gateway-host-key` holds.

use crate::names::HOST_KEY_SECRET;
use crate::operate::plan::Check;
use k8s_openapi::api::core::v1::Secret;
use kite_core::ssh_secret;
use kube::{Api, Client};
use russh::keys::{HashAlg, PublicKey, PublicKeyOrCertificate};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a check from outside may take.
const LIMIT: Duration = Duration::from_secs(10);

/// `GET <url>/api/v1/health` answers 2xx. The request goes through kube's
/// HTTP client (rustls on ring with the platform's certificate verifier,
/// the TLS stack Kite already runs on), without credentials.
pub async fn public_url(url: &str) -> Check {
    let name = format!("public URL {url}");
    let health = format!("{}/api/v1/health", url.trim_end_matches('/'));
    let client = url
        .parse::<http::Uri>()
        .map_err(|e| e.to_string())
        .map(|uri| {
            let mut config = kube::Config::new(uri);
            config.read_timeout = Some(LIMIT);
            config.connect_timeout = Some(LIMIT);
            config
        })
        .and_then(|config| kube::Client::try_from(config).map_err(|e| e.to_string()));
    let client = match client {
        Ok(client) => client,
        Err(error) => {
            return Check::fail(name, format!("{url} is not a usable URL: {error}"), "give it as https://host");
        }
    };
    let request = match http::Request::get("/api/v1/health").body(Vec::new()) {
        Ok(request) => request,
        Err(error) => return Check::fail(name, format!("cannot build the request: {error}"), "report this as a bug"),
    };
    match tokio::time::timeout(LIMIT, client.send(request.map(kube::client::Body::from))).await {
        Ok(Ok(answer)) if answer.status().is_success() => {
            Check::ok(name, format!("{health} answers {}", answer.status()))
        }
        Ok(Ok(answer)) => Check::fail(
            name,
            format!("{health} answers {}", answer.status()),
            "the Ingress reaches something that is not a healthy kite api: kubectl -n kite get ingress,endpoints kite-api",
        ),
        Ok(Err(error)) => Check::fail(
            name,
            format!("{health} does not answer: {error}"),
            "check the DNS name, the Ingress (kubectl -n kite get ingress) and Traefik on ports 80/443",
        ),
        Err(_) => Check::fail(
            name,
            format!("{health} does not answer within {}s", LIMIT.as_secs()),
            "check the DNS name, the Ingress and the firewall",
        ),
    }
}

/// Records the host key a server presents, then ends the handshake.
struct Presented(Arc<Mutex<Option<PublicKey>>>);

impl russh::client::Handler for Presented {
    type Error = russh::Error;

    async fn check_server_key(&mut self, key: &PublicKeyOrCertificate) -> Result<bool, Self::Error> {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(key.public_key().clone());
        Ok(false)
    }
}

/// `address` presents the host key the gateway's Secret holds.
pub async fn ssh_address(client: &Client, namespace: &str, address: &str) -> Check {
    let name = format!("public SSH {address}");
    let secret = match Api::<Secret>::namespaced(client.clone(), namespace).get_opt(HOST_KEY_SECRET).await {
        Ok(Some(secret)) => secret,
        Ok(None) => {
            return Check::fail(
                name,
                format!("there is no Secret {namespace}/{HOST_KEY_SECRET}"),
                "the gateway makes it when it starts: kubectl -n kite rollout status deployment kite-gateway",
            );
        }
        Err(error) => {
            return Check::fail(
                name,
                format!("cannot read {namespace}/{HOST_KEY_SECRET}: {error}"),
                "give this account get on that Secret",
            );
        }
    };
    let stored = secret
        .data
        .as_ref()
        .and_then(|d| d.get(ssh_secret::PRIVATE_KEY))
        .and_then(|k| russh::keys::decode_secret_key(&String::from_utf8_lossy(&k.0), None).ok())
        .map(|k| k.public_key().clone());
    let Some(stored) = stored else {
        return Check::fail(
            name,
            format!("{namespace}/{HOST_KEY_SECRET} holds no OpenSSH private key"),
            "delete it; the gateway makes a new one when it restarts",
        );
    };
    let seen = Arc::new(Mutex::new(None));
    let config = Arc::new(russh::client::Config::default());
    let connecting = russh::client::connect(config, address, Presented(seen.clone()));
    let outcome = tokio::time::timeout(LIMIT, connecting).await;
    let presented = seen.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let expected = stored.fingerprint(HashAlg::Sha256);
    match (presented, outcome) {
        (Some(key), _) if key.key_data() == stored.key_data() => {
            Check::ok(name, format!("presents {expected}, the key {HOST_KEY_SECRET} holds"))
        }
        (Some(key), _) => Check::fail(
            name,
            format!(
                "presents {}, but {HOST_KEY_SECRET} holds {expected}: users would be warned of a changed host key",
                key.fingerprint(HashAlg::Sha256)
            ),
            "the address reaches another SSH server (the node's own sshd?): check the external port in the KitePlatform and ServiceLB",
        ),
        (None, Err(_)) => Check::fail(
            name,
            format!("no SSH answer within {}s", LIMIT.as_secs()),
            "check the address, the KitePlatform's exposure and the firewall",
        ),
        (None, Ok(Err(error))) => Check::fail(
            name,
            format!("no SSH handshake: {error}"),
            "check the address, the KitePlatform's exposure and the firewall",
        ),
        (None, Ok(Ok(_))) => Check::fail(name, "the server presented no host key", "check what listens there"),
    }
}
