//! The KubeVirt, CDI and Longhorn CRDs the simulated cluster installs, and
//! the strict upstream schemas that objects of KubeVirt and CDI kinds are
//! checked against, as `fieldValidation=Strict` would.

use crate::validation::ObjectSchema;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

const VM_SCHEMA: &str = include_str!("../schemas/kubevirt-virtualmachine-v1.schema.json");
const VM_STRICT: &str = include_str!("../schemas/kubevirt-virtualmachine-v1.strict.schema.json");
const VMI_SCHEMA: &str = include_str!("../schemas/kubevirt-virtualmachineinstance-v1.schema.json");
const DV_SCHEMA: &str = include_str!("../schemas/cdi-datavolume-v1beta1.schema.json");
const DV_STRICT: &str = include_str!("../schemas/cdi-datavolume-v1beta1.strict.schema.json");

fn parse(text: &str, what: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|error| {
        tracing::error!(%error, schema = what, "a vendored schema is not JSON; objects of its kind are not validated");
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
    })
}

/// The strict schemas by (group, kind), compiled once per process.
pub fn strict_schemas() -> HashMap<(String, String), Arc<ObjectSchema>> {
    static SCHEMAS: OnceLock<HashMap<(String, String), Arc<ObjectSchema>>> = OnceLock::new();
    SCHEMAS
        .get_or_init(|| {
            let mut schemas = HashMap::new();
            for (group, kind, text) in
                [("kubevirt.io", "VirtualMachine", VM_STRICT), ("cdi.kubevirt.io", "DataVolume", DV_STRICT)]
            {
                match ObjectSchema::new(&parse(text, kind)) {
                    Ok(schema) => {
                        schemas.insert((group.to_string(), kind.to_string()), Arc::new(schema));
                    }
                    Err(error) => tracing::error!(%error, kind, "a strict upstream schema does not compile"),
                }
            }
            schemas
        })
        .clone()
}

/// The strict upstream schema of a KubeVirt `VirtualMachine`, as JSON.
pub fn virtual_machine_strict_schema() -> Value {
    parse(VM_STRICT, "VirtualMachine")
}

/// The strict upstream schema of a CDI `DataVolume`, as JSON.
pub fn data_volume_strict_schema() -> Value {
    parse(DV_STRICT, "DataVolume")
}

struct CrdSpec<'a> {
    group: &'a str,
    version: &'a str,
    kind: &'a str,
    plural: &'a str,
    short_names: &'a [&'a str],
    schema: Value,
    status: bool,
    columns: Value,
}

fn crd(spec: CrdSpec<'_>) -> Value {
    let mut version = json!({
        "name": spec.version, "served": true, "storage": true,
        "schema": {"openAPIV3Schema": spec.schema},
        "additionalPrinterColumns": spec.columns,
    });
    if spec.status {
        version["subresources"] = json!({"status": {}});
    }
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{}.{}", spec.plural, spec.group)},
        "spec": {
            "group": spec.group, "scope": "Namespaced",
            "names": {"kind": spec.kind, "plural": spec.plural, "singular": spec.kind.to_lowercase(),
                      "listKind": format!("{}List", spec.kind), "shortNames": spec.short_names},
            "versions": [version]
        }
    })
}

/// The CRDs of KubeVirt (`VirtualMachine`, `VirtualMachineInstance`), CDI
/// (`DataVolume`) and Longhorn (`nodes.longhorn.io`), with the upstream schemas.
pub fn crds() -> Vec<Value> {
    let age = json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"});
    vec![
        crd(CrdSpec {
            group: "kubevirt.io",
            version: "v1",
            kind: "VirtualMachine",
            plural: "virtualmachines",
            short_names: &["vm", "vms"],
            schema: parse(VM_SCHEMA, "VirtualMachine"),
            status: true,
            columns: json!([age, {"name": "Status", "type": "string", "jsonPath": ".status.printableStatus"},
                            {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"}]),
        }),
        crd(CrdSpec {
            group: "kubevirt.io",
            version: "v1",
            kind: "VirtualMachineInstance",
            plural: "virtualmachineinstances",
            short_names: &["vmi", "vmis"],
            schema: parse(VMI_SCHEMA, "VirtualMachineInstance"),
            status: false,
            columns: json!([age, {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
                            {"name": "NodeName", "type": "string", "jsonPath": ".status.nodeName"}]),
        }),
        crd(CrdSpec {
            group: "cdi.kubevirt.io",
            version: "v1beta1",
            kind: "DataVolume",
            plural: "datavolumes",
            short_names: &["dv", "dvs"],
            schema: parse(DV_SCHEMA, "DataVolume"),
            status: true,
            columns: json!([{"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
                            {"name": "Progress", "type": "string", "jsonPath": ".status.progress"},
                            {"name": "Restarts", "type": "integer", "jsonPath": ".status.restartCount"}, age]),
        }),
        crd(CrdSpec {
            group: "longhorn.io",
            version: "v1beta2",
            kind: "Node",
            plural: "nodes",
            short_names: &["lhn"],
            schema: json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
            status: true,
            columns: json!([{"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
                            {"name": "AllowScheduling", "type": "boolean", "jsonPath": ".spec.allowScheduling"}, age]),
        }),
    ]
}
