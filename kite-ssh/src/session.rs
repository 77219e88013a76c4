//! One session channel through the router: the user's requests are held
//! until the upstream is connected (with progress on the user's stderr),
//! replayed on an upstream session channel, and then everything flows both
//! ways: data with each side's flow control, EOF, signals, window changes,
//! exit status and signal, and close, in the right order.

use crate::backend::Backend;
use crate::messages;
use crate::slot::UpstreamSlot;
use bytes::Bytes;
use russh::{Channel, ChannelMsg, ChannelReadHalf, ChannelWriteHalf, client, server};
use std::sync::Arc;

/// What the user asked for before the upstream was there, at most this many bytes of input.
const MAX_EARLY_INPUT: usize = 1 << 20;

/// Runs one session channel to its end.
pub(crate) async fn bridge<B: Backend>(
    mut user: Channel<server::Msg>,
    slot: Arc<UpstreamSlot<B>>,
    handle: server::Handle,
) {
    let id = user.id();
    // 1. Hold requests until the one that starts the session.
    let mut held: Vec<ChannelMsg> = Vec::new();
    let mut early_input = 0usize;
    loop {
        let Some(message) = user.wait().await else { return };
        match message {
            ChannelMsg::Close => return,
            ChannelMsg::Data { ref data } => {
                early_input += data.len();
                if early_input > MAX_EARLY_INPUT {
                    tracing::info!("a client sent more than 1 MiB before starting a session; closing it");
                    let _ = user.close().await;
                    return;
                }
                held.push(message);
            }
            starts @ (ChannelMsg::RequestShell { .. }
            | ChannelMsg::Exec { .. }
            | ChannelMsg::RequestSubsystem { .. }) => {
                held.push(starts);
                break;
            }
            other => held.push(other),
        }
    }
    // 2. Connect, telling the user while the backend is starting. Input that
    // comes meanwhile is held up to the same bound; past it, the channel is
    // not read, so its window closes and the user's client waits.
    let connected = {
        let connecting = slot.get(Some((&handle, id)));
        tokio::pin!(connecting);
        loop {
            tokio::select! {
                result = &mut connecting => break Some(result),
                message = user.wait(), if early_input <= MAX_EARLY_INPUT => match message {
                    None | Some(ChannelMsg::Close) => break None,
                    Some(other) => {
                        if let ChannelMsg::Data { data } = &other {
                            early_input += data.len();
                        }
                        held.push(other);
                    }
                },
            }
        }
    };
    let Some(connected) = connected else { return };
    let upstream = match connected {
        Ok(upstream) => upstream,
        Err(message) => return refuse(&user, &message).await,
    };
    let upstream_channel = match upstream.channel_open_session().await {
        Ok(channel) => channel,
        Err(error) => {
            tracing::info!(route = %slot.describe(), %error, "the upstream refused a session channel");
            return refuse(&user, messages::START_REFUSED).await;
        }
    };
    // 3. Replay what the user asked for, then pump both ways. Each direction
    // is its own loop and waits only for its own peer's window: the replay
    // (which may carry input) runs beside the upstream's output, never
    // before it, or a command that echoes its input would fill the windows
    // and wait on a reader that has not started.
    let (mut up_read, up_write) = upstream_channel.split();
    let (mut user_read, user_write) = user.split();
    let to_upstream = tokio::spawn(async move {
        for message in held {
            if let Err(error) = forward_to_upstream(message, &up_write).await {
                tracing::debug!(%error, "replaying a request upstream failed");
            }
        }
        while let Some(message) = user_read.wait().await {
            let closing = matches!(message, ChannelMsg::Close);
            if forward_to_upstream(message, &up_write).await.is_err() || closing {
                break;
            }
        }
        let _ = up_write.close().await;
    });
    to_user(&mut up_read, &user_write, &handle, id).await;
    let _ = user_write.close().await;
    // The user's close comes back and ends the other direction; do not wait forever for it.
    let abort = to_upstream.abort_handle();
    if tokio::time::timeout(std::time::Duration::from_secs(5), to_upstream).await.is_err() {
        tracing::debug!("the user did not answer the channel close in time");
        abort.abort();
    }
}

/// Ends a session that could not start: the reason on stderr, a non-zero exit status, EOF, close.
async fn refuse(user: &Channel<server::Msg>, message: &str) {
    let _ = user.extended_data_bytes(1, Bytes::from(messages::gave_up(message))).await;
    let _ = user.exit_status(255).await;
    let _ = user.eof().await;
    let _ = user.close().await;
}

async fn forward_to_upstream(message: ChannelMsg, up: &ChannelWriteHalf<client::Msg>) -> Result<(), russh::Error> {
    match message {
        ChannelMsg::Data { data } => up.data_bytes(data).await,
        ChannelMsg::ExtendedData { data, ext } => up.extended_data_bytes(ext, data).await,
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
    id: russh::ChannelId,
) {
    let mut start_answered = false;
    while let Some(message) = up.wait().await {
        let sent = match message {
            ChannelMsg::Data { data } => user.data_bytes(data).await.is_ok(),
            ChannelMsg::ExtendedData { data, ext } => user.extended_data_bytes(ext, data).await.is_ok(),
            ChannelMsg::Eof => user.eof().await.is_ok(),
            ChannelMsg::ExitStatus { exit_status } => user.exit_status(exit_status).await.is_ok(),
            ChannelMsg::ExitSignal { signal_name, core_dumped, error_message, lang_tag } => {
                handle.exit_signal_request(id, signal_name, core_dumped, error_message, lang_tag).await.is_ok()
            }
            ChannelMsg::Failure if !start_answered => {
                let _ = user.extended_data_bytes(1, Bytes::from(messages::gave_up(messages::START_REFUSED))).await;
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
