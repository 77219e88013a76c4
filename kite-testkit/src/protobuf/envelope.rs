//! The `k8s\0` envelope: four magic bytes, then a `runtime.Unknown` whose
//! `typeMeta` names the object and whose `raw` holds its message
//! (apimachinery's `runtime/serializer/protobuf`).

use super::{ProtobufError, message, named, object_bytes, to_json};
use prost_reflect::{DynamicMessage, Value as Field};
use serde_json::Value;

/// The magic bytes every enveloped object starts with.
const MAGIC: &[u8; 4] = b"k8s\0";

const UNKNOWN: &str = "apimachinery.pkg.runtime.Unknown";

/// The object in an enveloped body, as JSON with its `apiVersion` and `kind`.
pub(crate) fn decode(body: &[u8]) -> Result<Value, ProtobufError> {
    let malformed = |what: &str| ProtobufError::Malformed(what.to_string());
    let rest =
        body.strip_prefix(MAGIC).ok_or_else(|| malformed("the body does not start with the protobuf magic number"))?;
    let unknown = DynamicMessage::decode(named(UNKNOWN)?, rest).map_err(|e| ProtobufError::Malformed(e.to_string()))?;
    let text = |message: &DynamicMessage, field: &str| match message.get_field_by_name(field).as_deref() {
        Some(Field::String(s)) => s.clone(),
        _ => String::new(),
    };
    let type_meta = match unknown.get_field_by_name("typeMeta").as_deref() {
        Some(Field::Message(m)) => m.clone(),
        _ => return Err(malformed("the envelope names no type")),
    };
    let (api_version, kind) = (text(&type_meta, "apiVersion"), text(&type_meta, "kind"));
    if !text(&unknown, "contentEncoding").is_empty() {
        return Err(malformed("the envelope's content is encoded, which this server does not read"));
    }
    let raw = match unknown.get_field_by_name("raw").as_deref() {
        Some(Field::Bytes(raw)) => raw.clone(),
        _ => Default::default(),
    };
    let descriptor = message(&api_version, &kind)?;
    let object = DynamicMessage::decode(descriptor, raw).map_err(|e| ProtobufError::Malformed(e.to_string()))?;
    let mut json = serde_json::Map::new();
    json.insert("apiVersion".into(), api_version.into());
    json.insert("kind".into(), kind.into());
    if let Value::Object(fields) = to_json::message(&object) {
        json.extend(fields);
    }
    Ok(Value::Object(json))
}

/// `object` (with its `apiVersion` and `kind`) as an enveloped body.
pub(crate) fn encode(object: &Value) -> Result<Vec<u8>, ProtobufError> {
    let (api_version, kind, raw) = object_bytes(object)?;
    let mut type_meta = DynamicMessage::new(named("apimachinery.pkg.runtime.TypeMeta")?);
    type_meta.set_field_by_name("apiVersion", Field::String(api_version));
    type_meta.set_field_by_name("kind", Field::String(kind));
    let mut unknown = DynamicMessage::new(named(UNKNOWN)?);
    unknown.set_field_by_name("typeMeta", Field::Message(type_meta));
    unknown.set_field_by_name("raw", Field::Bytes(raw.into()));
    unknown.set_field_by_name("contentEncoding", Field::String(String::new()));
    unknown.set_field_by_name("contentType", Field::String(String::new()));
    let mut body = MAGIC.to_vec();
    body.extend(prost::Message::encode_to_vec(&unknown));
    Ok(body)
}
