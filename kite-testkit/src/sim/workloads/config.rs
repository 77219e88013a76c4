//! How the simulated workloads behave ([`WorkloadConfig`]), and the
//! annotation that makes a pod crash.

use std::time::Duration;

/// On a pod or a pod template: its containers crash (`CrashLoopBackOff`).
pub const CRASH_ANNOTATION: &str = "kite-testkit.hy3ons.github.io/crash";

/// How the simulated workloads behave.
#[derive(Clone, Debug)]
pub struct WorkloadConfig {
    /// The time between two steps.
    pub step: Duration,
    /// The node pods are scheduled on (created `Ready` when missing).
    pub node_name: String,
    /// Images that cannot be pulled: their pods stay `ImagePullBackOff`.
    pub missing_images: Vec<String>,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        Self { step: Duration::from_millis(50), node_name: "kite-node-1".into(), missing_images: Vec::new() }
    }
}
