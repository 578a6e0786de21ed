//! Request logging for the `sink` and `stdout` variants.
//!
//! Each framework attaches its idiomatic logger (actix's `Logger`, tower-http's trace layer, a
//! middleware for iron and nickel). They all end here: a `log` logger and a `tracing`
//! subscriber that route by target, so a `sink` app formats every line and discards it while a
//! `stdout` app prints it, even in the same process.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::io::{self, Write as _};
use std::net::SocketAddr;
use std::sync::Once;
use std::time::{Duration, SystemTime};

use crate::options::Logging;

/// Target of records formatted and discarded.
pub const SINK: &str = "framebench::sink";
/// Target of records printed to stdout.
pub const STDOUT: &str = "framebench::stdout";

/// The log target for a variant, or `None` when logging is off.
pub fn target(logging: Logging) -> Option<&'static str> {
    match logging {
        Logging::Off => None,
        Logging::Sink => Some(SINK),
        Logging::Stdout => Some(STDOUT),
    }
}

/// Installs the `log` logger and the `tracing` subscriber, once per process. Apps with logging
/// on call this from `build`.
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if log::set_logger(&RouteLogger).is_ok() {
            log::set_max_level(log::LevelFilter::Info);
        }
        install_tracing();
    });
}

fn install_tracing() {
    use tracing_subscriber::filter::filter_fn;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::Layer as _;
    let sink = tracing_subscriber::fmt::layer()
        .with_writer(io::sink)
        .with_ansi(false)
        .with_filter(filter_fn(|m| m.target() == SINK));
    let stdout = tracing_subscriber::fmt::layer()
        .with_writer(io::stdout)
        .with_ansi(false)
        .with_filter(filter_fn(|m| m.target() == STDOUT));
    let subscriber = tracing_subscriber::registry().with(sink).with(stdout);
    // Another subscriber may already be set (a test harness); then ours is not needed.
    let _ = tracing::subscriber::set_global_default(subscriber);
}

struct RouteLogger;

thread_local! {
    static LINE: RefCell<String> = const { RefCell::new(String::new()) };
}

impl log::Log for RouteLogger {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.target() == SINK || metadata.target() == STDOUT
    }

    fn log(&self, record: &log::Record<'_>) {
        if record.target() == SINK {
            // Format the whole line, then hand it to a writer that drops it.
            LINE.with_borrow_mut(|line| {
                line.clear();
                let _ = writeln!(line, "{}", record.args());
                let _ = std::hint::black_box(io::sink()).write_all(line.as_bytes());
            });
        } else if record.target() == STDOUT {
            let _ = writeln!(io::stdout().lock(), "{}", record.args());
        }
    }

    fn flush(&self) {
        let _ = io::stdout().flush();
    }
}

/// Logs one request line through the `log` crate, in the format every hand-written logger
/// middleware uses: `timestamp peer "METHOD URI" status latency`.
pub fn log_request(
    target: &'static str,
    peer: Option<SocketAddr>,
    method: &str,
    uri: &str,
    status: u16,
    latency: Duration,
) {
    let peer = peer.map_or_else(|| "-".to_owned(), |p| p.to_string());
    log::info!(
        target: target,
        "{} {} \"{} {}\" {} {:.6}s",
        httpdate::fmt_http_date(SystemTime::now()),
        peer,
        method,
        uri,
        status,
        latency.as_secs_f64()
    );
}

/// The peer address, as a request extension set by servers that have one.
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub SocketAddr);

/// tower-http's trace layer, set up to log one line per request to the variant's target.
#[cfg(feature = "tokio-stack")]
pub mod trace {
    use std::time::Duration;

    use tower_http::classify::{ServerErrorsAsFailures, SharedClassifier};
    use tower_http::trace::TraceLayer;
    use tracing::Span;

    use super::{Peer, SINK, STDOUT};
    use crate::options::Logging;

    /// The layer type every tokio-based app uses.
    pub type Layer = TraceLayer<SharedClassifier<ServerErrorsAsFailures>, MakeSpan, (), OnResponse>;

    /// A trace layer logging to `logging`'s target (which must not be `Off`).
    pub fn layer(logging: Logging) -> Layer {
        super::install();
        TraceLayer::new_for_http()
            .make_span_with(MakeSpan(logging))
            .on_request(())
            .on_response(OnResponse(logging))
    }

    fn peer(ext: &http::Extensions) -> String {
        #[cfg(feature = "axum")]
        if let Some(ci) = ext.get::<axum::extract::ConnectInfo<std::net::SocketAddr>>() {
            return ci.0.to_string();
        }
        ext.get::<Peer>()
            .map_or_else(|| "-".to_owned(), |p| p.0.to_string())
    }

    /// Opens a span with peer, method and URI.
    #[derive(Debug, Clone, Copy)]
    pub struct MakeSpan(Logging);

    impl<B> tower_http::trace::MakeSpan<B> for MakeSpan {
        fn make_span(&mut self, req: &http::Request<B>) -> Span {
            let peer = peer(req.extensions());
            match self.0 {
                Logging::Stdout => tracing::info_span!(target: STDOUT, "request",
                    peer = %peer, method = %req.method(), uri = %req.uri()),
                _ => tracing::info_span!(target: SINK, "request",
                    peer = %peer, method = %req.method(), uri = %req.uri()),
            }
        }
    }

    /// Emits the line with status and latency.
    #[derive(Debug, Clone, Copy)]
    pub struct OnResponse(Logging);

    impl<B> tower_http::trace::OnResponse<B> for OnResponse {
        fn on_response(self, res: &http::Response<B>, latency: Duration, span: &Span) {
            let status = res.status().as_u16();
            match self.0 {
                Logging::Stdout => {
                    tracing::info!(target: STDOUT, parent: span, status, ?latency, "done")
                }
                _ => tracing::info!(target: SINK, parent: span, status, ?latency, "done"),
            }
        }
    }
}
