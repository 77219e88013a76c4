//! [`Claims`]: the reservations one request takes for one holder, given
//! back unless the request succeeds.
//!
//! ```text
//! let mut claims = Claims::new(&state.reservations, holder);
//! let result = async {
//!     claims.take(Kind::SshId, ssh_id).await.map_err(|r| r.answer("reserving an sshId", taken))?;
//!     create_the_object().await
//! }
//! .await;
//! claims.settle(result).await // kept on Ok, released on Err
//! ```

use super::{Holder, Kind, Refusal, Reservations};
use crate::api::error::ApiResult;

/// Reservations taken for one holder during one request.
///
/// [`Claims::settle`] keeps them when the request succeeded and releases
/// them, in the request, when it failed. A request that ends another way
/// (the client went away and the handler's future was dropped, or a panic)
/// releases them from a task when the claims are dropped. A release that
/// itself fails is logged, and the value is reclaimed when next asked for
/// (see [`Reservations::release_or_report`]).
pub struct Claims {
    reservations: Reservations,
    holder: Holder,
    taken: Vec<(Kind, String)>,
}

impl Claims {
    /// No reservation yet, for `holder`.
    pub fn new(reservations: &Reservations, holder: Holder) -> Self {
        Self { reservations: reservations.clone(), holder, taken: Vec::new() }
    }

    /// Reserves `value` for the holder, to be given back if the request fails.
    pub async fn take(&mut self, kind: Kind, value: &str) -> Result<(), Refusal> {
        self.reservations.reserve(kind, value, &self.holder).await?;
        self.taken.push((kind, value.to_string()));
        Ok(())
    }

    /// Ends the request with `result`: the reservations stay with the
    /// holder when it is `Ok`, and are released when it is an `Err`.
    pub async fn settle<T>(mut self, result: ApiResult<T>) -> ApiResult<T> {
        if result.is_ok() {
            self.taken.clear();
        } else {
            for (kind, value) in std::mem::take(&mut self.taken) {
                self.reservations.release_or_report(kind, &value, &self.holder).await;
            }
        }
        result
    }
}

impl Drop for Claims {
    fn drop(&mut self) {
        if self.taken.is_empty() {
            return;
        }
        let (reservations, holder, taken) =
            (self.reservations.clone(), self.holder.clone(), std::mem::take(&mut self.taken));
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    for (kind, value) in taken {
                        reservations.release_or_report(kind, &value, &holder).await;
                    }
                });
            }
            Err(_) => tracing::warn!(
                reservations = taken.len(),
                "a request ended without settling its reservations and no runtime is left to release them; \
                 they are reclaimed when their values are next asked for"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::error::ApiError;
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
    use kite_testkit::FakeApiServer;
    use kite_testkit::fixtures::eventually;
    use kube::Api;
    use kube::api::{ListParams, PostParams};
    use std::time::Duration;

    async fn reservations() -> (FakeApiServer, Reservations, Api<ConfigMap>) {
        let server = FakeApiServer::new().unwrap();
        let client = server.client();
        let mut namespace = Namespace::default();
        namespace.metadata.name = Some("kite".into());
        Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &namespace).await.unwrap();
        (server, Reservations::new(client.clone(), "kite"), Api::namespaced(client, "kite"))
    }

    async fn held(configmaps: &Api<ConfigMap>) -> usize {
        configmaps.list(&ListParams::default()).await.unwrap().items.len()
    }

    fn web() -> Holder {
        Holder::Vm { namespace: "kite-user-alice".into(), name: "web".into() }
    }

    async fn two_taken(reservations: &Reservations) -> Claims {
        let mut claims = Claims::new(reservations, web());
        claims.take(Kind::SshId, "alice").await.unwrap();
        claims.take(Kind::DomainPrefix, "web").await.unwrap();
        claims
    }

    #[tokio::test]
    async fn a_failed_request_gives_its_reservations_back_before_it_answers() {
        let (_server, reservations, configmaps) = reservations().await;
        let claims = two_taken(&reservations).await;
        assert_eq!(held(&configmaps).await, 2);
        let answer: ApiResult<()> = claims.settle(Err(ApiError::conflict("the name is taken"))).await;
        assert!(answer.is_err(), "the request's own error is the answer");
        assert_eq!(held(&configmaps).await, 0);
        let mut again = Claims::new(&reservations, Holder::User("ku-bob".into()));
        assert!(again.take(Kind::SshId, "alice").await.is_ok(), "another holder can take the value at once");
    }

    #[tokio::test]
    async fn a_successful_request_keeps_them() {
        let (_server, reservations, configmaps) = reservations().await;
        let claims = two_taken(&reservations).await;
        claims.settle(Ok(())).await.unwrap();
        assert_eq!(held(&configmaps).await, 2);
        let mut other = Claims::new(&reservations, Holder::User("ku-bob".into()));
        assert!(matches!(other.take(Kind::SshId, "alice").await, Err(Refusal::Taken)));
    }

    #[tokio::test]
    async fn a_request_dropped_half_way_gives_them_back_from_a_task() {
        let (_server, reservations, configmaps) = reservations().await;
        drop(two_taken(&reservations).await);
        eventually(Duration::from_secs(10), "the dropped claims' reservations to go", || async {
            (held(&configmaps).await == 0).then_some(())
        })
        .await;
    }
}
