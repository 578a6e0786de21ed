//! What one cell measured: throughput, latency percentiles, errors, requests per connection
//! with starved connections counted, and the server's and client's CPU and memory.

use hdrhistogram::Histogram;
use serde::Serialize;

use super::client::ThreadResult;

/// A connection is starved when it completed fewer than this fraction of the mean.
pub const STARVED_FRACTION: f64 = 0.1;

/// How a cell ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", content = "reason", rename_all = "snake_case")]
pub enum Status {
    /// Measured, every sampled response matched the oracle.
    Ok,
    /// Wrong answers (before or during load): not reported as fast.
    Failing(String),
    /// The server exited during the run.
    Crashed(String),
    /// The driver could not run the cell (server did not start, ...).
    Error(String),
    /// Stopped by Ctrl-C.
    Interrupted,
    /// Not run: an optional tool is missing (the Go peers without `go`); why. Not a failure.
    Skipped(String),
}

impl Status {
    /// `ok`, `FAIL`, `CRASH`, `ERROR`, `STOPPED`.
    pub fn short(&self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Failing(_) => "FAIL",
            Status::Crashed(_) => "CRASH",
            Status::Error(_) => "ERROR",
            Status::Interrupted => "STOPPED",
            Status::Skipped(_) => "skip",
        }
    }
}

/// Latency summary in microseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Latency {
    /// Mean.
    pub mean_us: f64,
    /// 50th percentile.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Maximum.
    pub max_us: f64,
}

impl Latency {
    /// From a histogram in nanoseconds.
    pub fn from_hist(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Latency::default();
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        Latency {
            mean_us: h.mean() / 1000.0,
            p50_us: us(h.value_at_quantile(0.5)),
            p90_us: us(h.value_at_quantile(0.9)),
            p99_us: us(h.value_at_quantile(0.99)),
            p999_us: us(h.value_at_quantile(0.999)),
            max_us: us(h.max()),
        }
    }

    /// The percentiles the plots draw, with their labels.
    pub fn points(&self) -> [(&'static str, f64); 5] {
        [
            ("p50", self.p50_us),
            ("p90", self.p90_us),
            ("p99", self.p99_us),
            ("p99.9", self.p999_us),
            ("max", self.max_us),
        ]
    }
}

/// Requests completed per connection in the recorded window.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PerConnection {
    /// Fewest.
    pub min: u64,
    /// Mean.
    pub mean: f64,
    /// Most.
    pub max: u64,
    /// Connections that completed none.
    pub zero: usize,
    /// Connections that completed none, or fewer than [`STARVED_FRACTION`] of the mean.
    pub starved: usize,
}

impl PerConnection {
    /// From per-connection counts.
    pub fn from_counts(counts: &[u64]) -> Self {
        if counts.is_empty() {
            return PerConnection::default();
        }
        let mean = counts.iter().sum::<u64>() as f64 / counts.len() as f64;
        PerConnection {
            min: counts.iter().copied().min().unwrap_or(0),
            mean,
            max: counts.iter().copied().max().unwrap_or(0),
            zero: counts.iter().filter(|&&c| c == 0).count(),
            starved: counts
                .iter()
                .filter(|&&c| c == 0 || (c as f64) < STARVED_FRACTION * mean)
                .count(),
        }
    }
}

/// One framework × scenario × variant × connection count.
#[derive(Debug, Clone, Serialize)]
pub struct CellResult {
    /// Framework name, or the target URL.
    pub target: String,
    /// Crate and version measured (`-` for a URL).
    pub version: String,
    /// Scenario name.
    pub scenario: String,
    /// `log=..,io=..` (empty for a URL target).
    pub variant: String,
    /// Server worker threads (0 for a URL target: unknown).
    pub server_threads: usize,
    /// Connections.
    pub connections: usize,
    /// Pipelining depth.
    pub pipeline: usize,
    /// Requested rate (open loop), if any.
    pub rate: Option<f64>,
    /// How it ended.
    pub status: Status,
    /// Seconds recorded.
    pub seconds: f64,
    /// Responses completed in the recorded window.
    pub requests: u64,
    /// Requests per second.
    pub rps: f64,
    /// Response bytes per second.
    pub bytes_per_sec: f64,
    /// Latency (from the intended send time with `rate`).
    pub latency: Latency,
    /// Non-2xx responses (the not_found scenario expects them all).
    pub non_2xx: u64,
    /// Socket errors.
    pub socket_errors: u64,
    /// Timeouts.
    pub timeouts: u64,
    /// First socket error seen.
    pub first_error: Option<String>,
    /// Responses checked against the oracle during the load.
    pub sampled: u64,
    /// Requests per connection.
    pub per_connection: PerConnection,
    /// Server CPU, percent of one core (None for a URL target).
    pub server_cpu_pct: Option<f64>,
    /// Server peak RSS in bytes.
    pub server_peak_rss: Option<u64>,
    /// Client CPU, percent of one core.
    pub client_cpu_pct: Option<f64>,
}

/// Merges the threads' results into the counters of a cell.
pub struct Merged {
    /// All latencies.
    pub hist: Histogram<u64>,
    /// Per connection, all threads.
    pub per_conn: Vec<u64>,
    /// Sums.
    pub bytes: u64,
    /// Sums.
    pub non_2xx: u64,
    /// Sums.
    pub socket_errors: u64,
    /// Sums.
    pub timeouts: u64,
    /// Sums.
    pub mismatches: u64,
    /// Sums.
    pub sampled: u64,
    /// First one found.
    pub first_mismatch: Option<String>,
    /// First one found.
    pub first_error: Option<String>,
}

impl Merged {
    /// Adds up per-thread results.
    pub fn from_threads(results: Vec<ThreadResult>) -> Self {
        let mut m = Merged {
            hist: Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("bounds"),
            per_conn: Vec::new(),
            bytes: 0,
            non_2xx: 0,
            socket_errors: 0,
            timeouts: 0,
            mismatches: 0,
            sampled: 0,
            first_mismatch: None,
            first_error: None,
        };
        for r in results {
            let _ = m.hist.add(&r.hist);
            m.per_conn.extend(r.per_conn);
            m.bytes += r.bytes;
            m.non_2xx += r.non_2xx;
            m.socket_errors += r.socket_errors;
            m.timeouts += r.timeouts;
            m.mismatches += r.mismatches;
            m.sampled += r.sampled;
            m.first_mismatch = m.first_mismatch.or(r.first_mismatch);
            m.first_error = m.first_error.or(r.first_error);
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starvation_counts_zero_and_far_below_mean() {
        let p = PerConnection::from_counts(&[1000, 1000, 50, 0]);
        assert_eq!((p.zero, p.starved, p.min, p.max), (1, 2, 0, 1000));
        let even = PerConnection::from_counts(&[10, 11, 9]);
        assert_eq!(even.starved, 0);
    }
}
