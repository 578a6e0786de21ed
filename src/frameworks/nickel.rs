//! `nickel`: nickel 0.11's middleware stack as a nickel app builds it: a logger (when logging is
//! on), a `Router` from `Nickel::router()`, `StaticFilesHandler` (io=disk) or a small
//! middleware (io=memory) mounted at `/static/`, then the 404 fallback `Nickel::listen` adds,
//! with `DefaultErrorHandler` as the error handler.
//!
//! nickel runs on hyper 0.10; both modes go through [`crate::hyper010`]: in-process dispatch
//! includes encoding and parsing the request and the response (see `null-hyper010`), loopback
//! uses hyper 0.10's connection loop on a stoppable pool of `threads` threads (nickel's
//! `thread_count` option).

// `middleware!` closures return nickel's `MiddlewareResult`, whose error type is large: nickel's API.
#![allow(clippy::result_large_err)]

use std::borrow::Cow;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Instant;

use hyper010::header::ContentType;
use hyper010::mime::{Mime, SubLevel, TopLevel};
use hyper010::server::{
    Handler as HyperHandler, Request as HyperRequest, Response as HyperResponse,
};
use nickel::status::StatusCode;
use nickel::{_middleware_inner, as_block, as_pat, middleware};
use nickel::{
    Continue, DefaultErrorHandler, ErrorHandler, Halt, HttpRouter as _, Middleware,
    MiddlewareResult, Mount, ReloadPolicy, StaticFilesHandler, TemplateCache,
};

use crate::fixtures::{self, Fixtures, Miss};
use crate::framework::{Config, Framework, Request, Response, ServerHandle};
use crate::hyper010::{text_html, text_plain};
use crate::logging;
use crate::options::Io;
use crate::redis::SyncStore;

/// The nickel app.
pub struct Nickel {
    server: ArcServer,
    threads: usize,
}

impl Framework for Nickel {
    const NAME: &'static str = "nickel";
    const CRATE: &'static str = "nickel";
    const MAJOR: &'static str = "0.11.";

    fn build(config: &Config) -> anyhow::Result<Self> {
        let fixtures = &config.fixtures;
        let io = config.options.io;
        // What `Nickel::with_data_and_options` and `utilize` would hold.
        let mut handlers: Vec<Box<dyn Middleware<()>>> = Vec::new();
        let error_handlers: Vec<Box<dyn ErrorHandler<()>>> = vec![Box::new(DefaultErrorHandler)];

        if let Some(target) = logging::target(config.options.logging) {
            logging::install();
            handlers.push(Box::new(Logger { target }));
        }

        let mut router = nickel::Nickel::router();
        router.get(
            "/",
            middleware! { |_, mut res|
                res.set(ContentType(text_plain()));
                "Hello, World!"
            },
        );
        router.get(
            "/json",
            middleware! { |_, mut res|
                res.set(ContentType(Mime(TopLevel::Application, SubLevel::Json, vec![])));
                super::json_body()
            },
        );
        // One blocking pool, shared by every worker thread and by in-process requests.
        router.get("/get", RedisGet(SyncStore::new(fixtures)));
        let f = Arc::clone(fixtures);
        router.get(
            "/template",
            middleware! { |_, mut res|
                res.set(ContentType(text_html()));
                f.render()
            },
        );
        router.get(
            "/paste/:name",
            Paste {
                fixtures: Arc::clone(fixtures),
                io,
            },
        );
        handlers.push(Box::new(router));

        match io {
            Io::Disk => handlers.push(Box::new(Mount::new(
                "/static/",
                StaticFilesHandler::new(fixtures.static_dir()),
            ))),
            Io::Memory => handlers.push(Box::new(Mount::new(
                "/static/",
                StaticMemory {
                    fixtures: Arc::clone(fixtures),
                },
            ))),
        }

        // What `Nickel::listen` adds last.
        handlers.push(Box::new(middleware! {
            (StatusCode::NotFound, "File Not Found")
        }));

        Ok(Nickel {
            server: ArcServer(Arc::new(Server {
                handlers,
                error_handlers,
                templates: TemplateCache::with_policy(ReloadPolicy::Never),
                data: (),
            })),
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

/// `/get`: the value of `key` in Redis, through the blocking pool.
struct RedisGet(SyncStore);

impl Middleware<()> for RedisGet {
    fn invoke<'mw, 'conn>(
        &'mw self,
        req: &mut nickel::Request<'mw, 'conn>,
        mut res: nickel::Response<'mw>,
    ) -> MiddlewareResult<'mw> {
        let query = match &req.origin.uri {
            hyper010::uri::RequestUri::AbsolutePath(p) => p.split_once('?').map(|(_, q)| q),
            _ => None,
        };
        let found = self.0.get(crate::redis::key_from_query(query));
        res.set(StatusCode::from_u16(found.status()));
        res.set(ContentType(text_plain()));
        res.send(&found.body()[..])
    }
}

/// `/paste/:name`. nickel's route pattern splits a trailing `.ext` into a `format` parameter,
/// so the name is put back together.
struct Paste {
    fixtures: Arc<Fixtures>,
    io: Io,
}

impl Middleware<()> for Paste {
    fn invoke<'mw, 'conn>(
        &'mw self,
        req: &mut nickel::Request<'mw, 'conn>,
        mut res: nickel::Response<'mw>,
    ) -> MiddlewareResult<'mw> {
        let name = req.param("name").unwrap_or_default();
        let name = match req.param("format") {
            Some(format) if !format.is_empty() => Cow::Owned(format!("{name}.{format}")),
            _ => Cow::Borrowed(name),
        };
        match self.fixtures.paste(&name, self.io) {
            Ok(body) => {
                res.set(ContentType(text_plain()));
                res.send(&body[..])
            }
            Err(miss) => res.error(StatusCode::from_u16(miss.status()), "no such paste"),
        }
    }
}

/// `/static/<name>` with io=memory, behaving as `StaticFilesHandler` does: a bad name is a 400
/// error, a missing file falls through to the next middleware.
struct StaticMemory {
    fixtures: Arc<Fixtures>,
}

impl Middleware<()> for StaticMemory {
    fn invoke<'mw, 'conn>(
        &'mw self,
        req: &mut nickel::Request<'mw, 'conn>,
        mut res: nickel::Response<'mw>,
    ) -> MiddlewareResult<'mw> {
        // `Mount` leaves `/<name>`.
        let path = req.path_without_query().unwrap_or_default();
        let name = path.strip_prefix('/').unwrap_or(path);
        match self.fixtures.static_file(name, Io::Memory) {
            Ok(body) => {
                if let Ok(mime) = fixtures::content_type_for(name).parse::<Mime>() {
                    res.set(ContentType(mime));
                }
                res.send(&body[..])
            }
            Err(Miss::NotFound) => res.next_middleware(),
            Err(Miss::BadName) => res.error(StatusCode::BadRequest, "bad file name"),
        }
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
        let start = Instant::now();
        let target = self.target;
        let peer = req.origin.remote_addr;
        let method = req.origin.method.to_string();
        let uri = req.origin.uri.to_string();
        res.on_send(move |res| {
            let status = res.status().to_u16();
            logging::log_request(target, Some(peer), &method, &uri, status, start.elapsed());
        });
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
