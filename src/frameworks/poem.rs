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
use std::sync::Arc;

use poem::endpoint::{BoxEndpoint, StaticFilesEndpoint};
use poem::http::header::CONTENT_TYPE;
use poem::http::{HeaderValue, StatusCode, Uri};
use poem::listener::Acceptor;
use poem::web::{Data, Json, LocalAddr, Path, Query, RemoteAddr};
use poem::{get, handler, post, Endpoint, EndpointExt as _, IntoResponse, Route, Server};

use crate::framework::{About, Config, Framework, Protocol, Support, Request, Response, ServerHandle, Version};
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
    const PROTOCOLS: &'static [(Protocol, Support)] = &[
        (Protocol::H2c, Support::Supported("`poem::Server` (hyper-util's auto builder, always built: it reads the preface on every connection, HTTP/1.1 ones too)")),
        (Protocol::Ws, Support::Supported("poem's `websocket` feature: `WebSocket::on_upgrade` (tokio-tungstenite)")),
    ];
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
        self.0.spawn(listener, move |listener, stop| {
            let endpoint = Arc::clone(&endpoint);
            async move {
                let Ok(acceptor) = NoDelay::new(listener) else {
                    return;
                };
                let _ = Server::new_with_acceptor(acceptor)
                    .idle_timeout(KEEP_ALIVE)
                    .run_with_graceful_shutdown(endpoint, stop.into_future(), Some(crate::options::GRACE))
                    .await;
            }
        })
    }
}

/// `GET /ws`: the WebSocket echo, as poem's `websocket` docs write it; tungstenite under it
/// answers a ping and a Close by itself.
#[handler]
async fn ws_echo(ws: poem::web::websocket::WebSocket) -> impl poem::IntoResponse {
    use futures_util::{SinkExt as _, StreamExt as _};
    use poem::web::websocket::Message;
    ws.on_upgrade(|mut socket| async move {
        while let Some(Ok(msg)) = socket.next().await {
            if matches!(msg, Message::Text(_) | Message::Binary(_)) && socket.send(msg).await.is_err() {
                break;
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
