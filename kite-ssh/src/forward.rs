//! Byte pipes between a user channel and an upstream channel, for
//! `direct-tcpip`, `forwarded-tcpip` and agent channels: data only, in both
//! directions, with each side's flow control.

use russh::{Channel, client, server};

/// Copies bytes both ways until either side closes, then closes both.
pub(crate) async fn pipe(user: Channel<server::Msg>, upstream: Channel<client::Msg>) {
    let mut user = user.into_stream();
    let mut upstream = upstream.into_stream();
    match tokio::io::copy_bidirectional(&mut user, &mut upstream).await {
        Ok((up, down)) => tracing::debug!(bytes_up = up, bytes_down = down, "a forwarded channel closed"),
        Err(error) => tracing::debug!(%error, "a forwarded channel ended with an error"),
    }
}
