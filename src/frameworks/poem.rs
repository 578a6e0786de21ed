//! poem 3: a `Route` of `#[handler]` functions with the state as endpoint data, poem's own
//! extractors (`web::Query`, `Bytes`, `web::Json`) for the query and body routes,
//! `StaticFilesEndpoint` for static files (io=disk), and, when logging is on, an `around`
//! middleware that logs one line per response. `app()` is the only place the app is built:
//! in-process requests call the endpoint directly (`Endpoint::get_response`, which turns an
//! error into its response as poem's server does) on a current-thread runtime, without a
//! socket, and `poem::Server` serves the same endpoint on the listener with a tokio runtime of
//! `threads` workers.

use std::future::IntoFuture as _;
use std::net::TcpListener;
use std::future::Future as _;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use poem::endpoint::{BoxEndpoint, StaticFilesEndpoint};
use poem::http::header::CONTENT_TYPE;
use poem::http::{HeaderValue, StatusCode, Uri};
use poem::listener::Acceptor;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use poem::web::{Data, Json, LocalAddr, Path, Query, RemoteAddr};
use poem::{get, handler, post, Endpoint, EndpointExt as _, IntoResponse, Route, Server};

use crate::framework::{About, Config, Framework, Protocol, Support, Request, Response, ServerHandle, Transport, Version};
use crate::handlers::{self, AppState, Operands, Reply, Wait};
use crate::logging::{self, Started};
use crate::options::{Io, KEEP_ALIVE};
use crate::store::AsyncStore;

use super::built::Built;

/// poem behind the framebench trait.
pub(crate) struct Poem(Built<BoxEndpoint<'static>>);

/// What the handlers share, as endpoint data.
type Shared<'a> = Data<&'a Arc<AppState<AsyncStore>>>;

/// Builds the endpoint: every route, and the logger when logging is on.
fn app(config: &Config) -> BoxEndpoint<'static> {
    // One pool per endpoint: in-process and served requests run on different runtimes.
    let state = Arc::new(AppState::new_async(config));
    let route = Route::new()
        .at("/", get(hello))
        .at("/json", get(json))
        .at("/get", get(redis_get))
        .at("/template", get(template))
        .at("/paste/:name", get(paste));
    let route = match config.options.io {
        Io::Disk => route.nest(
            "/static",
            StaticFilesEndpoint::new(config.fixtures.static_dir()),
        ),
        Io::Memory => route.at("/static/:name", get(static_file)),
    };
    let route = route
        .at("/sum", get(sum))
        .at("/upload", post(upload))
        .at("/json_in", post(json_in))
        .at("/delay", get(delay))
        .at("/ws", get(ws_echo));
    let endpoint = route.data(state);
    match logging::target(config.options.logging) {
        None => endpoint.boxed(),
        // Fairness: poem's own `Tracing` middleware logs through `tracing` under poem's target,
        // which framebench's subscriber does not route; an `around` middleware, poem's way to
        // wrap an endpoint, logs the same line every hand-written logger does.
        Some(target) => {
            logging::install();
            endpoint
                .around(move |ep, req| async move {
                    let started = Started::now(
                        target,
                        req.remote_addr().as_socket_addr().copied(),
                        req.method().as_str(),
                        req.uri().to_string(),
                    );
                    let res = ep.get_response(req).await;
                    started.finish(res.status().as_u16());
                    Ok(res)
                })
                .boxed()
        }
    }
}

impl Framework for Poem {
    const NAME: &'static str = "poem";
    const CRATE: &'static str = "poem";
    const VERSION_PREFIX: &'static str = "3.";
    const ABOUT: About = About {
        crate_label: None,
        version: Version::Locked(""),
        companions: &[],
        static_files: "`StaticFilesEndpoint`",
        in_process: "`Endpoint::get_response` on the endpoint",
        server: "`poem::Server` on tokio with `--threads` workers",
    };
    const PER_CORE: bool = true;
    const COUNTS_REQUESTS: bool = true;
   const COUNTS_MESSAGES: bool = true;
    const PROTOCOLS: &'static [(Protocol, Support)] = &[
        (Protocol::H2c, Support::Supported("`poem::Server` (hyper-util's auto builder, always built: it reads the preface on every connection, HTTP/1.1 ones too)")),
        (Protocol::H2, Support::Supported("`poem::Server` (the auto builder) on the TLS stream, once ALPN chose `h2`")),
        (Protocol::Ws, Support::Supported("poem's `websocket` feature: `WebSocket::on_upgrade` (tokio-tungstenite)")),
    ];
    // Fairness: poem's `rustls` feature turns on tokio-rustls's default features, which add
    // aws-lc-rs and compile aws-lc-sys's C into every build of the registry; the acceptor below
    // is what that feature's `RustlsAcceptor` does (tokio-rustls's `TlsAcceptor`, the handshake
    // on the connection's task at its first read), on the run's ring configuration.
    const TRANSPORTS: &'static [(Transport, Support)] = &[(
        Transport::Tls,
        Support::Supported("poem's `Acceptor` trait: tokio-rustls's `TlsAcceptor` on the accepted stream, the handshake on the connection's task, as the `rustls` feature's `RustlsAcceptor` does (that feature would also compile aws-lc-sys)"),
    )];
    const CANNOT: &'static [(&'static str, &'static str)] = &[];

    fn build(config: &Config) -> anyhow::Result<Self> {
        Built::new(config, app).map(Poem)
    }

    fn dispatch(&self, req: Request) -> anyhow::Result<Response> {
        self.0.rt.block_on(async {
            let (parts, body) = req.into_parts();
            let mut builder = poem::Request::builder()
                .method(parts.method)
                .uri(parts.uri)
                .version(parts.version);
            for (name, value) in &parts.headers {
                builder = builder.header(name, value);
            }
            let res = self.0.app.get_response(builder.body(body)).await;
            let (parts, body) = res.into_parts();
            let mut out = Response::new(body.into_bytes().await?);
            *out.status_mut() = parts.status;
            *out.headers_mut() = parts.headers;
            Ok(out)
        })
    }

    fn serve(&self, listener: TcpListener) -> anyhow::Result<ServerHandle> {
        let endpoint = app(&self.0.config);
        // `serve --max-requests`: the counting endpoint exists only when a limit is set.
        let endpoint = match crate::server::limit::active() {
            Some(limit) => endpoint
                .after(move |res| async move {
                    limit.record();
                    res
                })
                .boxed(),
            None => endpoint,
        };
        // Shared by the runtimes of `--runtime per-core` (poem serves an `Arc` of an endpoint as
        // the endpoint itself).
        let endpoint = Arc::new(endpoint);
        let tls = match self.0.config.options.transport {
            Transport::Tls => Some(crate::transport::tls::acceptor(self.0.config.options.protocol)?),
            Transport::Tcp => None,
        };
        self.0.spawn(listener, move |listener, stop| {
            let (endpoint, tls) = (Arc::clone(&endpoint), tls.clone());
            async move {
                let Ok(acceptor) = NoDelay::new(listener) else {
                    return;
                };
                match tls {
                    Some(tls) => run(Tls { tcp: acceptor, tls }, endpoint, stop).await,
                    None => run(acceptor, endpoint, stop).await,
                }
            }
        })
    }
}

/// Serves `endpoint` on `acceptor` until `stop`, then stops gracefully within
/// [`crate::options::GRACE`].
async fn run(
    acceptor: impl Acceptor + 'static,
    endpoint: Arc<BoxEndpoint<'static>>,
    stop: crate::server::Stopped,
) {
    let _ = Server::new_with_acceptor(acceptor)
        .idle_timeout(KEEP_ALIVE)
        .run_with_graceful_shutdown(endpoint, stop.into_future(), Some(crate::options::GRACE))
        .await;
}

/// `GET /ws`: the WebSocket echo, as poem's `websocket` docs write it; tungstenite under it
/// answers a ping and a Close by itself.
#[handler]
async fn ws_echo(ws: poem::web::websocket::WebSocket) -> impl poem::IntoResponse {
    use futures_util::{SinkExt as _, StreamExt as _};
    use poem::web::websocket::Message;
    ws.on_upgrade(|mut socket| async move {
        let limit = crate::server::limit::active();
        while let Some(Ok(msg)) = socket.next().await {
            if matches!(msg, Message::Text(_) | Message::Binary(_)) {
                if socket.send(msg).await.is_err() {
                    break;
                }
                if let Some(limit) = limit {
                    limit.record_message();
                }
            }
        }
    })
}

#[handler]
fn hello() -> Reply {
    handlers::hello()
}

#[handler]
fn json() -> Reply {
    handlers::json()
}

#[handler]
async fn redis_get(Data(state): Shared<'_>, uri: &Uri) -> Reply {
    state.redis_get(uri.query()).await
}

#[handler]
fn template(Data(state): Shared<'_>) -> Reply {
    state.template()
}

#[handler]
fn paste(Data(state): Shared<'_>, Path(name): Path<String>) -> Reply {
    state.paste(&name)
}

#[handler]
fn static_file(Data(state): Shared<'_>, Path(name): Path<String>) -> Reply {
    state.static_file(&name)
}

/// `Query` rejects missing or non-`u32` operands with 400.
#[handler]
fn sum(Query(ops): Query<Operands>) -> Reply {
    handlers::sum(ops)
}

/// `Bytes` reads the whole body, Content-Length or chunked, with no limit unless the app adds
/// poem's `SizeLimit` middleware.
#[handler]
fn upload(body: bytes::Bytes) -> Reply {
    handlers::upload(&body)
}

/// `Json` wants a JSON content type (415 without it) and answers a body it cannot
/// deserialize with 400.
#[handler]
fn json_in(Json(ops): Json<Operands>) -> Reply {
    handlers::json_in(ops)
}

/// `Query` rejects an `ms` that is not a `u64` with 400; the wait is tokio's timer, the runtime
/// poem serves on.
#[handler]
async fn delay(Query(wait): Query<Wait>) -> Reply {
    handlers::delay(wait, tokio::time::sleep).await
}

impl IntoResponse for Reply {
    fn into_response(self) -> poem::Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::NOT_FOUND);
        let mut res = poem::Response::builder().status(status).body(self.body);
        if let Some(content_type) = self.content_type {
            res.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
        }
        res
    }
}

/// poem's own `TcpAcceptor` with `TCP_NODELAY` set on every accepted connection, as every
/// framebench server does (poem's leaves it off and has no setting).
struct NoDelay {
    listener: tokio::net::TcpListener,
    local: LocalAddr,
}

impl NoDelay {
    fn new(listener: tokio::net::TcpListener) -> std::io::Result<Self> {
        let local = LocalAddr(listener.local_addr()?.into());
        Ok(NoDelay { listener, local })
    }
}

impl Acceptor for NoDelay {
    type Io = tokio::net::TcpStream;

    fn local_addr(&self) -> Vec<LocalAddr> {
        vec![self.local.clone()]
    }

    async fn accept(
        &mut self,
    ) -> std::io::Result<(Self::Io, LocalAddr, RemoteAddr, poem::http::uri::Scheme)> {
        let (io, peer) = self.listener.accept().await?;
        let _ = io.set_nodelay(true);
        Ok((
            io,
            self.local.clone(),
            RemoteAddr(peer.into()),
            poem::http::uri::Scheme::HTTP,
        ))
    }
}

/// [`NoDelay`] with TLS: each accepted stream is handed to poem at once, its handshake left to
/// the connection's own task ([`Handshaking`]), as poem's `RustlsAcceptor` does.
struct Tls {
    tcp: NoDelay,
    tls: tokio_rustls::TlsAcceptor,
}

impl Acceptor for Tls {
    type Io = Handshaking;

    fn local_addr(&self) -> Vec<LocalAddr> {
        self.tcp.local_addr()
    }

    async fn accept(
        &mut self,
    ) -> std::io::Result<(Self::Io, LocalAddr, RemoteAddr, poem::http::uri::Scheme)> {
        let (io, local, remote, _) = self.tcp.accept().await?;
        let handshake = tokio::time::timeout(
            crate::transport::tls::HANDSHAKE_TIMEOUT,
            self.tls.accept(io),
        );
        Ok((
            Handshaking::Pending(Box::pin(handshake)),
            local,
            remote,
            poem::http::uri::Scheme::HTTPS,
        ))
    }
}

type TlsStream = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;

/// A TLS connection whose handshake completes at its first read or write, bounded by
/// [`crate::transport::tls::HANDSHAKE_TIMEOUT`]: poem's `HandshakeStream` (which it keeps
/// `pub(crate)`), written again for the acceptor above.
enum Handshaking {
    Pending(Pin<Box<tokio::time::Timeout<tokio_rustls::Accept<tokio::net::TcpStream>>>>),
    Ready(Box<TlsStream>),
    Failed,
}

impl Handshaking {
    /// The established stream, once the handshake is done; an error when it failed or timed out.
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<Pin<&mut TlsStream>>> {
        if let Handshaking::Pending(handshake) = self {
            *self = match ready!(handshake.as_mut().poll(cx)) {
                Ok(Ok(stream)) => Handshaking::Ready(Box::new(stream)),
                Ok(Err(e)) => {
                    *self = Handshaking::Failed;
                    return Poll::Ready(Err(e));
                }
                Err(_) => Handshaking::Failed,
            };
        }
        match self {
            Handshaking::Ready(stream) => Poll::Ready(Ok(Pin::new(stream))),
            _ => Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "TLS handshake failed or timed out",
            ))),
        }
    }
}

impl AsyncRead for Handshaking {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        ready!(self.get_mut().poll_ready(cx))?.poll_read(cx, buf)
    }
}

impl AsyncWrite for Handshaking {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        ready!(self.get_mut().poll_ready(cx))?.poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        ready!(self.get_mut().poll_ready(cx))?.poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        // tokio-rustls's stream writes vectored; asked before the handshake is done, too.
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        ready!(self.get_mut().poll_ready(cx))?.poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        ready!(self.get_mut().poll_ready(cx))?.poll_shutdown(cx)
    }
}
