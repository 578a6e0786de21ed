//! hyperlane 22.1 on tokio: a `Server` of hooks, the way a hyperlane app is written: route hooks
//! (types implementing `ServerHook`, made per request by `new` and run by `handle`, each behind
//! hyperlane's `#[is_get_method]`), request middleware that puts the shared state into the
//! context (and, when logging is on, notes the request's start), and response middleware that
//! builds and sends the response, after the logger when logging is on. hyperlane has no
//! static-file facility (its quick-start project writes its own handler), so static files come
//! from [`AppState::static_file`] for both io modes. `app()` is the only place the server is
//! built.
//!
//! **No server of hyperlane's own, but its pipeline on ours.** hyperlane's only way to serve is
//! `Server::run`, which binds the configured address itself: it takes no listener, and the
//! functions that serve an accepted connection are crate-private. Its public API has every part
//! of that pipeline, though: `Stream` over any `Transport` (a tokio `TcpStream` among them) with
//! its request parser, the server's hook lists and route matcher, and its request-error hooks.
//! [`serve_connection`] is hyperlane-core 22.1.0's private per-connection loop
//! (`Server::serve_h1_connection_stream`, `handle_connection`, `handle_http_requests`,
//! `request_hook`), copied onto those public parts. Served requests run it on each connection
//! accepted from framebench's listener, on a tokio runtime of `threads` workers; in-process
//! requests run its first request on a `Stream` over an in-memory transport that holds the
//! request's bytes, on a current-thread runtime, without a socket.
//!
//! **Under `--protocol h2c`, hyperlane's own server.** Its HTTP/2 path (the h2 handshake, a task
//! per stream, the pipeline writing into an in-memory pipe that a pump frames as HTTP/2) is
//! private and much larger than the HTTP/1 loop, so it is not copied: [`serve_h2c`] closes
//! framebench's listener and `Server::run` binds the same address with
//! `ServerProtocol::Http2`, as Rocket's adapter does. The HTTP/1.1 path above is untouched.

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::pin::Pin;
use std::sync::{mpsc, Arc};
use std::task::{Context as TaskContext, Poll};

use bytes::Bytes;
use hyperlane::{
    is_get_method, is_post_method, Context, FutureBox, HttpVersion, RequestConfig, Server,
    ServerHook, ServerHookHandler, ServerProtocol, Status, Stream, Transport, CLOSE, CONNECTION,
    CONTENT_TYPE,
};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::framework::{About, Config, Framework, Support, Request, Response, ServerHandle, Version};
use crate::handlers::{self, AppState, Operands, Reply, Wait};
use crate::protocol::http1;
use crate::logging::{self, Started};
use crate::options::{Options, Protocol, Runtime, KEEP_ALIVE};
use crate::server;
use crate::store::AsyncStore;

use super::built::Built;

/// hyperlane behind the framebench trait.
pub(crate) struct Hyperlane(Built<Server>);

/// What the hooks share, as a context attribute.
type Shared = Arc<AppState<AsyncStore>>;

/// The context attribute that holds [`Shared`].
const STATE: &str = "framebench.state";
/// The context attribute that holds the logger's [`Started`].
const STARTED: &str = "framebench.started";

/// Builds the server: every route, the state, the sender, and the logger when logging is on.
fn app(config: &Config) -> Server {
    // One pool per server: in-process and served requests run on different runtimes.
    let state: Shared = Arc::new(AppState::new_async(config));
    let mut server = Server::default();
    // hyperlane's read timeout bounds every wait for a request head, the wait for the next
    // request on a kept-alive connection included: its keep-alive timeout.
    server.request_config(RequestConfig {
        read_timeout_ms: u64::try_from(KEEP_ALIVE.as_millis()).unwrap_or(u64::MAX),
        ..RequestConfig::default()
    });
    let mut server_config = server.get_server_config().clone();
    server_config.nodelay = Some(true);
    server.server_config(server_config);
    server
        .route::<Hello>("/")
        .route::<Json>("/json")
        .route::<RedisGet>("/get")
        .route::<Template>("/template")
        .route::<Paste>("/paste/{name}")
        .route::<StaticFile>("/static/{name}")
        .route::<Sum>("/sum")
        .route::<Upload>("/upload")
        .route::<JsonIn>("/json_in")
        .route::<Delay>("/delay")
        .request_error::<RequestErrorReply>();
    // Fairness: a hyperlane hook is a type made per request from the stream and the context
    // alone (`ServerHook::new`), so app data reaches it only through a global or the context's
    // attributes, which hyperlane clears before every request. A closure on the request
    // middleware list (`ServerHookHandler`, the type hyperlane keeps every hook as) puts the
    // state into the context per request, and each route reads it back (docs/methodology/fairness.md).
    server
        .get_mut_request_middleware()
        .push(hook(move |_, ctx| {
            ctx.set_attribute(STATE, Arc::clone(&state));
            // hyperlane runs the response middleware whether or not a route matched: a path no
            // route answers (or a method its route does not take) is sent as this 404.
            ctx.get_mut_response().set_status_code(404);
        }));
    if let Some(target) = logging::target(config.options.logging) {
        // Fairness: hyperlane ships no request logger; request middleware notes the start and
        // response middleware logs the line every hand-written logger does, before the
        // response is sent (docs/methodology/fairness.md).
        logging::install();
        server.get_mut_request_middleware().push(hook(move |stream, ctx| {
            let req = ctx.get_request();
            let started = Started::now(
                target,
                stream.get_peer_addr().ok(),
                &req.get_method().to_string(),
                req.get_path().clone(),
            );
            ctx.set_attribute(STARTED, Arc::new(started));
        }));
        server.get_mut_response_middleware().push(hook(|_, ctx| {
            if let Some(started) = ctx.try_get_attribute::<Arc<Started>, _>(STARTED) {
                let status = ctx.get_response().get_status_code();
                started.finish(u16::try_from(status).unwrap_or(u16::MAX));
            }
        }));
    }
    server.response_middleware::<Sender>();
    server
}

impl Framework for Hyperlane {
    const NAME: &'static str = "hyperlane";
    const CRATE: &'static str = "hyperlane";
    const VERSION_PREFIX: &'static str = "22.";
    const ABOUT: About = About {
        crate_label: None,
        version: Version::Locked(""),
        companions: &[("hyperlane-core", "22."), ("http-type", "22.")],
        static_files: "our own small static path (hyperlane has no facility)",
        in_process: "request bytes through hyperlane's parser on an in-memory `Transport`, then a copy of its private per-request pipeline (middleware, route, sender)",
        server: "its per-connection pipeline (copied: `Server::run` binds its own address) on each connection of the prebound listener, tokio with `--threads` workers; under `--protocol h2c`, `Server::run` itself on the same address",
    };
    const PER_CORE: bool = true;
    // Under h2c it is hyperlane's own `Server::run`, which binds one listener ([`serve_h2c`]).
    const NOT_PER_CORE_UNDER: &'static [Protocol] = &[Protocol::H2c];
    const COUNTS_REQUESTS: bool = true;
    const PROTOCOLS: &'static [(Protocol, Support)] = &[
        (Protocol::H2c, Support::Supported("hyperlane's own `Server::run` with `ServerProtocol::Http2` (h2 0.4; each stream runs the HTTP/1 pipeline into an in-memory pipe that hyperlane frames as HTTP/2), under `--protocol h2c` only: it binds the address itself, so framebench closes its listener first, as for Rocket; one work-stealing runtime")),
        (Protocol::Ws, Support::Unsupported("its WebSocket API (http-type 22.1.0) hands a route the payload only: a reply's opcode is chosen by UTF-8 validity, pings are dropped and a close is not answered, so an echo on it breaks RFC 6455 §5.5 (control frames) and §5.6 (binary stays binary)")),
    ];
    const CANNOT: &'static [(&'static str, &'static str)] = &[(
        "upload_chunked",
        "hyperlane's parser answers 400 to any request with a Transfer-Encoding header \
         (http-type 22.1.0 src/request/impl.rs:650-651), so a chunked body never reaches a route",
    )];

    fn build(config: &Config) -> anyhow::Result<Self> {
        Built::new(config, app).map(Hyperlane)
    }

    fn dispatch(&self, req: Request) -> anyhow::Result<Response> {
        // Fairness: hyperlane makes a request only by parsing bytes, so the request is encoded
        // as HTTP/1.1 and parsed by its own parser, as a new connection's first request
        // (docs/methodology/fairness.md).
        let raw = http1::encode_request(&req)?;
        self.0.rt.block_on(async {
            let config = *self.0.app.get_request_config();
            let mut stream = Stream::from_transport(InMemory::new(raw), config, false);
            let mut ctx = Context::default();
            first_request(&self.0.app, &mut stream, &mut ctx).await;
            // The response the sender built and wrote (to the in-memory transport, which drops
            // it) is still the context's.
            let res = ctx.get_mut_response();
            let mut out = http::Response::builder().status(u16::try_from(res.get_status_code())?);
            for (name, values) in res.get_headers() {
                for value in values {
                    out = out.header(name.as_str(), value.as_str());
                }
            }
            Ok(out.body(Bytes::from(std::mem::take(res.get_mut_body())))?)
        })
    }

    fn serve(&self, listener: TcpListener) -> anyhow::Result<ServerHandle> {
        let mut app = app(&self.0.config);
        // `serve --max-requests`: the counting hook exists only when a limit is set.
        if let Some(limit) = crate::server::limit::active() {
            app.get_mut_response_middleware()
                .push(hook(move |_, _| limit.record()));
        }
        if self.0.config.options.protocol == Protocol::H2c {
            return serve_h2c(app, listener, self.0.config.options);
        }
        let app = Arc::new(app);
        self.0.spawn(listener, move |listener, stop| {
            let app = Arc::clone(&app);
            async move {
                // Fairness: `Server::run` binds its own address and takes no listener, so this is
                // hyperlane's accept loop (`tcp_accept`) on the listener framebench bound, each
                // connection on a task of its own until the server is told to stop, and then
                // hyperlane's connection loop ([`serve_tcp`]). Rebinding the port for `run`
                // (as Rocket's `serve` does) would leave a window for another process to take it
                // and reset connections made to this socket; swapping this listener in under
                // hyperlane's (as may-minihttp's child does) would rely on tokio's epoll
                // registration (docs/methodology/fairness.md). One difference: a failed accept (an
                // aborted handshake, no descriptor left) is skipped, where hyperlane's loop ends.
                let mut stop = std::future::IntoFuture::into_future(stop);
                loop {
                    let socket = tokio::select! {
                        biased;
                        () = &mut stop => break,
                        accepted = listener.accept() => match accepted {
                            Ok((socket, _)) => socket,
                            Err(_) => continue,
                        },
                    };
                    tokio::spawn(serve_tcp(Arc::clone(&app), socket));
                }
            }
        })
    }
}

/// `--protocol h2c`: hyperlane's own `Server::run` with `ServerProtocol::Http2` on the address
/// of `listener`, on one work-stealing runtime of `threads` workers. Returns once it is bound.
fn serve_h2c(
    mut app: Server,
    listener: TcpListener,
    options: Options,
) -> anyhow::Result<ServerHandle> {
    // `Server::run` binds one listener of its own; per-core runtimes would each need one bound
    // with SO_REUSEPORT, which it does not set.
    if options.runtime == Runtime::PerCore {
        anyhow::bail!(
            "hyperlane serves h2c through its own `Server::run`, one listener on one runtime: \
             --runtime per-core is not available with --protocol h2c"
        );
    }
    let addr = listener.local_addr()?;
    let mut server_config = app.get_server_config().clone();
    server_config.address = addr.to_string();
    server_config.protocol = ServerProtocol::Http2;
    app.server_config(server_config);
    let (ready, started) = mpsc::channel::<anyhow::Result<()>>();
    let handle = server::spawn_work_stealing(listener, options.threads, move |listener, stop| {
        async move {
            // Fairness: `Server::run` binds its own socket from the config's address and takes
            // no listener. framebench closes its listener and hyperlane binds the same loopback
            // address again (tokio sets SO_REUSEADDR), so the port is free for the few
            // microseconds between the two (docs/methodology/http2.md).
            drop(listener);
            let control = match app.run().await {
                Ok(control) => control,
                Err(e) => {
                    let _ = ready.send(Err(anyhow::anyhow!("{e}")));
                    return;
                }
            };
            let _ = ready.send(Ok(()));
            stop.await;
            // Stops accepting; open connections end with the runtime, after its grace.
            control.shutdown().await;
        }
    })?;
    server::started(handle, &started, "hyperlane")
}

struct Hello;

impl ServerHook for Hello {
    async fn new(_: &mut Stream, _: &mut Context) -> Self {
        Hello
    }

    #[is_get_method]
    async fn handle(self, _: &mut Stream, ctx: &mut Context) -> Status {
        respond(ctx, handlers::hello())
    }
}

struct Json;

impl ServerHook for Json {
    async fn new(_: &mut Stream, _: &mut Context) -> Self {
        Json
    }

    #[is_get_method]
    async fn handle(self, _: &mut Stream, ctx: &mut Context) -> Status {
        respond(ctx, handlers::json())
    }
}

/// `/get`, with the `key` parameter as hyperlane parsed it.
struct RedisGet(Option<String>);

impl ServerHook for RedisGet {
    async fn new(_: &mut Stream, ctx: &mut Context) -> Self {
        // Fairness: hyperlane keeps the query only parsed, and its values not percent-decoded
        // (no raw query string to hand to `key_from_query`); the key is its value as is
        // (docs/methodology/fairness.md).
        let key = ctx.get_request().try_get_query_front("key");
        RedisGet(key.filter(|key| !key.is_empty()))
    }

    #[is_get_method]
    async fn handle(self, _: &mut Stream, ctx: &mut Context) -> Status {
        let reply = shared(ctx).redis_get_key(self.0).await;
        respond(ctx, reply)
    }
}

struct Template;

impl ServerHook for Template {
    async fn new(_: &mut Stream, _: &mut Context) -> Self {
        Template
    }

    #[is_get_method]
    async fn handle(self, _: &mut Stream, ctx: &mut Context) -> Status {
        let reply = shared(ctx).template();
        respond(ctx, reply)
    }
}

/// `/paste/{name}`, with the name hyperlane's router matched.
struct Paste(String);

impl ServerHook for Paste {
    async fn new(_: &mut Stream, ctx: &mut Context) -> Self {
        Paste(ctx.try_get_route_param("name").unwrap_or_default())
    }

    #[is_get_method]
    async fn handle(self, _: &mut Stream, ctx: &mut Context) -> Status {
        let reply = shared(ctx).paste(&self.0);
        respond(ctx, reply)
    }
}

/// `/static/{name}`, with the name hyperlane's router matched.
struct StaticFile(String);

impl ServerHook for StaticFile {
    async fn new(_: &mut Stream, ctx: &mut Context) -> Self {
        StaticFile(ctx.try_get_route_param("name").unwrap_or_default())
    }

    #[is_get_method]
    async fn handle(self, _: &mut Stream, ctx: &mut Context) -> Status {
        let reply = shared(ctx).static_file(&self.0);
        respond(ctx, reply)
    }
}

/// `/sum?a=A&b=B`, with each operand as hyperlane parsed the query (`try_get_query_front`) and
/// then as a `u32`. hyperlane has no typed query extractor: a missing or bad operand is `None`,
/// answered 400.
struct Sum(Option<Operands>);

impl ServerHook for Sum {
    async fn new(_: &mut Stream, ctx: &mut Context) -> Self {
        let req = ctx.get_request();
        let operand = |key: &str| req.try_get_query_front(key)?.parse::<u32>().ok();
        Sum(operand("a")
            .zip(operand("b"))
            .map(|(a, b)| Operands { a, b }))
    }

    #[is_get_method]
    async fn handle(self, _: &mut Stream, ctx: &mut Context) -> Status {
        respond(ctx, self.0.map_or(Reply::error(400), handlers::sum))
    }
}

/// `/upload`: the body hyperlane read by its Content-Length (`get_body`, the accessor its
/// `request_body` macro expands to), by reference.
struct Upload;

impl ServerHook for Upload {
    async fn new(_: &mut Stream, _: &mut Context) -> Self {
        Upload
    }

    #[is_post_method]
    async fn handle(self, _: &mut Stream, ctx: &mut Context) -> Status {
        let reply = handlers::upload(ctx.get_request().get_body());
        respond(ctx, reply)
    }
}

/// `/json_in`: the body deserialized by hyperlane's `try_get_body_json` (serde_json, whatever
/// the Content-Type); a body that is not the operands is answered 400.
struct JsonIn;

impl ServerHook for JsonIn {
    async fn new(_: &mut Stream, _: &mut Context) -> Self {
        JsonIn
    }

    #[is_post_method]
    async fn handle(self, _: &mut Stream, ctx: &mut Context) -> Status {
        let ops = ctx.get_request().try_get_body_json::<Operands>();
        respond(ctx, ops.map_or(Reply::error(400), handlers::json_in))
    }
}

/// `/delay?ms=N`, with `ms` as hyperlane parsed the query (`try_get_query_front`) and then as a
/// `u64`. hyperlane has no typed query extractor: an `ms` that is not a `u64` is `None`,
/// answered 400. The wait is tokio's timer, the runtime hyperlane serves on.
struct Delay(Option<Wait>);

impl ServerHook for Delay {
    async fn new(_: &mut Stream, ctx: &mut Context) -> Self {
        Delay(match ctx.get_request().try_get_query_front("ms") {
            None => Some(Wait { ms: None }),
            Some(ms) => ms.parse().ok().map(|ms| Wait { ms: Some(ms) }),
        })
    }

    #[is_get_method]
    async fn handle(self, _: &mut Stream, ctx: &mut Context) -> Status {
        let reply = match self.0 {
            Some(wait) => handlers::delay(wait, tokio::time::sleep).await,
            None => Reply::error(400),
        };
        respond(ctx, reply)
    }
}

/// The state the request middleware put into the context.
fn shared(ctx: &Context) -> Shared {
    ctx.try_get_attribute::<Shared, _>(STATE)
        .expect("the request middleware sets the state before every route")
}

/// The one conversion from [`Reply`]: status, content type and body on the context's response,
/// which the sender writes.
// Fairness: a hyperlane body is a `Vec<u8>`; the reply's `Bytes` are copied into it once per
// response (docs/methodology/fairness.md).
fn respond(ctx: &mut Context, reply: Reply) -> Status {
    let res = ctx.get_mut_response();
    res.set_status_code(usize::from(reply.status));
    if let Some(content_type) = reply.content_type {
        res.set_header(CONTENT_TYPE, content_type)
            .set_body(&reply.body);
    }
    Status::Continue
}

/// Response middleware that builds the context's response and writes it, hyperlane's way to
/// answer (its own examples end every request with it).
struct Sender;

impl ServerHook for Sender {
    async fn new(_: &mut Stream, _: &mut Context) -> Self {
        Sender
    }

    async fn handle(self, stream: &mut Stream, ctx: &mut Context) -> Status {
        let data = ctx.get_mut_response().build();
        send(stream, data).await
    }
}

/// The request-error hook: a request hyperlane cannot read (malformed, over its limits, too
/// slow) is answered with the status hyperlane gives the error, without a body, and the
/// connection closed. Without one, hyperlane closes without an answer.
struct RequestErrorReply(usize);

impl ServerHook for RequestErrorReply {
    async fn new(_: &mut Stream, ctx: &mut Context) -> Self {
        let error = ctx.try_get_request_error_data().unwrap_or_default();
        RequestErrorReply(error.get_http_status_code())
    }

    async fn handle(self, stream: &mut Stream, ctx: &mut Context) -> Status {
        let data = ctx
            .get_mut_response()
            .set_version(HttpVersion::Http1_1)
            .set_status_code(self.0)
            .clear_headers()
            .set_header(CONNECTION, CLOSE)
            .set_body([])
            .build();
        send(stream, data).await
    }
}

/// Writes a built response; a failed write closes the connection and rejects the request.
async fn send(stream: &mut Stream, data: Vec<u8>) -> Status {
    if stream.try_send(data).await.is_err() {
        stream.set_closed(true);
        return Status::Reject;
    }
    Status::Continue
}

/// A hook of ours that does its work before hyperlane awaits it, as the `ServerHookHandler`
/// hyperlane keeps every hook as.
fn hook(work: impl Fn(&mut Stream, &mut Context) + Send + Sync + 'static) -> ServerHookHandler {
    Arc::new(
        move |stream: &mut Stream, ctx: &mut Context| -> FutureBox<Status> {
            work(stream, ctx);
            Box::pin(std::future::ready(Status::Continue))
        },
    )
}

/// One accepted connection, as hyperlane's `serve_tcp_connection` serves a plaintext HTTP/1
/// one: its socket options from the server config (`TCP_NODELAY` here), then its `Stream`.
async fn serve_tcp(server: Arc<Server>, socket: tokio::net::TcpStream) {
    let config = server.get_server_config();
    if let Some(nodelay) = config.get_nodelay() {
        let _ = socket.set_nodelay(nodelay);
    }
    if let Some(ttl) = config.get_ttl() {
        let _ = socket.set_ttl(ttl);
    }
    let mut stream = Stream::new(socket, *server.get_request_config(), false);
    serve_connection(&server, &mut stream).await;
}

/// Every request of one connection: hyperlane's `serve_h1_connection_stream` and
/// `handle_http_requests`, copied (hyperlane-core 22.1.0, src/server/impl.rs). The first
/// request, then each next one read into the same request value, until a request or the
/// connection ends keep-alive or one cannot be read.
// Fairness: hyperlane also catches a panic here to run its task-panic hooks; this app registers
// none, so a panic ends the connection's task (tokio catches it) as it would end hyperlane's.
async fn serve_connection(server: &Server, stream: &mut Stream) {
    let mut ctx = Context::default();
    if !first_request(server, stream, &mut ctx).await {
        return;
    }
    loop {
        let mut reused = std::mem::take(ctx.get_mut_request());
        match stream.try_fill_http_request(&mut reused).await {
            Ok(()) => {
                if !request_hook(server, stream, &mut ctx, reused).await {
                    return;
                }
            }
            Err(error) => {
                ctx.set_request(reused);
                server.handle_request_error(stream, &mut ctx, &error).await;
                return;
            }
        }
    }
}

/// A connection's first request: hyperlane's `handle_connection`, copied. Returns whether the
/// connection stays open for another.
async fn first_request(server: &Server, stream: &mut Stream, ctx: &mut Context) -> bool {
    match stream.try_get_http_request().await {
        Ok(request) => request_hook(server, stream, ctx, request).await,
        Err(error) => {
            server.handle_request_error(stream, ctx, &error).await;
            false
        }
    }
}

/// One request through the hooks: hyperlane's `request_hook`, copied. The request middleware,
/// the route (a static path looked up first, by reference, as hyperlane does), the response
/// middleware; any hook that rejects ends the request there. Returns whether the connection
/// stays open.
async fn request_hook(
    server: &Server,
    stream: &mut Stream,
    ctx: &mut Context,
    request: hyperlane::Request,
) -> bool {
    let keep_alive = request.is_enable_keep_alive();
    let version = request.get_version().clone();
    ctx.set_request(request);
    ctx.get_mut_response().reset().set_version(version);
    ctx.get_mut_route_params().clear();
    ctx.clear_attribute();
    stream.set_closed(false);
    for hook in server.get_request_middleware() {
        if hook(stream, ctx).await.is_reject() {
            return stream.is_keep_alive(keep_alive);
        }
    }
    let matcher = server.get_route_matcher();
    let static_hook = matcher
        .get_static_route()
        .get(ctx.get_request().get_path().as_str());
    let route_hook = match static_hook {
        Some(hook) => Some(hook),
        None => {
            let path = ctx.get_request().get_path().clone();
            matcher.try_resolve_route(ctx, &path)
        }
    };
    if let Some(hook) = route_hook {
        if hook(stream, ctx).await.is_reject() {
            return stream.is_keep_alive(keep_alive);
        }
    }
    for hook in server.get_response_middleware() {
        if hook(stream, ctx).await.is_reject() {
            return stream.is_keep_alive(keep_alive);
        }
    }
    stream.is_keep_alive(keep_alive)
}

/// The transport of an in-process request: reads the request's bytes, then the end of the
/// stream; drops whatever is written. It has no socket, so it has no addresses.
#[derive(Debug)]
struct InMemory {
    request: io::Cursor<Vec<u8>>,
}

impl InMemory {
    fn new(request: Vec<u8>) -> Self {
        InMemory {
            request: io::Cursor::new(request),
        }
    }
}

impl AsyncRead for InMemory {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.request).poll_read(cx, buf)
    }
}

impl AsyncWrite for InMemory {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut TaskContext<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

impl Transport for InMemory {
    fn peer_addr(&self) -> io::Result<SocketAddr> {
        Err(io::ErrorKind::NotConnected.into())
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        Err(io::ErrorKind::NotConnected.into())
    }
}
