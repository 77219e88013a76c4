//! The labels and finalizers that mark what Kite created.
//!
//! Kite never touches or deletes an object that does not carry
//! [`MANAGED_BY`] = [`MANAGED_BY_CONTROLLER`].

use std::collections::BTreeMap;

/// The label that says which Kite component manages an object.
pub const MANAGED_BY: &str = "hy3ons.github.io/managed-by";

/// The value of [`MANAGED_BY`] on everything the Kite controller creates.
pub const MANAGED_BY_CONTROLLER: &str = "kite-controller";

/// The name of the `KiteVirtualMachine` a child object belongs to.
pub const VM_NAME: &str = "hy3ons.github.io/kite-vm-name";

/// The namespace of the `KiteVirtualMachine` a child object belongs to.
pub const VM_NAMESPACE: &str = "hy3ons.github.io/kite-vm-namespace";

/// The finalizer that holds a `KiteVirtualMachine` until its children are gone.
pub const VM_CLEANUP_FINALIZER: &str = "hy3ons.github.io/kite-vm-cleanup";

/// The labels every child of a `KiteVirtualMachine` carries.
///
/// ```
/// let labels = kite_core::labels::vm_child_labels("web", "kite-user-ku-1");
/// assert_eq!(labels["hy3ons.github.io/managed-by"], "kite-controller");
/// assert_eq!(labels["hy3ons.github.io/kite-vm-name"], "web");
/// ```
pub fn vm_child_labels(vm_name: &str, vm_namespace: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (MANAGED_BY.to_string(), MANAGED_BY_CONTROLLER.to_string()),
        (VM_NAME.to_string(), vm_name.to_string()),
        (VM_NAMESPACE.to_string(), vm_namespace.to_string()),
    ])
}

/// The label selector of everything the Kite controller creates,
/// `hy3ons.github.io/managed-by=kite-controller`: what its watches of
/// children list.
///
/// ```
/// assert_eq!(kite_core::labels::managed_selector(), "hy3ons.github.io/managed-by=kite-controller");
/// ```
pub fn managed_selector() -> String {
    format!("{MANAGED_BY}={MANAGED_BY_CONTROLLER}")
}

/// The label selector of every object the Kite controller did not create
/// (the label absent, or another value): the complement of
/// [`managed_selector`].
///
/// ```
/// assert_eq!(kite_core::labels::others_selector(), "hy3ons.github.io/managed-by!=kite-controller");
/// ```
pub fn others_selector() -> String {
    format!("{MANAGED_BY}!={MANAGED_BY_CONTROLLER}")
}

/// Whether `labels` mark an object as created by the Kite controller.
pub fn is_managed_by_controller(labels: Option<&BTreeMap<String, String>>) -> bool {
    labels.and_then(|l| l.get(MANAGED_BY)).is_some_and(|v| v == MANAGED_BY_CONTROLLER)
}

/// The finalizer that holds a `KiteUser` until its namespace is released.
pub const USER_CLEANUP_FINALIZER: &str = "hy3ons.github.io/kite-user-cleanup";

/// On a tenant namespace and what is in it: the `KiteUser` it belongs to.
pub const USER_NAME: &str = "hy3ons.github.io/kite-user";

/// On the objects of the platform itself (StorageClass, golden images, the
/// gateway's Service): which part of the platform made them.
pub const COMPONENT: &str = "hy3ons.github.io/component";

/// The labels of an object the Kite controller made for `user` or for a
/// `component` of the platform: [`MANAGED_BY`] and the one that says whose.
///
/// ```
/// use kite_core::labels::{owned_labels, COMPONENT};
/// assert_eq!(owned_labels(COMPONENT, "storage")[COMPONENT], "storage");
/// ```
pub fn owned_labels(key: &str, value: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(MANAGED_BY.to_string(), MANAGED_BY_CONTROLLER.to_string()), (key.to_string(), value.to_string())])
}
