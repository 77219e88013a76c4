//! The full names of the messages whose JSON form is not an object of their fields.

/// `metav1.Time`: RFC 3339, whole seconds.
pub(super) const TIME: &str = "apimachinery.pkg.apis.meta.v1.Time";
/// `metav1.MicroTime`: RFC 3339 with microseconds.
pub(super) const MICRO_TIME: &str = "apimachinery.pkg.apis.meta.v1.MicroTime";
/// `metav1.Duration`: Go's duration text.
pub(super) const DURATION: &str = "apimachinery.pkg.apis.meta.v1.Duration";
/// `metav1.FieldsV1`: embedded JSON in `Raw`.
pub(super) const FIELDS_V1: &str = "apimachinery.pkg.apis.meta.v1.FieldsV1";
/// `runtime.RawExtension`: embedded JSON in `raw`.
pub(super) const RAW_EXTENSION: &str = "apimachinery.pkg.runtime.RawExtension";
/// `resource.Quantity`: its text.
pub(super) const QUANTITY: &str = "apimachinery.pkg.api.resource.Quantity";
/// `resource.QuantityValue`: its text.
pub(super) const QUANTITY_VALUE: &str = "apimachinery.pkg.api.resource.QuantityValue";
/// `intstr.IntOrString`: a number or a string.
pub(super) const INT_OR_STRING: &str = "apimachinery.pkg.util.intstr.IntOrString";

/// A field's name in JSON. go-to-protobuf names fields after their JSON
/// names, except a few after their Go names (`Webhooks`, `Expression`,
/// `Name`), whose JSON names start in lower case; `DaemonEndpoint.Port` is
/// `Port` in JSON too.
pub(super) fn json_name(field: &prost_reflect::FieldDescriptor) -> String {
    let name = field.name();
    if field.parent_message().name() == "DaemonEndpoint" {
        return name.to_string();
    }
    let mut chars = name.chars();
    match chars.next() {
        Some(first) if first.is_ascii_uppercase() => first.to_ascii_lowercase().to_string() + chars.as_str(),
        _ => name.to_string(),
    }
}

/// The field of `message` whose JSON name is `key`.
pub(super) fn field_for(
    message: &prost_reflect::MessageDescriptor,
    key: &str,
) -> Option<prost_reflect::FieldDescriptor> {
    message
        .get_field_by_name(key)
        .filter(|f| json_name(f) == key)
        .or_else(|| message.fields().find(|f| json_name(f) == key))
}

/// The Go structs embedded `json:",inline"` in the served groups: a field
/// of one of these types, named after it (`localObjectReference`,
/// `volumeSource`), stands in the JSON of the message that holds it (a
/// ConfigMap volume's `name` is its `localObjectReference`'s). The `.proto`
/// files do not mark them; fields of other types named after their type
/// (`securityContext`, `lifecycle`, `affinity`) are ordinary.
const INLINE_TYPES: &[&str] = &[
    "LocalObjectReference",
    "VolumeSource",
    "PersistentVolumeSource",
    "EphemeralContainerCommon",
    "RuleWithOperations",
    "Rule",
    "IngressRuleValue",
];

/// Embedded inline under another name: `Probe.handler` is a `ProbeHandler`.
const INLINE_FIELDS: &[(&str, &str)] = &[("api.core.v1.Probe", "handler")];

/// Whether `field` is embedded inline (see [`INLINE_TYPES`]).
pub(super) fn is_inline(field: &prost_reflect::FieldDescriptor) -> bool {
    if field.is_list() || field.is_map() {
        return false;
    }
    let prost_reflect::Kind::Message(message) = field.kind() else { return false };
    let named_after_type = INLINE_TYPES.contains(&message.name()) && {
        let mut chars = message.name().chars();
        chars.next().map(|c| c.to_ascii_lowercase().to_string() + chars.as_str()).as_deref() == Some(field.name())
    };
    named_after_type
        || INLINE_FIELDS
            .iter()
            .any(|(parent, name)| field.parent_message().full_name() == *parent && field.name() == *name)
}

/// The inline fields of `message` whose message (or its own inline fields) has a field named `key` in JSON.
pub(super) fn inline_for(
    message: &prost_reflect::MessageDescriptor,
    key: &str,
) -> Option<prost_reflect::FieldDescriptor> {
    message.fields().filter(is_inline).find(|field| match field.kind() {
        prost_reflect::Kind::Message(inner) => field_for(&inner, key).is_some() || inline_for(&inner, key).is_some(),
        _ => false,
    })
}
