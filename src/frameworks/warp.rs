//! warp 0.4: filters combined with `or`, warp's own `query` and `body` filters for the query
//! and body routes, `warp::fs::dir` for static files (io=disk) and `warp::log` as the request
//! logger, boxed into one `BoxedFilter`. `app()` is the only place the filter is built:
//! in-process requests call it as a service (`warp::service`, what warp's server calls per
//! request, rejections turned into their responses there) with tower's `oneshot` on a
//! current-thread runtime, without a socket, and `warp::serve` serves the same filter on the
//! listener with a tokio runtime of `threads` workers.

use std::net::TcpListener;
use std::sync::Arc;

use http_body_util::Full;
use tower::ServiceExt as _;
use warp::filters::BoxedFilter;
use warp::http::{header, HeaderValue, StatusCode};
use warp::reply::Response as WarpResponse;
use warp::{Filter, Rejection};

use crate::framework::{About, Config, Framework, Protocol, Support, Request, Response, ServerHandle, Version};
use crate::handlers::{self, AppState, Operands, Reply, Wait};
use crate::logging;
use crate::options::{Io, Transport};
use crate::server;
use crate::store::AsyncStore;

use super::built::Built;

/// warp behind the framebench trait.
pub(crate) struct Warp(Built<App>);

/// The whole app, boxed: one type with and without the logger.
type App = BoxedFilter<(WarpResponse,)>;

/// What the handlers share.
type Shared = Arc<AppState<AsyncStore>>;

/// Builds the filter: every route, and `warp::log` when logging is on.
fn app(config: &Config) -> App {
    // One pool per filter: in-process and served requests run on different runtimes.
    let state: Shared = Arc::new(AppState::new_async(config));
    let state = warp::any().map(move || Arc::clone(&state));
    // `/get` answers with or without a query string (`query::raw` rejects a missing one).
    let query = warp::query::raw()
        .map(Some)
        .or(warp::any().map(|| None))
        .unify();
    let routes = warp::path::end()
        .map(hello)
        .or(warp::path!("json").map(json))
        .unify()
        .or(warp::path!("get")
            .and(state.clone())
            .and(query)
            .then(redis_get))
        .unify()
        .or(warp::path!("template").and(state.clone()).map(template))
        .unify()
        .or(warp::path!("paste" / String).and(state.clone()).map(paste))
        .unify()
        .map(warp::Reply::into_response);
    let routes = match config.options.io {
        Io::Disk => routes
            .or(warp::path("static")
                .and(nul_guard())
                .and(warp::fs::dir(config.fixtures.static_dir().to_path_buf()))
                .map(warp::Reply::into_response))
            .unify()
            .boxed(),
        Io::Memory => routes
            .or(warp::path!("static" / String)
                .and(state)
                .map(static_file)
                .map(warp::Reply::into_response))
            .unify()
            .boxed(),
    };
    let routes = routes
        .or(warp::path!("sum")
            .and(warp::query::<Operands>())
            .map(sum)
            .map(warp::Reply::into_response))
        .unify()
        .or(warp::path!("delay")
            .and(warp::query::<Wait>())
            .then(delay)
            .map(warp::Reply::into_response))
        .unify();
    // The body routes, outside the GET and HEAD gate. No `content_length_limit`, which warp's
    // docs pair with the body filters: it answers 411 to a request without `Content-Length`,
    // that is to every chunked body. The path comes before the method, so that another path
    // stays a 404 (warp prefers any rejection to a 404, and a 405 to that).
    let bodies = warp::path!("upload")
        .and(warp::post())
        .and(warp::body::bytes())
        .map(upload)
        .or(warp::path!("json_in")
            .and(warp::post())
            .and(warp::body::json())
            .map(json_in))
        .unify()
        .map(warp::Reply::into_response);
    // The WebSocket echo, as warp's `websocket` docs write it; tungstenite under it answers a
    // ping and a Close by itself.
    let ws = warp::path!("ws")
        .and(warp::ws())
        .map(|ws: warp::ws::Ws| {
            ws.on_upgrade(|mut socket| async move {
                use futures_util::{SinkExt as _, StreamExt as _};
                let limit = crate::server::limit::active();
                while let Some(Ok(msg)) = socket.next().await {
                    if msg.is_text() || msg.is_binary() {
                        if socket.send(msg).await.is_err() {
                            break;
                        }
                        if let Some(limit) = limit {
                            limit.record_message();
                        }
                    }
                }
            })
        })
        .map(warp::Reply::into_response);
    let app = ws
        .or(warp::get().or(warp::head()).unify().and(routes))
        .unify()
        .or(bodies)
        .unify();
    match logging::target(config.options.logging) {
        None => app.boxed(),
        // warp's own logger, through the `log` crate under the variant's target.
        Some(target) => {
            logging::install();
            app.with(warp::log(target))
                .map(warp::Reply::into_response)
                .boxed()
        }
    }
}

impl Framework for Warp {
    const NAME: &'static str = "warp";
    const CRATE: &'static str = "warp";
    const VERSION_PREFIX: &'static str = "0.4.";
    const ABOUT: About = About {
        crate_label: None,
        version: Version::Locked(""),
        companions: &[],
        static_files: "`warp::fs::dir` (behind a NUL guard)",
        in_process: "`warp::service(filter)` with tower `oneshot`",
        server: "`warp::serve(...).incoming(listener)` on tokio with `--threads` workers",
    };
    const PER_CORE: bool = true;
    const COUNTS_REQUESTS: bool = true;
   const COUNTS_MESSAGES: bool = true;
    const PROTOCOLS: &'static [(Protocol, Support)] = &[
        (Protocol::H2c, Support::Supported("`warp::serve` (hyper-util's auto builder, always built: it reads the preface on every connection, HTTP/1.1 ones too)")),
        (Protocol::H2, Support::Supported("hyper's `http2::Builder` on each tokio-rustls stream (what `warp::serve`'s auto builder runs once ALPN chose `h2`)")),
        (Protocol::Ws, Support::Supported("warp's `websocket` feature: `warp::ws()` and `Ws::on_upgrade` (tokio-tungstenite)")),
    ];
    const TRANSPORTS: &'static [(Transport, Support)] = &[(
        Transport::Tls,
        Support::Supported("tokio-rustls before hyper's `http1::Builder` serving `warp::service` (warp 0.4 has no TLS feature, and its `Accept` is sealed)"),
    )];
    const CANNOT: &'static [(&'static str, &'static str)] = &[];

    fn build(config: &Config) -> anyhow::Result<Self> {
        Built::new(config, app).map(Warp)
    }

    fn dispatch(&self, req: Request) -> anyhow::Result<Response> {
        self.0.rt.block_on(async {
            let res = warp::service(self.0.app.clone())
                .oneshot(req.map(Full::new))
                .await?;
            super::built::collected(res).await
        })
    }

    fn serve(&self, listener: TcpListener) -> anyhow::Result<ServerHandle> {
        let filter = app(&self.0.config);
        // `serve --max-requests`: the counting filter exists only when a limit is set. A
        // rejection is a response too (warp's service turns it into one after the filter).
        let filter = match crate::server::limit::active() {
            Some(limit) => filter
                .map(move |res| {
                    limit.record();
                    res
                })
                .or_else(move |rejection: Rejection| {
                    limit.record();
                    std::future::ready(Err(rejection))
                })
                .boxed(),
            None => filter,
        };
        // Fairness: warp's acceptor is sealed, so TCP_NODELAY is set on the listener, which
        // Linux copies to every accepted connection (docs/methodology/fairness.md). warp's server has no
        // keep-alive setting: hyper-util's auto builder at its defaults, no idle timeout.
        server::nodelay_on_accepted(&listener)?;
        if self.0.config.options.transport == Transport::Tls {
            return serve_tls(&self.0, listener, filter);
        }
        self.0.spawn(listener, move |listener, stop| {
            let filter = filter.clone();
            async move {
                warp::serve(filter)
                    .incoming(listener)
                    .graceful(std::future::IntoFuture::into_future(stop))
                    .run()
                    .await;
            }
        })
    }
}

/// Over TLS: warp 0.4 has no TLS of its own (no `tls` feature, and its `Accept` trait is
/// sealed), so the way its users add it is tokio-rustls in front of warp's own service
/// (`warp::service`, what `warp::serve` runs per connection): framebench's accept loop and a
/// task per handshake, as for axum, and what warp's auto builder runs for the protocol ALPN
/// chose, the run's only one: hyper's `http1::Builder`, or its `http2::Builder` under
/// `--protocol h2`. `warp::log` sees no peer address there (warp's `RemoteAddr` is
/// crate-private).
fn serve_tls(built: &Built<App>, listener: TcpListener, filter: App) -> anyhow::Result<ServerHandle> {
    let acceptor = crate::transport::tls::acceptor(built.config.options.protocol)?;
    let h2 = built.config.options.protocol == Protocol::H2;
    built.spawn(listener, move |listener, stop| {
        let (filter, acceptor) = (filter.clone(), acceptor.clone());
        super::accept::until_stopped(listener, stop, move |stream, _peer, graceful| {
            let service = hyper_util::service::TowerToHyperService::new(warp::service(filter.clone()));
            super::accept::tls(&acceptor, stream, graceful, move |io, watcher| async move {
                if h2 {
                    let mut builder =
                        hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new());
                    builder.timer(hyper_util::rt::TokioTimer::new());
                    let _ = watcher.watch(builder.serve_connection(io, service)).await;
                    return;
                }
                let conn = hyper::server::conn::http1::Builder::new().serve_connection(io, service);
                let _ = watcher.watch(conn).await;
            });
        })
    })
}

fn hello() -> Reply {
    handlers::hello()
}

fn json() -> Reply {
    handlers::json()
}

async fn redis_get(state: Shared, query: Option<String>) -> Reply {
    state.redis_get(query.as_deref()).await
}

fn template(state: Shared) -> Reply {
    state.template()
}

fn paste(name: String, state: Shared) -> Reply {
    state.paste(&name)
}

fn static_file(name: String, state: Shared) -> Reply {
    state.static_file(&name)
}

/// `warp::query` rejects missing or non-`u32` operands with 400.
fn sum(ops: Operands) -> Reply {
    handlers::sum(ops)
}

/// `warp::body::bytes` reads the whole body, Content-Length or chunked, with no limit.
fn upload(body: bytes::Bytes) -> Reply {
    handlers::upload(&body)
}

/// `warp::body::json` wants `application/json` or no content type (415 for another) and
/// answers a body it cannot deserialize with 400.
fn json_in(ops: Operands) -> Reply {
    handlers::json_in(ops)
}

/// `warp::query` rejects an `ms` that is not a `u64` with 400; the wait is tokio's timer, the
/// runtime warp serves on, run by warp's `then` filter.
async fn delay(wait: Wait) -> Reply {
    handlers::delay(wait, tokio::time::sleep).await
}

impl warp::Reply for Reply {
    fn into_response(self) -> WarpResponse {
        let mut res = WarpResponse::new(self.body.into());
        *res.status_mut() = StatusCode::from_u16(self.status).unwrap_or(StatusCode::NOT_FOUND);
        if let Some(content_type) = self.content_type {
            res.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        }
        res
    }
}

/// Rejects (404, as `warp::fs::dir` rejects `..`) a static request whose path decodes to a NUL
/// byte, before `warp::fs::dir` sees it.
// Fairness: `warp::fs::dir` percent-decodes the path and passes a NUL byte on to the file
// system, whose `InvalidInput` error it answers with 500; every other request goes to it
// unchanged. The check costs one pass over the path per static request, as gotham's and iron's
// guards do (docs/methodology/fairness.md).
fn nul_guard() -> impl Filter<Extract = (), Error = Rejection> + Clone {
    warp::path::full()
        .and_then(|path: warp::path::FullPath| {
            let nul = crate::fixtures::decodes_to_nul(path.as_str());
            std::future::ready(if nul {
                Err(warp::reject::not_found())
            } else {
                Ok(())
            })
        })
        .untuple_one()
}
