//! Raw hyper 0.14, the release before hyper 1 (`hyper.rs`), through the renamed dependency
//! `hyper014`: a `service_fn` that routes on the path by hand (the same hand routing as
//! `hyper.rs`, [`AppState::route`]), with no static-file facility, and a hand-written logger
//! around [`Started`]. hyper 0.14 has no extractors: `/sum` parses the query with
//! [`handlers::operands_from_query`] (`/delay` with [`handlers::wait_from_query`], then waits on
//! tokio's timer), and `/upload` and `/json_in` collect the body with
//! `hyper::body::to_bytes` (no limit: hyper sets none), the JSON then read by serde_json.
//! In-process requests call the same function the service calls, with our `http` 1 request
//! converted to hyper 0.14's `http` 0.2 types and the response converted back; the server is
//! hyper 0.14's own `Server` on an `AddrIncoming` made from the listener, on a tokio runtime of
//! `threads` workers.

use std::convert::Infallible;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

use hyper014::server::conn::{AddrIncoming, AddrStream};
use hyper014::service::{make_service_fn, service_fn};
use hyper014::{Body, Method};

use crate::framework::{About, Config, Framework, Support, Request, Response, ServerHandle, Version};
use crate::handlers::{self, AppState, Reply, Routed};
use crate::logging::{self, Started};
use crate::options::{Protocol, KEEP_ALIVE};
use crate::store::AsyncStore;

use super::built::Built;

/// Raw hyper 0.14 behind the framebench trait.
pub(crate) struct Hyper014(Built<App>);

/// hyper 0.14's request and response (`http` 0.2 types).
type Req = hyper014::Request<Body>;
type Res = hyper014::Response<Body>;

/// What the service answers with: the state, and the log target when logging is on.
struct App {
    state: AppState<AsyncStore>,
    log: Option<&'static str>,
}

/// Builds the app: the state, and the logger when logging is on.
fn app(config: &Config) -> App {
    let log = logging::target(config.options.logging);
    if log.is_some() {
        logging::install();
    }
    App {
        state: AppState::new_async(config),
        log,
    }
}

impl Framework for Hyper014 {
    const NAME: &'static str = "hyper014";
    const CRATE: &'static str = "hyper";
    const VERSION_PREFIX: &'static str = "0.14.";
    const ABOUT: About = About {
        crate_label: Some("hyper (renamed `hyper014`)"),
        version: Version::Locked(""),
        companions: &[],
        static_files: "our own small static path",
        in_process: "the `service_fn`'s function called directly, `http` 1 ↔ 0.2 converted",
        server: "hyper 0.14 `Server` on an `AddrIncoming`, tokio with `--threads` workers",
    };
    const PER_CORE: bool = true;
    const COUNTS_REQUESTS: bool = true;
    const COUNTS_MESSAGES: bool = true;
    // Its `http2` feature brings h2 0.3, which the default build already has (actix-http's).
    const PROTOCOLS: &'static [(Protocol, Support)] = &[
        (Protocol::H2c, Support::Supported("hyper 0.14's `http2` feature and `Server::builder(..).http2_only(true)` under `--protocol h2c` (h2 0.3); `http1_only(true)` otherwise")),
        (Protocol::Ws, Support::Supported("tokio-tungstenite on `hyper::upgrade::on`, as hyper 0.14's `upgrades` example (hyper has no WebSocket layer)")),
    ];
    const CANNOT: &'static [(&'static str, &'static str)] = &[];

    fn build(config: &Config) -> anyhow::Result<Self> {
        Built::new(config, app).map(Hyper014)
    }

    fn dispatch(&self, req: Request) -> anyhow::Result<Response> {
        let req = to_hyper014(req)?;
        self.0.rt.block_on(async {
            let res = self.0.app.call(req, None).await;
            from_hyper014(res).await
        })
    }

    fn serve(&self, listener: TcpListener) -> anyhow::Result<ServerHandle> {
        // The server's own Redis pool: its connections live on the server's runtime.
        let app = Arc::new(app(&self.0.config));
        // Fairness: `serve --max-requests` counts in the per-request closure below; when no
        // limit is set that is one predictable branch per request, as for hyper 1.
        let limit = crate::server::limit::active();
        let h2c = self.0.config.options.protocol == Protocol::H2c;
        self.0.spawn(listener, move |listener, stop| {
            let app = Arc::clone(&app);
            async move {
                let Ok(mut incoming) = AddrIncoming::from_listener(listener) else {
                    return;
                };
                incoming.set_nodelay(true);
                let make = make_service_fn(move |conn: &AddrStream| {
                    let (app, peer) = (Arc::clone(&app), conn.remote_addr());
                    std::future::ready(Ok::<_, Infallible>(service_fn(move |req| {
                        let app = Arc::clone(&app);
                        async move {
                            let res = app.call(req, Some(peer)).await;
                            if let Some(limit) = limit {
                                limit.record();
                            }
                            Ok::<_, Infallible>(res)
                        }
                    })))
                });
                // hyper 0.14 has no idle keep-alive timeout; header_read_timeout bounds how
                // long a connection may wait for each request head, as for hyper 1.
                let builder =
                    hyper014::Server::builder(incoming).http1_header_read_timeout(KEEP_ALIVE);
                // One protocol per server, each through hyper 0.14's own switch: `http2_only`
                // under `--protocol h2c`, `http1_only` otherwise (as before its `http2` feature
                // was on; either call undoes the other, so only one is made).
                let builder = if h2c {
                    builder.http2_only(true)
                } else {
                    builder.http1_only(true)
                };
                let _ = builder
                    .serve(make)
                    .with_graceful_shutdown(std::future::IntoFuture::into_future(stop))
                    .await;
            }
        })
    }
}

impl App {
    /// One request: routed by hand, logged when logging is on.
    async fn call(&self, req: Req, peer: Option<SocketAddr>) -> Res {
        match self.log {
            None => self.route(req).await,
            // Fairness: tower-http's trace layer takes `http` 1 types and hyper 0.14 has no
            // logger of its own, so a hand-written one logs the line every hand-written logger
            // does, around the routing (docs/methodology/fairness.md).
            Some(target) => {
                let started =
                    Started::now(target, peer, req.method().as_str(), req.uri().to_string());
                let res = self.route(req).await;
                started.finish(res.status().as_u16());
                res
            }
        }
    }

    /// The hand routing hyper 1's app uses, answered as hyper 0.14's response: the query and
    /// body routes first, then every other path through [`AppState::route`], which answers GET
    /// only.
    async fn route(&self, req: Req) -> Res {
        let (method, uri) = (req.method(), req.uri());
        let get = method == Method::GET || method == Method::HEAD;
        let post = method == Method::POST;
        // Fairness: the routes that wait on I/O (Redis, a request body) or a timer are boxed,
        // as in hyper 1's app: inline, their futures (the pool, the command, the timer; the body
        // and its buffer) would make every request's future large, and the runtime copies a
        // future when it starts it (docs/methodology/fairness.md).
        match uri.path() {
            "/sum" => respond(sum(get, uri.query())),
            "/delay" => match (get, handlers::wait_from_query(uri.query())) {
                (false, _) => respond(Reply::error(405)),
                (true, None) => respond(Reply::error(400)),
                (true, Some(wait)) => Box::pin(delay(wait)).await,
            },
            "/upload" if post => Box::pin(upload(req.into_body())).await,
            "/json_in" if post => Box::pin(json_in(req.into_body())).await,
            "/upload" | "/json_in" => respond(Reply::error(405)),
            "/ws" if get => ws_echo(req),
            path => match self.state.route(get, path, uri.query()) {
                Routed::Ready(reply) => respond(reply),
                Routed::Redis(reply) => respond(Box::pin(reply).await),
            },
        }
    }
}

/// `GET /ws`: the WebSocket upgrade as hyper 0.14's `upgrades` example writes one, with
/// tokio-tungstenite on the upgraded connection (hyper 0.14's `Server` serves with upgrades).
fn ws_echo(mut req: Req) -> Res {
    use hyper014::header::{HeaderValue, CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, UPGRADE};
    let accept = super::tungstenite_echo::accept_key(
        req.headers().get(SEC_WEBSOCKET_KEY).map(HeaderValue::as_bytes),
        req.headers().get(UPGRADE).map(HeaderValue::as_bytes),
    );
    let Some(accept) = accept.and_then(|a| HeaderValue::from_str(&a).ok()) else {
        return respond(Reply::error(400));
    };
    let on_upgrade = hyper014::upgrade::on(&mut req);
    tokio::spawn(async move {
        if let Ok(upgraded) = on_upgrade.await {
            super::tungstenite_echo::echo(upgraded).await;
        }
    });
    let mut res = hyper014::Response::new(Body::empty());
    *res.status_mut() = hyper014::StatusCode::SWITCHING_PROTOCOLS;
    let h = res.headers_mut();
    h.insert(CONNECTION, HeaderValue::from_static("upgrade"));
    h.insert(UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(SEC_WEBSOCKET_ACCEPT, accept);
    res
}

/// `GET /sum?a=A&b=B`: the operands parsed from the raw query (hyper 0.14 has no query
/// extractor), 400 when one is missing or not a `u32`.
fn sum(get: bool, query: Option<&str>) -> Reply {
    if !get {
        return Reply::error(405);
    }
    handlers::operands_from_query(query).map_or_else(|| Reply::error(400), handlers::sum)
}

/// `POST /upload`: the whole body, collected with `hyper::body::to_bytes`, then digested; 400
/// when the body cannot be read.
async fn upload(body: Body) -> Res {
    respond(match hyper014::body::to_bytes(body).await {
        Ok(body) => handlers::upload(&body),
        Err(_) => Reply::error(400),
    })
}

/// `POST /json_in`: the whole body, collected with `hyper::body::to_bytes`, then deserialized
/// with serde_json; 400 when the body cannot be read or is not the operands' JSON.
async fn json_in(body: Body) -> Res {
    respond(match hyper014::body::to_bytes(body).await {
        Ok(body) => match serde_json::from_slice(&body) {
            Ok(operands) => handlers::json_in(operands),
            Err(_) => Reply::error(400),
        },
        Err(_) => Reply::error(400),
    })
}

/// `GET /delay?ms=N`, its wait parsed from the raw query (hyper 0.14 has no query extractor):
/// tokio's timer, the runtime hyper 0.14 serves on.
async fn delay(wait: handlers::Wait) -> Res {
    respond(handlers::delay(wait, tokio::time::sleep).await)
}

/// A [`Reply`] as hyper 0.14's response.
fn respond(reply: Reply) -> Res {
    let mut res = Res::new(Body::from(reply.body));
    *res.status_mut() =
        hyper014::StatusCode::from_u16(reply.status).unwrap_or(hyper014::StatusCode::NOT_FOUND);
    if let Some(content_type) = reply.content_type {
        res.headers_mut().insert(
            hyper014::header::CONTENT_TYPE,
            hyper014::header::HeaderValue::from_static(content_type),
        );
    }
    res
}

/// An `http` 1 request as hyper 0.14's (`http` 0.2), as its HTTP/1 decoder would hand it over.
// Fairness: the conversion is in the in-process time, as actix's is (docs/methodology/fairness.md).
fn to_hyper014(req: Request) -> anyhow::Result<Req> {
    let (parts, body) = req.into_parts();
    let mut builder = hyper014::Request::builder()
        .method(parts.method.as_str())
        .uri(parts.uri.to_string())
        .version(match parts.version {
            http::Version::HTTP_09 => hyper014::Version::HTTP_09,
            http::Version::HTTP_10 => hyper014::Version::HTTP_10,
            http::Version::HTTP_2 => hyper014::Version::HTTP_2,
            http::Version::HTTP_3 => hyper014::Version::HTTP_3,
            _ => hyper014::Version::HTTP_11,
        });
    for (name, value) in &parts.headers {
        builder = builder.header(name.as_str(), value.as_bytes());
    }
    Ok(builder.body(Body::from(body))?)
}

/// hyper 0.14's response as an `http` 1 response, its body collected.
async fn from_hyper014(res: Res) -> anyhow::Result<Response> {
    let (parts, body) = res.into_parts();
    let mut out = Response::new(hyper014::body::to_bytes(body).await?);
    *out.status_mut() = http::StatusCode::from_u16(parts.status.as_u16())?;
    for (name, value) in &parts.headers {
        out.headers_mut().append(
            http::HeaderName::from_bytes(name.as_str().as_bytes())?,
            http::HeaderValue::from_bytes(value.as_bytes())?,
        );
    }
    Ok(out)
}
