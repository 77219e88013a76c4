//! The VM reconciler: turns a `KiteVirtualMachine` into a running machine.
//!
//! For each machine it
//! 1. checks it against the platform: the image must be one of
//!    `KitePlatform.spec.goldenImages`, imported by Kite and Ready, and the
//!    disk at least the image's size (a user cannot clone an arbitrary PVC
//!    of the platform namespace by naming it);
//! 2. creates the Secret `<vm>-ssh-key` once (the gateway's login key pair
//!    and the VM's host key pair) and never regenerates it while it exists;
//! 3. applies the Role and RoleBinding `<vm>-gateway-access` (the gateway
//!    may read that Secret, and no other), the Secret `<vm>-cloud-init-userdata`, the DataVolume
//!    `<vm>-disk` cloned from the golden image, the KubeVirt VirtualMachine
//!    and the Service `vps-access-<vm>`, each owned by the machine and
//!    labelled as Kite's ([`desired`] computes them);
//! 4. writes the status from what it observed of the DataVolume and the
//!    KubeVirt VirtualMachine ([`status`]), and an Event on each change of phase.
//!
//! Deletion, by `kubectl delete` or by `spec.delete: true`, removes the
//! KubeVirt VirtualMachine first, waits for it to go, then the other
//! children, then the finalizer (or, for `spec.delete`, the object).

pub mod cloud_init;
mod config;
pub mod desired;
pub mod gateway_access;
mod key_secret;
pub mod keys;
pub mod status;
mod status_write;
pub mod web;
mod written;
use config::name_of;
pub use config::{Config, FIELD_MANAGER, NAME, STATUS_MANAGER};
use status_write::write_status;
pub use written::STATUS_INTERVAL;

use crate::api::{KitePlatform, KitePlatformSpec, KiteVirtualMachine, PLATFORM_NAME, VirtualMachinePhase};
use crate::key::object_key;
use crate::labels::{self, VM_CLEANUP_FINALIZER};
use crate::reconcile::applier::Applier;
use crate::reconcile::apply::{self, Removal};
use crate::reconcile::{Context, RESYNC, resources};
use crate::required::Required;
use crate::{Error, names, quantity};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, PersistentVolumeClaim, Secret, Service};
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use key_secret::ensure_keys;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::core::ApiResource;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::EventType;
use kube::runtime::finalizer::Event as Finalized;
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};
use status::{Observed, Verdict};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
pub use written::WrittenStatuses;

/// What the reconciler reads of a running instance; its cache keeps nothing else.
const INSTANCE_FIELDS: &[&str] = &["/status/nodeName", "/status/phase"];

/// How long a machine's changes (its children's, its own status's) are
/// gathered into one pass: creating a machine's children and their first
/// status changes come in bursts, each of which would otherwise bring a
/// pass of its own.
const DEBOUNCE: Duration = Duration::from_millis(250);

/// How many machines are reconciled at once. Unbounded, a thousand new
/// machines meant a thousand passes at once, each holding an HTTP
/// connection to the API server (about 17 KiB of buffers each), for no
/// more speed on a few cores.
const CONCURRENCY: u16 = 32;

/// How soon a machine that is on its way somewhere is looked at again.
const PROGRESS: Duration = Duration::from_secs(10);

/// One reconcile pass of a machine.
pub async fn reconcile(vm: Arc<KiteVirtualMachine>, ctx: Arc<Context<Config>>) -> Result<Action, Error> {
    let api: Api<KiteVirtualMachine> = Api::namespaced(ctx.client.clone(), vm.required_namespace()?);
    ctx.finalized(NAME, &api, VM_CLEANUP_FINALIZER, vm, |event| async {
        match event {
            Finalized::Apply(vm) => converge(&vm, &ctx).await,
            Finalized::Cleanup(vm) => clean_up(&vm, &ctx).await,
        }
    })
    .await
}

/// The error policy: a step that waits is retried in a second; a failure
/// is logged, counted and retried with backoff.
pub fn error_policy(vm: Arc<KiteVirtualMachine>, error: &Error, ctx: Arc<Context<Config>>) -> Action {
    if error.is_waiting() {
        tracing::debug!(object = %object_key(&*vm), %error, "waiting");
        return Action::requeue(Duration::from_secs(1));
    }
    ctx.retry_after_error(NAME, &*vm, error)
}

/// Runs the reconciler on every `KiteVirtualMachine` of the cluster until
/// `shutdown` completes. Children are watched (by Kite's label), so a
/// deleted or changed child brings its machine back at once; a change of
/// the `KitePlatform` reconciles every machine (their domain depends on it).
pub async fn run(ctx: Arc<Context<Config>>, shutdown: impl Future<Output = ()> + Send + Sync + 'static) {
    let client = ctx.client.clone();
    let ours = watcher::Config::default().labels(&labels::managed_selector());
    let owned = [
        ApiResource::erase::<Secret>(&()),
        ApiResource::erase::<Service>(&()),
        ApiResource::erase::<Ingress>(&()),
        ApiResource::erase::<Role>(&()),
        ApiResource::erase::<RoleBinding>(&()),
        resources::data_volume(),
        resources::kubevirt_virtual_machine(),
    ];
    let machines = watcher(Api::<KiteVirtualMachine>::all(client.clone()), watcher::Config::default())
        .default_backoff()
        .modify(|vm: &mut KiteVirtualMachine| vm.managed_fields_mut().clear());
    let (store, writer) = kube::runtime::reflector::store();
    let mut controller = Controller::for_stream(kube::runtime::reflector(writer, machines).applied_objects(), store)
        .with_config(kube::runtime::controller::Config::default().debounce(DEBOUNCE).concurrency(CONCURRENCY));
    for resource in owned {
        ctx.stores.watch_others(client.clone(), resource.clone());
        let children = ctx.stores.watch(client.clone(), resource.clone(), ours.clone());
        controller = controller.owns_stream_with(children, resource);
    }
    // The platform, cached too; its spec changes (not its status) reconcile every machine.
    let platform = ctx
        .stores
        .watch(client.clone(), ApiResource::erase::<KitePlatform>(&()), watcher::Config::default())
        .predicate_filter(kube::runtime::predicates::generation, Default::default())
        .filter_map(|object| async move { object.ok().map(|_| ()) });
    // Tenant namespaces, cached to see one terminating without a GET per pass.
    let namespaces = ctx.stores.watch(client.clone(), ApiResource::erase::<Namespace>(&()), ours.clone());
    // The running instances (KubeVirt copies the template's labels onto them): their node.
    let instance = resources::kubevirt_virtual_machine_instance();
    let instances = ctx.stores.watch_keeping(client.clone(), instance.clone(), ours.clone(), Some(INSTANCE_FIELDS));
    controller
        .watches_stream_with(namespaces, |_| None, ApiResource::erase::<Namespace>(&()))
        .watches_stream_with(instances, |instance| machine_of(&instance), instance)
        .reconcile_all_on(platform)
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, ctx)
        .for_each(|_| async {})
        .await;
}

/// The `KiteVirtualMachine` an object made for it names in its labels.
fn machine_of(object: &impl ResourceExt) -> Option<kube::runtime::reflector::ObjectRef<KiteVirtualMachine>> {
    let labels = object.labels();
    let (name, namespace) = (labels.get(labels::VM_NAME)?, labels.get(labels::VM_NAMESPACE)?);
    Some(kube::runtime::reflector::ObjectRef::new(name).within(namespace))
}

/// The desired-state path.
async fn converge(vm: &KiteVirtualMachine, ctx: &Context<Config>) -> Result<Action, Error> {
    if vm.spec.delete {
        return delete_intent(vm, ctx).await;
    }
    let (name, namespace) = name_of(vm)?;
    if namespace_terminating(ctx, &namespace).await? {
        tracing::debug!(vm = %name, %namespace, "the namespace is terminating; creating nothing");
        return Ok(Action::await_change());
    }
    let applier = ctx.applier(FIELD_MANAGER);
    let platform = read_platform(ctx).await?;
    let base_domain = platform.as_ref().and_then(|p| p.spec.base_domain.clone());
    let live_dv = applier.read(&resources::data_volume(), Some(&namespace), &names::data_volume(&name)).await?;
    if live_dv.is_none()
        && let Some(verdict) = check_against_platform(vm, platform.as_ref(), ctx).await?
    {
        let observed = Observed { base_domain: base_domain.as_deref(), ..Observed::default() };
        return write_and_come_back(vm, ctx, &observed, &verdict).await;
    }
    let platform_spec = platform.map(|p| p.spec).unwrap_or_default();

    ensure_access(vm, ctx, &applier).await?;
    let dv = ensure_disk(vm, ctx, &applier, live_dv, &platform_spec).await?;
    let machine = applier.ensure(&resources::kubevirt_virtual_machine(), &desired::virtual_machine(vm)?).await?.live;
    applier.ensure_object(&desired::ssh_service(vm)?, "the SSH Service").await?;
    let web = web::Web {
        applier,
        base_domain: base_domain.as_deref(),
        domains: &platform_spec.machine_domains,
        platform_namespace: &ctx.config.platform_namespace,
    };
    let url = web::converge(vm, &web).await?;

    let running = machine.pointer("/status/printableStatus").and_then(Value::as_str) == Some("Running");
    let instance = match running {
        true => applier.read(&resources::kubevirt_virtual_machine_instance(), Some(&namespace), &name).await?,
        false => None,
    };
    let observed = Observed {
        data_volume: Some(&dv),
        virtual_machine: Some(&machine),
        node_name: instance.as_ref().and_then(|i| i.pointer("/status/nodeName")).and_then(Value::as_str),
        base_domain: base_domain.as_deref(),
        url: url.as_deref(),
    };
    let verdict = status::judge(vm, &observed);
    write_and_come_back(vm, ctx, &observed, &verdict).await
}

/// Step 4, then when to look again: soon while the machine is on its way
/// somewhere (or a status write was deferred), at the resync once it has
/// arrived.
async fn write_and_come_back(
    vm: &KiteVirtualMachine,
    ctx: &Context<Config>,
    observed: &Observed<'_>,
    verdict: &Verdict,
) -> Result<Action, Error> {
    let deferred = write_status(vm, ctx, observed, verdict).await?;
    let next = match verdict.phase {
        VirtualMachinePhase::Running | VirtualMachinePhase::Stopped | VirtualMachinePhase::Failed => RESYNC,
        _ => PROGRESS,
    };
    Ok(Action::requeue(deferred.map_or(next, |rest| rest.min(next))))
}

/// Steps 2 and 3 up to the disk: the key pairs, the gateway's grant on
/// them, and the cloud-init Secret that hands them to the machine.
async fn ensure_access(vm: &KiteVirtualMachine, ctx: &Context<Config>, applier: &Applier<'_>) -> Result<(), Error> {
    let (login, host) = ensure_keys(vm, ctx).await?;
    if let Some(gateway) = &ctx.config.gateway {
        applier.ensure_object(&gateway_access::role(vm)?, "the gateway's Role").await?;
        applier.ensure_object(&gateway_access::binding(vm, gateway)?, "the gateway's RoleBinding").await?;
    }
    let user_data = cloud_init::render(&cloud_init::UserData {
        hostname: vm.required_name()?,
        user: &vm.spec.ssh_id,
        gateway_public_key: &login.public_openssh,
        host_private_key: &host.private_openssh,
        host_public_key: &host.public_openssh,
        password_hash: vm.spec.ssh_password_hash.as_deref(),
        console_password_hash: vm.spec.console_password_hash.as_deref(),
    })?;
    applier.ensure_object(&desired::cloud_init_secret(vm, &user_data)?, "the cloud-init Secret").await?;
    Ok(())
}

/// Step 3's DataVolume: `live` when there is one (Kite's, its claim grown
/// when `spec.disk` grew), else made from the golden image.
async fn ensure_disk(
    vm: &KiteVirtualMachine,
    ctx: &Context<Config>,
    applier: &Applier<'_>,
    live: Option<Value>,
    platform: &KitePlatformSpec,
) -> Result<Value, Error> {
    let Some(live) = live else {
        let desired = desired::data_volume(vm, platform)?;
        // Read just before and found absent: made without reading it again.
        return Ok(applier.create(&resources::data_volume(), &desired).await?.live);
    };
    let (name, namespace) = name_of(vm)?;
    let dv_name = names::data_volume(&name);
    if !apply::is_ours(&live) {
        return Err(Error::NotOurs { kind: "DataVolume".into(), namespace, name: dv_name });
    }
    // CDI refuses changes to a DataVolume's spec: a grown disk is
    // carried out by expanding its claim instead.
    if disk_grown(vm, &live) {
        expand_disk(vm, ctx, &namespace, &dv_name).await?;
    }
    Ok(live)
}

/// The `KitePlatform`, from the cache when there is one.
async fn read_platform(ctx: &Context<Config>) -> Result<Option<KitePlatform>, Error> {
    let resource = ApiResource::erase::<KitePlatform>(&());
    let live = apply::read_in(&ctx.stores, &ctx.client, &resource, None, PLATFORM_NAME).await?;
    live.map(serde_json::from_value)
        .transpose()
        .map_err(|source| Error::Serde { what: "reading the KitePlatform".into(), source })
}

/// Whether the machine's namespace is gone or going (from the cache of Kite's namespaces when it holds it).
async fn namespace_terminating(ctx: &Context<Config>, namespace: &str) -> Result<bool, Error> {
    let resource = ApiResource::erase::<Namespace>(&());
    let live = apply::read_in(&ctx.stores, &ctx.client, &resource, None, namespace).await?;
    Ok(match live {
        None => true,
        Some(ns) => {
            ns.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null())
                || ns.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating")
        }
    })
}

/// Step 1: whether the machine may be created on this platform. `None` when
/// it may; else the verdict that holds it back.
async fn check_against_platform(
    vm: &KiteVirtualMachine,
    platform: Option<&KitePlatform>,
    ctx: &Context<Config>,
) -> Result<Option<Verdict>, Error> {
    use VirtualMachinePhase::{Failed, Pending};
    let Some(platform) = platform else {
        return Ok(Some(Verdict::blocked(
            Pending,
            "PlatformNotConfigured",
            "The platform is not set up yet; the machine will be created once an administrator finishes.",
        )));
    };
    let Some(image) = platform.spec.golden_images.iter().find(|image| image.name == vm.spec.image) else {
        return Ok(Some(Verdict::blocked(
            Failed,
            "ImageNotOffered",
            format!(
                "The image \"{}\" is not offered here. Create the machine from one of the listed images.",
                vm.spec.image
            ),
        )));
    };
    let Some(disk) = quantity::bytes(&vm.spec.disk) else {
        return Ok(Some(Verdict::blocked(
            Failed,
            "InvalidDisk",
            format!("The disk size \"{}\" is not a size.", vm.spec.disk.0),
        )));
    };
    if quantity::bytes(&vm.spec.memory).is_none() {
        return Ok(Some(Verdict::blocked(
            Failed,
            "InvalidMemory",
            format!("The memory size \"{}\" is not a size.", vm.spec.memory.0),
        )));
    }
    if quantity::bytes(&image.size).is_some_and(|minimum| disk < minimum) {
        return Ok(Some(Verdict::blocked(
            Failed,
            "DiskTooSmall",
            format!("The disk must be at least {}, the size of the image.", image.size.0),
        )));
    }
    // Kite's DataVolumes are cached: the golden image's among them.
    let (namespace, data_volume) = (Some(platform.spec.golden_image_namespace.as_str()), resources::data_volume());
    let golden = apply::read_in(&ctx.stores, &ctx.client, &data_volume, namespace, &image.name).await?;
    let ready = golden.as_ref().is_some_and(|dv| {
        apply::is_ours(dv) && dv.pointer("/status/phase").and_then(Value::as_str) == Some("Succeeded")
    });
    Ok((!ready).then(|| {
        Verdict::blocked(
            Pending,
            "ImageNotReady",
            "The image is still being prepared; the machine will be created as soon as it is ready.",
        )
    }))
}

/// Whether `spec.disk` asks for more than the DataVolume `live` was made
/// with (its claim may already have been grown: [`expand_disk`] reads it).
fn disk_grown(vm: &KiteVirtualMachine, live: &Value) -> bool {
    let made = ["/spec/storage/resources/requests/storage", "/spec/pvc/resources/requests/storage"]
        .iter()
        .find_map(|pointer| live.pointer(pointer).and_then(Value::as_str))
        .and_then(|size| quantity::bytes(&k8s_openapi::apimachinery::pkg::api::resource::Quantity(size.into())));
    match (quantity::bytes(&vm.spec.disk), made) {
        (Some(wanted), Some(made)) => wanted > made,
        // Unknown either way: read the claim.
        _ => true,
    }
}

/// A grown `spec.disk`: expands the DataVolume's claim (the StorageClass
/// allows volume expansion); a shrink is refused by the CRD itself.
async fn expand_disk(
    vm: &KiteVirtualMachine,
    ctx: &Context<Config>,
    namespace: &str,
    claim: &str,
) -> Result<(), Error> {
    let Some(wanted) = quantity::bytes(&vm.spec.disk) else { return Ok(()) };
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), namespace);
    let what = format!("the PersistentVolumeClaim {namespace}/{claim}");
    let Some(live) = claims.get_opt(claim).await.map_err(Error::kube(format!("reading {what}")))? else {
        return Ok(());
    };
    let requested =
        live.spec.and_then(|s| s.resources).and_then(|r| r.requests).and_then(|r| r.get("storage").cloned());
    if requested.as_ref().and_then(quantity::bytes).is_none_or(|have| have >= wanted) {
        return Ok(());
    }
    let patch = json!({"spec": {"resources": {"requests": {"storage": vm.spec.disk.0}}}});
    claims
        .patch(claim, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(Error::kube(format!("expanding {what}")))?;
    let note = format!("Growing the disk to {}.", vm.spec.disk.0);
    ctx.event(vm, EventType::Normal, "DiskExpanding", "ExpandDisk", note).await;
    Ok(())
}

/// `spec.delete: true`: remove the children, then the object itself.
async fn delete_intent(vm: &KiteVirtualMachine, ctx: &Context<Config>) -> Result<Action, Error> {
    remove_children(vm, ctx).await?;
    let (name, namespace) = name_of(vm)?;
    let api: Api<KiteVirtualMachine> = Api::namespaced(ctx.client.clone(), &namespace);
    match api.delete(&name, &DeleteParams::default()).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.is_not_found() => {}
        Err(source) => {
            return Err(Error::Kube { action: format!("deleting KiteVirtualMachine {namespace}/{name}"), source });
        }
    }
    Ok(Action::await_change())
}

/// The deletion path: remove the children; the finalizer helper then lets the object go.
async fn clean_up(vm: &KiteVirtualMachine, ctx: &Context<Config>) -> Result<Action, Error> {
    remove_children(vm, ctx).await?;
    ctx.config.written.forget(vm.metadata.uid.as_deref().unwrap_or_default());
    let note = "Removed the machine and everything Kite created for it.".to_string();
    ctx.event(vm, EventType::Normal, "Deleted", "Delete", note).await;
    Ok(Action::await_change())
}

/// The KubeVirt VirtualMachine first, and only once it is gone the other
/// children. [`Error::Waiting`] while anything is still going away.
async fn remove_children(vm: &KiteVirtualMachine, ctx: &Context<Config>) -> Result<(), Error> {
    let (name, namespace) = name_of(vm)?;
    let client = &ctx.client;
    if vm.status.as_ref().and_then(|s| s.phase) != Some(VirtualMachinePhase::Deleting) {
        let verdict = Verdict::blocked(VirtualMachinePhase::Deleting, "Deleting", "The machine is being deleted.");
        write_status(vm, ctx, &Observed::default(), &verdict).await?;
    }
    let machine = resources::kubevirt_virtual_machine();
    if apply::remove(client, &machine, Some(&namespace), &name).await? == Removal::Deleting {
        return Err(Error::Waiting(format!("the KubeVirt VirtualMachine {namespace}/{name} to go")));
    }
    let secret = ApiResource::erase::<Secret>(&());
    let children = [
        (ApiResource::erase::<RoleBinding>(&()), names::gateway_access(&name)),
        (ApiResource::erase::<Role>(&()), names::gateway_access(&name)),
        (ApiResource::erase::<Service>(&()), names::ssh_service(&name)),
        (resources::data_volume(), names::data_volume(&name)),
        (secret.clone(), names::cloud_init_secret(&name)),
        (secret, names::ssh_key_secret(&name)),
    ];
    let mut remaining = web::remove(client, &namespace, &name).await?;
    for (resource, child) in children {
        if apply::remove(client, &resource, Some(&namespace), &child).await? == Removal::Deleting {
            remaining.push(format!("{} {child}", resource.kind));
        }
    }
    match remaining.is_empty() {
        true => Ok(()),
        false => Err(Error::Waiting(format!("{} in {namespace} to go", remaining.join(", ")))),
    }
}
