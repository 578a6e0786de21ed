//! The environment every result carries: compiler, profile, CPU, cores and crate versions.

use std::fmt;

mod locked {
    include!(concat!(env!("OUT_DIR"), "/versions.rs"));
}

pub(crate) use locked::{BUILD, FEATURES, GIT_REVISION};

/// The locked version of `krate` whose version starts with `major`.
pub(crate) fn crate_version(krate: &str, major: &str) -> Option<&'static str> {
    locked::LOCKED
        .iter()
        .find(|(n, v)| *n == krate && v.starts_with(major))
        .map(|(_, v)| *v)
}

/// Where a measurement ran.
#[derive(Debug, Clone)]
pub(crate) struct Environment {
    /// `rustc -V`.
    pub(crate) rustc: &'static str,
    /// `release` or `debug`.
    pub(crate) profile: &'static str,
    /// CPU model from /proc/cpuinfo.
    pub(crate) cpu: String,
    /// Cores available to this process.
    pub(crate) cores: usize,
    /// Kernel release.
    pub(crate) kernel: String,
}

impl Environment {
    /// Reads the environment of this process.
    pub(crate) fn current() -> Self {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_owned())
            })
            .unwrap_or_else(|| "unknown".into());
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_owned())
            .unwrap_or_else(|_| "unknown".into());
        Environment {
            rustc: locked::RUSTC,
            profile: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            },
            cpu,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            kernel,
        }
    }
}

impl fmt::Display for Environment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} | {} build | {} | {} cores | Linux {}",
            self.rustc, self.profile, self.cpu, self.cores, self.kernel
        )
    }
}
