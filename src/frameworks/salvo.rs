//! salvo 1: a `Router` tree of `#[handler]` functions with the state injected into the depot by
//! `affix_state`, `StaticDir` for static files (io=disk), and, when logging is on, a hoop (salvo's
//! middleware) that logs one line per response. `app()` is the only place the service is built:
//! in-process requests go through the service's request handler, the call `Service::handle`
//! and salvo's server make, on a current-thread runtime, without a socket, and `salvo::Server`
//! serves the same service on the listener with a tokio runtime of `threads` workers.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

use salvo::affix_state;
use salvo::conn::tcp::TcpAcceptor;
use salvo::conn::{Acceptor, IntoConfigStream, Listener, RustlsListener};
use salvo::fuse::FuseConfig;
use salvo::http::header::CONTENT_TYPE;
use salvo::http::uri::Scheme;
use salvo::http::{HeaderValue, ParseError, StatusCode};
use salvo::serve_static::StaticDir;
use salvo::{handler, ConnCtrl, Depot, FlowCtrl, Router, Scribe, Server, Service};

use crate::framework::{About, Config, Framework, Protocol, Support, Request, Response, ServerHandle, Version};
use crate::handlers::{self, AppState, Operands, Reply, Wait};
use crate::logging::{self, Started};
use crate::options::{Io, Transport, KEEP_ALIVE};
use crate::server;
use crate::store::AsyncStore;

use super::built::Built;

/// salvo behind the framebench trait.
pub(crate) struct Salvo(Built<Service>);

/// What the handlers share, injected into each request's depot.
type Shared = Arc<AppState<AsyncStore>>;

/// The peer an in-process request comes from: none, as for a request without a socket.
const IN_PROCESS_PEER: SocketAddr = SocketAddr::V4(std::net::SocketAddrV4::new(
    std::net::Ipv4Addr::UNSPECIFIED,
    0,
));

/// Builds the service: every route, and the logger hoop when logging is on.
fn app(config: &Config) -> Service {
    // One pool per service: in-process and served requests run on different runtimes.
    let state: Shared = Arc::new(AppState::new_async(config));
    let router = Router::new()
        .hoop(affix_state::inject(state))
        .get(hello)
        .push(Router::with_path("json").get(json))
        .push(Router::with_path("get").get(redis_get))
        .push(Router::with_path("template").get(template))
        .push(Router::with_path("paste/{name}").get(paste))
        .push(Router::with_path("sum").get(sum))
        .push(Router::with_path("upload").post(upload))
        .push(Router::with_path("json_in").post(json_in))
        .push(Router::with_path("delay").get(delay))
        .push(Router::with_path("ws").get(ws_echo));
    let router = match config.options.io {
        Io::Disk => router.push(
            Router::with_path("static/{**path}")
                .hoop(nul_guard)
                .get(StaticDir::new([config.fixtures.static_dir().to_path_buf()])),
        ),
        Io::Memory => router.push(Router::with_path("static/{name}").get(static_file)),
    };
    let service = Service::new(router);
    match logging::target(config.options.logging) {
        None => service,
        // Fairness: salvo's own `Logger` (salvo_extra) logs through `tracing` under its own
        // target, which framebench's subscriber does not route; a hoop on the service, salvo's
        // way to wrap every request (unmatched ones too), logs the line every hand-written
        // logger does (docs/methodology/fairness.md).
        Some(target) => {
            logging::install();
            service.hoop(Logger { target })
        }
    }
}

impl Framework for Salvo {
    const NAME: &'static str = "salvo";
    const CRATE: &'static str = "salvo";
    const VERSION_PREFIX: &'static str = "1.";
    const ABOUT: About = About {
        crate_label: None,
        version: Version::Locked(""),
        companions: &[],
        static_files: "`StaticDir` (behind a NUL guard)",
        in_process: "the service's request handler (`Service::hyper_handler(..).handle`, what `Service::handle` calls)",
        server: "`salvo::Server` on tokio with `--threads` workers",
    };
    const PER_CORE: bool = true;
    const COUNTS_REQUESTS: bool = true;
   const COUNTS_MESSAGES: bool = true;
    // Fairness: with the feature on, every connection (HTTP/1.1 ones too) starts with a read
    // that looks for the HTTP/2 preface, as hyper-util's auto builder does under axum and poem;
    // HTTP/1.1 callgrind counts before and after are in docs/methodology/http2.md.
    const PROTOCOLS: &'static [(Protocol, Support)] = &[
        (Protocol::H2c, Support::Supported("salvo's `http2-cleartext` feature: every connection is read for the preface first")),
        (Protocol::H2, Support::Supported("`RustlsListener` with salvo's `http2` feature: the connection is read for the preface, after ALPN chose `h2`")),
        (Protocol::Ws, Support::Supported("salvo's `websocket` feature: `WebSocketUpgrade` (tokio-tungstenite)")),
    ];
    const TRANSPORTS: &'static [(Transport, Support)] = &[(
        Transport::Tls,
        Support::Supported("`RustlsListener` (salvo's `rustls` and `ring` features) around the bound listener; the handshake on the connection's task, bounded by the fuse's `tls_handshake_timeout`"),
    )];
    const CANNOT: &'static [(&'static str, &'static str)] = &[];

    fn build(config: &Config) -> anyhow::Result<Self> {
        Built::new(config, app).map(Salvo)
    }

    fn dispatch(&self, req: Request) -> anyhow::Result<Response> {
        self.0.rt.block_on(async {
            // What `Service::handle` does (it is behind salvo's `test` feature, which also
            // builds three compression crates): the handler salvo's server makes per
            // connection, then its `handle` per request.
            let handler = self.0.app.hyper_handler(
                IN_PROCESS_PEER.into(),
                IN_PROCESS_PEER.into(),
                Scheme::HTTP,
                None,
                ConnCtrl::new(),
                None,
            );
            let res = handler
                .handle(salvo::Request::from_hyper(req, Scheme::HTTP))
                .await;
            super::built::collected(res.into_hyper()).await
        })
    }

    fn serve(&self, listener: TcpListener) -> anyhow::Result<ServerHandle> {
        // A `Service` is not `Clone`: each runtime of `--runtime per-core` builds its own, and
        // one work-stealing runtime builds one, on its runtime as before.
        let config = self.0.config.clone();
        let build = move || {
            let service = app(&config);
            // `serve --max-requests`: the counting hoop exists only when a limit is set.
            match crate::server::limit::active() {
                Some(limit) => service.hoop(Counter(limit)),
                None => service,
            }
        };
        // TLS: salvo's own rustls listener on the run's certificate.
        let tls = match self.0.config.options.transport {
            Transport::Tls => Some(crate::transport::tls::server_config(self.0.config.options.protocol)?),
            Transport::Tcp => None,
        };
        // Fairness: salvo's `TcpAcceptor` does not set TCP_NODELAY and has no setting for it;
        // it is set on the listener, which Linux copies to every accepted connection.
        server::nodelay_on_accepted(&listener)?;
        self.0.spawn(listener, move |listener, stop| {
            let (service, tls) = (build(), tls.clone());
            async move {
                let fuse = FuseConfig::default()
                    .with_connection_idle_timeout(KEEP_ALIVE)
                    .with_tls_handshake_timeout(crate::transport::tls::HANDSHAKE_TIMEOUT);
                match tls {
                    Some(tls) => {
                        let listener = RustlsListener::new(Fixed((*tls).clone()), Bound(listener));
                        if let Ok(acceptor) = listener.try_bind().await {
                            run(acceptor, fuse, service, stop).await;
                        }
                    }
                    None => {
                        if let Ok(acceptor) = TcpAcceptor::try_from(listener) {
                            run(acceptor, fuse, service, stop).await;
                        }
                    }
                }
            }
        })
    }
}

/// Serves `service` on `acceptor` until `stop`, then stops gracefully within
/// [`crate::options::GRACE`]. The idle keep-alive timeout is the fuse's
/// `connection_idle_timeout`.
async fn run<A: Acceptor + Send + 'static>(
    acceptor: A,
    fuse: FuseConfig,
    service: Service,
    stop: crate::server::Stopped,
) {
    let server = Server::new(acceptor).fuse_config(fuse);
    let handle = server.handle();
    tokio::spawn(async move {
        stop.await;
        handle.stop_graceful(crate::options::GRACE);
    });
    let _ = server.try_serve(service).await;
}

/// The run's `ServerConfig` as salvo's stream of TLS configs: one, never reloaded (salvo's own
/// configs are built from PEM; this keeps the run's, on ring, as the other servers use it).
struct Fixed(rustls::ServerConfig);

impl IntoConfigStream<rustls::ServerConfig> for Fixed {
    type Stream = futures_util::stream::Once<std::future::Ready<rustls::ServerConfig>>;

    fn into_stream(self) -> Self::Stream {
        futures_util::stream::once(std::future::ready(self.0))
    }
}

/// The listener framebench bound, as a salvo `Listener` (salvo's own binds an address).
struct Bound(tokio::net::TcpListener);

impl Listener for Bound {
    type Acceptor = TcpAcceptor;

    async fn try_bind(self) -> salvo::Result<TcpAcceptor> {
        Ok(TcpAcceptor::try_from(self.0)?)
    }
}

/// `GET /ws`: the WebSocket echo, as salvo's `websocket` docs write it; tungstenite under it
/// answers a ping and a Close by itself.
#[handler]
async fn ws_echo(req: &mut salvo::Request, res: &mut salvo::Response) -> Result<(), salvo::http::StatusError> {
    salvo::websocket::WebSocketUpgrade::new()
        .upgrade(req, res, |mut ws| async move {
            let limit = crate::server::limit::active();
            while let Some(Ok(msg)) = ws.recv().await {
                if msg.is_text() || msg.is_binary() {
                    if ws.send(msg).await.is_err() {
                        return;
                    }
                    if let Some(limit) = limit {
                        limit.record_message();
                    }
                }
            }
        })
        .await
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
async fn redis_get(req: &mut salvo::Request, depot: &mut Depot) -> Reply {
    shared(depot).redis_get(req.uri().query()).await
}

#[handler]
fn template(depot: &mut Depot) -> Reply {
    shared(depot).template()
}

#[handler]
fn paste(req: &mut salvo::Request, depot: &mut Depot) -> Reply {
    let name = req.param::<String>("name").unwrap_or_default();
    shared(depot).paste(&name)
}

#[handler]
fn static_file(req: &mut salvo::Request, depot: &mut Depot) -> Reply {
    let name = req.param::<String>("name").unwrap_or_default();
    shared(depot).static_file(&name)
}

/// `GET /sum?a=A&b=B`: the query parsed into the operands by `Request::parse_queries`; a missing
/// or bad operand is salvo's `ParseError`, which it answers 400.
#[handler]
fn sum(req: &mut salvo::Request) -> Result<Reply, ParseError> {
    req.parse_queries::<Operands>().map(handlers::sum)
}

/// `POST /upload`: the body collected by `Request::payload` (salvo's 64 KiB secure maximum by
/// default, 413 over it).
#[handler]
async fn upload(req: &mut salvo::Request) -> Result<Reply, ParseError> {
    req.payload().await.map(|body| handlers::upload(body))
}

/// `POST /json_in`: `Request::parse_json` (400 without a JSON content type or for a bad body);
/// the answer is serialized by the handler, not by salvo's `Json` writer.
#[handler]
async fn json_in(req: &mut salvo::Request) -> Result<Reply, ParseError> {
    req.parse_json::<Operands>().await.map(handlers::json_in)
}

/// `GET /delay?ms=N`: the query parsed by `Request::parse_queries` (an `ms` that is not a `u64`
/// is salvo's `ParseError`, 400); the wait is tokio's timer, the runtime salvo serves on.
#[handler]
async fn delay(req: &mut salvo::Request) -> Result<Reply, ParseError> {
    let wait = req.parse_queries::<Wait>()?;
    Ok(handlers::delay(wait, tokio::time::sleep).await)
}

/// The state `affix_state` put into the depot.
fn shared(depot: &Depot) -> &Shared {
    depot
        .get_typed::<Shared>()
        .expect("affix_state injects the state before every handler")
}

impl Scribe for Reply {
    fn render(self, res: &mut salvo::Response) {
        res.status_code(StatusCode::from_u16(self.status).unwrap_or(StatusCode::NOT_FOUND));
        if let Some(content_type) = self.content_type {
            res.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
            res.body(self.body);
        }
    }
}

/// Answers 404 (as `StaticDir` answers a missing file) to a static request whose path decodes
/// to a NUL byte, before `StaticDir` sees it.
// Fairness: `StaticDir` percent-decodes the path and answers one with a NUL byte with a redirect
// to a directory URL; every other request goes to it unchanged. The check costs one pass over
// the path per static request, as gotham's, iron's and warp's guards do (docs/methodology/fairness.md).
#[handler]
fn nul_guard(req: &mut salvo::Request, res: &mut salvo::Response, ctrl: &mut FlowCtrl) {
    if crate::fixtures::decodes_to_nul(req.uri().path()) {
        res.status_code(StatusCode::NOT_FOUND);
        ctrl.skip_rest();
    }
}

/// A request logger hoop: one line per response, to the variant's target.
struct Logger {
    target: &'static str,
}

#[handler]
impl Logger {
    async fn handle(
        &self,
        req: &mut salvo::Request,
        depot: &mut Depot,
        res: &mut salvo::Response,
        ctrl: &mut FlowCtrl,
    ) {
        let peer = req.remote_addr().clone().into_std();
        let started = Started::now(
            self.target,
            peer.filter(|p| *p != IN_PROCESS_PEER),
            req.method().as_str(),
            req.uri().to_string(),
        );
        ctrl.call_next(req, depot, res).await;
        started.finish(res.status_code.unwrap_or(StatusCode::OK).as_u16());
    }
}

/// Counts every response for `serve --max-requests`.
struct Counter(&'static crate::server::limit::Limit);

#[handler]
impl Counter {
    async fn handle(
        &self,
        req: &mut salvo::Request,
        depot: &mut Depot,
        res: &mut salvo::Response,
        ctrl: &mut FlowCtrl,
    ) {
        ctrl.call_next(req, depot, res).await;
        self.0.record();
    }
}
