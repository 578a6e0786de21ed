//! The arguments several commands take: a Redis, a server's options, its threads, runtime and
//! protocol.

use crate::options::{Io, Logging, Options, Protocol, Runtime, Transport};

/// `--redis URL`, for the commands that serve the redis scenario.
#[derive(clap::Args)]
pub(crate) struct RedisArg {
    /// Redis for the redis scenario (`redis://127.0.0.1:PORT`, loopback only; its keys are
    /// seeded). Default: `$FRAMEBENCH_REDIS`, else a `redis-server` started for the run.
    #[arg(long, value_name = "URL", value_parser = redis_url)]
    pub(crate) redis: Option<String>,
}

/// `--redis`, checked while the command line is parsed, before anything runs: a bad URL is one
/// line, not a line after the tools were prepared (a Go build's progress line, for one).
fn redis_url(text: &str) -> Result<String, String> {
    crate::redis::parse_url(text)
        .map(|_| text.to_owned())
        .map_err(|e| format!("{e:#}"))
}

impl RedisArg {
    /// The run's Redis (see `crate::redis::provide`); keep the result alive.
    pub(crate) fn provide(&self) -> anyhow::Result<crate::redis::Redis> {
        // `--redis` was checked by its parser; the variable is checked here.
        let url = self
            .redis
            .clone()
            .or_else(|| std::env::var(crate::redis::REDIS_ENV).ok());
        if let Some(url) = &url {
            crate::redis::parse_url(url)
                .map_err(|e| crate::error::usage(format!("${} {e:#}", crate::redis::REDIS_ENV)))?;
        }
        crate::redis::provide(url.as_deref())
    }
}

/// What a server is started with: threads, logging and io.
#[derive(clap::Args)]
pub(crate) struct ServerArgs {
    #[command(flatten)]
    opts: OptArgs,
    /// Request logging.
    #[arg(long, value_enum, default_value_t = Logging::Off)]
    logging: Logging,
    /// Where static files and pastes are read from.
    #[arg(long, value_enum, default_value_t = Io::Memory)]
    io: Io,
}

impl ServerArgs {
    /// The server's options from these arguments.
    pub(crate) fn options(&self) -> Options {
        Options {
            logging: self.logging,
            io: self.io,
            threads: self.opts.threads.into(),
            runtime: self.opts.runtime,
            protocol: self.opts.protocol,
            transport: self.opts.tls.transport(),
        }
    }
}

/// `--threads N` and `--runtime R`, for the commands that start servers.
#[derive(clap::Args)]
pub(crate) struct OptArgs {
    /// Server worker threads.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub(crate) threads: u16,
    /// How a tokio server arranges its workers: one work-stealing runtime (what
    /// `#[tokio::main]` gives), or one pinned current-thread runtime per worker. Only the
    /// frameworks `framebench list` marks `per-core` take the second.
    #[arg(long, value_enum, default_value_t = Runtime::WorkStealing)]
    pub(crate) runtime: Runtime,
    /// What the server speaks: HTTP/1.1, or HTTP/2 over cleartext with prior knowledge. Only
    /// the frameworks `framebench list` marks `h2c` serve the second; the others are skipped
    /// with their reason, or refused when named.
    #[arg(long, value_enum, default_value_t = Protocol::Http1)]
    pub(crate) protocol: Protocol,
    #[command(flatten)]
    pub(crate) tls: TlsArg,
}

/// `--tls`, for the commands that start servers and load them.
#[derive(clap::Args, Debug)]
pub(crate) struct TlsArg {
    /// HTTP/1.1 over TLS: the servers serve the run's certificate (generated when it starts)
    /// and the client speaks TLS 1.3 or 1.2 through rustls. Only the frameworks `framebench
    /// list` marks `tls` serve it; the others get `–` cells with their reason, or are refused
    /// when named.
    #[arg(long)]
    pub(crate) tls: bool,
}

impl TlsArg {
    /// The transport it asks for.
    pub(crate) fn transport(&self) -> Transport {
        match self.tls {
            true => Transport::Tls,
            false => Transport::Tcp,
        }
    }
}
