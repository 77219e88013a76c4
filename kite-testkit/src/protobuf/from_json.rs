//! JSON as a message: the inverse of [`to_json`](super::to_json). Fields
//! the message does not have (`apiVersion` and `kind`, which the envelope
//! carries) and `null`s are left out.

use super::names;
use base64::Engine as _;
use prost_reflect::{DynamicMessage, FieldDescriptor, Kind, MapKey, MessageDescriptor, Value as Field};
use serde_json::Value;
use std::collections::HashMap;

/// `json` as a `descriptor` message, or what does not fit.
pub(super) fn message(descriptor: &MessageDescriptor, json: &Value) -> Result<DynamicMessage, String> {
    let mut message = DynamicMessage::new(descriptor.clone());
    let mut set = |name: &str, value: Field| {
        message.set_field_by_name(name, value);
    };
    match descriptor.full_name() {
        names::TIME | names::MICRO_TIME => {
            let text = json.as_str().ok_or_else(|| format!("a time must be a string, not {json}"))?;
            let at: jiff::Timestamp = text.parse().map_err(|e| format!("{text:?} is not an RFC 3339 time: {e}"))?;
            set("seconds", Field::I64(at.as_second()));
            let nanos =
                if descriptor.full_name() == names::MICRO_TIME { at.subsec_nanosecond() / 1000 * 1000 } else { 0 };
            set("nanos", Field::I32(nanos));
        }
        names::DURATION => {
            let text = json.as_str().ok_or_else(|| format!("a duration must be a string, not {json}"))?;
            set("duration", Field::I64(go_duration(text)?));
        }
        names::QUANTITY | names::QUANTITY_VALUE => {
            let text = match json {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                other => return Err(format!("a quantity must be a string or a number, not {other}")),
            };
            set("string", Field::String(text));
        }
        names::INT_OR_STRING => match json {
            Value::String(s) => {
                set("type", Field::I64(1));
                set("strVal", Field::String(s.clone()));
            }
            Value::Number(n) => {
                let n = n.as_i64().and_then(|n| i32::try_from(n).ok()).ok_or_else(|| format!("{n} is not an int32"))?;
                set("type", Field::I64(0));
                set("intVal", Field::I32(n));
            }
            other => return Err(format!("an int-or-string must be a number or a string, not {other}")),
        },
        names::RAW_EXTENSION => set("raw", Field::Bytes(json.to_string().into_bytes().into())),
        names::FIELDS_V1 => set("Raw", Field::Bytes(json.to_string().into_bytes().into())),
        _ => {
            let object =
                json.as_object().ok_or_else(|| format!("{} must be an object, not {json}", descriptor.name()))?;
            let mut inlined: HashMap<String, serde_json::Map<String, Value>> = HashMap::new();
            for (name, value) in object {
                let Some(field) = names::field_for(descriptor, name) else {
                    if let Some(inline) = names::inline_for(descriptor, name) {
                        inlined.entry(inline.name().to_string()).or_default().insert(name.clone(), value.clone());
                    }
                    continue;
                };
                if value.is_null() {
                    continue;
                }
                let value = field_value(&field, value).map_err(|e| format!("{name}: {e}"))?;
                message.set_field(&field, value);
            }
            for (name, fields) in inlined {
                let Some(field) = descriptor.get_field_by_name(&name) else { continue };
                let Kind::Message(inner) = field.kind() else { continue };
                message.set_field(&field, Field::Message(self::message(&inner, &Value::Object(fields))?));
            }
        }
    }
    Ok(message)
}

fn field_value(field: &FieldDescriptor, json: &Value) -> Result<Field, String> {
    if field.is_map() {
        let Kind::Message(entry) = field.kind() else { return Err("a map without an entry type".into()) };
        let value_field = entry.map_entry_value_field();
        let object = json.as_object().ok_or_else(|| format!("must be an object, not {json}"))?;
        let mut map = HashMap::new();
        for (key, value) in object {
            map.insert(MapKey::String(key.clone()), single(&value_field.kind(), value)?);
        }
        return Ok(Field::Map(map));
    }
    if field.is_list() {
        let items = json.as_array().ok_or_else(|| format!("must be a list, not {json}"))?;
        let values: Result<Vec<Field>, String> = items.iter().map(|item| single(&field.kind(), item)).collect();
        return Ok(Field::List(values?));
    }
    single(&field.kind(), json)
}

fn single(kind: &Kind, json: &Value) -> Result<Field, String> {
    let number = |json: &Value| json.as_i64().ok_or_else(|| format!("must be an integer, not {json}"));
    Ok(match kind {
        Kind::String => {
            Field::String(json.as_str().ok_or_else(|| format!("must be a string, not {json}"))?.to_string())
        }
        Kind::Bool => Field::Bool(json.as_bool().ok_or_else(|| format!("must be a boolean, not {json}"))?),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
            Field::I32(i32::try_from(number(json)?).map_err(|_| format!("{json} is not an int32"))?)
        }
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => Field::I64(number(json)?),
        Kind::Uint32 | Kind::Fixed32 => {
            Field::U32(u32::try_from(number(json)?).map_err(|_| format!("{json} is not a uint32"))?)
        }
        Kind::Uint64 | Kind::Fixed64 => {
            Field::U64(u64::try_from(number(json)?).map_err(|_| format!("{json} is not a uint64"))?)
        }
        Kind::Double => Field::F64(json.as_f64().ok_or_else(|| format!("must be a number, not {json}"))?),
        Kind::Float => Field::F32(json.as_f64().ok_or_else(|| format!("must be a number, not {json}"))? as f32),
        Kind::Bytes => {
            let text = json.as_str().ok_or_else(|| format!("must be base64 text, not {json}"))?;
            let bytes =
                base64::engine::general_purpose::STANDARD.decode(text).map_err(|e| format!("not base64: {e}"))?;
            Field::Bytes(bytes.into())
        }
        Kind::Enum(_) => Field::EnumNumber(i32::try_from(number(json)?).map_err(|_| format!("{json} is not an enum"))?),
        Kind::Message(descriptor) => Field::Message(message(descriptor, json)?),
    })
}

/// Go's duration text (`1h2m3.5s`, `300ms`) in nanoseconds.
fn go_duration(text: &str) -> Result<i64, String> {
    let invalid = || format!("{text:?} is not a duration");
    let (negative, mut rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    if rest == "0" {
        return Ok(0);
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(invalid)?;
        let number: f64 = rest[..digits].parse().map_err(|_| invalid())?;
        rest = &rest[digits..];
        let unit = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let scale = match &rest[..unit] {
            "h" => 3.6e12,
            "m" => 6e10,
            "s" => 1e9,
            "ms" => 1e6,
            "us" | "µs" => 1e3,
            "ns" => 1.0,
            _ => return Err(invalid()),
        };
        total += number * scale;
        rest = &rest[unit..];
    }
    Ok(if negative { -total as i64 } else { total as i64 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_go_writes_them() {
        assert_eq!(go_duration("1h2m3s"), Ok(3_723_000_000_000));
        assert_eq!(go_duration("1.5s"), Ok(1_500_000_000));
        assert_eq!(go_duration("300ms"), Ok(300_000_000));
        assert!(go_duration("soon").is_err());
    }
}
