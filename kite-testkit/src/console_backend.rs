//! What sits behind a serial console: the [`ConsoleBackend`] a test (or the
//! simulated guests) installs, the [`ConsoleConnection`] it is handed for each
//! client, and the WebSocket subprotocol the console speaks. It imports
//! nothing of the crate; the console subresource itself is in `console`.

use bytes::Bytes;
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::mpsc;

/// The WebSocket subprotocol of KubeVirt's console and VNC subresources.
pub const PLAIN_PROTOCOL: &str = "plain.kubevirt.io";

/// One client on an instance's serial port, handed to the [`ConsoleBackend`].
#[derive(Debug)]
pub struct ConsoleConnection {
    /// The instance's namespace.
    pub namespace: String,
    /// The instance's name.
    pub name: String,
    /// The instance as stored when the client connected.
    pub instance: Value,
    /// What the client sends to the serial port; ends when the client goes.
    pub input: mpsc::Receiver<Bytes>,
    /// What the serial port shows the client; dropping it closes the connection.
    pub output: mpsc::Sender<Bytes>,
}

/// What answers on the serial ports: called once per connection, it must
/// return at once (spawn what runs).
pub type ConsoleBackend = Arc<dyn Fn(ConsoleConnection) + Send + Sync>;
