//! The built-in kinds the fake server serves, as a real one would.

use crate::registry::{ResourceType, ScalePaths};

/// Merge keys of the list fields of built-in kinds that are list-maps.
const POD_LISTS: &[(&str, &[&str])] = &[
    ("containers", &["name"]),
    ("initContainers", &["name"]),
    ("env", &["name"]),
    ("volumes", &["name"]),
    ("volumeMounts", &["mountPath"]),
    ("imagePullSecrets", &["name"]),
];
const SERVICE_LISTS: &[(&str, &[&str])] = &[("ports", &["port", "protocol"])];
const NONE: &[(&str, &[&str])] = &[];

struct Spec {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    short: &'static [&'static str],
    status: bool,
    generation: bool,
    scale: bool,
    lists: &'static [(&'static str, &'static [&'static str])],
}

const fn spec(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    short: &'static [&'static str],
) -> Spec {
    Spec {
        group,
        version,
        kind,
        plural,
        namespaced,
        short,
        status: false,
        generation: false,
        scale: false,
        lists: NONE,
    }
}

impl Spec {
    const fn with_status(mut self) -> Self {
        self.status = true;
        self
    }
    const fn with_generation(mut self) -> Self {
        self.generation = true;
        self
    }
    /// With the `scale` subresource of the workloads: `spec.replicas`,
    /// `status.replicas`, the selector from `spec.selector`.
    const fn with_scale(mut self) -> Self {
        self.scale = true;
        self
    }
    const fn with_lists(mut self, lists: &'static [(&'static str, &'static [&'static str])]) -> Self {
        self.lists = lists;
        self
    }
}

const BUILTINS: &[Spec] = &[
    spec("", "v1", "Namespace", "namespaces", false, &["ns"]).with_status(),
    spec("", "v1", "Secret", "secrets", true, &[]),
    spec("", "v1", "ConfigMap", "configmaps", true, &["cm"]),
    spec("", "v1", "Service", "services", true, &["svc"]).with_status().with_lists(SERVICE_LISTS),
    spec("", "v1", "ServiceAccount", "serviceaccounts", true, &["sa"]),
    spec("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", true, &["pvc"]).with_status(),
    spec("", "v1", "Pod", "pods", true, &["po"]).with_status().with_lists(POD_LISTS),
    spec("", "v1", "Node", "nodes", false, &["no"]).with_status(),
    spec("", "v1", "Event", "events", true, &["ev"]),
    spec("", "v1", "ResourceQuota", "resourcequotas", true, &["quota"]).with_status(),
    spec("", "v1", "LimitRange", "limitranges", true, &["limits"]),
    spec("events.k8s.io", "v1", "Event", "events", true, &["ev"]),
    spec("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", true, &["netpol"]).with_generation(),
    spec("storage.k8s.io", "v1", "StorageClass", "storageclasses", false, &["sc"]),
    spec("rbac.authorization.k8s.io", "v1", "Role", "roles", true, &[]),
    spec("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", true, &[]),
    spec("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", false, &[]),
    spec("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", false, &[]),
    spec("apps", "v1", "Deployment", "deployments", true, &["deploy"])
        .with_status()
        .with_generation()
        .with_scale()
        .with_lists(POD_LISTS),
    spec("apps", "v1", "ReplicaSet", "replicasets", true, &["rs"])
        .with_status()
        .with_generation()
        .with_scale()
        .with_lists(POD_LISTS),
    spec("apps", "v1", "StatefulSet", "statefulsets", true, &["sts"])
        .with_status()
        .with_generation()
        .with_scale()
        .with_lists(POD_LISTS),
    spec("apps", "v1", "DaemonSet", "daemonsets", true, &["ds"]).with_status().with_generation().with_lists(POD_LISTS),
    spec("batch", "v1", "Job", "jobs", true, &[]).with_status().with_generation().with_lists(POD_LISTS),
    spec("", "v1", "Endpoints", "endpoints", true, &["ep"]),
    spec("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", true, &[]),
    spec("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", true, &["pdb"]).with_status().with_generation(),
    spec("networking.k8s.io", "v1", "Ingress", "ingresses", true, &["ing"]).with_status().with_generation(),
    spec("coordination.k8s.io", "v1", "Lease", "leases", true, &[]),
    spec("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", false, &["pc"]),
    spec("authorization.k8s.io", "v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews", false, &[]),
    spec("authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews", false, &[]),
    spec("authorization.k8s.io", "v1", "SelfSubjectRulesReview", "selfsubjectrulesreviews", false, &[]),
    spec("authentication.k8s.io", "v1", "SelfSubjectReview", "selfsubjectreviews", false, &[]),
    spec("apiregistration.k8s.io", "v1", "APIService", "apiservices", false, &[]).with_status(),
    spec(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        false,
        &[],
    )
    .with_generation(),
    spec(
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        false,
        &[],
    )
    .with_generation(),
    spec(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
        &["crd", "crds"],
    )
    .with_status()
    .with_generation(),
];

/// Every built-in kind.
pub fn all() -> Vec<ResourceType> {
    BUILTINS
        .iter()
        .map(|s| ResourceType {
            group: s.group.to_string(),
            versions: vec![s.version.to_string()],
            kind: s.kind.to_string(),
            plural: s.plural.to_string(),
            singular: s.kind.to_lowercase(),
            namespaced: s.namespaced,
            short_names: s.short.iter().map(|n| n.to_string()).collect(),
            categories: if s.group.is_empty() || s.group == "apps" || s.group == "batch" {
                vec!["all".into()]
            } else {
                vec![]
            }
            .into_iter()
            .filter(|_| {
                matches!(s.kind, "Pod" | "Service" | "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet" | "Job")
            })
            .collect(),
            status_subresource: s.status,
            generation: s.generation,
            schema: None,
            printer_columns: Vec::new(),
            crd_name: None,
            scale: s.scale.then(ScalePaths::workload),
            list_fields: s.lists,
        })
        .collect()
}
