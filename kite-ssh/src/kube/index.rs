//! The routing index of the Kubernetes backend: `KiteVirtualMachine`s by
//! `sshId`, and `KiteUser` keys by namespace, updated event by event from
//! watchers. A lookup is a hash-map read; nothing is rebuilt per event
//! (only a relist, which replaces the index as a whole, as the watcher does).

use ::kube::ResourceExt;
use ::kube::runtime::watcher::Event;
use kite_core::api::{KiteUser, KiteVirtualMachine};
use russh::keys::PublicKey;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// `namespace/name`.
pub(crate) type Key = (String, String);

/// What an `sshId` leads to.
#[derive(Debug)]
pub(crate) enum Lookup {
    /// No machine has it.
    None,
    /// Exactly one machine.
    One(Arc<KiteVirtualMachine>),
    /// Two or more machines claim it: none is routed.
    Duplicate(Vec<Key>),
}

#[derive(Default)]
struct Vms {
    by_key: HashMap<Key, Arc<KiteVirtualMachine>>,
    by_ssh_id: HashMap<String, BTreeSet<Key>>,
}

/// A table kept from one kind's watch events.
trait Table<K>: Default {
    fn insert(&mut self, object: K);
    fn remove(&mut self, object: &K);
}

/// A table, and the one being filled while the watcher relists: the old
/// one serves until the relist is done, then the new one replaces it whole.
#[derive(Default)]
struct Relisted<T> {
    current: T,
    relisting: Option<T>,
}

impl<T> Relisted<T> {
    fn apply<K>(&mut self, event: Event<K>)
    where
        T: Table<K>,
    {
        match event {
            Event::Apply(object) => self.current.insert(object),
            Event::Delete(object) => self.current.remove(&object),
            Event::Init => self.relisting = Some(T::default()),
            Event::InitApply(object) => self.relisting.get_or_insert_with(T::default).insert(object),
            Event::InitDone => {
                if let Some(fresh) = self.relisting.take() {
                    self.current = fresh;
                }
            }
        }
    }
}

fn key_of(vm: &KiteVirtualMachine) -> Key {
    (vm.namespace().unwrap_or_default(), vm.name_any())
}

impl Vms {
    fn remove_key(&mut self, key: &Key) {
        if let Some(old) = self.by_key.remove(key)
            && let Some(keys) = self.by_ssh_id.get_mut(&old.spec.ssh_id)
        {
            keys.remove(key);
            if keys.is_empty() {
                self.by_ssh_id.remove(&old.spec.ssh_id);
            }
        }
    }
}

impl Table<KiteVirtualMachine> for Vms {
    fn remove(&mut self, vm: &KiteVirtualMachine) {
        self.remove_key(&key_of(vm));
    }

    fn insert(&mut self, vm: KiteVirtualMachine) {
        let key = key_of(&vm);
        self.remove_key(&key);
        // A machine being deleted, by intent or for real, is no route.
        if vm.spec.delete || vm.metadata.deletion_timestamp.is_some() {
            return;
        }
        self.by_ssh_id.entry(vm.spec.ssh_id.clone()).or_default().insert(key.clone());
        self.by_key.insert(key, Arc::new(vm));
    }
}

/// The machines, by `sshId`.
#[derive(Default)]
pub(crate) struct VmIndex(Relisted<Vms>);

impl VmIndex {
    /// Applies one watcher event.
    pub(crate) fn apply(&mut self, event: Event<KiteVirtualMachine>) {
        self.0.apply(event);
    }

    /// The machine of an `sshId`.
    pub(crate) fn lookup(&self, ssh_id: &str) -> Lookup {
        let vms = &self.0.current;
        match vms.by_ssh_id.get(ssh_id) {
            None => Lookup::None,
            Some(keys) if keys.len() == 1 => keys
                .iter()
                .next()
                .and_then(|k| vms.by_key.get(k))
                .map(|vm| Lookup::One(vm.clone()))
                .unwrap_or(Lookup::None),
            Some(keys) => Lookup::Duplicate(keys.iter().cloned().collect()),
        }
    }

    /// The machine at `namespace/name`, if it is routed.
    pub(crate) fn get(&self, key: &Key) -> Option<Arc<KiteVirtualMachine>> {
        self.0.current.by_key.get(key).cloned()
    }
}

/// The public keys of the users, by their namespace.
#[derive(Default)]
pub(crate) struct KeyIndex(Relisted<Users>);

/// User name → keys, by namespace.
#[derive(Default)]
struct Users(HashMap<String, HashMap<String, Vec<PublicKey>>>);

fn keys_of(user: &KiteUser) -> Vec<PublicKey> {
    user.spec
        .ssh_authorized_keys
        .iter()
        .filter_map(|line| match PublicKey::from_openssh(line.trim()) {
            Ok(key) => Some(key),
            Err(error) => {
                tracing::warn!(user = %user.name_any(), %error, "an sshAuthorizedKeys line is not an OpenSSH public key; skipped");
                None
            }
        })
        .collect()
}

impl Table<KiteUser> for Users {
    fn insert(&mut self, user: KiteUser) {
        self.remove(&user);
        self.0.entry(user.spec.namespace.clone()).or_default().insert(user.name_any(), keys_of(&user));
    }

    fn remove(&mut self, user: &KiteUser) {
        let name = user.name_any();
        self.0.retain(|_, users| {
            users.remove(&name);
            !users.is_empty()
        });
    }
}

impl KeyIndex {
    /// Applies one watcher event.
    pub(crate) fn apply(&mut self, event: Event<KiteUser>) {
        self.0.apply(event);
    }

    /// Whether `key` belongs to a user whose namespace is `namespace`.
    pub(crate) fn allows(&self, namespace: &str, key: &PublicKey) -> bool {
        self.0
            .current
            .0
            .get(namespace)
            .is_some_and(|users| users.values().flatten().any(|k| k.key_data() == key.key_data()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use kite_core::api::{KiteVirtualMachineSpec, PowerState};

    fn vm(name: &str, ssh_id: &str) -> KiteVirtualMachine {
        let mut vm = KiteVirtualMachine::new(
            name,
            KiteVirtualMachineSpec {
                cpu: 1,
                memory: Quantity("1Gi".into()),
                disk: Quantity("20Gi".into()),
                image: "ubuntu-22.04".into(),
                power_state: PowerState::On,
                domain_prefix: None,
                ssh_id: ssh_id.into(),
                ssh_password_hash: None,
                delete: false,
            },
        );
        vm.metadata.namespace = Some("ns".into());
        vm
    }

    fn found(index: &VmIndex, ssh_id: &str) -> Option<String> {
        match index.lookup(ssh_id) {
            Lookup::One(vm) => vm.metadata.name.clone(),
            _ => None,
        }
    }

    #[test]
    fn events_update_the_index_one_by_one() {
        let mut index = VmIndex::default();
        index.apply(Event::Apply(vm("a", "alice")));
        assert_eq!(found(&index, "alice").as_deref(), Some("a"));
        index.apply(Event::Apply(vm("b", "alice")));
        assert!(matches!(index.lookup("alice"), Lookup::Duplicate(keys) if keys.len() == 2));
        index.apply(Event::Delete(vm("a", "alice")));
        assert_eq!(found(&index, "alice").as_deref(), Some("b"));
        let mut deleting = vm("b", "alice");
        deleting.spec.delete = true;
        index.apply(Event::Apply(deleting));
        assert!(matches!(index.lookup("alice"), Lookup::None));
    }

    #[test]
    fn a_relist_replaces_the_index_when_it_is_done() {
        let mut index = VmIndex::default();
        index.apply(Event::Apply(vm("old", "gone")));
        index.apply(Event::Init);
        index.apply(Event::InitApply(vm("new", "fresh")));
        assert_eq!(found(&index, "gone").as_deref(), Some("old"), "the old index serves until the relist is done");
        index.apply(Event::InitDone);
        assert!(matches!(index.lookup("gone"), Lookup::None));
        assert_eq!(found(&index, "fresh").as_deref(), Some("new"));
    }
}
