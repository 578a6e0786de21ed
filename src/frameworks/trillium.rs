//! trillium 1 on tokio (trillium-tokio): a sequence of handlers, the way a trillium app is
//! written: trillium's `State` handler with the shared state, trillium-logger's `Logger` when
//! logging is on, then a trillium-router `Router` of async functions, with trillium-static's
//! `StaticFileHandler` for static files (io=disk). `app()` is the only place the handler is
//! built: in-process requests are trillium's synthetic conns (a `trillium_http::Conn` over an
//! in-memory transport, the conn trillium's own testing crate builds) run through the handler
//! and its `before_send`, as trillium's server runs each request it reads, on a current-thread
//! runtime, without a socket; trillium-tokio serves the same handler on the listener with a
//! tokio runtime of `threads` workers.

use std::net::TcpListener;
use std::sync::Arc;

use trillium::{BoxedHandler, Conn, Error, Handler, Info, KnownHeaderName, State, Status};
use trillium_logger::{apache_common, Logger};
use trillium_router::{Router, RouterConnExt as _};
use trillium_static::StaticFileHandler;

use crate::framework::{About, Config, Framework, Protocol, Support, Request, Response, ServerHandle, Version};
use crate::handlers::{self, AppState, Operands, Reply};
use crate::logging;
use crate::options::{Io, Transport};
use crate::store::AsyncStore;

use super::built::Built;

/// trillium behind the framebench trait.
pub(crate) struct Trillium(Built<BoxedHandler>);

/// What the handlers share, as conn state.
type Shared = Arc<AppState<AsyncStore>>;

/// Builds the handler: the state, the logger when logging is on, then every route.
fn app(config: &Config) -> BoxedHandler {
    // One pool per handler: in-process and served requests run on different runtimes.
    let state: Shared = Arc::new(AppState::new_async(config));
    let router = Router::new()
        .get("/", hello)
        .get("/json", json)
        .get("/get", redis_get)
        .get("/template", template)
        .get("/paste/:name", paste)
        .get("/sum", sum)
        .post("/upload", upload)
        .post("/json_in", json_in)
        .get("/delay", delay)
        .get("/ws", ws_echo());
    let router = match config.options.io {
        // Fairness: `StaticFileHandler` resolves a path that decodes to a NUL byte to an error
        // from the file system, not a 404; the guard before it answers 404 first
        // (docs/methodology/fairness.md).
        Io::Disk => router.get(
            "/static/*",
            (
                nul_guard,
                StaticFileHandler::new(config.fixtures.static_dir()),
            ),
        ),
        Io::Memory => router.get("/static/:name", static_file),
    };
    match logging::target(config.options.logging) {
        None => BoxedHandler::new((State::new(state), router)),
        // trillium-logger's Apache common log line, written through the `log` crate to the
        // variant's target: trillium's own logger, with framebench's two destinations.
        Some(target) => {
            logging::install();
            let logger = Logger::new()
                .with_formatter(apache_common("-", "-"))
                .without_init_message()
                .with_target(move |line: String| log::info!(target: target, "{line}"));
            BoxedHandler::new((State::new(state), logger, router))
        }
    }
}

impl Framework for Trillium {
    const NAME: &'static str = "trillium";
    const CRATE: &'static str = "trillium";
    const VERSION_PREFIX: &'static str = "1.";
    const ABOUT: About = About {
        crate_label: None,
        version: Version::Locked(""),
        companions: &[("trillium-http", "1."), ("trillium-tokio", "0.6."), ("trillium-router", "0.6."), ("trillium-static", "0.6."), ("trillium-logger", "0.5.")],
        static_files: "trillium-static `StaticFileHandler` (behind a NUL guard)",
        in_process: "a synthetic conn (`trillium_http::Conn::new_synthetic`) through `run` + `before_send`",
        server: "trillium-tokio's server on the prebound listener, tokio with `--threads` workers",
    };
    const PER_CORE: bool = true;
    const COUNTS_REQUESTS: bool = true;
   const COUNTS_MESSAGES: bool = true;
    const NOTE: &'static str = "no keep-alive timeout";
    const PROTOCOLS: &'static [(Protocol, Support)] = &[
        (Protocol::H2c, Support::Supported("`trillium_tokio` (trillium-http's own HTTP/2: it reads the preface on every connection, HTTP/1.1 ones too)")),
        (Protocol::H2, Support::Unsupported("framebench has not wired its TLS server to HTTP/2: trillium's HTTP/2 is h2c, on a server of its own")),
        (Protocol::Ws, Support::Supported("trillium-websockets (async-tungstenite)")),
    ];
    const TRANSPORTS: &'static [(Transport, Support)] = &[(
        Transport::Tls,
        Support::Supported("trillium-rustls's `RustlsAcceptor` through `with_acceptor` (the handshake on the connection's task, with no time bound of trillium's)"),
    )];
    const CANNOT: &'static [(&'static str, &'static str)] = &[];

    fn build(config: &Config) -> anyhow::Result<Self> {
        let mut built = Built::new(config, app)?;
        // trillium's server calls `init` once before the first request; so does this.
        let info = &mut Info::from(trillium_http::HttpContext::default());
        built.rt.block_on(built.app.init(info));
        Ok(Trillium(built))
    }

    fn dispatch(&self, req: Request) -> anyhow::Result<Response> {
        self.0.rt.block_on(async {
            let (parts, body) = req.into_parts();
            let method: trillium::Method = parts.method.as_str().parse()?;
            let path = parts
                .uri
                .path_and_query()
                .map_or("/", |p| p.as_str())
                .to_owned();
            // Fairness: `new_synthetic` copies the body into its in-memory transport (a
            // trillium body owns its bytes), once per request, and sets `Content-Length` from
            // it, as trillium's server reads it from the head. The request's own
            // `Content-Length` is skipped: appended, it would be a second value, which
            // trillium-http reads as no length, so reading the body would wait for an end of
            // stream the synthetic transport never gives.
            let mut conn = trillium_http::Conn::new_synthetic(method, path, body.to_vec());
            for (name, value) in &parts.headers {
                if name == http::header::CONTENT_LENGTH {
                    continue;
                }
                conn.request_headers_mut()
                    .append(name.as_str().to_owned(), value.to_str()?.to_owned());
            }
            let conn = self.0.app.run(Conn::from(conn)).await;
            let mut conn = self.0.app.before_send(conn).await;
            // What trillium's server sends for a conn no handler answered.
            let status = conn.status().unwrap_or(Status::NotFound);
            let mut out = http::Response::builder().status(status as u16);
            for (name, values) in conn.response_headers() {
                for value in values {
                    out = out.header(name.as_ref(), value.as_ref());
                }
            }
            let body = match conn.take_response_body() {
                Some(body) => body.into_bytes().await?.into_owned(),
                None => Vec::new(),
            };
            Ok(out.body(body.into())?)
        })
    }

    fn serve(&self, listener: TcpListener) -> anyhow::Result<ServerHandle> {
        // A handler is not `Clone` (trillium's own `Arc` wrapper is private): each runtime of
        // `--runtime per-core` builds its own, and one work-stealing runtime builds one.
        let config = self.0.config.clone();
        let build = move || {
            let handler = app(&config);
            // `serve --max-requests`: the counting handler exists only when a limit is set.
            match crate::server::limit::active() {
                Some(limit) => BoxedHandler::new((handler, Counter(limit))),
                None => handler,
            }
        };
        // TLS: trillium-rustls's acceptor on the run's certificate, as trillium's docs show it.
        let tls = match self.0.config.options.transport {
            Transport::Tls => Some(trillium_rustls::RustlsAcceptor::from(
                (*crate::transport::tls::server_config(self.0.config.options.protocol)?).clone(),
            )),
            Transport::Tcp => None,
        };
        self.0.spawn(listener, move |listener, stop| {
            let (handler, tls) = (build(), tls.clone());
            async move {
                // Fairness: trillium's HTTP/1 has no idle keep-alive timeout (its config has
                // none); a connection stays open until the client closes it or the server
                // stops (docs/methodology/loopback.md).
                let config = trillium_tokio::config()
                    .without_signals()
                    .with_nodelay()
                    .with_prebound_server(listener);
                // `with_acceptor` changes the config's type: the same three steps for either.
                macro_rules! run {
                    ($config:expr) => {{
                        let config = $config;
                        let handle = config.handle();
                        tokio::spawn(async move {
                            stop.await;
                            handle.shut_down().await;
                        });
                        config.run_async(handler).await;
                    }};
                }
                match tls {
                    Some(acceptor) => run!(config.with_acceptor(acceptor)),
                    None => run!(config),
                }
            }
        })
    }
}

/// `GET /ws`: the WebSocket echo through trillium-websockets, as its docs write it; tungstenite
/// under it answers a ping and a Close.
fn ws_echo() -> trillium_websockets::WebSocket<impl trillium_websockets::WebSocketHandler> {
    use futures_util::StreamExt as _;
    use trillium_websockets::{Message, WebSocketConn};
    trillium_websockets::websocket(|mut conn: WebSocketConn| async move {
        let limit = crate::server::limit::active();
        while let Some(Ok(msg)) = conn.next().await {
            if matches!(msg, Message::Text(_) | Message::Binary(_)) {
                if conn.send(msg).await.is_err() {
                    break;
                }
                if let Some(limit) = limit {
                    limit.record_message();
                }
            }
        }
    })
}

async fn hello(conn: Conn) -> Conn {
    respond(conn, handlers::hello())
}

async fn json(conn: Conn) -> Conn {
    respond(conn, handlers::json())
}

async fn redis_get(conn: Conn) -> Conn {
    let reply = shared(&conn).redis_get(Some(conn.querystring())).await;
    respond(conn, reply)
}

async fn template(conn: Conn) -> Conn {
    let reply = shared(&conn).template();
    respond(conn, reply)
}

async fn paste(conn: Conn) -> Conn {
    let reply = shared(&conn).paste(conn.param("name").unwrap_or_default());
    respond(conn, reply)
}

async fn static_file(conn: Conn) -> Conn {
    let reply = shared(&conn).static_file(conn.param("name").unwrap_or_default());
    respond(conn, reply)
}

/// `GET /sum?a=A&b=B`: trillium's core has no typed query extractor (`Conn::querystring` hands
/// over the raw string and its docs point to outside crates, none in the lock), so the operands
/// are parsed by framebench's shared parser; 400 for a missing or bad one.
async fn sum(conn: Conn) -> Conn {
    let reply = handlers::operands_from_query(Some(conn.querystring()))
        .map_or(Reply::error(400), handlers::sum);
    respond(conn, reply)
}

/// `POST /upload`: the body read whole with `RequestBody::read_bytes`.
async fn upload(mut conn: Conn) -> Conn {
    let reply = match conn.request_body().read_bytes().await {
        Ok(body) => handlers::upload(&body),
        Err(err) => Reply::error(body_error(&err)),
    };
    respond(conn, reply)
}

/// `POST /json_in`: the body read whole, then deserialized with serde_json, as trillium's core
/// has no JSON extractor; 400 for a bad body.
async fn json_in(mut conn: Conn) -> Conn {
    let reply = match conn.request_body().read_bytes().await {
        Ok(body) => {
            serde_json::from_slice::<Operands>(&body).map_or(Reply::error(400), handlers::json_in)
        }
        Err(err) => Reply::error(body_error(&err)),
    };
    respond(conn, reply)
}

/// `GET /delay?ms=N`: the wait parsed by framebench's shared parser from `Conn::querystring`
/// (as `/sum`; 400 for an `ms` that is not a `u64`), then tokio's timer: trillium's own runtime
/// delay on trillium-tokio (`TokioRuntime::delay`) is `tokio::time::sleep`.
async fn delay(conn: Conn) -> Conn {
    let reply = match handlers::wait_from_query(Some(conn.querystring())) {
        Some(wait) => handlers::delay(wait, tokio::time::sleep).await,
        None => Reply::error(400),
    };
    respond(conn, reply)
}

/// The status for a body that could not be read: 413 when its `Content-Length` is over
/// trillium's maximum (10 MB by default, `HttpConfig::received_body_max_len`), 400 otherwise. A
/// chunked body over the maximum comes as an I/O error (trillium-http's chunked decoder), so
/// 400.
fn body_error(err: &Error) -> u16 {
    match err {
        Error::ReceivedBodyTooLong(_) => 413,
        _ => 400,
    }
}

/// The state trillium's `State` handler put on the conn.
fn shared(conn: &Conn) -> &Shared {
    conn.state::<Shared>()
        .expect("the State handler runs before every route")
}

/// The one conversion from [`Reply`]: status, content type and body on the conn, halted.
// Fairness: a trillium body owns its bytes or borrows them for 'static; the reply's `Bytes`
// are copied into it once per response (docs/methodology/fairness.md).
fn respond(conn: Conn, reply: Reply) -> Conn {
    let conn = conn.with_status(reply.status).halt();
    match reply.content_type {
        Some(content_type) => conn
            .with_response_header(KnownHeaderName::ContentType, content_type)
            .with_body(reply.body.to_vec()),
        None => conn,
    }
}

/// Answers 404 (as `StaticFileHandler` answers a missing file) to a static request whose path
/// decodes to a NUL byte, before the handler sees it.
async fn nul_guard(conn: Conn) -> Conn {
    if crate::fixtures::decodes_to_nul(conn.path()) {
        conn.with_status(Status::NotFound).halt()
    } else {
        conn
    }
}

/// Counts every response for `serve --max-requests`.
struct Counter(&'static crate::server::limit::Limit);

impl Handler for Counter {
    async fn run(&self, conn: Conn) -> Conn {
        conn
    }

    async fn before_send(&self, conn: Conn) -> Conn {
        self.0.record();
        conn
    }
}
