//! A framework's footprint: what scripts/footprint.sh measured per framework feature (the build
//! beyond the floors-only build, the stripped binary's size beyond its, the Go peers' own builds)
//! joined with each feature's `framebench startup` file, into one table, one chart and one
//! results file (`framebench footprint`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::interval::Estimate;
use crate::provenance::Source;
use crate::results::Results;
use crate::startup::{Started, Summary};

/// What scripts/footprint.sh writes: its builds, and where each feature's start-up file is.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Builds {
    /// When the builds and start-ups ran (`28 Nov 2026 01:02–01:40 UTC`).
    pub(crate) window: String,
    /// The host-speed reference's build.
    pub(crate) reference: Reference,
    /// The floors-only build, cold.
    pub(crate) floors: Build,
    /// One build per framework feature.
    pub(crate) features: Vec<Feature>,
    /// The rounds of each `framebench startup`.
    pub(crate) rounds: u32,
}

impl Builds {
    const SCHEMA: &'static str = "framebench-footprint-builds/1";

    /// Reads a builds file; anything else is one line of bad input ([`crate::versioned`]).
    pub(crate) fn read(path: &Path) -> anyhow::Result<Builds> {
        crate::versioned::read(path)
    }
}

impl crate::versioned::Versioned for Builds {
    const SCHEMAS: &'static [&'static str] = &[Builds::SCHEMA];
    const WHAT: &'static str = "a footprint builds file";
    const HOW: &'static str = "write one with scripts/footprint.sh";
}

/// The host-speed reference ([`crate`]'s scripts/lib/host-speed.sh).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Reference {
    /// `regex-syntax 0.8.11`.
    #[serde(rename = "crate")]
    pub(crate) krate: String,
    /// Seconds.
    pub(crate) build_s: f64,
}

/// One release build of the framebench binary.
#[derive(Debug, Clone, Copy, Deserialize)]
pub(crate) struct Build {
    /// Seconds.
    pub(crate) build_s: f64,
    /// The stripped binary's bytes.
    pub(crate) bytes: u64,
}

/// One framework feature's build, its start-up file and, for `go`, the peers' own builds.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Feature {
    /// The Cargo feature.
    pub(crate) feature: String,
    /// Seconds of its build after the floors-only build, in the same target folder.
    pub(crate) build_s: f64,
    /// Its stripped binary's bytes.
    pub(crate) bytes: u64,
    /// Its `framebench startup --json` file, relative to the builds file.
    pub(crate) startup: PathBuf,
    /// The Go peers' `go build`s (feature `go` only).
    #[serde(default)]
    pub(crate) go_peers: Vec<GoPeer>,
}

/// One Go peer's build.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct GoPeer {
    /// `go-nethttp`.
    pub(crate) framework: String,
    /// Seconds of `go build` with a build cache of the standard library only, modules
    /// downloaded.
    pub(crate) build_s: f64,
    /// Its stripped binary's bytes.
    pub(crate) bytes: u64,
}

/// One framework's footprint.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Row {
    /// The framework.
    pub(crate) framework: String,
    /// Its Cargo feature.
    pub(crate) feature: String,
    /// Seconds its build took: its feature's beyond the floors-only build, or a Go peer's
    /// `go build`.
    pub(crate) build_s: f64,
    /// Bytes of its stripped binary beyond the floors-only one's, or a Go peer's own binary.
    pub(crate) bytes: u64,
    /// Whether the build and size are a Go peer's own (not framebench's).
    pub(crate) own_binary: bool,
    /// Its start-up, in its feature's binary.
    pub(crate) startup: Summary,
    /// Its start-up over raw's, round by round, in the same binary; `None` for raw.
    pub(crate) to_raw: Option<Estimate>,
}

/// The rows of every framework in `builds`, whose start-up files lie beside it (raw's once,
/// from the first file), and those files as the sources of a results file.
pub(crate) fn rows(builds: &Builds, dir: &Path) -> anyhow::Result<(Vec<Row>, Vec<Source>)> {
    let mut rows: Vec<Row> = Vec::new();
    let mut sources = Vec::new();
    for f in &builds.features {
        let path = dir.join(&f.startup);
        let results = Results::read(&path)?;
        sources.extend(Source::of_file(
            &path.display().to_string(),
            results.provenance.as_ref(),
            &results.environment,
            None,
        ));
        let started: Vec<Started> = results
            .detail
            .map(serde_json::from_value)
            .transpose()?
            .unwrap_or_default();
        for s in started {
            if rows.iter().any(|r| r.framework == s.framework) {
                continue;
            }
            let peer = f.go_peers.iter().find(|p| p.framework == s.framework);
            let raw = s.to_raw.is_none();
            rows.push(Row {
                feature: if raw { "–".into() } else { f.feature.clone() },
                build_s: peer.map_or(if raw { 0.0 } else { f.build_s }, |p| p.build_s),
                bytes: peer.map_or(
                    if raw {
                        0
                    } else {
                        f.bytes.saturating_sub(builds.floors.bytes)
                    },
                    |p| p.bytes,
                ),
                own_binary: peer.is_some(),
                framework: s.framework,
                startup: s.summary,
                to_raw: s.to_raw,
            });
        }
    }
    Ok((rows, sources))
}

/// The table, as Markdown.
fn table(rows: &[Row], reference_s: f64) -> crate::table::Table {
    use crate::table::{Align, Table};
    let mut t = Table::new([
        ("framework", Align::Left),
        ("feature", Align::Left),
        ("build", Align::Right),
        ("× reference", Align::Right),
        ("stripped size", Align::Right),
        ("exec to first 200", Align::Right),
        ("× raw", Align::Right),
        ("RSS after", Align::Right),
    ]);
    for r in rows {
        let mark = if r.own_binary { " ¹" } else { "" };
        let raw = r.to_raw.is_none();
        t.row([
            r.framework.clone(),
            r.feature.clone(),
            if raw {
                "–".into()
            } else {
                format!("{:.0} s{mark}", r.build_s)
            },
            if raw {
                "–".into()
            } else {
                format!("{:.0}", r.build_s / reference_s)
            },
            if raw {
                "–".into()
            } else {
                format!("{}{mark}", crate::units::fmt_bytes(r.bytes as f64))
            },
            format!(
                "{:.1} ms ({:.1}–{:.1})",
                r.startup.to_first_200.point * 1e3,
                r.startup.to_first_200.lo * 1e3,
                r.startup.to_first_200.hi * 1e3
            ),
            crate::startup::ratio_cell(r.to_raw),
            crate::units::fmt_bytes(r.startup.rss),
        ]);
    }
    t
}

/// The stamped Markdown file: the builds that measured (the start-up files'), the window and
/// the machine, the table and what each column is.
pub(crate) fn markdown(builds: &Builds, rows: &[Row], sources: &[Source]) -> String {
    let text = format!(
        "# Footprint: what a framework costs before its first request\n\n{measured}\n\n\
         Window: {window}, on {machine}\n\n\
         Host-speed reference: the release build of {krate} alone, {ref_s:.1} s. The floors-only \
         build of framebench (no framework), cold: {floors_s:.0} s, {floors_size} stripped.\n\n{table}\n\
         `build`: the release build of framebench with that framework's feature alone, after the \
         floors-only build in the same target folder: that framework's crates and framebench \
         itself. `stripped size`: its stripped binary beyond the floors-only one. `exec to first \
         200`: from the spawn of `framebench serve X --threads 1` (in that feature's own binary) \
         to its first `hello` read whole, the median of {rounds} interleaved rounds beside `raw` \
         in the same binary, with its 95 % interval; `× raw` is the ratio taken within each round \
         (`≈` where its interval holds 1). `RSS after`: the serving processes' resident memory \
         right after that answer (the binary's pages it touched included).\n\n\
         ¹ A Go peer: its own `go build` (modules downloaded, a build cache holding the standard \
         library only) and its own stripped binary, not framebench's.\n\n{unstarted}\
         Written by `scripts/footprint.sh`; methodology: [memory](../methodology/memory.md#footprint).\n",
        measured = crate::provenance::Provenance::joined(sources)
            .lines()
            .into_iter()
            .filter(|l| !l.starts_with("Window"))
            .collect::<Vec<_>>()
            .join("\n\n"),
        window = builds.window,
        machine = crate::env::Environment::current(),
        krate = builds.reference.krate,
        ref_s = builds.reference.build_s,
        floors_s = builds.floors.build_s,
        floors_size = crate::units::fmt_bytes(builds.floors.bytes as f64),
        table = table(rows, builds.reference.build_s).markdown(),
        rounds = builds.rounds,
        unstarted = unstarted(builds, rows),
    );
    crate::generated::markdown(&text)
}

/// A paragraph naming each feature that was built but whose start-up gave no row (its server
/// did not start in the feature's binary), with its build and size, or nothing.
fn unstarted(builds: &Builds, rows: &[Row]) -> String {
    let missing: Vec<String> = builds
        .features
        .iter()
        .filter(|f| f.feature != "go" && !rows.iter().any(|r| r.framework == f.feature))
        .map(|f| {
            format!(
                "{} (built in {:.0} s, {} stripped beyond the floors)",
                f.feature,
                f.build_s,
                crate::units::fmt_bytes(f.bytes.saturating_sub(builds.floors.bytes) as f64)
            )
        })
        .collect();
    if missing.is_empty() {
        return String::new();
    }
    format!(
        "Built, but with no start-up and so no row: {}. Its start-up run served nothing in the \
         feature's binary; `scripts/footprint.sh`'s output says why.\n\n",
        missing.join(", ")
    )
}

/// The chart: build time, binary size and start-up, one bar per framework, least first.
pub(crate) fn chart(rows: &[Row], path: &Path) -> anyhow::Result<()> {
    use crate::chart::bars::{Bar, Panel};
    let framework_rows = || rows.iter().filter(|r| r.to_raw.is_some());
    let panels = [
        Panel {
            title: "Release build beyond the floors-only build".into(),
            axis: "seconds".into(),
            higher_is_better: false,
            format: |v| format!("{v:.0} s"),
            bars: framework_rows()
                .map(|r| Bar::new(&r.framework, r.build_s, None))
                .collect(),
        },
        Panel {
            title: "Stripped binary beyond the floors-only one".into(),
            axis: "MiB".into(),
            higher_is_better: false,
            format: |v| format!("{v:.1} MiB"),
            bars: framework_rows()
                .map(|r| Bar::new(&r.framework, r.bytes as f64 / (1 << 20) as f64, None))
                .collect(),
        },
        Panel {
            title: "exec to first 200 (median, 95 % interval)".into(),
            axis: "ms".into(),
            higher_is_better: false,
            format: |v| format!("{v:.1} ms"),
            bars: rows
                .iter()
                .map(|r| {
                    let t = r.startup.to_first_200;
                    Bar::new(&r.framework, t.point * 1e3, Some((t.lo * 1e3, t.hi * 1e3)))
                })
                .collect(),
        },
    ];
    crate::chart::bars::draw(path, &panels, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A start-up file of `(framework, seconds, ratio to raw)` as `framebench startup` writes it.
    fn startup_file(path: &Path, rows: &[(&str, f64, Option<f64>)]) {
        let at = |v: f64| Estimate {
            point: v,
            lo: v,
            hi: v,
        };
        let detail: Vec<Started> = rows
            .iter()
            .map(|&(name, s, ratio)| Started {
                framework: name.to_owned(),
                summary: Summary {
                    to_first_200: at(s),
                    rss: 1e7,
                    pss: 5e6,
                },
                to_raw: ratio.map(at),
            })
            .collect();
        let results = Results {
            detail: Some(serde_json::to_value(detail).unwrap()),
            ..Results::new(
                "startup",
                Vec::new(),
                crate::provenance::Provenance::here(crate::provenance::Window::since(
                    std::time::SystemTime::now(),
                )),
            )
        };
        results.write(path).unwrap();
    }

    #[test]
    fn rows_take_each_features_build_and_a_go_peers_own() {
        let dir = crate::env::target_dir().join("tmp/footprint-rows");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        startup_file(
            &dir.join("axum.json"),
            &[("raw", 0.005, None), ("axum", 0.010, Some(2.0))],
        );
        startup_file(
            &dir.join("go.json"),
            &[("raw", 0.005, None), ("go-nethttp", 0.020, Some(4.0))],
        );
        let builds: Builds = serde_json::from_value(serde_json::json!({
            "schema": "framebench-footprint-builds/1", "window": "w", "rounds": 20,
            "reference": { "crate": "regex-syntax 0.8.11", "build_s": 5.0 },
            "floors": { "build_s": 200.0, "bytes": 10_000_000 },
            "features": [
                { "feature": "axum", "build_s": 80.0, "bytes": 11_500_000, "startup": "axum.json" },
                { "feature": "go", "build_s": 70.0, "bytes": 10_000_100, "startup": "go.json",
                  "go_peers": [{ "framework": "go-nethttp", "build_s": 40.0, "bytes": 9_000_000 }] },
            ],
        }))
        .unwrap();
        let (rows, sources) = rows(&builds, &dir).unwrap();
        let names: Vec<&str> = rows.iter().map(|r| r.framework.as_str()).collect();
        assert_eq!(names, ["raw", "axum", "go-nethttp"], "raw once");
        assert_eq!(sources.len(), 2);
        let axum = &rows[1];
        assert_eq!(
            (axum.build_s, axum.bytes, axum.own_binary),
            (80.0, 1_500_000, false)
        );
        let go = &rows[2];
        assert_eq!(
            (go.build_s, go.bytes, go.own_binary),
            (40.0, 9_000_000, true)
        );
        let text = markdown(&builds, &rows, &sources);
        assert!(text.contains("| axum | axum | 80 s | 16 |"), "{text}");
        assert!(text.contains("| go-nethttp | go | 40 s ¹ |"), "{text}");
    }
}
