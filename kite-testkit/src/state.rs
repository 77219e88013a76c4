//! The shared state of a fake API server, [`Inner`]: the object store, the
//! served types, the injected faults, the configuration, the bearer tokens,
//! the in-process webhooks, the console backend and the CA. Every request
//! handler, the lifecycle and the simulation work on it; it depends on none
//! of them, only on the store, the registry, validation, TLS and the ground
//! floor below them (identity, configuration, faults, webhook targets, the
//! console backend).

use crate::config::Config;
use crate::faults::Faults;
use crate::identity::UserInfo;
use crate::registry::Registry;
use crate::store::Store;
use crate::validation::ObjectSchema;
use crate::webhook_target::{WebhookHandler, WebhookTarget};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// The state behind every clone of a `FakeApiServer`.
pub(crate) struct Inner {
    /// The stored objects and their event log.
    pub store: Mutex<Store>,
    /// The served resource types.
    pub registry: RwLock<Registry>,
    /// The injected faults, the latency and the request log.
    pub faults: Mutex<Faults>,
    /// How the server behaves.
    pub config: Config,
    /// Schemas that replace a CRD's own for validation, by (group, kind):
    /// the strict upstream KubeVirt and CDI schemas.
    pub schema_overrides: HashMap<(String, String), Arc<ObjectSchema>>,
    /// Bumped to end every open watch.
    pub watch_drops: tokio::sync::watch::Sender<u64>,
    /// Bearer tokens, and who they authenticate.
    pub tokens: RwLock<HashMap<String, UserInfo>>,
    /// In-process admission webhooks, by where their configurations reach them.
    pub webhooks: RwLock<HashMap<WebhookTarget, WebhookHandler>>,
    /// What answers on the instances' serial consoles, once installed.
    pub consoles: RwLock<Option<crate::console_backend::ConsoleBackend>>,
    /// The CA and TLS configuration, made when the server first serves HTTPS.
    pub pki: std::sync::OnceLock<Arc<crate::tls::Pki>>,
    /// The runtime background tasks (listeners, deletions, simulations) run on.
    pub runtime: tokio::runtime::Handle,
}

impl Inner {
    /// The store, locked; a poisoned lock is taken over, as the store stays consistent.
    pub fn store(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The console backend, if one is installed.
    pub fn consoles(&self) -> RwLockReadGuard<'_, Option<crate::console_backend::ConsoleBackend>> {
        self.consoles.read().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The faults and request log, locked.
    pub fn faults(&self) -> MutexGuard<'_, Faults> {
        self.faults.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The served types, for reading.
    pub fn registry(&self) -> RwLockReadGuard<'_, Registry> {
        self.registry.read().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The served types, for changing.
    pub fn registry_mut(&self) -> RwLockWriteGuard<'_, Registry> {
        self.registry.write().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The bearer tokens.
    pub fn tokens(&self) -> RwLockReadGuard<'_, HashMap<String, UserInfo>> {
        self.tokens.read().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The bearer tokens, for adding one.
    pub fn tokens_mut(&self) -> RwLockWriteGuard<'_, HashMap<String, UserInfo>> {
        self.tokens.write().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The in-process admission webhooks.
    pub fn webhooks(&self) -> RwLockReadGuard<'_, HashMap<WebhookTarget, WebhookHandler>> {
        self.webhooks.read().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The CA and TLS configuration, made on first use.
    pub fn pki(&self) -> Result<Arc<crate::tls::Pki>, crate::Error> {
        if let Some(pki) = self.pki.get() {
            return Ok(Arc::clone(pki));
        }
        let made = Arc::new(crate::tls::Pki::new()?);
        Ok(Arc::clone(self.pki.get_or_init(|| made)))
    }

    /// Ends every open watch stream, as a restarting API server would.
    pub fn drop_watches(&self) {
        self.watch_drops.send_modify(|generation| *generation += 1);
    }
}
