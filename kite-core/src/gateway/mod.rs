//! The gateway-exposure reconciler: carries out `KitePlatform.spec.sshGateway`.
//!
//! Enabled with a port, it applies the `LoadBalancer` Service
//! `kite-gateway-external` (that port → the gateway's `ssh` port) and
//! reports `Ready` only once the load balancer has an address; disabled, it
//! removes the Service; enabled without a port, it reports `Blocked` and
//! looks again every half minute until that clears. Kite never touches the
//! host's own sshd or port 22: exposure is only ever this Service.
//!
//! It also keeps the platform's own Ingress ([`platform_ingress`]) and
//! reports the web UI's address (`status.platformUrl`) once it has one.

pub mod desired;
pub mod platform_ingress;

use crate::Error;
use crate::api::{GatewayPhase, KitePlatform, KitePlatformStatus};
use crate::key::object_key;
use crate::labels;
use crate::reconcile::apply;
use crate::reconcile::owners::cluster_owners;
use crate::reconcile::{Context, RESYNC, apply_status};
use crate::required::Required;
use desired::{EXTERNAL_SERVICE, Plan};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::Ingress;
use kube::api::Api;
use kube::core::ApiResource;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::EventType;
use kube::runtime::watcher;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// The reconciler's name in metrics and logs.
pub const NAME: &str = "gateway";

/// The field manager of the external Service.
pub const FIELD_MANAGER: &str = "kite-controller-gateway-exposure";

/// The field manager of `status.sshGateway`.
pub const STATUS_MANAGER: &str = "kite-controller-gateway-status";

/// The field manager of the platform's Ingress.
pub const INGRESS_MANAGER: &str = "kite-controller-platform-ingress";

/// The field manager of `status.platformUrl`.
pub const INGRESS_STATUS_MANAGER: &str = "kite-controller-platform-ingress-status";

/// The gateway reconciler's configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// The platform namespace, where the gateway and its Service run.
    pub platform_namespace: String,
}

/// One reconcile pass of the platform's gateway exposure.
pub async fn reconcile(platform: Arc<KitePlatform>, ctx: Arc<Context<Config>>) -> Result<Action, Error> {
    let _measure = ctx.metrics.measure(NAME);
    let client = &ctx.client;
    let namespace = ctx.config.platform_namespace.as_str();
    let plan = desired::plan(&platform.spec.ssh_gateway);
    let resource = ApiResource::erase::<Service>(&());
    let applied = match plan {
        Plan::Expose(port) => {
            let service = desired::external_service(&platform, namespace, port)?;
            let object = apply::to_json(&service, "the gateway's Service")?;
            match apply::ensure(client, FIELD_MANAGER, &resource, &object).await {
                Ok(applied) => Some(applied.live),
                Err(error) => {
                    let message = match &error {
                        Error::NotOurs { .. } => format!(
                            "A Service named {EXTERNAL_SERVICE} exists in {namespace} and was not made by Kite; remove or rename it."
                        ),
                        _ => "The gateway's Service could not be applied; the controller's log says why.".into(),
                    };
                    let observation = (GatewayPhase::Failed, "ApplyFailed", message);
                    write_status(&platform, &ctx, observation, None).await?;
                    return Err(error);
                }
            }
        }
        Plan::Disabled | Plan::MissingPort => {
            apply::remove(client, &resource, Some(namespace), EXTERNAL_SERVICE).await?;
            None
        }
    };
    let service: Option<Service> = applied
        .map(serde_json::from_value)
        .transpose()
        .map_err(|source| Error::Serde { what: "reading the gateway's Service".into(), source })?;
    let observation = desired::observe(plan, service.as_ref());
    let phase = observation.0;
    write_status(&platform, &ctx, observation, service.as_ref()).await?;
    let url = platform_ingress::converge(client, INGRESS_MANAGER, &platform, namespace).await?;
    write_platform_url(&platform, &ctx, url).await?;
    ctx.backoff.succeeded(&object_key(&*platform));
    Ok(match phase {
        GatewayPhase::Reconciling => Action::requeue(Duration::from_secs(10)),
        GatewayPhase::Blocked => Action::requeue(Duration::from_secs(30)),
        _ => Action::requeue(RESYNC),
    })
}

/// The error policy: logged, counted, retried with backoff.
pub fn error_policy(platform: Arc<KitePlatform>, error: &Error, ctx: Arc<Context<Config>>) -> Action {
    ctx.retry_after_error(NAME, &*platform, error)
}

async fn write_status(
    platform: &KitePlatform,
    ctx: &Context<Config>,
    observation: (GatewayPhase, &'static str, String),
    service: Option<&Service>,
) -> Result<(), Error> {
    let previous = platform.status.as_ref().and_then(|s| s.ssh_gateway.as_ref());
    let (phase, reason, message) = (observation.0, observation.1, observation.2.clone());
    let next = desired::status(previous, observation, service, crate::reconcile::now());
    if previous == Some(&next) {
        return Ok(());
    }
    let name = platform.required_name()?;
    let status = KitePlatformStatus { ssh_gateway: Some(next), ..KitePlatformStatus::default() };
    apply_status(&Api::<KitePlatform>::all(ctx.client.clone()), name, STATUS_MANAGER, &status).await?;
    if previous.map(|p| p.phase) != Some(phase) {
        let type_ = match phase {
            GatewayPhase::Blocked | GatewayPhase::Failed => EventType::Warning,
            _ => EventType::Normal,
        };
        tracing::info!(?phase, reason, "gateway exposure changed");
        ctx.event(platform, type_, reason, "ExposeGateway", message).await;
    }
    Ok(())
}

/// `status.platformUrl`, written when it changes.
async fn write_platform_url(platform: &KitePlatform, ctx: &Context<Config>, url: Option<String>) -> Result<(), Error> {
    if platform.status.as_ref().and_then(|s| s.platform_url.as_ref()) == url.as_ref() {
        return Ok(());
    }
    let name = platform.required_name()?;
    let status = KitePlatformStatus { platform_url: url.clone(), ..KitePlatformStatus::default() };
    apply_status(&Api::<KitePlatform>::all(ctx.client.clone()), name, INGRESS_STATUS_MANAGER, &status).await?;
    if let Some(url) = url {
        tracing::info!(%url, "the web UI is served");
        ctx.event(
            platform,
            EventType::Normal,
            "PlatformServed",
            "ServePlatform",
            format!("The web UI is served at {url}."),
        )
        .await;
    }
    Ok(())
}

/// Runs the reconciler on the `KitePlatform` until `shutdown` completes;
/// the external Service is watched, so its load balancer address is seen
/// as soon as it is reported, and a deleted Service comes back.
pub async fn run(ctx: Arc<Context<Config>>, shutdown: impl Future<Output = ()> + Send + Sync + 'static) {
    let client = ctx.client.clone();
    let services = Api::<Service>::namespaced(client.clone(), &ctx.config.platform_namespace);
    let ingresses = Api::<Ingress>::namespaced(client.clone(), &ctx.config.platform_namespace);
    let ours = watcher::Config::default().labels(&labels::managed_selector());
    Controller::new(Api::<KitePlatform>::all(client), watcher::Config::default())
        // Not `owns`: it would name the platform a second time, by the child's namespace (see `owners`).
        .watches(services, ours.clone(), |s| cluster_owners::<KitePlatform, _>(&s))
        .watches(ingresses, ours, |i| cluster_owners::<KitePlatform, _>(&i))
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, ctx)
        .for_each(|_| async {})
        .await;
}
