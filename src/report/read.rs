//! Reading the report's sources: criterion's timings and gungraun's counts from one or more
//! target folders (shards), `framebench deltas --json` and `framebench allocs --json`.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::paired::{self, Delta};
use std::time::SystemTime;

use super::{builds, criterion, gungraun, is_baseline, ordered, table};
use crate::env::Environment;
use crate::interval::Estimate;
use crate::provenance::{Provenance, Source};

/// One criterion measurement.
#[derive(Debug, Clone)]
pub(crate) struct Timing {
    /// `in_process/hello`.
    pub(crate) group: String,
    /// `axum`.
    pub(crate) function: String,
    /// `log=off,io=memory`, `raw-client`, `reqwest`.
    pub(crate) value: String,
    /// Criterion's estimate of the time per iteration (slope when present, else mean), ns,
    /// with criterion's confidence interval of that estimate.
    pub(crate) ns: Estimate,
    /// The target folder it was read from (`framebench report --target-dir A --target-dir B`,
    /// one per shard of a sharded `cargo bench`), 0 for the first.
    pub(crate) shard: usize,
}

#[cfg(test)]
impl Timing {
    /// A time of `us` µs ±`pct` %, in shard 0, for the consistency checks' tests.
    pub(crate) fn of(group: &str, function: &str, value: &str, us: f64, pct: f64) -> Timing {
        let ns = us * 1000.0;
        Timing {
            group: group.into(),
            function: function.into(),
            value: value.into(),
            ns: Estimate {
                point: ns,
                lo: ns * (1.0 - pct / 100.0),
                hi: ns * (1.0 + pct / 100.0),
            },
            shard: 0,
        }
    }
}

/// One callgrind count.
#[derive(Debug, Clone)]
pub(crate) struct Count {
    /// `in_process/hello/off` or `loopback/hello`.
    pub(crate) key: String,
    /// Framework name.
    pub(crate) framework: String,
    /// Instructions (Ir).
    pub(crate) instructions: f64,
}

pub(crate) fn files_named(root: &Path, name: &str, out: &mut Vec<PathBuf>) {
    let Ok(dir) = std::fs::read_dir(root) else {
        return;
    };
    let mut entries: Vec<_> = dir.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files_named(&path, name, out);
        } else if path.file_name().is_some_and(|n| n == name) {
            out.push(path);
        }
    }
}

/// What a report reads from one or several target folders.
pub(super) struct Shards {
    pub(super) timings: Vec<Timing>,
    pub(super) newest: Option<SystemTime>,
    pub(super) counts: Vec<Count>,
    pub(super) allocs: Vec<crate::allocs::Measured>,
    pub(super) deltas: Vec<Delta>,
    /// With several folders, the "Shards" section: which folder each framework came from.
    pub(super) text: String,
    /// Every source and the build that measured it ([`builds`]).
    pub(super) sources: Vec<Source>,
    /// The machines the sources were measured on, as they recorded them.
    pub(super) machines: Vec<Environment>,
    /// The groups (`in_process`, `loopback`) whose times came from `framebench time`'s
    /// interleaved rounds rather than criterion's.
    pub(super) interleaved: Vec<&'static str>,
}

impl Shards {
    /// Reads the files framebench itself wrote into target folder `dir` (`allocs --json`,
    /// `deltas --json`), and which build measured each source there, the benches' included.
    fn read_own_files(&mut self, dir: &Path) -> anyhow::Result<()> {
        let (sources, machines) = builds::of_benches(dir)?;
        self.sources.extend(sources);
        self.machines.extend(machines);
        let path = dir.join(ALLOCS_JSON);
        if path.exists() {
            let results = crate::results::Results::read(&path)?;
            self.add_source(&path, results.provenance.as_ref(), &results.environment);
            self.allocs.extend(allocs_of(results, &path)?);
        }
        let path = dir.join(paired::DELTAS_JSON);
        if path.exists() {
            let report = paired::read(&path)?;
            self.add_source(&path, report.provenance.as_ref(), &report.environment);
            self.deltas.extend(report.cells);
        }
        Ok(())
    }

    fn add_source(&mut self, path: &Path, p: Option<&Provenance>, environment: &Environment) {
        let written = std::fs::metadata(path).and_then(|m| m.modified()).ok();
        let name = path.display().to_string();
        self.sources
            .extend(Source::of_file(&name, p, environment, written));
        self.machines.push(environment.clone());
    }
}

/// Reads every folder's criterion, callgrind, allocation and `deltas` results. Several folders
/// are the shards of one bench run split over CI runners (docs/usage.md, "Sharding the
/// benches"): a cell measured in two of them is refused in one line, every timing keeps its
/// shard, and ratios are taken only within one shard (the floor's here; `raw`'s come from
/// `deltas`' paired rounds, which are within one process by construction).
pub(super) fn read_shards(dirs: &[PathBuf]) -> anyhow::Result<Shards> {
    let mut all = Shards {
        timings: Vec::new(),
        newest: None,
        counts: Vec::new(),
        allocs: Vec::new(),
        deltas: Vec::new(),
        text: String::new(),
        sources: Vec::new(),
        machines: Vec::new(),
        interleaved: Vec::new(),
    };
    let mut names: Vec<Vec<String>> = Vec::new();
    for (shard, dir) in dirs.iter().enumerate() {
        let (mut timings, newest) = criterion::read(&dir.join("criterion"))?;
        // `framebench time`'s interleaved rounds replace criterion's times of their groups.
        for (group, file) in [
            ("in_process", crate::timing::IN_PROCESS_JSON),
            ("loopback", crate::timing::LOOPBACK_JSON),
        ] {
            let path = dir.join(file);
            if !path.exists() {
                continue;
            }
            let results = crate::results::Results::read(&path)?;
            all.add_source(&path, results.provenance.as_ref(), &results.environment);
            timings.retain(|t| !t.group.starts_with(&format!("{group}/")));
            timings.extend(interleaved_timings(&results, group, &path)?);
            if !all.interleaved.contains(&group) {
                all.interleaved.push(group);
            }
        }
        let counts = gungraun::read(&dir.join("gungraun"))?;
        // The baselines are built into every shard (`null`, `raw`): the tables show the first
        // shard's figures.
        for t in &mut timings {
            t.shard = shard;
            if is_baseline(&t.function) {
                continue;
            }
            if let Some(o) = all
                .timings
                .iter()
                .find(|o| (&o.group, &o.function, &o.value) == (&t.group, &t.function, &t.value))
            {
                anyhow::bail!(
                    "{} {} {} was measured in both {} and {}: give each shard its own frameworks",
                    t.group,
                    t.function,
                    t.value,
                    dirs[o.shard].display(),
                    dir.display()
                );
            }
        }
        for c in counts.iter().filter(|c| !is_baseline(&c.framework)) {
            if all
                .counts
                .iter()
                .any(|o| (&o.key, &o.framework) == (&c.key, &c.framework))
            {
                anyhow::bail!(
                    "the callgrind count {} {} is in two shards (one of them {})",
                    c.key,
                    c.framework,
                    dir.display()
                );
            }
        }
        let mut here: Vec<String> = timings.iter().map(|t| t.function.clone()).collect();
        here.extend(counts.iter().map(|c| c.framework.clone()));
        here.retain(|n| !is_baseline(n));
        names.push(ordered(here));
        all.newest = all.newest.max(newest);
        all.timings.extend(timings);
        all.counts.extend(counts);
        all.read_own_files(dir)?;
    }
    if dirs.len() > 1 {
        all.text.push_str(
            "## Shards\n\nThis report joins the bench runs of several target folders, one per \
             shard of the run. Every figure comes from one of them. The baselines (`null`, \
             `raw`), built into every shard, are shown from the first; the floor's ratio is \
             taken only within the first shard, and the ratios to `raw` come from `framebench \
             deltas`' paired rounds, each within one process.\n\n",
        );
        let rows: Vec<Vec<String>> = dirs
            .iter()
            .zip(&names)
            .map(|(d, n)| vec![format!("`{}`", d.display()), n.join(", ")])
            .collect();
        table(&mut all.text, &["shard".into(), "frameworks".into()], &rows);
    }
    Ok(all)
}

/// The times of a `framebench time` file as the report's timings: group `in_process/hello`,
/// variant `log=off,io=memory` (in-process) or `raw-client` (loopback, criterion's name for
/// the same client).
fn interleaved_timings(
    results: &crate::results::Results,
    group: &str,
    path: &Path,
) -> anyhow::Result<Vec<Timing>> {
    let detail =
        crate::timing::detail_of(results).with_context(|| format!("reading {}", path.display()))?;
    Ok(detail
        .cells
        .into_iter()
        .filter_map(|c| {
            let ns = c.time?;
            let value = if group == "loopback" {
                "raw-client".to_owned()
            } else {
                c.variant
            };
            Some(Timing {
                group: format!("{group}/{}", c.scenario),
                function: c.framework,
                value,
                ns,
                shard: 0,
            })
        })
        .collect())
}

/// The figures of a bench run as one results file (`framebench diff` reads it): criterion's
/// times with their intervals, callgrind's instructions per request, and the allocation counts,
/// of what `provenance` says, measured on `machine`.
pub(super) fn results_of(
    timings: &[Timing],
    counts: &[Count],
    allocs: &[crate::allocs::Measured],
    provenance: Provenance,
    machine: &Environment,
) -> crate::results::Results {
    use crate::results::{Figure, Metric};
    let mut figures = Vec::new();
    for t in timings {
        if let Some((bench, scenario)) = t.group.split_once('/') {
            figures.push(Figure::timed(
                &format!("criterion/{bench}"),
                &t.function,
                scenario,
                &t.value,
                Metric::Time,
                t.ns,
            ));
        }
    }
    for c in counts {
        let mut parts = c.key.split('/');
        let (bench, scenario, variant) = match (parts.next(), parts.next(), parts.next()) {
            // In-process keys end in their log mode; loopback ones in a variant of their own
            // (`tls`, `tls_connect`), which read as `log=tls` until 7271ca5's publication.
            (Some("in_process"), Some(s), Some(log)) => ("in_process", s, format!("log={log}")),
            (Some(b), Some(s), Some(variant)) => (b, s, variant.to_owned()),
            (Some(b), Some(s), None) => (b, s, String::new()),
            _ => continue,
        };
        figures.push(Figure::count(
            &format!("callgrind/{bench}"),
            &c.framework,
            scenario,
            &variant,
            Metric::Instructions,
            c.instructions,
        ));
    }
    let allocs = crate::allocs::report::Report {
        repeats: 0,
        cells: allocs.to_vec(),
    };
    figures.extend(allocs.figures());
    let mut results = crate::results::Results::new("report", figures, provenance);
    // The machine and build that measured; the crates' versions as this build's registry names
    // them (Cargo.lock's, the same for one commit).
    results.environment = Environment {
        versions: std::mem::take(&mut results.environment.versions),
        ..machine.clone()
    };
    results
}

/// Where `framebench allocs --json` writes for the report, under the target folder.
pub(crate) const ALLOCS_JSON: &str = "allocs/allocs.json";

/// The cells `framebench allocs --json` wrote to `path`, or none when it has not run.
pub(crate) fn read_allocs(path: &Path) -> anyhow::Result<Vec<crate::allocs::Measured>> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    allocs_of(crate::results::Results::read(path)?, path)
}

/// The cells of `results`, read from `path`.
fn allocs_of(
    results: crate::results::Results,
    path: &Path,
) -> anyhow::Result<Vec<crate::allocs::Measured>> {
    let report = crate::allocs::report::Report::from_results(results)
        .with_context(|| format!("reading {}", path.display()))?;
    Ok(report.cells)
}

#[cfg(test)]
mod tests {
    use super::{results_of, Count};

    /// An in-process count's variant is its log mode; a loopback count's is its own variant
    /// (`tls`, `tls_connect`), not a log mode, and a bare loopback key has none.
    #[test]
    fn count_variants_name_log_modes_only_in_process() {
        let count = |key: &str| Count {
            key: key.into(),
            framework: "axum".into(),
            instructions: 1.0,
        };
        let counts = [
            count("in_process/hello/off"),
            count("loopback/hello/tls_connect"),
            count("loopback/hello"),
        ];
        let window = crate::provenance::Window::since(std::time::SystemTime::now());
        let provenance = crate::provenance::Provenance::here(window);
        let machine = crate::env::Environment::current();
        let results = results_of(&[], &counts, &[], provenance, &machine);
        let variants: Vec<(&str, &str)> = results
            .figures
            .iter()
            .map(|f| (f.bench.as_str(), f.variant.as_str()))
            .collect();
        assert_eq!(
            variants,
            [
                ("callgrind/in_process", "log=off"),
                ("callgrind/loopback", "tls_connect"),
                ("callgrind/loopback", ""),
            ]
        );
    }
}
