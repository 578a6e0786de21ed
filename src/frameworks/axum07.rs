//! axum 0.7, the release before the current 0.8 (`axum.rs`), through the renamed dependency
//! `axum07`: `Router` with tower-http's `ServeDir` for static files and its trace layer for
//! logging, the same tower-http as axum 0.8 (both use http 1 and http-body 1). `app()` is the
//! only place the app is built: in-process requests go through it with tower's `oneshot` on a
//! current-thread runtime, and `axum07::serve` serves the same router with a tokio runtime of
//! `threads` workers.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

use axum07::extract::{ConnectInfo, Path, State};
use axum07::http::{header, HeaderValue, StatusCode, Uri};
use axum07::response::IntoResponse;
use axum07::routing::get;
use axum07::Router;

use http_body_util::BodyExt as _;
use tower::ServiceExt as _;
use tower_http::services::ServeDir;

use crate::framework::{Config, Framework, Request, Response, ServerHandle};
use crate::handlers::{self, AppState, Reply};
use crate::logging;
use crate::options::{Io, Logging};
use crate::server;
use crate::store::AsyncStore;

/// axum 0.7 behind the framebench trait.
pub struct Axum07 {
    config: Config,
    router: Router,
    rt: tokio::runtime::Runtime,
}

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
        .route("/paste/:name", get(paste));
    let router = match config.options.io {
        Io::Disk => router.nest_service("/static", ServeDir::new(config.fixtures.static_dir())),
        Io::Memory => router.route("/static/:name", get(static_file)),
    };
    let router = router.with_state(state);
    match config.options.logging {
        Logging::Off => router,
        // tower-http's trace layer; the peer comes from axum's `ConnectInfo`.
        logging => router.layer(logging::trace::layer(logging, |ext| {
            ext.get::<ConnectInfo<SocketAddr>>().map(|ci| ci.0)
        })),
    }
}

impl Framework for Axum07 {
    const NAME: &'static str = "axum07";
    const CRATE: &'static str = "axum";
    const VERSION_PREFIX: &'static str = "0.7.";
    const COUNTS_REQUESTS: bool = true;

    fn build(config: &Config) -> anyhow::Result<Self> {
        let rt = server::in_process_runtime()?;
        Ok(Axum07 {
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
                .oneshot(req.map(axum07::body::Body::from))
                .await?;
            let (parts, body) = res.into_parts();
            let body = body.collect().await?.to_bytes();
            Ok(Response::from_parts(parts, body))
        })
    }

    fn serve(&self, listener: TcpListener) -> anyhow::Result<ServerHandle> {
        let router = app(&self.config);
        // `serve --max-requests`: the counting layer exists only when a limit is set.
        let router = match crate::server::limit::active() {
            Some(limit) => router.layer(tower::util::MapResponseLayer::new(
                move |res: axum07::response::Response| {
                    limit.record();
                    res
                },
            )),
            None => router,
        };
        // axum 0.7's serve sets no idle keep-alive timeout: connections stay open until the client
        // closes them or the server stops (docs/methodology.md).
        server::spawn_tokio(
            listener,
            self.config.options.threads,
            |listener, stop| async move {
                let service = router.into_make_service_with_connect_info::<SocketAddr>();
                // Every framebench server sets TCP_NODELAY on accepted connections; axum 0.7
                // has a setting for it (0.8 replaced it with `tap_io`).
                let serve = axum07::serve(listener, service)
                    .tcp_nodelay(true)
                    .with_graceful_shutdown(async {
                        stop.await;
                    });
                let _ = serve.await;
            },
        )
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

impl IntoResponse for Reply {
    fn into_response(self) -> axum07::response::Response {
        let mut res = axum07::response::Response::new(axum07::body::Body::from(self.body));
        *res.status_mut() = StatusCode::from_u16(self.status).unwrap_or(StatusCode::NOT_FOUND);
        if let Some(content_type) = self.content_type {
            res.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        }
        res
    }
}
