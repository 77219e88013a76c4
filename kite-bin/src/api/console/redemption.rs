//! Redeeming a console ticket once, whichever API replica the browser
//! reaches: a ConfigMap named by the ticket's id is created in the platform
//! namespace, and the API server lets exactly one create of a name succeed,
//! so a second use gets a 409. The records are labelled as Kite's; each is
//! deleted a little after its ticket expires, and then any stale ones a
//! replica that stopped first left behind are swept too.

use super::ticket::{TICKET_SECONDS, TicketClaims};
use crate::api::error::{ApiError, ApiResult};
use k8s_openapi::api::core::v1::ConfigMap;
use kite_core::labels::{COMPONENT, owned_labels};
use kube::Api;
use kube::api::{DeleteParams, ListParams, PostParams};
use std::collections::BTreeMap;
use std::time::Duration;

/// The `app.kubernetes.io/component` value of redemption records.
const COMPONENT_VALUE: &str = "kite-api-console-ticket";

/// How long a record outlives its ticket before a sweep removes it.
const KEEP_AFTER_EXPIRY: Duration = Duration::from_secs(30);

/// The record of a redeemed ticket's id.
pub fn record_name(jti: &str) -> String {
    format!("kite-console-ticket-{jti}")
}

/// Records `claims`' id; refuses a ticket already redeemed.
pub async fn redeem(configmaps: &Api<ConfigMap>, claims: &TicketClaims) -> ApiResult<()> {
    let mut record = ConfigMap::default();
    record.metadata.name = Some(record_name(&claims.jti));
    record.metadata.labels = Some(owned_labels(COMPONENT, COMPONENT_VALUE));
    record.data = Some(BTreeMap::from([
        ("user".to_string(), claims.sub.clone()),
        ("machine".to_string(), format!("{}/{}", claims.ns, claims.vm)),
        ("expires".to_string(), claims.exp.to_string()),
    ]));
    match configmaps.create(&PostParams::default(), &record).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {
            return Err(ApiError::conflict("this console ticket was already used; open the console again"));
        }
        Err(error) => return Err(ApiError::from_kube("redeeming a console ticket", error)),
    }
    let api = configmaps.clone();
    let name = record_name(&claims.jti);
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(TICKET_SECONDS.unsigned_abs()) + KEEP_AFTER_EXPIRY).await;
        delete(&api, &name).await;
        sweep(&api).await;
    });
    Ok(())
}

/// Deletes the records of tickets that expired more than [`KEEP_AFTER_EXPIRY`] ago.
async fn sweep(configmaps: &Api<ConfigMap>) {
    let selector = format!("{COMPONENT}={COMPONENT_VALUE}");
    let records = match configmaps.list(&ListParams::default().labels(&selector)).await {
        Ok(records) => records,
        Err(error) => {
            tracing::warn!(%error, "cannot list the records of redeemed console tickets");
            return;
        }
    };
    let now = jiff::Timestamp::now().as_second();
    let stale = |record: &ConfigMap| {
        record
            .data
            .as_ref()
            .and_then(|d| d.get("expires"))
            .and_then(|e| e.parse::<i64>().ok())
            .is_none_or(|expires| expires + KEEP_AFTER_EXPIRY.as_secs().cast_signed() < now)
    };
    for record in records.items.iter().filter(|r| stale(r)) {
        if let Some(name) = &record.metadata.name {
            delete(configmaps, name).await;
        }
    }
}

async fn delete(configmaps: &Api<ConfigMap>, name: &str) {
    match configmaps.delete(name, &DeleteParams::default()).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 404 => {}
        Err(error) => tracing::warn!(record = name, %error, "cannot delete a redeemed console ticket's record"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(jti: &str, exp: i64) -> TicketClaims {
        TicketClaims {
            aud: super::super::ticket::AUDIENCE.into(),
            sub: "ku-1".into(),
            ns: "kite-user-1".into(),
            vm: "web".into(),
            sid: "00".into(),
            exp,
            jti: jti.into(),
        }
    }

    #[tokio::test]
    async fn a_ticket_is_redeemed_once_and_stale_records_are_swept_but_not_fresh_ones() {
        let server = kite_testkit::FakeApiServer::new().unwrap();
        let configmaps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
        let now = jiff::Timestamp::now().as_second();
        redeem(&configmaps, &claims("fresh", now + 30)).await.unwrap();
        let again = redeem(&configmaps, &claims("fresh", now + 30)).await.unwrap_err();
        assert_eq!(again.status(), http::StatusCode::CONFLICT);
        assert!(again.message().contains("already used"), "{}", again.message());
        redeem(&configmaps, &claims("stale", now - 120)).await.unwrap();
        let mut unlabelled = ConfigMap::default();
        unlabelled.metadata.name = Some(record_name("not-ours"));
        configmaps.create(&PostParams::default(), &unlabelled).await.unwrap();

        sweep(&configmaps).await;
        let left: Vec<String> = configmaps
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter_map(|c| c.metadata.name)
            .collect();
        assert!(left.contains(&record_name("fresh")), "{left:?}");
        assert!(!left.contains(&record_name("stale")), "{left:?}");
        assert!(left.contains(&record_name("not-ours")), "what Kite did not label stays: {left:?}");
    }
}
