//! The addresses of the cluster's own hosts, which machines may not reach:
//! every node's `InternalIP` and `ExternalIP`, and the API server's
//! endpoints (the `kubernetes` Service's EndpointSlices in `default`). A node
//! with a public address serves the API server (`:6443`), the kubelet
//! (`:10250`) and NodePorts on it, which the private ranges do not cover.

use crate::Error;
use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, ListParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

/// Where the API server's EndpointSlices are.
const API_SERVER_NAMESPACE: &str = "default";

/// The label that ties an EndpointSlice to its Service.
const API_SERVER_SLICES: &str = "kubernetes.io/service-name=kubernetes";

/// A node's addresses that a machine could reach it by.
fn node_addresses(node: &Node) -> BTreeSet<String> {
    let addresses = node.status.as_ref().and_then(|status| status.addresses.as_ref());
    addresses
        .into_iter()
        .flatten()
        .filter(|address| address.type_ == "InternalIP" || address.type_ == "ExternalIP")
        .filter_map(|address| host_cidr(&address.address))
        .collect()
}

/// The API server's endpoint addresses in one of its EndpointSlices.
fn slice_addresses(slice: &EndpointSlice) -> BTreeSet<String> {
    slice.endpoints.iter().flatten().flat_map(|endpoint| &endpoint.addresses).filter_map(|a| host_cidr(a)).collect()
}

/// `address` as a one-host range (`/32` or `/128`); `None` when it is not an IP address.
fn host_cidr(address: &str) -> Option<String> {
    match address.parse::<std::net::IpAddr>().ok()? {
        std::net::IpAddr::V4(v4) => Some(format!("{v4}/32")),
        std::net::IpAddr::V6(v6) => Some(format!("{v6}/128")),
    }
}

/// Reads the hosts' addresses now, sorted and without repeats.
pub async fn observe(client: &Client) -> Result<Vec<String>, Error> {
    let nodes = Api::<Node>::all(client.clone())
        .list(&ListParams::default())
        .await
        .map_err(Error::kube("listing the nodes (their addresses are kept from machines)"))?;
    let slices = Api::<EndpointSlice>::namespaced(client.clone(), API_SERVER_NAMESPACE)
        .list(&ListParams::default().labels(API_SERVER_SLICES))
        .await
        .map_err(Error::kube("listing the API server's EndpointSlices (its addresses are kept from machines)"))?;
    let mut all = BTreeSet::new();
    all.extend(nodes.items.iter().flat_map(node_addresses));
    all.extend(slices.items.iter().flat_map(slice_addresses));
    Ok(all.into_iter().collect())
}

/// A stream that yields whenever a node's or the API server's addresses
/// change (not at every status heartbeat of a node), for
/// `Controller::reconcile_all_on`.
pub fn changes(client: Client) -> impl Stream<Item = ()> + Send + 'static {
    let nodes = watcher(Api::<Node>::all(client.clone()), watcher::Config::default())
        .default_backoff()
        .applied_objects()
        .filter_map(|node| async move {
            node.ok().map(|node| (format!("node/{}", node.name_any()), node_addresses(&node)))
        });
    let slices = watcher(
        Api::<EndpointSlice>::namespaced(client, API_SERVER_NAMESPACE),
        watcher::Config::default().labels(API_SERVER_SLICES),
    )
    .default_backoff()
    .applied_objects()
    .filter_map(|slice| async move {
        slice.ok().map(|slice| (format!("endpointslice/{}", slice.name_any()), slice_addresses(&slice)))
    });
    let seen: Arc<Mutex<HashMap<String, BTreeSet<String>>>> = Arc::default();
    futures::stream::select(nodes.boxed(), slices.boxed()).filter_map(move |(key, addresses)| {
        let seen = seen.clone();
        async move {
            let mut seen = seen.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            (seen.insert(key, addresses.clone()).as_ref() != Some(&addresses)).then_some(())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{NodeAddress, NodeStatus};
    use k8s_openapi::api::discovery::v1::Endpoint;

    #[test]
    fn a_nodes_ip_addresses_are_kept_and_its_name_is_not() {
        let address = |type_: &str, address: &str| NodeAddress { type_: type_.into(), address: address.into() };
        let node = Node {
            status: Some(NodeStatus {
                addresses: Some(vec![
                    address("InternalIP", "10.0.0.5"),
                    address("ExternalIP", "203.0.113.10"),
                    address("InternalIP", "2001:db8::5"),
                    address("Hostname", "node-1"),
                ]),
                ..Default::default()
            }),
            ..Default::default()
        };
        let kept: Vec<String> = node_addresses(&node).into_iter().collect();
        assert_eq!(kept, ["10.0.0.5/32", "2001:db8::5/128", "203.0.113.10/32"]);
        let slice = EndpointSlice {
            endpoints: Some(vec![Endpoint { addresses: vec!["198.51.100.20".into()], ..Default::default() }]),
            ..Default::default()
        };
        assert_eq!(slice_addresses(&slice).into_iter().collect::<Vec<_>>(), ["198.51.100.20/32"]);
    }
}
