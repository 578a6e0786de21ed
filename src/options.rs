//! The knobs every app honours: logging, file I/O, worker threads, and the runtime a tokio
//! server runs its workers on.

use std::fmt;
use std::time::Duration;

/// How requests are logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Logging {
    /// No request logger is attached.
    Off,
    /// The framework's idiomatic request logger formats one line per request into a writer
    /// that discards it: the cost of formatting, without the cost of a terminal.
    Sink,
    /// The same logger, writing to stdout, as the seed articles measured.
    Stdout,
}

/// Where the static and paste routes read their bytes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Io {
    /// Read the file on every request.
    Disk,
    /// Read once at startup and served from memory.
    Memory,
}

/// How a tokio server's `threads` workers are arranged. Only the frameworks that serve through
/// [`crate::server::spawn_tokio`] offer a choice ([`crate::framework::Entry::per_core`]); every
/// other server has one model of its own (docs/methodology/many-cores.md, "Threads and runtimes").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, clap::ValueEnum)]
pub enum Runtime {
    /// One multi-threaded tokio runtime of `threads` workers that steal each other's tasks:
    /// what `#[tokio::main]` gives, so what users get.
    #[default]
    WorkStealing,
    /// One current-thread runtime per worker, each on a thread pinned to one of the server's
    /// CPUs and accepting from a listener of its own (`SO_REUSEPORT`): TechEmpower's fastest
    /// hyper and axum entries.
    PerCore,
}

/// The protocol a server speaks on its listener, and the load driver speaks to it.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Default,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// HTTP/1.1, one request at a time per connection (or pipelined).
    #[default]
    Http1,
    /// HTTP/2 over cleartext TCP with prior knowledge (RFC 9113 §3.3): no Upgrade, no TLS, many
    /// concurrent streams per connection. Only the frameworks `framebench list` marks `h2c`
    /// serve it (docs/methodology/http2.md). What each protocol is and does: `crate::protocol`.
    H2c,
    /// HTTP/2 over TLS, chosen by ALPN (`h2`, RFC 9113 §3.2): needs `--tls`. Only the
    /// frameworks `framebench list` marks `h2` serve it.
    H2,
    /// WebSocket (RFC 6455) after an HTTP/1.1 upgrade at `/ws`: the `echo` scenario, each
    /// message back as it came. Only the frameworks `framebench list` marks `ws` serve it.
    Ws,
}

/// What a protocol runs over: plain TCP, or TLS on TCP (`--tls`). What each transport is and
/// does: `crate::transport`.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Default,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// Plain TCP.
    #[default]
    Tcp,
    /// TLS 1.3 or 1.2 (rustls on the client's side), with the run's certificate.
    Tls,
}

/// How long a tokio server waits for open connections to finish after being told to stop.
pub(crate) const GRACE: Duration = Duration::from_secs(2);

/// Keep-alive timeout every server is configured with, so that no framework's default decides.
pub(crate) const KEEP_ALIVE: Duration = Duration::from_secs(5);

/// Options of one app.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Options {
    /// Request logging.
    pub logging: Logging,
    /// File I/O of the static and paste routes.
    pub io: Io,
    /// Worker threads when serving (iron/nickel pool size, actix workers, tokio workers).
    pub threads: usize,
    /// How a tokio server arranges its workers.
    pub runtime: Runtime,
    /// What the server speaks on its listener.
    pub protocol: Protocol,
    /// What the protocol runs over.
    pub transport: Transport,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            logging: Logging::Off,
            io: Io::Memory,
            threads: 2,
            runtime: Runtime::WorkStealing,
            protocol: Protocol::default(),
            transport: Transport::default(),
        }
    }
}

impl Options {
    /// The variants `check` and the benches cover: logging off and sink, io memory and disk.
    pub fn variants(threads: usize) -> Vec<Options> {
        let mut out = Vec::new();
        for logging in [Logging::Off, Logging::Sink] {
            for io in [Io::Memory, Io::Disk] {
                out.push(Options {
                    logging,
                    io,
                    threads,
                    runtime: Runtime::WorkStealing,
                    protocol: Protocol::default(),
                    transport: Transport::default(),
                });
            }
        }
        out
    }

    /// A short label such as `log=off,io=memory`; `,runtime=per-core`, `,protocol=h2c` and
    /// `,tls` are added when the runtime, protocol or transport is not the default, so that every
    /// earlier label still reads the same.
    pub fn label(&self) -> String {
        let runtime = match self.runtime {
            Runtime::WorkStealing => String::new(),
            other => format!(",runtime={other}"),
        };
        let protocol = match self.protocol {
            p if p.is_default() => String::new(),
            other => format!(",protocol={other}"),
        };
        let tls = match self.transport {
            Transport::Tcp => "",
            Transport::Tls => ",tls",
        };
        format!(
            "log={},io={}{runtime}{protocol}{tls}",
            self.logging, self.io
        )
    }
}

impl fmt::Display for Logging {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Logging::Off => "off",
            Logging::Sink => "sink",
            Logging::Stdout => "stdout",
        })
    }
}

impl fmt::Display for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Runtime::WorkStealing => "work-stealing",
            Runtime::PerCore => "per-core",
        })
    }
}

impl fmt::Display for Io {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Io::Disk => "disk",
            Io::Memory => "memory",
        })
    }
}
