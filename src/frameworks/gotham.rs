//! `gotham`: Gotham 0.8 as a Gotham app is written: a `Router` from `build_router`, path
//! extractors for the named routes, `to_dir` for static files (io=disk) or a handler
//! (io=memory), and, when logging is on, a logger middleware in the router's single pipeline.
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
use std::time::Instant;

use bytes::Bytes;
use futures_util::FutureExt as _;
use gotham::handler::{DirHandler, FilePathExtractor, Handler, HandlerFuture, NewHandler};
use gotham::helpers::http::response::{create_empty_response, create_response};
use gotham::hyper::{Method, StatusCode, Uri};
use gotham::middleware::{Middleware, NewMiddleware};
use gotham::mime;
use gotham::pipeline::{new_pipeline, single_pipeline, PipelineHandleChain};
use gotham::router::builder::{build_router, DefineSingleRoute as _, DrawRoutes};
use gotham::router::response::StaticResponseExtender;
use gotham::router::Router;
use gotham::state::{client_addr, FromState as _, State, StateData};
use http_body_util::{BodyExt as _, Full};
use serde::Deserialize;

use crate::fixtures::{content_type_for, Fixtures};
use crate::framework::{Config, Framework, Request, Response, ServerHandle};
use crate::logging;
use crate::options::Io;
use crate::redis::AsyncStore;
use crate::server;

/// The Gotham app.
pub struct Gotham {
    router: Router,
    config: Config,
    threads: usize,
    rt: tokio::runtime::Runtime,
}

/// The peer address in-process requests carry.
const LOCAL: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 0);

/// Builds the router: every route, and the logger middleware when logging is on.
fn app(config: &Config) -> Router {
    match logging::target(config.options.logging) {
        None => gotham::router::builder::build_simple_router(|route| draw(route, config)),
        Some(target) => {
            logging::install();
            let (chain, pipelines) = single_pipeline(new_pipeline().add(Logger { target }).build());
            build_router(chain, pipelines, |route| draw(route, config))
        }
    }
}

fn draw<D, C, P>(route: &mut D, config: &Config)
where
    D: DrawRoutes<C, P>,
    C: PipelineHandleChain<P> + Copy + Send + Sync + 'static,
    P: RefUnwindSafe + Send + Sync + 'static,
{
    let fixtures = &config.fixtures;
    let io = config.options.io;
    route.get("/").to(hello);
    route.get("/json").to(json);
    // One pool per router: in-process and served requests run on different runtimes.
    route
        .get("/get")
        .to_new_handler(RedisGet(AsyncStore::new(fixtures)));
    route
        .get("/template")
        .to_new_handler(Fixture::new(fixtures, io, Kind::Template));
    route
        .get("/paste/:name")
        .with_path_extractor::<NameParam>()
        .to_new_handler(Fixture::new(fixtures, io, Kind::Paste));
    match io {
        Io::Disk => route
            .get("/static/*")
            .with_path_extractor::<FilePathExtractor>()
            .to_new_handler(NulGuard(DirHandler::new(
                fixtures.static_dir().to_path_buf(),
            ))),
        Io::Memory => route
            .get("/static/:name")
            .with_path_extractor::<NameParam>()
            .to_new_handler(Fixture::new(fixtures, io, Kind::Static)),
    }
}

impl Framework for Gotham {
    const NAME: &'static str = "gotham";
    const CRATE: &'static str = "gotham";
    const MAJOR: &'static str = "0.8.";

    fn build(config: &Config) -> anyhow::Result<Self> {
        // Gotham's `to_dir` reads files through tokio::fs, which needs the blocking pool.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(Gotham {
            router: app(config),
            config: config.clone(),
            threads: config.options.threads,
            rt,
        })
    }

    fn dispatch(&self, req: Request) -> anyhow::Result<Response> {
        self.rt.block_on(async {
            let state = State::from_request(req.map(Full::new), LOCAL);
            let res =
                gotham::service::call_handler(self.router.clone(), AssertUnwindSafe(state)).await?;
            let (parts, body) = res.into_parts();
            let body = body.collect().await?.to_bytes();
            Ok(Response::from_parts(parts, body))
        })
    }

    fn serve(&self, listener: TcpListener) -> anyhow::Result<ServerHandle> {
        // A router of its own: its Redis pool must not share connections with the in-process
        // runtime.
        let router = app(&self.config);
        // Gotham's `bind_server` serves connections with hyper-util's auto builder at its
        // defaults and exposes no setting: no idle keep-alive timeout, like axum
        // (docs/methodology.md).
        server::spawn_tokio(listener, self.threads, |listener, stop| async move {
            // Every framebench server sets TCP_NODELAY on accepted connections.
            let serve = gotham::bind_server(listener, router, |tcp| {
                let _ = tcp.set_nodelay(true);
                std::future::ready(Ok(tcp))
            });
            tokio::select! {
                _ = serve => {}
                () = stop => {}
            }
        })
    }
}

fn hello(state: State) -> (State, gotham::hyper::Response<gotham::helpers::http::Body>) {
    let res = create_response(
        &state,
        StatusCode::OK,
        mime::TEXT_PLAIN_UTF_8,
        "Hello, World!",
    );
    (state, res)
}

fn json(state: State) -> (State, gotham::hyper::Response<gotham::helpers::http::Body>) {
    let res = create_response(
        &state,
        StatusCode::OK,
        mime::APPLICATION_JSON,
        super::json_body(),
    );
    (state, res)
}

/// The `:name` segment of `/paste/:name` and `/static/:name`.
#[derive(Deserialize, StateData, StaticResponseExtender)]
struct NameParam {
    name: String,
}

#[derive(Clone, Copy)]
enum Kind {
    Template,
    Paste,
    Static,
}

/// A handler that answers from the fixtures.
#[derive(Clone)]
struct Fixture {
    fixtures: Arc<Fixtures>,
    io: Io,
    kind: Kind,
}

impl Fixture {
    fn new(fixtures: &Arc<Fixtures>, io: Io, kind: Kind) -> Self {
        Fixture {
            fixtures: Arc::clone(fixtures),
            io,
            kind,
        }
    }

    fn respond(&self, state: &mut State) -> gotham::hyper::Response<gotham::helpers::http::Body> {
        let (found, mime) = match self.kind {
            Kind::Template => {
                let page = Bytes::from(self.fixtures.render());
                return create_response(state, StatusCode::OK, mime::TEXT_HTML_UTF_8, page);
            }
            Kind::Paste => {
                let NameParam { name } = NameParam::take_from(state);
                (self.fixtures.paste(&name, self.io), mime::TEXT_PLAIN_UTF_8)
            }
            Kind::Static => {
                let NameParam { name } = NameParam::take_from(state);
                let mime = content_type_for(&name)
                    .parse()
                    .unwrap_or(mime::APPLICATION_OCTET_STREAM);
                (self.fixtures.static_file(&name, Io::Memory), mime)
            }
        };
        match found {
            Ok(body) => create_response(state, StatusCode::OK, mime, body),
            Err(miss) => create_empty_response(
                state,
                StatusCode::from_u16(miss.status()).unwrap_or(StatusCode::NOT_FOUND),
            ),
        }
    }
}

// The fixtures are read-only after startup: a panic in a handler cannot leave them half
// updated, which is what `RefUnwindSafe` asks (Gotham requires it of every `NewHandler`).
impl RefUnwindSafe for Fixture {}

impl NewHandler for Fixture {
    type Instance = Self;

    fn new_handler(&self) -> anyhow::Result<Self> {
        Ok(self.clone())
    }
}

impl Handler for Fixture {
    fn handle(self, mut state: State) -> Pin<Box<HandlerFuture>> {
        let res = self.respond(&mut state);
        Box::pin(std::future::ready(Ok((state, res))))
    }
}

/// `/get`: the value of `key` in Redis, through the router's async pool.
#[derive(Clone)]
struct RedisGet(AsyncStore);

// The pool is shared, internally synchronized state that a panicking handler cannot leave half
// updated (a connection checked out by it is dropped, not returned).
impl RefUnwindSafe for RedisGet {}

impl NewHandler for RedisGet {
    type Instance = Self;

    fn new_handler(&self) -> anyhow::Result<Self> {
        Ok(self.clone())
    }
}

impl Handler for RedisGet {
    fn handle(self, state: State) -> Pin<Box<HandlerFuture>> {
        let key = crate::redis::key_from_query(Uri::borrow_from(&state).query());
        Box::pin(async move {
            let found = self.0.get(key).await;
            let status = StatusCode::from_u16(found.status()).unwrap_or(StatusCode::BAD_GATEWAY);
            let res = create_response(&state, status, mime::TEXT_PLAIN_UTF_8, found.body());
            Ok((state, res))
        })
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
        let nul = Uri::borrow_from(&state)
            .path()
            .split('/')
            .any(|seg| percent_encoding::percent_decode_str(seg).any(|b| b == 0));
        if nul {
            let res = create_empty_response(&state, StatusCode::BAD_REQUEST);
            return Box::pin(std::future::ready(Ok((state, res))));
        }
        self.0.handle(state)
    }
}

/// A request logger middleware: one line per response, to the variant's target.
#[derive(Clone, Copy)]
struct Logger {
    target: &'static str,
}

impl NewMiddleware for Logger {
    type Instance = Self;

    fn new_middleware(&self) -> anyhow::Result<Self> {
        Ok(*self)
    }
}

impl Middleware for Logger {
    fn call<Chain>(self, state: State, chain: Chain) -> Pin<Box<HandlerFuture>>
    where
        Chain: FnOnce(State) -> Pin<Box<HandlerFuture>> + Send + 'static,
    {
        let start = Instant::now();
        let method = Method::borrow_from(&state).clone();
        let uri = Uri::borrow_from(&state).to_string();
        let peer = client_addr(&state).filter(|a| *a != LOCAL);
        let target = self.target;
        chain(state)
            .map(move |result| {
                let status = match &result {
                    Ok((_, res)) => res.status().as_u16(),
                    Err((_, err)) => err.status().as_u16(),
                };
                logging::log_request(target, peer, method.as_str(), &uri, status, start.elapsed());
                result
            })
            .boxed()
    }
}
