//! How fast the simulated cluster moves and how its stack comes to it:
//! [`SimulationConfig`] and [`StackSimulation`].

use std::time::Duration;

/// How fast the simulated cluster moves.
#[derive(Clone, Debug)]
pub struct SimulationConfig {
    /// The time between two steps.
    pub step: Duration,
    /// Steps an import takes from 0% to 100%.
    pub import_steps: u32,
    /// Steps a clone takes from 0% to 100%.
    pub clone_steps: u32,
    /// The node VMIs are scheduled on.
    pub node_name: String,
    /// The address a `LoadBalancer` Service gets as its ingress; none are given one when `None`.
    pub load_balancer_ip: Option<String>,
    /// Whether KubeVirt, CDI and Longhorn are there from the start, or come from their operators.
    pub stack: StackSimulation,
}

/// How the stack Kite runs on comes to the simulated cluster.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StackSimulation {
    /// Their CRDs are installed at start, as on a cluster where they already run.
    #[default]
    Installed,
    /// Nothing is installed at start: applying their release manifests and
    /// custom resources brings them, their operators simulated (see the
    /// `stack` module's documentation), and deleting the resources removes them.
    Operators,
}

impl Default for SimulationConfig {
    fn default() -> Self {
        Self {
            step: Duration::from_millis(20),
            import_steps: 5,
            clone_steps: 3,
            node_name: "kite-node-1".into(),
            load_balancer_ip: None,
            stack: StackSimulation::Installed,
        }
    }
}
