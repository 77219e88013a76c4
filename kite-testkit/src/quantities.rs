//! Quantities as a real API server stores them: it decodes a built-in
//! object's `resource.Quantity` fields and writes them back in canonical
//! form (`0.5` → `500m`, `1024Mi` → `1Gi`, `2000` → `2k`), so a client that
//! compares what it sent with what it reads must compare values, not text.
//! The rules are apimachinery's `Quantity.String()`: binary suffixes stay
//! binary when the value is a whole number of the largest one that divides
//! it; otherwise decimal, in whole units of the largest power of 1000 that
//! divides it, down to nano-units (`m`, `u`, `n`; finer values are rounded
//! up to a nano-unit, as the server does). Exponent notation is kept as
//! written.

use serde_json::Value;

/// The canonical form of `text`, or `None` when it is not a quantity.
pub fn canonical(text: &str) -> Option<String> {
    let text = text.trim();
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-')).unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    if suffix.starts_with(['e', 'E']) {
        return Some(text.to_string());
    }
    let (negative, number) = match number.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, number.strip_prefix('+').unwrap_or(number)),
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty()
        || !whole.chars().all(|c| c.is_ascii_digit())
        || !fraction.chars().all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let (multiplier, binary): (u128, bool) = match suffix {
        "" => (1, false),
        "n" | "u" | "m" => (0, false),
        "k" => (1_000, false),
        "M" => (1_000_000, false),
        "G" => (1_000_000_000, false),
        "T" => (1_000_000_000_000, false),
        "P" => (1_000_000_000_000_000, false),
        "E" => (1_000_000_000_000_000_000, false),
        "Ki" => (1 << 10, true),
        "Mi" => (1 << 20, true),
        "Gi" => (1 << 30, true),
        "Ti" => (1 << 40, true),
        "Pi" => (1 << 50, true),
        "Ei" => (1 << 60, true),
        _ => return None,
    };
    // The value in nano-units, rounded up as the server rounds.
    let scale = 10u128.checked_pow(u32::try_from(fraction.len()).ok()?)?;
    let digits: u128 = format!("{whole}{fraction}").trim_start_matches('0').parse().unwrap_or(0);
    let nano = match suffix {
        "n" => digits.div_ceil(scale),
        "u" => digits.checked_mul(1_000)?.div_ceil(scale),
        "m" => digits.checked_mul(1_000_000)?.div_ceil(scale),
        _ => digits.checked_mul(multiplier)?.checked_mul(1_000_000_000)?.div_ceil(scale),
    };
    let sign = if negative && nano > 0 { "-" } else { "" };
    if nano == 0 {
        return Some("0".into());
    }
    if binary && nano % 1_000_000_000 == 0 {
        let bytes = nano / 1_000_000_000;
        for (power, name) in [(60, "Ei"), (50, "Pi"), (40, "Ti"), (30, "Gi"), (20, "Mi"), (10, "Ki")] {
            if bytes % (1u128 << power) == 0 {
                return Some(format!("{sign}{}{name}", bytes >> power));
            }
        }
    }
    let units = [(27, "E"), (24, "P"), (21, "T"), (18, "G"), (15, "M"), (12, "k"), (9, ""), (6, "m"), (3, "u")];
    for (power, name) in units {
        let unit = 10u128.pow(power);
        if nano % unit == 0 {
            return Some(format!("{sign}{}{name}", nano / unit));
        }
    }
    Some(format!("{sign}{nano}n"))
}

/// Rewrites each string value of the map at `value` in canonical form.
fn map(value: &mut Value) {
    let Some(entries) = value.as_object_mut() else { return };
    for entry in entries.values_mut() {
        let canonical = match entry {
            Value::String(text) => canonical(text),
            Value::Number(number) => canonical(&number.to_string()),
            _ => None,
        };
        if let Some(canonical) = canonical {
            *entry = Value::String(canonical);
        }
    }
}

fn resources(container_resources: &mut Value) {
    map(&mut container_resources["requests"]);
    map(&mut container_resources["limits"]);
}

fn pod_spec(spec: &mut Value) {
    for list in ["containers", "initContainers"] {
        if let Some(containers) = spec[list].as_array_mut() {
            for container in containers {
                if container.get("resources").is_some() {
                    resources(&mut container["resources"]);
                }
            }
        }
    }
}

/// Puts the quantities of a built-in object of `kind` in canonical form.
pub fn canonicalize(kind: &str, object: &mut Value) {
    if !object["spec"].is_object() {
        return;
    }
    let spec = &mut object["spec"];
    match kind {
        "ResourceQuota" => map(&mut spec["hard"]),
        "LimitRange" => {
            if let Some(limits) = spec["limits"].as_array_mut() {
                for limit in limits {
                    for field in ["default", "defaultRequest", "max", "min", "maxLimitRequestRatio"] {
                        if limit.get(field).is_some() {
                            map(&mut limit[field]);
                        }
                    }
                }
            }
        }
        "PersistentVolumeClaim" if spec.get("resources").is_some() => resources(&mut spec["resources"]),
        "Pod" => pod_spec(spec),
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "Job" if spec["template"]["spec"].is_object() => {
            pod_spec(&mut spec["template"]["spec"])
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_read_back_as_a_real_server_writes_them() {
        for (written, stored) in [
            ("0.5", "500m"),
            ("500m", "500m"),
            ("1000m", "1"),
            ("1.5", "1500m"),
            ("2000", "2k"),
            ("1500", "1500"),
            ("1024Mi", "1Gi"),
            ("1536Mi", "1536Mi"),
            ("0.5Gi", "512Mi"),
            ("1Gi", "1Gi"),
            ("4", "4"),
            ("0", "0"),
            ("1e3", "1e3"),
            ("0.0001", "100u"),
            ("0.5m", "500u"),
            ("1.5n", "2n"),
            ("25Gi", "25Gi"),
        ] {
            assert_eq!(canonical(written).as_deref(), Some(stored), "{written}");
        }
        assert_eq!(canonical("lots"), None);
        assert_eq!(canonical("1Xi"), None);
    }
}
