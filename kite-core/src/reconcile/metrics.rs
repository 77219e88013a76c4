//! Prometheus metrics of the reconcilers: how many passes, how many failed
//! (by error), and how long they took, each labelled by reconciler.

use crate::Error;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::time::Instant;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReconcilerLabels {
    reconciler: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    reconciler: &'static str,
    error: &'static str,
}

fn duration_histogram() -> Histogram {
    // 1 ms to about 16 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

/// The reconcilers' metrics; cheap to clone (every clone counts into the same series).
#[derive(Clone, Debug)]
pub struct Metrics {
    reconciles: Family<ReconcilerLabels, Counter>,
    errors: Family<ErrorLabels, Counter>,
    duration: Family<ReconcilerLabels, Histogram, fn() -> Histogram>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self {
            reconciles: Family::default(),
            errors: Family::default(),
            duration: Family::new_with_constructor(duration_histogram),
        }
    }
}

impl Metrics {
    /// Metrics registered in `registry` as `kite_reconciles`,
    /// `kite_reconcile_errors` and `kite_reconcile_duration_seconds`.
    ///
    /// ```
    /// let mut registry = prometheus_client::registry::Registry::default();
    /// let metrics = kite_core::reconcile::Metrics::register(&mut registry);
    /// drop(metrics.measure("tenant"));
    /// let mut text = String::new();
    /// prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    /// assert!(text.contains("kite_reconciles_total{reconciler=\"tenant\"} 1"));
    /// ```
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self::default();
        registry.register("kite_reconciles", "Reconcile passes, by reconciler", metrics.reconciles.clone());
        registry.register(
            "kite_reconcile_errors",
            "Failed reconcile passes, by reconciler and error",
            metrics.errors.clone(),
        );
        registry.register(
            "kite_reconcile_duration_seconds",
            "How long reconcile passes took, by reconciler",
            metrics.duration.clone(),
        );
        metrics
    }

    /// Counts a pass of `reconciler` and measures it until the guard is dropped.
    pub fn measure(&self, reconciler: &'static str) -> Measure {
        self.reconciles.get_or_create(&ReconcilerLabels { reconciler }).inc();
        Measure { metrics: self.clone(), reconciler, started: Instant::now() }
    }

    /// Counts a failed pass of `reconciler`.
    pub fn failed(&self, reconciler: &'static str, error: &Error) {
        self.errors.get_or_create(&ErrorLabels { reconciler, error: error.metric_label() }).inc();
    }

    /// How many passes of `reconciler` failed so far, for tests and diagnostics.
    pub fn failures(&self, reconciler: &'static str, error: &'static str) -> u64 {
        self.errors.get_or_create(&ErrorLabels { reconciler, error }).get()
    }
}

/// Records the duration of a pass when dropped.
#[derive(Debug)]
pub struct Measure {
    metrics: Metrics,
    reconciler: &'static str,
    started: Instant,
}

impl Drop for Measure {
    fn drop(&mut self) {
        let labels = ReconcilerLabels { reconciler: self.reconciler };
        self.metrics.duration.get_or_create(&labels).observe(self.started.elapsed().as_secs_f64());
    }
}
