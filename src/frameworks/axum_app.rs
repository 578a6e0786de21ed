//! The code axum 0.8 (`axum.rs`) and axum 0.7 (`axum07.rs`) share: one app, written once, and
//! compiled against each release's crate path. The two differ in three places, which are the
//! macro's arguments: the route syntax (`{name}` against `:name`), the version prefix, how
//! `serve` sets TCP_NODELAY on accepted connections (0.8's `tap_io` against 0.7's
//! `tcp_nodelay`), and the README row's text. Everything else, down to the handlers, is the same code, so the two columns
//! compare the releases and nothing else. The file reads in the order of every framework file
//! (src/frameworks/mod.rs), inside the macro.

/// One axum app behind the framebench trait, for the axum crate at `$axum` (see the module
/// doc).
macro_rules! axum_app {
    (
        crate: $axum:ident,
        type: $Axum:ident,
        doc: $doc:literal,
        name: $name:literal,
        version_prefix: $prefix:literal,
        paste_route: $paste:literal,
        static_route: $static:literal,
        serve: $serve:expr,
        about: $about:expr $(,)?
    ) => {
        use std::net::{SocketAddr, TcpListener};
        use std::sync::Arc;

        use $axum::body::Bytes;
        use $axum::extract::{ConnectInfo, Path, Query, State};
        use $axum::http::{header, HeaderValue, StatusCode, Uri};
        use $axum::response::IntoResponse;
        use $axum::routing::{get, post};
        use $axum::{Json, Router};

        use tower::ServiceExt as _;
        use tower_http::services::ServeDir;

        use crate::framework::{About, Config, Framework, Protocol, Support, Transport, Request, Response, ServerHandle, Version};
        use crate::handlers::{self, AppState, Operands, Reply, Wait};
        use crate::logging;
        use crate::options::{Io, Logging};
        use crate::store::AsyncStore;

        use super::built::Built;

        #[doc = $doc]
        pub(crate) struct $Axum(Built<Router>);

        /// What the handlers share.
        type Shared = State<Arc<AppState<AsyncStore>>>;

        /// Builds the router: every route, and the trace layer when logging is on.
        fn app(config: &Config) -> Router {
            // One pool per router: in-process and served requests run on different runtimes.
            let state = Arc::new(AppState::new_async(config));
            let router = Router::new()
                .route("/", get(hello))
                .route("/json", get(json))
                .route("/get", get(redis_get))
                .route("/template", get(template))
                .route($paste, get(paste));
            let router = match config.options.io {
                Io::Disk => {
                    router.nest_service("/static", ServeDir::new(config.fixtures.static_dir()))
                }
                Io::Memory => router.route($static, get(static_file)),
            };
            let router = router
                .route("/sum", get(sum))
                .route("/upload", post(upload))
                .route("/json_in", post(json_in))
                .route("/delay", get(delay))
                .route("/ws", get(ws_echo))
                .with_state(state);
            match config.options.logging {
                Logging::Off => router,
                // tower-http's trace layer; the peer comes from axum's `ConnectInfo`.
                logging => router.layer(logging::trace::layer(logging, |ext| {
                    ext.get::<ConnectInfo<SocketAddr>>().map(|ci| ci.0)
                })),
            }
        }

        impl Framework for $Axum {
            const NAME: &'static str = $name;
            const CRATE: &'static str = "axum";
            const VERSION_PREFIX: &'static str = $prefix;
            const ABOUT: About = $about;
            const PER_CORE: bool = true;
            const COUNTS_REQUESTS: bool = true;
            const COUNTS_MESSAGES: bool = true;
            const PROTOCOLS: &'static [(Protocol, Support)] = &[
                (Protocol::H2c, Support::Supported("`axum::serve` (hyper-util's auto builder: it reads the preface on every connection, HTTP/1.1 ones too)")),
                (Protocol::H2, Support::Supported("hyper's `http2::Builder` on each tokio-rustls stream (what `low-level-rustls`'s auto builder runs once ALPN chose `h2`)")),
                (Protocol::Ws, Support::Supported("axum's `ws` feature: `WebSocketUpgrade` and `WebSocket` (tokio-tungstenite)")),
            ];
            const TRANSPORTS: &'static [(Transport, Support)] = &[(
                Transport::Tls,
                Support::Supported(
                    "tokio-rustls `TlsAcceptor` before hyper's `http1::Builder`, as axum's \
                     `low-level-rustls` example (`axum::serve` takes no TLS)",
                ),
            )];
            const CANNOT: &'static [(&'static str, &'static str)] = &[];

            fn build(config: &Config) -> anyhow::Result<Self> {
                Built::new(config, app).map($Axum)
            }

            fn dispatch(&self, req: Request) -> anyhow::Result<Response> {
                self.0.rt.block_on(async {
                    let res = self
                        .0
                        .app
                        .clone()
                        .oneshot(req.map($axum::body::Body::from))
                        .await?;
                    super::built::collected(res).await
                })
            }

            fn serve(&self, listener: TcpListener) -> anyhow::Result<ServerHandle> {
                let router = app(&self.0.config);
                // `serve --max-requests`: the counting layer exists only when a limit is set.
                let router = match crate::server::limit::active() {
                    Some(limit) => router.layer(tower::util::MapResponseLayer::new(
                        move |res: $axum::response::Response| {
                            limit.record();
                            res
                        },
                    )),
                    None => router,
                };
                if self.0.config.options.transport == Transport::Tls {
                    let protocol = self.0.config.options.protocol;
                    let acceptor = crate::transport::tls::acceptor(protocol)?;
                    let h2 = protocol == Protocol::H2;
                    return self.0.spawn(listener, move |listener, stop| {
                        serve_tls(listener, acceptor.clone(), h2, stop, router.clone())
                    });
                }
                // axum's serve sets no idle keep-alive timeout: connections stay open until the client
                // closes them or the server stops (docs/methodology/loopback.md).
                self.0.spawn(listener, move |listener, stop| {
                    let router = router.clone();
                    async move {
                        let service = router.into_make_service_with_connect_info::<SocketAddr>();
                        // Every framebench server sets TCP_NODELAY on accepted connections;
                        // how is the one thing the two releases' `serve` differ in.
                        let serve = $serve(listener, service).with_graceful_shutdown(async {
                            stop.await;
                        });
                        let _ = serve.await;
                    }
                })
            }
        }

        /// TLS as axum's `low-level-rustls` example serves it: `axum::serve` takes no TLS, so
        /// an accept loop hands each connection to a task that completes the handshake with
        /// tokio-rustls and serves the router on a hyper connection. The example uses
        /// hyper-util's auto builder; this uses what the auto builder runs for the protocol
        /// ALPN chose, which is the run's only one: hyper's `http1::Builder`, or its
        /// `http2::Builder` under `--protocol h2` (`h2`). The router gets the peer's
        /// `ConnectInfo` as `serve` gives it.
        async fn serve_tls(
            listener: tokio::net::TcpListener,
            acceptor: tokio_rustls::TlsAcceptor,
            h2: bool,
            stop: crate::server::Stopped,
            router: $axum::Router,
        ) {
            super::accept::until_stopped(listener, stop, |stream, peer, graceful| {
                let router = router.clone();
                super::accept::tls(&acceptor, stream, graceful, move |io, watcher| async move {
                    let service = hyper::service::service_fn(
                        move |mut req: http::Request<hyper::body::Incoming>| {
                            req.extensions_mut().insert(ConnectInfo(peer));
                            tower::ServiceExt::oneshot(router.clone(), req)
                        },
                    );
                    if h2 {
                        let mut builder = hyper::server::conn::http2::Builder::new(
                            hyper_util::rt::TokioExecutor::new(),
                        );
                        builder.timer(hyper_util::rt::TokioTimer::new());
                        let _ = watcher.watch(builder.serve_connection(io, service)).await;
                        return;
                    }
                    let conn = hyper::server::conn::http1::Builder::new().serve_connection(io, service);
                    let _ = watcher.watch(conn).await;
                });
            })
            .await;
        }

        /// `GET /ws`: the WebSocket echo, as axum's `ws` docs write it; tungstenite answers a
        /// ping with a pong and a Close with a Close by itself.
        async fn ws_echo(ws: $axum::extract::ws::WebSocketUpgrade) -> $axum::response::Response {
            ws.on_upgrade(echo)
        }

        /// Under `serve --protocol ws --max-requests` each echoed message is counted.
        async fn echo(mut socket: $axum::extract::ws::WebSocket) {
            use $axum::extract::ws::Message;
            let limit = crate::server::limit::active();
            while let Some(Ok(msg)) = socket.recv().await {
                if matches!(msg, Message::Text(_) | Message::Binary(_)) {
                    if socket.send(msg).await.is_err() {
                        return;
                    }
                    if let Some(limit) = limit {
                        limit.record_message();
                    }
                }
            }
        }

        async fn hello() -> Reply {
            handlers::hello()
        }

        async fn json() -> Reply {
            handlers::json()
        }

        async fn redis_get(State(state): Shared, uri: Uri) -> Reply {
            state.redis_get(uri.query()).await
        }

        async fn template(State(state): Shared) -> Reply {
            state.template()
        }

        async fn paste(State(state): Shared, Path(name): Path<String>) -> Reply {
            state.paste(&name)
        }

        async fn static_file(State(state): Shared, Path(name): Path<String>) -> Reply {
            state.static_file(&name)
        }

        /// `Query` rejects missing or non-`u32` operands with 400.
        async fn sum(Query(ops): Query<Operands>) -> Reply {
            handlers::sum(ops)
        }

        /// `Bytes` reads the whole body, Content-Length or chunked, up to axum's default limit
        /// (2 MiB, 413 above it).
        async fn upload(body: Bytes) -> Reply {
            handlers::upload(&body)
        }

        /// `Json` wants `application/json` (415 without it) and answers a body it cannot
        /// deserialize with 400 or 422.
        async fn json_in(Json(ops): Json<Operands>) -> Reply {
            handlers::json_in(ops)
        }

        /// `Query` rejects an `ms` that is not a `u64` with 400; the wait is tokio's timer, the
        /// runtime axum serves on.
        async fn delay(Query(wait): Query<Wait>) -> Reply {
            handlers::delay(wait, tokio::time::sleep).await
        }

        impl IntoResponse for Reply {
            fn into_response(self) -> $axum::response::Response {
                let mut res = $axum::response::Response::new($axum::body::Body::from(self.body));
                *res.status_mut() =
                    StatusCode::from_u16(self.status).unwrap_or(StatusCode::NOT_FOUND);
                if let Some(content_type) = self.content_type {
                    res.headers_mut()
                        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
                }
                res
            }
        }
    };
}

pub(crate) use axum_app;
