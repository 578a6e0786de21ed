//! `nickel`: nickel 0.11's middleware stack as a nickel app builds it: a logger (when logging is
//! on), a `Router` from `Nickel::router()`, `StaticFilesHandler` (io=disk) or a small
//! middleware (io=memory) mounted at `/static/`, then the 404 fallback `Nickel::listen` adds,
//! with `DefaultErrorHandler` as the error handler.
//!
//! nickel runs on hyper 0.10; both modes go through [`crate::hyper010`]: in-process dispatch
//! includes encoding and parsing the request and the response (see `null-hyper010`), loopback
//! uses hyper 0.10's connection loop on a stoppable pool of `threads` threads (nickel's
//! `thread_count` option).
//!
//! The query and body routes use nickel's own extractors: `QueryString::query()` for the
//! operands, `Read` on `req.origin` (hyper 0.10's request) for the upload, because nickel's
//! `BodyReader` reads the body into a `String` and fails on the upload's random bytes, and
//! `JsonBody::json_as` for JSON. nickel reads a body of any size (no limit), and reads a chunked
//! one through hyper 0.10 as iron does (see `iron`).

// `middleware!` closures return nickel's `MiddlewareResult`, whose error type is large: nickel's API.
#![allow(clippy::result_large_err)]

use std::borrow::Cow;
use std::io::Read;
use std::net::TcpListener;
use std::sync::Arc;

use hyper010::header::ContentType;
use hyper010::server::{
    Handler as HyperHandler, Request as HyperRequest, Response as HyperResponse,
};
use nickel::status::StatusCode;
use nickel::{_middleware_inner, as_block, as_pat, middleware};
use nickel::{
    Continue, DefaultErrorHandler, ErrorHandler, Halt, HttpRouter as _, JsonBody as _, Middleware,
    MiddlewareResult, Mount, Query, QueryString as _, ReloadPolicy, StaticFilesHandler,
    TemplateCache,
};

use crate::framework::{About, Config, Framework, Protocol, Support, Request, Response, ServerHandle, Version};
use crate::handlers::{self, AppState, Operands, Reply};
use crate::logging::{self, Started};
use crate::options::{Io, Transport};
use crate::store::SyncStore;

/// The nickel app.
pub(crate) struct Nickel {
    server: ArcServer,
    threads: usize,
}

/// What the routes share.
type App = Arc<AppState<SyncStore>>;

/// Builds the middleware stack as `Nickel::utilize` and `Nickel::listen` would: the logger when
/// logging is on, the router, `/static/`, then the 404 fallback.
fn app(config: &Config) -> Server {
    let app: App = Arc::new(AppState::new_sync(config));
    // What `Nickel::with_data_and_options` and `utilize` would hold.
    let mut handlers: Vec<Box<dyn Middleware<()>>> = Vec::new();
    let error_handlers: Vec<Box<dyn ErrorHandler<()>>> = vec![Box::new(DefaultErrorHandler)];

    if let Some(target) = logging::target(config.options.logging) {
        logging::install();
        handlers.push(Box::new(Logger { target }));
    }

    let mut router = nickel::Nickel::router();
    let with = |handle| Route {
        app: Arc::clone(&app),
        handle,
    };
    router.get("/", with(hello));
    router.get("/json", with(json));
    router.get("/get", with(redis_get));
    router.get("/template", with(template));
    router.get("/paste/:name", with(paste));
    router.get("/sum", with(sum));
    router.post("/upload", with(upload));
    router.post("/json_in", with(json_in));
    router.get("/delay", with(delay));
    handlers.push(Box::new(router));

    handlers.push(match config.options.io {
        Io::Disk => Box::new(Mount::new(
            "/static/",
            StaticFilesHandler::new(config.fixtures.static_dir()),
        )),
        Io::Memory => Box::new(Mount::new("/static/", StaticMemory(app))),
    });

    // What `Nickel::listen` adds last.
    handlers.push(Box::new(middleware! {
        (StatusCode::NotFound, "File Not Found")
    }));

    Server {
        handlers,
        error_handlers,
        templates: TemplateCache::with_policy(ReloadPolicy::Never),
        data: (),
    }
}

impl Framework for Nickel {
    const NAME: &'static str = "nickel";
    const CRATE: &'static str = "nickel";
    const VERSION_PREFIX: &'static str = "0.11.";
    const ABOUT: About = About {
        crate_label: None,
        version: Version::Locked(""),
        companions: &[],
        static_files: "`StaticFilesHandler`",
        in_process: "request bytes through hyper 0.10's parser, nickel's middleware chain",
        server: "hyper 0.10 connection loop, pool of `--threads`",
    };
    const COUNTS_REQUESTS: bool = true;
    const THREAD_PER_CONNECTION: bool = true;
    const PROTOCOLS: &'static [(Protocol, Support)] = &[
        (Protocol::H2c, Support::Unsupported("hyper 0.10 speaks HTTP/1 only")),
        (Protocol::Ws, Support::Unsupported("hyper 0.10's server writes the response when the handler returns and keeps the socket: no upgrade")),
    ];
    const TRANSPORTS: &'static [(Transport, Support)] = &[(
        Transport::Tls,
        Support::Unsupported("hyper 0.10's server takes TLS through its `SslServer` trait, whose crates (hyper-native-tls, hyper-openssl) are OpenSSL's; none is on rustls"),
    )];
    const CANNOT: &'static [(&'static str, &'static str)] = &[];

    fn build(config: &Config) -> anyhow::Result<Self> {
        Ok(Nickel {
            server: ArcServer(Arc::new(app(config))),
            threads: config.options.threads,
        })
    }

    fn dispatch(&self, req: Request) -> anyhow::Result<Response> {
        crate::hyper010::dispatch(&self.server, req)
    }

    fn serve(&self, listener: TcpListener) -> anyhow::Result<ServerHandle> {
        crate::hyper010::serve(listener, self.threads, self.server.clone())
    }
}

fn hello(_: &App, _: &mut NickelRequest) -> Reply {
    handlers::hello()
}

fn json(_: &App, _: &mut NickelRequest) -> Reply {
    handlers::json()
}

fn redis_get(app: &App, req: &mut NickelRequest) -> Reply {
    let query = match &req.origin.uri {
        hyper010::uri::RequestUri::AbsolutePath(p) => p.split_once('?').map(|(_, q)| q),
        _ => None,
    };
    app.redis_get(query)
}

fn template(app: &App, _: &mut NickelRequest) -> Reply {
    app.template()
}

/// nickel's route pattern splits a trailing `.ext` into a `format` parameter, so the name is put
/// back together.
fn paste(app: &App, req: &mut NickelRequest) -> Reply {
    let name = req.param("name").unwrap_or_default();
    let name = match req.param("format") {
        Some(format) if !format.is_empty() => Cow::Owned(format!("{name}.{format}")),
        _ => Cow::Borrowed(name),
    };
    app.paste(&name)
}

/// `/sum?a=A&b=B`: the operands from nickel's parsed query; 400 when one is missing or bad.
fn sum(_: &App, req: &mut NickelRequest) -> Reply {
    operands(req.query()).map_or(Reply::error(400), handlers::sum)
}

/// The two operands of a parsed query, each a `u32`.
fn operands(query: &Query) -> Option<Operands> {
    Some(Operands {
        a: query.get("a")?.parse().ok()?,
        b: query.get("b")?.parse().ok()?,
    })
}

/// `/upload`: the whole body, read through `Read` on hyper's request.
fn upload(_: &App, req: &mut NickelRequest) -> Reply {
    let mut body = Vec::new();
    match req.origin.read_to_end(&mut body) {
        Ok(_) => handlers::upload(&body),
        Err(_) => Reply::error(400),
    }
}

/// `/json_in`: the operands deserialized with `JsonBody::json_as`; 400 when the body is not
/// such an object.
fn json_in(_: &App, req: &mut NickelRequest) -> Reply {
    req.json_as::<Operands>()
        .map_or(Reply::error(400), handlers::json_in)
}

/// `/delay?ms=N`: the wait from nickel's parsed query (400 when `ms` is not a `u64`), slept on
/// the pool thread that holds the connection, nickel's model: hyper 0.10 has no timer, and a
/// waiting request keeps its thread (docs/methodology/delay.md).
fn delay(_: &App, req: &mut NickelRequest) -> Reply {
    let ms = match req.query().get("ms").map(str::parse) {
        None => None,
        Some(Ok(ms)) => Some(ms),
        Some(Err(_)) => return Reply::error(400),
    };
    handlers::delay_blocking(handlers::Wait { ms }, std::thread::sleep)
}

/// A request as the routes see it.
type NickelRequest<'mw, 'conn> = nickel::Request<'mw, 'conn>;

/// A route: one of the functions above, with the app's state.
struct Route {
    app: App,
    handle: for<'mw, 'conn> fn(&App, &mut NickelRequest<'mw, 'conn>) -> Reply,
}

impl Middleware<()> for Route {
    fn invoke<'mw, 'conn>(
        &'mw self,
        req: &mut nickel::Request<'mw, 'conn>,
        res: nickel::Response<'mw>,
    ) -> MiddlewareResult<'mw> {
        respond(res, (self.handle)(&self.app, req))
    }
}

/// A [`Reply`] as nickel's response; an error without a body goes to nickel's error handler.
fn respond(mut res: nickel::Response<'_>, reply: Reply) -> MiddlewareResult<'_> {
    let status = StatusCode::from_u16(reply.status);
    let Some(content_type) = reply.content_type else {
        return res.error(status, "no such file");
    };
    res.set(status);
    res.set(ContentType(crate::hyper010::mime(content_type)));
    res.send(&reply.body[..])
}

/// `/static/<name>` with io=memory, behaving as `StaticFilesHandler` does: a bad name is a 400
/// error, a missing file falls through to the next middleware.
struct StaticMemory(App);

impl Middleware<()> for StaticMemory {
    fn invoke<'mw, 'conn>(
        &'mw self,
        req: &mut nickel::Request<'mw, 'conn>,
        res: nickel::Response<'mw>,
    ) -> MiddlewareResult<'mw> {
        // `Mount` leaves `/<name>`.
        let path = req.path_without_query().unwrap_or_default();
        let reply = self.0.static_file(path.strip_prefix('/').unwrap_or(path));
        if reply.is_error() && reply.status == 404 {
            return res.next_middleware();
        }
        respond(res, reply)
    }
}

/// The request logger. nickel runs middleware in sequence, with no hook after the response,
/// so it registers an `on_send` callback: the line is logged when the response head is sent,
/// with the status and the latency up to that point.
struct Logger {
    target: &'static str,
}

impl Middleware<()> for Logger {
    fn invoke<'mw, 'conn>(
        &'mw self,
        req: &mut nickel::Request<'mw, 'conn>,
        mut res: nickel::Response<'mw>,
    ) -> MiddlewareResult<'mw> {
        let started = Started::now(
            self.target,
            Some(req.origin.remote_addr),
            req.origin.method.as_ref(),
            req.origin.uri.to_string(),
        );
        res.on_send(move |res| started.finish(res.status().to_u16()));
        res.next_middleware()
    }
}

/// nickel's private `Server` (nickel-0.11.0/src/server.rs): the middleware stack, the template
/// cache and the shared data.
struct Server {
    handlers: Vec<Box<dyn Middleware<()>>>,
    error_handlers: Vec<Box<dyn ErrorHandler<()>>>,
    templates: TemplateCache,
    data: (),
}

/// Fairness: nickel keeps its `MiddlewareStack` and the hyper 0.10 handler around it
/// (`ArcServer`) private, and `Nickel::listen` starts hyper 0.10's server, which cannot be
/// stopped. This is a copy of `ArcServer::handle` and of `MiddlewareStack::invoke`'s loop
/// (nickel-0.11.0/src/server.rs and middleware.rs), running the same middleware, built the
/// same way: per request it does what nickel does.
#[derive(Clone)]
struct ArcServer(Arc<Server>);

impl HyperHandler for ArcServer {
    fn handle<'a, 'k>(&'a self, req: HyperRequest<'a, 'k>, res: HyperResponse<'a>) {
        let nickel_req = nickel::Request::from_internal(req, &self.0.data);
        let nickel_res = nickel::Response::from_internal(res, &self.0.templates, &self.0.data);
        self.0.invoke(nickel_req, nickel_res);
    }
}

impl Server {
    /// `MiddlewareStack::invoke`.
    fn invoke<'mw, 'conn>(
        &'mw self,
        mut req: nickel::Request<'mw, 'conn>,
        mut res: nickel::Response<'mw>,
    ) {
        for handler in &self.handlers {
            match handler.invoke(&mut req, res) {
                Ok(Halt(res)) => {
                    log::debug!(
                        "Halted {:?} {:?} {:?} {:?}",
                        req.origin.method,
                        req.origin.remote_addr,
                        req.origin.uri,
                        res.status()
                    );
                    let _ = res.end();
                    return;
                }
                Ok(Continue(fresh)) => res = fresh,
                Err(mut err) => {
                    log::warn!(
                        "{:?} {:?} {:?} {:?} {:?}",
                        req.origin.method,
                        req.origin.remote_addr,
                        req.origin.uri,
                        err.message,
                        err.stream.as_ref().map(|s| s.status())
                    );
                    for error_handler in self.error_handlers.iter().rev() {
                        if let Halt(()) = error_handler.handle_error(&mut err, &mut req) {
                            err.end();
                            return;
                        }
                    }
                    log::warn!(
                        "Unhandled error: {:?} {:?} {:?} {:?} {:?}",
                        req.origin.method,
                        req.origin.remote_addr,
                        req.origin.uri,
                        err.message,
                        err.stream.map(|s| s.status())
                    );
                    return;
                }
            }
        }
    }
}
