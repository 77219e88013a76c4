//! [`Applier`]: the functions of [`apply`](super::apply) bound to one
//! reconciler's watch caches, client and field manager, so that a
//! reconcile pass names only what it writes.

use super::apply::{self, Applied, Removal};
use super::stores::Stores;
use crate::Error;
use kube::core::ApiResource;
use kube::{Client, Resource};
use serde::Serialize;
use serde_json::Value;

/// One reconciler's way to read, apply and remove its children: the caches
/// it reads from, the client it writes with and the field manager it
/// applies under.
///
/// ```no_run
/// # async fn pass(client: kube::Client, stores: kite_core::reconcile::stores::Stores) -> Result<(), kite_core::Error> {
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kite_core::reconcile::applier::Applier;
///
/// let applier = Applier::new(&stores, &client, "my-reconciler");
/// let mut settings = ConfigMap::default();
/// settings.metadata.name = Some("settings".into());
/// settings.metadata.namespace = Some("default".into());
/// let applied = applier.ensure_object(&settings, "the settings").await?;
/// assert!(applied.live["metadata"]["name"] == "settings");
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy)]
pub struct Applier<'a> {
    stores: &'a Stores,
    client: &'a Client,
    manager: &'a str,
}

impl<'a> Applier<'a> {
    /// An applier reading from `stores` and writing with `client` under the field manager `manager`.
    pub fn new(stores: &'a Stores, client: &'a Client, manager: &'a str) -> Self {
        Self { stores, client, manager }
    }

    /// The client it writes with.
    pub fn client(&self) -> &'a Client {
        self.client
    }

    /// [`apply::ensure_in`] of a desired object given as JSON.
    pub async fn ensure(&self, resource: &ApiResource, desired: &Value) -> Result<Applied, Error> {
        apply::ensure_in(self.stores, self.client, self.manager, resource, desired).await
    }

    /// [`apply::ensure_in`] of a typed object (a Secret, a Service, ...);
    /// `what` names it in an error.
    pub async fn ensure_object<K>(&self, object: &K, what: &str) -> Result<Applied, Error>
    where
        K: Resource<DynamicType = ()> + Serialize,
    {
        let desired = apply::to_json(object, what)?;
        self.ensure(&ApiResource::erase::<K>(&()), &desired).await
    }

    /// [`apply::create_in`]: makes an object just read and found absent.
    pub async fn create(&self, resource: &ApiResource, desired: &Value) -> Result<Applied, Error> {
        apply::create_in(self.stores, self.client, self.manager, resource, desired).await
    }

    /// [`apply::read_in`]: an object from the caches, or else from the API server.
    pub async fn read(
        &self,
        resource: &ApiResource,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<Value>, Error> {
        apply::read_in(self.stores, self.client, resource, namespace, name).await
    }

    /// [`apply::remove_in`]: deletes an object Kite made, if there is one.
    pub async fn remove(&self, resource: &ApiResource, namespace: Option<&str>, name: &str) -> Result<Removal, Error> {
        apply::remove_in(self.stores, self.client, resource, namespace, name).await
    }
}

impl<C> super::Context<C> {
    /// The [`Applier`] of this context's caches and client, under `manager`.
    pub fn applier<'a>(&'a self, manager: &'a str) -> Applier<'a> {
        Applier::new(&self.stores, &self.client, manager)
    }
}
