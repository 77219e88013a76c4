//! Failures on demand: the annotations a test (or `kubectl`) puts on an
//! object to make the simulation fail it, and the [`Rules`] the
//! [`Simulation`](super::Simulation) handle adds to.

/// On a DataVolume: fail it, with the annotation's value as the message.
pub const FAIL_ANNOTATION: &str = "kite-testkit.hy3ons.github.io/fail";
/// On a VirtualMachine: keep it `Starting` (its VMI never runs).
pub const STUCK_ANNOTATION: &str = "kite-testkit.hy3ons.github.io/stuck-starting";

#[derive(Debug, Default)]
pub(crate) struct Rules {
    /// (namespace, name) of DataVolumes to fail, with the message.
    pub failing_volumes: Vec<(String, String, String)>,
    /// (namespace, name) of VirtualMachines that stay Starting.
    pub stuck_machines: Vec<(String, String)>,
    /// Longhorn's uninstall job leaves its webhook configurations behind.
    pub longhorn_leaves_webhooks: bool,
}
