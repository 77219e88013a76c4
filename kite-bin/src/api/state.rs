//! What every handler shares: the cluster client, the caches, sessions,
//! login limits, the reservations of unique names.

use super::hashing::Hashing;
use super::rate_limit::{SignupLimits, login_limiter};
use super::reservation::Reservations;
use super::session::Sessions;
use super::write_through::WriteThrough;
use kite_core::api::{
    KitePlatform, KitePlatformSpec, KiteUser, KiteVirtualMachine, KiteVirtualMachineOffer, PLATFORM_NAME,
};
use kite_core::cache::{Cache, Index, by_namespace};
use kube::{Api, Client};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Index names of the caches.
pub mod by {
    /// Users by lower-cased email.
    pub const EMAIL: &str = "email";
    /// Users by lower-cased username.
    pub const USERNAME: &str = "username";
    /// Users, machines and offers by namespace.
    pub const NAMESPACE: &str = "namespace";
    /// Machines by `sshId`.
    pub const SSH_ID: &str = "sshId";
    /// Machines by `domainPrefix`.
    pub const DOMAIN_PREFIX: &str = "domainPrefix";
}

/// The state handlers share; cheap to clone.
#[derive(Clone)]
pub struct AppState(Arc<Inner>);

/// The shared state itself.
pub struct Inner {
    /// The cluster.
    pub client: Client,
    /// Every `KiteUser`.
    pub users: Cache<KiteUser>,
    /// Every `KiteVirtualMachine`.
    pub vms: Cache<KiteVirtualMachine>,
    /// Every `KiteVirtualMachineOffer`.
    pub offers: Cache<KiteVirtualMachineOffer>,
    /// The `KitePlatform` singleton.
    pub platform: Cache<KitePlatform>,
    /// Session tokens.
    pub sessions: Sessions,
    /// Failed sign-in limits.
    pub limits: kite_ssh::limiter::Limiter,
    /// Sign-ups per hour.
    pub signups: SignupLimits,
    /// The bounded pool passwords are hashed and checked on.
    pub hashing: Hashing,
    /// Unique-name reservations.
    pub reservations: Reservations,
    /// The proxies whose `X-Forwarded-For` names the client.
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// On a platform without an admin, the first sign-up becomes the admin (`kite demo`).
    pub first_signup_is_admin: bool,
    /// The gateways' control API, once set (sessions pages).
    pub gateway: std::sync::OnceLock<crate::api::gateway_control::GatewayControl>,
    /// One lock per user, held while creating machines, so a per-user limit cannot be raced past.
    creating: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl std::ops::Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

fn lowercase(value: &str) -> Vec<String> {
    vec![value.to_lowercase()]
}

impl AppState {
    /// Starts the caches and assembles the state; reservations are kept in `namespace`.
    pub fn new(
        client: Client,
        namespace: &str,
        sessions: Sessions,
        trusted_proxies: Vec<ipnet::IpNet>,
        first_signup_is_admin: bool,
    ) -> Self {
        let users = Cache::start(
            Api::<KiteUser>::all(client.clone()),
            vec![
                Index { name: by::EMAIL, keys: |u: &KiteUser| lowercase(&u.spec.email) },
                Index { name: by::USERNAME, keys: |u: &KiteUser| lowercase(&u.spec.username) },
                Index { name: by::NAMESPACE, keys: |u: &KiteUser| vec![u.spec.namespace.clone()] },
            ],
        );
        let vms = Cache::start(
            Api::<KiteVirtualMachine>::all(client.clone()),
            vec![
                Index { name: by::NAMESPACE, keys: by_namespace },
                Index { name: by::SSH_ID, keys: |vm: &KiteVirtualMachine| vec![vm.spec.ssh_id.clone()] },
                Index {
                    name: by::DOMAIN_PREFIX,
                    keys: |vm: &KiteVirtualMachine| vm.spec.domain_prefix.iter().cloned().collect(),
                },
            ],
        );
        let offers = Cache::start(
            Api::<KiteVirtualMachineOffer>::all(client.clone()),
            vec![Index { name: by::NAMESPACE, keys: by_namespace }],
        );
        let platform = Cache::start(Api::<KitePlatform>::all(client.clone()), Vec::new());
        let reservations = Reservations::new(client.clone(), namespace);
        Self(Arc::new(Inner {
            client,
            users,
            vms,
            offers,
            platform,
            sessions,
            limits: login_limiter(),
            signups: SignupLimits::default(),
            hashing: Hashing::for_this_machine(),
            reservations,
            trusted_proxies,
            first_signup_is_admin,
            gateway: std::sync::OnceLock::new(),
            creating: Mutex::new(HashMap::new()),
        }))
    }

    /// Writes to `KiteUser`s, cached as they are answered.
    pub fn users_write(&self) -> WriteThrough<'_, KiteUser> {
        WriteThrough::new(Api::all(self.client.clone()), None, &self.users)
    }

    /// Writes to the `KiteVirtualMachine`s of `namespace`, cached as they are answered.
    pub fn vms_write(&self, namespace: &str) -> WriteThrough<'_, KiteVirtualMachine> {
        WriteThrough::new(Api::namespaced(self.client.clone(), namespace), Some(namespace), &self.vms)
    }

    /// Writes to the `KiteVirtualMachineOffer`s of `namespace`, cached as they are answered.
    pub fn offers_write(&self, namespace: &str) -> WriteThrough<'_, KiteVirtualMachineOffer> {
        WriteThrough::new(Api::namespaced(self.client.clone(), namespace), Some(namespace), &self.offers)
    }

    /// Writes to the `KitePlatform`, cached as they are answered.
    pub fn platform_write(&self) -> WriteThrough<'_, KitePlatform> {
        WriteThrough::new(Api::all(self.client.clone()), None, &self.platform)
    }

    /// The platform's desired configuration; the defaults when there is no `KitePlatform` yet.
    pub fn platform_spec(&self) -> KitePlatformSpec {
        self.platform.get(PLATFORM_NAME).map(|p| p.spec.clone()).unwrap_or_default()
    }

    /// The user named `text`: by object name, else by username (any case).
    pub fn user_named(&self, text: &str) -> Option<Arc<KiteUser>> {
        self.users.get(text).or_else(|| self.users.find(by::USERNAME, &text.to_lowercase()).into_iter().next())
    }

    /// The lock held while `user` creates a machine.
    pub fn creation_lock(&self, user: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.creating.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        locks.entry(user.to_string()).or_default().clone()
    }

    /// Whether some user is an admin now.
    pub fn has_admin(&self) -> bool {
        self.users.all().iter().any(|user| user.spec.access_level == kite_core::api::AccessLevel::Admin)
    }

    /// Whether every cache has its first list.
    pub fn synced(&self) -> bool {
        self.users.is_synced() && self.vms.is_synced() && self.offers.is_synced() && self.platform.is_synced()
    }
}
