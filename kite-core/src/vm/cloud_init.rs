//! The VM's cloud-init user data, kept in the Secret `<vm>-cloud-init-userdata`
//! under the key `userdata` (KubeVirt caps inline user data at 2048 bytes).
//!
//! It sets the hostname; creates the `sshId` user with sudo, trusting only
//! the gateway's public key; installs the VM's ed25519 host key, which the
//! gateway pins; turns password login over SSH off; and sets a console
//! password from the machine's console password hash (SHA-512-crypt, which
//! the API makes with the password), or, for machines of the existing
//! platform, from its password hash when the guest's `crypt(3)` understands
//! it (yescrypt, SHA-512/256-crypt or bcrypt). Without either (an argon2id
//! hash only the gateway can check), the console password stays locked.

use crate::Error;
use serde::Serialize;

/// What the user data is made of.
#[derive(Clone, Debug)]
pub struct UserData<'a> {
    /// The machine's hostname: the `KiteVirtualMachine`'s name.
    pub hostname: &'a str,
    /// The login the gateway uses in the VM: the machine's `sshId`.
    pub user: &'a str,
    /// The gateway's public key, as an `authorized_keys` line.
    pub gateway_public_key: &'a str,
    /// The VM's ed25519 host private key (OpenSSH format).
    pub host_private_key: &'a str,
    /// Its public half.
    pub host_public_key: &'a str,
    /// The machine's password hash, used for the console when the guest can check it.
    pub password_hash: Option<&'a str>,
    /// The machine's console password hash (SHA-512-crypt), preferred for the console.
    pub console_password_hash: Option<&'a str>,
}

#[derive(Serialize)]
struct CloudConfig<'a> {
    hostname: &'a str,
    fqdn: &'a str,
    disable_root: bool,
    ssh_pwauth: bool,
    ssh_deletekeys: bool,
    ssh_genkeytypes: Vec<&'static str>,
    ssh_keys: HostKeys<'a>,
    users: Vec<User<'a>>,
}

#[derive(Serialize)]
struct HostKeys<'a> {
    ed25519_private: &'a str,
    ed25519_public: &'a str,
}

#[derive(Serialize)]
struct User<'a> {
    name: &'a str,
    groups: Vec<&'static str>,
    shell: &'static str,
    sudo: &'static str,
    lock_passwd: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    hashed_passwd: Option<&'a str>,
    ssh_authorized_keys: Vec<&'a str>,
}

/// Whether the guest's `crypt(3)` (libxcrypt on current distributions) can
/// check `hash`: yescrypt, SHA-512-crypt, SHA-256-crypt or bcrypt.
///
/// ```
/// use kite_core::vm::cloud_init::console_can_check;
/// assert!(console_can_check("$6$salt$hash"));
/// assert!(console_can_check("$2b$12$abcdefghijklmnopqrstuv"));
/// assert!(!console_can_check("$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA"));
/// ```
pub fn console_can_check(hash: &str) -> bool {
    ["$y$", "$6$", "$5$", "$2b$", "$2a$", "$2y$"].iter().any(|prefix| hash.starts_with(prefix))
}

/// Renders the user data: `#cloud-config` and YAML.
pub fn render(data: &UserData<'_>) -> Result<String, Error> {
    let console_hash = data
        .console_password_hash
        .filter(|hash| console_can_check(hash))
        .or(data.password_hash.filter(|hash| console_can_check(hash)));
    let config = CloudConfig {
        hostname: data.hostname,
        fqdn: data.hostname,
        disable_root: true,
        ssh_pwauth: false,
        // Replace whatever host keys the image came with by the one the gateway pins.
        ssh_deletekeys: true,
        ssh_genkeytypes: vec![],
        ssh_keys: HostKeys { ed25519_private: data.host_private_key, ed25519_public: data.host_public_key },
        users: vec![User {
            name: data.user,
            groups: vec!["adm", "sudo"],
            shell: "/bin/bash",
            sudo: "ALL=(ALL) NOPASSWD:ALL",
            lock_passwd: console_hash.is_none(),
            hashed_passwd: console_hash,
            ssh_authorized_keys: vec![data.gateway_public_key],
        }],
    };
    let yaml = serde_saphyr::to_string(&config).map_err(|e| Error::CloudInit(e.to_string()))?;
    Ok(format!("#cloud-config\n{yaml}"))
}
