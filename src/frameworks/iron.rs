//! `iron`: iron 0.6 with its companion crates, as an iron app is written: `router` for the
//! routes, `mount` to put `staticfile`'s `Static` (io=disk) or a small handler (io=memory) at
//! `/static/`, and, when logging is on, a `Chain` around it all with a logger middleware.
//!
//! iron runs on hyper 0.10; both modes go through [`crate::hyper010`]: in-process dispatch
//! includes encoding and parsing the request and the response (see `null-hyper010`), loopback
//! uses hyper 0.10's connection loop on a stoppable pool of `threads` threads.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Instant;

use hyper010::server::{
    Handler as HyperHandler, Request as HyperRequest, Response as HyperResponse,
};
use hyper010::uri::RequestUri;
use iron::mime::{Mime, SubLevel, TopLevel};
use iron::{status, AroundMiddleware, Chain, Handler, IronResult, Protocol, Response};
use mount::Mount;
use router::Router;
use staticfile::Static;

use crate::fixtures::{self, Fixtures};
use crate::framework::{Config, Framework, Request, ServerHandle};
use crate::hyper010::{text_html, text_plain};
use crate::logging;
use crate::options::Io;
use crate::redis::SyncStore;

/// The iron app.
pub struct Iron {
    handler: Arc<dyn Handler>,
    threads: usize,
    in_process: DotGuard<RawHandler>,
}

impl Framework for Iron {
    const NAME: &'static str = "iron";
    const CRATE: &'static str = "iron";
    const MAJOR: &'static str = "0.6.";

    fn build(config: &Config) -> anyhow::Result<Self> {
        let fixtures = &config.fixtures;
        let io = config.options.io;

        let mut router = Router::new();
        router.get("/", hello, "hello");
        router.get("/json", json, "json");
        // One blocking pool, shared by every worker thread and by in-process requests.
        let redis = SyncStore::new(fixtures);
        router.get(
            "/get",
            move |req: &mut iron::Request| redis_get(req, &redis),
            "redis",
        );
        let f = Arc::clone(fixtures);
        router.get(
            "/template",
            move |_: &mut iron::Request| template(&f),
            "template",
        );
        let f = Arc::clone(fixtures);
        router.get(
            "/paste/:name",
            move |req: &mut iron::Request| paste(req, &f, io),
            "paste",
        );

        let mut mount = Mount::new();
        mount.mount("/", router);
        match io {
            Io::Disk => mount.mount("/static/", Guarded(Static::new(fixtures.static_dir()))),
            Io::Memory => {
                let f = Arc::clone(fixtures);
                mount.mount("/static/", move |req: &mut iron::Request| {
                    static_memory(req, &f)
                })
            }
        };

        let handler: Arc<dyn Handler> = match logging::target(config.options.logging) {
            None => Arc::new(mount),
            Some(target) => {
                logging::install();
                let mut chain = Chain::new(mount);
                chain.link_around(Logger { target });
                Arc::new(chain)
            }
        };
        Ok(Iron {
            in_process: DotGuard(RawHandler::new(
                Arc::clone(&handler),
                crate::hyper010::LOCAL,
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
    Ok(Response::with((status::Ok, text_plain(), "Hello, World!")))
}

fn redis_get(req: &mut iron::Request, redis: &SyncStore) -> IronResult<Response> {
    let found = redis.get(crate::redis::key_from_query(req.url.query()));
    let status = status::Status::from_u16(found.status());
    Ok(Response::with((
        status,
        text_plain(),
        found.body().to_vec(),
    )))
}

fn json(_: &mut iron::Request) -> IronResult<Response> {
    let mime = Mime(TopLevel::Application, SubLevel::Json, vec![]);
    Ok(Response::with((status::Ok, mime, super::json_body())))
}

fn template(fixtures: &Fixtures) -> IronResult<Response> {
    Ok(Response::with((status::Ok, text_html(), fixtures.render())))
}

fn paste(req: &mut iron::Request, fixtures: &Fixtures, io: Io) -> IronResult<Response> {
    let name = req
        .extensions
        .get::<Router>()
        .and_then(|params| params.find("name"))
        .unwrap_or_default();
    Ok(match fixtures.paste(name, io) {
        Ok(body) => Response::with((status::Ok, text_plain(), &body[..])),
        Err(miss) => Response::with(status::Status::from_u16(miss.status())),
    })
}

/// `/static/<name>` with io=memory; `Mount` has removed the prefix.
fn static_memory(req: &mut iron::Request, fixtures: &Fixtures) -> IronResult<Response> {
    let path = req.url.path();
    let name = if path.len() == 1 { path[0] } else { "" };
    Ok(match fixtures.static_file(name, Io::Memory) {
        Ok(body) => {
            let mime: Mime = fixtures::content_type_for(name)
                .parse()
                .unwrap_or_else(|()| Mime(TopLevel::Application, SubLevel::OctetStream, vec![]));
            Response::with((status::Ok, mime, &body[..]))
        }
        Err(miss) => Response::with(status::Status::from_u16(miss.status())),
    })
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
        let start = Instant::now();
        let res = self.handler.handle(req);
        let status = match &res {
            Ok(res) => res.status,
            Err(err) => err.response.status,
        };
        // iron's `write_back` sends 404 when no status was set.
        let status = status.map_or(404, |s| s.to_u16());
        logging::log_request(
            self.target,
            Some(req.remote_addr),
            req.method.as_ref(),
            &req.url.to_string(),
            status,
            start.elapsed(),
        );
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
