//! A Secret made once and shared: by a component's replicas and restarts
//! (the gateway's host key and control token), read by whoever needs it.

use anyhow::Context as _;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PostParams};

/// The Secret `name`, created from `make` when there is none. Two replicas
/// starting at once agree: the one whose create loses reads the winner's.
pub async fn read_or_create(
    secrets: &Api<Secret>,
    name: &str,
    make: impl Fn() -> anyhow::Result<Secret>,
) -> anyhow::Result<Secret> {
    for _ in 0..3 {
        if let Some(secret) = secrets.get_opt(name).await.with_context(|| format!("reading the Secret {name}"))? {
            return Ok(secret);
        }
        match secrets.create(&PostParams::default(), &make()?).await {
            Ok(created) => {
                tracing::info!(secret = name, "made a Secret that is made once");
                return Ok(created);
            }
            Err(kube::Error::Api(status)) if status.is_already_exists() => continue,
            Err(error) => return Err(error).with_context(|| format!("creating the Secret {name}")),
        }
    }
    anyhow::bail!("the Secret {name} kept changing while it was read")
}

/// The bytes of `field` in `secret`, if any.
pub fn field<'a>(secret: &'a Secret, field: &str) -> Option<&'a [u8]> {
    secret.data.as_ref()?.get(field).map(|value| value.0.as_slice())
}
