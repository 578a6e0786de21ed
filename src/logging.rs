//! Request logging for the `sink` and `stdout` variants.
//!
//! Each framework attaches its idiomatic logger: its own logger middleware, tower-http's trace
//! layer ([`trace`]), or a hand-written middleware around [`Started`]. They all end here: a `log` logger and a `tracing`
//! subscriber that route by target, so a `sink` app formats every line and discards it while a
//! `stdout` app prints it, even in the same process.

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt::Write as _;
use std::io::{self, Write as _};
use std::net::SocketAddr;
use std::sync::Once;
use std::time::{Instant, SystemTime};

use crate::options::Logging;

/// Target of records formatted and discarded.
pub(crate) const SINK: &str = "framebench::sink";
/// Target of records printed to stdout.
pub(crate) const STDOUT: &str = "framebench::stdout";

/// The log target for a variant, or `None` when logging is off.
pub(crate) fn target(logging: Logging) -> Option<&'static str> {
    match logging {
        Logging::Off => None,
        Logging::Sink => Some(SINK),
        Logging::Stdout => Some(STDOUT),
    }
}

/// Installs the `log` logger and the `tracing` subscriber, once per process. Apps with logging
/// on call this from `build`.
pub(crate) fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if log::set_logger(&RouteLogger).is_ok() {
            log::set_max_level(log::LevelFilter::Info);
        }
        install_tracing();
    });
}

fn install_tracing() {
    use tracing_subscriber::filter::{LevelFilter, Targets};
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::Layer as _;
    // `Targets`, not a `filter_fn`: it decides per callsite, once, so every event and span of
    // another target (hyper's, tokio's, warp's own `trace!` calls, which run on every request)
    // is disabled at its callsite for good. A `filter_fn` can only say "sometimes", and then
    // every one of those calls asks both filters on every request, in every app of the
    // process, `log=off` ones included: an app with logging off would pay for the subscriber
    // an app with logging on had installed. Measured on warp hello (log=off after iron's sink
    // app installed it) the difference was within the noise, 1.78 µs either way; the static
    // decision makes it nil by construction.
    let only = |target| Targets::new().with_target(target, LevelFilter::TRACE);
    let sink = tracing_subscriber::fmt::layer()
        .with_writer(io::sink)
        .with_ansi(false)
        .with_filter(only(SINK));
    let stdout = tracing_subscriber::fmt::layer()
        .with_writer(io::stdout)
        .with_ansi(false)
        .with_filter(only(STDOUT));
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

/// One request a hand-written logger middleware has seen arrive. [`Started::finish`] logs its
/// line through the `log` crate once the status is known, in the format every such middleware
/// uses: `timestamp peer "METHOD URI" status latency`.
pub(crate) struct Started {
    target: &'static str,
    peer: Option<SocketAddr>,
    method: Cow<'static, str>,
    uri: String,
    at: Instant,
}

impl Started {
    /// A request arriving now.
    pub(crate) fn now(
        target: &'static str,
        peer: Option<SocketAddr>,
        method: &str,
        uri: String,
    ) -> Self {
        Started {
            target,
            peer,
            method: static_method(method),
            uri,
            at: Instant::now(),
        }
    }

    /// Logs the line: the request answered with `status`.
    pub(crate) fn finish(&self, status: u16) {
        let peer = self.peer.map_or_else(|| "-".to_owned(), |p| p.to_string());
        log::info!(
            target: self.target,
            "{} {} \"{} {}\" {} {:.6}s",
            httpdate::fmt_http_date(SystemTime::now()),
            peer,
            self.method,
            self.uri,
            status,
            self.at.elapsed().as_secs_f64()
        );
    }
}

/// A standard method without an allocation (what the loggers it replaces did); others copied.
fn static_method(method: &str) -> Cow<'static, str> {
    const STANDARD: &[&str] = &["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"];
    match STANDARD.iter().find(|m| **m == method) {
        Some(m) => Cow::Borrowed(m),
        None => Cow::Owned(method.to_owned()),
    }
}

/// The peer address, as a request extension set by servers that have one.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Peer(pub(crate) SocketAddr);

/// The span a trace layer (tower-http's, or rama's fork of it) opens per request: peer, method
/// and URI, at `logging`'s target.
pub(crate) fn request_span(
    logging: Logging,
    peer: Option<SocketAddr>,
    method: &dyn std::fmt::Display,
    uri: &dyn std::fmt::Display,
) -> tracing::Span {
    let peer = peer.map_or_else(|| "-".to_owned(), |p| p.to_string());
    match logging {
        Logging::Stdout => {
            tracing::info_span!(target: STDOUT, "request", peer = %peer, method = %method, uri = %uri)
        }
        _ => {
            tracing::info_span!(target: SINK, "request", peer = %peer, method = %method, uri = %uri)
        }
    }
}

/// The event that ends a request's span: its status and latency, at `logging`'s target.
pub(crate) fn response_event(
    logging: Logging,
    status: u16,
    latency: std::time::Duration,
    span: &tracing::Span,
) {
    match logging {
        Logging::Stdout => tracing::info!(target: STDOUT, parent: span, status, ?latency, "done"),
        _ => tracing::info!(target: SINK, parent: span, status, ?latency, "done"),
    }
}

/// tower-http's trace layer, set up to log one line per request to the variant's target.
#[cfg(feature = "tokio-stack")]
pub(crate) mod trace {
    use std::net::SocketAddr;
    use std::time::Duration;

    use tower_http::classify::{ServerErrorsAsFailures, SharedClassifier};
    use tower_http::trace::TraceLayer;
    use tracing::Span;

    use super::Peer;
    use crate::options::Logging;

    /// The layer type every tokio-based app uses.
    pub(crate) type Layer =
        TraceLayer<SharedClassifier<ServerErrorsAsFailures>, MakeSpan, (), OnResponse>;

    /// Where a framework keeps the peer address among a request's extensions.
    pub(crate) type PeerOf = fn(&http::Extensions) -> Option<SocketAddr>;

    /// A trace layer logging to `logging`'s target (which must not be `Off`), reading the
    /// peer address with `peer`.
    pub(crate) fn layer(logging: Logging, peer: PeerOf) -> Layer {
        super::install();
        TraceLayer::new_for_http()
            .make_span_with(MakeSpan { logging, peer })
            .on_request(())
            .on_response(OnResponse(logging))
    }

    /// The peer address as a [`Peer`] extension, for servers that insert one.
    pub(crate) fn peer_extension(ext: &http::Extensions) -> Option<SocketAddr> {
        ext.get::<Peer>().map(|p| p.0)
    }

    /// Opens a span with peer, method and URI.
    #[derive(Debug, Clone, Copy)]
    pub(crate) struct MakeSpan {
        logging: Logging,
        peer: PeerOf,
    }

    impl<B> tower_http::trace::MakeSpan<B> for MakeSpan {
        fn make_span(&mut self, req: &http::Request<B>) -> Span {
            let peer = (self.peer)(req.extensions());
            super::request_span(self.logging, peer, req.method(), req.uri())
        }
    }

    /// Emits the line with status and latency.
    #[derive(Debug, Clone, Copy)]
    pub(crate) struct OnResponse(Logging);

    impl<B> tower_http::trace::OnResponse<B> for OnResponse {
        fn on_response(self, res: &http::Response<B>, latency: Duration, span: &Span) {
            super::response_event(self.0, res.status().as_u16(), latency, span);
        }
    }
}
