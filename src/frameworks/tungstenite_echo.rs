//! The WebSocket echo of the servers that have no WebSocket layer of their own and take the
//! upgraded connection from hyper (gotham, as its repository's `websocket` example does):
//! tokio-tungstenite's `WebSocketStream` on it, every text and binary message sent back. The
//! handshake's answer is theirs to write; [`accept_key`] is its one computed header.

use futures_util::{SinkExt as _, StreamExt as _};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::WebSocketStream;

/// The `Sec-WebSocket-Accept` value for a request's `Sec-WebSocket-Key`, and whether the request
/// asks for `Upgrade: websocket`; `None` when it is not an upgrade to answer `101`.
pub(crate) fn accept_key(key: Option<&[u8]>, upgrade: Option<&[u8]>) -> Option<String> {
    let asks = upgrade.is_some_and(|u| u.eq_ignore_ascii_case(b"websocket"));
    key.filter(|_| asks)
        .map(tokio_tungstenite::tungstenite::handshake::derive_accept_key)
}

/// Echoes every text and binary message on the upgraded connection `io` until the client
/// closes; tungstenite answers a ping and a Close itself, on the next read.
/// Under `serve --protocol ws --max-requests` each echoed message is counted.
pub(crate) async fn echo<S: AsyncRead + AsyncWrite + Unpin>(io: S) {
    let limit = crate::server::limit::active();
    let mut ws = WebSocketStream::from_raw_socket(io, Role::Server, None).await;
    while let Some(Ok(msg)) = ws.next().await {
        if msg.is_text() || msg.is_binary() {
            if ws.send(msg).await.is_err() {
                return;
            }
            if let Some(limit) = limit {
                limit.record_message();
            }
        }
    }
}
