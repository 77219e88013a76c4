//! Step 2 of the VM reconciler: the machine's key pairs, read from its
//! Secret `<vm>-ssh-key`, or made once and stored there. A Secret of that
//! name that is not Kite's is neither used nor replaced.

use super::config::{Config, FIELD_MANAGER, name_of};
use super::desired;
use super::keys::KeyPair;
use crate::api::KiteVirtualMachine;
use crate::reconcile::{Context, apply};
use crate::{Error, labels, names, ssh_secret};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PostParams};
use kube::runtime::events::EventType;

/// Step 2: the key pairs, from the existing Secret or made once.
pub(super) async fn ensure_keys(vm: &KiteVirtualMachine, ctx: &Context<Config>) -> Result<(KeyPair, KeyPair), Error> {
    let (name, namespace) = name_of(vm)?;
    let secret_name = names::ssh_key_secret(&name);
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &namespace);
    let read = |what| Error::kube(format!("{what} the Secret {namespace}/{secret_name}"));
    // From the cache when there is one: a cache that lags the Secret's
    // creation makes the create below answer AlreadyExists, and that one is used.
    let resource = kube::core::ApiResource::erase::<Secret>(&());
    if let Some(live) = apply::read_in(&ctx.stores, &ctx.client, &resource, Some(&namespace), &secret_name).await? {
        let secret: Secret = serde_json::from_value(live)
            .map_err(|source| Error::Serde { what: format!("reading the Secret {namespace}/{secret_name}"), source })?;
        return keys_from(&secret, &namespace, &secret_name);
    }
    let login = ctx.config.keys.generate(&format!("kite-gateway@{name}"))?;
    let host = ctx.config.keys.generate(&format!("root@{name}"))?;
    let secret = desired::ssh_key_secret(vm, &login, &host)?;
    let params = PostParams { field_manager: Some(FIELD_MANAGER.into()), ..PostParams::default() };
    match secrets.create(&params, &secret).await {
        Ok(created) => {
            // The next pass reads this answer until the cache shows the Secret.
            ctx.stores.wrote(&resource, &apply::to_json(&created, "the SSH key Secret")?);
            let note = "Created the SSH keys the gateway uses to reach the machine.".to_string();
            ctx.event(vm, EventType::Normal, "KeysCreated", "CreateSecret", note).await;
            Ok((login, host))
        }
        // Another pass created it first: use that one.
        Err(kube::Error::Api(status)) if status.is_already_exists() => {
            let secret = secrets.get(&secret_name).await.map_err(read("reading"))?;
            keys_from(&secret, &namespace, &secret_name)
        }
        Err(source) => Err(read("creating")(source)),
    }
}

fn keys_from(secret: &Secret, namespace: &str, name: &str) -> Result<(KeyPair, KeyPair), Error> {
    if !labels::is_managed_by_controller(secret.metadata.labels.as_ref()) {
        return Err(Error::NotOurs { kind: "Secret".into(), namespace: namespace.into(), name: name.into() });
    }
    let get = |key: &'static str| {
        secret
            .data
            .as_ref()
            .and_then(|data| data.get(key))
            .and_then(|value| String::from_utf8(value.0.clone()).ok())
            .filter(|value| !value.trim().is_empty())
            .ok_or(Error::BadSecret { namespace: namespace.into(), name: name.into(), key })
    };
    let login =
        KeyPair { private_openssh: get(ssh_secret::PRIVATE_KEY)?, public_openssh: get(ssh_secret::PUBLIC_KEY)? };
    let host = KeyPair {
        private_openssh: get(ssh_secret::HOST_PRIVATE_KEY)?,
        public_openssh: get(ssh_secret::HOST_PUBLIC_KEY)?,
    };
    Ok((login, host))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{KiteVirtualMachineSpec, PowerState};
    use crate::reconcile::Metrics;
    use crate::vm::keys::MockKeyGenerator;
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use std::sync::Arc;

    fn a_vm() -> KiteVirtualMachine {
        let mut vm = KiteVirtualMachine::new(
            "web",
            KiteVirtualMachineSpec {
                cpu: 1,
                memory: Quantity("1Gi".into()),
                disk: Quantity("25Gi".into()),
                image: "ubuntu-22.04".into(),
                power_state: PowerState::On,
                domain_prefix: None,
                ssh_id: "alice".into(),
                ssh_password_hash: None,
                console_password_hash: None,
                delete: false,
            },
        );
        vm.metadata.namespace = Some("default".into());
        vm.metadata.uid = Some("0b6f7c1e-0000-4000-8000-000000000009".into());
        vm
    }

    fn context(keys: MockKeyGenerator, server: &kite_testkit::FakeApiServer) -> Context<Config> {
        Context::new(server.client(), Config { keys: Arc::new(keys), ..Config::default() }, Metrics::default(), None)
    }

    #[tokio::test]
    async fn keys_are_made_once_and_never_again_while_their_secret_exists() {
        let server = kite_testkit::FakeApiServer::new().unwrap();
        let mut keys = MockKeyGenerator::new();
        keys.expect_generate().times(2).returning(|comment| {
            Ok(KeyPair {
                private_openssh: format!("private {comment}"),
                public_openssh: format!("ssh-ed25519 AAAA {comment}"),
            })
        });
        let ctx = context(keys, &server);
        let first = ensure_keys(&a_vm(), &ctx).await.unwrap();
        let again = ensure_keys(&a_vm(), &ctx).await.unwrap();
        assert_eq!(first, again);
        assert_eq!(first.0.public_openssh, "ssh-ed25519 AAAA kite-gateway@web");
        assert_eq!(first.1.public_openssh, "ssh-ed25519 AAAA root@web");
        // The mock checks on drop that exactly two pairs were made.
    }

    #[tokio::test]
    async fn a_secret_of_that_name_that_is_not_kites_is_neither_used_nor_replaced() {
        let server = kite_testkit::FakeApiServer::new().unwrap();
        let theirs = serde_json::json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "web-ssh-key", "namespace": "default"},
            "stringData": {"ssh-privatekey": "theirs"}, "type": "kubernetes.io/ssh-auth"});
        server.create("", "v1", "secrets", Some("default"), theirs).unwrap();
        let mut keys = MockKeyGenerator::new();
        keys.expect_generate().never();
        let error = ensure_keys(&a_vm(), &context(keys, &server)).await.unwrap_err();
        assert!(matches!(error, Error::NotOurs { .. }), "{error}");
    }
}
