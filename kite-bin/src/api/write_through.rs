//! Writes whose answer goes into the cache at once.
//!
//! The API reads from watch-fed caches ([`kite_core::cache`]), and a watch
//! brings a write back some milliseconds later: a user who creates a machine
//! and reloads the page at once must see it. So every write the API makes to
//! a Kite object puts the API server's answer (the object as written, with
//! its new `resourceVersion`) into the cache before the handler answers. This
//! module is that pairing, once: [`WriteThrough`] holds the object's `Api`
//! and its cache, and each method writes, then caches what came back (a
//! delete drops what is gone and leaves the rest to the watch).
//!
//! ```no_run
//! # async fn example(state: kite_bin::api::state::AppState) -> Result<(), kube::Error> {
//! let patch = serde_json::json!({ "spec": { "sessionGeneration": 2 } });
//! let user = state.users_write().merge_patch("u-ada", &patch).await?;
//! assert!(state.users.get("u-ada").is_some());
//! # Ok(()) }
//! ```

use kite_core::cache::Cache;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Debug;

/// An object kind's `Api` with the cache its answers go into.
pub struct WriteThrough<'a, K> {
    api: Api<K>,
    namespace: Option<String>,
    cache: &'a Cache<K>,
}

impl<'a, K> WriteThrough<'a, K>
where
    K: Resource + Clone + Serialize + DeserializeOwned + Debug + Send + Sync + 'static,
{
    /// Writes through `api`, the objects of `namespace` (`None`: a
    /// cluster-scoped kind), into `cache`.
    pub fn new(api: Api<K>, namespace: Option<&str>, cache: &'a Cache<K>) -> Self {
        Self { api, namespace: namespace.map(str::to_string), cache }
    }

    /// Creates `object` and caches it.
    pub async fn create(&self, object: &K) -> Result<K, kube::Error> {
        self.cached(self.api.create(&PostParams::default(), object).await)
    }

    /// Writes a JSON merge patch to `name` and caches the result. A patch
    /// that carries `metadata.resourceVersion` fails with a 409 when the
    /// object changed meanwhile.
    pub async fn merge_patch(&self, name: &str, patch: &serde_json::Value) -> Result<K, kube::Error> {
        self.cached(self.api.patch(name, &PatchParams::default(), &Patch::Merge(patch)).await)
    }

    /// Writes a JSON merge patch to the `status` of `name` and caches the result.
    pub async fn merge_patch_status(&self, name: &str, patch: &serde_json::Value) -> Result<K, kube::Error> {
        self.cached(self.api.patch_status(name, &PatchParams::default(), &Patch::Merge(patch)).await)
    }

    /// Deletes `name`. An object that is gone leaves the cache at once; one
    /// that finalizers keep is left to the watch, which brings its removal:
    /// caching the answer could put back an object whose removal the watch
    /// had already brought.
    pub async fn delete(&self, name: &str) -> Result<(), kube::Error> {
        let kept = self.api.delete(name, &DeleteParams::default()).await?.left();
        let held = kept.is_some_and(|object| object.meta().finalizers.as_ref().is_some_and(|f| !f.is_empty()));
        if !held {
            self.cache.remove(&kite_core::key::key(self.namespace.as_deref(), name));
        }
        Ok(())
    }

    fn cached(&self, written: Result<K, kube::Error>) -> Result<K, kube::Error> {
        let written = written?;
        self.cache.upsert(written.clone());
        Ok(written)
    }
}
