//! The keys of a VM's SSH Secret, shared by the controller that writes it and
//! the SSH gateway that reads it.
//!
//! The Secret is named by [`names::ssh_key_secret`](crate::names::ssh_key_secret)
//! and has the standard type [`SECRET_TYPE`].

/// The Secret type: `kubernetes.io/ssh-auth`, whose required key is [`PRIVATE_KEY`].
pub const SECRET_TYPE: &str = "kubernetes.io/ssh-auth";

/// The OpenSSH private key the gateway logs in to the VM with.
pub const PRIVATE_KEY: &str = "ssh-privatekey";

/// The public half of [`PRIVATE_KEY`], as an `authorized_keys` line; the VM trusts it.
pub const PUBLIC_KEY: &str = "ssh-publickey";

/// The VM's own ed25519 host private key, which cloud-init installs in the VM.
pub const HOST_PRIVATE_KEY: &str = "ssh-host-ed25519-key";

/// The public half of [`HOST_PRIVATE_KEY`]: the host key the gateway pins.
pub const HOST_PUBLIC_KEY: &str = "ssh-host-ed25519-key.pub";
