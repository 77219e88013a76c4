//! Schema fragments shared by several Kite fields.
//!
//! Each function is used with `#[schemars(schema_with = "...")]`, so the
//! rule is written once and enforced by the API server everywhere it applies.

use schemars::{Schema, SchemaGenerator, json_schema};

/// A DNS-1123 label: lower-case letters, digits and `-`, at most 63 characters.
pub const DNS_LABEL_PATTERN: &str = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";

/// A DNS-1123 subdomain: dot-separated DNS labels, at most 253 characters.
pub const DNS_SUBDOMAIN_PATTERN: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

/// A non-negative Kubernetes quantity of bytes, such as `4Gi`, `512Mi` or `20G`.
///
/// Signs and the milli suffix `m` are refused: no machine has a negative or
/// fractional byte.
pub const QUANTITY_PATTERN: &str = r"^([0-9]+(\.[0-9]*)?|\.[0-9]+)([KMGTPE]i|[kMGTPE]|[eE]\+?[0-9]+)?$";

/// A size in bytes, as a Kubernetes quantity string that is greater than zero.
pub(crate) fn byte_quantity(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "maxLength": 64,
        "pattern": QUANTITY_PATTERN,
        "x-kubernetes-validations": [{
            "rule": "quantity(self).isGreaterThan(quantity('0'))",
            "message": "must be a size greater than zero, such as 4Gi"
        }]
    })
}

/// The name of a golden image: a DNS-1123 subdomain, as the DataVolume it becomes.
pub(crate) fn image_name(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "minLength": 1,
        "maxLength": 253,
        "pattern": DNS_SUBDOMAIN_PATTERN,
    })
}

/// An optional DNS-1123 label, such as a domain prefix.
pub(crate) fn optional_dns_label(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "minLength": 1,
        "maxLength": 63,
        "pattern": DNS_LABEL_PATTERN,
    })
}

/// An optional DNS-1123 subdomain, such as a base domain.
pub(crate) fn optional_dns_subdomain(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "minLength": 1,
        "maxLength": 253,
        "pattern": DNS_SUBDOMAIN_PATTERN,
    })
}

/// A TCP port, 1 to 65535.
pub(crate) fn optional_port(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "integer",
        "format": "int32",
        "minimum": 1,
        "maximum": 65535,
    })
}
