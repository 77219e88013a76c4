//! The simulated guests' in-process SSH server, for a machine without
//! OpenSSH's `sshd` (so `kite demo` still runs there). It is configured as
//! the OpenSSH guest is, from the machine's cloud-init user data: the host
//! key from `ssh_keys`, the first user's `ssh_authorized_keys` as the only
//! keys it accepts, and only the login the gateway uses upstream. Like
//! sshd's `ForceCommand`, a session runs `/bin/sh -i` (a shell request) or
//! `/bin/sh -c <command>` (an exec request) in the guest's home, on a
//! pseudo-terminal when one was asked for; the exit status, standard error
//! and window changes are carried as sshd carries them. Subsystems (SFTP),
//! forwarding and X11 are refused.
//!
//! One task accepts connections and owns them: dropping the server ends
//! every connection and, with them, every shell.

use super::guest_shell::{ShellUser, Terminal, exit_code};
use russh::keys::{PrivateKey, PublicKey};
use russh::server::{Auth, Msg, PublicKeyOffer, Session, VerifiedPublicKey};
use russh::{Channel, ChannelId, ChannelMsg, ChannelOpenFailure};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::task::{JoinHandle, JoinSet};

/// A running in-process SSH server; it stops, with its sessions, when dropped.
pub(crate) struct GuestServer {
    task: JoinHandle<()>,
}

impl GuestServer {
    /// Stops accepting and ends every connection.
    pub(crate) fn stop(&self) {
        self.task.abort();
    }
}

impl Drop for GuestServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// What every connection to one guest shares.
struct Guest {
    login_user: String,
    authorized: Vec<PublicKey>,
    shell: ShellUser,
}

/// Starts a server on `address` with the guest's host key (OpenSSH form)
/// that lets `login_user` in with one of `authorized` (OpenSSH lines).
/// Must be called within a Tokio runtime.
pub(crate) fn start(
    address: SocketAddr,
    host_key: &str,
    authorized: &[String],
    login_user: &str,
    shell: ShellUser,
) -> Result<GuestServer, String> {
    let host_key = PrivateKey::from_openssh(host_key).map_err(|e| format!("the user data's host key: {e}"))?;
    let authorized = authorized
        .iter()
        .map(|line| PublicKey::from_openssh(line).map_err(|e| format!("an authorized key of the user data: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let listener = std::net::TcpListener::bind(address)
        .and_then(|listener| listener.set_nonblocking(true).map(|()| listener))
        .and_then(tokio::net::TcpListener::from_std)
        .map_err(|e| format!("cannot listen on {address}: {e}"))?;
    let config = Arc::new(russh::server::Config {
        server_id: russh::SshId::Standard("SSH-2.0-kite-testkit-guest".into()),
        methods: russh::MethodSet::from(&[russh::MethodKind::PublicKey][..]),
        keys: vec![host_key],
        auth_rejection_time: Duration::from_millis(100),
        auth_rejection_time_initial: Some(Duration::ZERO),
        inactivity_timeout: None,
        nodelay: true,
        ..Default::default()
    });
    let guest = Arc::new(Guest { login_user: login_user.to_string(), authorized, shell });
    Ok(GuestServer { task: tokio::spawn(accept(listener, config, guest)) })
}

async fn accept(listener: tokio::net::TcpListener, config: Arc<russh::server::Config>, guest: Arc<Guest>) {
    let mut connections = JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                tracing::debug!(%error, "a guest's SSH server could not accept a connection");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let handler = Connection { guest: guest.clone(), sessions: JoinSet::new() };
        let config = config.clone();
        connections.spawn(async move {
            let session = match russh::server::run_stream(config, stream, handler).await {
                Ok(session) => session,
                Err(error) => return tracing::debug!(%peer, %error, "a guest's SSH handshake failed"),
            };
            // russh runs the session in a task of its own: aborting this one must end it too.
            let _ends = EndOnDrop(session.handle());
            if let Err(error) = session.await {
                tracing::debug!(%peer, %error, "a guest's SSH connection ended");
            }
        });
    }
}

/// Disconnects a session when dropped, as a stopped machine drops its connections.
struct EndOnDrop(russh::server::Handle);

impl Drop for EndOnDrop {
    fn drop(&mut self) {
        let handle = self.0.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let reason = "the machine stopped".to_string();
                let _ = handle.disconnect(russh::Disconnect::ByApplication, reason, "en".into()).await;
            });
        }
    }
}

/// One client's connection; its sessions end with it.
struct Connection {
    guest: Arc<Guest>,
    sessions: JoinSet<()>,
}

impl Connection {
    fn allowed(&self, user: &str, key: &PublicKey) -> bool {
        user == self.guest.login_user && self.guest.authorized.iter().any(|k| k.key_data() == key.key_data())
    }
}

impl russh::server::Handler for Connection {
    type Error = russh::Error;

    async fn auth_publickey_offered(&mut self, user: &str, offer: PublicKeyOffer<'_>) -> Result<Auth, Self::Error> {
        Ok(if self.allowed(user, offer.public_key) { Auth::Accept } else { Auth::reject() })
    }

    async fn auth_publickey(&mut self, user: &str, key: VerifiedPublicKey<'_>) -> Result<Auth, Self::Error> {
        Ok(if self.allowed(user, key.public_key) { Auth::Accept } else { Auth::reject() })
    }

    async fn channel_open_session(
        &mut self,
        channel: Channel<Msg>,
        reply: russh::server::ChannelOpenHandle,
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        reply.accept().await;
        while self.sessions.try_join_next().is_some() {}
        self.sessions.spawn(run_session(channel, self.guest.shell.clone()));
        Ok(())
    }

    async fn channel_open_direct_tcpip(
        &mut self,
        _channel: Channel<Msg>,
        _host: &str,
        _port: u32,
        _originator_address: &str,
        _originator_port: u32,
        reply: russh::server::ChannelOpenHandle,
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        reply.reject(ChannelOpenFailure::AdministrativelyProhibited).await;
        Ok(())
    }

    async fn pty_request(
        &mut self,
        channel: ChannelId,
        _term: &str,
        _col_width: u32,
        _row_height: u32,
        _pix_width: u32,
        _pix_height: u32,
        _modes: &[(russh::Pty, u32)],
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        session.channel_success(channel)
    }

    async fn env_request(
        &mut self,
        channel: ChannelId,
        _name: &str,
        _value: &str,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        // sshd's default AcceptEnv takes none: refused, and the session goes on.
        session.channel_failure(channel)
    }

    async fn shell_request(&mut self, channel: ChannelId, session: &mut Session) -> Result<(), Self::Error> {
        session.channel_success(channel)
    }

    async fn exec_request(
        &mut self,
        channel: ChannelId,
        _data: &[u8],
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        session.channel_success(channel)
    }

    async fn subsystem_request(
        &mut self,
        channel: ChannelId,
        _name: &str,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        session.channel_failure(channel)
    }

    async fn window_change_request(
        &mut self,
        channel: ChannelId,
        _col_width: u32,
        _row_height: u32,
        _pix_width: u32,
        _pix_height: u32,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        session.channel_success(channel)
    }
}

/// Where a started session's input goes.
enum Input {
    Pty(pty_process::OwnedWritePty),
    Pipe(Option<tokio::process::ChildStdin>),
}

/// A started session: its input and the task that carries its output and reports its exit code.
struct Started {
    input: Input,
    output: JoinHandle<u32>,
}

impl Drop for Started {
    fn drop(&mut self) {
        // The task owns the child, killed when the task is dropped.
        self.output.abort();
    }
}

/// Serves one session channel: the requests before the shell or command
/// starts, then its input, until it exits (exit status, EOF, close) or the
/// client closes the channel (the shell is killed).
async fn run_session(channel: Channel<Msg>, shell: ShellUser) {
    let (mut read, write) = channel.split();
    let write = Arc::new(write);
    let mut terminal: Option<(String, (u16, u16))> = None;
    let mut started: Option<Started> = None;
    loop {
        tokio::select! {
            message = read.wait() => match message {
                None | Some(ChannelMsg::Close) => return,
                Some(ChannelMsg::RequestPty { term, col_width, row_height, .. }) => {
                    terminal = Some((term, size(row_height, col_width)));
                }
                Some(ChannelMsg::WindowChange { col_width, row_height, .. }) => {
                    let (rows, cols) = size(row_height, col_width);
                    if let Some(Started { input: Input::Pty(pty), .. }) = &started {
                        let _ = pty.resize(pty_process::Size::new(rows, cols));
                    } else if let Some((_, asked)) = terminal.as_mut() {
                        *asked = (rows, cols);
                    }
                }
                Some(ChannelMsg::RequestShell { .. }) if started.is_none() => {
                    started = Some(start_session(&shell, terminal.as_ref(), None, &write).await);
                }
                Some(ChannelMsg::Exec { command, .. }) if started.is_none() => {
                    let command = String::from_utf8_lossy(&command).into_owned();
                    started = Some(start_session(&shell, terminal.as_ref(), Some(&command), &write).await);
                }
                Some(ChannelMsg::Data { data }) => {
                    let written = match started.as_mut().map(|s| &mut s.input) {
                        Some(Input::Pty(pty)) => pty.write_all(&data).await,
                        Some(Input::Pipe(Some(stdin))) => stdin.write_all(&data).await,
                        _ => Ok(()),
                    };
                    if written.is_err()
                        && let Some(Started { input: Input::Pipe(stdin), .. }) = started.as_mut()
                    {
                        // The command stopped reading: what else comes is dropped, as sshd drops it.
                        *stdin = None;
                    }
                }
                Some(ChannelMsg::Eof) => {
                    if let Some(Started { input: Input::Pipe(stdin), .. }) = started.as_mut() {
                        *stdin = None;
                    }
                }
                Some(_) => {}
            },
            code = exited(&mut started) => {
                let _ = write.exit_status(code).await;
                let _ = write.eof().await;
                let _ = write.close().await;
                return;
            }
        }
    }
}

/// Waits for the started session's exit code; never, before it starts.
async fn exited(started: &mut Option<Started>) -> u32 {
    match started {
        Some(started) => (&mut started.output).await.unwrap_or(255),
        None => std::future::pending().await,
    }
}

/// A terminal's rows and columns; a client that does not know its size sends zeros, read as 24 by 80.
fn size(rows: u32, cols: u32) -> (u16, u16) {
    let cells = |n: u32, unknown: u16| if n == 0 { unknown } else { u16::try_from(n).unwrap_or(u16::MAX) };
    (cells(rows, 24), cells(cols, 80))
}

/// Starts the shell or the command and the task that carries its output.
async fn start_session(
    shell: &ShellUser,
    terminal: Option<&(String, (u16, u16))>,
    command: Option<&str>,
    write: &Arc<russh::ChannelWriteHalf<Msg>>,
) -> Started {
    let started = match terminal {
        Some((term, size)) => shell.on_pty(&Terminal { term, size: *size }, command).map(|(child, pty)| {
            let (reader, writer) = pty.into_split();
            (Input::Pty(writer), tokio::spawn(carry_pty(child, reader, write.clone())))
        }),
        None => shell.on_pipes(command).map(|mut child| {
            let stdin = child.stdin.take();
            (Input::Pipe(stdin), tokio::spawn(carry_pipes(child, write.clone())))
        }),
    };
    match started {
        Ok((input, output)) => Started { input, output },
        Err(error) => {
            tracing::warn!(%error, "a guest could not start a shell");
            let _ = write.extended_data_bytes(1, format!("{error}\r\n").into_bytes()).await;
            Started { input: Input::Pipe(None), output: tokio::spawn(async { 127 }) }
        }
    }
}

/// Copies what the terminal shows to the channel until the shell and
/// everything it started have closed it; then the shell's exit code.
async fn carry_pty(
    mut child: tokio::process::Child,
    mut reader: pty_process::OwnedReadPty,
    write: Arc<russh::ChannelWriteHalf<Msg>>,
) -> u32 {
    // The terminal reads EIO on Linux once its last writer is gone: that is its end, not an error.
    let _ = tokio::io::copy(&mut reader, &mut write.make_writer()).await;
    child.wait().await.map(exit_code).unwrap_or(255)
}

/// Copies the command's standard output and error to the channel (error as
/// extended data 1, as sshd does) until both end; then its exit code.
async fn carry_pipes(mut child: tokio::process::Child, write: Arc<russh::ChannelWriteHalf<Msg>>) -> u32 {
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let out = async {
        if let Some(mut stdout) = stdout {
            let _ = tokio::io::copy(&mut stdout, &mut write.make_writer()).await;
        }
    };
    let err = async {
        if let Some(mut stderr) = stderr {
            let _ = tokio::io::copy(&mut stderr, &mut write.make_writer_ext(Some(1))).await;
        }
    };
    tokio::join!(out, err);
    child.wait().await.map(exit_code).unwrap_or(255)
}
