//! The environment every result carries: compiler, profile, CPU, cores, framebench's build and
//! the crate versions measured.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

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

/// Where a measurement ran: the machine, the compiler, and framebench's own build, with the
/// frameworks' versions where a file names them. The one description of the environment: the
/// terminal prints it in one line ([`fmt::Display`]) and every file a command writes embeds it
/// (a results file, the load detail inside one, `deltas --json`). The fields after `kernel` came
/// later to some of those files, so a file without them still reads (empty).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Environment {
    /// `rustc -V`.
    pub(crate) rustc: String,
    /// `release` or `debug`.
    pub(crate) profile: String,
    /// CPU model from /proc/cpuinfo.
    pub(crate) cpu: String,
    /// Cores available to this process.
    pub(crate) cores: usize,
    /// Kernel release.
    pub(crate) kernel: String,
    /// framebench's package version.
    #[serde(default)]
    pub(crate) framebench: String,
    /// framebench's `git rev-parse HEAD` when it was built (`unknown` outside a checkout).
    #[serde(default)]
    pub(crate) git_revision: String,
    /// framebench's enabled Cargo features.
    #[serde(default)]
    pub(crate) features: Vec<String>,
    /// Framework → the crate and exact version measured; empty where the file does not name
    /// them (see [`Environment::with_versions`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) versions: BTreeMap<String, String>,
}

impl Environment {
    /// Reads the environment of this process (without the frameworks' versions).
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
            rustc: locked::RUSTC.to_owned(),
            profile: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            }
            .to_owned(),
            cpu,
            cores: online_cpus(),
            kernel,
            framebench: env!("CARGO_PKG_VERSION").to_owned(),
            git_revision: GIT_REVISION.to_owned(),
            features: FEATURES
                .split(',')
                .filter(|f| !f.is_empty())
                .map(str::to_owned)
                .collect(),
            versions: BTreeMap::new(),
        }
    }

    /// With the versions of the frameworks measured (name → crate and version). The registry
    /// is not read here, which would make `env` and the frameworks use each other.
    pub(crate) fn with_versions(
        self,
        versions: impl IntoIterator<Item = (String, String)>,
    ) -> Self {
        Environment {
            versions: versions.into_iter().collect(),
            ..self
        }
    }

    /// The fields that differ from `other`, as `rustc: A → B` lines (framework versions one
    /// line each).
    pub(crate) fn differences(&self, other: &Environment) -> Vec<String> {
        let mut out = Vec::new();
        let mut field = |name: &str, a: &str, b: &str| {
            if a != b {
                out.push(format!("{name}: {a} → {b}"));
            }
        };
        field("rustc", &self.rustc, &other.rustc);
        field("profile", &self.profile, &other.profile);
        field("cpu", &self.cpu, &other.cpu);
        field("cores", &self.cores.to_string(), &other.cores.to_string());
        field("kernel", &self.kernel, &other.kernel);
        field("framebench", &self.git_revision, &other.git_revision);
        field(
            "features",
            &self.features.join(","),
            &other.features.join(","),
        );
        for (fw, v) in &self.versions {
            if let Some(w) = other.versions.get(fw) {
                field(fw, v, w);
            }
        }
        out
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

/// The cargo target folder framebench keeps its own files under: `$CARGO_TARGET_DIR`, else
/// `target`.
pub fn target_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || std::path::PathBuf::from("target"),
        std::path::PathBuf::from,
    )
}

/// The machine's online CPUs, not this process's: a command that pinned itself to one CPU
/// before it wrote its results (`time --loopback`, `memory`) still names a 2-core machine.
fn online_cpus() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n)
        .ok()
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The three shapes the environment had in files before it was one struct still read: a
    /// results file's (docs/results.json), a load result's (with `framebench`, no build) and
    /// `deltas --json`'s (with `pinning`), each copied from a file this project wrote.
    #[test]
    fn the_environments_of_older_files_still_read() {
        let results: Environment = serde_json::from_str(
            r#"{"rustc": "rustc 1.95.0 (59807616e 2026-04-14)", "profile": "release",
            "cpu": "Intel(R) Xeon(R) Processor", "cores": 16, "kernel": "6.18.44-fc-v657-gpu",
            "git_revision": "10c79784249e59eb2cc612724b53c5ac6b372af3",
            "features": ["axum", "default"], "versions": {"actix": "4.18.1", "axum": "0.8.9"}}"#,
        )
        .unwrap();
        assert_eq!(results.versions["axum"], "0.8.9");
        assert_eq!(results.features, ["axum", "default"]);
        assert_eq!(results.framebench, "");
        let load: Environment = serde_json::from_str(
            r#"{"cores": 16, "cpu": "Intel(R) Xeon(R) Processor", "framebench": "0.1.0",
            "kernel": "6.18.44-fc-v657-gpu", "profile": "release",
            "rustc": "rustc 1.95.0 (59807616e 2026-04-14)"}"#,
        )
        .unwrap();
        assert_eq!((load.framebench.as_str(), load.cores), ("0.1.0", 16));
        assert!(load.git_revision.is_empty() && load.versions.is_empty());
        let deltas: Environment = serde_json::from_str(
            r#"{"rustc": "rustc 1.95.0", "profile": "release", "cpu": "x", "cores": 2,
            "kernel": "6.1", "pinning": "server core 0, client core 1 (vs-raw), when there are two cores"}"#,
        )
        .unwrap();
        assert_eq!(
            deltas.to_string(),
            "rustc 1.95.0 | release build | x | 2 cores | Linux 6.1"
        );
        // Only what differs is listed, the build under framebench's name.
        assert_eq!(
            load.differences(&results),
            [
                "framebench:  → 10c79784249e59eb2cc612724b53c5ac6b372af3",
                "features:  → axum,default"
            ]
        );
    }

    #[test]
    fn this_process_is_described_whole() {
        let here = Environment::current().with_versions([("axum".into(), "0.8.9".into())]);
        assert_eq!(here.framebench, env!("CARGO_PKG_VERSION"));
        assert!(
            here.cores >= 1 && here.rustc.starts_with("rustc "),
            "{here:?}"
        );
        let text = serde_json::to_string(&here).unwrap();
        let back: Environment = serde_json::from_str(&text).unwrap();
        assert_eq!(back, here);
    }
}
