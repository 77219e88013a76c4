//! The gateway's way to the demo's machines: a Service resolves to the
//! loopback address of the guest sshd its selector picks.

use kite_ssh::kube::AddressResolver;
use kite_testkit::sim::Guests;
use std::sync::Arc;

/// Resolves Services to guests.
pub struct Resolver(pub Arc<Guests>);

impl AddressResolver for Resolver {
    fn address(&self, namespace: &str, service: &str, _port: u16) -> String {
        match self.0.address(namespace, service) {
            Some(address) => address.to_string(),
            // No guest backs the Service (yet): an address that refuses at once.
            None => "127.0.0.1:0".to_string(),
        }
    }
}
