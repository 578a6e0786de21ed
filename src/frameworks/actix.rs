//! actix-web 4: an `App` with actix-files' `Files` for static files and actix's `Logger`
//! middleware for logging. `app()` is the only place the app is built: in-process requests go
//! through `actix_web::test::init_service` on a current-thread actix runtime, and `HttpServer`
//! calls the same function once per worker.
//!
//! Threads: `HttpServer::workers(n)` starts `n` worker threads, each with its own single-threaded
//! runtime and its own `App` instance, and one acceptor thread that hands connections to them
//! round-robin; `options.threads` is `n`. framebench adds one thread that runs the actix `System`
//! and the server's control future. actix-server does not keep its workers' join handles, so each
//! worker holds a sender in a thread-local: shutdown waits until every sender is dropped, that is
//! until every worker has dropped its runtime (and joined its blocking pool) and is exiting.
//! Only the OS's own thread teardown can still be under way, for microseconds.

use std::cell::RefCell;
use std::future::{poll_fn, Future as _};
use std::io;
use std::net::TcpListener;
use std::pin::Pin;
use std::sync::mpsc;
use std::task::Poll;
use std::thread;

use actix_files::Files;
use actix_web::body::{self, MessageBody};
use actix_web::dev::{Service, ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::middleware::{Condition, Logger};
use actix_web::{get, post, test, web, App, HttpRequest, HttpResponse, HttpServer, Responder};
use anyhow::{anyhow, Context as _};
use bytes::Bytes;

use crate::framework::{About, Config, Framework, Support, Transport, Request, Response, ServerHandle, Version};
use crate::handlers::{self, AppState, Operands, Reply, Wait};
use crate::logging;
use crate::options::{Io, Protocol, KEEP_ALIVE};
use crate::store::AsyncStore;

/// actix-web behind the framebench trait.
pub(crate) struct Actix {
    config: Config,
    // Declared before `rt`, so the service is dropped while its runtime still exists.
    service: Box<dyn InProcess>,
    rt: actix_rt::Runtime,
}

/// What the handlers share, as `web::Data`.
type Shared = web::Data<AppState<AsyncStore>>;

/// The request line every logged request gets: time, peer, request line, status, latency.
const LOG_FORMAT: &str = "%t %a \"%r\" %s %T";

/// Builds the app: every route, and the `Logger` when logging is on.
fn app(
    config: &Config,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    // One pool per `App`, so per worker: each worker has its own runtime, where its
    // connections' tasks run (docs/methodology/fairness.md).
    let state = Shared::new(AppState::new_async(config));
    let app = App::new()
        .app_data(state)
        .service(hello)
        .service(json)
        .service(redis_get)
        .service(template)
        .service(paste);
    let app = match config.options.io {
        Io::Disk => app.service(Files::new("/static", config.fixtures.static_dir())),
        Io::Memory => app.service(static_file),
    };
    let app = app
        .service(sum)
        .service(upload)
        .service(json_in)
        .service(delay)
        .service(ws_echo);
    // Fairness: `Condition` is actix's way to make a middleware optional while keeping one app
    // type. With logging off no `Logger` is attached, but every request still passes one
    // `match` and the body one enum (`EitherBody`): a few nanoseconds.
    let target = logging::target(config.options.logging);
    let logger = Logger::new(LOG_FORMAT).log_target(target.unwrap_or(logging::SINK));
    app.wrap(Condition::new(target.is_some(), logger))
}

impl Framework for Actix {
    const NAME: &'static str = "actix";
    const CRATE: &'static str = "actix-web";
    const VERSION_PREFIX: &'static str = "4.";
    const ABOUT: About = About {
        crate_label: None,
        version: Version::Locked(""),
        companions: &[("actix-files", "0.7.")],
        static_files: "`actix-files`",
        in_process: "`test::init_service` + `call_service`",
        server: "`HttpServer` with `--threads` workers",
    };
    const COUNTS_REQUESTS: bool = true;
   const COUNTS_MESSAGES: bool = true;
    const PROTOCOLS: &'static [(Protocol, Support)] =
        &[
            (Protocol::H2c, Support::Supported("`HttpServer::listen_auto_h2c` (actix-web's `http2` feature; h2 driven by actix's own dispatcher): it peeks for the preface on every connection, under `--protocol h2c` only")),
            (Protocol::H2, Support::Supported("`HttpServer::listen_rustls_0_23` (actix-web's `http2` feature): actix-http offers `h2` by ALPN itself and serves what it chose")),
            (Protocol::Ws, Support::Supported("actix-ws (`actix_ws::handle` on actix-http's WebSocket codec), continuations aggregated")),
        ];
    const TRANSPORTS: &'static [(Transport, Support)] = &[(
        Transport::Tls,
        Support::Supported("`HttpServer::listen_rustls_0_23` (actix-web's `rustls-0_23` feature, actix-tls's acceptor)"),
    )];
    const CANNOT: &'static [(&'static str, &'static str)] = &[];

    fn build(config: &Config) -> anyhow::Result<Self> {
        if logging::target(config.options.logging).is_some() {
            logging::install();
        }
        // A current-thread runtime with a `LocalSet`, like one actix worker; actix-files reads
        // files on its blocking pool. No `System`: nothing in a request needs one.
        let rt = actix_rt::Runtime::new()?;
        let service = rt.block_on(test::init_service(app(config)));
        Ok(Actix {
            config: config.clone(),
            service: Box::new(service),
            rt,
        })
    }

    fn dispatch(&self, req: Request) -> anyhow::Result<Response> {
        self.service.dispatch(&self.rt, to_actix(req)?)
    }

    fn serve(&self, listener: TcpListener) -> anyhow::Result<ServerHandle> {
        let addr = listener.local_addr()?;
        let config = self.config.clone();
        let (alive, gone) = mpsc::channel::<()>();
        let (ready_tx, ready_rx) = mpsc::channel();
        let system = thread::Builder::new()
            .name("fb-actix-system".into())
            .spawn(move || {
                let system = actix_rt::System::new();
                system.block_on(run(config, listener, alive, ready_tx));
            })?;
        let handle = match ready_rx.recv() {
            Ok(Ok(handle)) => handle,
            Ok(Err(err)) => {
                let _ = system.join();
                return Err(err).context("actix server failed to start");
            }
            Err(_) => {
                let _ = system.join();
                return Err(anyhow!("actix server thread died at startup"));
            }
        };
        let stop = move || {
            // The stop command is sent when `stop` is called; the future it returns only waits
            // for the server to report completion, which joining its thread already does.
            // Not graceful: open connections are closed, like framebench's own servers do.
            drop(handle.stop(false));
            // Every sender is gone once each worker thread has exited and the server has
            // dropped its factory: `recv` then fails instead of blocking.
            while gone.recv().is_ok() {}
        };
        Ok(ServerHandle::new(addr, stop, vec![system]))
    }
}

/// `GET /ws`: the WebSocket echo as actix-ws's docs write it: the session's task echoes each
/// message whole (continuations aggregated), answers a ping (actix-ws does not by itself),
/// and answers a Close with the client's code. Frames and messages up to 16 MiB, Autobahn's
/// largest.
#[get("/ws")]
async fn ws_echo(req: HttpRequest, body: web::Payload) -> actix_web::Result<HttpResponse> {
    use actix_ws::AggregatedMessage;
    let (res, mut session, stream) = actix_ws::handle(&req, body)?;
    let mut stream = stream
        .max_frame_size(16 << 20)
        .aggregate_continuations()
        .max_continuation_size(16 << 20);
    let limit = crate::server::limit::active();
    actix_web::rt::spawn(async move {
        while let Some(Ok(msg)) = stream.recv().await {
            let (sent, echoed) = match msg {
                AggregatedMessage::Text(text) => (session.text(text).await, true),
                AggregatedMessage::Binary(bin) => (session.binary(bin).await, true),
                AggregatedMessage::Ping(payload) => (session.pong(&payload).await, false),
                AggregatedMessage::Pong(_) => (Ok(()), false),
                AggregatedMessage::Close(reason) => {
                    let _ = session.close(reason).await;
                    return;
                }
            };
            if sent.is_err() {
                return;
            }
            if let (true, Some(limit)) = (echoed, limit) {
                limit.record_message();
            }
        }
        let _ = session.close(None).await;
    });
    Ok(res)
}

#[get("/")]
async fn hello() -> Reply {
    handlers::hello()
}

#[get("/json")]
async fn json() -> Reply {
    handlers::json()
}

#[get("/get")]
async fn redis_get(state: Shared, req: HttpRequest) -> Reply {
    let query = Some(req.query_string()).filter(|q| !q.is_empty());
    state.redis_get(query).await
}

#[get("/template")]
async fn template(state: Shared) -> Reply {
    state.template()
}

#[get("/paste/{name}")]
async fn paste(state: Shared, name: web::Path<String>) -> Reply {
    state.paste(&name)
}

#[get("/static/{name}")]
async fn static_file(state: Shared, name: web::Path<String>) -> Reply {
    state.static_file(&name)
}

/// `web::Query` rejects missing or non-`u32` operands with 400.
#[get("/sum")]
async fn sum(ops: web::Query<Operands>) -> Reply {
    handlers::sum(ops.into_inner())
}

/// `web::Bytes` reads the whole body, Content-Length or chunked, up to actix's default
/// `PayloadConfig` limit (256 KiB, 413 above it).
#[post("/upload")]
async fn upload(body: web::Bytes) -> Reply {
    handlers::upload(&body)
}

/// `web::Json` wants `application/json` (400 without it), reads up to its default limit (2 MiB,
/// 413 above it) and answers a body it cannot deserialize with 400.
#[post("/json_in")]
async fn json_in(ops: web::Json<Operands>) -> Reply {
    handlers::json_in(ops.into_inner())
}

/// `web::Query` rejects an `ms` that is not a `u64` with 400; the wait is actix-rt's timer
/// (`actix_rt::time::sleep`, tokio's under the worker's single-threaded runtime).
#[get("/delay")]
async fn delay(wait: web::Query<Wait>) -> Reply {
    handlers::delay(wait.into_inner(), actix_rt::time::sleep).await
}

impl Responder for Reply {
    type Body = Bytes;

    fn respond_to(self, _: &HttpRequest) -> HttpResponse<Bytes> {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::NOT_FOUND);
        let mut res = HttpResponse::with_body(status, self.body);
        if let Some(content_type) = self.content_type {
            res.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        }
        res
    }
}

thread_local! {
    /// Set in each worker thread by the app factory; dropped when the thread exits.
    static WORKER_ALIVE: RefCell<Option<mpsc::Sender<()>>> = const { RefCell::new(None) };
}

/// `serve --max-requests`: counts each response.
async fn count_response(
    req: ServiceRequest,
    next: actix_web::middleware::Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let res = next.call(req).await?;
    if let Some(limit) = crate::server::limit::active() {
        limit.record();
    }
    Ok(res)
}

/// Runs the server on the current actix `System`: reports its handle (or the startup error) on
/// `ready` once it accepts, then runs until stopped.
async fn run(
    config: Config,
    listener: TcpListener,
    alive: mpsc::Sender<()>,
    ready: mpsc::Sender<io::Result<actix_web::dev::ServerHandle>>,
) {
    let (threads, protocol) = (config.options.threads.max(1), config.options.protocol);
    // TLS: actix-web's own rustls integration (its `rustls-0_23` feature), on the run's
    // certificate; actix-http adds its ALPN names (`h2`, `http/1.1`) before ours, and actix-tls
    // bounds each handshake (its default, 3 s).
    let tls = match config.options.transport {
        Transport::Tls => match crate::transport::tls::server_config(protocol) {
            Ok(tls) => Some(tls),
            Err(e) => {
                let _ = ready.send(Err(io::Error::other(format!("{e:#}"))));
                return;
            }
        },
        Transport::Tcp => None,
    };
    // Fairness: `serve --max-requests` counts responses in a middleware under `Condition`; when
    // no limit is set that is one `match` per request (docs/methodology/callgrind.md).
    let counted = crate::server::limit::active().is_some();
    // Called once in every worker thread: that worker's own `App`.
    let factory = move || {
        WORKER_ALIVE.with_borrow_mut(|slot| *slot = Some(alive.clone()));
        app(&config).wrap(Condition::new(
            counted,
            actix_web::middleware::from_fn(count_response),
        ))
    };
    // actix-server makes the listener non-blocking itself. The defaults for backlog (already
    // set by whoever bound the listener), connection limits and rates stay as they are.
    let server = HttpServer::new(factory)
        .workers(threads)
        .keep_alive(KEEP_ALIVE)
        .disable_signals()
        // Every framebench server sets TCP_NODELAY on accepted connections.
        .on_connect(|conn, _| {
            if let Some(tcp) = conn.downcast_ref::<actix_web::rt::net::TcpStream>() {
                let _ = tcp.set_nodelay(true);
            }
        })
        ;
    // `--protocol h2c`: actix's own documented way, `listen_auto_h2c`, which peeks at each
    // connection for the HTTP/2 preface; `listen` stays HTTP/1 only, with no peek.
    let server = match (protocol, tls) {
        // `on_connect` sees a TLS stream there, not the TCP one: the server's own setting.
        (Protocol::H2c, _) => server.listen_auto_h2c(listener),
        // HTTP/1.1, and WebSocket, which upgrades an HTTP/1.1 connection.
        (_, Some(tls)) => server
            .tcp_nodelay(true)
            .listen_rustls_0_23(listener, (*tls).clone()),
        (_, None) => server.listen(listener),
    };
    let mut server = match server {
        Ok(server) => server.run(),
        Err(err) => {
            let _ = ready.send(Err(err));
            return;
        }
    };
    let handle = server.handle();
    // The first poll starts the workers, waits until each has built its app, and starts the
    // acceptor; it fails if a worker fails. Only then does `serve` return.
    match poll_fn(|cx| Poll::Ready(Pin::new(&mut server).poll(cx))).await {
        Poll::Pending => {
            if ready.send(Ok(handle.clone())).is_err() {
                drop(handle.stop(false));
            }
            let _ = server.await;
        }
        Poll::Ready(result) => {
            let err = result
                .err()
                .unwrap_or_else(|| io::Error::other("server ended at once"));
            let _ = ready.send(Err(err));
        }
    }
}

/// The in-process service, type-erased: `init_service` returns an unnameable type.
trait InProcess {
    /// Runs one request through the app on `rt` and collects the response.
    fn dispatch(
        &self,
        rt: &actix_rt::Runtime,
        req: actix_http::Request,
    ) -> anyhow::Result<Response>;
}

impl<S, B> InProcess for S
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    fn dispatch(
        &self,
        rt: &actix_rt::Runtime,
        req: actix_http::Request,
    ) -> anyhow::Result<Response> {
        rt.block_on(async {
            // Like actix's HTTP dispatcher: an error becomes its error response.
            match self.call(req).await {
                Ok(res) => from_actix(res.into_parts().1).await,
                Err(err) => from_actix(err.error_response()).await,
            }
        })
    }
}

/// An `http` 1.x request as the request actix's HTTP/1 decoder would produce (actix-web uses
/// `http` 0.2 types). Built directly rather than with `actix_web::test::TestRequest`, whose
/// builder also sets up a resource map, an app config and a router path on every call: work a
/// served request never does, which would be charged to actix.
fn to_actix(req: Request) -> anyhow::Result<actix_http::Request> {
    use actix_web::http::header::{HeaderName, HeaderValue};
    use actix_web::http::{Method, Uri, Version};
    let (parts, body) = req.into_parts();
    let mut out = if body.is_empty() {
        actix_http::Request::new()
    } else {
        let (_, mut payload) = actix_http::h1::Payload::create(true);
        payload.unread_data(body);
        actix_http::Request::with_payload(payload.into())
    };
    let head = out.head_mut();
    head.method = Method::from_bytes(parts.method.as_str().as_bytes())?;
    head.uri = match parts.uri.path_and_query() {
        Some(pq) if parts.uri.scheme().is_none() => Uri::try_from(pq.as_str())?,
        _ => Uri::try_from(parts.uri.to_string())?,
    };
    head.version = match parts.version {
        http::Version::HTTP_09 => Version::HTTP_09,
        http::Version::HTTP_10 => Version::HTTP_10,
        http::Version::HTTP_2 => Version::HTTP_2,
        http::Version::HTTP_3 => Version::HTTP_3,
        _ => Version::HTTP_11,
    };
    // The head comes from actix's message pool, its header map cleared but allocated.
    for (name, value) in &parts.headers {
        head.headers.append(
            HeaderName::from_bytes(name.as_str().as_bytes())?,
            HeaderValue::from_bytes(value.as_bytes())?,
        );
    }
    Ok(out)
}

/// An actix response as an `http` 1.x response, with the body collected.
async fn from_actix<B: MessageBody>(res: actix_web::HttpResponse<B>) -> anyhow::Result<Response> {
    let status = http::StatusCode::from_u16(res.status().as_u16())?;
    let mut headers = http::HeaderMap::with_capacity(res.headers().len());
    for (name, value) in res.headers() {
        headers.append(
            http::HeaderName::from_bytes(name.as_str().as_bytes())?,
            http::HeaderValue::from_bytes(value.as_bytes())?,
        );
    }
    let body: Bytes = body::to_bytes(res.into_body())
        .await
        .map_err(|err| anyhow!("body: {}", err.into()))?;
    let mut out = Response::new(body);
    *out.status_mut() = status;
    *out.headers_mut() = headers;
    Ok(out)
}
