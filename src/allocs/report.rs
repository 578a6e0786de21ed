//! What `framebench allocs --json` writes (its cells, read back as a results file), and
//! [`spawn`], which runs that command as a child process for the quick compare and the report.

use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

use super::Measured;
use crate::provenance::{Provenance, Window};

/// Repeats per cell unless `--repeats` says otherwise.
pub(crate) const REPEATS: u16 = 5;

/// What `--json` writes.
#[derive(Debug, Serialize, Deserialize)]
pub struct Report {
    /// Dispatches counted per cell.
    pub(crate) repeats: usize,
    /// Every cell, in registry × scenario × logging order.
    pub cells: Vec<Measured>,
}

impl Report {
    /// Every cell's allocation calls (`alloc` + `realloc`) and bytes allocated as figures for
    /// `framebench diff`.
    pub(crate) fn figures(&self) -> Vec<crate::results::Figure> {
        use crate::results::{Figure, Metric};
        self.cells
            .iter()
            .filter_map(|c| c.counts.map(|n| (c, n)))
            .flat_map(|(c, n)| {
                let variant = format!("log={}", c.logging);
                [
                    (Metric::Allocs, (n.allocs + n.reallocs) as f64),
                    (Metric::Bytes, n.bytes_allocated as f64),
                ]
                .map(|(m, v)| Figure::count("allocs", &c.framework, &c.scenario, &variant, m, v))
            })
            .collect()
    }

    /// The results file `--json` writes, of cells counted in `window`: the [`Report::figures`],
    /// and the whole report as its detail.
    pub(crate) fn results(&self, window: Window) -> anyhow::Result<crate::results::Results> {
        let mut results =
            crate::results::Results::new("allocs", self.figures(), Provenance::here(window));
        results.detail = Some(serde_json::to_value(self)?);
        Ok(results)
    }

    /// The report inside a results file `allocs --json` wrote.
    pub fn from_results(results: crate::results::Results) -> anyhow::Result<Report> {
        anyhow::ensure!(
            results.command == "allocs",
            "a `{}` results file, not one of `framebench allocs`",
            results.command
        );
        let detail = results
            .detail
            .ok_or_else(|| anyhow::anyhow!("the allocs results file has no detail"))?;
        Ok(serde_json::from_value(detail)?)
    }
}

/// Runs `framebench allocs --json -` as a child of this process (the same binary) for
/// `frameworks` with `logging`, and reads its cells. The child exits 1 when a cell fails; its
/// cells are read all the same, failures with their reason.
pub(crate) fn spawn(
    frameworks: &[&str],
    logging: crate::options::Logging,
    repeats: usize,
) -> anyhow::Result<Report> {
    let exe = std::env::current_exe()?;
    let out = Command::new(exe)
        .arg("allocs")
        .args(frameworks)
        .args(["--logging", &logging.to_string()])
        .args(["--repeats", &repeats.to_string(), "--json", "-"])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().rev().find(|l| l.starts_with('{'));
    match line {
        Some(l) => Report::from_results(crate::results::Results::parse(l, "`framebench allocs`")?),
        None => anyhow::bail!(
            "`framebench allocs` wrote no cells ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ),
    }
}
