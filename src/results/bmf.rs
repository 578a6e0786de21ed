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
        Metric::HeapPerConn => "heap-bytes-per-connection",
        Metric::RssPerConn => "rss-bytes-per-connection",
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

    /// Bencher's published JSON Schema of BMF (`https://bencher.dev/bmf.json`, draft-07),
    /// copied into tests/data with its source (tests/data/README.md).
    const BENCHER_SCHEMA: &str = include_str!("../../tests/data/bencher-bmf.schema.json");

    /// Validates `bmf` against [`BENCHER_SCHEMA`] with a JSON Schema validator (boon), returning
    /// the number of metrics it holds, or every error the validator found.
    fn check_bmf(bmf: &serde_json::Value) -> anyhow::Result<usize> {
        let schema: serde_json::Value = serde_json::from_str(BENCHER_SCHEMA).unwrap();
        let url = schema["$id"].as_str().unwrap().to_owned();
        let mut compiler = boon::Compiler::new();
        let mut schemas = boon::Schemas::new();
        compiler.add_resource(&url, schema).unwrap();
        let index = compiler.compile(&url, &mut schemas).unwrap();
        // The validator's error borrows the schemas: its text (every error, `{:#}`) is kept.
        schemas
            .validate(bmf, index)
            .map_err(|e| anyhow::anyhow!("{e:#}"))?;
        Ok(bmf.as_object().map_or(0, |b| {
            b.values()
                .filter_map(|m| m.as_object())
                .map(|m| m.len())
                .sum()
        }))
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
            crate::provenance::Provenance::here(crate::provenance::Window::since(
                std::time::SystemTime::now(),
            )),
        );
        let bmf = r.bmf();
        assert_eq!(check_bmf(&bmf).unwrap(), 4);
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
        // The validator is not a formality: a metric without a value, or with a value that
        // is not a number, breaks the schema.
        r.figures.clear();
        for metric in [
            serde_json::json!({"lower_value": 1.0}),
            serde_json::json!({"value": "1.0"}),
            serde_json::json!(1.0),
        ] {
            let mut broken = r.bmf();
            broken["x"] = serde_json::json!({ "latency": metric });
            let e = check_bmf(&broken).unwrap_err().to_string();
            assert!(e.contains("/x/latency"), "{e}");
        }
        assert!(check_bmf(&serde_json::json!([])).is_err());
    }
}
