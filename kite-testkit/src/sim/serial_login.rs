//! The simulated guests' serial port: what `agetty` and `login` on a
//! cloud-init image show on `ttyS0`. A `<hostname> login:` prompt, a
//! `Password:` prompt that does not echo, the password checked against the
//! SHA-512-crypt hash cloud-init was given (`hashed_passwd` of the first user;
//! a locked password lets nobody in), and then a shell on a pseudo-terminal
//! in the guest's home directory (the same one its sshd logs in to). When the
//! shell exits, the prompt comes back; when the client leaves, the shell is
//! ended.

use super::cloud_init::{guest_dir, user_data};
use super::guest_shell::{ShellUser, Terminal};
use crate::console_backend::{ConsoleBackend, ConsoleConnection};
use crate::sim::object_fields::name_of;
use crate::state::Inner;
use bytes::Bytes;
use sha_crypt::{PasswordHash, PasswordVerifier, ShaCrypt};
use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

/// The longest line the prompts take, as `login` truncates.
const LINE_LIMIT: usize = 256;

/// The backend that answers every running guest's serial port with a login.
pub(crate) fn backend(inner: Weak<Inner>, root: PathBuf) -> ConsoleBackend {
    Arc::new(move |connection: ConsoleConnection| {
        let inner = inner.clone();
        let root = root.clone();
        tokio::spawn(async move {
            if let Err(error) = serve(inner, root, connection).await {
                tracing::debug!(%error, "a serial console ended");
            }
        });
    })
}

/// Why a console session ended.
#[derive(Debug, thiserror::Error)]
enum Ended {
    #[error("the client left")]
    ClientLeft,
    #[error("{0}")]
    Guest(String),
}

async fn serve(inner: Weak<Inner>, root: PathBuf, mut connection: ConsoleConnection) -> Result<(), Ended> {
    let output = connection.output.clone();
    let say = |text: String| {
        let output = output.clone();
        async move { output.send(Bytes::from(text)).await.map_err(|_| Ended::ClientLeft) }
    };
    let hostname = name_of(&connection.instance).to_string();
    loop {
        say(format!("\r\n{hostname} login: ")).await?;
        let login = read_line(&mut connection.input, &output, true).await?.trim().to_string();
        if login.is_empty() {
            continue;
        }
        say("Password: ".into()).await?;
        let password = read_line(&mut connection.input, &output, false).await?;
        say("\r\n".into()).await?;
        let data = {
            let inner = inner.upgrade().ok_or_else(|| Ended::Guest("the cluster is gone".into()))?;
            user_data(&inner, &connection.instance).map_err(Ended::Guest)?
        };
        let accepted =
            login == data.login && data.password_hash.as_deref().is_some_and(|hash| password_matches(&password, hash));
        if !accepted {
            tokio::time::sleep(Duration::from_millis(300)).await;
            say("Login incorrect\r\n".into()).await?;
            continue;
        }
        let home = guest_dir(&root, &connection.instance).join("home");
        shell(&mut connection, ShellUser { login: login.clone(), hostname: hostname.clone(), home }).await?;
    }
}

/// Whether `password` is the one `hash` (crypt(3) form) was made from; only SHA-crypt is checked here.
fn password_matches(password: &str, hash: &str) -> bool {
    PasswordHash::new(hash).is_ok_and(|hash| ShaCrypt::default().verify_password(password.as_bytes(), &hash).is_ok())
}

/// Reads one line as a terminal in cooked mode gives it: echoed (or not),
/// with backspace, and Ctrl-C or Ctrl-D giving up the line.
async fn read_line(
    input: &mut mpsc::Receiver<Bytes>,
    output: &mpsc::Sender<Bytes>,
    echo: bool,
) -> Result<String, Ended> {
    let mut line = Vec::new();
    loop {
        let chunk = input.recv().await.ok_or(Ended::ClientLeft)?;
        let mut shown = Vec::new();
        for &byte in chunk.iter() {
            match byte {
                b'\r' | b'\n' => {
                    if echo {
                        shown.extend_from_slice(b"\r\n");
                        let _ = output.send(Bytes::from(shown)).await;
                    }
                    return Ok(String::from_utf8_lossy(&line).into_owned());
                }
                0x7f | 0x08 if line.pop().is_some() && echo => shown.extend_from_slice(b"\x08 \x08"),
                0x7f | 0x08 => {}
                0x03 | 0x04 => {
                    let _ = output.send(Bytes::from_static(b"^C\r\n")).await;
                    return Ok(String::new());
                }
                byte if line.len() < LINE_LIMIT && byte >= 0x20 => {
                    line.push(byte);
                    if echo {
                        shown.push(byte);
                    }
                }
                _ => {}
            }
        }
        if !shown.is_empty() {
            output.send(Bytes::from(shown)).await.map_err(|_| Ended::ClientLeft)?;
        }
    }
}

/// Runs the user's shell on a pseudo-terminal until it exits or the client leaves.
async fn shell(connection: &mut ConsoleConnection, user: ShellUser) -> Result<(), Ended> {
    let (mut child, pty) = user.on_pty(&Terminal { term: "vt220", size: (24, 80) }, None).map_err(Ended::Guest)?;
    let (mut reader, mut writer) = pty.into_split();
    let mut buffer = vec![0u8; 4096];
    let result = loop {
        tokio::select! {
            read = reader.read(&mut buffer) => match read {
                // The shell exited: the pseudo-terminal reads EOF (or EIO on Linux).
                Ok(0) | Err(_) => break Ok(()),
                Ok(n) => {
                    if connection.output.send(Bytes::copy_from_slice(&buffer[..n])).await.is_err() {
                        break Err(Ended::ClientLeft);
                    }
                }
            },
            typed = connection.input.recv() => match typed {
                Some(bytes) => {
                    if writer.write_all(&bytes).await.is_err() { break Ok(()) }
                }
                None => break Err(Ended::ClientLeft),
            },
        }
    };
    let _ = child.start_kill();
    let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
    result
}
