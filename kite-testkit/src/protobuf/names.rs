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
