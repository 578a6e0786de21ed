//! `gotham`: Gotham 0.8 as a Gotham app is written: a `Router` from `build_router`, path
//! extractors for the named routes, `to_dir` for static files (io=disk) or a handler
//! (io=memory), and, when logging is on, a logger handler around the router (not a pipeline
//! middleware: pipelines run only for matched routes, so a 404 would go unlogged).
//!
//! In-process requests go through `State::from_request` and `gotham::service::call_handler`,
//! the two public calls Gotham's own hyper service makes for every request, so routing, the
//! pipeline and the handlers all run without a socket. Gotham's `TestServer` is not used for
//! this: it binds a loopback socket and sends requests through a hyper client, which is the
//! loopback mode, not in-process. Loopback runs `gotham::bind_server` on the given listener, on
//! a tokio runtime of `threads` workers.

use std::net::{SocketAddr, TcpListener};
use std::panic::{AssertUnwindSafe, RefUnwindSafe};
use std::pin::Pin;
use std::sync::Arc;

use futures_util::FutureExt as _;
use gotham::handler::{
    DirHandler, FilePathExtractor, Handler, HandlerFuture, HandlerResult, MapHandlerError as _,
    NewHandler,
};
use gotham::helpers::http::response::{create_empty_response, create_response};
use gotham::helpers::http::Body;
use gotham::hyper::{Method, StatusCode, Uri};
use gotham::mime;
use gotham::pipeline::PipelineHandleChain;
use gotham::router::builder::{DefineSingleRoute as _, DrawRoutes};
use gotham::router::response::StaticResponseExtender;
use gotham::router::Router;
use gotham::state::{client_addr, FromState as _, State, StateData};
use http_body_util::{BodyExt as _, Full};
use serde::Deserialize;

use crate::framework::{About, Config, Framework, Protocol, Support, Request, Response, ServerHandle, Version};
use crate::handlers::{self, AppState, Operands, Reply, Wait};
use crate::logging::{self, Started};
use crate::options::{Io, Transport};
use crate::oracle::{JSON, TEXT_HTML, TEXT_PLAIN};
use crate::store::AsyncStore;

use super::built::Built;

/// The Gotham app.
pub(crate) struct Gotham(Built<Logged>);

/// The peer address in-process requests carry.
const IN_PROCESS_PEER: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 0);

/// Builds the router with every route, and the logger around it when logging is on.
fn app(config: &Config) -> Logged {
    let target = logging::target(config.options.logging);
    if target.is_some() {
        logging::install();
    }
    Logged {
        router: gotham::router::builder::build_simple_router(|route| draw(route, config)),
        target,
    }
}

/// Every route of the oracle, in route order.
fn draw<D, C, P>(route: &mut D, config: &Config)
where
    D: DrawRoutes<C, P>,
    C: PipelineHandleChain<P> + Copy + Send + Sync + 'static,
    P: RefUnwindSafe + Send + Sync + 'static,
{
    // One pool per router: in-process and served requests run on different runtimes.
    let app = Arc::new(AppState::new_async(config));
    let with = |handle| Route {
        app: Arc::clone(&app),
        handle,
    };
    route.get("/").to(hello);
    route.get("/json").to(json);
    route.get("/get").to_new_handler(RedisGet(Arc::clone(&app)));
    route.get("/template").to_new_handler(with(template));
    route
        .get("/paste/:name")
        .with_path_extractor::<NameParam>()
        .to_new_handler(with(paste));
    route
        .get("/sum")
        .with_query_string_extractor::<SumQuery>()
        .to(sum);
    route.post("/upload").to_async(upload);
    route.post("/json_in").to_async(json_in);
    route.get("/ws").to(ws_echo);
    route
        .get("/delay")
        .with_query_string_extractor::<DelayQuery>()
        .to_async(delay);
    match config.options.io {
        Io::Disk => route
            .get("/static/*")
            .with_path_extractor::<FilePathExtractor>()
            .to_new_handler(NulGuard(DirHandler::new(
                config.fixtures.static_dir().to_path_buf(),
            ))),
        Io::Memory => route
            .get("/static/:name")
            .with_path_extractor::<NameParam>()
            .to_new_handler(with(static_file)),
    }
}

impl Framework for Gotham {
    const NAME: &'static str = "gotham";
    const CRATE: &'static str = "gotham";
    const COUNTS_MESSAGES: bool = true;
    const VERSION_PREFIX: &'static str = "0.8.";
    const ABOUT: About = About {
        crate_label: None,
        version: Version::Locked(""),
        companions: &[],
        static_files: "`to_dir` (`DirHandler`)",
        in_process: "`State::from_request` + `gotham::service::call_handler`",
        server: "`gotham::bind_server` on tokio with `--threads` workers",
    };
    const PER_CORE: bool = true;
    const PROTOCOLS: &'static [(Protocol, Support)] = &[
        (Protocol::H2c, Support::Supported("`gotham::bind_server` (hyper-util's auto builder: it reads the preface on every connection, HTTP/1.1 ones too)")),
        (Protocol::H2, Support::Unsupported("framebench has not wired its TLS server to HTTP/2: gotham's `bind_server` serves hyper's HTTP/1.1 connections")),
        (Protocol::Ws, Support::Supported("tokio-tungstenite on hyper's `OnUpgrade`, as gotham's `websocket` example (gotham has no WebSocket layer)")),
    ];
    const TRANSPORTS: &'static [(Transport, Support)] = &[(
        Transport::Tls,
        Support::Supported("tokio-rustls in `bind_server`'s `wrap`, which is what `gotham::tls` does (its `rustls` feature would build aws-lc, and it binds its own address)"),
    )];
    const CANNOT: &'static [(&'static str, &'static str)] = &[];

    fn build(config: &Config) -> anyhow::Result<Self> {
        Built::new(config, app).map(Gotham)
    }

    fn dispatch(&self, req: Request) -> anyhow::Result<Response> {
        self.0.rt.block_on(async {
            let state = State::from_request(req.map(Full::new), IN_PROCESS_PEER);
            let res =
                gotham::service::call_handler(self.0.app.clone(), AssertUnwindSafe(state)).await?;
            super::built::collected(res).await
        })
    }

    fn serve(&self, listener: TcpListener) -> anyhow::Result<ServerHandle> {
        // A router of its own: its Redis pool must not share connections with the in-process
        // runtime.
        let router = app(&self.0.config);
        // Gotham's `bind_server` serves connections with hyper-util's auto builder at its
        // defaults and exposes no setting: no idle keep-alive timeout, like axum
        // (docs/methodology/loopback.md).
        // TLS: gotham's own TLS server is `bind_server` with a `wrap` that shakes hands
        // (`gotham::tls`, which binds its own address; its `rustls` feature would build aws-lc):
        // the same wrap here with the run's acceptor, on the connection's own task.
        let tls = match self.0.config.options.transport {
            Transport::Tls => Some(crate::transport::tls::acceptor(self.0.config.options.protocol)?),
            Transport::Tcp => None,
        };
        self.0.spawn(listener, move |listener, stop| {
            let (router, tls) = (router.clone(), tls.clone());
            async move {
                // Every framebench server sets TCP_NODELAY on accepted connections.
                match tls {
                    None => {
                        let serve = gotham::bind_server(listener, router, |tcp| {
                            let _ = tcp.set_nodelay(true);
                            std::future::ready(Ok(tcp))
                        });
                        tokio::select! {
                            _ = serve => {}
                            () = stop => {}
                        }
                    }
                    Some(acceptor) => {
                        let serve = gotham::bind_server(listener, router, move |tcp| {
                            let _ = tcp.set_nodelay(true);
                            let acceptor = acceptor.clone();
                            Box::pin(async move {
                                crate::transport::tls::accept(&acceptor, tcp).await.ok_or(())
                            })
                        });
                        tokio::select! {
                            _ = serve => {}
                            () = stop => {}
                        }
                    }
                }
            }
        })
    }
}

/// `GET /ws`: the WebSocket echo, as gotham's `websocket` example writes it: the handshake's
/// `101` by hand, the upgraded connection (hyper's `OnUpgrade`, which gotham's server keeps
/// with upgrades on) to tokio-tungstenite on a task of its own.
fn ws_echo(mut state: State) -> (State, Res) {
    use gotham::hyper::header::{HeaderValue, CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, UPGRADE};
    use gotham::hyper::upgrade::OnUpgrade;
    use gotham::hyper::HeaderMap;
    let headers = HeaderMap::borrow_from(&state);
    let accept = super::tungstenite_echo::accept_key(
        headers.get(SEC_WEBSOCKET_KEY).map(HeaderValue::as_bytes),
        headers.get(UPGRADE).map(HeaderValue::as_bytes),
    );
    let (Some(accept), Some(on_upgrade)) = (accept, OnUpgrade::try_take_from(&mut state)) else {
        let res = create_empty_response(&state, StatusCode::BAD_REQUEST);
        return (state, res);
    };
    tokio::spawn(async move {
        if let Ok(upgraded) = on_upgrade.await {
            super::tungstenite_echo::echo(gotham::hyper_util::rt::TokioIo::new(upgraded)).await;
        }
    });
    let mut res = create_empty_response(&state, StatusCode::SWITCHING_PROTOCOLS);
    let h = res.headers_mut();
    h.insert(CONNECTION, HeaderValue::from_static("upgrade"));
    h.insert(UPGRADE, HeaderValue::from_static("websocket"));
    if let Ok(accept) = HeaderValue::from_str(&accept) {
        h.insert(SEC_WEBSOCKET_ACCEPT, accept);
    }
    (state, res)
}

fn hello(state: State) -> (State, Res) {
    let res = respond(&state, handlers::hello());
    (state, res)
}

fn json(state: State) -> (State, Res) {
    let res = respond(&state, handlers::json());
    (state, res)
}

fn template(app: &App, _: &mut State) -> Reply {
    app.template()
}

fn paste(app: &App, state: &mut State) -> Reply {
    let NameParam { name } = NameParam::take_from(state);
    app.paste(&name)
}

fn static_file(app: &App, state: &mut State) -> Reply {
    let NameParam { name } = NameParam::take_from(state);
    app.static_file(&name)
}

/// `GET /sum?a=A&b=B`: the operands from Gotham's query string extractor, which answers 400
/// (`StaticResponseExtender`) for a missing or bad one before this runs.
fn sum(mut state: State) -> (State, Res) {
    let SumQuery { a, b } = SumQuery::take_from(&mut state);
    let res = respond(&state, handlers::sum(Operands { a, b }));
    (state, res)
}

/// `POST /upload`: the request body taken from the state and collected.
async fn upload(mut state: State) -> HandlerResult {
    let body = match collect_body(&mut state).await {
        Ok(body) => body,
        Err(err) => return Err((state, err)),
    };
    let res = respond(&state, handlers::upload(&body));
    Ok((state, res))
}

/// `POST /json_in`: the body collected, then deserialized with serde_json, as Gotham has no
/// JSON extractor; 400 for a bad body.
async fn json_in(mut state: State) -> HandlerResult {
    let operands = collect_body(&mut state).await.and_then(|body| {
        serde_json::from_slice::<Operands>(&body).map_err_with_status(StatusCode::BAD_REQUEST)
    });
    match operands {
        Ok(operands) => {
            let res = respond(&state, handlers::json_in(operands));
            Ok((state, res))
        }
        Err(err) => Err((state, err)),
    }
}

/// `GET /delay?ms=N`: the wait from Gotham's query string extractor, which answers 400 for an
/// `ms` that is not a `u64` before this runs, on tokio's timer, the runtime Gotham serves on.
async fn delay(mut state: State) -> HandlerResult {
    let DelayQuery { ms } = DelayQuery::take_from(&mut state);
    let reply = handlers::delay(Wait { ms }, tokio::time::sleep).await;
    let res = respond(&state, reply);
    Ok((state, res))
}

/// The request body, taken from the state and collected whole (Gotham sets no limit); a body
/// that fails to arrive is a 400.
async fn collect_body(state: &mut State) -> Result<bytes::Bytes, gotham::handler::HandlerError> {
    Body::take_from(state)
        .collect()
        .await
        .map(|body| body.to_bytes())
        .map_err_with_status(StatusCode::BAD_REQUEST)
}

/// `/get`: the value of `key` in Redis, through the router's async pool.
#[derive(Clone)]
struct RedisGet(Arc<App>);

impl Handler for RedisGet {
    fn handle(self, state: State) -> Pin<Box<HandlerFuture>> {
        let reply = self.0.redis_get(Uri::borrow_from(&state).query());
        Box::pin(async move {
            let reply = reply.await;
            let res = respond(&state, reply);
            Ok((state, res))
        })
    }
}

/// Gotham's response type.
type Res = gotham::hyper::Response<gotham::helpers::http::Body>;

/// A [`Reply`] as Gotham's response, made with Gotham's response helpers.
fn respond(state: &State, reply: Reply) -> Res {
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::NOT_FOUND);
    let Some(content_type) = reply.content_type else {
        return create_empty_response(state, status);
    };
    // The oracle's constants map to Gotham's own mime values, as a handler would name them; only
    // a static file's type is parsed.
    let mime = match content_type {
        TEXT_PLAIN => mime::TEXT_PLAIN_UTF_8,
        TEXT_HTML => mime::TEXT_HTML_UTF_8,
        JSON => mime::APPLICATION_JSON,
        other => other.parse().unwrap_or(mime::APPLICATION_OCTET_STREAM),
    };
    create_response(state, status, mime, reply.body)
}

/// The `:name` segment of `/paste/:name` and `/static/:name`.
#[derive(Deserialize, StateData, StaticResponseExtender)]
struct NameParam {
    name: String,
}

/// The query string of `/sum`, Gotham's way: a struct its query string extractor fills.
#[derive(Deserialize, StateData, StaticResponseExtender)]
struct SumQuery {
    a: u32,
    b: u32,
}

/// The query string of `/delay`: [`Wait`] as Gotham's query string extractor wants it.
#[derive(Deserialize, StateData, StaticResponseExtender)]
struct DelayQuery {
    ms: Option<u64>,
}

/// The app's state.
type App = AppState<AsyncStore>;

/// A synchronous route: one of the functions above, with the app's state.
#[derive(Clone)]
struct Route {
    app: Arc<App>,
    handle: fn(&App, &mut State) -> Reply,
}

// Gotham requires `RefUnwindSafe` of every `NewHandler`. The fixtures are read-only after
// startup and the Redis pool is internally synchronized (a connection checked out by a
// panicking handler is dropped, not returned): a panic cannot leave either half updated.
impl RefUnwindSafe for Route {}
impl RefUnwindSafe for RedisGet {}

impl NewHandler for Route {
    type Instance = Self;

    fn new_handler(&self) -> anyhow::Result<Self> {
        Ok(self.clone())
    }
}

impl Handler for Route {
    fn handle(self, mut state: State) -> Pin<Box<HandlerFuture>> {
        let reply = (self.handle)(&self.app, &mut state);
        let res = respond(&state, reply);
        Box::pin(std::future::ready(Ok((state, res))))
    }
}

impl NewHandler for RedisGet {
    type Instance = Self;

    fn new_handler(&self) -> anyhow::Result<Self> {
        Ok(self.clone())
    }
}

/// Gotham's `DirHandler` (what `to_dir` routes to) behind a guard.
// Fairness: `DirHandler` hands a percent-decoded NUL byte to the file system, which refuses the
// path, and answers that I/O error with 500. The guard answers 400 when a segment of the path
// decodes to a NUL byte; every other request goes to `DirHandler` unchanged (it removes `..`
// itself). The check costs one pass over the path per static request, as iron's guard does.
#[derive(Clone)]
struct NulGuard(DirHandler);

impl RefUnwindSafe for NulGuard {}

impl NewHandler for NulGuard {
    type Instance = Self;

    fn new_handler(&self) -> anyhow::Result<Self> {
        Ok(self.clone())
    }
}

impl Handler for NulGuard {
    fn handle(self, state: State) -> Pin<Box<HandlerFuture>> {
        let nul = crate::fixtures::decodes_to_nul(Uri::borrow_from(&state).path());
        if nul {
            let res = create_empty_response(&state, StatusCode::BAD_REQUEST);
            return Box::pin(std::future::ready(Ok((state, res))));
        }
        self.0.handle(state)
    }
}

/// The router, and around it, when logging is on, a request logger: one line per response, to
/// the variant's target.
// Fairness: Gotham's idiom for a logger is a middleware in a pipeline (its own `RequestLogger`
// is one), but pipelines run only for requests that match a route: the router answers a 404
// without any pipeline, so that logger never logs one. Every other framework logs its 404s, so
// this logger wraps the router itself; with logging off it costs one `Option` check per request
// (docs/methodology/loopback.md).
#[derive(Clone)]
struct Logged {
    router: Router,
    target: Option<&'static str>,
}

impl NewHandler for Logged {
    type Instance = Self;

    fn new_handler(&self) -> anyhow::Result<Self> {
        Ok(self.clone())
    }
}

impl Handler for Logged {
    fn handle(self, state: State) -> Pin<Box<HandlerFuture>> {
        let Some(target) = self.target else {
            return self.router.handle(state);
        };
        let started = Started::now(
            target,
            client_addr(&state).filter(|a| *a != IN_PROCESS_PEER),
            Method::borrow_from(&state).as_str(),
            Uri::borrow_from(&state).to_string(),
        );
        self.router
            .handle(state)
            .map(move |result| {
                started.finish(match &result {
                    Ok((_, res)) => res.status().as_u16(),
                    Err((_, err)) => err.status().as_u16(),
                });
                result
            })
            .boxed()
    }
}
