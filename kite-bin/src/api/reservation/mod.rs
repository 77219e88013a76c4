//! Unique names without races: before a user or a machine takes an email,
//! a username, an `sshId` or a `domainPrefix`, the API creates a
//! ConfigMap whose name is derived from the value. The API server lets
//! exactly one create of a name succeed, so of two simultaneous requests
//! for the same value one wins and the other gets a 409; there is never a
//! duplicate. The same mechanism makes "the first user is admin" safe.
//!
//! A reservation names its holder. A request takes its reservations through
//! [`Claims`], which gives them back when the request fails or is
//! cancelled; a changed `domainPrefix` gives back the old one. What a failed
//! release leaves behind is reclaimed lazily, when someone else wants the
//! value: a reservation older than [`GRACE`] whose holder is gone, or no
//! longer uses the value, is deleted (with a precondition on its uid, so only
//! one request can do so) and taken anew. No value is held forever.

mod claims;

pub use claims::Claims;

use super::error::ApiError;
use k8s_openapi::api::core::v1::ConfigMap;
use kite_core::api::{KiteUser, KiteVirtualMachine};
use kite_core::labels::{COMPONENT, owned_labels};
use kube::api::{DeleteParams, PostParams, Preconditions};
use kube::{Api, Client};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::time::Duration;

/// How long a reservation is kept even when its holder does not exist yet
/// (the holder is created just after its reservations).
pub const GRACE: Duration = Duration::from_secs(60);

/// The label value that marks reservations.
const COMPONENT_VALUE: &str = "kite-api-reservation";

/// What is reserved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A user's email (lower-cased).
    Email,
    /// A username (lower-cased).
    Username,
    /// A machine's `sshId`.
    SshId,
    /// A machine's `domainPrefix`.
    DomainPrefix,
    /// The admin level of the first user to sign up.
    FirstAdmin,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Email => "email",
            Kind::Username => "username",
            Kind::SshId => "sshid",
            Kind::DomainPrefix => "domain",
            Kind::FirstAdmin => "first-admin",
        }
    }
}

/// Who holds a reservation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Holder {
    /// A `KiteUser`, by object name.
    User(String),
    /// A `KiteVirtualMachine`, by namespace and name.
    Vm {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
}

impl Holder {
    fn encode(&self) -> String {
        match self {
            Holder::User(name) => format!("KiteUser/{name}"),
            Holder::Vm { namespace, name } => format!("KiteVirtualMachine/{namespace}/{name}"),
        }
    }

    fn decode(text: &str) -> Option<Self> {
        let mut parts = text.split('/');
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some("KiteUser"), Some(name), None, None) => Some(Holder::User(name.into())),
            (Some("KiteVirtualMachine"), Some(namespace), Some(name), None) => {
                Some(Holder::Vm { namespace: namespace.into(), name: name.into() })
            }
            _ => None,
        }
    }
}

/// Why a value could not be reserved.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// Another holder has it.
    #[error("taken")]
    Taken,
    /// The cluster failed.
    #[error(transparent)]
    Kube(#[from] kube::Error),
}

impl Refusal {
    /// The answer to give: a 409 saying `taken` when another holder has the
    /// value, the cluster's error (see [`ApiError::from_kube`]) otherwise.
    pub fn answer(self, doing: &str, taken: impl Into<std::borrow::Cow<'static, str>>) -> ApiError {
        match self {
            Refusal::Taken => ApiError::conflict(taken),
            Refusal::Kube(error) => ApiError::from_kube(doing, error),
        }
    }
}

/// Reservations in one namespace.
#[derive(Clone)]
pub struct Reservations {
    client: Client,
    configmaps: Api<ConfigMap>,
}

/// The ConfigMap name of a reservation: the kind and a SHA-256 of the value.
pub fn object_name(kind: Kind, value: &str) -> String {
    let digest = Sha256::digest(value.as_bytes());
    let hex: String = digest.iter().take(20).map(|b| format!("{b:02x}")).collect();
    format!("kite-reserved-{}-{hex}", kind.as_str())
}

impl Reservations {
    /// Reservations kept in `namespace`.
    pub fn new(client: Client, namespace: &str) -> Self {
        Self { configmaps: Api::namespaced(client.clone(), namespace), client }
    }

    /// The platform namespace's ConfigMaps, where reservations (and the
    /// records of redeemed console tickets) are kept.
    pub fn configmaps(&self) -> &Api<ConfigMap> {
        &self.configmaps
    }

    /// Reserves `value` for `holder`. Reserving again what the same holder has is not an error.
    pub async fn reserve(&self, kind: Kind, value: &str, holder: &Holder) -> Result<(), Refusal> {
        let name = object_name(kind, value);
        for _ in 0..2 {
            let mut object = ConfigMap::default();
            object.metadata.name = Some(name.clone());
            object.metadata.labels = Some(owned_labels(COMPONENT, COMPONENT_VALUE));
            object.data = Some(BTreeMap::from([
                ("kind".to_string(), kind.as_str().to_string()),
                ("value".to_string(), value.to_string()),
                ("holder".to_string(), holder.encode()),
            ]));
            match self.configmaps.create(&PostParams::default(), &object).await {
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(status)) if status.code == 409 => {}
                Err(error) => return Err(error.into()),
            }
            let Some(existing) = self.configmaps.get_opt(&name).await? else { continue };
            let current = existing.data.as_ref().and_then(|d| d.get("holder")).and_then(|h| Holder::decode(h));
            if current.as_ref() == Some(holder) {
                return Ok(());
            }
            if !self.is_stale(&existing, current.as_ref(), kind, value).await? {
                return Err(Refusal::Taken);
            }
            let preconditions = Preconditions {
                uid: existing.metadata.uid.clone(),
                resource_version: existing.metadata.resource_version.clone(),
            };
            let params = DeleteParams { preconditions: Some(preconditions), ..DeleteParams::default() };
            match self.configmaps.delete(&name, &params).await {
                Ok(_) => tracing::info!(reservation = %name, "released a reservation whose holder is gone"),
                Err(kube::Error::Api(status)) if status.code == 409 || status.code == 404 => {}
                Err(error) => return Err(error.into()),
            }
        }
        Err(Refusal::Taken)
    }

    /// Releases `value` if `holder` holds it; another holder's reservation is left alone.
    pub async fn release(&self, kind: Kind, value: &str, holder: &Holder) -> Result<(), kube::Error> {
        let name = object_name(kind, value);
        let Some(existing) = self.configmaps.get_opt(&name).await? else { return Ok(()) };
        let current = existing.data.as_ref().and_then(|d| d.get("holder")).and_then(|h| Holder::decode(h));
        if current.as_ref() != Some(holder) {
            return Ok(());
        }
        let preconditions = Preconditions { uid: existing.metadata.uid.clone(), resource_version: None };
        match self
            .configmaps
            .delete(&name, &DeleteParams { preconditions: Some(preconditions), ..Default::default() })
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Releases, and reports a release that fails: the reservation then
    /// stays until someone wants the value, and is reclaimed then, since its
    /// holder no longer uses it.
    pub async fn release_or_report(&self, kind: Kind, value: &str, holder: &Holder) {
        if let Err(error) = self.release(kind, value, holder).await {
            tracing::warn!(
                %error,
                kind = kind.as_str(),
                reservation = %object_name(kind, value),
                "could not release a reservation; it is reclaimed when the value is next asked for"
            );
        }
    }

    /// Whether a reservation of `value` may be taken over: past its grace
    /// period, and its holder is gone or no longer uses the value.
    async fn is_stale(
        &self,
        existing: &ConfigMap,
        holder: Option<&Holder>,
        kind: Kind,
        value: &str,
    ) -> Result<bool, kube::Error> {
        let created = existing.metadata.creation_timestamp.as_ref().map(|t| t.0);
        let age = created.map(|t| jiff::Timestamp::now().duration_since(t));
        let past_grace = age.is_none_or(|age| age.as_secs() >= GRACE.as_secs() as i64);
        if !past_grace {
            return Ok(false);
        }
        let uses = match holder {
            Some(Holder::User(name)) => Api::<KiteUser>::all(self.client.clone())
                .get_opt(name)
                .await?
                .is_some_and(|user| user_uses(&user, kind, value)),
            Some(Holder::Vm { namespace, name }) => {
                Api::<KiteVirtualMachine>::namespaced(self.client.clone(), namespace)
                    .get_opt(name)
                    .await?
                    .is_some_and(|vm| machine_uses(&vm, kind, value))
            }
            None => false,
        };
        Ok(!uses)
    }
}

/// Whether `user` still has `value` of `kind` (the first admin's stays with them).
fn user_uses(user: &KiteUser, kind: Kind, value: &str) -> bool {
    match kind {
        Kind::Email => user.spec.email.to_lowercase() == value,
        Kind::Username => user.spec.username.to_lowercase() == value,
        Kind::FirstAdmin => true,
        Kind::SshId | Kind::DomainPrefix => false,
    }
}

/// Whether `vm` still has `value` of `kind`.
fn machine_uses(vm: &KiteVirtualMachine, kind: Kind, value: &str) -> bool {
    match kind {
        Kind::SshId => vm.spec.ssh_id == value,
        Kind::DomainPrefix => vm.spec.domain_prefix.as_deref() == Some(value),
        Kind::Email | Kind::Username | Kind::FirstAdmin => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_valid_object_names_and_differ_by_kind_and_value() {
        let a = object_name(Kind::SshId, "_alice");
        assert!(a.len() <= 63 && a.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'), "{a}");
        assert_ne!(a, object_name(Kind::DomainPrefix, "_alice"));
        assert_ne!(a, object_name(Kind::SshId, "alice"));
    }

    #[test]
    fn a_holder_that_changed_a_value_no_longer_uses_the_old_one() {
        let vm = kite_testkit::fixtures::a_vm("web").with_domain_prefix("new").with_ssh_id("alice").build();
        assert!(machine_uses(&vm, Kind::DomainPrefix, "new"));
        assert!(!machine_uses(&vm, Kind::DomainPrefix, "old"), "a prefix given up is reclaimable");
        assert!(machine_uses(&vm, Kind::SshId, "alice"));
        assert!(!machine_uses(&vm, Kind::Email, "alice"));
    }

    #[test]
    fn holders_read_back() {
        for holder in [Holder::User("ku-1".into()), Holder::Vm { namespace: "ns".into(), name: "web".into() }] {
            assert_eq!(Holder::decode(&holder.encode()), Some(holder));
        }
        assert_eq!(Holder::decode("Pod/x"), None);
    }
}
