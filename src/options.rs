//! The knobs every app honours: logging, file I/O and worker threads.

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
}

impl Default for Options {
    fn default() -> Self {
        Options {
            logging: Logging::Off,
            io: Io::Memory,
            threads: 2,
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
                });
            }
        }
        out
    }

    /// A short label such as `log=off,io=memory`.
    pub fn label(&self) -> String {
        format!("log={},io={}", self.logging, self.io)
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

impl fmt::Display for Io {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Io::Disk => "disk",
            Io::Memory => "memory",
        })
    }
}
