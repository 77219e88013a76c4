//! One session channel through the router: the user's requests are held
//! until the upstream is connected (with progress on the user's stderr),
//! then replayed on an upstream session channel by [`crate::pump`], which
//! carries everything both ways from there.
//!
//! What is held is bounded: the channel must ask for a shell, a command or a
//! subsystem within the session start time, and may hold at most so many
//! bytes and requests ([`crate::budget`]). Past a limit before the session
//! starts, the channel is closed with a sentence; while the machine is
//! connecting, input past the byte limit is left unread (the client's
//! window closes and it waits), and requests past the message limit close
//! the channel.

use crate::audit::{CastHeader, Event, Pty, SessionRequest};
use crate::backend::Backend;
use crate::budget::{Budget, Exceeded};
use crate::messages::Messages;
use crate::options::RouterOptions;
use crate::pump::pump;
use crate::slot::UpstreamSlot;
use crate::user_side::OpenChannel;
use bytes::Bytes;
use russh::{Channel, ChannelMsg, server};
use std::sync::Arc;

/// Runs one session channel to its end.
pub(crate) async fn bridge<B: Backend>(
    mut user: Channel<server::Msg>,
    slot: Arc<UpstreamSlot<B>>,
    handle: server::Handle,
    options: Arc<RouterOptions>,
    mut open: OpenChannel,
) {
    let id = user.id();
    let mut budget = Budget::new(options.max_held_bytes, options.max_held_messages);
    // 1. Hold requests until the one that starts the session.
    let mut held = match tokio::time::timeout(options.session_start_timeout, hold_until_start(&mut user, &mut budget))
        .await
    {
        Err(_) => {
            tracing::info!(route = %slot.describe(), "a session channel did not start in time; closing it");
            open.ended_by_gateway("the session did not start in time");
            return refuse(&user, slot.messages(), &slot.messages().not_started_in_time).await;
        }
        Ok(Held::Gone) => return,
        Ok(Held::Exceeded(exceeded)) => {
            tracing::info!(route = %slot.describe(), ?exceeded, "a session channel held too much before it started; closing it");
            open.ended_by_gateway("the session sent too much before it started");
            return refuse(&user, slot.messages(), &slot.messages().too_much_before_start).await;
        }
        Ok(Held::Started(held)) => held,
    };
    let (request, pty) = session_request(&held);
    if let Some(header) = cast_header(&request, pty.as_ref(), &slot.describe()) {
        open.start_recording(slot.describe(), header);
    }
    let recorded = open.is_recorded();
    open.emit(Event::SessionStart { channel: u32::from(id), request, pty, recorded });
    // 2. Connect, telling the user while the backend is starting, and go on
    // holding what the user sends, within the same budget.
    let connected = {
        // Boxed: inline, connecting would stay part of the task for the session's life.
        let mut connecting = Box::pin(slot.get(Some((&handle, id))));
        loop {
            tokio::select! {
                result = &mut connecting => break Ok(result),
                message = user.wait(), if !budget.full() => match message {
                    None | Some(ChannelMsg::Close) => break Err(None),
                    Some(message) => {
                        let counted = budget.hold(&message);
                        held.push(message);
                        if let Err(exceeded) = counted
                            && exceeded == Exceeded::Messages
                        {
                            break Err(Some(exceeded));
                        }
                    }
                },
            }
        }
    };
    let upstream = match connected {
        Ok(Ok(upstream)) => upstream,
        Ok(Err(message)) => {
            open.ended_by_gateway("the machine could not be reached");
            return refuse(&user, slot.messages(), &message).await;
        }
        Err(None) => return,
        Err(Some(exceeded)) => {
            tracing::info!(route = %slot.describe(), ?exceeded, "a session channel sent too many requests while its machine was connecting; closing it");
            open.ended_by_gateway("the session sent too much before its machine was connected");
            return refuse(&user, slot.messages(), &slot.messages().too_much_before_start).await;
        }
    };
    let upstream_channel = match upstream.channel_open_session().await {
        Ok(channel) => channel,
        Err(error) => {
            tracing::info!(route = %slot.describe(), %error, "the upstream refused a session channel");
            open.ended_by_gateway("the machine refused the session");
            return refuse(&user, slot.messages(), &slot.messages().start_refused).await;
        }
    };
    // 3. Replay what the user asked for, then carry everything both ways.
    let start_refused = Some(Bytes::from(slot.messages().gave_up(&slot.messages().start_refused)));
    pump(user, upstream_channel, held, handle, options.close_grace, start_refused, open).await;
}

/// What a session asked for (its last held request), with the terminal it
/// asked for before, if any.
fn session_request(held: &[ChannelMsg]) -> (SessionRequest, Option<Pty>) {
    let pty = held.iter().rev().find_map(|message| match message {
        ChannelMsg::RequestPty { term, col_width, row_height, .. } => {
            Some(Pty { term: term.clone(), cols: *col_width, rows: *row_height })
        }
        _ => None,
    });
    let request = match held.last() {
        Some(ChannelMsg::Exec { command, .. }) => {
            SessionRequest::Exec { command: String::from_utf8_lossy(command).into_owned() }
        }
        Some(ChannelMsg::RequestSubsystem { name, .. }) => SessionRequest::Subsystem { name: name.clone() },
        _ => SessionRequest::Shell,
    };
    (request, pty)
}

/// What the channel sent before its session started.
enum Held {
    /// The requests, the last of which starts the session.
    Started(Vec<ChannelMsg>),
    /// The user closed the channel or left.
    Gone,
    /// The channel went past its budget.
    Exceeded(Exceeded),
}

async fn hold_until_start(user: &mut Channel<server::Msg>, budget: &mut Budget) -> Held {
    let mut held = Vec::new();
    loop {
        let Some(message) = user.wait().await else { return Held::Gone };
        if matches!(message, ChannelMsg::Close) {
            return Held::Gone;
        }
        let starts = matches!(
            message,
            ChannelMsg::RequestShell { .. } | ChannelMsg::Exec { .. } | ChannelMsg::RequestSubsystem { .. }
        );
        if let Err(exceeded) = budget.hold(&message) {
            return Held::Exceeded(exceeded);
        }
        held.push(message);
        if starts {
            return Held::Started(held);
        }
    }
}

/// Ends a session that could not start: the reason on stderr, a non-zero exit status, EOF, close.
async fn refuse(user: &Channel<server::Msg>, messages: &Messages, message: &str) {
    let _ = user.extended_data_bytes(1, Bytes::from(messages.gave_up(message))).await;
    let _ = user.exit_status(255).await;
    let _ = user.eof().await;
    let _ = user.close().await;
}

/// The header of a shell's or a command's recording; `None` for a
/// subsystem (SFTP is audited, not recorded).
fn cast_header(request: &SessionRequest, pty: Option<&Pty>, route: &str) -> Option<CastHeader> {
    let command = match request {
        SessionRequest::Exec { command } => Some(command.clone()),
        SessionRequest::Shell => None,
        SessionRequest::Subsystem { .. } => return None,
    };
    let (width, height) = match pty {
        Some(pty) if pty.cols > 0 && pty.rows > 0 => (pty.cols, pty.rows),
        _ => (80, 24),
    };
    Some(CastHeader {
        width,
        height,
        timestamp: jiff::Timestamp::now().as_second(),
        command,
        term: pty.map(|pty| pty.term.clone()),
        title: route.to_string(),
    })
}
