//! A static table of routes, as `kite gateway --config` reads it.

use crate::backend::{Backend, HostKeyCheck, Readiness, Route, Upstream, UpstreamAuth};
use russh::keys::{PrivateKey, PublicKey};
use std::collections::HashMap;
use std::sync::Arc;

/// One route of a [`StaticBackend`].
#[derive(Clone, Debug)]
pub struct StaticRoute {
    /// The login name that routes here.
    pub user: String,
    /// The password hash (argon2id or bcrypt), if password login is allowed.
    pub password_hash: Option<String>,
    /// The public keys that may log in.
    pub authorized_keys: Vec<PublicKey>,
    /// `host:port` of the machine.
    pub upstream: String,
    /// The user to log in as there.
    pub upstream_user: String,
    /// The key to log in with.
    pub upstream_key: Arc<PrivateKey>,
    /// How the machine's host key is checked.
    pub upstream_host_key: HostKeyCheck,
}

/// Routes from a fixed table, by login name.
#[derive(Clone, Debug, Default)]
pub struct StaticBackend {
    routes: HashMap<String, StaticRoute>,
}

impl StaticBackend {
    /// A backend with these routes; a login name may appear once.
    pub fn new(routes: Vec<StaticRoute>) -> Result<Self, crate::Error> {
        let mut table = HashMap::new();
        for route in routes {
            if route.password_hash.is_none() && route.authorized_keys.is_empty() {
                return Err(crate::Error::Config(format!(
                    "route {:?} has neither a password_hash nor authorized_keys, so nobody could log in",
                    route.user
                )));
            }
            if let Some(previous) = table.insert(route.user.clone(), route) {
                return Err(crate::Error::Config(format!("the login {:?} has two routes", previous.user)));
            }
        }
        Ok(Self { routes: table })
    }
}

impl Backend for StaticBackend {
    async fn resolve(&self, login: &str) -> Option<Route> {
        self.routes.contains_key(login).then(|| Route::new(login))
    }

    async fn check_password(&self, route: &Route, password: &str) -> bool {
        let hash = self.routes.get(&route.id).and_then(|r| r.password_hash.clone());
        crate::password::verify_off_runtime(password, hash).await
    }

    async fn check_public_key(&self, route: &Route, key: &PublicKey) -> bool {
        self.routes.get(&route.id).is_some_and(|r| r.authorized_keys.iter().any(|k| k.key_data() == key.key_data()))
    }

    async fn upstream(&self, route: &Route) -> Readiness {
        match self.routes.get(&route.id) {
            Some(r) => Readiness::Ready(Upstream {
                address: r.upstream.clone(),
                user: r.upstream_user.clone(),
                auth: UpstreamAuth::Key(r.upstream_key.clone()),
                host_key: r.upstream_host_key.clone(),
            }),
            None => Readiness::Unavailable { message: "This login has no machine any more.".into() },
        }
    }
}
