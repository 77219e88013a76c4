//! The routing indexes of the Kubernetes backend, on kite-core's watch-fed
//! [`Cache`]: `KiteVirtualMachine`s by `sshId` (machines being deleted are
//! in no route), and the `KiteUser`s' public keys by the user's namespace.
//! A lookup is a hash-map read; an object's index values are computed once,
//! when its event comes in.

use ::kube::{Api, Client};
use kite_core::api::{KiteUser, KiteVirtualMachine};
use kite_core::cache::{Cache, Index};
use kite_core::key::object_key;
use russh::keys::{HashAlg, PublicKey};
use std::sync::Arc;

/// The index of routed machines by `sshId`.
const SSH_ID: &str = "sshId";
/// The index of users by `<namespace> <key fingerprint>`.
const NAMESPACE_KEY: &str = "namespaceKey";

/// What an `sshId` leads to.
#[derive(Debug)]
pub(crate) enum Lookup {
    /// No machine has it.
    None,
    /// Exactly one machine.
    One(Arc<KiteVirtualMachine>),
    /// Two or more machines claim it: none is routed (their `namespace/name`s).
    Duplicate(Vec<String>),
}

/// Whether a machine may be routed to: one being deleted, by intent or for real, is not.
pub(crate) fn routable(vm: &KiteVirtualMachine) -> bool {
    !vm.spec.delete && vm.metadata.deletion_timestamp.is_none()
}

fn routed_ssh_id(vm: &KiteVirtualMachine) -> Vec<String> {
    if routable(vm) { vec![vm.spec.ssh_id.clone()] } else { Vec::new() }
}

/// The value a user's `key` is found under for `namespace`.
fn namespace_key(namespace: &str, key: &PublicKey) -> String {
    format!("{namespace} {}", key.fingerprint(HashAlg::Sha256))
}

fn keys_of(user: &KiteUser) -> Vec<String> {
    user.spec
        .ssh_authorized_keys
        .iter()
        .filter_map(|line| match PublicKey::from_openssh(line.trim()) {
            Ok(key) => Some(namespace_key(&user.spec.namespace, &key)),
            Err(error) => {
                tracing::warn!(user = %object_key(user), %error, "an sshAuthorizedKeys line is not an OpenSSH public key; skipped");
                None
            }
        })
        .collect()
}

/// The machines, indexed by the `sshId` of those that can be routed to.
pub(crate) fn machines() -> Vec<Index<KiteVirtualMachine>> {
    vec![Index { name: SSH_ID, keys: routed_ssh_id }]
}

/// The users, indexed by their namespace and public keys.
pub(crate) fn users() -> Vec<Index<KiteUser>> {
    vec![Index { name: NAMESPACE_KEY, keys: keys_of }]
}

/// Follows every `KiteVirtualMachine` and `KiteUser` of the cluster.
pub(crate) fn start(client: &Client) -> (Cache<KiteVirtualMachine>, Cache<KiteUser>) {
    (Cache::start(Api::all(client.clone()), machines()), Cache::start(Api::all(client.clone()), users()))
}

/// The machine of an `sshId`.
pub(crate) fn lookup(vms: &Cache<KiteVirtualMachine>, ssh_id: &str) -> Lookup {
    let mut found = vms.find(SSH_ID, ssh_id);
    match found.len() {
        0 => Lookup::None,
        1 => found.pop().map_or(Lookup::None, Lookup::One),
        _ => Lookup::Duplicate(found.iter().map(|vm| object_key(vm.as_ref())).collect()),
    }
}

/// Whether `key` belongs to a user whose namespace is `namespace`.
pub(crate) fn allows(users: &Cache<KiteUser>, namespace: &str, key: &PublicKey) -> bool {
    !users.find(NAMESPACE_KEY, &namespace_key(namespace, key)).is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::kube::runtime::watcher::Event;
    use kite_testkit::fixtures::a_vm;

    fn vm(name: &str, ssh_id: &str) -> KiteVirtualMachine {
        a_vm(name).with_ssh_id(ssh_id).in_namespace("ns").build()
    }

    fn found(index: &Cache<KiteVirtualMachine>, ssh_id: &str) -> Option<String> {
        match lookup(index, ssh_id) {
            Lookup::One(vm) => vm.metadata.name.clone(),
            _ => None,
        }
    }

    #[test]
    fn events_update_the_index_one_by_one() {
        let index = Cache::new(machines());
        index.apply(Event::Apply(vm("a", "alice")));
        assert_eq!(found(&index, "alice").as_deref(), Some("a"));
        index.apply(Event::Apply(vm("b", "alice")));
        assert!(matches!(lookup(&index, "alice"), Lookup::Duplicate(keys) if keys.len() == 2));
        index.apply(Event::Delete(vm("a", "alice")));
        assert_eq!(found(&index, "alice").as_deref(), Some("b"));
        let mut deleting = vm("b", "alice");
        deleting.spec.delete = true;
        index.apply(Event::Apply(deleting));
        assert!(matches!(lookup(&index, "alice"), Lookup::None));
    }

    #[test]
    fn a_relist_replaces_the_index_when_it_is_done() {
        let index = Cache::new(machines());
        index.apply(Event::Apply(vm("old", "gone")));
        index.apply(Event::Init);
        index.apply(Event::InitApply(vm("new", "fresh")));
        assert_eq!(found(&index, "gone").as_deref(), Some("old"), "the old index serves until the relist is done");
        index.apply(Event::InitDone);
        assert!(matches!(lookup(&index, "gone"), Lookup::None));
        assert_eq!(found(&index, "fresh").as_deref(), Some("new"));
    }
}
