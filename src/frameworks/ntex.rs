//! ntex 3 (on tokio): an `App` of `#[web::get]` handlers with the state as app state,
//! ntex-files' `Files` for static files (io=disk), and, when logging is on, a middleware of ours
//! that logs one line per response. `app()` is the only place the app is built: in-process
//! requests go through `ntex::web::test::init_service` on a current-thread tokio runtime with a
//! `LocalSet`, without a socket, and `HttpServer` calls the same function once per worker.
//!
//! Threads: `HttpServer::workers(n)` starts `n` worker threads (ntex arbiters), each with its
//! own single-threaded runtime and its own `App`, and ntex-server's acceptor thread hands them
//! connections; `options.threads` is `n`. framebench adds one thread that runs the ntex `System`
//! and the server's control future; stopping the server stops the `System`, which joins the
//! workers before that thread ends.
//!
//! Under `--protocol h2c` the same workers and `app()` serve `HttpService::h2` from an ntex
//! server built directly ([`start`]): `HttpServer` would answer a prior-knowledge preface as
//! HTTP/1.1.

use std::future::Future as _;
use std::net::TcpListener;
use std::pin::Pin;
use std::sync::mpsc;
use std::task::{Context, Poll};
use std::thread;

use anyhow::{anyhow, Context as _};
use bytes::Bytes;
use ntex::http::body::MessageBody as _;
use ntex::http::header::{HeaderValue, CONTENT_TYPE};
use ntex::http::{HttpService, HttpServiceConfig, Payload, PayloadStream, StatusCode};
use ntex::service::cfg::SharedCfg;
use ntex::service::{Middleware, Pipeline, Service, ServiceCtx};
use ntex::time::Seconds;
use ntex::web::types::{Json, Path, Query, State};
use ntex::web::{
    self, App, DefaultError, ErrorRenderer, HttpRequest, HttpResponse, HttpServer, WebRequest,
    WebResponse,
};
use ntex_files::Files;

use crate::framework::{About, Config, Framework, Support, Request, Response, ServerHandle, Version};
use crate::handlers::{self, AppState, Operands, Reply, Wait};
use crate::logging::{self, Started};
use crate::options::{Io, Protocol, Transport, KEEP_ALIVE};
use crate::server;
use crate::server::limit::Limit;
use crate::store::AsyncStore;

/// ntex behind the framebench trait.
pub(crate) struct Ntex {
    config: Config,
    // Declared before `local` and `rt`, so the service is dropped while its runtime exists.
    service: Box<dyn InProcess>,
    local: tokio::task::LocalSet,
    rt: tokio::runtime::Runtime,
}

/// What the handlers share, as app state.
type Shared = AppState<AsyncStore>;

/// The app's error: what ntex's default error renderer carries.
type AppError = <DefaultError as ErrorRenderer>::Container;

/// The app's middleware: ours around ntex's app service.
type Stack = web::stack::WebStack<ntex::service::Identity, Wrap<Observe>, DefaultError>;

/// A request as the app's services see it.
type AppRequest = WebRequest<DefaultError>;

/// Builds the app: every route, and the logger when logging is on. `limit` counts responses
/// for `serve --max-requests`.
fn app(
    config: &Config,
    limit: Option<&'static Limit>,
) -> App<
    Stack,
    impl ntex::service::ServiceFactory<
        AppRequest,
        SharedCfg,
        Response = AppRequest,
        Error = AppError,
        InitError = (),
    >,
> {
    let target = logging::target(config.options.logging);
    if target.is_some() {
        logging::install();
    }
    // One pool per `App`, so per worker: each worker has its own runtime, where its
    // connections' tasks run (docs/methodology/fairness.md).
    let app = App::new()
        .state(AppState::new_async(config))
        .service((hello, json, redis_get, template, paste));
    let app = match config.options.io {
        Io::Disk => app.service(
            web::scope("/static")
                .middleware(Wrap(TraversalGuard))
                .service(Files::new("/", config.fixtures.static_dir())),
        ),
        Io::Memory => app.service(static_file),
    };
    let app = app.service((sum, upload, json_in, delay, ws_echo));
    app.middleware(Wrap(Observe { target, limit }))
}

impl Framework for Ntex {
    const NAME: &'static str = "ntex";
    const CRATE: &'static str = "ntex";
    const VERSION_PREFIX: &'static str = "3.";
    const ABOUT: About = About {
        crate_label: None,
        version: Version::Locked("on tokio"),
        companions: &[("ntex-files", "3.")],
        static_files: "`ntex-files` (behind a traversal guard)",
        in_process: "`web::test::init_service` + `call`",
        server: "`HttpServer` with `--threads` workers",
    };
    // Not yet: under the loopback callgrind bench (libfaketime freezes the clock) the ntex
    // server did not stop after its requests, and the bench waited until killed. Until that is
    // understood, `serve --max-requests` refuses ntex and `callgrind_loopback` leaves it out;
    // the counting in `Observe` stays inert.
    const COUNTS_REQUESTS: bool = false;
    const PROTOCOLS: &'static [(Protocol, Support)] = &[
        (Protocol::H2c, Support::Supported("`HttpService::h2` on an ntex server of its own: a plaintext `HttpServer` never chooses HTTP/2 (ntex picks it from TLS ALPN)")),
        (Protocol::H2, Support::Supported("`HttpServer::listen_rustls`: ntex sets ALPN to `h2` and `http/1.1` itself and serves the one chosen")),
        (Protocol::Ws, Support::Supported("ntex's own WebSocket (`web::ws::start`, its `ws` feature)")),
    ];
    const TRANSPORTS: &'static [(Transport, Support)] = &[(
        Transport::Tls,
        Support::Supported("`HttpServer::listen_rustls` (ntex's `rustls` feature, ntex-tls's acceptor; ntex sets ALPN to `h2`, `http/1.1`)"),
    )];
    const CANNOT: &'static [(&'static str, &'static str)] = &[];

    fn build(config: &Config) -> anyhow::Result<Self> {
        // A current-thread runtime with a `LocalSet`, like one ntex worker. No ntex `System`:
        // nothing in a request needs one, and without it ntex runs blocking work (ntex-files'
        // reads) in place instead of on the `System`'s pool.
        let rt = server::in_process_runtime()?;
        let local = tokio::task::LocalSet::new();
        let service = local.block_on(&rt, web::test::init_service(app(config, None)));
        // ntex's timers (keep-alive, the `System`'s watchdog) are driven by futures-timer's
        // helper thread, which is process-wide: started on the first timer and never stopped.
        // Started here, with the app, so that it is not counted as a thread the server left
        // behind (tests/shutdown.rs); every server after the first shares it. The timer is
        // polled once and dropped, not awaited: under the callgrind benches libfaketime freezes
        // the clock, and a sleep would never end.
        local.block_on(&rt, async {
            let mut timer = std::pin::pin!(ntex::time::sleep(ntex::time::Millis(1)));
            std::future::poll_fn(|cx| {
                let _ = timer.as_mut().poll(cx);
                Poll::Ready(())
            })
            .await;
        });
        Ok(Ntex {
            config: config.clone(),
            service: Box::new(service),
            local,
            rt,
        })
    }

    fn dispatch(&self, req: Request) -> anyhow::Result<Response> {
        self.service.dispatch(&self.rt, &self.local, to_ntex(req)?)
    }

    fn serve(&self, listener: TcpListener) -> anyhow::Result<ServerHandle> {
        let addr = listener.local_addr()?;
        let config = self.config.clone();
        let limit = crate::server::limit::active();
        let threads = config.options.threads.max(1);
        // TLS: ntex's own rustls integration on the run's certificate; ntex-tls bounds each
        // handshake (its default, 5 s).
        let tls = match config.options.transport {
            Transport::Tls => Some(crate::transport::tls::server_config(config.options.protocol)?),
            Transport::Tcp => None,
        };
        let (ready_tx, ready_rx) = mpsc::channel();
        let system = thread::Builder::new()
            .name("fb-ntex-system".into())
            .spawn(move || {
                ntex::rt::System::build()
                    .name("fb-ntex")
                    .build(ntex::rt::DefaultRuntime)
                    .block_on(async move {
                        let server = start(config, limit, threads, listener, tls);
                        let server = match server {
                            Ok(server) => server,
                            Err(err) => {
                                let _ = ready_tx.send(Err(err));
                                return;
                            }
                        };
                        if ready_tx.send(Ok(server.clone())).is_err() {
                            drop(server.stop(false));
                        }
                        let _ = server.await;
                    })
            })?;
        let handle = match ready_rx.recv() {
            Ok(Ok(handle)) => handle,
            Ok(Err(err)) => {
                let _ = system.join();
                return Err(err).context("ntex server failed to start");
            }
            Err(_) => {
                let _ = system.join();
                return Err(anyhow!("ntex server thread died at startup"));
            }
        };
        let stop = move || {
            // The stop command is sent when `stop` is called; the future it returns only waits
            // for the server to report completion, which joining its thread already does.
            // Not graceful: open connections are closed, like framebench's own servers do.
            drop(handle.stop(false));
        };
        Ok(ServerHandle::new(addr, stop, vec![system]))
    }
}

/// Starts the server on `listener`: `HttpServer` (HTTP/1.1) by default; under `--protocol h2c`
/// an ntex server whose one service is `HttpService::h2`, since a plaintext `HttpServer` never
/// chooses HTTP/2 (ntex picks it from TLS ALPN, and does not read a prior-knowledge preface).
/// Over TLS (`tls`), `HttpServer::listen_rustls`. The same `app()`, worker count and keep-alive
/// either way. ntex-server sets TCP_NODELAY on
/// every connection it accepts; the backlog was set by whoever bound the listener.
fn start(
    config: Config,
    limit: Option<&'static Limit>,
    threads: usize,
    listener: TcpListener,
    tls: Option<std::sync::Arc<rustls::ServerConfig>>,
) -> std::io::Result<ntex::server::Server> {
    let cfg: SharedCfg = SharedCfg::new("WEB")
        .add(HttpServiceConfig::new().set_keepalive_timeout(Seconds::new(
            KEEP_ALIVE.as_secs().try_into().unwrap_or(u16::MAX),
        )))
        .into();
    if config.options.protocol == Protocol::H2c {
        let server = ntex::server::build()
            .workers(threads)
            .disable_signals()
            .stop_runtime()
            .listen("fb-ntex-h2c", listener, async move |r| {
                r.config(cfg.clone());
                HttpService::h2(app(&config, limit))
            })?;
        return Ok(server.run());
    }
    let server = HttpServer::new(async move || app(&config, limit))
        .workers(threads)
        .disable_signals()
        .stop_runtime()
        .config(cfg);
    let server = match tls {
        Some(tls) => server.listen_rustls(listener, (*tls).clone())?,
        None => server.listen(listener)?,
    };
    Ok(server.run())
}

/// `GET /ws`: the WebSocket echo in ntex's own WebSocket service, as its tests write it:
/// ntex does not answer a ping by itself, and closes once the reply to a Close is sent.
#[web::get("/ws")]
async fn ws_echo(req: HttpRequest) -> Result<HttpResponse, web::Error> {
    use ntex::service::{fn_factory_with_config, fn_service};
    use ntex::util::ByteString;
    use ntex::web::ws;
    ws::start::<_, _, &str, web::Error>(
        req,
        None,
        fn_factory_with_config(|_sink: ws::WsSink| async {
            Ok::<_, web::Error>(fn_service(|frame: ws::Frame| async move {
                Ok::<_, std::io::Error>(match frame {
                    ws::Frame::Text(text) => Some(match ByteString::try_from(text) {
                        Ok(text) => ws::Message::Text(text),
                        Err(_) => ws::Message::Close(Some(ws::CloseCode::Invalid.into())),
                    }),
                    ws::Frame::Binary(bin) => Some(ws::Message::Binary(bin)),
                    ws::Frame::Continuation(item) => Some(ws::Message::Continuation(item)),
                    ws::Frame::Ping(payload) => Some(ws::Message::Pong(payload)),
                    ws::Frame::Pong(_) => None,
                    ws::Frame::Close(reason) => Some(ws::Message::Close(reason)),
                })
            }))
        }),
    )
    .await
}

#[web::get("/")]
async fn hello() -> Reply {
    handlers::hello()
}

#[web::get("/json")]
async fn json() -> Reply {
    handlers::json()
}

#[web::get("/get")]
async fn redis_get(state: State<Shared>, req: HttpRequest) -> Reply {
    let query = Some(req.query_string()).filter(|q| !q.is_empty());
    state.redis_get(query).await
}

#[web::get("/template")]
async fn template(state: State<Shared>) -> Reply {
    state.template()
}

#[web::get("/paste/{name}")]
async fn paste(state: State<Shared>, name: Path<String>) -> Reply {
    state.paste(&name)
}

#[web::get("/static/{name}")]
async fn static_file(state: State<Shared>, name: Path<String>) -> Reply {
    state.static_file(&name)
}

/// `Query` rejects missing or non-`u32` operands with 400.
#[web::get("/sum")]
async fn sum(ops: Query<Operands>) -> Reply {
    handlers::sum(ops.into_inner())
}

/// ntex's `Bytes` reads the whole body, Content-Length or chunked, up to its default
/// `PayloadConfig` limit (256 KiB; 400 above it).
#[web::post("/upload")]
async fn upload(body: ntex::util::Bytes) -> Reply {
    handlers::upload(&body)
}

/// `Json` wants a JSON content type (400 without it), reads up to its default limit (32 KiB,
/// 413 above it) and answers a body it cannot deserialize with 400.
#[web::post("/json_in")]
async fn json_in(ops: Json<Operands>) -> Reply {
    handlers::json_in(ops.into_inner())
}

/// `Query` rejects an `ms` that is not a `u64` with 400; the wait is ntex's own timer
/// (`ntex::time::sleep`, a timer wheel beside the tokio runtime ntex runs on).
#[web::get("/delay")]
async fn delay(wait: Query<Wait>) -> Reply {
    handlers::delay(wait.into_inner(), sleep_at_least).await
}

/// `ntex::time::sleep` until `wait` has passed on the monotonic clock. ntex's wheel counts a
/// sleep from a clock it caches for up to 5 ms (`LOWRES_RESOLUTION`, ntex-util 3.6.1
/// src/time/wheel.rs), so one sleep of 10 ms was seen to end after 8.69 ms; an app that must
/// wait at least its time sleeps again for what is left, and so does this handler.
async fn sleep_at_least(wait: std::time::Duration) {
    let start = std::time::Instant::now();
    // Bounded: each pass sleeps at least 1 ms of what is left (ntex's sleep takes whole ms).
    while let Some(left) = wait.checked_sub(start.elapsed()).filter(|d| !d.is_zero()) {
        ntex::time::sleep(left.max(std::time::Duration::from_millis(1))).await;
    }
}

impl<Err: ErrorRenderer> web::Responder<Err> for Reply {
    async fn respond_to(self, _: &HttpRequest) -> HttpResponse {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::NOT_FOUND);
        let mut res = HttpResponse::build(status);
        if let Some(content_type) = self.content_type {
            res.header(CONTENT_TYPE, HeaderValue::from_static(content_type));
        }
        // Fairness: ntex has its own `Bytes` (ntex-bytes), with no conversion from the `bytes`
        // crate's that `Reply` carries: the body is copied once per response, one allocation
        // and a copy of at most a few KB (docs/methodology/fairness.md).
        res.body(ntex::util::Bytes::copy_from_slice(&self.body))
    }
}

/// One of our middlewares as ntex takes it: `M` says what it does around each request. One
/// middleware type for the guard and the observer, each monomorphized, so each does only its
/// own work.
#[derive(Clone, Copy)]
struct Wrap<M>(M);

impl<S, M: Around> Middleware<S, SharedCfg> for Wrap<M> {
    type Service = Wrapped<S, M>;

    fn create(&self, service: S, _: SharedCfg) -> Wrapped<S, M> {
        Wrapped {
            service,
            around: self.0,
        }
    }
}

/// A service behind one of our middlewares.
struct Wrapped<S, M> {
    service: S,
    around: M,
}

impl<S, E, M: Around> Service<WebRequest<E>> for Wrapped<S, M>
where
    S: Service<WebRequest<E>, Response = WebResponse>,
{
    type Response = WebResponse;
    type Error = S::Error;

    ntex::forward_poll!(service);
    ntex::forward_ready!(service);
    ntex::forward_shutdown!(service);

    async fn call(
        &self,
        req: WebRequest<E>,
        ctx: ServiceCtx<'_, Self>,
    ) -> Result<WebResponse, S::Error> {
        let next = async |req| ctx.call(&self.service, req).await;
        self.around.call(req, next).await
    }
}

/// What one of our middlewares does around the service it wraps, per request.
trait Around: Copy {
    /// Answers `req`, through `next` (the wrapped service) or in its place.
    async fn call<E, Err>(
        self,
        req: WebRequest<E>,
        next: impl AsyncFnOnce(WebRequest<E>) -> Result<WebResponse, Err>,
    ) -> Result<WebResponse, Err>;
}

/// Answers 404 (as `Files` answers a missing file) to a static request with a path segment that
/// percent-decodes to `..` or to something holding a slash, a backslash or a NUL byte, before
/// `Files` sees it.
// Fairness: ntex-files 3.2 checks each path segment for `..` and a leading dot *before*
// percent-decoding it, then pushes the decoded segment onto the folder: `%2e%2e` climbs out of
// it and `%2fetc%2fpasswd` replaces it (`check` caught both leaking files). This guard, on the
// `/static` scope only, costs one pass over the path per static request, as gotham's, iron's,
// warp's and salvo's guards do (docs/methodology/fairness.md). A middleware rather than the scope's
// `filter`: a filter can only fail, and its error escapes the app as a 500.
#[derive(Clone, Copy)]
struct TraversalGuard;

impl Around for TraversalGuard {
    async fn call<E, Err>(
        self,
        req: WebRequest<E>,
        next: impl AsyncFnOnce(WebRequest<E>) -> Result<WebResponse, Err>,
    ) -> Result<WebResponse, Err> {
        let hostile = req.path().split('/').any(|segment| {
            let mut decoded = percent_encoding::percent_decode_str(segment);
            decoded.clone().eq(*b"..") || decoded.any(|b| matches!(b, b'/' | b'\\' | 0))
        });
        if hostile {
            return Ok(req.into_response(HttpResponse::NotFound().finish()));
        }
        next(req).await
    }
}

/// A middleware around the app: logs one line per response to the variant's target and counts
/// responses for `serve --max-requests`, each only when asked for.
// Fairness: ntex's own `Logger` logs through the `log` crate under its module's target, which
// framebench's logger does not route, and has no setting for the target; this middleware logs
// the line every hand-written logger does. It is always in place: with logging off and no limit,
// every request passes two `Option` checks (docs/methodology/fairness.md).
#[derive(Clone, Copy)]
struct Observe {
    target: Option<&'static str>,
    limit: Option<&'static Limit>,
}

impl Around for Observe {
    async fn call<E, Err>(
        self,
        req: WebRequest<E>,
        next: impl AsyncFnOnce(WebRequest<E>) -> Result<WebResponse, Err>,
    ) -> Result<WebResponse, Err> {
        let started = self.target.map(|target| {
            Started::now(
                target,
                req.peer_addr(),
                req.method().as_str(),
                req.uri().to_string(),
            )
        });
        let res = next(req).await?;
        if let Some(started) = started {
            started.finish(res.status().as_u16());
        }
        if let Some(limit) = self.limit {
            limit.record();
        }
        Ok(res)
    }
}

/// The in-process service, type-erased: `init_service` returns an unnameable type.
trait InProcess {
    /// Runs one request through the app on `rt` and collects the response.
    fn dispatch(
        &self,
        rt: &tokio::runtime::Runtime,
        local: &tokio::task::LocalSet,
        req: ntex::http::Request,
    ) -> anyhow::Result<Response>;
}

impl<S> InProcess for Pipeline<S>
where
    S: Service<ntex::http::Request, Response = WebResponse, Error = AppError>,
{
    fn dispatch(
        &self,
        rt: &tokio::runtime::Runtime,
        local: &tokio::task::LocalSet,
        req: ntex::http::Request,
    ) -> anyhow::Result<Response> {
        local.block_on(rt, async {
            // Like ntex's HTTP dispatcher: an error becomes its error response.
            let res: HttpResponse = match self.call(req).await {
                Ok(res) => res.into(),
                Err(err) => err.into(),
            };
            from_ntex(res).await
        })
    }
}

/// An `http` 1.x request as the request ntex's HTTP/1 decoder would produce. ntex uses the
/// `http` crate's method, URI, version and header names, so only header values are converted.
/// Built directly rather than with `ntex::web::test::TestRequest`, whose builder also sets up a
/// resource map, an app config and app state on every call: work a served request never does.
fn to_ntex(req: Request) -> anyhow::Result<ntex::http::Request> {
    let (parts, body) = req.into_parts();
    let mut out = if body.is_empty() {
        ntex::http::Request::new()
    } else {
        let stream: PayloadStream = Box::pin(Once(Some(body)));
        ntex::http::Request::with_payload(Payload::from(stream))
    };
    let head = out.head_mut();
    head.method = parts.method;
    head.uri = parts.uri;
    head.version = parts.version;
    // The head comes from ntex's message pool, its header map cleared but allocated.
    for (name, value) in &parts.headers {
        head.headers
            .append(name.clone(), HeaderValue::from_bytes(value.as_bytes())?);
    }
    Ok(out)
}

/// A body that yields its bytes once.
// Fairness: ntex's `Bytes` (ntex-bytes) has no conversion from the `bytes` crate's that our
// request carries, so each in-process request body is copied here once: one allocation and a
// copy of the body (1 KiB at the default `--body-size`). Served requests do not pay it: ntex's
// HTTP/1 decoder splits the body off its read buffer. ntex's own extractors then copy it again,
// in-process and served alike.
struct Once(Option<Bytes>);

impl ntex::util::Stream for Once {
    type Item = Result<ntex::util::Bytes, ntex::http::error::PayloadError>;

    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Poll::Ready(
            self.0
                .take()
                .map(|body| Ok(ntex::util::Bytes::copy_from_slice(&body))),
        )
    }
}

/// An ntex response as an `http` 1.x response, with the body collected.
async fn from_ntex(mut res: HttpResponse) -> anyhow::Result<Response> {
    let status = res.status();
    let mut headers = http::HeaderMap::with_capacity(res.headers().len());
    for (name, value) in res.headers() {
        headers.append(
            name.clone(),
            http::HeaderValue::from_bytes(value.as_bytes())?,
        );
    }
    let mut body = res.take_body();
    let mut collected = Vec::new();
    while let Some(chunk) = std::future::poll_fn(|cx| body.poll_next_chunk(cx)).await {
        let chunk = chunk.map_err(|err| anyhow!("body: {err}"))?;
        collected.extend_from_slice(&chunk);
    }
    let mut out = Response::new(Bytes::from(collected));
    *out.status_mut() = status;
    *out.headers_mut() = headers;
    Ok(out)
}
