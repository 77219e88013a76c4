//! The machine service: what creating, changing, powering and deleting a
//! `KiteVirtualMachine` means, for the HTTP handlers and the UI pages alike.
//!
//! | module | holds |
//! |---|---|
//! | [`requests`] | what a client sends |
//! | [`plan`] | the pure checks: a request against the caller's level and the platform |
//! | [`rules`] | the sizes each level gets, the images that can be used, how a machine is reached |
//! | this module | the writes: uniqueness, reservations, hashing, the API server |
//!
//! A write is made under reservations taken through
//! [`Claims`], which are given back when
//! the write fails.

pub mod plan;
pub mod requests;
pub mod rules;

use crate::api::auth::Caller;
use crate::api::error::{ApiError, ApiResult};
use crate::api::models::{VmEnvelope, VmView};
use crate::api::reservation::{Claims, Holder, Kind};
use crate::api::state::{AppState, by};
use kite_core::api::{KiteVirtualMachine, PLATFORM_NAME};
use kite_core::key::key;
use kite_core::required::Required;
use plan::{Change, Planned, PrefixChange};
use requests::PatchVm;
use std::sync::Arc;

/// The caller's machine `name`, from the cache.
pub fn own(state: &AppState, caller: &Caller, name: &str) -> ApiResult<Arc<KiteVirtualMachine>> {
    state
        .vms
        .get(&key(Some(caller.namespace()), name))
        .ok_or_else(|| ApiError::not_found(format!("you have no machine named '{name}'")))
}

/// Any user's machine `namespace/name`, from the cache (for admins).
pub fn any(state: &AppState, namespace: &str, name: &str) -> ApiResult<Arc<KiteVirtualMachine>> {
    state
        .vms
        .get(&key(Some(namespace), name))
        .ok_or_else(|| ApiError::not_found(format!("there is no machine {namespace}/{name}")))
}

/// The machine with how to reach it.
pub fn envelope(state: &AppState, vm: &KiteVirtualMachine) -> VmEnvelope {
    let platform = state.platform.get(PLATFORM_NAME);
    VmEnvelope { vm: VmView::from(vm), connection: rules::connection(vm, &state.platform_spec(), platform.as_deref()) }
}

/// Whether a machine other than `namespace/name` is found under `value` in `index`.
fn used_elsewhere(state: &AppState, index: &str, value: &str, namespace: &str, name: &str) -> bool {
    state
        .vms
        .find(index, value)
        .iter()
        .any(|vm| vm.metadata.namespace.as_deref() != Some(namespace) || vm.metadata.name.as_deref() != Some(name))
}

fn ssh_id_taken(ssh_id: &str) -> String {
    format!("the SSH id '{ssh_id}' is taken; choose another")
}

fn prefix_taken(prefix: &str) -> String {
    format!("the domain prefix '{prefix}' is taken; choose another")
}

/// Creates `planned` in the caller's namespace: under the caller's creation
/// lock, within `limit` active machines, with its `sshId` and
/// `domainPrefix` reserved, and `password` stored only as a hash.
pub async fn create(
    state: &AppState,
    caller: &Caller,
    planned: Planned,
    password: String,
    limit: Option<u32>,
) -> ApiResult<KiteVirtualMachine> {
    let namespace = caller.namespace().to_string();
    let lock = state.creation_lock(caller.name());
    let _held = lock.lock().await;
    let mine = state.vms.find(by::NAMESPACE, &namespace);
    if mine.iter().any(|vm| vm.metadata.name.as_deref() == Some(planned.name.as_str())) {
        return Err(ApiError::conflict(format!("you already have a machine named '{}'", planned.name)));
    }
    if let Some(limit) = limit
        && mine.iter().filter(|vm| !vm.spec.delete).count() >= limit as usize
    {
        return Err(ApiError::forbidden(format!(
            "your access level allows {limit} machines at a time; delete one first or ask a manager"
        )));
    }
    let ssh_id = planned.spec.ssh_id.clone();
    if used_elsewhere(state, by::SSH_ID, &ssh_id, &namespace, &planned.name) {
        return Err(ApiError::conflict(ssh_id_taken(&ssh_id)));
    }
    if let Some(prefix) = &planned.spec.domain_prefix
        && used_elsewhere(state, by::DOMAIN_PREFIX, prefix, &namespace, &planned.name)
    {
        return Err(ApiError::conflict(prefix_taken(prefix)));
    }
    let mut claims =
        Claims::new(&state.reservations, Holder::Vm { namespace: namespace.clone(), name: planned.name.clone() });
    let created = async {
        claims.take(Kind::SshId, &ssh_id).await.map_err(|r| r.answer("reserving an sshId", ssh_id_taken(&ssh_id)))?;
        if let Some(prefix) = &planned.spec.domain_prefix {
            claims
                .take(Kind::DomainPrefix, prefix)
                .await
                .map_err(|r| r.answer("reserving a domainPrefix", prefix_taken(prefix)))?;
        }
        let mut spec = planned.spec.clone();
        spec.console_password_hash = Some(state.hashing.console_hash(password.clone()).await?);
        spec.ssh_password_hash = Some(state.hashing.hash(password).await?);
        let vm = KiteVirtualMachine::new(&planned.name, spec);
        state.vms_write(&namespace).create(&vm).await.map_err(|error| match &error {
            kube::Error::Api(status) if status.code == 404 => {
                tracing::info!(%error, %namespace, "the user's namespace is not there yet");
                ApiError::conflict("your workspace is still being prepared; try again in a few seconds")
            }
            kube::Error::Api(status) if status.code == 409 => {
                ApiError::conflict(format!("you already have a machine named '{}'", planned.name))
            }
            _ => ApiError::from_kube("creating a machine", error),
        })
    }
    .await;
    let vm = claims.settle(created).await?;
    tracing::info!(user = caller.name(), vm = %planned.name, "machine requested");
    Ok(vm)
}

/// Writes a merge patch of `spec` to a machine and caches the result.
pub async fn patch_spec(
    state: &AppState,
    vm: &KiteVirtualMachine,
    spec: serde_json::Value,
) -> ApiResult<KiteVirtualMachine> {
    let (namespace, name) = (vm.required_namespace()?, vm.required_name()?);
    let patch = serde_json::json!({ "spec": spec });
    state
        .vms_write(namespace)
        .merge_patch(name, &patch)
        .await
        .map_err(|error| ApiError::from_kube("changing a machine", error))
}

/// Checks and writes a [`PatchVm`] on `vm`: the pure [`plan::change`],
/// then the new prefix reserved, the password hashed and the patch written;
/// the old prefix is given back once the patch is in.
pub async fn change(
    state: &AppState,
    caller: &Caller,
    vm: &KiteVirtualMachine,
    request: PatchVm,
) -> ApiResult<KiteVirtualMachine> {
    let change = plan::change(vm, caller.level(), request)?;
    if change.is_empty() {
        return Ok(vm.clone());
    }
    let Change { mut spec, password, prefix } = change;
    let (namespace, name) = (vm.required_namespace()?, vm.required_name()?);
    let holder = Holder::Vm { namespace: namespace.to_string(), name: name.to_string() };
    if let PrefixChange::Set(prefix) = &prefix
        && used_elsewhere(state, by::DOMAIN_PREFIX, prefix, namespace, name)
    {
        return Err(ApiError::conflict(prefix_taken(prefix)));
    }
    let mut claims = Claims::new(&state.reservations, holder.clone());
    let written = async {
        match &prefix {
            PrefixChange::Keep => {}
            PrefixChange::Set(new) => {
                claims
                    .take(Kind::DomainPrefix, new)
                    .await
                    .map_err(|r| r.answer("reserving a domainPrefix", prefix_taken(new)))?;
                spec.insert("domainPrefix".into(), new.as_str().into());
            }
            PrefixChange::Clear => {
                spec.insert("domainPrefix".into(), serde_json::Value::Null);
            }
        }
        if let Some(password) = password {
            spec.insert("sshPasswordHash".into(), state.hashing.hash(password).await?.into());
        }
        patch_spec(state, vm, serde_json::Value::Object(spec)).await
    }
    .await;
    let updated = claims.settle(written).await?;
    if prefix != PrefixChange::Keep
        && let Some(old) = &vm.spec.domain_prefix
    {
        state.reservations.release_or_report(Kind::DomainPrefix, old, &holder).await;
    }
    Ok(updated)
}

/// Sets `spec.delete` (idempotent); the controller removes the machine and
/// everything made for it.
pub async fn request_deletion(state: &AppState, vm: &KiteVirtualMachine) -> ApiResult<KiteVirtualMachine> {
    if vm.spec.delete {
        return Ok(vm.clone());
    }
    patch_spec(state, vm, serde_json::json!({ "delete": true })).await
}
