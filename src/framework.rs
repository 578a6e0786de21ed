//! The one trait every framework implements, and the registry entry that names it.
//!
//! A framework `build`s its app from the shared fixtures and options, `dispatch`es one request
//! in-process and `serve`s on a listener. What a framework is or can do is a constant of the
//! trait, copied into its registry [`Entry`], so that no caller needs a list of names. The order
//! every framework file follows is stated in [`crate::frameworks`].

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::thread::JoinHandle;

use bytes::Bytes;

use crate::fixtures::Fixtures;
use crate::options::Options;
pub use crate::options::{Protocol, Transport};
use crate::outcome::NotRun;
use crate::tools::Tool;

/// An in-process request. Always a complete value: the body is already collected.
pub type Request = http::Request<Bytes>;
/// An in-process response, with the body collected.
pub type Response = http::Response<Bytes>;

/// What an app is built from.
#[derive(Clone)]
pub struct Config {
    /// The shared fixtures.
    pub fixtures: Arc<Fixtures>,
    /// Logging, io and threads.
    pub(crate) options: Options,
    /// The Redis the redis scenario reads (`redis://127.0.0.1:PORT`, see
    /// [`crate::redis::provide`]), or `None`: apps answer 503 on `/get`.
    pub(crate) redis: Option<String>,
}

impl Config {
    /// The fixtures and the Redis, with the default options.
    pub fn new(fixtures: Arc<Fixtures>, redis: Option<&str>) -> Config {
        Config {
            fixtures,
            options: Options::default(),
            redis: redis.map(str::to_owned),
        }
    }

    /// The same fixtures and Redis with `options`.
    pub fn with(&self, options: Options) -> Config {
        Config {
            options,
            ..self.clone()
        }
    }
}

/// A web framework serving every scenario of the oracle.
pub trait Framework: Sized + 'static {
    /// Name on the command line.
    const NAME: &'static str;
    /// The crate measured, whose locked version `list` prints.
    const CRATE: &'static str;
    /// The start of its version, to pick the right entry of Cargo.lock (`"0.10."`, `"1."`).
    const VERSION_PREFIX: &'static str;
    /// Whether [`Framework::dispatch`] works without a socket.
    const IN_PROCESS: bool = true;
    /// Whether [`Framework::serve`] works.
    const LOOPBACK: bool = true;
    /// The optional tool it needs to run at all (the Go peers need `go`). With that tool in
    /// `FRAMEBENCH_REQUIRE`, [`Framework::available`] failing is an error, not a skip.
    const TOOL: Option<Tool> = None;
    /// Whether its server counts responses for `serve --max-requests`
    /// ([`crate::server::limit`]), which the loopback callgrind bench needs.
    const COUNTS_REQUESTS: bool = false;
    /// Whether its WebSocket echo counts the messages it echoes for `serve --protocol ws
    /// --max-requests` ([`crate::server::limit::Counted::Messages`]), which the loopback
    /// callgrind bench's `echo/ws` cells need.
    const COUNTS_MESSAGES: bool = false;
    /// A floor or reference measured for comparison (null, null-hyper010, raw), not a framework.
    const BASELINE: bool = false;
    /// Whether each worker thread holds one connection at a time (hyper 0.10's pool: iron,
    /// nickel), so that more connections than threads starve. The quick compare gives such a
    /// server as many threads as connections, to compare cost per request, not pool size.
    const THREAD_PER_CONNECTION: bool = false;
    /// What it cannot do that the others can, in a few words for `list` (no HEAD, no
    /// keep-alive timeout, …), or empty. Its file says why, beside the code.
    const NOTE: &'static str = "";
    /// Whether its server takes `--runtime per-core`: true for the tokio frameworks that serve
    /// through [`crate::server::spawn_tokio`], which builds either runtime. A framework with a
    /// thread model of its own (actix, ntex, xitca, may, hyper 0.10's pool, Go, Rocket's own
    /// launch) keeps it, and docs/methodology/many-cores.md says which it is.
    const PER_CORE: bool = false;
    /// The protocols under which it does not take `--runtime per-core` though
    /// [`Self::PER_CORE`] says it does: where its server binds a listener of its own, one per
    /// server (hyperlane's under h2c).
    const NOT_PER_CORE_UNDER: &'static [Protocol] = &[];
    /// Its row in the README's framework table (`framebench list --markdown`). No default: a
    /// new framework states it.
    const ABOUT: About;
    /// The protocols it states beyond HTTP/1.1, each with how it serves it or why it does not:
    /// `&[(Protocol::H2c, Support::Supported("…"))]`. A protocol it leaves out is HTTP/1.1's
    /// [`Support::Supported`] or any other's [`Support::Unsupported`]
    /// ([`undeclared`]). docs/methodology/http2.md lists every h2c answer
    /// (`framebench list --markdown` prints them).
    const PROTOCOLS: &'static [(Protocol, Support)] = &[];
    /// The transports it states beyond plain TCP, each with how it serves it (its own TLS
    /// integration, the way its users would write it) or why it does not:
    /// `&[(Transport::Tls, Support::Supported("…"))]`. Left out, TCP is supported and TLS is
    /// not. Its `serve` reads [`Options::transport`] from its config and, for TLS, serves the
    /// run's certificate (`crate::transport::tls`).
    const TRANSPORTS: &'static [(Transport, Support)] = &[];
    /// The scenarios it cannot serve through its own API, each with the reason: `(scenario,
    /// why)`, or none (`&[]`). Their cells show `–` everywhere, with the reason printed by
    /// `check` and in docs/methodology/bodies.md, never a silent skip. No default: a new
    /// framework states it.
    const CANNOT: &'static [(&'static str, &'static str)];

    /// Whether the framework can run on this machine: [`NotRun::Skipped`] says what to install
    /// (the Go peers without `go`). Callers skip an unavailable framework with that message.
    fn available() -> Result<(), NotRun> {
        Ok(())
    }

    /// The version `list` shows when it does not come from Cargo.lock (the Go peers).
    fn version() -> Option<&'static str> {
        None
    }

    /// Builds the app: routes, middleware, template and static files. All startup work
    /// happens here, never per request.
    fn build(config: &Config) -> anyhow::Result<Self>;

    /// Sends one request through the framework's routing, middleware and handler, without a
    /// socket, and collects the response.
    fn dispatch(&self, req: Request) -> anyhow::Result<Response>;

    /// Serves every route on `listener` with `options.threads` workers. Returns once the server
    /// accepts connections.
    fn serve(&self, listener: TcpListener) -> anyhow::Result<ServerHandle>;

    /// For a framework whose `serve` starts a child framebench process
    /// (`framebench child <name>`, through [`crate::child::serve_on`]): serves in this process, on
    /// the listener the parent handed over, until SIGINT or SIGTERM. The others have no such
    /// mode.
    fn serve_child(_config: &Config) -> anyhow::Result<()> {
        anyhow::bail!("{} does not serve from a child process", Self::NAME)
    }
}

/// Whether a framework speaks a protocol: through which API, or why not. A framework's file
/// states it per protocol ([`crate::framework::Framework::PROTOCOLS`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Support {
    /// It serves the protocol, through the API named (empty for HTTP/1.1, which every server
    /// speaks).
    Supported(&'static str),
    /// It does not, for the reason given; its cells print `–` with it.
    Unsupported(&'static str),
}

impl Support {
    /// The reason it does not, when it does not.
    pub fn why_not(self) -> Option<&'static str> {
        match self {
            Support::Supported(_) => None,
            Support::Unsupported(why) => Some(why),
        }
    }
}

/// A framework's row in the README's framework table, beside its name and version
/// ([`crate::frameworks::markdown_table`]). Versions are never typed here: they come from
/// Cargo.lock at build time, or from [`Version`].
#[derive(Clone, Copy)]
pub struct About {
    /// The crate column when it is not [`Framework::CRATE`] (`axum (renamed `axum07`)`, `–`).
    pub crate_label: Option<&'static str>,
    /// What the version column shows.
    pub version: Version,
    /// Companion crates whose locked versions follow the version in parentheses, as
    /// `(crate, version prefix)` (`("hyper-util", "0.1.")`).
    pub companions: &'static [(&'static str, &'static str)],
    /// How it serves static files.
    pub static_files: &'static str,
    /// How an in-process request reaches it (`–` with the reason when it has no such path).
    pub in_process: &'static str,
    /// How it serves on a socket, and what `--threads` means.
    pub server: &'static str,
}

impl About {
    /// The row of framebench's own code (a floor or the reference): no crate, no version, no
    /// static-file facility; how it answers in-process and how it serves (`–` for none).
    pub const fn own(in_process: &'static str, server: &'static str) -> About {
        About {
            crate_label: Some("–"),
            version: Version::Own,
            companions: &[],
            static_files: "–",
            in_process,
            server,
        }
    }
}

/// The version column of a framework's row.
#[derive(Clone, Copy)]
pub enum Version {
    /// The crate's locked version ([`Entry::version`]), then in parentheses the note (when not
    /// empty) and each companion's locked version.
    Locked(&'static str),
    /// No version: framebench's own code (`–`).
    Own,
    /// Worked out at build time from a file of its own (the Go peers' `go.mod`), or a text when
    /// it is not pinned (the Go toolchain's).
    Other(fn() -> String),
}

/// Object-safe view of a built [`Framework`].
pub trait App {
    /// See [`Framework::dispatch`].
    fn dispatch(&self, req: Request) -> anyhow::Result<Response>;
    /// See [`Framework::serve`].
    fn serve(&self, listener: TcpListener) -> anyhow::Result<ServerHandle>;
}

impl<F: Framework> App for F {
    fn dispatch(&self, req: Request) -> anyhow::Result<Response> {
        Framework::dispatch(self, req)
    }
    fn serve(&self, listener: TcpListener) -> anyhow::Result<ServerHandle> {
        Framework::serve(self, listener)
    }
}

/// One line of the registry.
#[derive(Clone, Copy)]
pub struct Entry {
    /// See [`Framework::NAME`].
    pub name: &'static str,
    /// The Cargo feature that compiles it in (`may-minihttp`), empty for the baselines that are
    /// always compiled in: what `ab --patch` builds.
    pub(crate) feature: &'static str,
    /// Its module under `src/frameworks/`, which names its callgrind benchmarks
    /// (`callgrind::in_process::<module>::hello_off`).
    pub module: &'static str,
    /// See [`Framework::CRATE`].
    pub(crate) krate: &'static str,
    /// See [`Framework::VERSION_PREFIX`].
    pub(crate) version_prefix: &'static str,
    /// See [`Framework::IN_PROCESS`].
    pub in_process: bool,
    /// See [`Framework::LOOPBACK`].
    pub loopback: bool,
    /// See [`Framework::COUNTS_REQUESTS`].
    pub counts_requests: bool,
    /// See [`Framework::COUNTS_MESSAGES`].
    pub counts_messages: bool,
    /// See [`Framework::TOOL`].
    pub tool: Option<Tool>,
    /// See [`Framework::BASELINE`].
    pub baseline: bool,
    /// See [`Framework::THREAD_PER_CONNECTION`].
    pub thread_per_connection: bool,
    /// See [`Framework::NOTE`].
    pub(crate) note: &'static str,
    /// See [`Framework::PER_CORE`]; under another protocol, [`Entry::takes_per_core`].
    pub per_core: bool,
    /// See [`Framework::NOT_PER_CORE_UNDER`].
    not_per_core_under: &'static [Protocol],
    /// See [`Framework::ABOUT`].
    pub(crate) about: About,
    /// See [`Framework::PROTOCOLS`].
    protocols: &'static [(Protocol, Support)],
    /// See [`Framework::TRANSPORTS`].
    transports: &'static [(Transport, Support)],
    /// See [`Framework::CANNOT`].
    pub(crate) cannot: &'static [(&'static str, &'static str)],
    build: fn(&Config) -> anyhow::Result<Box<dyn App>>,
    serve_child: fn(&Config) -> anyhow::Result<()>,
    available: fn() -> Result<(), NotRun>,
    version: fn() -> Option<&'static str>,
}

/// What a framework that does not state `protocol` is taken to do: every server speaks the
/// default, HTTP/1.1, and no other protocol is assumed.
fn undeclared(protocol: Protocol) -> Support {
    if protocol == Protocol::default() {
        Support::Supported("")
    } else {
        Support::Unsupported("its framework file does not state it (`PROTOCOLS`)")
    }
}

fn build_boxed<F: Framework>(config: &Config) -> anyhow::Result<Box<dyn App>> {
    Ok(Box::new(F::build(config)?))
}

impl Entry {
    /// The registry line of `F`, written in `src/frameworks/<module>.rs`.
    pub const fn of<F: Framework>(module: &'static str) -> Entry {
        Entry {
            name: F::NAME,
            feature: "",
            module,
            krate: F::CRATE,
            version_prefix: F::VERSION_PREFIX,
            in_process: F::IN_PROCESS,
            loopback: F::LOOPBACK,
            counts_requests: F::COUNTS_REQUESTS,
            counts_messages: F::COUNTS_MESSAGES,
            tool: F::TOOL,
            baseline: F::BASELINE,
            thread_per_connection: F::THREAD_PER_CONNECTION,
            note: F::NOTE,
            per_core: F::PER_CORE,
            not_per_core_under: F::NOT_PER_CORE_UNDER,
            about: F::ABOUT,
            protocols: F::PROTOCOLS,
            transports: F::TRANSPORTS,
            cannot: F::CANNOT,
            build: build_boxed::<F>,
            serve_child: F::serve_child,
            available: F::available,
            version: F::version,
        }
    }

    /// The same line, compiled in by `feature` (the registry's lines, [`crate::registry!`]).
    pub const fn with_feature(self, feature: &'static str) -> Entry {
        Entry { feature, ..self }
    }

    /// Whether its server takes `--runtime per-core` under `protocol`.
    pub fn takes_per_core(&self, protocol: Protocol) -> bool {
        self.per_core && !self.not_per_core_under.contains(&protocol)
    }

    /// Whether its server speaks `protocol`, through which API or why not
    /// ([`Framework::PROTOCOLS`]).
    pub fn support(&self, protocol: Protocol) -> Support {
        self.protocols
            .iter()
            .find(|(p, _)| *p == protocol)
            .map_or_else(|| undeclared(protocol), |(_, s)| *s)
    }

    /// Whether its server runs over `transport`, through which integration or why not
    /// ([`Framework::TRANSPORTS`]).
    pub fn transport(&self, transport: Transport) -> Support {
        match self.transports.iter().find(|(t, _)| *t == transport) {
            Some((_, s)) => *s,
            None if transport.is_default() => Support::Supported(""),
            None => Support::Unsupported("no TLS integration in its framework file (`TRANSPORTS`)"),
        }
    }

    /// What its server lacks to serve `options`'s protocol over `options`'s transport: the
    /// first of the two it does not serve, by name (`h2c`, `tls`), with the reason; `None`
    /// when it serves both.
    pub fn lacks(&self, options: &Options) -> Option<(&'static str, &'static str)> {
        let protocol = self.support(options.protocol).why_not();
        let transport = self.transport(options.transport).why_not();
        protocol
            .map(|why| (options.protocol.name(), why))
            .or(transport.map(|why| (options.transport.name(), why)))
    }

    /// Builds the app.
    pub fn build(&self, config: &Config) -> anyhow::Result<Box<dyn App>> {
        (self.build)(config)
    }

    /// See [`Framework::serve_child`].
    pub(crate) fn serve_child(&self, config: &Config) -> anyhow::Result<()> {
        (self.serve_child)(config)
    }

    /// Why it cannot serve `scenario` through its own API ([`Framework::CANNOT`]), if so.
    pub fn cannot(&self, scenario: &str) -> Option<&'static str> {
        self.cannot
            .iter()
            .find(|(name, _)| *name == scenario)
            .map(|(_, why)| *why)
    }

    /// See [`Framework::available`].
    pub fn available(&self) -> Result<(), NotRun> {
        (self.available)()
    }

    /// The exact version of the measured crate, read from Cargo.lock at build time (or
    /// [`Framework::version`]).
    pub fn version(&self) -> &'static str {
        (self.version)()
            .or_else(|| crate::env::crate_version(self.krate, self.version_prefix))
            .unwrap_or("?")
    }
}

/// A running server. [`ServerHandle::shutdown`] (or dropping it) stops it and joins every
/// thread it started.
pub struct ServerHandle {
    addr: SocketAddr,
    stop: Option<Box<dyn FnOnce() + Send>>,
    threads: Vec<JoinHandle<()>>,
}

impl ServerHandle {
    /// A handle for a server at `addr`: `stop` asks it to stop, `threads` are joined after.
    pub(crate) fn new(
        addr: SocketAddr,
        stop: impl FnOnce() + Send + 'static,
        threads: Vec<JoinHandle<()>>,
    ) -> Self {
        ServerHandle {
            addr,
            stop: Some(Box::new(stop)),
            threads,
        }
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// True when a server thread has ended without being asked to (a crash).
    pub(crate) fn has_died(&self) -> bool {
        self.stop.is_some() && self.threads.iter().any(|t| t.is_finished())
    }

    /// Stops the server and joins its threads. Fails if one of them panicked.
    pub fn shutdown(mut self) -> anyhow::Result<()> {
        self.stop_and_join()
    }

    fn stop_and_join(&mut self) -> anyhow::Result<()> {
        if let Some(stop) = self.stop.take() {
            stop();
        }
        let mut panicked = 0;
        for t in self.threads.drain(..) {
            if t.join().is_err() {
                panicked += 1;
            }
        }
        anyhow::ensure!(panicked == 0, "{panicked} server thread(s) panicked");
        Ok(())
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        let _ = self.stop_and_join();
    }
}
