//! The figures of a results file in Bencher Metric Format
//! (<https://bencher.dev/docs/reference/bencher-metric-format>), for `bencher run --adapter json`.

use std::path::Path;

use super::{write_json, Metric, Results};

/// The Bencher measure a metric is tracked as (a slug of Bencher's: `latency` in ns and
/// `throughput` in operations per second are built in; the others are created on first use).
fn bmf_measure(m: Metric) -> &'static str {
    match m {
        Metric::Instructions => "instructions",
        Metric::Allocs => "allocations",
        Metric::Bytes => "bytes-allocated",
        Metric::Time => "latency",
        Metric::Rps => "throughput",
    }
}

impl Results {
    /// The figures in Bencher Metric Format: one benchmark per cell
    /// (`bench/framework/scenario/variant`), one measure per metric, `lower_value` and
    /// `upper_value` from a timed figure's interval
    /// (<https://bencher.dev/docs/reference/bencher-metric-format>).
    pub(crate) fn bmf(&self) -> serde_json::Value {
        let mut benchmarks = serde_json::Map::new();
        for f in &self.figures {
            let name = [f.bench.as_str(), &f.framework, &f.scenario, &f.variant]
                .into_iter()
                .filter(|p| !p.is_empty())
                .collect::<Vec<_>>()
                .join("/");
            let mut metric = serde_json::Map::new();
            metric.insert("value".into(), f.value.into());
            if let (Some(lo), Some(hi)) = (f.lo, f.hi) {
                metric.insert("lower_value".into(), lo.into());
                metric.insert("upper_value".into(), hi.into());
            }
            let measures = benchmarks
                .entry(name)
                .or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
            if let Some(m) = measures.as_object_mut() {
                m.insert(bmf_measure(f.metric).into(), metric.into());
            }
        }
        serde_json::Value::Object(benchmarks)
    }

    /// Writes [`Results::bmf`] to `path`.
    pub(crate) fn write_bmf(&self, path: &Path) -> anyhow::Result<()> {
        write_json(path, &self.bmf())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::test_figures::{count, timed};
    use crate::results::Figure;

    /// Bencher's published JSON schema for BMF (https://bencher.dev/bmf.json, draft-07), checked
    /// here by the rules it uses: an object of non-empty keys, each an object of non-empty keys,
    /// each an object whose `value` is required and `value`, `lower_value` and `upper_value` are
    /// numbers; plus the documented limits (measure slug 64 characters, benchmark name 1,024).
    fn check_bmf(v: &serde_json::Value) -> Result<usize, String> {
        let benchmarks = v.as_object().ok_or("top level is not an object")?;
        let mut metrics = 0;
        for (name, measures) in benchmarks {
            if name.is_empty() || name.chars().count() > 1024 {
                return Err(format!("benchmark name '{name}'"));
            }
            let measures = measures
                .as_object()
                .ok_or(format!("{name}: not an object"))?;
            for (slug, metric) in measures {
                if slug.is_empty() || slug.chars().count() > 64 {
                    return Err(format!("{name}: measure '{slug}'"));
                }
                let metric = metric
                    .as_object()
                    .ok_or(format!("{name}/{slug}: not an object"))?;
                if !metric.contains_key("value") {
                    return Err(format!("{name}/{slug}: no value"));
                }
                for key in ["value", "lower_value", "upper_value"] {
                    if metric.get(key).is_some_and(|x| !x.is_number()) {
                        return Err(format!("{name}/{slug}: {key} is not a number"));
                    }
                }
                metrics += 1;
            }
        }
        Ok(metrics)
    }

    #[test]
    fn bmf_follows_bencher_schema() {
        let mut r = Results::new(
            "report",
            vec![
                count("axum", Metric::Allocs, 12.0),
                count("axum", Metric::Bytes, 1096.0),
                timed("axum", 1700.0, 1680.0, 1720.0),
                Figure::count(
                    "callgrind/loopback",
                    "axum",
                    "hello",
                    "",
                    Metric::Instructions,
                    15782.0,
                ),
            ],
        );
        let bmf = r.bmf();
        assert_eq!(check_bmf(&bmf), Ok(4));
        assert_eq!(
            bmf["allocs/axum/hello/log=off"]["allocations"]["value"],
            12.0
        );
        assert_eq!(
            bmf["criterion/in_process/axum/hello/log=off"]["latency"]["lower_value"],
            1680.0
        );
        assert_eq!(
            bmf["callgrind/loopback/axum/hello"]["instructions"]["value"],
            15782.0
        );
        // The checker is not a formality: a metric without a value fails it.
        r.figures.clear();
        let mut broken = r.bmf();
        broken["x"] = serde_json::json!({"latency": {"lower_value": 1.0}});
        assert!(check_bmf(&broken).is_err());
    }
}
