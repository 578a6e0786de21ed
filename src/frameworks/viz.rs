//! viz 0.11: a `Router` of async handler functions with the state attached by viz's `State`
//! middleware, viz's `Query` and `Json` extractors and `RequestExt::bytes` for the query and
//! body routes, viz-handlers' `serve::Dir` for static files (io=disk), and, when logging is on, a
//! `with_handler` middleware (viz's `around`) that logs one line per response. `app()` is the
//! only place the router is built: in-process requests go through the route tree the way viz's
//! own `Responder` sends a request from hyper (find the route, attach its parameters, call its
//! handler, turn an error into its response), on a current-thread runtime, without a socket;
//! `viz::serve` runs the same tree on the listener with a tokio runtime of `threads` workers.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

use hyper_util::rt::TokioExecutor;
use hyper_util::server::conn::auto::Builder;
use viz::handlers::serve::Dir;
use viz::types::{Json, Query, RouteInfo, State};
use viz::{
    Body, Handler, HandlerExt as _, IntoHandler as _, IntoResponse, Method, Next, Request,
    RequestExt as _, Response, ResponseExt as _, Router, StatusCode, Tree,
};

use crate::framework::ServerHandle;
use crate::framework::{About, Config, Framework, Protocol, Support, Request as FbRequest, Response as FbResponse, Version};
use crate::handlers::{self, AppState, Operands, Reply, Wait};
use crate::logging::{self, Started};
use crate::options::{Io, KEEP_ALIVE};
use crate::server;
use crate::store::AsyncStore;

use super::built::Built;

/// viz behind the framebench trait.
pub(crate) struct Viz(Built<Tree>);

/// What the handlers share, as request state.
type Shared = Arc<AppState<AsyncStore>>;

/// Builds the router: every route, and the logger when logging is on.
fn app(config: &Config) -> Router {
    // One pool per router: in-process and served requests run on different runtimes.
    let state: Shared = Arc::new(AppState::new_async(config));
    let router = Router::new()
        .get("/", hello)
        .get("/json", json)
        .get("/get", redis_get)
        .get("/template", template)
        .get("/paste/:name", paste);
    let router = match config.options.io {
        Io::Disk => router.get(
            "/static/*",
            // Fairness: `Dir` percent-decodes the path and answers a NUL byte with a 500 from
            // the file system; the guard answers 404 first (docs/methodology/fairness.md).
            Dir::new(config.fixtures.static_dir()).around(nul_guard),
        ),
        Io::Memory => router.get("/static/:name", static_file),
    };
    let router = router
        .get("/sum", sum.into_handler())
        .post("/upload", upload)
        .post("/json_in", json_in.into_handler())
        .get("/delay", delay.into_handler())
        .get("/ws", ws_echo);
    // viz answers a path no route matches itself, before any middleware; a catch-all route,
    // viz's way to own the 404, lets the logger see it as every other logger does.
    let router = router.any("/*", not_found).with(State::new(state));
    match logging::target(config.options.logging) {
        None => router,
        // Fairness: viz ships no request logger (its otel middleware exports spans); a
        // `with_handler` middleware, viz's way to wrap every route, logs the line every
        // hand-written logger does (docs/methodology/fairness.md).
        Some(target) => {
            logging::install();
            router.with_handler(
                move |(req, next): Next<Request, viz::BoxHandler>| async move {
                    let started = Started::now(
                        target,
                        req.remote_addr().copied(),
                        req.method().as_str(),
                        req.uri().to_string(),
                    );
                    let res = next
                        .call(req)
                        .await
                        .unwrap_or_else(IntoResponse::into_response);
                    started.finish(res.status().as_u16());
                    Ok(res)
                },
            )
        }
    }
}

impl Framework for Viz {
    const NAME: &'static str = "viz";
    const CRATE: &'static str = "viz";
    const VERSION_PREFIX: &'static str = "0.11.";
    const ABOUT: About = About {
        crate_label: None,
        version: Version::Locked(""),
        companions: &[("viz-handlers", "0.11.")],
        static_files: "viz-handlers `serve::Dir` (behind a NUL guard)",
        in_process: "the route tree (`Tree::find` + the handler), as viz's `Responder` does",
        server: "`viz::Server` (hyper-util) on tokio with `--threads` workers",
    };
    const PER_CORE: bool = true;
    const COUNTS_REQUESTS: bool = true;
   const COUNTS_MESSAGES: bool = true;
    const PROTOCOLS: &'static [(Protocol, Support)] = &[
        (Protocol::H2c, Support::Supported("`viz::Server` with hyper-util's auto builder (always built: it reads the preface on every connection, HTTP/1.1 ones too)")),
        (Protocol::Ws, Support::Supported("viz's `websocket` feature: the `WebSocket` extractor and `on_upgrade` (tokio-tungstenite)")),
    ];
    const CANNOT: &'static [(&'static str, &'static str)] = &[];

    fn build(config: &Config) -> anyhow::Result<Self> {
        Built::new(config, |config| app(config).into()).map(Viz)
    }

    fn dispatch(&self, req: FbRequest) -> anyhow::Result<FbResponse> {
        self.0.rt.block_on(async {
            let res = respond(
                &self.0.app,
                req.map(|body| Body::from(http_body_util::Full::new(body))),
            )
            .await;
            super::built::collected(res).await
        })
    }

    fn serve(&self, listener: TcpListener) -> anyhow::Result<ServerHandle> {
        let router = app(&self.0.config);
        // `serve --max-requests`: the counting middleware exists only when a limit is set.
        let router = match crate::server::limit::active() {
            Some(limit) => router.with_handler(
                move |(req, next): Next<Request, viz::BoxHandler>| async move {
                    let res = next.call(req).await;
                    limit.record();
                    res
                },
            ),
            None => router,
        };
        // Fairness: viz's listener does not set TCP_NODELAY and has no setting for it; it is set
        // on the listener, which Linux copies to every accepted connection.
        server::nodelay_on_accepted(&listener)?;
        self.0.spawn(listener, move |listener, stop| {
            let router = router.clone();
            async move {
                // viz's default builder (hyper-util's auto, which also answers HTTP/2 with
                // prior knowledge wherever the build turns on hyper's `http2`, as the default
                // build does through other frameworks: docs/history/http2-research.md; the
                // driver speaks HTTP/1.1, and the preface check costs once per connection) with the
                // keep-alive bound every server has: how long a connection may wait for a
                // request head.
                let mut builder = Builder::new(TokioExecutor::new());
                builder
                    .http1()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(KEEP_ALIVE);
                let server = viz::Server::with_builder(listener, router, builder)
                    .signal(std::future::IntoFuture::into_future(stop));
                let _ = server.await;
            }
        })
    }
}

/// One request through the route tree, as viz's `Responder` sends each request hyper reads: the
/// route for the method and path (GET's for HEAD), its parameters and the (absent) peer as extensions,
/// then its handler; an error becomes its response. `Responder` itself takes only hyper's
/// `Incoming` bodies, which nothing but a connection can make, so this is its body, copied.
async fn respond(tree: &Tree, mut req: Request) -> Response {
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let found = tree.find(&method, &path).or_else(|| {
        (method == Method::HEAD)
            .then(|| tree.find(&Method::GET, &path))
            .flatten()
    });
    let Some((handler, route)) = found else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let extensions = req.extensions_mut();
    // No peer: an in-process request has no socket (`Responder` inserts the connection's).
    extensions.insert(None::<Arc<SocketAddr>>);
    extensions.insert(Arc::new(RouteInfo {
        id: *route.id,
        pattern: route.pattern(),
        params: route.params().into(),
    }));
    let handler = handler.clone();
    handler
        .call(req)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn not_found(_: Request) -> viz::Result<Reply> {
    Ok(Reply::error(404))
}

/// `GET /ws`: the WebSocket echo, as viz's `websocket` docs write it; tungstenite under it
/// answers a ping and a Close by itself.
async fn ws_echo(mut req: Request) -> viz::Result<viz::Response> {
    use futures_util::{SinkExt as _, StreamExt as _};
    use viz::RequestExt as _;
    let ws = req.extract::<viz::types::WebSocket>().await?;
    Ok(ws.on_upgrade(|mut socket| async move {
        let limit = crate::server::limit::active();
        while let Some(Ok(msg)) = socket.next().await {
            if msg.is_text() || msg.is_binary() {
                if socket.send(msg).await.is_err() {
                    break;
                }
                if let Some(limit) = limit {
                    limit.record_message();
                }
            }
        }
    }))
}

async fn hello(_: Request) -> viz::Result<Reply> {
    Ok(handlers::hello())
}

async fn json(_: Request) -> viz::Result<Reply> {
    Ok(handlers::json())
}

async fn redis_get(req: Request) -> viz::Result<Reply> {
    Ok(shared(&req).redis_get(req.uri().query()).await)
}

async fn template(req: Request) -> viz::Result<Reply> {
    Ok(shared(&req).template())
}

async fn paste(req: Request) -> viz::Result<Reply> {
    let name: String = req.param("name").unwrap_or_default();
    Ok(shared(&req).paste(&name))
}

async fn static_file(req: Request) -> viz::Result<Reply> {
    let name: String = req.param("name").unwrap_or_default();
    Ok(shared(&req).static_file(&name))
}

/// `Query` rejects missing or non-`u32` operands with 400.
async fn sum(Query(ops): Query<Operands>) -> viz::Result<Reply> {
    Ok(handlers::sum(ops))
}

/// viz has no body extractor: `bytes` reads the whole body, Content-Length or chunked, with no
/// limit unless the app adds viz's `limits` middleware.
async fn upload(mut req: Request) -> viz::Result<Reply> {
    let body = req.bytes().await?;
    Ok(handlers::upload(&body))
}

/// `Json` wants a JSON content type (415 without it) and answers a body it cannot
/// deserialize with 400.
async fn json_in(Json(ops): Json<Operands>) -> viz::Result<Reply> {
    Ok(handlers::json_in(ops))
}

/// `Query` rejects an `ms` that is not a `u64` with 400; the wait is tokio's timer, the runtime
/// viz serves on.
async fn delay(Query(wait): Query<Wait>) -> viz::Result<Reply> {
    Ok(handlers::delay(wait, tokio::time::sleep).await)
}

/// The state viz's `State` middleware attached.
fn shared(req: &Request) -> Shared {
    req.state::<Shared>()
        .expect("the State middleware attaches the state before every handler")
}

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::NOT_FOUND);
        let mut res = match self.content_type {
            Some(content_type) => {
                Response::with(http_body_util::Full::new(self.body), content_type)
            }
            None => Response::new(Body::Empty),
        };
        *res.status_mut() = status;
        res
    }
}

/// Answers 404 (as `Dir` answers a missing file) to a static request whose path decodes to a
/// NUL byte, before `Dir` sees it.
async fn nul_guard((req, next): Next<Request, Dir>) -> viz::Result<Response> {
    if crate::fixtures::decodes_to_nul(req.uri().path()) {
        return Ok(StatusCode::NOT_FOUND.into_response());
    }
    next.call(req).await
}
