//! The offer reconciler: an offer nobody claimed goes at its `expiresAt`.
//!
//! Each offer is looked at when it changes and again at the moment it
//! expires (a requeue for that time, never a poll); an `Available` offer
//! past its time is deleted. A claimed offer stays: it records which user
//! took it, and the machine it made lives on its own.

use crate::Error;
use crate::api::{KiteVirtualMachineOffer, OfferPhase};
use crate::key::object_key;
use crate::reconcile::{Context, RESYNC};
use crate::required::Required;
use futures::StreamExt;
use kube::api::{Api, DeleteParams, Preconditions};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// The reconciler's name in metrics and logs.
pub const NAME: &str = "offer";

/// What to do with an offer at `now`.
#[derive(Debug, PartialEq, Eq)]
pub enum Plan {
    /// It has expired and nobody claimed it: delete it.
    Delete,
    /// Look again after this long (when it expires, or at the resync).
    Wait(Duration),
}

/// The plan for `offer` at `now`.
pub fn plan(offer: &KiteVirtualMachineOffer, now: jiff::Timestamp) -> Plan {
    if offer.phase() != OfferPhase::Available {
        return Plan::Wait(RESYNC);
    }
    let left = offer.spec.expires_at.0.duration_since(now);
    if left.is_negative() || left.is_zero() {
        return Plan::Delete;
    }
    // A second later than the expiry, so the next look finds it expired.
    let left = Duration::try_from(left).unwrap_or(RESYNC) + Duration::from_secs(1);
    Plan::Wait(left.min(RESYNC))
}

/// One reconcile pass of an offer.
pub async fn reconcile(offer: Arc<KiteVirtualMachineOffer>, ctx: Arc<Context<()>>) -> Result<Action, Error> {
    let _measure = ctx.metrics.measure(NAME);
    match plan(&offer, jiff::Timestamp::now()) {
        Plan::Wait(wait) => Ok(Action::requeue(wait)),
        Plan::Delete => {
            let namespace = offer.required_namespace()?;
            let name = offer.required_name()?;
            let api = Api::<KiteVirtualMachineOffer>::namespaced(ctx.client.clone(), namespace);
            // Only the offer as read: one claimed meanwhile has another resourceVersion and stays.
            let only_this = Preconditions {
                uid: offer.metadata.uid.clone(),
                resource_version: offer.metadata.resource_version.clone(),
            };
            let params = DeleteParams { preconditions: Some(only_this), ..DeleteParams::default() };
            match api.delete(name, &params).await {
                Ok(_) => {
                    tracing::info!(offer = %object_key(&*offer), "deleted an offer nobody claimed before it expired");
                    Ok(Action::await_change())
                }
                Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => {
                    Ok(Action::requeue(Duration::from_secs(1)))
                }
                Err(error) => Err(Error::kube(format!("deleting the expired offer {}", object_key(&*offer)))(error)),
            }
        }
    }
}

/// The error policy: logged, counted, retried with backoff.
pub fn error_policy(offer: Arc<KiteVirtualMachineOffer>, error: &Error, ctx: Arc<Context<()>>) -> Action {
    ctx.retry_after_error(NAME, &*offer, error)
}

/// Runs the reconciler on every offer until `shutdown` completes.
pub async fn run(ctx: Arc<Context<()>>, shutdown: impl Future<Output = ()> + Send + Sync + 'static) {
    Controller::new(Api::<KiteVirtualMachineOffer>::all(ctx.client.clone()), watcher::Config::default())
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, ctx)
        .for_each(|_| async {})
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{KiteVirtualMachineOfferSpec, KiteVirtualMachineOfferStatus};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn an_offer(expires: &str, phase: Option<OfferPhase>) -> KiteVirtualMachineOffer {
        let mut offer = KiteVirtualMachineOffer::new(
            "o",
            KiteVirtualMachineOfferSpec {
                cpu: 1,
                memory: Quantity("1Gi".into()),
                disk: Quantity("20Gi".into()),
                image: "ubuntu-22.04".into(),
                expires_at: Time(expires.parse().unwrap()),
                created_by: "ada".into(),
            },
        );
        offer.status = phase.map(|phase| KiteVirtualMachineOfferStatus { phase: Some(phase), ..Default::default() });
        offer
    }

    #[test]
    fn an_unclaimed_offer_goes_at_its_time_and_is_looked_at_then_and_not_before() {
        let now: jiff::Timestamp = "2026-12-05T10:00:00Z".parse().unwrap();
        assert_eq!(plan(&an_offer("2026-12-05T09:59:59Z", None), now), Plan::Delete);
        assert_eq!(plan(&an_offer("2026-12-05T10:00:00Z", Some(OfferPhase::Available)), now), Plan::Delete);
        assert_eq!(plan(&an_offer("2026-12-05T10:01:00Z", None), now), Plan::Wait(Duration::from_secs(61)));
        assert_eq!(plan(&an_offer("2027-01-01T00:00:00Z", None), now), Plan::Wait(RESYNC));
        assert_eq!(plan(&an_offer("2026-12-01T00:00:00Z", Some(OfferPhase::Claimed)), now), Plan::Wait(RESYNC));
    }
}
