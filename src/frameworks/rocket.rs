//! `rocket`: Rocket 0.5 as a Rocket app is written: `#[get]` routes, managed state, `FileServer`
//! mounted at `/static` (io=disk) or a route (io=memory), and, when logging is on, a fairing
//! that logs one line per response.
//!
//! In-process requests go through `rocket::local::blocking::Client` (untracked: no cookie
//! jar), which runs Rocket's routing, fairings, handlers and catchers without a socket on its
//! own current-thread runtime. Loopback runs the same app with `launch` on a tokio runtime of
//! `threads` workers.

use std::io::Cursor;
use std::net::{SocketAddr, TcpListener};
use std::sync::mpsc;

use anyhow::anyhow;
use bytes::Bytes;
use rocket::config::{LogLevel, Shutdown};
use rocket::fairing::{AdHoc, Fairing, Info, Kind};
use rocket::form::error::ErrorKind;
use rocket::fs::FileServer;
use rocket::http::uri::Origin;
use rocket::http::{ContentType, Header, Status};
use rocket::local::blocking::Client;
use rocket::response::Responder;
use rocket::serde::json::Json;
use rocket::{Build, Data, State};

use crate::framework::{About, Config, Framework, Protocol, Support, Request, Response, ServerHandle, Version};
use crate::handlers::{self, AppState, Operands, Reply, Wait};
use crate::logging::{self, Started};
use crate::options::{Io, Transport, KEEP_ALIVE};
use crate::oracle::{JSON, TEXT_HTML, TEXT_PLAIN};
use crate::server;
use crate::store::AsyncStore;

/// The Rocket app.
pub(crate) struct Rocket {
    config: Config,
    client: Client,
}

/// What the handlers share, as managed state.
type Shared<'r> = &'r State<AppState<AsyncStore>>;

/// Rocket's configuration: quiet, no signal handling of its own (framebench's `serve` handles
/// SIGINT and SIGTERM), keep-alive set explicitly, a short shutdown grace.
fn rocket_config(addr: SocketAddr, threads: usize) -> rocket::Config {
    rocket::Config {
        address: addr.ip(),
        port: addr.port(),
        workers: threads.max(1),
        keep_alive: KEEP_ALIVE.as_secs() as u32,
        log_level: LogLevel::Off,
        cli_colors: false,
        shutdown: Shutdown {
            ctrlc: false,
            #[cfg(unix)]
            signals: Default::default(),
            grace: 1,
            mercy: 1,
            ..Shutdown::default()
        },
        ..rocket::Config::release_default()
    }
}

/// Builds the app: every route, static files, the logger fairing when logging is on.
fn app(config: &Config, rocket_config: rocket::Config) -> rocket::Rocket<Build> {
    // Fairness: framebench's logger is installed before Rocket ignites, so Rocket's own logger
    // (which would print a launch banner and set the process-wide log level) is never set.
    // Rocket's internal `log` records still reach framebench's logger, which drops every
    // record whose target is not one of its two: one string comparison per record.
    logging::install();
    let rocket = rocket::custom(rocket_config)
        // One pool per app: the local client and the server run on different runtimes.
        .manage(AppState::new_async(config))
        .mount(
            "/",
            rocket::routes![hello, json, redis_get, template, paste, sum, upload, json_in, delay, ws_echo],
        );
    let rocket = match config.options.io {
        Io::Disk => rocket.mount("/static", FileServer::from(config.fixtures.static_dir())),
        Io::Memory => rocket.mount("/", rocket::routes![static_file]),
    };
    match logging::target(config.options.logging) {
        None => rocket,
        Some(target) => rocket.attach(Logger { target }),
    }
}

impl Framework for Rocket {
    const NAME: &'static str = "rocket";
    const CRATE: &'static str = "rocket";
    const VERSION_PREFIX: &'static str = "0.5.";
    const ABOUT: About = About {
        crate_label: None,
        version: Version::Locked(""),
        companions: &[],
        static_files: "`FileServer`",
        in_process: "`rocket::local::blocking::Client` (untracked)",
        server: "Rocket's own server (`launch`) on tokio with `--threads` workers",
    };
    // Fairness: Rocket's `http2` feature sends every plaintext connection through hyper-util's
    // auto builder, HTTP/1.1 ones too (a read for the preface first). Rocket is not counted
    // under callgrind (below), so its HTTP/1.1 cost was timed before and after instead:
    // docs/history/rocket-http2-ab.md.
    const PROTOCOLS: &'static [(Protocol, Support)] = &[
        (Protocol::H2c, Support::Supported("Rocket's `http2` feature (hyper-util's auto builder: it reads the preface on every connection, HTTP/1.1 ones too)")),
        (Protocol::H2, Support::Supported("Rocket's own `tls` and `http2` features: Rocket offers `h2` and `http/1.1` by ALPN and serves the one chosen")),
        (Protocol::Ws, Support::Supported("rocket_ws (Rocket's WebSocket crate, tokio-tungstenite)")),
    ];
    // Not counted (false, the default): a counting `on_response` fairing was tried on
    // 2026-11-27. Under libfaketime alone, `serve rocket --max-requests 20` exited after 20
    // requests, but under the loopback callgrind bench (valgrind and libfaketime) the server
    // did not exit after its requests, and the bench waited until killed, as ntex's did.
    const TRANSPORTS: &'static [(Transport, Support)] = &[(
        Transport::Tls,
        Support::Supported("Rocket's `tls` feature from the run's certificate in PEM (Rocket's own `ServerConfig` on ring: resumption by stateless tickets, not the run's session cache)"),
    )];
    const CANNOT: &'static [(&'static str, &'static str)] = &[];

    fn build(config: &Config) -> anyhow::Result<Self> {
        let local = SocketAddr::from(([127, 0, 0, 1], 0));
        let rocket = app(config, rocket_config(local, config.options.threads));
        let client = Client::untracked(rocket).map_err(|e| anyhow!("rocket: {e}"))?;
        Ok(Rocket {
            config: config.clone(),
            client,
        })
    }

    fn dispatch(&self, req: Request) -> anyhow::Result<Response> {
        let method: rocket::http::Method = req
            .method()
            .as_str()
            .parse()
            .map_err(|()| anyhow!("method {} unknown to rocket", req.method()))?;
        let target = req
            .uri()
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_owned();
        // A target Rocket cannot parse is answered 400 by its server before routing; the local
        // client would panic on it instead.
        if rocket::http::uri::Origin::parse(&target).is_err() {
            return Ok(http::Response::builder().status(400).body(Bytes::new())?);
        }
        let mut local = self.client.req(method, target);
        for (name, value) in req.headers() {
            local.add_header(Header::new(
                name.as_str().to_owned(),
                value.to_str()?.to_owned(),
            ));
        }
        if !req.body().is_empty() {
            local.set_body(req.body());
        }
        let res = local.dispatch();
        let mut out = http::Response::builder().status(res.status().code);
        for h in res.headers().iter() {
            out = out.header(h.name().as_str(), h.value());
        }
        let body = res.into_bytes().unwrap_or_default();
        Ok(out.body(Bytes::from(body))?)
    }

    fn serve(&self, listener: TcpListener) -> anyhow::Result<ServerHandle> {
        let addr = listener.local_addr()?;
        let config = self.config.clone();
        let threads = config.options.threads;
        let mut rocket_config = rocket_config(addr, threads);
        // TLS: Rocket's own (its `tls` feature) from the run's certificate in PEM, the only form
        // it takes; Rocket builds its `ServerConfig` itself (ring, and its own resumption:
        // stateless tickets and a 1,024-session cache), and shakes hands on the connection's
        // first read or write.
        if config.options.transport == Transport::Tls {
            let (cert, key) = crate::transport::tls::identity()?.pem();
            rocket_config.tls = Some(rocket::config::TlsConfig::from_bytes(
                cert.as_bytes(),
                key.as_bytes(),
            ));
        }
        let (ready_tx, ready_rx) = mpsc::channel::<anyhow::Result<()>>();
        let failed = ready_tx.clone();
        let handle = server::spawn_work_stealing(listener, threads, move |listener, stop| async move {
            // Fairness: Rocket 0.5 binds its own socket from `address` and `port` and has no
            // public way to take a bound listener. framebench closes the listener and Rocket
            // binds the same loopback address again (tokio sets SO_REUSEADDR), so the port is
            // free for the few microseconds between the two.
            drop(listener);
            let liftoff = AdHoc::on_liftoff("framebench ready", move |_| {
                Box::pin(async move {
                    let _ = ready_tx.send(Ok(()));
                })
            });
            let rocket = app(&config, rocket_config.clone()).attach(liftoff);
            let rocket = match rocket.ignite().await {
                Ok(rocket) => rocket,
                Err(e) => {
                    let _ = failed.send(Err(anyhow!("{e}")));
                    return;
                }
            };
            let shutdown = rocket.shutdown();
            tokio::spawn(async move {
                stop.await;
                shutdown.notify();
            });
            if let Err(e) = rocket.launch().await {
                let _ = failed.send(Err(anyhow!("{e}")));
            }
        })?;
        server::started(handle, &ready_rx, "rocket")
    }
}

/// `GET /ws`: the WebSocket echo through rocket_ws, as its docs write it; tungstenite under
/// it answers a ping and a Close.
#[rocket::get("/ws")]
fn ws_echo(ws: rocket_ws::WebSocket) -> rocket_ws::Channel<'static> {
    use rocket::futures::{SinkExt as _, StreamExt as _};
    ws.channel(move |mut stream| {
        Box::pin(async move {
            while let Some(message) = stream.next().await {
                let message = message?;
                if message.is_text() || message.is_binary() {
                    stream.send(message).await?;
                }
            }
            Ok(())
        })
    })
}

#[rocket::get("/")]
fn hello() -> Reply {
    handlers::hello()
}

#[rocket::get("/json")]
fn json() -> Reply {
    handlers::json()
}

#[rocket::get("/get")]
async fn redis_get(state: Shared<'_>, uri: &Origin<'_>) -> Reply {
    state.redis_get(uri.query().map(|q| q.as_str())).await
}

#[rocket::get("/template")]
fn template(state: Shared<'_>) -> Reply {
    state.template()
}

#[rocket::get("/paste/<name>")]
fn paste(state: Shared<'_>, name: &str) -> Reply {
    state.paste(name)
}

#[rocket::get("/static/<name>")]
fn static_file(state: Shared<'_>, name: &str) -> Reply {
    state.static_file(name)
}

/// `/sum?a=A&b=B`: each operand a typed query parameter, parsed by Rocket's `FromForm`. A
/// missing or bad one fails the route, which Rocket answers 422.
#[rocket::get("/sum?<a>&<b>")]
fn sum(a: u32, b: u32) -> Reply {
    handlers::sum(Operands { a, b })
}

/// `/upload`: the whole body as a `Vec<u8>` data guard, under Rocket's `bytes` limit (8 KiB by
/// default; over it, 400).
#[rocket::post("/upload", data = "<body>")]
fn upload(body: Vec<u8>) -> Reply {
    handlers::upload(&body)
}

/// `/json_in`: the body deserialized by Rocket's `Json` data guard, routed only for an
/// `application/json` body (`format = "json"`, as Rocket's docs write it).
#[rocket::post("/json_in", format = "json", data = "<ops>")]
fn json_in(ops: Json<Operands>) -> Reply {
    handlers::json_in(ops.into_inner())
}

/// `/delay?ms=N`: `ms` a typed query parameter read as a `form::Result`, because Rocket's
/// `Option` guard takes a value that does not parse for a missing one: missing is the default
/// wait, an `ms` that is not a `u64` is 400. The wait is tokio's timer, Rocket's runtime
/// (`rocket::tokio`).
#[rocket::get("/delay?<ms>")]
async fn delay(ms: rocket::form::Result<'_, u64>) -> Reply {
    let ms = match ms {
        Ok(ms) => Some(ms),
        Err(e) if e.iter().all(|e| matches!(e.kind, ErrorKind::Missing)) => None,
        Err(_) => return Reply::error(400),
    };
    handlers::delay(Wait { ms }, rocket::tokio::time::sleep).await
}

/// A [`Reply`] as Rocket's response, without copying the body. An error without a body goes to
/// Rocket's catcher, as a handler's `Err(Status)` does.
impl<'r> Responder<'r, 'static> for Reply {
    fn respond_to(self, _: &'r rocket::Request<'_>) -> rocket::response::Result<'static> {
        let status = Status::from_code(self.status).unwrap_or(Status::NotFound);
        let Some(content_type) = self.content_type else {
            return Err(status);
        };
        // The oracle's constants map to Rocket's own, as a handler would name them; only a static
        // file's type is parsed.
        let content_type = match content_type {
            TEXT_PLAIN => ContentType::Plain,
            TEXT_HTML => ContentType::HTML,
            JSON => ContentType::JSON,
            other => ContentType::parse_flexible(other).unwrap_or(ContentType::Binary),
        };
        rocket::Response::build()
            .status(status)
            .header(content_type)
            .sized_body(self.body.len(), Cursor::new(self.body))
            .ok()
    }
}

/// A request logger fairing: one line per response, to the variant's target.
struct Logger {
    target: &'static str,
}

#[rocket::async_trait]
impl Fairing for Logger {
    fn info(&self) -> Info {
        Info {
            name: "framebench request logger",
            kind: Kind::Request | Kind::Response,
        }
    }

    async fn on_request(&self, req: &mut rocket::Request<'_>, _: &mut Data<'_>) {
        let uri = req.uri().to_string();
        req.local_cache(|| {
            Some(Started::now(
                self.target,
                req.remote(),
                req.method().as_str(),
                uri,
            ))
        });
    }

    async fn on_response<'r>(&self, req: &'r rocket::Request<'_>, res: &mut rocket::Response<'r>) {
        // Always set by `on_request`; `None` only for a request the fairing never saw.
        if let Some(started) = req.local_cache(|| None::<Started>) {
            started.finish(res.status().code);
        }
    }
}
