//! gungraun's `summary.json` files read into typed structs: the callgrind total of
//! instructions (`Ir`) of each benchmark of `benches/callgrind.rs` and
//! `benches/callgrind_loopback.rs`. Only the fields framebench reads are declared; the version is
//! checked against the one gungraun 0.20.0 writes (`summary.v7`, gungraun-runner's
//! `summary/model.rs`), so a file of another version, or one without these fields, is refused
//! with its path instead of read by guess.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context as _};
use serde::Deserialize;

use super::{files_named, Count};
use crate::error::BadInput;
use crate::frameworks::REGISTRY;

/// The summary format this reader knows: gungraun 0.20.0's (Cargo.lock pins it).
const SCHEMA_VERSION: &str = "7";

/// One benchmark's `summary.json`, as far as framebench reads it (its `version` is checked
/// before, in [`parse`]).
#[derive(Debug, Deserialize)]
struct Summary {
    /// `callgrind::in_process::axum` or `callgrind_loopback::loopback::hello`.
    module_path: String,
    /// The benchmark's id (`hello_off`, `axum_n1000`).
    id: Option<String>,
    /// One per tool that ran.
    profiles: Vec<Profile>,
}

#[derive(Debug, Deserialize)]
struct Profile {
    /// `Callgrind`, `DHAT`…
    tool: String,
    data: ProfileData,
}

#[derive(Debug, Deserialize)]
struct ProfileData {
    /// The sum over the run's parts.
    total: Total,
}

#[derive(Debug, Deserialize)]
struct Total {
    /// By event (`Ir`, `Dr`…); empty for a tool without metrics.
    metrics: BTreeMap<String, MetricResult>,
}

#[derive(Debug, Deserialize)]
struct MetricResult {
    /// The new run's value, the old (baseline) run's, or both.
    values: Values,
}

#[derive(Debug, Deserialize)]
struct Values {
    new: Option<Metric>,
}

/// gungraun's `Metric`: an integer, or a float (written as a string where it is not finite).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Metric {
    Int(u64),
    Float(f64),
    Text(String),
}

impl Metric {
    fn value(&self) -> Option<f64> {
        match self {
            Metric::Int(n) => Some(*n as f64),
            Metric::Float(f) => Some(*f),
            Metric::Text(t) => t.parse().ok(),
        }
    }
}

/// Every callgrind count under `gungraun_dir`, loopback counts turned into per-request ones.
pub(crate) fn read(gungraun_dir: &Path) -> anyhow::Result<Vec<Count>> {
    let mut files = Vec::new();
    files_named(gungraun_dir, "summary.json", &mut files);
    let mut out = Vec::new();
    for f in files {
        let text =
            std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
        let count = parse(&text)
            .map_err(|e| BadInput(format!("{e:#}")))
            .with_context(|| format!("{}", f.display()))?;
        out.push(count);
    }
    Ok(loopback_per_request(out))
}

/// One `summary.json`: its count, or `None` for a benchmark that is not one of framebench's or
/// ran no callgrind.
fn parse(text: &str) -> anyhow::Result<Option<Count>> {
    // Parsed once; the version first, so that a file of another version is named as such
    // instead of failing on whichever field its format moved.
    let value: serde_json::Value = serde_json::from_str(text).context("not JSON")?;
    let version = value.get("version").and_then(serde_json::Value::as_str);
    if version != Some(SCHEMA_VERSION) {
        bail!(
            "a gungraun summary of version {}, not {SCHEMA_VERSION} (gungraun 0.20.0's): rerun \
             the benches with the pinned gungraun-runner",
            version.unwrap_or("(none)")
        );
    }
    let summary = Summary::deserialize(value)
        .map_err(|e| anyhow::anyhow!("not a gungraun summary of version {SCHEMA_VERSION}: {e}"))?;
    count(&summary)
}

/// The callgrind `Ir` total of `summary`, named as the two callgrind benches name their cells.
fn count(summary: &Summary) -> anyhow::Result<Option<Count>> {
    let module = summary.module_path.as_str();
    let id = summary.id.as_deref().unwrap_or_default();
    let function = module.rsplit("::").next().unwrap_or_default();
    let Some(profile) = summary.profiles.iter().find(|p| p.tool == "Callgrind") else {
        return Ok(None);
    };
    let Some(ir) = profile.data.total.metrics.get("Ir") else {
        bail!("its Callgrind total has no `Ir`");
    };
    let Some(total) = ir.values.new.as_ref().and_then(Metric::value) else {
        bail!("its `Ir` has no value for the new run");
    };
    if module.starts_with("callgrind_loopback::") {
        // `<framework>_n<N>`; the function `hello__tls` is the column `hello/tls`.
        let Some((fw, n)) = id.rsplit_once("_n") else {
            return Ok(None);
        };
        let column = function.replacen("__", "/", 1);
        return Ok(Some(Count {
            key: format!("loopback-raw/{column}/{n}"),
            framework: registry_name(REGISTRY.iter().map(|e| e.name), fw).to_owned(),
            instructions: total,
        }));
    }
    if module.starts_with("callgrind::") {
        // `callgrind::in_process::<module>`, id `<scenario>_<logging>`.
        let Some((scenario, logging)) = id.rsplit_once('_') else {
            return Ok(None);
        };
        let Some(entry) = REGISTRY
            .iter()
            .find(|e| e.in_process && e.module == function)
        else {
            return Ok(None);
        };
        return Ok(Some(Count {
            key: format!("in_process/{scenario}/{logging}"),
            framework: entry.name.to_owned(),
            instructions: total,
        }));
    }
    Ok(None)
}

/// Turns the two loopback runs of each framework into instructions per request.
fn loopback_per_request(counts: Vec<Option<Count>>) -> Vec<Count> {
    let counts: Vec<Count> = counts.into_iter().flatten().collect();
    let mut runs: BTreeMap<(String, String), Vec<(u64, f64)>> = BTreeMap::new();
    let mut out = Vec::new();
    for c in counts {
        match c.key.strip_prefix("loopback-raw/") {
            Some(rest) => {
                if let Some((scenario, n)) = rest.rsplit_once('/') {
                    if let Ok(n) = n.parse::<u64>() {
                        runs.entry((c.framework.clone(), scenario.to_owned()))
                            .or_default()
                            .push((n, c.instructions));
                    }
                }
            }
            None => out.push(c),
        }
    }
    for ((framework, scenario), mut v) in runs {
        v.sort_by_key(|(n, _)| *n);
        if let (Some(&(n1, i1)), Some(&(n2, i2))) = (v.first(), v.last()) {
            if n2 > n1 {
                out.push(Count {
                    key: format!("loopback/{scenario}"),
                    framework,
                    instructions: (i2 - i1) / (n2 - n1) as f64,
                });
            }
        }
    }
    out
}

/// The name among `names` that a benchmark id spells `fw` (gungraun's ids are Rust
/// identifiers: `may-minihttp` is `may_minihttp`), else `fw` as it is.
fn registry_name<'a>(mut names: impl Iterator<Item = &'a str>, fw: &'a str) -> &'a str {
    names
        .find(|name| name.replace('-', "_") == fw)
        .unwrap_or(fw)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A summary as gungraun-runner 0.20.0 writes it (its own test's shape), with `tool`'s Ir.
    fn summary(version: &str, module: &str, id: &str, ir: &str) -> String {
        format!(
            r#"{{"baselines": [null, null], "benchmark_exe": "b", "benchmark_file": "benches/b.rs",
            "description": null, "duration_ns": 1, "function_name": "f", "group": "g",
            "id": "{id}", "kind": "LibraryBenchmark", "module_path": "{module}",
            "output_dir": "target/gungraun", "package_dir": ".", "project_root": "/p",
            "started_at": "2026-09-21T14:03:22Z", "version": "{version}",
            "profiles": [{{"tool": "Callgrind", "delay_ns": null, "duration_ns": 1,
              "process_ns": 1, "setup_ns": null, "started_at": "2026-09-21T14:03:22Z",
              "teardown_ns": null, "flamegraphs": [],
              "data": {{"parts": [], "total": {{"regressions": [],
                "metrics": {{"Ir": {{"values": {ir}}}, "Dr": {{"values": {{"new": 5}}}}}}}}}}}}]}}"#
        )
    }

    #[test]
    fn reads_the_ir_total_of_both_benches() {
        let in_process = parse(&summary(
            "7",
            "callgrind::in_process::null",
            "hello_off",
            r#"{"new": 12345, "old": 12000}"#,
        ))
        .unwrap()
        .unwrap();
        assert_eq!(
            (
                in_process.key.as_str(),
                in_process.framework.as_str(),
                in_process.instructions
            ),
            ("in_process/hello/off", "null", 12345.0)
        );
        let loopback = parse(&summary(
            "7",
            "callgrind_loopback::loopback::hello",
            "raw_n1000",
            r#"{"new": 99}"#,
        ))
        .unwrap()
        .unwrap();
        assert_eq!(loopback.framework, "raw");
        // The unit tests' registry holds the baselines only (src/frameworks/mod.rs): the
        // spelling of a dashed name is tested on a list of its own.
        let names = ["raw", "may-minihttp"];
        assert_eq!(
            registry_name(names.into_iter(), "may_minihttp"),
            "may-minihttp"
        );
        assert_eq!(registry_name(names.into_iter(), "other_fw"), "other_fw");
        assert_eq!(loopback.key, "loopback-raw/hello/1000");
        // Another crate's benchmark is not a count of framebench's.
        assert!(parse(&summary("7", "other::bench", "x_y", r#"{"new": 1}"#))
            .unwrap()
            .is_none());
    }

    #[test]
    fn a_tls_function_is_a_column_of_its_scenario_and_pairs_its_two_runs() {
        let run = |function: &str, id: &str, ir: u64| {
            parse(&summary(
                "7",
                &format!("callgrind_loopback::loopback::{function}"),
                id,
                &format!(r#"{{"new": {ir}}}"#),
            ))
            .unwrap()
        };
        let per = loopback_per_request(vec![
            run("hello", "raw_n20", 1_000),
            run("hello", "raw_n220", 21_000),
            run("hello__tls", "raw_n20", 5_000),
            run("hello__tls", "raw_n220", 65_000),
            run("hello__tls_connect", "raw_n4", 4_000_000),
            run("hello__tls_connect", "raw_n12", 12_000_000),
        ]);
        let got: Vec<(&str, f64)> = per
            .iter()
            .map(|c| (c.key.as_str(), c.instructions))
            .collect();
        assert_eq!(
            got,
            [
                ("loopback/hello", 100.0),
                ("loopback/hello/tls", 300.0),
                ("loopback/hello/tls_connect", 1_000_000.0)
            ]
        );
    }

    #[test]
    fn another_version_or_a_malformed_summary_is_refused() {
        let old = parse(&summary(
            "6",
            "callgrind::in_process::axum",
            "hello_off",
            r#"{"new": 1}"#,
        ))
        .unwrap_err();
        assert!(format!("{old:#}").contains("version 6, not 7"), "{old:#}");
        for bad in [
            "not json".to_owned(),
            r#"{"version": "7"}"#.to_owned(),
            summary(
                "7",
                "callgrind::in_process::axum",
                "hello_off",
                r#"{"old": 1}"#,
            ),
            summary(
                "7",
                "callgrind::in_process::axum",
                "hello_off",
                r#"{"new": []}"#,
            ),
        ] {
            assert!(parse(&bad).is_err(), "{bad}");
        }
    }
}
