//! Both directions of a bridged channel, each its own task waiting only for
//! its own peer's window: the user's side to the machine (requests replayed
//! first), and the machine's side to the user (data, EOF, exit status and
//! signal). When one direction ends, the other has the connection's close
//! grace to end too, and is then let go: a machine that never closes its
//! side cannot keep a task, or its connection, once its user has left.

use crate::user_side::{OpenChannel, Tap};
use bytes::Bytes;
use russh::{Channel, ChannelId, ChannelMsg, ChannelReadHalf, ChannelWriteHalf, client, server};
use std::time::Duration;
use tokio::task::JoinSet;

/// Bridges `user` and `upstream` until both ends are closed, or one is and
/// `grace` has passed; `held` is replayed upstream first. `open` is the
/// channel's place in its connection and its tally: given back, and the
/// close audited, at the end. `start_refused` is, for a session channel,
/// the stderr line the user gets when the machine refuses the request that
/// starts the session.
pub(crate) async fn pump(
    user: Channel<server::Msg>,
    upstream: Channel<client::Msg>,
    held: Vec<ChannelMsg>,
    handle: server::Handle,
    grace: Duration,
    start_refused: Option<Bytes>,
    open: OpenChannel,
) {
    let id = user.id();
    let (mut up_read, up_write) = upstream.split();
    let (mut user_read, user_write) = user.split();
    // Each direction says whether it ended with the user's side closed.
    let mut directions = JoinSet::new();
    let tap = open.tap();
    directions.spawn(async move {
        for message in held {
            if let Err(error) = forward_to_upstream(message, &up_write, &tap).await {
                tracing::debug!(%error, "replaying a request upstream failed");
            }
        }
        let mut user_closed = true;
        while let Some(message) = user_read.wait().await {
            let closing = matches!(message, ChannelMsg::Close);
            if forward_to_upstream(message, &up_write, &tap).await.is_err() {
                user_closed = false;
                break;
            }
            if closing {
                break;
            }
        }
        let _ = up_write.close().await;
        user_closed
    });
    let closer = handle.clone();
    let tap = open.tap();
    directions.spawn(async move {
        to_user(&mut up_read, &user_write, &handle, id, &tap, start_refused).await;
        let _ = user_write.close().await;
        true
    });
    let user_closed = matches!(directions.join_next().await, Some(Ok(true)));
    if tokio::time::timeout(grace, directions.join_next()).await.is_err() {
        tracing::debug!("one side of a channel ended and the other did not follow in time; letting it go");
        if !user_closed {
            let _ = closer.close(id).await;
        }
    }
    // Dropping the set aborts what is left.
    drop(directions);
    drop(open);
}

async fn forward_to_upstream(
    message: ChannelMsg,
    up: &ChannelWriteHalf<client::Msg>,
    tap: &Tap,
) -> Result<(), russh::Error> {
    match message {
        ChannelMsg::Data { data } => {
            tap.tally.to_machine(data.len());
            if let Some(recording) = &tap.recording {
                recording.input(&data);
            }
            up.data_bytes(data).await
        }
        ChannelMsg::ExtendedData { data, ext } => {
            tap.tally.to_machine(data.len());
            up.extended_data_bytes(ext, data).await
        }
        ChannelMsg::Eof => up.eof().await,
        ChannelMsg::Close => up.close().await,
        ChannelMsg::RequestPty { term, col_width, row_height, pix_width, pix_height, terminal_modes, .. } => {
            up.request_pty(false, &term, col_width, row_height, pix_width, pix_height, &terminal_modes).await
        }
        ChannelMsg::SetEnv { variable_name, variable_value, .. } => {
            up.set_env(false, variable_name, variable_value).await
        }
        ChannelMsg::RequestShell { .. } => up.request_shell(true).await,
        ChannelMsg::Exec { command, .. } => up.exec(true, command).await,
        ChannelMsg::RequestSubsystem { name, .. } => up.request_subsystem(true, name).await,
        ChannelMsg::WindowChange { col_width, row_height, pix_width, pix_height } => {
            if let Some(recording) = &tap.recording {
                recording.resize(col_width, row_height);
            }
            up.window_change(col_width, row_height, pix_width, pix_height).await
        }
        ChannelMsg::Signal { signal } => up.signal(signal).await,
        ChannelMsg::AgentForward { .. } => up.agent_forward(false).await,
        other => {
            tracing::debug!(?other, "not forwarded upstream");
            Ok(())
        }
    }
}

/// Copies the upstream's side to the user until the upstream closes.
async fn to_user(
    up: &mut ChannelReadHalf,
    user: &ChannelWriteHalf<server::Msg>,
    handle: &server::Handle,
    id: ChannelId,
    tap: &Tap,
    start_refused: Option<Bytes>,
) {
    let tally = &tap.tally;
    let record = |bytes: &[u8]| {
        if let Some(recording) = &tap.recording {
            recording.output(bytes);
        }
    };
    let mut start_answered = false;
    while let Some(message) = up.wait().await {
        let sent = match message {
            ChannelMsg::Data { data } => {
                tally.to_user(data.len());
                record(&data);
                user.data_bytes(data).await.is_ok()
            }
            ChannelMsg::ExtendedData { data, ext } => {
                tally.to_user(data.len());
                record(&data);
                user.extended_data_bytes(ext, data).await.is_ok()
            }
            ChannelMsg::Eof => user.eof().await.is_ok(),
            ChannelMsg::ExitStatus { exit_status } => {
                tally.exit_status(exit_status);
                if let Some(recording) = &tap.recording {
                    recording.ended(format!("exit {exit_status}"));
                }
                user.exit_status(exit_status).await.is_ok()
            }
            ChannelMsg::ExitSignal { signal_name, core_dumped, error_message, lang_tag } => {
                let name = match &signal_name {
                    russh::Sig::Custom(name) => name.clone(),
                    named => format!("{named:?}"),
                };
                if let Some(recording) = &tap.recording {
                    recording.ended(format!("signal {name}"));
                }
                tally.exit_signal(name);
                handle.exit_signal_request(id, signal_name, core_dumped, error_message, lang_tag).await.is_ok()
            }
            ChannelMsg::Failure if !start_answered => {
                if let Some(line) = start_refused {
                    let _ = user.extended_data_bytes(1, line).await;
                }
                let _ = user.exit_status(255).await;
                let _ = user.eof().await;
                return;
            }
            ChannelMsg::Success => {
                start_answered = true;
                true
            }
            ChannelMsg::Close => return,
            _ => true,
        };
        if !sent {
            return;
        }
    }
}
