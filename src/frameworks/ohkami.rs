//! ohkami 0.24 on its tokio runtime (`rt_tokio`; ohkami also runs on smol, nio, glommio, monoio
//! and compio, which framebench does not measure): an `Ohkami` of routes with the state put on
//! each request by ohkami's `Context` fang, `Mount` for static files (io=disk), and, when
//! logging is on, a fang (ohkami's middleware) that logs one line per response. `app()` is the
//! only place the app is built: in-process requests go through `ohkami::testing`, ohkami's own
//! way to call an app without a socket (it writes the request as HTTP/1.1 bytes and parses them
//! as its server would), on a current-thread runtime; `Ohkami::howl` serves the same app on the
//! listener with a tokio runtime of `threads` workers.

use std::borrow::Cow;
use std::future::Future as _;
use std::net::TcpListener;
use std::sync::Arc;

use ohkami::claw::{Json, Path, Query};
use ohkami::fang::{Context, Fang, FangProc};
use ohkami::testing::{TestRequest, Tester as _};
use ohkami::{IntoResponse, Ohkami, Route as _, Status};

use crate::framework::{About, Config, Framework, Protocol, Support, Request, Response, ServerHandle, Version};
use crate::handlers::{self, AppState, Operands, Reply, Wait};
use crate::logging::{self, Started};
use crate::options::{Io, KEEP_ALIVE};
use crate::server;
use crate::store::AsyncStore;

/// ohkami behind the framebench trait.
pub(crate) struct OhkamiApp {
    config: Config,
    app: ohkami::testing::TestOhkami,
    rt: tokio::runtime::Runtime,
}

/// What the handlers share, as request context.
type Shared = Arc<AppState<AsyncStore>>;

/// Builds the app: every route, and the logger fang when logging is on.
fn app(config: &Config) -> Ohkami {
    // One pool per app: in-process and served requests run on different runtimes.
    let state: Shared = Arc::new(AppState::new_async(config));
    let routes = Ohkami::new((
        "/".GET(hello),
        "/json".GET(json),
        "/get".GET(redis_get),
        "/template".GET(template),
        "/paste/:name".GET(paste),
        "/sum".GET(sum),
        "/upload".POST(upload),
        "/json_in".POST(json_in),
        "/delay".GET(delay),
        "/ws".GET(ws_echo),
    ));
    // Fairness: ohkami's `Mount` reads every file of the folder into memory when the app is
    // built and serves those bytes, so io=disk serves ohkami's static files from memory, as
    // its facility does (docs/methodology/fairness.md).
    let statics = match config.options.io {
        Io::Disk => Ohkami::new(("/static".Mount(config.fixtures.static_dir()),)),
        Io::Memory => Ohkami::new(("/static/:name".GET(static_file),)),
    };
    let context = Context::new(state);
    match logging::target(config.options.logging) {
        None => Ohkami::new((context, "/".By(routes), "/".By(statics))),
        Some(target) => {
            logging::install();
            Ohkami::new((
                Logger { target },
                context,
                "/".By(routes),
                "/".By(statics),
            ))
        }
    }
}

impl Framework for OhkamiApp {
    const NAME: &'static str = "ohkami";
    const CRATE: &'static str = "ohkami";
    const VERSION_PREFIX: &'static str = "0.24.";
    const ABOUT: About = About {
        crate_label: None,
        version: Version::Locked("`rt_tokio`"),
        companions: &[],
        static_files: "`Mount` (reads the folder into memory at startup)",
        in_process: "`ohkami::testing` (`TestOhkami::oneshot`: the request written as bytes and parsed by ohkami; needs debug assertions, on for ohkami alone)",
        server: "`Ohkami::howl_with` on the listener, tokio with `--threads` workers",
    };
    const COUNTS_REQUESTS: bool = true;
   const COUNTS_MESSAGES: bool = true;
    const PROTOCOLS: &'static [(Protocol, Support)] = &[
        (Protocol::H2c, Support::Unsupported("its parser accepts `HTTP/1.1` only (its README: \"use some reverse proxy to do with HTTP/2\")")),
        (Protocol::Ws, Support::Supported("ohkami's `ws` feature: `WebSocketContext::upgrade` (mews); it takes `Connection: Upgrade` as the whole header only")),
    ];
    const CANNOT: &'static [(&'static str, &'static str)] = &[(
        "upload_chunked",
        "ohkami 0.24.9 reads a request body only by its Content-Length (src/request/mod.rs:341-343), \
         so a chunked body is never read: the handler sees no body",
    )];

    fn build(config: &Config) -> anyhow::Result<Self> {
        let rt = server::in_process_runtime()?;
        Ok(OhkamiApp {
            config: config.clone(),
            app: app(config).test(),
            rt,
        })
    }

    fn dispatch(&self, req: Request) -> anyhow::Result<Response> {
        let (parts, body) = req.into_parts();
        let path = parts.uri.path().to_owned();
        let mut test = match parts.method {
            http::Method::GET => TestRequest::GET(path),
            http::Method::HEAD => TestRequest::HEAD(path),
            http::Method::POST => TestRequest::POST(path),
            http::Method::PUT => TestRequest::PUT(path),
            http::Method::PATCH => TestRequest::PATCH(path),
            http::Method::DELETE => TestRequest::DELETE(path),
            http::Method::OPTIONS => TestRequest::OPTIONS(path),
            other => anyhow::bail!("ohkami's in-process requests have no method {other}"),
        };
        for (key, value) in parts.uri.query().into_iter().flat_map(query_pairs) {
            test = test.query(key, value);
        }
        // Fairness: `TestRequest::content` writes the body's Content-Type (a `&'static str`)
        // and Content-Length itself, under keys spelled `Content-Type` and `Content-Length`;
        // its headers are a map keyed case-sensitively, so the request's own two (`content-type`,
        // `content-length`) would go out a second time. They are left out of the copy, and the
        // request's Content-Type then replaces the placeholder `content` wrote, so a JSON body
        // reaches `Json<T>`. The glue copies the body (`to_vec`), and `ohkami::testing` copies
        // it again when it writes the request as bytes.
        let mut content_type = None;
        for (name, value) in &parts.headers {
            match *name {
                http::header::CONTENT_LENGTH => {}
                http::header::CONTENT_TYPE => content_type = Some(value.to_str()?.to_owned()),
                _ => test = test.header(name.as_str().to_owned(), value.to_str()?.to_owned()),
            }
        }
        if !body.is_empty() {
            test = test.content("application/octet-stream", body.to_vec());
            if let Some(content_type) = content_type {
                test = test.header("Content-Type", content_type);
            }
        }
        self.rt.block_on(async {
            let res = self.app.oneshot(test).await;
            let mut out = http::Response::builder().status(res.status().code());
            for (name, value) in res.headers() {
                out = out.header(name, value);
            }
            // `content("")`: the bytes whatever their type (every type starts with "").
            let body = res.content("").map(<[u8]>::to_vec).unwrap_or_default();
            Ok(out.body(body.into())?)
        })
    }

    fn serve(&self, listener: TcpListener) -> anyhow::Result<ServerHandle> {
        let app = match crate::server::limit::active() {
            // `serve --max-requests`: the counting fang exists only when a limit is set.
            Some(limit) => Ohkami::new((Counter(limit), "/".By(app(&self.config)))),
            None => app(&self.config),
        };
        // Fairness: ohkami's sessions do not set TCP_NODELAY and it has no setting for it; it
        // is set on the listener, which Linux copies to every accepted connection.
        server::nodelay_on_accepted(&listener)?;
        let mut config = ohkami::Config::new();
        config.keepalive_timeout = KEEP_ALIVE.as_secs();
        // Work-stealing only: `howl` installs a process-wide SIGINT handler on its first poll,
        // which framebench puts back right after it; runtimes of `--runtime per-core` would
        // race on that handler (PER_CORE is false).
        server::spawn_work_stealing(
            listener,
            self.config.options.threads,
            move |listener, stop| async move {
                // ohkami stops on SIGINT only: the first poll of `howl` installs its handler
                // through `ctrlc`, which replaces the process's own (framebench's, which every
                // command relies on to stop cleanly). The handler framebench had is put back
                // right after that poll; framebench stops ohkami by dropping the accept loop,
                // and the runtime lets open connections finish for `crate::options::GRACE`.
                let saved = sigint_action();
                let howl = app.howl_with(config, listener);
                tokio::pin!(howl);
                let started = std::future::poll_fn(|cx| {
                    std::task::Poll::Ready(howl.as_mut().poll(cx).is_ready())
                })
                .await;
                if let Some(saved) = saved {
                    restore_sigint(&saved);
                }
                if started {
                    return;
                }
                tokio::select! {
                    () = howl => {}
                    () = std::future::IntoFuture::into_future(stop) => {}
                }
            },
        )
    }
}

/// The process's SIGINT disposition now, or `None` if it cannot be read.
fn sigint_action() -> Option<libc::sigaction> {
    let mut old = std::mem::MaybeUninit::<libc::sigaction>::uninit();
    // SAFETY: a null new action only reads the current one into `old`.
    let rc = unsafe { libc::sigaction(libc::SIGINT, std::ptr::null(), old.as_mut_ptr()) };
    // SAFETY: `sigaction` returned 0, so it filled `old`.
    (rc == 0).then(|| unsafe { old.assume_init() })
}

/// Puts back a SIGINT disposition read by [`sigint_action`].
fn restore_sigint(saved: &libc::sigaction) {
    // SAFETY: `saved` is a disposition the kernel handed out for this very signal.
    unsafe {
        libc::sigaction(libc::SIGINT, saved, std::ptr::null_mut());
    }
}

/// A raw query's pairs, for `TestRequest::query` (which writes them back as `k=v&…`).
fn query_pairs(query: &str) -> impl Iterator<Item = (String, String)> + '_ {
    query.split('&').filter(|p| !p.is_empty()).map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (k.to_owned(), v.to_owned())
    })
}

/// `GET /ws`: the WebSocket echo on ohkami's `ws` feature (mews), which answers a ping itself
/// (and then reads as `Ok(None)`); a Close is echoed with its code.
async fn ws_echo(ctx: ohkami::ws::WebSocketContext<'_>) -> ohkami::ws::WebSocket {
    use ohkami::ws::Message;
    ctx.upgrade(|mut conn| async move {
        let limit = crate::server::limit::active();
        loop {
            match conn.recv().await {
                Ok(Some(Message::Text(text))) => {
                    if conn.send(Message::Text(text)).await.is_err() {
                        break;
                    }
                    if let Some(limit) = limit {
                        limit.record_message();
                    }
                }
                Ok(Some(Message::Binary(bin))) => {
                    if conn.send(Message::Binary(bin)).await.is_err() {
                        break;
                    }
                    if let Some(limit) = limit {
                        limit.record_message();
                    }
                }
                Ok(Some(Message::Close(frame))) => {
                    let _ = conn.send(Message::Close(frame)).await;
                    break;
                }
                Ok(Some(Message::Ping(_) | Message::Pong(_)) | None) => {}
                Err(_) => break,
            }
        }
    })
}

async fn hello() -> Reply {
    handlers::hello()
}

async fn json() -> Reply {
    handlers::json()
}

async fn redis_get(Context(state): Context<'_, Shared>, req: &ohkami::Request) -> Reply {
    // Fairness: ohkami keeps the query only parsed (its `QueryParams` has no raw string); the
    // key is taken through its own decoder, where the others call `key_from_query` on the raw
    // query (docs/methodology/fairness.md).
    let key = req
        .query
        .iter()
        .find(|(k, _)| k == "key")
        .map(|(_, v)| v.into_owned())
        .filter(|v| !v.is_empty());
    state.redis_get_key(key).await
}

async fn template(Context(state): Context<'_, Shared>) -> Reply {
    state.template()
}

async fn paste(Context(state): Context<'_, Shared>, Path(name): Path<Cow<'_, str>>) -> Reply {
    state.paste(&name)
}

async fn static_file(Context(state): Context<'_, Shared>, Path(name): Path<Cow<'_, str>>) -> Reply {
    state.static_file(&name)
}

/// `/sum?a=A&b=B`: the operands deserialized by ohkami's `Query`; a missing or bad one is its
/// 400.
async fn sum(Query(ops): Query<Operands>) -> Reply {
    handlers::sum(ops)
}

/// `/upload`: the body ohkami read by its Content-Length (ohkami's claw has no bytes
/// extractor; the request's `payload()` is its raw body). No body is an empty one.
async fn upload(req: &ohkami::Request) -> Reply {
    handlers::upload(req.payload().unwrap_or_default())
}

/// `/json_in`: the body deserialized by ohkami's `Json`, for an `application/json` body.
async fn json_in(Json(ops): Json<Operands>) -> Reply {
    handlers::json_in(ops)
}

/// `/delay?ms=N`: the wait deserialized by ohkami's `Query` (an `ms` that is not a `u64` is its
/// 400); the wait is tokio's timer, ohkami's runtime here (`rt_tokio`).
async fn delay(Query(wait): Query<Wait>) -> Reply {
    handlers::delay(wait, tokio::time::sleep).await
}

impl IntoResponse for Reply {
    fn into_response(self) -> ohkami::Response {
        // Every reply's status is a standard code, which ohkami's own table covers.
        let res = ohkami::Response::new(Status::from(self.status));
        match self.content_type {
            // Fairness: an ohkami payload owns its bytes or borrows them for 'static; the
            // reply's `Bytes` are copied into it once per response (docs/methodology/fairness.md).
            Some(content_type) => res.with_payload(content_type, self.body.to_vec()),
            None => res,
        }
    }
}

/// A request logger fang: one line per response, to the variant's target.
#[derive(Clone)]
struct Logger {
    target: &'static str,
}

impl<Inner: FangProc> Fang<Inner> for Logger {
    type Proc = LoggerProc<Inner>;

    fn chain(&self, inner: Inner) -> Self::Proc {
        LoggerProc {
            target: self.target,
            inner,
        }
    }
}

/// [`Logger`] around the rest of the app.
struct LoggerProc<Inner> {
    target: &'static str,
    inner: Inner,
}

impl<Inner: FangProc> FangProc for LoggerProc<Inner> {
    async fn bite<'b>(&'b self, req: &'b mut ohkami::Request) -> ohkami::Response {
        let started = Started::now(
            self.target,
            Some(std::net::SocketAddr::new(req.ip, 0)).filter(|p| !p.ip().is_unspecified()),
            req.method.as_str(),
            req.path.str().into_owned(),
        );
        let res = self.inner.bite(req).await;
        started.finish(res.status.code());
        res
    }
}

/// Counts every response for `serve --max-requests`.
#[derive(Clone)]
struct Counter(&'static crate::server::limit::Limit);

impl<Inner: FangProc> Fang<Inner> for Counter {
    type Proc = CounterProc<Inner>;

    fn chain(&self, inner: Inner) -> Self::Proc {
        CounterProc(self.0, inner)
    }
}

/// [`Counter`] around the rest of the app.
struct CounterProc<Inner>(&'static crate::server::limit::Limit, Inner);

impl<Inner: FangProc> FangProc for CounterProc<Inner> {
    async fn bite<'b>(&'b self, req: &'b mut ohkami::Request) -> ohkami::Response {
        let res = self.1.bite(req).await;
        self.0.record();
        res
    }
}
