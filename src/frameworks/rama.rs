//! rama 0.3 (alpha): a web `Router` of async endpoint functions with the state as router state,
//! rama's `ServeDir` for static files (io=disk), and, when logging is on, rama's `TraceLayer`
//! (its fork of tower-http's) logging one line per response. `app()` is the only place the service is
//! built: in-process requests call the service (`Service::serve`, the call rama's HTTP server
//! makes per request) on a current-thread runtime, without a socket, and rama's `HttpServer`
//! serves the same service on the listener with a tokio runtime of `threads` workers.
//!
//! rama forks the `http` types (`rama::http::Request`, its own `HeaderMap`); an in-process
//! request is rebuilt in them from framebench's, as rama's server builds one from the wire.

use std::convert::Infallible;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use rama::graceful::Shutdown;
use rama::http::body::util::{BodyExt as _, Full};
use rama::http::header::CONTENT_TYPE;
use rama::http::layer::trace::TraceLayer;
use rama::http::service::fs::ServeDir;
use rama::http::service::web::extract::{Bytes, Json, Path, Query, State};
use rama::http::service::web::response::IntoResponse;
use rama::http::service::web::Router;
use rama::http::{Body, HeaderValue, StatusCode, Uri};
use rama::layer::MapOutputLayer;
use rama::net::stream::SocketInfo;
use rama::extensions::ExtensionsRef as _;
use rama::{Layer as _, Service};
use rama_http_backend::server::HttpServer;
use serde::Deserialize;
use tracing::Span;

use crate::framework::{About, Config, Framework, Support, Request, Response, ServerHandle, Version};
use crate::handlers::{self, AppState, Operands, Reply, Wait};
use crate::logging;
use crate::options::{Io, Logging, Protocol, KEEP_ALIVE};
use crate::server;
use crate::store::AsyncStore;

use super::built::Built;

/// rama behind the framebench trait.
pub(crate) struct Rama(Built<App>);

/// What the handlers share, as router state.
type Shared = Arc<AppState<AsyncStore>>;

/// The whole app, boxed: one type whatever the logging variant.
type App = rama::service::BoxService<rama::http::Request, rama::http::Response, Infallible>;

/// Builds the service: every route, and the trace layer when logging is on.
fn app(config: &Config) -> App {
    // One pool per service: in-process and served requests run on different runtimes.
    let state: Shared = Arc::new(AppState::new_async(config));
    let router = Router::new_with_state(state)
        .with_get("/", hello)
        .with_get("/json", json)
        .with_get("/get", redis_get)
        .with_get("/template", template)
        .with_get("/paste/{name}", paste)
        .with_get("/sum", sum)
        .with_post("/upload", upload)
        .with_post("/json_in", json_in)
        .with_get("/delay", delay)
        // The WebSocket echo: rama's own echo service behind its acceptor, as rama's
        // `ws_echo_server` example writes it (the router's endpoints take no errors).
        .with_get(
            "/ws",
            rama::layer::ConsumeErrLayer::trace(tracing::Level::DEBUG).into_layer(
                rama::http::ws::handshake::server::WebSocketAcceptor::new().into_echo_service(),
            ),
        );
    let router = match config.options.io {
        Io::Disk => router.with_sub_service(
            "/static",
            // Fairness: `ServeDir` answers a path that decodes to a NUL byte with a 500 from
            // the file system; the guard answers 404 first (docs/methodology/fairness.md).
            NulGuard(ServeDir::new(config.fixtures.static_dir())),
        ),
        Io::Memory => router.with_get("/static/{name}", static_file),
    };
    match config.options.logging {
        Logging::Off => router.boxed(),
        logging => {
            logging::install();
            // rama's own trace layer, routed to the variant's target: the span carries peer,
            // method and URI, the response event its status and latency. Its body wrapper is
            // boxed back into a `Body`, as rama's server boxes every response body.
            let traced = TraceLayer::new_for_http()
                .make_span_with(move |req: &rama::http::Request| span(logging, req))
                .on_request(())
                .on_response(move |res: &rama::http::Response, latency: Duration, span: &Span| {
                    logging::response_event(logging, res.status().as_u16(), latency, span);
                })
                .into_layer(router);
            MapOutputLayer::new(|res: rama::http::Response<_>| res.map(Body::new))
                .into_layer(traced)
                .boxed()
        }
    }
}

impl Framework for Rama {
    const NAME: &'static str = "rama";
    const CRATE: &'static str = "rama";
    const VERSION_PREFIX: &'static str = "0.3.";
    const ABOUT: About = About {
        crate_label: None,
        version: Version::Locked(""),
        companions: &[("rama-http-backend", "0.3.")],
        static_files: "`ServeDir` (behind a NUL guard)",
        in_process: "`Service::serve` on the service, the request rebuilt in rama's own `http` types",
        server: "rama's `HttpServer::http1` on its `TcpListener` (graceful), tokio with `--threads` workers",
    };
    const PER_CORE: bool = true;
    const COUNTS_REQUESTS: bool = true;
    const PROTOCOLS: &'static [(Protocol, Support)] = &[
        (Protocol::H2c, Support::Supported("`HttpServer::h2` (rama's own fork of h2 and of hyper's h2 server), on a listener of its own, HTTP/2 only")),
        (Protocol::Ws, Support::Supported("rama's `ws` feature: `WebSocketAcceptor::into_echo_service` (rama-ws, its fork of tungstenite)")),
    ];
    const CANNOT: &'static [(&'static str, &'static str)] = &[];

    fn build(config: &Config) -> anyhow::Result<Self> {
        Built::new(config, app).map(Rama)
    }

    fn dispatch(&self, req: Request) -> anyhow::Result<Response> {
        self.0.rt.block_on(async {
            let (parts, body) = req.into_parts();
            let mut builder = rama::http::Request::builder()
                .method(parts.method.as_str())
                .uri(parts.uri.to_string());
            for (name, value) in &parts.headers {
                builder = builder.header(name.as_str(), value.as_bytes());
            }
            let req = builder.body(Body::new(Full::new(body)))?;
            let Ok(res) = self.0.app.serve(req).await;
            let (parts, body) = res.into_parts();
            let mut out = http::Response::builder().status(parts.status.as_u16());
            for (name, value) in &parts.headers {
                out = out.header(name.as_str(), value.as_bytes());
            }
            let body = body
                .collect()
                .await
                .map_err(|err| anyhow::anyhow!("body: {err}"))?;
            Ok(out.body(body.to_bytes())?)
        })
    }

    fn serve(&self, listener: TcpListener) -> anyhow::Result<ServerHandle> {
        let service = app(&self.0.config);
        // `serve --max-requests`: the counting layer exists only when a limit is set.
        let service = match crate::server::limit::active() {
            Some(limit) => MapOutputLayer::new(move |res| {
                limit.record();
                res
            })
            .into_layer(service)
            .boxed(),
            None => service,
        };
        // Fairness: rama's TCP listener does not set TCP_NODELAY and has no setting for it; it
        // is set on the listener, which Linux copies to every accepted connection.
        server::nodelay_on_accepted(&listener)?;
        let h2c = self.0.config.options.protocol == Protocol::H2c;
        self.0.spawn(listener, move |listener, stop| {
            let service = service.clone();
            async move {
                let shutdown = Shutdown::new(std::future::IntoFuture::into_future(stop));
                let listener = rama::tcp::server::TcpListener::from(listener);
                shutdown.spawn_task_fn(async move |guard| {
                    if h2c {
                        // HTTP/2 with prior knowledge only, on rama's defaults (its fork of h2
                        // and of hyper's h2 server: 200 streams, 1 MiB windows).
                        let exec = rama::rt::Executor::graceful(guard.clone());
                        let http = HttpServer::h2(exec).service(service);
                        listener.serve_graceful(guard, http).await;
                        return;
                    }
                    let mut http = HttpServer::http1();
                    // The keep-alive bound every server has: how long a connection may wait
                    // for a request head (rama's fork of hyper's http1 builder).
                    http.http1_mut()
                        .set_header_read_timeout(KEEP_ALIVE);
                    let http = http.service(service);
                    listener.serve_graceful(guard, http).await;
                });
                let _ = shutdown.shutdown_with_limit(crate::options::GRACE).await;
            }
        })
    }
}

#[derive(Deserialize)]
struct Name {
    name: String,
}

async fn hello() -> Reply {
    handlers::hello()
}

async fn json() -> Reply {
    handlers::json()
}

async fn redis_get(State(state): State<Shared>, uri: Uri) -> Reply {
    state.redis_get(uri.query()).await
}

async fn template(State(state): State<Shared>) -> Reply {
    state.template()
}

async fn paste(State(state): State<Shared>, Path(Name { name }): Path<Name>) -> Reply {
    state.paste(&name)
}

async fn static_file(State(state): State<Shared>, Path(Name { name }): Path<Name>) -> Reply {
    state.static_file(&name)
}

/// `GET /sum?a=A&b=B`: rama's `Query` extractor (400 for a missing or bad operand).
async fn sum(Query(operands): Query<Operands>) -> Reply {
    handlers::sum(operands)
}

/// `POST /upload`: the body collected by rama's `Bytes` extractor.
async fn upload(Bytes(body): Bytes) -> Reply {
    handlers::upload(&body)
}

/// `POST /json_in`: rama's `Json` extractor (415 without a JSON content type, 400 for a bad
/// body); the answer is serialized by the handler, not by rama's `Json` responder.
async fn json_in(Json(operands): Json<Operands>) -> Reply {
    handlers::json_in(operands)
}

/// `GET /delay?ms=N`: rama's `Query` extractor (400 for an `ms` that is not a `u64`); the wait
/// is tokio's timer, the runtime rama serves on.
async fn delay(Query(wait): Query<Wait>) -> Reply {
    handlers::delay(wait, tokio::time::sleep).await
}

impl IntoResponse for Reply {
    fn into_response(self) -> rama::http::Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::NOT_FOUND);
        let mut res = match self.content_type {
            Some(content_type) => {
                let mut res = rama::http::Response::new(Body::new(Full::new(self.body)));
                res.headers_mut()
                    .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
                res
            }
            None => rama::http::Response::new(Body::empty()),
        };
        *res.status_mut() = status;
        res
    }
}

/// The span a request is logged under, with the peer rama's TCP server records.
fn span(logging: Logging, req: &rama::http::Request) -> Span {
    let peer = req.extensions().get::<SocketInfo>().map(|s| *s.peer_addr());
    logging::request_span(logging, peer, req.method(), req.uri())
}

/// Answers 404 (as `ServeDir` answers a missing file) to a static request whose path decodes to
/// a NUL byte, before `ServeDir` sees it.
struct NulGuard(ServeDir);

impl Service<rama::http::Request> for NulGuard {
    type Output = rama::http::Response;
    type Error = Infallible;

    async fn serve(&self, req: rama::http::Request) -> Result<Self::Output, Self::Error> {
        if crate::fixtures::decodes_to_nul(req.uri().path()) {
            return Ok(StatusCode::NOT_FOUND.into_response());
        }
        self.0.serve(req).await
    }
}
