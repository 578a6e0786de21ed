//! `iron`: iron 0.6 with its companion crates, as an iron app is written: `router` for the
//! routes, `mount` to put `staticfile`'s `Static` (io=disk) or a small handler (io=memory) at
//! `/static/`, and, when logging is on, a `Chain` around it all with a logger middleware.
//!
//! iron runs on hyper 0.10; both modes go through [`crate::hyper010`]: in-process dispatch
//! includes encoding and parsing the request and the response (see `null-hyper010`), loopback
//! uses hyper 0.10's connection loop on a stoppable pool of `threads` threads.
//!
//! The query and body routes use what iron 0.6 itself offers, as its docs and examples do: the
//! raw query of `req.url` (iron has no typed query; the `urlencoded` companion crate is not in
//! the lock), `Read` on `req.body` for the upload, and `serde_json::from_reader(&mut req.body)`
//! for JSON (the `bodyparser` companion crate is not in the lock either), with iron's `iexpect!`
//! and `itry!` answering 400 to bad input. iron reads a body of any size (no limit), and reads a
//! chunked one: hyper 0.10 reads any `Transfer-Encoding` body as chunked
//! (hyper-0.10.16/src/server/request.rs:49-51; the `todo!` there is hyper's own macro, which only
//! logs at trace level, src/lib.rs:161).

use std::io::Read;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

use hyper010::server::{
    Handler as HyperHandler, Request as HyperRequest, Response as HyperResponse,
};
use hyper010::uri::RequestUri;
use iron::{iexpect, itry};
use iron::{status, AroundMiddleware, Chain, Handler, IronResult, Protocol, Response};
use mount::Mount;
use router::Router;
use staticfile::Static;

use crate::framework::{About, Config, Framework, Support, Request, ServerHandle, Version};
use crate::handlers::{self, AppState, Reply};
use crate::logging::{self, Started};
use crate::options::{Io, Transport};
use crate::store::SyncStore;

/// The iron app.
pub(crate) struct Iron {
    handler: Arc<dyn Handler>,
    threads: usize,
    in_process: DotGuard<RawHandler>,
}

/// What the routes share.
type App = Arc<AppState<SyncStore>>;

/// Builds the app: `Router` for the routes, `Mount` for `/static/`, and a `Chain` with the
/// logger around it all when logging is on.
fn app(config: &Config) -> Arc<dyn Handler> {
    let app: App = Arc::new(AppState::new_sync(config));
    let mut router = Router::new();
    router.get("/", hello, "hello");
    router.get("/json", json, "json");
    let a = Arc::clone(&app);
    router.get(
        "/get",
        move |req: &mut iron::Request| redis_get(req, &a),
        "redis",
    );
    let a = Arc::clone(&app);
    router.get(
        "/template",
        move |_: &mut iron::Request| template(&a),
        "template",
    );
    let a = Arc::clone(&app);
    router.get(
        "/paste/:name",
        move |req: &mut iron::Request| paste(req, &a),
        "paste",
    );
    router.get("/sum", sum, "sum");
    router.post("/upload", upload, "upload");
    router.post("/json_in", json_in, "json_in");
    router.get("/delay", delay, "delay");

    let mut mount = Mount::new();
    mount.mount("/", router);
    match config.options.io {
        Io::Disk => mount.mount(
            "/static/",
            Guarded(Static::new(config.fixtures.static_dir())),
        ),
        Io::Memory => mount.mount("/static/", move |req: &mut iron::Request| {
            static_file(req, &app)
        }),
    };

    match logging::target(config.options.logging) {
        None => Arc::new(mount),
        Some(target) => {
            logging::install();
            let mut chain = Chain::new(mount);
            chain.link_around(Logger { target });
            Arc::new(chain)
        }
    }
}

impl Framework for Iron {
    const NAME: &'static str = "iron";
    const CRATE: &'static str = "iron";
    const VERSION_PREFIX: &'static str = "0.6.";
    const ABOUT: About = About {
        crate_label: None,
        version: Version::Locked(""),
        companions: &[("staticfile", "0.5."), ("mount", "0.4."), ("router", "0.6.")],
        static_files: "`staticfile` + `mount`, `router`",
        in_process: "request bytes through hyper 0.10's parser, iron's `Handler`",
        server: "hyper 0.10 connection loop, pool of `--threads`",
    };
    const COUNTS_REQUESTS: bool = true;
    const THREAD_PER_CONNECTION: bool = true;
    const PROTOCOLS: &'static [(crate::options::Protocol, Support)] = &[
        (crate::options::Protocol::H2c, Support::Unsupported("hyper 0.10 speaks HTTP/1 only")),
        (crate::options::Protocol::Ws, Support::Unsupported("hyper 0.10's server writes the response when the handler returns and keeps the socket: no upgrade, and iron's body hides the stream")),
    ];
    const TRANSPORTS: &'static [(Transport, Support)] = &[(
        Transport::Tls,
        Support::Unsupported("hyper 0.10's server takes TLS through its `SslServer` trait, whose crates (hyper-native-tls, hyper-openssl) are OpenSSL's; none is on rustls"),
    )];
    const CANNOT: &'static [(&'static str, &'static str)] = &[];

    fn build(config: &Config) -> anyhow::Result<Self> {
        let handler = app(config);
        Ok(Iron {
            in_process: DotGuard(RawHandler::new(
                Arc::clone(&handler),
                crate::hyper010::IN_PROCESS_SERVER_ADDR,
            )),
            handler,
            threads: config.options.threads,
        })
    }

    fn dispatch(&self, req: Request) -> anyhow::Result<crate::framework::Response> {
        crate::hyper010::dispatch(&self.in_process, req)
    }

    fn serve(&self, listener: TcpListener) -> anyhow::Result<ServerHandle> {
        let raw = RawHandler::new(Arc::clone(&self.handler), listener.local_addr()?);
        crate::hyper010::serve(listener, self.threads, DotGuard(raw))
    }
}

fn hello(_: &mut iron::Request) -> IronResult<Response> {
    Ok(respond(handlers::hello()))
}

fn json(_: &mut iron::Request) -> IronResult<Response> {
    Ok(respond(handlers::json()))
}

fn redis_get(req: &mut iron::Request, app: &App) -> IronResult<Response> {
    Ok(respond(app.redis_get(req.url.query())))
}

fn template(app: &App) -> IronResult<Response> {
    Ok(respond(app.template()))
}

fn paste(req: &mut iron::Request, app: &App) -> IronResult<Response> {
    let name = req
        .extensions
        .get::<Router>()
        .and_then(|params| params.find("name"))
        .unwrap_or_default();
    Ok(respond(app.paste(name)))
}

/// `/sum?a=A&b=B`: the operands from the raw query; 400 when one is missing or bad.
fn sum(req: &mut iron::Request) -> IronResult<Response> {
    let operands = iexpect!(handlers::operands_from_query(req.url.query()));
    Ok(respond(handlers::sum(operands)))
}

/// `/upload`: the whole body, read through `Read` on `req.body`.
fn upload(req: &mut iron::Request) -> IronResult<Response> {
    let mut body = Vec::new();
    itry!(req.body.read_to_end(&mut body), status::BadRequest);
    Ok(respond(handlers::upload(&body)))
}

/// `/json_in`: the operands deserialized from the body with serde_json's reader; 400 when the
/// body is not such an object.
fn json_in(req: &mut iron::Request) -> IronResult<Response> {
    let operands: handlers::Operands =
        itry!(serde_json::from_reader(&mut req.body), status::BadRequest);
    Ok(respond(handlers::json_in(operands)))
}

/// `/delay?ms=N`: the wait from the raw query (400 when `ms` is not a `u64`), slept on the
/// pool thread that holds the connection, iron's model: hyper 0.10 has no timer, and a waiting
/// request keeps its thread (docs/methodology/delay.md).
fn delay(req: &mut iron::Request) -> IronResult<Response> {
    let wait = iexpect!(handlers::wait_from_query(req.url.query()));
    Ok(respond(handlers::delay_blocking(wait, std::thread::sleep)))
}

/// `/static/<name>` with io=memory; `Mount` has removed the prefix.
fn static_file(req: &mut iron::Request, app: &App) -> IronResult<Response> {
    let path = req.url.path();
    let name = if path.len() == 1 { path[0] } else { "" };
    Ok(respond(app.static_file(name)))
}

/// A [`Reply`] as iron's response.
fn respond(reply: Reply) -> Response {
    let status = status::Status::from_u16(reply.status);
    let Some(content_type) = reply.content_type else {
        return Response::with(status);
    };
    // `Vec::from` keeps a rendered page's buffer (no copy); shared bytes are copied, as before.
    let body = Vec::from(reply.body);
    Response::with((status, crate::hyper010::mime(content_type), body))
}

/// `staticfile::Static` behind a guard.
// Fairness: staticfile 0.5 percent-decodes each path segment with `decode_utf8().unwrap()`, so
// `%c0%ae` panics the worker, and hands a decoded NUL byte to the file system, which answers
// 500. The guard answers 400 to a segment that does not decode to UTF-8 without NUL; every
// other request (including the `..` cases, which staticfile normalizes itself) goes to Static
// unchanged. The check costs one pass over the path per static request.
struct Guarded(Static);

impl Handler for Guarded {
    fn handle(&self, req: &mut iron::Request) -> IronResult<Response> {
        let clean = req.url.path().iter().all(|segment| {
            percent_encoding::percent_decode_str(segment)
                .decode_utf8()
                .is_ok_and(|s| !s.contains('\0'))
        });
        if !clean {
            return Ok(Response::with(status::BadRequest));
        }
        self.0.handle(req)
    }
}

/// The request logger: an `AroundMiddleware`, so that it sees errors (such as the router's
/// 404) as well as responses.
struct Logger {
    target: &'static str,
}

struct Logged {
    target: &'static str,
    handler: Box<dyn Handler>,
}

impl AroundMiddleware for Logger {
    fn around(self, handler: Box<dyn Handler>) -> Box<dyn Handler> {
        Box::new(Logged {
            target: self.target,
            handler,
        })
    }
}

impl Handler for Logged {
    fn handle(&self, req: &mut iron::Request) -> IronResult<Response> {
        let started = Started::now(
            self.target,
            Some(req.remote_addr),
            req.method.as_ref(),
            req.url.to_string(),
        );
        let res = self.handler.handle(req);
        let status = match &res {
            Ok(res) => res.status,
            Err(err) => err.response.status,
        };
        // iron's `write_back` sends 404 when no status was set.
        started.finish(status.map_or(404, |s| s.to_u16()));
        res
    }
}

/// Fairness: a copy of iron's private `RawHandler` (iron-0.6.1/src/iron.rs), which
/// `Iron::listen` puts between hyper 0.10 and the iron handler. iron does not expose it, and
/// `Iron::listen` starts hyper 0.10's server, which cannot be stopped; the copy does the same
/// work per request: `Request::from_http`, the handler, `Response::write_back`.
struct RawHandler {
    handler: Arc<dyn Handler>,
    addr: SocketAddr,
    protocol: Protocol,
}

impl RawHandler {
    fn new(handler: Arc<dyn Handler>, addr: SocketAddr) -> Self {
        RawHandler {
            handler,
            addr,
            protocol: Protocol::http(),
        }
    }
}

impl HyperHandler for RawHandler {
    fn handle(&self, http_req: HyperRequest, mut http_res: HyperResponse) {
        // Set some defaults in case request handler panics.
        *http_res.status_mut() = status::InternalServerError;
        match iron::Request::from_http(http_req, self.addr, &self.protocol) {
            Ok(mut req) => self
                .handler
                .handle(&mut req)
                .unwrap_or_else(|e| {
                    log::error!("Error handling:\n{req:?}\nError was: {:?}", e.error);
                    e.response
                })
                .write_back(http_res),
            Err(e) => {
                log::error!("Error creating request:\n    {e}");
                *http_res.status_mut() = status::BadRequest;
                if let Ok(res) = http_res.start() {
                    let _ = res.end();
                }
            }
        }
    }
}

/// Answers 400 to a request whose path has a dot segment, before iron sees it.
// Fairness: iron parses the request target with the `url` crate, which removes dot segments
// (`.`, `..`, `%2e`, `.%2e`, `%2e%2e`, with `\` as a separator too) as the URL standard says,
// so `/paste/..` is routed as `/` and answered 200 "Hello, World!". Nothing leaks, but the
// oracle wants such paths refused, and iron offers no hook before the URL is parsed. This
// wrapper scans the raw path of every request once (a few ns) and refuses dot segments; every
// other request goes to `RawHandler` untouched.
struct DotGuard<H>(H);

impl<H: HyperHandler> HyperHandler for DotGuard<H> {
    fn handle<'a, 'k>(&'a self, req: HyperRequest<'a, 'k>, mut res: HyperResponse<'a>) {
        if let RequestUri::AbsolutePath(path) = &req.uri {
            if has_dot_segment(path) {
                *res.status_mut() = status::BadRequest;
                let _ = res.send(b"");
                return;
            }
        }
        self.0.handle(req, res);
    }
}

fn has_dot_segment(path: &str) -> bool {
    let path = path.split('?').next().unwrap_or_default();
    path.split(['/', '\\']).any(|segment| {
        [".", "..", "%2e", ".%2e", "%2e.", "%2e%2e"]
            .iter()
            .any(|dot| segment.eq_ignore_ascii_case(dot))
    })
}
