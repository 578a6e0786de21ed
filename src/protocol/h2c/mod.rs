//! HTTP/2 over cleartext with prior knowledge, the client side that checks: one connection
//! ([`Client`]) that sends an oracle [`Instance`] as one stream and reads the whole answer,
//! for `check --protocol h2c` and the driver's check before load. The load itself is
//! `crate::driver::client::streams`. Both write a request the same way ([`head`],
//! [`body_frames`]), on the h2 crate, the HTTP/2 under hyper's client (and oha's).
//!
//! The windows the client advertises are stated ([`WINDOW`]): h2load's and oha's default,
//! 2^30 − 1 for each stream and for the connection, so that no answer waits on the client.

pub(crate) mod rules;

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{anyhow, Context as _};
use bytes::{Bytes, BytesMut};
use h2::client::SendRequest;

use crate::oracle::{Expected, Instance, Method, Observed};

/// The stream and connection windows the client advertises: h2load's `-w 30 -W 30` default,
/// which oha copies.
pub(crate) const WINDOW: u32 = (1 << 30) - 1;

/// Streams the client opens at once before the server's SETTINGS say how many it takes: 100,
/// hyper's client's and oha's value (h2's own is unlimited, and a server that takes fewer, such
/// as trillium's 100, refuses the rest). After the SETTINGS, the server's limit holds.
pub(crate) const INITIAL_STREAMS: usize = 100;

/// The request head of `instance` for the server at `addr`: method, the absolute URI h2 takes
/// its `:scheme`, `:authority` and `:path` from, the content type, and the length of a body
/// sent whole. A chunked instance's body goes without a length, in several DATA frames: HTTP/2
/// has no `Transfer-Encoding`, and that is its equivalent.
pub(crate) fn head(addr: SocketAddr, instance: &Instance) -> anyhow::Result<http::Request<()>> {
    let mut builder = http::Request::builder()
        .method(instance.method.as_str())
        .uri(format!("http://{addr}{}", instance.target));
    if let Some(content_type) = instance.content_type {
        builder = builder.header(http::header::CONTENT_TYPE, content_type);
    }
    if instance.method == Method::Post && !instance.chunked {
        builder = builder.header(http::header::CONTENT_LENGTH, instance.body.len());
    }
    builder
        .body(())
        .with_context(|| format!("request {}", instance.target))
}

/// The DATA frames of `instance`'s body: none for a `GET`, one for a body sent whole, and
/// [`crate::oracle::CHUNKS`] for a chunked one (as the HTTP/1.1 client cuts it).
pub(crate) fn body_frames(instance: &Instance) -> Vec<Bytes> {
    if instance.method != Method::Post {
        return Vec::new();
    }
    if !instance.chunked || instance.body.is_empty() {
        return vec![instance.body.clone()];
    }
    let size = instance.body.len().div_ceil(crate::oracle::CHUNKS).max(1);
    (0..instance.body.len())
        .step_by(size)
        .map(|at| {
            instance
                .body
                .slice(at..(at + size).min(instance.body.len()))
        })
        .collect()
}

/// Sends `instance` on `send` and reads the whole answer (its window given back as it comes).
pub(crate) async fn exchange(
    send: &mut SendRequest<Bytes>,
    addr: SocketAddr,
    instance: &Instance,
) -> anyhow::Result<http::Response<Bytes>> {
    let frames = body_frames(instance);
    let mut ready = send.clone().ready().await?;
    let (response, mut stream) = ready.send_request(head(addr, instance)?, frames.is_empty())?;
    let last = frames.len().saturating_sub(1);
    for (i, frame) in frames.into_iter().enumerate() {
        send_all(&mut stream, frame, i == last).await?;
    }
    let (parts, mut body) = response.await?.into_parts();
    let mut out = BytesMut::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        let _ = body.flow_control().release_capacity(chunk.len());
        out.extend_from_slice(&chunk);
    }
    Ok(http::Response::from_parts(parts, out.freeze()))
}

/// Sends `data` on `stream`, waiting for the server's window as needed (a body larger than its
/// window goes in as many pieces as it grants).
pub(crate) async fn send_all(
    stream: &mut h2::SendStream<Bytes>,
    mut data: Bytes,
    end: bool,
) -> anyhow::Result<()> {
    while !data.is_empty() {
        stream.reserve_capacity(data.len());
        let granted = std::future::poll_fn(|cx| stream.poll_capacity(cx))
            .await
            .ok_or_else(|| anyhow!("the stream closed while its body was sent"))??;
        let piece = data.split_to(granted.min(data.len()));
        stream.send_data(piece, end && data.is_empty())?;
    }
    if end && data.is_empty() {
        // An empty body, or one whose last piece went above: end the stream if still open.
        let _ = stream.send_data(Bytes::new(), true);
    }
    Ok(())
}

/// An h2c connection to `addr`, with the preface and the SETTINGS with [`WINDOW`] exchanged:
/// where requests go, and the connection, which must be polled for any of them to move.
pub(crate) async fn handshake(
    addr: SocketAddr,
) -> anyhow::Result<(
    SendRequest<Bytes>,
    h2::client::Connection<tokio::net::TcpStream, Bytes>,
)> {
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .with_context(|| format!("connect {addr}"))?;
    tcp.set_nodelay(true)?;
    h2::client::Builder::new()
        .initial_window_size(WINDOW)
        .initial_connection_window_size(WINDOW)
        .initial_max_send_streams(INITIAL_STREAMS)
        .handshake::<_, Bytes>(tcp)
        .await
        .with_context(|| format!("h2c handshake with {addr}"))
}

/// [`handshake`], with the connection driven by a task of its own on the current runtime.
pub(crate) async fn connect(addr: SocketAddr) -> anyhow::Result<SendRequest<Bytes>> {
    let (send, conn) = handshake(addr).await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(send)
}

/// One h2c connection for checks, on a runtime of its own: each call is one stream, bounded by
/// its timeout.
pub(crate) struct Client {
    rt: tokio::runtime::Runtime,
    send: SendRequest<Bytes>,
    addr: SocketAddr,
    timeout: Duration,
}

impl Client {
    /// Connects to `addr`; every exchange (and the connect) must end within `timeout`.
    pub(crate) fn connect(addr: SocketAddr, timeout: Duration) -> anyhow::Result<Client> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let send = rt
            .block_on(async { tokio::time::timeout(timeout, connect(addr)).await })
            .map_err(|_| anyhow!("h2c connect to {addr}: no answer in {timeout:?}"))??;
        Ok(Client {
            rt,
            send,
            addr,
            timeout,
        })
    }

    /// Sends `instance` as one stream and reads the whole answer.
    pub(crate) fn send(&mut self, instance: &Instance) -> anyhow::Result<http::Response<Bytes>> {
        let (send, addr, timeout) = (&mut self.send, self.addr, self.timeout);
        self.rt
            .block_on(async { tokio::time::timeout(timeout, exchange(send, addr, instance)).await })
            .map_err(|_| anyhow!("{}: no h2c answer in {timeout:?}", instance.target))?
    }
}

impl super::Exchange for Client {
    fn observe(&mut self, instance: &Instance) -> anyhow::Result<Observed> {
        self.send(instance).map(|res| Observed::from_response(&res))
    }

    fn get(&mut self, target: &str) -> anyhow::Result<Observed> {
        self.observe(&Instance::get(target))
    }
}

/// How many of a cell's requests the check before a load sends, one stream each on one
/// connection: distinct operands or bodies for a computed scenario.
const PRECHECKED: usize = 4;

/// The check before a load over h2c: connects with prior knowledge and checks the answers to
/// the first [`PRECHECKED`] of `requests`, one stream each, against the oracle, and that none
/// came before the wait its request asked for. Bounded by `timeout` per exchange.
pub(crate) fn precheck(
    addr: SocketAddr,
    expected: &Expected,
    requests: &[Instance],
    timeout: Duration,
) -> anyhow::Result<()> {
    use super::Exchange as _;
    anyhow::ensure!(!requests.is_empty(), "no request to send");
    let mut client = Client::connect(addr, timeout).map_err(|e| anyhow!("{e:#}"))?;
    for (i, instance) in requests.iter().take(PRECHECKED).enumerate() {
        let sent = std::time::Instant::now();
        let got = client
            .observe(instance)
            .map_err(|e| anyhow!("stream {}: {e:#}", 2 * i + 1))?;
        expected
            .check_instance(instance, &got)
            .and_then(|()| instance.check_not_early(sent.elapsed()))
            .map_err(|e| anyhow!("stream {}: {e}", 2 * i + 1))?;
    }
    Ok(())
}
