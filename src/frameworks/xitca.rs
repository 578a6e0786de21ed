//! xitca-web 0.8: an `App` of `handler_service` functions with the state built per worker by
//! `with_async_state`, `ServeDir` (feature `file`) for static files (io=disk), and, when logging
//! is on, a middleware of ours around the finished app that logs one line per response.
//! `app()` is the only place the app is built: in-process requests call the service it builds
//! (the `Service::call` xitca-http's HTTP/1 dispatcher makes per request) on a current-thread
//! runtime, without a socket, and `xitca_web::HttpServer` serves the same app on the listener.
//!
//! Threads: xitca-server starts `worker_threads(n)` worker threads, each with its own
//! current-thread tokio runtime and its own service built from the app, and one acceptor thread
//! (`server_threads(1)`, a one-worker tokio runtime) that hands connections to the workers;
//! `options.threads` is `n`. framebench adds one thread that waits on the server
//! (`ServerFuture::wait`) and stops it.

use std::convert::Infallible;
use std::net::TcpListener;
use std::thread;

use anyhow::anyhow;
use bytes::Bytes;
use xitca_web::body::{Body, RequestBody};
use xitca_web::error::{BodyError, MatchError, RouterError};
use xitca_web::handler::{
    handler_service, json::Json, params::ParamsRef, query::Query, state::StateRef, uri::UriRef,
    Responder,
};
use xitca_web::http::header::{HeaderValue, CONTENT_TYPE};
use xitca_web::http::{RequestExt, StatusCode, WebRequest, WebResponse};
use xitca_web::route::{get, post};
use xitca_web::service::file::ServeDir;
use xitca_web::service::ready::ReadyService;
use xitca_web::service::{Service, ServiceExt as _};
use xitca_web::{App, HttpServer, WebContext};

use crate::framework::{About, Config, Framework, Support, Request, Response, ServerHandle, Version};
use crate::handlers::{self, AppState, Operands, Reply, Wait};
use crate::logging::{self, Started};
use crate::options::{Io, Protocol, Transport, KEEP_ALIVE};
use crate::server;
use crate::server::limit::Limit;
use crate::store::AsyncStore;

/// xitca-web behind the framebench trait.
pub(crate) struct Xitca {
    config: Config,
    // Declared before `rt`, so the service is dropped while its runtime still exists.
    service: Box<dyn InProcess>,
    rt: tokio::runtime::Runtime,
}

/// What the handlers share: the app state.
type Shared = AppState<AsyncStore>;

/// Builds the app, finished: every route, and the logger when logging is on. `limit` counts
/// responses for `serve --max-requests`. What it returns builds one service per call: once per
/// worker, and once for in-process requests.
fn app(
    config: &Config,
    limit: Option<&'static Limit>,
) -> impl Service<
    Response = impl ReadyService
                   + Service<
        WebRequest,
        Response = WebResponse<
            impl Body<Data = Bytes, Error = impl Into<BodyError> + std::fmt::Debug> + 'static,
        >,
        Error = Infallible,
    >,
    Error = impl std::fmt::Debug,
> + Send
       + Sync
       + 'static {
    let target = logging::target(config.options.logging);
    if target.is_some() {
        logging::install();
    }
    let state_config = config.clone();
    let app = App::new()
        // One pool per service, so per worker: each worker has its own runtime, where its
        // connections' tasks run (docs/methodology/fairness.md).
        .with_async_state(move || {
            let state = AppState::new_async(&state_config);
            async move { Ok::<_, Infallible>(state) }
        })
        .at("/", get(handler_service(hello)))
        .at("/json", get(handler_service(json)))
        .at("/get", get(handler_service(redis_get)))
        .at("/template", get(handler_service(template)))
        .at("/paste/{name}", get(handler_service(paste)));
    let app = match config.options.io {
        // `ServeDir` routes `/static/{*p}` itself, and looks the request's whole path up under
        // its folder (it does not strip the route's prefix): its folder is the fixtures root,
        // whose `static/` is the static folder.
        Io::Disk => app.at(
            "/static",
            ServeDir::new(config.fixtures.root().to_path_buf()).enclosed_fn(nul_guard),
        ),
        Io::Memory => app.at("/static/{name}", get(handler_service(static_file))),
    };
    let app = app
        .at("/sum", get(handler_service(sum)))
        .at("/upload", post(handler_service(upload)))
        .at("/json_in", post(handler_service(json_in)))
        .at("/delay", get(handler_service(delay)))
        .at("/ws", get(handler_service(ws_echo)));
    app.finish().enclosed(Observe { target, limit })
}

impl Framework for Xitca {
    const NAME: &'static str = "xitca";
    const CRATE: &'static str = "xitca-web";
    const VERSION_PREFIX: &'static str = "0.8.";
    const ABOUT: About = About {
        crate_label: Some("xitca-web"),
        version: Version::Locked(""),
        companions: &[("xitca-http", "0.9."), ("xitca-server", "0.7.")],
        static_files: "`ServeDir` (feature `file`, behind a NUL guard)",
        in_process: "the service the finished `App` builds, called with a `WebRequest` built from ours",
        server: "`xitca_web::HttpServer` (xitca-server) on the listener with `--threads` workers, each a current-thread tokio runtime",
    };
    const COUNTS_REQUESTS: bool = true;
   const COUNTS_MESSAGES: bool = true;
    const PROTOCOLS: &'static [(Protocol, Support)] = &[
        (Protocol::H2c, Support::Supported("xitca-web's `http2` feature; `HttpServer::h2c_prior_knowledge` under `--protocol h2c` only")),
        (Protocol::H2, Support::Unsupported("framebench has not wired its TLS server to HTTP/2: its TLS path is xitca-http with the `http1` feature only")),
        (Protocol::Ws, Support::Supported("xitca-web's `websocket` feature (http-ws): `WebSocket::on_msg`")),
    ];
    const TRANSPORTS: &'static [(Transport, Support)] = &[(
        Transport::Tls,
        Support::Supported("xitca-http's rustls acceptor (`HttpServiceBuilder::rustls`, what `HttpServer::bind_rustls` builds) on xitca-server's `Builder::listen`"),
    )];
    const CANNOT: &'static [(&'static str, &'static str)] = &[];

    fn build(config: &Config) -> anyhow::Result<Self> {
        let rt = server::in_process_runtime()?;
        let service = rt.block_on(async {
            app(config, None)
                .call(())
                .await
                .map_err(|err| anyhow!("xitca app failed to build: {err:?}"))
        })?;
        Ok(Xitca {
            config: config.clone(),
            service: Box::new(service),
            rt,
        })
    }

    fn dispatch(&self, req: Request) -> anyhow::Result<Response> {
        self.service.dispatch(&self.rt, req)
    }

    fn serve(&self, listener: TcpListener) -> anyhow::Result<ServerHandle> {
        let addr = listener.local_addr()?;
        // Fairness: xitca-web's `HttpServer` does not set TCP_NODELAY and has no setting for it
        // (xitca-http's `SocketConfig` middleware has one, but `HttpServer` builds its HTTP
        // service itself); it is set on the listener, which Linux copies to every accepted
        // connection.
        server::nodelay_on_accepted(&listener)?;
        let app = app(&self.config, crate::server::limit::active());
        // xitca-server makes the listener non-blocking and registers it with its acceptor's
        // runtime itself. The backlog was set by whoever bound the listener.
        let threads = self.config.options.threads.max(1);
        let mut server = if self.config.options.transport == Transport::Tls {
            // TLS: what `HttpServer::bind_rustls` builds (xitca-http's rustls acceptor in front
            // of the app, on xitca-server's builder), on the run's listener and certificate:
            // xitca-web has no `listen_rustls`, and `bind_rustls` binds an address of its own.
            let http = xitca_http::HttpServiceBuilder::with_config(
                xitca_http::config::HttpServiceConfig::new()
                    .keep_alive_timeout(KEEP_ALIVE)
                    .tls_accept_timeout(crate::transport::tls::HANDSHAKE_TIMEOUT),
            )
            .rustls(crate::transport::tls::server_config(self.config.options.protocol)?);
            xitca_server::Builder::new()
                .worker_threads(threads)
                .server_threads(1)
                .disable_signal()
                .listen("xitca-web-rustls", listener, std::sync::Arc::new(app).enclosed(http))
                .build()
        } else {
            let mut server = HttpServer::serve(app)
                .worker_threads(threads)
                .server_threads(1)
                .keep_alive_timeout(KEEP_ALIVE)
                .disable_signal();
            if self.config.options.protocol == Protocol::H2c {
                // Each connection's first bytes are peeked for the HTTP/2 preface; an HTTP/1.1
                // run does not set this and never peeks (xitca-http's `peek_protocol`).
                server = server.h2c_prior_knowledge();
            }
            server.listen(listener)?.run()
        };
        // Fails if the listener could not be registered; the workers start building their
        // services now.
        let handle = server.handle()?;
        let waiter = thread::Builder::new()
            .name("fb-xitca-wait".into())
            .spawn(move || {
                // Returns once a stop command arrived and every worker thread was joined.
                let _ = server.wait();
            })?;
        let stop = move || {
            // Not graceful: open connections are closed, like framebench's own servers do.
            handle.stop(false);
        };
        Ok(ServerHandle::new(addr, stop, vec![waiter]))
    }
}

/// `GET /ws`: the WebSocket echo, as xitca-web's websocket example writes it at 0.8.1; xitca
/// answers a ping and a Close itself, and pings an idle client every 15 s.
async fn ws_echo(mut ws: xitca_web::handler::websocket::WebSocket) -> xitca_web::handler::websocket::WebSocket {
    use xitca_web::handler::websocket::Message;
    let limit = crate::server::limit::active();
    ws.on_msg(move |tx, msg| {
        Box::pin(async move {
            let (sent, echoed) = match msg {
                Message::Text(text) => (tx.text(text.into_inner()).await, true),
                Message::Binary(bin) => (tx.binary(bin).await, true),
                Message::Continuation(item) => (tx.continuation(item).await, false),
            };
            if let (Ok(_), true, Some(limit)) = (sent, echoed, limit) {
                limit.record_message();
            }
        })
    });
    ws
}

async fn hello() -> Reply {
    handlers::hello()
}

async fn json() -> Reply {
    handlers::json()
}

async fn redis_get(StateRef(state): StateRef<'_, Shared>, UriRef(uri): UriRef<'_>) -> Reply {
    state.redis_get(uri.query()).await
}

async fn template(StateRef(state): StateRef<'_, Shared>) -> Reply {
    state.template()
}

async fn paste(StateRef(state): StateRef<'_, Shared>, params: ParamsRef<'_>) -> Reply {
    state.paste(params.get("name").unwrap_or_default())
}

async fn static_file(StateRef(state): StateRef<'_, Shared>, params: ParamsRef<'_>) -> Reply {
    state.static_file(params.get("name").unwrap_or_default())
}

/// `Query` (feature `urlencoded`) rejects missing or non-`u32` operands with 400.
async fn sum(Query(ops): Query<Operands>) -> Reply {
    handlers::sum(ops)
}

/// `Vec<u8>` reads the whole body, Content-Length or chunked, with no limit (`Limit<0>`).
async fn upload(body: Vec<u8>) -> Reply {
    handlers::upload(&body)
}

/// `Json` (feature `json`) wants a `Content-Type` header (400 without one, whatever its value),
/// reads up to its default limit (1 MiB, 400 above it) and answers a body it cannot deserialize
/// with 400.
async fn json_in(Json(ops): Json<Operands>) -> Reply {
    handlers::json_in(ops)
}

/// `Query` rejects an `ms` that is not a `u64` with 400; the wait is tokio's timer, the
/// current-thread runtime each xitca worker runs.
async fn delay(Query(wait): Query<Wait>) -> Reply {
    handlers::delay(wait, tokio::time::sleep).await
}

impl<'r, C, B> Responder<WebContext<'r, C, B>> for Reply {
    type Response = WebResponse;
    type Error = Infallible;

    async fn respond(self, ctx: WebContext<'r, C, B>) -> Result<WebResponse, Infallible> {
        let mut res = ctx.into_response(self.body);
        *res.status_mut() = StatusCode::from_u16(self.status).unwrap_or(StatusCode::NOT_FOUND);
        if let Some(content_type) = self.content_type {
            res.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
        }
        Ok(res)
    }
}

/// Answers 404 (as `ServeDir` answers a missing file) to a static request whose path decodes to
/// a NUL byte, before `ServeDir` sees it.
// Fairness: `ServeDir` percent-decodes the path and passes one with a NUL byte to the file
// system, whose error it answers with a 500; every other request goes to it unchanged. The check
// costs one pass over the path per static request, as gotham's, iron's, warp's and salvo's
// guards do (docs/methodology/fairness.md).
async fn nul_guard<S, C, B, Res>(
    service: &S,
    ctx: WebContext<'_, C, B>,
) -> Result<Res, RouterError<xitca_web::error::Error>>
where
    S: for<'r> Service<
        WebContext<'r, C, B>,
        Response = Res,
        Error = RouterError<xitca_web::error::Error>,
    >,
{
    if crate::fixtures::decodes_to_nul(ctx.req().uri().path()) {
        return Err(RouterError::Match(MatchError));
    }
    service.call(ctx).await
}

/// A middleware around the finished app: logs one line per response to the variant's target
/// and counts responses for `serve --max-requests`, each only when asked for.
// Fairness: xitca-web's own `Logger` (feature `logger`) logs through `tracing` under its own
// target and installs a global subscriber of its own; this middleware logs the line every
// hand-written logger does. It is always in place: with logging off and no limit, every
// request passes two `Option` checks (docs/methodology/fairness.md).
#[derive(Clone, Copy)]
struct Observe {
    target: Option<&'static str>,
    limit: Option<&'static Limit>,
}

impl<S, E> Service<Result<S, E>> for Observe {
    type Response = Observed<S>;
    type Error = E;

    async fn call(&self, res: Result<S, E>) -> Result<Observed<S>, E> {
        res.map(|service| Observed {
            service,
            observe: *self,
        })
    }
}

/// The app's service, observed.
struct Observed<S> {
    service: S,
    observe: Observe,
}

impl<S, ResB> Service<WebRequest> for Observed<S>
where
    S: Service<WebRequest, Response = WebResponse<ResB>, Error = Infallible>,
{
    type Response = WebResponse<ResB>;
    type Error = Infallible;

    async fn call(&self, req: WebRequest) -> Result<WebResponse<ResB>, Infallible> {
        let started = self.observe.target.map(|target| {
            let peer = *req.body().socket_addr();
            Started::now(
                target,
                Some(peer).filter(|p| !p.ip().is_unspecified()),
                req.method().as_str(),
                req.uri().to_string(),
            )
        });
        let res = self.service.call(req).await?;
        if let Some(started) = started {
            started.finish(res.status().as_u16());
        }
        if let Some(limit) = self.observe.limit {
            limit.record();
        }
        Ok(res)
    }
}

impl<S: ReadyService> ReadyService for Observed<S> {
    type Ready = S::Ready;

    async fn ready(&self) -> S::Ready {
        self.service.ready().await
    }
}

/// The in-process service, type-erased: `app()` builds an unnameable type.
trait InProcess {
    /// Runs one request through the app on `rt` and collects the response.
    fn dispatch(&self, rt: &tokio::runtime::Runtime, req: Request) -> anyhow::Result<Response>;
}

impl<S, ResB> InProcess for S
where
    S: Service<WebRequest, Response = WebResponse<ResB>, Error = Infallible>,
    ResB: Body<Data = Bytes>,
    ResB::Error: Into<BodyError> + std::fmt::Debug,
{
    fn dispatch(&self, rt: &tokio::runtime::Runtime, req: Request) -> anyhow::Result<Response> {
        rt.block_on(async {
            // The request as xitca-http's HTTP/1 decoder hands it on: its head, and the peer
            // (none: unspecified, as for a request without a socket) and body in `RequestExt`.
            let (parts, body) = req.into_parts();
            let body = if body.is_empty() {
                RequestBody::default()
            } else {
                RequestBody::from(body)
            };
            let ext = RequestExt::<()>::default().map_body(|()| body);
            let res = match self.call(WebRequest::from_parts(parts, ext)).await {
                Ok(res) => res,
                Err(never) => match never {},
            };
            let (parts, body) = res.into_parts();
            let body = xitca_web::test::collect_body(body)
                .await
                .map_err(|err| anyhow!("body: {err:?}"))?;
            Ok(Response::from_parts(parts, Bytes::from(body)))
        })
    }
}
