//! HTTP/2, the client side that checks: over cleartext with prior knowledge (h2c), or over TLS
//! with `h2` chosen by ALPN (h2): one connection ([`Client`]) that sends an oracle [`Instance`]
//! as one stream and reads the whole answer, for `check --protocol h2c|h2` and the driver's
//! check before load. The load itself is `crate::driver::client::streams`. Both write a request
//! the same way ([`head`], [`body_frames`]), on the h2 crate, the HTTP/2 under hyper's client
//! (and oha's), and connect the same way ([`handshake`]).
//!
//! The windows the client advertises are stated ([`WINDOW`]): h2load's and oha's default,
//! 2^30 − 1 for each stream and for the connection, so that no answer waits on the client.

pub(crate) mod rules;

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use anyhow::{anyhow, Context as _};
use bytes::{Bytes, BytesMut};
use h2::client::SendRequest;

use crate::options::{Protocol, Transport};
use crate::oracle::{Expected, Instance, Method, Observed};
use crate::transport::Peer;

/// The stream and connection windows the client advertises: h2load's `-w 30 -W 30` default,
/// which oha copies.
pub(crate) const WINDOW: u32 = (1 << 30) - 1;

/// Streams the client opens at once before the server's SETTINGS say how many it takes: 100,
/// hyper's client's and oha's value (h2's own is unlimited, and a server that takes fewer, such
/// as trillium's 100, refuses the rest). After the SETTINGS, the server's limit holds.
pub(crate) const INITIAL_STREAMS: usize = 100;

/// The request head of `instance` for the server at `peer`: method, the absolute URI h2 takes
/// its `:scheme` (`https` over TLS), `:authority` and `:path` from, the content type, and the length of a body
/// sent whole. A chunked instance's body goes without a length, in several DATA frames: HTTP/2
/// has no `Transfer-Encoding`, and that is its equivalent.
pub(crate) fn head(peer: Peer, instance: &Instance) -> anyhow::Result<http::Request<()>> {
    let mut builder = http::Request::builder()
        .method(instance.method.as_str())
        .uri(format!(
            "{}://{}{}",
            peer.transport.scheme(),
            peer.addr,
            instance.target
        ));
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
    peer: Peer,
    instance: &Instance,
) -> anyhow::Result<http::Response<Bytes>> {
    let frames = body_frames(instance);
    let mut ready = send.clone().ready().await?;
    let (response, mut stream) = ready.send_request(head(peer, instance)?, frames.is_empty())?;
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

/// What an HTTP/2 connection runs on: TCP (h2c), or TLS on TCP (h2).
pub(crate) enum Io {
    Tcp(tokio::net::TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>),
}

/// The TLS client configuration for h2 (ALPN `h2`, a full handshake each time), built once.
pub(crate) fn tls_config() -> anyhow::Result<Arc<rustls::ClientConfig>> {
    crate::transport::tls::client_config(crate::transport::tls::Resumption::Off, Protocol::H2)
}

/// An HTTP/2 connection to `peer`: over TLS (on `tls`, the client configuration, which must offer
/// ALPN `h2`; [`tls_config`] when `None`) the server must choose `h2`; then the preface and
/// the SETTINGS with [`WINDOW`] exchanged. Returns where requests go, the connection, which
/// must be polled for any of them to move, and over TLS whether its handshake resumed a session.
pub(crate) async fn handshake(
    peer: Peer,
    tls: Option<&Arc<rustls::ClientConfig>>,
) -> anyhow::Result<(
    SendRequest<Bytes>,
    h2::client::Connection<Io, Bytes>,
    Option<bool>,
)> {
    let addr = peer.addr;
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .with_context(|| format!("connect {addr}"))?;
    tcp.set_nodelay(true)?;
    let mut resumed = None;
    let io = match peer.transport {
        Transport::Tcp => Io::Tcp(tcp),
        Transport::Tls => {
            let config = match tls {
                Some(config) => Arc::clone(config),
                None => tls_config()?,
            };
            let stream = tokio_rustls::TlsConnector::from(config)
                .connect(crate::transport::tls::server_name(), tcp)
                .await
                .with_context(|| format!("TLS handshake with {addr}"))?;
            let alpn = stream.get_ref().1.alpn_protocol();
            anyhow::ensure!(
                alpn == Some(b"h2"),
                "{addr} chose ALPN {} where h2 was offered",
                alpn.map_or("none".to_owned(), |p| String::from_utf8_lossy(p)
                    .into_owned())
            );
            resumed =
                Some(stream.get_ref().1.handshake_kind() == Some(rustls::HandshakeKind::Resumed));
            Io::Tls(Box::new(stream))
        }
    };
    let (send, conn) = h2::client::Builder::new()
        .initial_window_size(WINDOW)
        .initial_connection_window_size(WINDOW)
        .initial_max_send_streams(INITIAL_STREAMS)
        .handshake::<_, Bytes>(io)
        .await
        .with_context(|| format!("HTTP/2 handshake with {addr}"))?;
    Ok((send, conn, resumed))
}

/// [`handshake`], with the connection driven by a task of its own on the current runtime.
pub(crate) async fn connect(peer: Peer) -> anyhow::Result<SendRequest<Bytes>> {
    let (send, conn, _) = handshake(peer, None).await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(send)
}

/// One HTTP/2 connection for checks, on a runtime of its own: each call is one stream, bounded
/// by its timeout.
pub(crate) struct Client {
    rt: tokio::runtime::Runtime,
    send: SendRequest<Bytes>,
    peer: Peer,
    timeout: Duration,
}

impl Client {
    /// Connects to `peer`; every exchange (and the connect) must end within `timeout`.
    pub(crate) fn connect(peer: Peer, timeout: Duration) -> anyhow::Result<Client> {
        let addr = peer.addr;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let send = rt
            .block_on(async { tokio::time::timeout(timeout, connect(peer)).await })
            .map_err(|_| anyhow!("HTTP/2 connect to {addr}: no answer in {timeout:?}"))??;
        Ok(Client {
            rt,
            send,
            peer,
            timeout,
        })
    }

    /// Sends `instance` as one stream and reads the whole answer.
    pub(crate) fn send(&mut self, instance: &Instance) -> anyhow::Result<http::Response<Bytes>> {
        let (send, peer, timeout) = (&mut self.send, self.peer, self.timeout);
        self.rt
            .block_on(async { tokio::time::timeout(timeout, exchange(send, peer, instance)).await })
            .map_err(|_| anyhow!("{}: no HTTP/2 answer in {timeout:?}", instance.target))?
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

/// The check before a load over HTTP/2: connects (h2c with prior knowledge, h2 by ALPN) and
/// checks the answers to
/// the first [`PRECHECKED`] of `requests`, one stream each, against the oracle, and that none
/// came before the wait its request asked for. Bounded by `timeout` per exchange.
pub(crate) fn precheck(
    peer: Peer,
    expected: &Expected,
    requests: &[Instance],
    timeout: Duration,
) -> anyhow::Result<()> {
    use super::Exchange as _;
    anyhow::ensure!(!requests.is_empty(), "no request to send");
    let mut client = Client::connect(peer, timeout).map_err(|e| anyhow!("{e:#}"))?;
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

impl tokio::io::AsyncRead for Io {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Io::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Io::Tls(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl tokio::io::AsyncWrite for Io {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Io::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Io::Tls(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Io::Tcp(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Io::Tls(s) => Pin::new(s).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Io::Tcp(s) => s.is_write_vectored(),
            Io::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Io::Tcp(s) => Pin::new(s).poll_flush(cx),
            Io::Tls(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Io::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Io::Tls(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}
