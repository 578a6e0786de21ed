//! criterion's files read into typed structs: `new/benchmark.json` (which cell) and
//! `new/estimates.json` (its time) under `target/criterion`. criterion writes no version into
//! them, so the structs follow the version Cargo.lock pins ([`CRITERION`]: its `BenchmarkId` in
//! `report.rs` and `Estimates` in `estimate.rs`), and only the fields framebench reads are
//! declared. A file without them, or not JSON, is refused with its path and exit 2, instead of
//! read as an empty name or an endless interval.

use std::path::Path;
use std::time::SystemTime;

use anyhow::Context as _;
use serde::de::DeserializeOwned;
use serde::Deserialize;

use super::{files_named, Timing};
use crate::error::BadInput;
use crate::interval::Estimate;

/// The criterion whose files these structs describe (Cargo.lock pins it; a test checks).
const CRITERION: &str = "0.8.2";

/// `benchmark.json`: criterion's `BenchmarkId`.
#[derive(Debug, Deserialize)]
struct BenchmarkId {
    /// `in_process/hello`.
    group_id: String,
    /// `axum`; absent for a bench without a function.
    function_id: Option<String>,
    /// `log=off,io=memory`; absent for a bench without a parameter.
    value_str: Option<String>,
}

/// `estimates.json`: criterion's `Estimates`, of which framebench reads the typical one.
#[derive(Debug, Deserialize)]
struct Estimates {
    mean: CriterionEstimate,
    /// Present when criterion fitted a line through its linear sampling.
    slope: Option<CriterionEstimate>,
}

impl Estimates {
    /// The time per iteration criterion itself reports: the slope when present, else the mean
    /// (criterion's `Estimates::typical`).
    fn typical(&self) -> &CriterionEstimate {
        self.slope.as_ref().unwrap_or(&self.mean)
    }
}

/// criterion's `Estimate`, in ns.
#[derive(Debug, Deserialize)]
struct CriterionEstimate {
    point_estimate: f64,
    confidence_interval: ConfidenceInterval,
}

#[derive(Debug, Deserialize)]
struct ConfidenceInterval {
    lower_bound: f64,
    upper_bound: f64,
}

/// Every criterion result under `criterion_dir` (its `new/` runs, not the baselines), with the
/// newest modification time seen.
pub(crate) fn read(criterion_dir: &Path) -> anyhow::Result<(Vec<Timing>, Option<SystemTime>)> {
    let mut files = Vec::new();
    files_named(criterion_dir, "estimates.json", &mut files);
    let mut out = Vec::new();
    let mut newest = None;
    for est_path in files {
        let dir = est_path
            .parent()
            .context("estimates.json without a folder")?;
        if dir.file_name().is_none_or(|n| n != "new") {
            continue;
        }
        let id: BenchmarkId = read_file(&dir.join("benchmark.json"))?;
        let estimates: Estimates = read_file(&est_path)?;
        let typical = estimates.typical();
        if let Ok(m) = std::fs::metadata(&est_path).and_then(|m| m.modified()) {
            newest = newest.max(Some(m));
        }
        out.push(Timing {
            group: id.group_id,
            function: id.function_id.unwrap_or_default(),
            value: id.value_str.unwrap_or_default(),
            ns: Estimate {
                point: typical.point_estimate,
                lo: typical.confidence_interval.lower_bound,
                hi: typical.confidence_interval.upper_bound,
            },
            shard: 0,
        });
    }
    Ok((out, newest))
}

/// One of criterion's files as `T`; one that is not (not JSON, a field missing or of another
/// type) is bad input that names the file.
fn read_file<T: DeserializeOwned>(path: &Path) -> anyhow::Result<T> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    parse(&text).with_context(|| path.display().to_string())
}

fn parse<T: DeserializeOwned>(text: &str) -> anyhow::Result<T> {
    serde_json::from_str(text).map_err(|e| {
        BadInput(format!(
            "not a file of criterion {CRITERION} ({e}): rerun `cargo bench`"
        ))
        .into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An `estimates.json` of criterion 0.8.2, its `slope` given.
    fn estimates(slope: &str) -> String {
        let e = |p: f64| {
            format!(
                r#"{{"confidence_interval":{{"confidence_level":0.95,"lower_bound":{},"upper_bound":{}}},"point_estimate":{p},"standard_error":1.0}}"#,
                p - 2.0,
                p + 2.0
            )
        };
        format!(
            r#"{{"mean":{},"median":{},"median_abs_dev":{},"slope":{slope},"std_dev":{}}}"#,
            e(42.0),
            e(41.0),
            e(0.5),
            e(0.5)
        )
    }

    #[test]
    fn the_structs_follow_the_locked_criterion() {
        assert_eq!(
            crate::env::crate_version("criterion", "0."),
            Some(CRITERION)
        );
    }

    #[test]
    fn reads_the_slope_else_the_mean() {
        let mean: Estimates = parse(&estimates("null")).unwrap();
        assert_eq!(
            (
                mean.typical().point_estimate,
                mean.typical().confidence_interval.lower_bound
            ),
            (42.0, 40.0)
        );
        let slope = r#"{"confidence_interval":{"confidence_level":0.95,"lower_bound":9.0,"upper_bound":11.0},"point_estimate":10.0,"standard_error":0.5}"#;
        let fitted: Estimates = parse(&estimates(slope)).unwrap();
        assert_eq!(fitted.typical().point_estimate, 10.0);
        let id: BenchmarkId = parse(
            r#"{"group_id":"g","function_id":null,"value_str":"v","throughput":null,"full_id":"g/v","directory_name":"g/v","title":"g/v"}"#,
        )
        .unwrap();
        assert_eq!((id.function_id, id.value_str.as_deref()), (None, Some("v")));
    }

    #[test]
    fn a_malformed_or_foreign_file_is_bad_input() {
        for bad in [
            "not json",
            "{}",
            r#"{"mean":{"point_estimate":42.0}}"#,
            r#"{"mean":"42 ns"}"#,
        ] {
            let e = parse::<Estimates>(bad).unwrap_err();
            assert!(e.is::<BadInput>(), "{bad}: {e:#}");
            assert!(format!("{e}").contains("criterion 0.8.2"), "{e}");
        }
        assert!(parse::<BenchmarkId>(r#"{"function_id":"axum"}"#).is_err());
    }
}
