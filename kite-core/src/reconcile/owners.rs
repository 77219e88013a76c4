//! Which cluster-scoped object owns a namespaced child, as the controller's
//! scheduler must name it.
//!
//! kube-rs' `Controller::owns` names the owner of a child by the child's
//! namespace. For a cluster-scoped owner (a `KiteUser`, the `KitePlatform`)
//! that is a second name for the same object: its store finds the object
//! under either, but the scheduler keeps one queue entry per name, so the
//! owner could be reconciled twice at once, one pass per name (seen as two
//! server-side applies racing to create one NetworkPolicy). These mappers,
//! for `Controller::watches`, name the owner as its own watch does: without
//! a namespace.

use kube::Resource;
use kube::runtime::reflector::ObjectRef;

/// The cluster-scoped owners of kind `Owner` that `child` names in its
/// owner references, without a namespace.
///
/// ```
/// use k8s_openapi::api::networking::v1::NetworkPolicy;
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
/// use kite_core::api::KiteUser;
/// use kite_core::reconcile::owners::cluster_owners;
/// use kube::runtime::reflector::ObjectRef;
///
/// let mut policy = NetworkPolicy::default();
/// policy.metadata.namespace = Some("kite-user-ada".into());
/// policy.metadata.owner_references = Some(vec![OwnerReference {
///     api_version: "hy3ons.github.io/v1".into(),
///     kind: "KiteUser".into(),
///     name: "ada".into(),
///     uid: "u-1".into(),
///     ..OwnerReference::default()
/// }]);
/// let owners = cluster_owners::<KiteUser, _>(&policy);
/// assert_eq!(owners, vec![ObjectRef::<KiteUser>::new("ada")]);
/// assert_eq!(owners[0].namespace, None, "the same name as the user's own watch gives it");
/// ```
pub fn cluster_owners<Owner, Child>(child: &Child) -> Vec<ObjectRef<Owner>>
where
    Owner: Resource<DynamicType = ()>,
    Child: Resource,
{
    child
        .meta()
        .owner_references
        .iter()
        .flatten()
        .filter_map(|owner| ObjectRef::<Owner>::from_owner_ref(None, owner, ()))
        .collect()
}
