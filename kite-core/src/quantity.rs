//! Parsing Kubernetes quantities (`25Gi`, `512Mi`, `1.5G`, `2e9`) into bytes,
//! so that sizes can be compared: a disk against its image, a grown disk
//! against the old one.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// The quantity as a number of bytes (rounded up), or `None` when it is not
/// a quantity, is negative, or does not fit.
///
/// ```
/// use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
/// use kite_core::quantity::bytes;
/// assert_eq!(bytes(&Quantity("25Gi".into())), Some(25 * 1024 * 1024 * 1024));
/// assert_eq!(bytes(&Quantity("1.5k".into())), Some(1500));
/// assert_eq!(bytes(&Quantity("2e3".into())), Some(2000));
/// assert_eq!(bytes(&Quantity("lots".into())), None);
/// ```
pub fn bytes(quantity: &Quantity) -> Option<u128> {
    let (numerator, denominator) = exact(&quantity.0)?;
    Some(numerator.div_ceil(denominator))
}

/// Whether `a` and `b` are quantities of the same value, however written
/// (`0.5` and `500m`, `1Gi` and `1024Mi`): a real API server stores a
/// built-in object's quantities in canonical form, so what was applied and
/// what is read back differ in text.
///
/// ```
/// use kite_core::quantity::same;
/// assert!(same("0.5", "500m"));
/// assert!(same("1Gi", "1024Mi"));
/// assert!(!same("1G", "1Gi"));
/// assert!(!same("web", "web"), "not quantities");
/// ```
pub fn same(a: &str, b: &str) -> bool {
    match (exact(a), exact(b)) {
        (Some((an, ad)), Some((bn, bd))) => an.checked_mul(bd).is_some_and(|left| bn.checked_mul(ad) == Some(left)),
        _ => false,
    }
}

/// The exact value of a quantity as a fraction (numerator, denominator).
fn exact(text: &str) -> Option<(u128, u128)> {
    let text = text.trim();
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+')).unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    if number.is_empty() || number.starts_with('.') && number.len() == 1 {
        return None;
    }
    let (multiplier, divisor): (u128, u128) = match suffix {
        "" => (1, 1),
        "n" => (1, 1_000_000_000),
        "u" => (1, 1_000_000),
        "m" => (1, 1000),
        "k" => (1_000, 1),
        "M" => (1_000_000, 1),
        "G" => (1_000_000_000, 1),
        "T" => (1_000_000_000_000, 1),
        "P" => (1_000_000_000_000_000, 1),
        "E" => (1_000_000_000_000_000_000, 1),
        "Ki" => (1 << 10, 1),
        "Mi" => (1 << 20, 1),
        "Gi" => (1 << 30, 1),
        "Ti" => (1 << 40, 1),
        "Pi" => (1 << 50, 1),
        "Ei" => (1 << 60, 1),
        exponent if exponent.starts_with(['e', 'E']) => {
            let power: u32 = exponent[1..].parse().ok().filter(|p| *p <= 30)?;
            (10u128.checked_pow(power)?, 1)
        }
        _ => return None,
    };
    let number = number.strip_prefix('+').unwrap_or(number);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if !whole.chars().all(|c| c.is_ascii_digit()) || !fraction.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let scale = 10u128.checked_pow(u32::try_from(fraction.len()).ok()?)?;
    let digits: u128 = format!("{whole}{fraction}")
        .trim_start_matches('0')
        .parse()
        .or_else(|_| if whole.chars().chain(fraction.chars()).all(|c| c == '0') { Ok(0) } else { Err(()) })
        .ok()?;
    let numerator = digits.checked_mul(multiplier)?;
    let denominator = scale.checked_mul(divisor)?;
    Some((numerator, denominator))
}
