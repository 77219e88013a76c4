//! Where an admission webhook is reached ([`WebhookTarget`]), and the
//! in-process [`WebhookHandler`] a test serves it with. It imports nothing
//! of the crate; calling a webhook is in `admission::call`.

use serde_json::Value;
use std::sync::Arc;

/// An in-process webhook: takes the `AdmissionReview` the API server sends,
/// returns the `AdmissionReview` with its `response`.
pub type WebhookHandler = Arc<dyn Fn(&Value) -> Value + Send + Sync>;

/// Where a webhook is reached, as its `clientConfig` names it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum WebhookTarget {
    /// `clientConfig.service`.
    Service {
        /// The Service's namespace.
        namespace: String,
        /// The Service's name.
        name: String,
    },
    /// `clientConfig.url`.
    Url(String),
}
