//! `vms`: a user's own machines.

use crate::api::auth::Caller;
use crate::api::cache::key;
use crate::api::error::{ApiError, ApiResult, ErrorBody};
use crate::api::hashing::hash_password;
use crate::api::json::Body;
use crate::api::models::{VmEnvelope, VmMessage, VmView, VmsEnvelope};
use crate::api::reservation::{Holder, Kind};
use crate::api::state::{AppState, by};
use crate::api::validate;
use crate::api::vm_rules::{
    self, DEFAULT_CPU, DEFAULT_MEMORY, USER_LEVEL_CPU, USER_LEVEL_DISK, USER_LEVEL_MAX_MACHINES, USER_LEVEL_MEMORY,
};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kite_core::api::{AccessLevel, KiteVirtualMachine, KiteVirtualMachineSpec, PLATFORM_NAME, PowerState};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde::Deserialize;
use std::sync::Arc;
use utoipa::ToSchema;

/// A size: a quantity such as `"25Gi"`, or a number of gibibytes.
#[derive(Deserialize, ToSchema, Clone, Debug)]
#[serde(untagged)]
pub enum SizeInput {
    /// Gibibytes.
    Gibibytes(u64),
    /// A quantity such as `25Gi`.
    Quantity(String),
}

impl SizeInput {
    fn text(&self) -> String {
        match self {
            SizeInput::Gibibytes(n) => n.to_string(),
            SizeInput::Quantity(q) => q.clone(),
        }
    }
}

/// What creating a machine takes.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateVm {
    /// The machine's name; one is made up when absent.
    pub name: Option<String>,
    /// Virtual CPUs (fixed for level-1 users).
    pub cpu: Option<u32>,
    /// Memory (fixed for level-1 users).
    pub memory: Option<SizeInput>,
    /// The golden image; the platform's first when absent.
    pub image: Option<String>,
    /// Disk size, at least 20Gi (fixed for level-1 users).
    pub disk: Option<SizeInput>,
    /// A DNS label for `<domainPrefix>.<baseDomain>`; unique.
    pub domain_prefix: Option<String>,
    /// The SSH login name (`ssh <sshId>@<host>`); unique.
    pub ssh_id: String,
    /// The password the SSH gateway accepts for this machine; stored only as a hash.
    pub ssh_password: String,
    /// Whether it should run; `On` when absent.
    #[schema(value_type = Option<String>, example = "On")]
    pub power_state: Option<PowerState>,
}

/// What may change on a machine.
#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PatchVm {
    /// Virtual CPUs.
    pub cpu: Option<u32>,
    /// Memory.
    pub memory: Option<SizeInput>,
    /// Disk size; it can grow, never shrink.
    pub disk: Option<SizeInput>,
    /// A new `domainPrefix`; `""` removes it.
    pub domain_prefix: Option<String>,
    /// A new SSH password.
    pub ssh_password: Option<String>,
    /// `On` or `Off`.
    #[schema(value_type = Option<String>)]
    pub power_state: Option<PowerState>,
    /// Cannot change; present only to say so.
    pub image: Option<String>,
    /// Cannot change; present only to say so.
    pub ssh_id: Option<String>,
}

/// The caller's machine `name`, from the cache.
fn own(state: &AppState, caller: &Caller, name: &str) -> ApiResult<Arc<KiteVirtualMachine>> {
    state
        .vms
        .get(&key(Some(caller.namespace()), name))
        .ok_or_else(|| ApiError::not_found(format!("you have no machine named '{name}'")))
}

/// The machine with how to reach it.
pub fn envelope(state: &AppState, vm: &KiteVirtualMachine) -> VmEnvelope {
    let platform = state.platform.get(PLATFORM_NAME);
    VmEnvelope {
        vm: VmView::from(vm),
        connection: vm_rules::connection(vm, &state.platform_spec(), platform.as_deref()),
    }
}

/// Your machines.
#[utoipa::path(get, path = "/vms", tag = "vms",
    responses((status = 200, body = VmsEnvelope), (status = 401, body = ErrorBody)))]
pub async fn list(State(state): State<AppState>, caller: Caller) -> Json<VmsEnvelope> {
    let mut vms: Vec<VmView> =
        state.vms.find(by::NAMESPACE, caller.namespace()).iter().map(|vm| VmView::from(vm.as_ref())).collect();
    vms.sort_by(|a, b| a.name.cmp(&b.name));
    Json(VmsEnvelope { vms })
}

/// One of your machines, with how to reach it.
#[utoipa::path(get, path = "/vms/{name}", tag = "vms", params(("name" = String, Path, description = "The machine's name")),
    responses((status = 200, body = VmEnvelope), (status = 404, body = ErrorBody)))]
pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> ApiResult<Json<VmEnvelope>> {
    let vm = own(&state, &caller, &name)?;
    Ok(Json(envelope(&state, &vm)))
}

/// The spec of a machine to create, checked against the caller's level and the platform.
pub struct Planned {
    /// The machine's name.
    pub name: String,
    /// Its spec, without the password hash.
    pub spec: KiteVirtualMachineSpec,
}

/// The name, `sshId` and `domainPrefix` of a new machine, checked; a name is made up when none is given.
pub fn identity(
    name: Option<&str>,
    ssh_id: &str,
    domain_prefix: Option<&str>,
    password: &str,
) -> ApiResult<(String, Option<String>)> {
    let name = match name.map(str::trim).filter(|n| !n.is_empty()) {
        Some(name) => {
            validate::object_name("name", name)?;
            name.to_string()
        }
        None => format!("vm-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]),
    };
    validate::ssh_id(ssh_id)?;
    let domain_prefix = domain_prefix.map(str::trim).filter(|p| !p.is_empty()).map(str::to_string);
    if let Some(prefix) = &domain_prefix {
        validate::domain_prefix(prefix)?;
    }
    validate::password("sshPassword", password)?;
    Ok((name, domain_prefix))
}

fn plan(state: &AppState, caller: &Caller, request: &CreateVm) -> ApiResult<Planned> {
    let (name, domain_prefix) =
        identity(request.name.as_deref(), &request.ssh_id, request.domain_prefix.as_deref(), &request.ssh_password)?;
    let platform = state.platform.get(PLATFORM_NAME);
    let (image, image_size) =
        vm_rules::ready_image(request.image.as_deref(), &state.platform_spec(), platform.as_deref())?;
    let (cpu, memory, disk) = if caller.level() == AccessLevel::User {
        let fixed = format!(
            "your access level creates machines of {USER_LEVEL_CPU} CPUs, {USER_LEVEL_MEMORY} memory and a {USER_LEVEL_DISK} disk"
        );
        let cpu_ok = request.cpu.is_none_or(|c| c == USER_LEVEL_CPU);
        let memory_ok = request.memory.as_ref().is_none_or(|m| m.text() == USER_LEVEL_MEMORY);
        let disk_ok = request
            .disk
            .as_ref()
            .is_none_or(|d| validate::size("disk", &d.text()).is_ok_and(|q| q.0 == USER_LEVEL_DISK));
        if !(cpu_ok && memory_ok && disk_ok) {
            return Err(ApiError::forbidden(format!("{fixed}; leave the size out or ask a manager")));
        }
        (USER_LEVEL_CPU, Quantity(USER_LEVEL_MEMORY.into()), validate::disk(USER_LEVEL_DISK, Some(&image_size))?)
    } else {
        let cpu = validate::cpu(request.cpu.unwrap_or(DEFAULT_CPU))?;
        let memory =
            validate::size("memory", &request.memory.as_ref().map_or(DEFAULT_MEMORY.to_string(), SizeInput::text))?;
        let disk_text = request.disk.as_ref().map_or(USER_LEVEL_DISK.to_string(), SizeInput::text);
        (cpu, memory, validate::disk(&disk_text, Some(&image_size))?)
    };
    Ok(Planned {
        name,
        spec: KiteVirtualMachineSpec {
            cpu,
            memory,
            disk,
            image,
            power_state: request.power_state.unwrap_or(PowerState::On),
            domain_prefix,
            ssh_id: request.ssh_id.clone(),
            ssh_password_hash: None,
            delete: false,
        },
    })
}

/// Whether `ssh_id` is used by a machine other than `namespace/name`.
fn used_elsewhere(state: &AppState, ssh_id: &str, namespace: &str, name: &str) -> bool {
    state
        .vms
        .find(by::SSH_ID, ssh_id)
        .iter()
        .any(|vm| vm.metadata.namespace.as_deref() != Some(namespace) || vm.metadata.name.as_deref() != Some(name))
}

/// Whether `prefix` is used by a machine other than `namespace/name`.
fn prefix_used_elsewhere(state: &AppState, prefix: &str, namespace: &str, name: &str) -> bool {
    state
        .vms
        .find(by::DOMAIN_PREFIX, prefix)
        .iter()
        .any(|vm| vm.metadata.namespace.as_deref() != Some(namespace) || vm.metadata.name.as_deref() != Some(name))
}

/// Creates a machine (level 1 and up). Its `sshId` and `domainPrefix`
/// must be free across the platform; of two requests racing for one, one
/// gets a 409.
#[utoipa::path(post, path = "/vms", tag = "vms", request_body = CreateVm,
    responses(
        (status = 201, description = "Created; the controller now builds it", body = VmEnvelope),
        (status = 403, description = "Your level does not allow it", body = ErrorBody),
        (status = 409, description = "The name, sshId or domainPrefix is taken", body = ErrorBody),
        (status = 422, description = "A field is not valid", body = ErrorBody),
    ))]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    Body(request): Body<CreateVm>,
) -> ApiResult<(StatusCode, Json<VmEnvelope>)> {
    caller.require(AccessLevel::User)?;
    let planned = plan(&state, &caller, &request)?;
    let limit = (caller.level() == AccessLevel::User).then_some(USER_LEVEL_MAX_MACHINES);
    let vm = create_machine(&state, &caller, planned, request.ssh_password.clone(), limit).await?;
    Ok((StatusCode::CREATED, Json(envelope(&state, &vm))))
}

/// Creates `planned` in the caller's namespace: under the caller's creation
/// lock, within `limit` active machines, with its `sshId` and
/// `domainPrefix` reserved, and `password` stored only as a hash.
pub async fn create_machine(
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
    let ssh_taken = format!("the SSH id '{}' is taken; choose another", planned.spec.ssh_id);
    if used_elsewhere(state, &planned.spec.ssh_id, &namespace, &planned.name) {
        return Err(ApiError::conflict(ssh_taken));
    }
    if let Some(prefix) = &planned.spec.domain_prefix
        && prefix_used_elsewhere(state, prefix, &namespace, &planned.name)
    {
        return Err(ApiError::conflict(format!("the domain prefix '{prefix}' is taken; choose another")));
    }
    let holder = Holder::Vm { namespace: namespace.clone(), name: planned.name.clone() };
    let reservations = &state.reservations;
    reservations
        .reserve(Kind::SshId, &planned.spec.ssh_id, &holder)
        .await
        .map_err(|r| r.answer("reserving an sshId", ssh_taken.clone()))?;
    let result = async {
        if let Some(prefix) = &planned.spec.domain_prefix {
            reservations.reserve(Kind::DomainPrefix, prefix, &holder).await.map_err(|r| {
                r.answer("reserving a domainPrefix", format!("the domain prefix '{prefix}' is taken; choose another"))
            })?;
        }
        let mut spec = planned.spec.clone();
        spec.ssh_password_hash = Some(hash_password(password).await?);
        let vm = KiteVirtualMachine::new(&planned.name, spec);
        Api::<KiteVirtualMachine>::namespaced(state.client.clone(), &namespace)
            .create(&PostParams::default(), &vm)
            .await
            .map_err(|error| match &error {
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
    match result {
        Ok(vm) => {
            tracing::info!(user = caller.name(), vm = %planned.name, "machine requested");
            state.vms.upsert(vm.clone());
            Ok(vm)
        }
        Err(error) => {
            reservations.release_quietly(Kind::SshId, &planned.spec.ssh_id, &holder).await;
            if let Some(prefix) = &planned.spec.domain_prefix {
                reservations.release_quietly(Kind::DomainPrefix, prefix, &holder).await;
            }
            Err(error)
        }
    }
}

/// Writes a merge patch of `spec` to a machine and caches the result.
pub async fn patch_spec(
    state: &AppState,
    vm: &KiteVirtualMachine,
    spec: serde_json::Value,
) -> ApiResult<KiteVirtualMachine> {
    let namespace = vm.metadata.namespace.clone().unwrap_or_default();
    let name = vm.metadata.name.clone().unwrap_or_default();
    let patch = serde_json::json!({ "spec": spec });
    let updated = Api::<KiteVirtualMachine>::namespaced(state.client.clone(), &namespace)
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|error| ApiError::from_kube("changing a machine", error))?;
    state.vms.upsert(updated.clone());
    Ok(updated)
}

/// Changes a machine (level 1 and up; the size only from level 2).
#[utoipa::path(patch, path = "/vms/{name}", tag = "vms", request_body = PatchVm, params(("name" = String, Path)),
    responses(
        (status = 200, body = VmEnvelope),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody),
        (status = 422, body = ErrorBody),
    ))]
pub async fn patch(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    Body(request): Body<PatchVm>,
) -> ApiResult<Json<VmEnvelope>> {
    caller.require(AccessLevel::User)?;
    let vm = own(&state, &caller, &name)?;
    let updated = apply_patch(&state, &caller, &vm, request).await?;
    Ok(Json(envelope(&state, &updated)))
}

/// Checks and writes a [`PatchVm`] on `vm`.
pub async fn apply_patch(
    state: &AppState,
    caller: &Caller,
    vm: &KiteVirtualMachine,
    request: PatchVm,
) -> ApiResult<KiteVirtualMachine> {
    if request.image.as_ref().is_some_and(|i| *i != vm.spec.image) {
        return Err(ApiError::invalid("image", "cannot be changed; create a new machine instead"));
    }
    if request.ssh_id.as_ref().is_some_and(|s| *s != vm.spec.ssh_id) {
        return Err(ApiError::invalid("sshId", "cannot be changed; create a new machine instead"));
    }
    if vm.spec.delete {
        return Err(ApiError::conflict("this machine is being deleted"));
    }
    let mut spec = serde_json::Map::new();
    let resizing = request.cpu.is_some() || request.memory.is_some() || request.disk.is_some();
    if resizing && caller.level() < AccessLevel::Manager {
        return Err(ApiError::forbidden(format!(
            "your access level has a fixed machine size ({USER_LEVEL_CPU} CPUs, {USER_LEVEL_MEMORY}, {USER_LEVEL_DISK}); ask a manager to resize it"
        )));
    }
    if let Some(cpu) = request.cpu {
        spec.insert("cpu".into(), validate::cpu(cpu)?.into());
    }
    if let Some(memory) = &request.memory {
        spec.insert("memory".into(), validate::size("memory", &memory.text())?.0.into());
    }
    if let Some(disk) = &request.disk {
        let disk = validate::disk(&disk.text(), None)?;
        if kite_core::quantity::bytes(&disk) < kite_core::quantity::bytes(&vm.spec.disk) {
            return Err(ApiError::invalid("disk", format!("can grow but cannot shrink below {}", vm.spec.disk.0)));
        }
        spec.insert("disk".into(), disk.0.into());
    }
    if let Some(power) = request.power_state {
        spec.insert("powerState".into(), serde_json::to_value(power).unwrap_or_default());
    }
    if let Some(password) = &request.ssh_password {
        validate::password("sshPassword", password)?;
        spec.insert("sshPasswordHash".into(), hash_password(password.clone()).await?.into());
    }
    let namespace = vm.metadata.namespace.clone().unwrap_or_default();
    let name = vm.metadata.name.clone().unwrap_or_default();
    let holder = Holder::Vm { namespace: namespace.clone(), name: name.clone() };
    let new_prefix = request.domain_prefix.as_deref().map(str::trim).map(str::to_string);
    let changing_prefix =
        new_prefix.as_ref().is_some_and(|p| Some(p.as_str()) != vm.spec.domain_prefix.as_deref().or(Some("")));
    if changing_prefix {
        match new_prefix.as_deref().filter(|p| !p.is_empty()) {
            Some(prefix) => {
                validate::domain_prefix(prefix)?;
                let message = format!("the domain prefix '{prefix}' is taken; choose another");
                if prefix_used_elsewhere(state, prefix, &namespace, &name) {
                    return Err(ApiError::conflict(message));
                }
                state
                    .reservations
                    .reserve(Kind::DomainPrefix, prefix, &holder)
                    .await
                    .map_err(|r| r.answer("reserving a domainPrefix", message))?;
                spec.insert("domainPrefix".into(), prefix.into());
            }
            None => {
                spec.insert("domainPrefix".into(), serde_json::Value::Null);
            }
        }
    }
    if spec.is_empty() {
        return Ok(vm.clone());
    }
    match patch_spec(state, vm, serde_json::Value::Object(spec)).await {
        Ok(updated) => {
            if changing_prefix && let Some(old) = &vm.spec.domain_prefix {
                state.reservations.release_quietly(Kind::DomainPrefix, old, &holder).await;
            }
            Ok(updated)
        }
        Err(error) => {
            if changing_prefix && let Some(prefix) = new_prefix.as_deref().filter(|p| !p.is_empty()) {
                state.reservations.release_quietly(Kind::DomainPrefix, prefix, &holder).await;
            }
            Err(error)
        }
    }
}

/// Asks for a machine's deletion (level 1 and up); the controller removes
/// it and everything made for it.
#[utoipa::path(delete, path = "/vms/{name}", tag = "vms", params(("name" = String, Path)),
    responses((status = 202, body = VmMessage), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> ApiResult<(StatusCode, Json<VmMessage>)> {
    caller.require(AccessLevel::User)?;
    let vm = own(&state, &caller, &name)?;
    let deleted = request_deletion(&state, &vm).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(VmMessage { message: "the machine is being deleted".into(), vm: VmView::from(&deleted) }),
    ))
}

/// Sets `spec.delete` (idempotent).
pub async fn request_deletion(state: &AppState, vm: &KiteVirtualMachine) -> ApiResult<KiteVirtualMachine> {
    if vm.spec.delete {
        return Ok(vm.clone());
    }
    patch_spec(state, vm, serde_json::json!({ "delete": true })).await
}

async fn power(state: AppState, caller: Caller, name: String, power: PowerState) -> ApiResult<Json<VmEnvelope>> {
    caller.require(AccessLevel::User)?;
    let vm = own(&state, &caller, &name)?;
    let request = PatchVm { power_state: Some(power), ..PatchVm::default() };
    let updated = apply_patch(&state, &caller, &vm, request).await?;
    Ok(Json(envelope(&state, &updated)))
}

/// Starts a machine (level 1 and up).
#[utoipa::path(post, path = "/vms/{name}/start", tag = "vms", params(("name" = String, Path)),
    responses((status = 200, body = VmEnvelope), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn start(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> ApiResult<Json<VmEnvelope>> {
    power(state, caller, name, PowerState::On).await
}

/// Stops a machine (level 1 and up).
#[utoipa::path(post, path = "/vms/{name}/stop", tag = "vms", params(("name" = String, Path)),
    responses((status = 200, body = VmEnvelope), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn stop(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> ApiResult<Json<VmEnvelope>> {
    power(state, caller, name, PowerState::Off).await
}
