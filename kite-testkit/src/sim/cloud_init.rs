//! What cloud-init would configure on a guest, read from its instance's
//! `cloudInitNoCloud` Secret ([`UserData`]), and where the guest keeps its
//! files. The guests' SSH servers and their serial logins both start from it.

use super::object_fields::{name_of, namespace_of};
use super::store_io::find;
use crate::state::Inner;
use base64::Engine;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What cloud-init would configure: the host key, the first user, the keys
/// it accepts and its console password's hash.
pub(crate) struct UserData {
    /// The SSH host key (`ssh_keys.ed25519_private`).
    pub host_key: String,
    /// The public keys the first user accepts.
    pub authorized: Vec<String>,
    /// The first user's name (the machine's `sshId`).
    pub login: String,
    /// Its `hashed_passwd`, unless `lock_passwd` locks the password.
    pub password_hash: Option<String>,
}

/// The user data of the instance `vmi`, from its `cloudInitNoCloud` Secret.
pub(crate) fn user_data(inner: &Arc<Inner>, vmi: &Value) -> Result<UserData, String> {
    let volumes = vmi["spec"]["volumes"].as_array().cloned().unwrap_or_default();
    let secret_name = volumes
        .iter()
        .find_map(|v| v["cloudInitNoCloud"]["secretRef"]["name"].as_str().map(str::to_string))
        .ok_or("the instance has no cloudInitNoCloud secretRef volume")?;
    let secret = find(inner, "", "secrets", namespace_of(vmi), &secret_name)
        .ok_or_else(|| format!("the cloud-init Secret {secret_name} does not exist"))?;
    let encoded = secret["data"]["userdata"].as_str().ok_or("the cloud-init Secret has no userdata key")?;
    let bytes = base64::engine::general_purpose::STANDARD.decode(encoded).map_err(|e| e.to_string())?;
    let text = String::from_utf8(bytes).map_err(|e| e.to_string())?;
    let document: Value = serde_saphyr::from_str(&text).map_err(|e| format!("the user data is not YAML: {e}"))?;
    let host_key =
        document["ssh_keys"]["ed25519_private"].as_str().ok_or("the user data has no ssh_keys.ed25519_private")?;
    let user = &document["users"][0];
    let authorized: Vec<String> = user["ssh_authorized_keys"]
        .as_array()
        .map(|keys| keys.iter().filter_map(|k| k.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    let login = user["name"].as_str().ok_or("the user data's first user has no name")?.to_string();
    let password_hash = match user["lock_passwd"].as_bool().unwrap_or(true) {
        true => None,
        false => user["hashed_passwd"].as_str().map(str::to_string),
    };
    Ok(UserData { host_key: host_key.to_string(), authorized, login, password_hash })
}

/// Where the guest of `vmi` keeps its files; its users' home is `home/` in it.
pub(crate) fn guest_dir(root: &Path, vmi: &Value) -> PathBuf {
    root.join(namespace_of(vmi)).join(name_of(vmi))
}
