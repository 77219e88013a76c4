//! The rules the API checks before it writes: each refusal names the field
//! and says what would be accepted. The CRD schema enforces the same
//! shapes again on the API server; these checks give the user a sentence.

use super::error::ApiError;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kite_core::quantity::bytes;
use kite_core::ssh_id::is_valid_ssh_id;

/// The smallest disk a machine may have.
pub const MIN_DISK: &str = "20Gi";
/// Names a `domainPrefix` may not take: they are the platform's own.
pub const RESERVED_PREFIXES: &[&str] =
    &["admin", "api", "assets", "auth", "console", "dashboard", "kite", "kite-api", "ssh", "www"];
/// The longest machine name: its SSH Service is `vps-access-<name>`, a 63-character label.
pub const MAX_VM_NAME: usize = 52;

fn is_dns_label(value: &str, max: usize) -> bool {
    let bytes = value.as_bytes();
    !value.is_empty()
        && value.len() <= max
        && bytes.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
}

/// A machine or offer name.
pub fn object_name(field: &str, value: &str) -> Result<(), ApiError> {
    if is_dns_label(value, MAX_VM_NAME) {
        return Ok(());
    }
    Err(ApiError::invalid(
        field,
        format!("use 1 to {MAX_VM_NAME} lower-case letters, digits or '-', starting and ending with a letter or digit"),
    ))
}

/// An `sshId`.
pub fn ssh_id(value: &str) -> Result<(), ApiError> {
    if is_valid_ssh_id(value) {
        return Ok(());
    }
    if kite_core::ssh_id::is_reserved(value) {
        return Err(ApiError::invalid(
            "sshId",
            format!("{value} is an account the machine's system reserves (root, daemon, nobody...); choose another"),
        ));
    }
    Err(ApiError::invalid(
        "sshId",
        "use 1 to 32 characters: a lower-case letter or '_' first, then lower-case letters, digits, '_' or '-'",
    ))
}

/// A `domainPrefix`.
pub fn domain_prefix(value: &str) -> Result<(), ApiError> {
    if !is_dns_label(value, 63) {
        return Err(ApiError::invalid(
            "domainPrefix",
            "use 1 to 63 lower-case letters, digits or '-', starting and ending with a letter or digit",
        ));
    }
    if RESERVED_PREFIXES.contains(&value) {
        return Err(ApiError::invalid(
            "domainPrefix",
            format!("'{value}' is reserved for the platform; choose another"),
        ));
    }
    Ok(())
}

/// A size in bytes, such as `4Gi`; a bare number means gibibytes.
pub fn size(field: &str, value: &str) -> Result<Quantity, ApiError> {
    let text = value.trim();
    let text =
        if !text.is_empty() && text.chars().all(|c| c.is_ascii_digit()) { format!("{text}Gi") } else { text.into() };
    let quantity = Quantity(text);
    match bytes(&quantity) {
        Some(n) if n > 0 && quantity.0.len() <= 64 && !quantity.0.ends_with('m') => Ok(quantity),
        _ => Err(ApiError::invalid(field, "use a size such as 4Gi or 512Mi")),
    }
}

/// A disk size: a size of at least [`MIN_DISK`] and at least `image_size`.
pub fn disk(value: &str, image_size: Option<&Quantity>) -> Result<Quantity, ApiError> {
    let quantity = size("disk", value)?;
    let have = bytes(&quantity).unwrap_or_default();
    let min = bytes(&Quantity(MIN_DISK.into())).unwrap_or_default();
    if have < min {
        return Err(ApiError::invalid("disk", format!("must be at least {MIN_DISK}")));
    }
    if let Some(image) = image_size
        && have < bytes(image).unwrap_or_default()
    {
        return Err(ApiError::invalid("disk", format!("must be at least the image's size, {}", image.0)));
    }
    Ok(quantity)
}

/// A password: 8 to 128 bytes, no control characters, no spaces at either end.
pub fn password(field: &str, value: &str) -> Result<(), ApiError> {
    if value.chars().count() < 8 {
        return Err(ApiError::invalid(field, "use at least 8 characters"));
    }
    if value.len() > 128 {
        return Err(ApiError::invalid(field, "use at most 128 bytes"));
    }
    if value.chars().any(char::is_control) {
        return Err(ApiError::invalid(field, "control characters are not allowed"));
    }
    if value.trim() != value {
        return Err(ApiError::invalid(field, "spaces at the start or end are not allowed"));
    }
    Ok(())
}

/// An email address, trimmed.
pub fn email(value: &str) -> Result<String, ApiError> {
    let value = value.trim();
    let valid = value.len() >= 3
        && value.len() <= 254
        && value
            .split_once('@')
            .is_some_and(|(local, domain)| !local.is_empty() && !domain.is_empty() && !domain.contains('@'))
        && !value.chars().any(|c| c.is_whitespace() || c.is_control());
    if valid {
        Ok(value.to_string())
    } else {
        Err(ApiError::invalid("email", "use an address such as ada@example.com"))
    }
}

/// A username, trimmed: 1 to 63 characters, no control characters, and no
/// `@`, so that a username is never taken for someone's email.
pub fn username(value: &str) -> Result<String, ApiError> {
    let value = value.trim();
    if value.is_empty() || value.chars().count() > 63 || value.chars().any(char::is_control) {
        return Err(ApiError::invalid("username", "use 1 to 63 characters"));
    }
    if value.contains('@') {
        return Err(ApiError::invalid("username", "cannot contain '@', so that it is never taken for an email"));
    }
    Ok(value.to_string())
}

/// A CPU count: 1 to 64.
pub fn cpu(value: u32) -> Result<u32, ApiError> {
    if (1..=64).contains(&value) { Ok(value) } else { Err(ApiError::invalid("cpu", "use 1 to 64 virtual CPUs")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_accept_quantities_and_bare_gibibytes() {
        assert_eq!(size("disk", "25").unwrap().0, "25Gi");
        assert_eq!(size("memory", "512Mi").unwrap().0, "512Mi");
        for bad in ["", "-1Gi", "0", "1m", "abc", "1.5.5Gi"] {
            assert_eq!(size("disk", bad).unwrap_err().status().as_u16(), 422, "{bad}");
        }
    }

    #[test]
    fn a_disk_must_hold_the_minimum_and_the_image() {
        assert!(disk("20Gi", None).is_ok());
        assert!(disk("19Gi", None).unwrap_err().message().contains("at least 20Gi"));
        assert!(disk("20Gi", Some(&Quantity("30Gi".into()))).unwrap_err().message().contains("30Gi"));
    }

    #[test]
    fn names_and_prefixes() {
        assert!(object_name("name", "web-1").is_ok());
        assert!(object_name("name", &"a".repeat(53)).is_err());
        assert!(object_name("name", "-web").is_err());
        assert!(domain_prefix("blog").is_ok());
        assert!(domain_prefix("www").unwrap_err().message().contains("reserved"));
        assert!(domain_prefix("Blog").is_err());
        assert!(ssh_id("_alice-1").is_ok());
        assert!(ssh_id("1alice").unwrap_err().message().starts_with("sshId:"));
    }

    #[test]
    fn passwords_and_accounts() {
        assert!(password("password", "correct horse").is_ok());
        assert!(password("password", "short").is_err());
        assert!(password("password", " padded password").is_err());
        assert!(password("password", "tab\there-and-more").is_err());
        assert_eq!(email(" Ada@Example.com ").unwrap(), "Ada@Example.com");
        assert!(email("no-at-sign").is_err());
        assert!(email("a@b@c").is_err());
        assert!(username("  ").is_err());
    }
}
