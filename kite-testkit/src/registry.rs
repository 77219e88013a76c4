//! The resource types the fake API server serves: the built-in kinds (given
//! by the caller, from `builtins`), and the kinds of CustomResourceDefinitions
//! created at run time.

use crate::list_kind::ListKind;
use crate::validation::ObjectSchema;
use serde_json::Value;
use std::sync::Arc;

/// The identity of a stored resource: its group and plural name. Every
/// version of a resource shares one store, as on a real server.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourceKey {
    /// The API group; empty for the core group.
    pub group: String,
    /// The plural resource name, for example `configmaps`.
    pub plural: String,
}

/// One served resource type.
#[derive(Clone, Debug)]
pub struct ResourceType {
    /// The API group; empty for the core group.
    pub group: String,
    /// The served versions; the first is the preferred one.
    pub versions: Vec<String>,
    /// The kind, for example `ConfigMap`.
    pub kind: String,
    /// The plural name used in paths.
    pub plural: String,
    /// The singular name.
    pub singular: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Short names for `kubectl`.
    pub short_names: Vec<String>,
    /// Categories for `kubectl get <category>`.
    pub categories: Vec<String>,
    /// Whether `/status` is a subresource: then writes to the main resource
    /// ignore `status`, and writes to `/status` change only `status`.
    pub status_subresource: bool,
    /// Where the `scale` subresource reads and writes, when the type has one.
    pub scale: Option<ScalePaths>,
    /// Whether `metadata.generation` counts changes outside metadata and status.
    pub generation: bool,
    /// The schema objects are validated against, if any.
    pub schema: Option<Arc<ObjectSchema>>,
    /// Printer columns (`additionalPrinterColumns` of a CRD), as JSON.
    pub printer_columns: Vec<Value>,
    /// The CRD that serves this type, when it is a custom resource.
    pub crd_name: Option<String>,
    /// Merge keys of list fields, by field name, for built-in kinds.
    pub list_fields: &'static [(&'static str, &'static [&'static str])],
}

/// The fields behind a type's `scale` subresource (an `autoscaling/v1`
/// `Scale`), as JSON pointers; a CRD names them in `subresources.scale`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScalePaths {
    /// The desired replicas, such as `/spec/replicas`.
    pub spec_replicas: String,
    /// The observed replicas, such as `/status/replicas`.
    pub status_replicas: String,
    /// Where the label selector is: text at this pointer; `None` reads the
    /// `LabelSelector` at `/spec/selector`, as the workloads do.
    pub label_selector: Option<String>,
}

impl ScalePaths {
    /// Deployments, ReplicaSets and StatefulSets.
    pub fn workload() -> Self {
        Self {
            spec_replicas: "/spec/replicas".into(),
            status_replicas: "/status/replicas".into(),
            label_selector: None,
        }
    }

    /// From a CRD version's `subresources.scale` (`.spec.replicas` paths).
    pub fn from_crd(scale: &Value) -> Option<Self> {
        let pointer = |field: &str| scale.get(field).and_then(Value::as_str).map(|p| p.replace('.', "/"));
        Some(Self {
            spec_replicas: pointer("specReplicasPath")?,
            status_replicas: pointer("statusReplicasPath")?,
            label_selector: pointer("labelSelectorPath"),
        })
    }
}

impl ResourceType {
    /// The key of this type's store.
    pub fn key(&self) -> ResourceKey {
        ResourceKey { group: self.group.clone(), plural: self.plural.clone() }
    }

    /// `group/version`, or `version` for the core group.
    pub fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() { version.to_string() } else { format!("{}/{version}", self.group) }
    }

    /// The preferred version.
    pub fn preferred_version(&self) -> &str {
        self.versions.first().map(String::as_str).unwrap_or("v1")
    }

    /// `plural.group`, as in `NotFound` messages (`configmaps "x" not found`).
    pub fn qualified_plural(&self) -> String {
        if self.group.is_empty() { self.plural.clone() } else { format!("{}.{}", self.plural, self.group) }
    }

    /// How the list at `path` (field names from the object's root) merges.
    pub fn list_kind(&self, path: &[&str]) -> ListKind {
        if path.first() == Some(&"metadata") {
            return match path.get(1) {
                Some(&"finalizers") => ListKind::Set,
                Some(&"ownerReferences") => ListKind::Map(vec!["uid".into()]),
                Some(&"managedFields") => ListKind::Atomic,
                _ => ListKind::Atomic,
            };
        }
        if let Some(schema) = &self.schema
            && let Some(kind) = schema.list_kind(path)
        {
            return kind;
        }
        let Some(last) = path.last() else { return ListKind::Atomic };
        if *last == "conditions" {
            return ListKind::Map(vec!["type".into()]);
        }
        self.list_fields
            .iter()
            .find(|(name, _)| name == last)
            .map(|(_, keys)| ListKind::Map(keys.iter().map(|k| k.to_string()).collect()))
            .unwrap_or(ListKind::Atomic)
    }
}

/// All served types.
#[derive(Debug, Default)]
pub struct Registry {
    types: Vec<Arc<ResourceType>>,
}

impl Registry {
    /// A registry that serves `types`, for example the built-in kinds.
    pub fn new(types: impl IntoIterator<Item = ResourceType>) -> Self {
        Self { types: types.into_iter().map(Arc::new).collect() }
    }

    /// Every served type.
    pub fn all(&self) -> &[Arc<ResourceType>] {
        &self.types
    }

    /// The type served at `group/version` under `plural`.
    pub fn find(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceType>> {
        self.types
            .iter()
            .find(|t| t.group == group && t.plural == plural && t.versions.iter().any(|v| v == version))
            .cloned()
    }

    /// The type stored under `key`.
    pub fn by_key(&self, key: &ResourceKey) -> Option<Arc<ResourceType>> {
        self.types.iter().find(|t| t.group == key.group && t.plural == key.plural).cloned()
    }

    /// Starts serving `resource`, replacing a type of the same group and plural.
    pub fn serve(&mut self, resource: ResourceType) {
        self.types.retain(|t| !(t.group == resource.group && t.plural == resource.plural));
        self.types.push(Arc::new(resource));
    }

    /// Stops serving the types of the CRD `crd_name`.
    pub fn withdraw(&mut self, crd_name: &str) {
        self.types.retain(|t| t.crd_name.as_deref() != Some(crd_name));
    }

    /// The groups served, each with its versions, core group excluded, in a stable order.
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut groups: Vec<(String, Vec<String>)> = Vec::new();
        for t in self.types.iter().filter(|t| !t.group.is_empty()) {
            match groups.iter_mut().find(|(g, _)| *g == t.group) {
                Some((_, versions)) => {
                    for v in &t.versions {
                        if !versions.contains(v) {
                            versions.push(v.clone());
                        }
                    }
                }
                None => groups.push((t.group.clone(), t.versions.clone())),
            }
        }
        groups
    }
}
