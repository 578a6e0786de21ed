//! Raw hyper 1 with hyper-util: a `service_fn` that routes on the path by hand
//! ([`AppState::route`], shared with hyper 0.14), with a small static-file path of our own, and
//! tower-http's trace layer for logging. hyper has no extractors: `/sum` parses the query with
//! [`handlers::operands_from_query`] (`/delay` with [`handlers::wait_from_query`], then waits on
//! tokio's timer), and `/upload` and `/json_in` collect the body with
//! http-body-util's `BodyExt::collect` (no limit: hyper sets none), the JSON then read by
//! serde_json. In-process requests call the service directly; the server runs hyper's HTTP/1.1
//! connection per accepted socket, or under `--protocol h2c` its HTTP/2 one (no sniffing: the
//! listener speaks one protocol).

use std::convert::Infallible;
use std::future::Future;
use std::net::TcpListener;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Body;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tower::{Layer as _, Service, ServiceExt as _};

use crate::framework::{About, Config, Framework, Support, Request, Response, ServerHandle, Version};
use crate::handlers::{self, AppState, Reply, Routed};
use crate::logging::{self, Peer};
use crate::options::{Logging, Protocol, Transport, KEEP_ALIVE};
use crate::store::AsyncStore;

use super::built::Built;

/// Raw hyper behind the framebench trait.
pub(crate) struct Hyper(Built<Arc<AppState<AsyncStore>>>);

/// The response every route gives.
type Res = http::Response<Full<Bytes>>;

/// The whole app: one service routing on the path. The query and body routes come first; every
/// other path goes to [`AppState::route`], which answers GET only.
fn app<B>(
    state: Arc<AppState<AsyncStore>>,
) -> impl Service<http::Request<B>, Response = Res, Error = Infallible, Future = RouteFuture>
       + Clone
       + Send
where
    B: Body + Send + 'static,
    B::Data: Send,
{
    tower::service_fn(move |req: http::Request<B>| {
        let (method, uri) = (req.method(), req.uri());
        let get = method == http::Method::GET || method == http::Method::HEAD;
        let post = method == http::Method::POST;
        // Fairness: the routes that wait on I/O (Redis, a request body) or a timer are boxed
        // futures; every other route stays a ready value (docs/methodology/fairness.md).
        match uri.path() {
            "/sum" => RouteFuture::Ready(Some(respond(sum(get, uri.query())))),
            "/delay" => delay(get, uri.query()),
            "/upload" if post => RouteFuture::Boxed(Box::pin(upload(req.into_body()))),
            "/json_in" if post => RouteFuture::Boxed(Box::pin(json_in(req.into_body()))),
            "/upload" | "/json_in" => RouteFuture::Ready(Some(respond(Reply::error(405)))),
            "/ws" if get => RouteFuture::Ready(Some(ws_echo(req))),
            path => match state.route(get, path, uri.query()) {
                Routed::Ready(reply) => RouteFuture::Ready(Some(respond(reply))),
                Routed::Redis(reply) => {
                    RouteFuture::Boxed(Box::pin(async move { respond(reply.await) }))
                }
            },
        }
    })
}

impl Framework for Hyper {
    const NAME: &'static str = "hyper";
    const CRATE: &'static str = "hyper";
    const VERSION_PREFIX: &'static str = "1.";
    const ABOUT: About = About {
        crate_label: None,
        version: Version::Locked(""),
        companions: &[("hyper-util", "0.1.")],
        static_files: "our own small static path",
        in_process: "the service called directly",
        server: "hyper `http1` connections on tokio with `--threads` workers",
    };
    const PER_CORE: bool = true;
    const COUNTS_REQUESTS: bool = true;
    const COUNTS_MESSAGES: bool = true;
    const PROTOCOLS: &'static [(Protocol, Support)] = &[
        (Protocol::H2c, Support::Supported("hyper `http2::Builder` connections on a listener of their own, HTTP/2 only")),
        (Protocol::H2, Support::Supported("hyper `http2::Builder` on each tokio-rustls stream, ALPN `h2` only")),
        (Protocol::Ws, Support::Supported("tokio-tungstenite on `hyper::upgrade::on`, as its `server-custom-accept` example (hyper has no WebSocket layer); connections served with upgrades under `--protocol ws` only")),
    ];
    const TRANSPORTS: &'static [(Transport, Support)] = &[(
        Transport::Tls,
        Support::Supported("tokio-rustls `TlsAcceptor` before hyper's `http1::Builder`, a task per handshake"),
    )];
    const CANNOT: &'static [(&'static str, &'static str)] = &[];

    fn build(config: &Config) -> anyhow::Result<Self> {
        Built::new(config, |config| Arc::new(AppState::new_async(config))).map(Hyper)
    }

    fn dispatch(&self, req: Request) -> anyhow::Result<Response> {
        let req = req.map(Full::new);
        let state = Arc::clone(&self.0.app);
        self.0.rt.block_on(async move {
            let res = match self.0.config.options.logging {
                Logging::Off => app(state).oneshot(req).await?,
                logging => {
                    let (parts, body) =
                        logging::trace::layer(logging, logging::trace::peer_extension)
                            .layer(app(state))
                            .oneshot(req)
                            .await?
                            .into_parts();
                    http::Response::from_parts(parts, Full::new(body.collect().await?.to_bytes()))
                }
            };
            super::built::collected(res).await
        })
    }

    fn serve(&self, listener: TcpListener) -> anyhow::Result<ServerHandle> {
        // The server's own Redis pool: its connections live on the server's runtime.
        let state = Arc::new(AppState::new_async(&self.0.config));
        let logging = self.0.config.options.logging;
        let h2c = self.0.config.options.protocol == Protocol::H2c;
        let h2 = self.0.config.options.protocol == Protocol::H2;
        // Under WebSocket the HTTP/1.1 connection is served with upgrades, which
        // hyper-util's graceful stop cannot watch: such a connection is not waited for.
        let ws = self.0.config.options.protocol == Protocol::Ws;
        // TLS: tokio-rustls's acceptor in front of the same builder, as hyper's examples
        // (hyper-util's and tokio-rustls's) show it.
        let tls = match self.0.config.options.transport {
            Transport::Tls => Some(crate::transport::tls::acceptor(self.0.config.options.protocol)?),
            Transport::Tcp => None,
        };
        // Fairness: `serve --max-requests` counts in the per-request closure below; when no
        // limit is set that is one predictable branch per request (docs/methodology/callgrind.md).
        let limit = crate::server::limit::active();
        self.0.spawn(listener, move |listener, stop| {
            let state = Arc::clone(&state);
            let tls = tls.clone();
            super::accept::until_stopped(listener, stop, move |stream, peer, graceful| {
                let app = tower::service_fn({
                    let state = state.clone();
                    move |mut req: http::Request<hyper::body::Incoming>| {
                        req.extensions_mut().insert(Peer(peer));
                        if let Some(limit) = limit {
                            limit.record();
                        }
                        app(Arc::clone(&state)).oneshot(req)
                    }
                });
                if let Some(acceptor) = &tls {
                    super::accept::tls(acceptor, stream, graceful, move |io, watcher| async move {
                        // Both protocols' builders, serving the service logging or not.
                        macro_rules! serve_tls {
                            ($builder:expr) => {{
                                let builder = $builder;
                                match logging {
                                    Logging::Off => {
                                        let svc = TowerToHyperService::new(app);
                                        let _ =
                                            watcher.watch(builder.serve_connection(io, svc)).await;
                                    }
                                    logging => {
                                        let svc = TowerToHyperService::new(
                                            logging::trace::layer(
                                                logging,
                                                logging::trace::peer_extension,
                                            )
                                            .layer(app),
                                        );
                                        let _ =
                                            watcher.watch(builder.serve_connection(io, svc)).await;
                                    }
                                }
                            }};
                        }
                        match h2 {
                            true => serve_tls!(http2_builder()),
                            false => serve_tls!(http1_builder()),
                        }
                    });
                    return;
                }
                let io = TokioIo::new(stream);
                // Each connection is served on a task, watched for the graceful stop, with
                // the service logging or not: the same for both protocols' builders.
                macro_rules! serve_on {
                    ($builder:expr) => {{
                        match logging {
                            Logging::Off => {
                                let conn = graceful.watch(
                                    $builder.serve_connection(io, TowerToHyperService::new(app)),
                                );
                                tokio::spawn(async move {
                                    let _ = conn.await;
                                });
                            }
                            logging => {
                                let svc =
                                    logging::trace::layer(logging, logging::trace::peer_extension)
                                        .layer(app);
                                let conn = graceful.watch(
                                    $builder.serve_connection(io, TowerToHyperService::new(svc)),
                                );
                                tokio::spawn(async move {
                                    let _ = conn.await;
                                });
                            }
                        }
                    }};
                }
                if ws {
                    let builder = http1_builder();
                    match logging {
                        Logging::Off => {
                            let conn = builder
                                .serve_connection(io, TowerToHyperService::new(app))
                                .with_upgrades();
                            tokio::spawn(async move {
                                let _ = conn.await;
                            });
                        }
                        logging => {
                            let svc =
                                logging::trace::layer(logging, logging::trace::peer_extension)
                                    .layer(app);
                            let conn = builder
                                .serve_connection(io, TowerToHyperService::new(svc))
                                .with_upgrades();
                            tokio::spawn(async move {
                                let _ = conn.await;
                            });
                        }
                    }
                    return;
                }
                if h2c {
                    serve_on!(http2_builder());
                } else {
                    serve_on!(http1_builder());
                }
            })
        })
    }
}

/// hyper's HTTP/2 connection builder, for h2c with prior knowledge and for h2 after ALPN: HTTP/2
/// only, on hyper's defaults (200 streams, 1 MiB windows), what `http2::Builder` gives.
fn http2_builder() -> hyper::server::conn::http2::Builder<TokioExecutor> {
    let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    builder.timer(TokioTimer::new());
    builder
}

/// hyper's HTTP/1.1 connection builder, over TCP and over TLS alike. hyper 1 has no idle
/// keep-alive timeout; header_read_timeout bounds how long a connection may wait for each
/// request head (docs/methodology/loopback.md).
fn http1_builder() -> hyper::server::conn::http1::Builder {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(KEEP_ALIVE);
    builder
}

/// `GET /sum?a=A&b=B`: the operands parsed from the raw query (hyper has no query extractor),
/// 400 when one is missing or not a `u32`.
fn sum(get: bool, query: Option<&str>) -> Reply {
    if !get {
        return Reply::error(405);
    }
    handlers::operands_from_query(query).map_or_else(|| Reply::error(400), handlers::sum)
}

/// `POST /upload`: the whole body, collected with `BodyExt::collect`, then digested; 400 when
/// the body cannot be read.
async fn upload<B: Body>(body: B) -> Res {
    respond(match body.collect().await {
        Ok(body) => handlers::upload(&body.to_bytes()),
        Err(_) => Reply::error(400),
    })
}

/// `POST /json_in`: the whole body, collected with `BodyExt::collect`, then deserialized with
/// serde_json; 400 when the body cannot be read or is not the operands' JSON.
async fn json_in<B: Body>(body: B) -> Res {
    respond(match body.collect().await {
        Ok(body) => match serde_json::from_slice(&body.to_bytes()) {
            Ok(operands) => handlers::json_in(operands),
            Err(_) => Reply::error(400),
        },
        Err(_) => Reply::error(400),
    })
}

/// `GET /delay?ms=N`: the wait parsed from the raw query (hyper has no query extractor), 400
/// when `ms` is not a `u64`, then tokio's timer, the runtime hyper serves on.
fn delay(get: bool, query: Option<&str>) -> RouteFuture {
    match (get, handlers::wait_from_query(query)) {
        (false, _) => RouteFuture::Ready(Some(respond(Reply::error(405)))),
        (true, None) => RouteFuture::Ready(Some(respond(Reply::error(400)))),
        (true, Some(wait)) => RouteFuture::Boxed(Box::pin(async move {
            respond(handlers::delay(wait, tokio::time::sleep).await)
        })),
    }
}

/// The future of one request: ready for every route but those that wait on I/O (`/get` on
/// Redis, `/upload` and `/json_in` on the body) or a timer (`/delay`).
enum RouteFuture {
    Ready(Option<Res>),
    Boxed(Pin<Box<dyn Future<Output = Res> + Send>>),
}

impl Future for RouteFuture {
    type Output = Result<Res, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            RouteFuture::Ready(res) => {
                Poll::Ready(Ok(res.take().expect("polled after completion")))
            }
            RouteFuture::Boxed(fut) => fut.as_mut().poll(cx).map(Ok),
        }
    }
}

/// `GET /ws`: the WebSocket upgrade as tokio-tungstenite's `server-custom-accept` example
/// writes it on hyper 1 (hyper has no WebSocket layer): the `101` by hand, and the upgraded
/// connection (`hyper::upgrade::on`, which needs the connection served with upgrades: under
/// `--protocol ws`) to tokio-tungstenite on a task of its own.
fn ws_echo<B: Send + 'static>(mut req: http::Request<B>) -> Res {
    use http::header::{CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, UPGRADE};
    let accept = super::tungstenite_echo::accept_key(
        req.headers().get(SEC_WEBSOCKET_KEY).map(http::HeaderValue::as_bytes),
        req.headers().get(UPGRADE).map(http::HeaderValue::as_bytes),
    );
    let Some(accept) = accept.and_then(|a| http::HeaderValue::from_str(&a).ok()) else {
        return respond(Reply::error(400));
    };
    let on_upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        if let Ok(upgraded) = on_upgrade.await {
            super::tungstenite_echo::echo(TokioIo::new(upgraded)).await;
        }
    });
    let mut res = http::Response::new(Full::new(Bytes::new()));
    *res.status_mut() = http::StatusCode::SWITCHING_PROTOCOLS;
    let h = res.headers_mut();
    h.insert(CONNECTION, http::HeaderValue::from_static("upgrade"));
    h.insert(UPGRADE, http::HeaderValue::from_static("websocket"));
    h.insert(SEC_WEBSOCKET_ACCEPT, accept);
    res
}

/// A [`Reply`] as hyper's response.
fn respond(reply: Reply) -> Res {
    let mut res = http::Response::new(Full::new(reply.body));
    *res.status_mut() =
        http::StatusCode::from_u16(reply.status).unwrap_or(http::StatusCode::NOT_FOUND);
    if let Some(content_type) = reply.content_type {
        res.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static(content_type),
        );
    }
    res
}
