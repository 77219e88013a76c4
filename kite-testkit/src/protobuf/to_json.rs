//! A decoded message as the JSON the API server would write for it: fields
//! under their JSON names (go-to-protobuf uses the JSON names as field
//! names), bytes in base64, and the API's special types in their JSON forms.
//! Empty strings, lists and maps are left out, as Go's `omitempty` does;
//! `false` and `0` are kept, since the wire cannot tell an unset
//! non-pointer field from a pointer set to its zero value.

use super::names;
use base64::Engine as _;
use prost_reflect::{DynamicMessage, MapKey, ReflectMessage, Value as Field};
use serde_json::{Map, Value};

/// `message` as JSON; `Value::Null` for a special type that holds nothing (a zero `Time`).
pub(super) fn message(message: &DynamicMessage) -> Value {
    let descriptor = message.descriptor();
    let int = |name: &str| match message.get_field_by_name(name).as_deref() {
        Some(Field::I64(n)) => *n,
        Some(Field::I32(n)) => i64::from(*n),
        _ => 0,
    };
    let has = |name: &str| descriptor.get_field_by_name(name).is_some_and(|f| message.has_field(&f));
    match descriptor.full_name() {
        names::TIME | names::MICRO_TIME => {
            if !has("seconds") && !has("nanos") {
                return Value::Null;
            }
            let micro = descriptor.full_name() == names::MICRO_TIME;
            timestamp(int("seconds"), int("nanos"), micro)
        }
        names::DURATION => Value::String(go_duration(int("duration"))),
        names::QUANTITY | names::QUANTITY_VALUE => text(message, "string"),
        names::INT_OR_STRING => {
            if int("type") == 1 {
                text(message, "strVal")
            } else {
                Value::from(int("intVal"))
            }
        }
        names::RAW_EXTENSION => raw_json(message, "raw"),
        names::FIELDS_V1 => raw_json(message, "Raw"),
        _ => {
            let mut object = Map::new();
            for (field, value) in message.fields() {
                let json = single(value);
                if names::is_inline(&field)
                    && let Value::Object(inlined) = json
                {
                    object.extend(inlined);
                    continue;
                }
                if !is_empty(&json) {
                    object.insert(names::json_name(&field), json);
                }
            }
            Value::Object(object)
        }
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

fn single(value: &Field) -> Value {
    match value {
        Field::Bool(b) => Value::Bool(*b),
        Field::I32(n) => Value::from(*n),
        Field::I64(n) => Value::from(*n),
        Field::U32(n) => Value::from(*n),
        Field::U64(n) => Value::from(*n),
        Field::F32(n) => Value::from(f64::from(*n)),
        Field::F64(n) => Value::from(*n),
        Field::String(s) => Value::String(s.clone()),
        Field::Bytes(b) => Value::String(base64::engine::general_purpose::STANDARD.encode(b)),
        Field::EnumNumber(n) => Value::from(*n),
        Field::Message(m) => message(m),
        Field::List(items) => Value::Array(items.iter().map(single).filter(|v| !v.is_null()).collect()),
        Field::Map(map) => Value::Object(map.iter().map(|(k, v)| (map_key(k), single(v))).collect()),
    }
}

fn map_key(key: &MapKey) -> String {
    match key {
        MapKey::String(s) => s.clone(),
        MapKey::Bool(b) => b.to_string(),
        MapKey::I32(n) => n.to_string(),
        MapKey::I64(n) => n.to_string(),
        MapKey::U32(n) => n.to_string(),
        MapKey::U64(n) => n.to_string(),
    }
}

fn text(message: &DynamicMessage, field: &str) -> Value {
    match message.get_field_by_name(field).as_deref() {
        Some(Field::String(s)) => Value::String(s.clone()),
        _ => Value::Null,
    }
}

/// Embedded JSON bytes (`RawExtension.raw`, `FieldsV1.Raw`), parsed.
fn raw_json(message: &DynamicMessage, field: &str) -> Value {
    match message.get_field_by_name(field).as_deref() {
        Some(Field::Bytes(raw)) if !raw.is_empty() => serde_json::from_slice(raw).unwrap_or(Value::Null),
        _ => Value::Null,
    }
}

/// RFC 3339 in UTC: whole seconds for `Time`, microseconds for `MicroTime`.
fn timestamp(seconds: i64, nanos: i64, micro: bool) -> Value {
    let Ok(at) = jiff::Timestamp::from_second(seconds) else { return Value::Null };
    let whole = at.strftime("%Y-%m-%dT%H:%M:%S").to_string();
    Value::String(if micro { format!("{whole}.{:06}Z", nanos / 1000) } else { format!("{whole}Z") })
}

/// A duration as Go prints it (`1h2m3s`, `1.5s`, `0s`).
fn go_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let nanos = nanos.unsigned_abs();
    let (hours, rest) = (nanos / 3_600_000_000_000, nanos % 3_600_000_000_000);
    let (minutes, rest) = (rest / 60_000_000_000, rest % 60_000_000_000);
    let (seconds, fraction) = (rest / 1_000_000_000, rest % 1_000_000_000);
    let mut text = String::from(sign);
    if hours > 0 {
        text.push_str(&format!("{hours}h"));
    }
    if hours > 0 || minutes > 0 {
        text.push_str(&format!("{minutes}m"));
    }
    let fraction = format!("{fraction:09}");
    let fraction = fraction.trim_end_matches('0');
    if fraction.is_empty() {
        text.push_str(&format!("{seconds}s"));
    } else {
        text.push_str(&format!("{seconds}.{fraction}s"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_print_as_go_prints_them() {
        assert_eq!(go_duration(0), "0s");
        assert_eq!(go_duration(1_500_000_000), "1.5s");
        assert_eq!(go_duration(3_723_000_000_000), "1h2m3s");
        assert_eq!(go_duration(120_000_000_000), "2m0s");
    }

    #[test]
    fn times_are_rfc3339_in_utc() {
        assert_eq!(timestamp(0, 0, false), "1970-01-01T00:00:00Z");
        assert_eq!(timestamp(1, 123_456_789, true), "1970-01-01T00:00:01.123456Z");
    }
}
