//! axum 0.8: `Router` with tower-http's `ServeDir` for static files and its trace layer for
//! logging. `app()` is the only place the app is built: in-process requests go through it with
//! tower's `oneshot`, and `axum::serve` serves the same router.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use axum::serve::ListenerExt as _;
use axum::Router;

use http_body_util::BodyExt as _;
use tower::ServiceExt as _;
use tower_http::services::ServeDir;

use crate::fixtures::{content_type_for, Fixtures};
use crate::framework::{Config, Framework, Request, Response, ServerHandle};
use crate::logging;
use crate::options::{Io, Logging};
use crate::redis::AsyncStore;
use crate::server;

/// axum behind the framebench trait.
pub struct Axum {
    config: Config,
    router: Router,
    rt: tokio::runtime::Runtime,
}

#[derive(Clone)]
struct AppState {
    fixtures: Arc<Fixtures>,
    io: Io,
    redis: AsyncStore,
}

/// Builds the router: every route, and the trace layer when logging is on.
fn app(config: &Config) -> Router {
    let state = AppState {
        fixtures: Arc::clone(&config.fixtures),
        io: config.options.io,
        // One pool per router: in-process and served requests run on different runtimes.
        redis: AsyncStore::new(&config.fixtures),
    };
    let router = Router::new()
        .route("/", get(hello))
        .route("/json", get(json))
        .route("/get", get(redis_get))
        .route("/template", get(template))
        .route("/paste/{name}", get(paste));
    let router = match config.options.io {
        Io::Disk => router.nest_service("/static", ServeDir::new(config.fixtures.static_dir())),
        Io::Memory => router.route("/static/{name}", get(static_memory)),
    };
    let router = router.with_state(state);
    match config.options.logging {
        Logging::Off => router,
        logging => router.layer(logging::trace::layer(logging)),
    }
}

impl Framework for Axum {
    const NAME: &'static str = "axum";
    const CRATE: &'static str = "axum";
    const MAJOR: &'static str = "0.8.";

    fn build(config: &Config) -> anyhow::Result<Self> {
        // ServeDir reads files through tokio::fs, which needs the blocking pool: enable_all.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(Axum {
            config: config.clone(),
            router: app(config),
            rt,
        })
    }

    fn dispatch(&self, req: Request) -> anyhow::Result<Response> {
        self.rt.block_on(async {
            let res = self
                .router
                .clone()
                .oneshot(req.map(axum::body::Body::from))
                .await?;
            let (parts, body) = res.into_parts();
            let body = body.collect().await?.to_bytes();
            Ok(Response::from_parts(parts, body))
        })
    }

    fn serve(&self, listener: TcpListener) -> anyhow::Result<ServerHandle> {
        let router = app(&self.config);
        // `serve --max-requests`: the counting layer exists only when a limit is set.
        let router = match crate::bench::limit::active() {
            Some(limit) => router.layer(tower::util::MapResponseLayer::new(
                move |res: axum::response::Response| {
                    limit.record();
                    res
                },
            )),
            None => router,
        };
        // axum::serve sets no idle keep-alive timeout: connections stay open until the client
        // closes them or the server stops (docs/methodology.md).
        server::spawn_tokio(
            listener,
            self.config.options.threads,
            |listener, stop| async move {
                let service = router.into_make_service_with_connect_info::<SocketAddr>();
                // Every framebench server sets TCP_NODELAY on accepted connections.
                let listener = listener.tap_io(|tcp| {
                    let _ = tcp.set_nodelay(true);
                });
                let serve = axum::serve(listener, service).with_graceful_shutdown(async {
                    stop.await;
                });
                let _ = serve.await;
            },
        )
    }
}

async fn hello() -> &'static str {
    "Hello, World!"
}

async fn json() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, super::JSON)], super::json_body())
}

async fn redis_get(State(state): State<AppState>, uri: axum::http::Uri) -> impl IntoResponse {
    let found = state
        .redis
        .get(crate::redis::key_from_query(uri.query()))
        .await;
    let status = StatusCode::from_u16(found.status()).unwrap_or(StatusCode::BAD_GATEWAY);
    (
        status,
        [(header::CONTENT_TYPE, crate::redis::CONTENT_TYPE)],
        found.body(),
    )
}

async fn template(State(state): State<AppState>) -> Html<String> {
    Html(state.fixtures.render())
}

async fn paste(State(state): State<AppState>, Path(name): Path<String>) -> impl IntoResponse {
    match state.fixtures.paste(&name, state.io) {
        Ok(body) => Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], body)),
        Err(miss) => Err(StatusCode::from_u16(miss.status()).unwrap_or(StatusCode::NOT_FOUND)),
    }
}

async fn static_memory(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> impl IntoResponse {
    match state.fixtures.static_file(&name, Io::Memory) {
        Ok(body) => Ok(([(header::CONTENT_TYPE, content_type_for(&name))], body)),
        Err(miss) => Err(StatusCode::from_u16(miss.status()).unwrap_or(StatusCode::NOT_FOUND)),
    }
}
