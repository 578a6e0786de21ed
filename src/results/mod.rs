//! One results file for the measuring commands (schema [`SCHEMA`]: the quick compare, `allocs`,
//! `load`, `compare` and `report` write it; `deltas` keeps its own), and `framebench diff`,
//! which compares two of them, or two frameworks within one, and gates on a regression.
//!
//! A file is a list of [`Figure`]s, each one number about one cell: a bench (`allocs`,
//! `callgrind/in_process`, `criterion/loopback`, …), a framework, a scenario, a variant and a
//! [`Metric`], with the interval of a timed figure. Counts (instructions, allocations, bytes)
//! repeat exactly on one build, so their change is printed exactly and a gate on them never
//! flakes. A time or a rate is compared only through its interval: a change whose interval
//! holds zero prints `≈` (the rule of [`crate::interval`]) and never crosses a gate.
//!
//! This file holds the schema and its reading and writing; [`diff`] the comparison, the gates
//! and the baselines; [`bmf`] the Bencher Metric Format.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::env::Environment;
use crate::provenance::Provenance;

/// The version of the results format; a file of another is refused with one line.
pub const SCHEMA: &str = "framebench-results/1";

/// What a figure measures, and which way is worse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Metric {
    /// Instructions per request (callgrind): exact.
    Instructions,
    /// Allocation calls per request (`alloc` + `realloc`): exact.
    Allocs,
    /// Bytes allocated per request: exact.
    Bytes,
    /// Nanoseconds per request, with an interval.
    Time,
    /// Requests per second, with an interval; lower is worse.
    Rps,
    /// Live heap bytes one idle connection holds in its server (`framebench memory`): exact,
    /// written only where two runs of one build agreed to the byte.
    #[serde(rename = "heap_bytes_per_conn")]
    HeapPerConn,
    /// Resident bytes one idle connection adds to its server, the kernel's figure: not exact,
    /// and without an interval, so `diff` never tells two apart (`≈`).
    #[serde(rename = "rss_bytes_per_conn")]
    RssPerConn,
}

impl Metric {
    /// Every metric, by the name the gate uses.
    pub(crate) const ALL: [Metric; 7] = [
        Metric::Instructions,
        Metric::Allocs,
        Metric::Bytes,
        Metric::Time,
        Metric::Rps,
        Metric::HeapPerConn,
        Metric::RssPerConn,
    ];

    /// The name used in files and gates.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Metric::Instructions => "instructions",
            Metric::Allocs => "allocs",
            Metric::Bytes => "bytes",
            Metric::Time => "time",
            Metric::Rps => "rps",
            Metric::HeapPerConn => "heap_bytes_per_conn",
            Metric::RssPerConn => "rss_bytes_per_conn",
        }
    }

    /// Whether the figure repeats exactly on one build (no interval needed).
    pub(crate) fn exact(self) -> bool {
        matches!(
            self,
            Metric::Instructions | Metric::Allocs | Metric::Bytes | Metric::HeapPerConn
        )
    }

    /// +1 when more is worse, −1 when less is (a rate).
    fn worse(self) -> f64 {
        if self == Metric::Rps {
            -1.0
        } else {
            1.0
        }
    }
}

/// One number about one cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Figure {
    /// What measured it: `allocs`, `callgrind/in_process`, `callgrind/loopback`,
    /// `criterion/in_process`, `criterion/loopback`, `load`, `quick/in_process`, …
    pub(crate) bench: String,
    /// Framework name.
    pub(crate) framework: String,
    /// Scenario name.
    pub(crate) scenario: String,
    /// `log=off,io=memory`, `c32`, … (what else defines the cell).
    pub(crate) variant: String,
    /// What the value is.
    pub(crate) metric: Metric,
    /// The value.
    pub(crate) value: f64,
    /// The interval of a timed value (absent for an exact count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) lo: Option<f64>,
    /// See `lo`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) hi: Option<f64>,
    /// For a figure of several rounds (`scale`): how many, `value` being their median and
    /// `lo`–`hi` their range.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) rounds: Option<usize>,
}

impl Figure {
    /// An exact count.
    pub(crate) fn count(
        bench: &str,
        fw: &str,
        scenario: &str,
        variant: &str,
        m: Metric,
        v: f64,
    ) -> Self {
        Figure {
            bench: bench.to_owned(),
            framework: fw.to_owned(),
            scenario: scenario.to_owned(),
            variant: variant.to_owned(),
            metric: m,
            value: v,
            lo: None,
            hi: None,
            rounds: None,
        }
    }

    /// A timed value with its interval.
    pub(crate) fn timed(
        bench: &str,
        fw: &str,
        scenario: &str,
        variant: &str,
        m: Metric,
        e: crate::interval::Estimate,
    ) -> Self {
        let bounded = e.bounded();
        Figure {
            lo: bounded.then_some(e.lo),
            hi: bounded.then_some(e.hi),
            ..Figure::count(bench, fw, scenario, variant, m, e.point)
        }
    }

    /// The cell and metric, without the framework (which `--pair` maps).
    fn slot(&self) -> (String, String, String, Metric) {
        (
            self.bench.clone(),
            self.scenario.clone(),
            self.variant.clone(),
            self.metric,
        )
    }

    pub(crate) fn name(&self) -> String {
        format!(
            "{} {} {} {}",
            self.bench, self.framework, self.scenario, self.variant
        )
    }
}

/// A results file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Results {
    /// [`SCHEMA`].
    pub(crate) schema: String,
    /// The command that wrote it: `allocs`, `report`, `load`, `compare`, `quick`.
    pub(crate) command: String,
    /// The command line and commit that wrote it (`framebench report … at 99cb315`,
    /// [`crate::generated::stamp`]); files written before it was kept have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) generated_by: Option<String>,
    /// Where: the machine, and the build that measured (for `report`, the first source's as it
    /// recorded them, else the report's own).
    pub(crate) environment: Environment,
    /// Which builds measured and wrote it, and when ([`Provenance`]); files written before it
    /// was kept have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) provenance: Option<Provenance>,
    /// What.
    pub(crate) figures: Vec<Figure>,
    /// The command's own detail, for its own readers (`allocs`: its cells with every count
    /// and error, which `framebench report` prints); `diff` reads only `figures`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) detail: Option<serde_json::Value>,
}

impl Results {
    /// A file of `command` written here, of what `provenance` says.
    pub(crate) fn new(command: &str, figures: Vec<Figure>, provenance: Provenance) -> Self {
        Results {
            schema: SCHEMA.to_owned(),
            command: command.to_owned(),
            generated_by: Some(crate::generated::stamp()),
            environment: Environment::current().with_versions(
                crate::frameworks::REGISTRY
                    .iter()
                    .map(|e| (e.name.to_owned(), e.version().to_owned())),
            ),
            provenance: Some(provenance),
            figures,
            detail: None,
        }
    }

    /// Writes it as pretty JSON, creating the folder.
    pub(crate) fn write(&self, path: &Path) -> anyhow::Result<()> {
        write_json(path, self)
    }

    /// Reads a results file; anything else (not JSON, no schema, another schema) is one line
    /// of bad input ([`crate::versioned`]).
    pub(crate) fn read(path: &Path) -> anyhow::Result<Results> {
        crate::versioned::read(path)
    }

    /// [`Results::read`] of text already read; `what` names it in errors.
    pub fn parse(text: &str, what: &str) -> anyhow::Result<Results> {
        crate::versioned::parse(text, what)
    }
}

impl crate::versioned::Versioned for Results {
    const SCHEMAS: &'static [&'static str] = &[SCHEMA];
    const WHAT: &'static str = "a framebench results file";
    const HOW: &'static str = "write one with --json";
}

/// Writes `value` as pretty JSON to `path`, creating its folder.
fn write_json(path: &Path, value: &impl Serialize) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("creating {}: {e}", dir.display()))?;
    }
    let text = serde_json::to_string_pretty(value)? + "\n";
    // Whole or not at all: a file written over its own input (`scale --resume F --json F`)
    // must not be left half-written by a kill mid-write.
    let name = path
        .file_name()
        .map_or("results".into(), |n| n.to_string_lossy());
    let part = path.with_file_name(format!(".{name}.part"));
    std::fs::write(&part, text)
        .and_then(|()| std::fs::rename(&part, path))
        .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))
}

/// `env` is the crate's own; tests and benches reach its target folder here.
pub use crate::env::target_dir;

mod bmf;
pub(crate) mod diff;

pub(crate) use diff::BaselineArgs;
pub use diff::Gate;

/// Figures for the tests of [`diff`] and [`bmf`].
#[cfg(test)]
pub(crate) mod test_figures {
    use super::{Figure, Metric};

    pub(crate) fn count(fw: &str, m: Metric, v: f64) -> Figure {
        Figure::count("allocs", fw, "hello", "log=off", m, v)
    }

    pub(crate) fn timed(fw: &str, v: f64, lo: f64, hi: f64) -> Figure {
        Figure {
            lo: Some(lo),
            hi: Some(hi),
            ..Figure::count(
                "criterion/in_process",
                fw,
                "hello",
                "log=off",
                Metric::Time,
                v,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A results file written before provenance was kept still reads, and has none.
    #[test]
    fn a_file_of_before_reads_without_provenance() {
        let file = Results::parse(
            &serde_json::json!({"schema": SCHEMA, "command": "allocs",
                "environment": Environment::current(), "figures": []})
            .to_string(),
            "old.json",
        )
        .unwrap();
        assert_eq!(file.provenance, None);
    }
}
