//! What one cell measured: throughput, latency percentiles, errors, requests per connection
//! with starved connections counted, and the server's and client's CPU and memory.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::client::SLICES;
use crate::interval::{median_interval, Estimate};
use crate::outcome::NotRun;

/// The rate of each whole slice of the recorded window (`slices` responses per slice of
/// `window` / [`SLICES`], `recorded` seconds of it elapsed), and the median of those rates with
/// its distribution-free 95 % interval ([`median_interval`]). This is the spread the load and
/// compare tables print beside a rate: how far the rate moved within the cell, which a single
/// figure for the whole window hides. It is not a rerun's interval: a slow spell longer than
/// the cell moves the whole cell. None below 6 whole slices (too few to bound a median).
pub(crate) fn rate_spread(slices: &[u64], window: f64, recorded: f64) -> Option<Estimate> {
    let slice = window / SLICES as f64;
    if slice <= 0.0 {
        return None;
    }
    // A slice counts only when the load ran through all of it (a run bounded by `--requests`
    // can end mid-window).
    let whole = ((recorded / slice + 1e-9).floor() as usize).min(slices.len());
    let rates: Vec<f64> = slices[..whole].iter().map(|&n| n as f64 / slice).collect();
    median_interval(&rates).filter(Estimate::bounded)
}

/// A connection is starved when it completed fewer than this fraction of the mean.
pub(crate) const STARVED_FRACTION: f64 = 0.1;

/// A side whose CPU use reached this fraction of the cores it could use was saturated.
pub(crate) const SATURATED: f64 = 0.9;

/// What a loopback rate is about. The figure describes the server only when the server kept its
/// cores busy; otherwise something else (the client, or round trips and wake-ups) set the pace,
/// and the table says so (docs/methodology/loopback.md, "Saturation").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Bound {
    /// The server used at least [`SATURATED`] of its cores: the rate is the server's.
    Server,
    /// The server did not, and the client used at least [`SATURATED`] of its own cores: the
    /// rate is the client's.
    Client,
    /// Neither side was saturated: latency (round trips, wake-ups) set the rate.
    Unsaturated,
    /// No reading of the server's CPU (a URL target) and a client below its limit.
    Unknown,
}

impl Bound {
    /// From CPU use in percent of one core, and the cores each side could use (for a server:
    /// its CPUs, or its threads if fewer). `None`: no reading.
    pub(crate) fn classify(
        server_pct: Option<f64>,
        server_cores: Option<usize>,
        client_pct: Option<f64>,
        client_cores: usize,
    ) -> Bound {
        let busy = |pct: f64, cores: usize| pct >= 100.0 * SATURATED * cores.max(1) as f64;
        let client = client_pct.is_some_and(|p| busy(p, client_cores));
        match (server_pct, server_cores) {
            (Some(p), Some(cores)) if busy(p, cores) => Bound::Server,
            _ if client => Bound::Client,
            (Some(_), Some(_)) => Bound::Unsaturated,
            _ => Bound::Unknown,
        }
    }

    /// The mark beside a rate: empty when the rate is the server's.
    pub(crate) fn mark(self) -> &'static str {
        match self {
            Bound::Server => "",
            Bound::Client => "client-bound",
            Bound::Unsaturated => "unsat",
            Bound::Unknown => "?",
        }
    }
}

/// How a cell ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "reason", rename_all = "snake_case")]
pub(crate) enum Status {
    /// Measured, every sampled response matched the oracle.
    Ok,
    /// Wrong answers (before or during load): not reported as fast.
    Failing(String),
    /// A churn load (`--requests-per-connection`) whose server kept connections open after
    /// answering a `Connection: close` request: the rate would not be one of connection churn.
    /// A failure of `load`; the quick compare's churn column reports it beside the
    /// conformance table instead of failing the run (docs/methodology/conformance.md, "Conformance").
    IgnoredClose(String),
    /// The server exited during the run.
    Crashed(String),
    /// The driver could not run the cell (server did not start, ...).
    Error(String),
    /// Stopped by Ctrl-C.
    Interrupted,
    /// Not run: an optional tool is missing (the Go peers without `go`), or the framework
    /// cannot serve the scenario through its own API or protocol; why. Not a failure. Written
    /// as the [`NotRun`] it holds (`{"kind": "skipped", "reason": …}`), as before it had one.
    #[serde(untagged)]
    NotRun(NotRun),
}

impl From<NotRun> for Status {
    fn from(n: NotRun) -> Status {
        Status::NotRun(n)
    }
}

/// A cell the driver could not run: [`Status::Error`] with the chain of causes.
impl From<anyhow::Error> for Status {
    fn from(e: anyhow::Error) -> Status {
        Status::Error(format!("{e:#}"))
    }
}

impl Status {
    /// Whether the cell failed: anything but `ok` and the two kinds of not run (`skip`, `–`),
    /// Ctrl-C included. `load` and `compare` exit 1 on one.
    pub(crate) fn is_failure(&self) -> bool {
        !matches!(self, Status::Ok | Status::NotRun(_))
    }

    /// Why a cell did not end `ok`, as its status carries it (empty for `ok`).
    pub(crate) fn reason(&self) -> &str {
        match self {
            Status::Failing(r)
            | Status::IgnoredClose(r)
            | Status::Crashed(r)
            | Status::Error(r) => r,
            Status::NotRun(n) => n.reason(),
            Status::Interrupted => "interrupted by Ctrl-C",
            Status::Ok => "",
        }
    }

    /// `ok`, `FAIL`, `OPEN`, `CRASH`, `ERROR`, `STOPPED`, `skip`, `–`.
    pub(crate) fn short(&self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Failing(_) => "FAIL",
            Status::IgnoredClose(_) => "OPEN",
            Status::Crashed(_) => "CRASH",
            Status::Error(_) => "ERROR",
            Status::Interrupted => "STOPPED",
            Status::NotRun(n) => n.mark(),
        }
    }
}

/// Latency summary in microseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Latency {
    /// Mean.
    pub(crate) mean_us: f64,
    /// 50th percentile.
    pub(crate) p50_us: f64,
    /// 90th percentile.
    pub(crate) p90_us: f64,
    /// 99th percentile.
    pub(crate) p99_us: f64,
    /// 99.9th percentile.
    pub(crate) p999_us: f64,
    /// Maximum.
    pub(crate) max_us: f64,
}

impl Latency {
    /// From a histogram in nanoseconds.
    pub(crate) fn from_hist(h: &Histogram<u64>) -> Self {
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
    pub(crate) fn points(&self) -> [(&'static str, f64); 5] {
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct PerConnection {
    /// Fewest.
    pub(crate) min: u64,
    /// Mean.
    pub(crate) mean: f64,
    /// Most.
    pub(crate) max: u64,
    /// Connections that completed none.
    pub(crate) zero: usize,
    /// Connections that completed none, or fewer than [`STARVED_FRACTION`] of the mean.
    pub(crate) starved: usize,
}

impl PerConnection {
    /// From per-connection counts.
    pub(crate) fn from_counts(counts: &[u64]) -> Self {
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

/// One framework × scenario × variant × connection count. `framebench merge` reads it back
/// (its `intervals` only from the interval log the result names).
fn one_stream() -> usize {
    1
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct CellResult {
    /// Framework name, or the target URL.
    pub(crate) target: String,
    /// Crate and version measured (`-` for a URL).
    pub(crate) version: String,
    /// Scenario name.
    pub(crate) scenario: String,
    /// `log=..,io=..` (empty for a URL target).
    pub(crate) variant: String,
    /// Server worker threads (0 for a URL target: unknown).
    pub(crate) server_threads: usize,
    /// Connections.
    pub(crate) connections: usize,
    /// Pipelining depth.
    pub(crate) pipeline: usize,
    /// What the client spoke; results from before h2c read as HTTP/1.1.
    #[serde(default)]
    pub(crate) protocol: crate::options::Protocol,
    /// Concurrent streams per connection (h2c; 1 for HTTP/1.1).
    #[serde(default = "one_stream")]
    pub(crate) streams: usize,
    /// Requested rate (open loop), if any.
    pub(crate) rate: Option<f64>,
    /// How it ended.
    pub(crate) status: Status,
    /// Seconds recorded.
    pub(crate) seconds: f64,
    /// Responses completed in the recorded window.
    pub(crate) requests: u64,
    /// Requests per second.
    pub(crate) rps: f64,
    /// Response bytes per second.
    pub(crate) bytes_per_sec: f64,
    /// Latency (from the intended send time with `rate`).
    pub(crate) latency: Latency,
    /// Non-2xx responses (the not_found scenario expects them all).
    pub(crate) non_2xx: u64,
    /// Socket errors.
    pub(crate) socket_errors: u64,
    /// Timeouts.
    pub(crate) timeouts: u64,
    /// First socket error seen.
    pub(crate) first_error: Option<String>,
    /// Connections opened in the recorded window: one per `requests_per_connection` requests
    /// under churn, the initial ones otherwise.
    pub(crate) connects: u64,
    /// Their mean connect time in µs (connect to writable), apart from the request latency.
    pub(crate) connect_us_mean: Option<f64>,
    /// Responses checked against the oracle during the load.
    pub(crate) sampled: u64,
    /// Requests per connection.
    pub(crate) per_connection: PerConnection,
    /// Server CPU, percent of one core (None for a URL target).
    pub(crate) server_cpu_pct: Option<f64>,
    /// Cores the server could use: its CPUs, or its threads if fewer (None for a URL target).
    pub(crate) server_cores: Option<usize>,
    /// Server CPU time per request in user mode, µs: the framework's own code over a socket.
    pub(crate) server_user_us_per_req: Option<f64>,
    /// Server CPU time per request in the kernel, µs: syscalls and the TCP stack.
    pub(crate) server_sys_us_per_req: Option<f64>,
    /// Whether the rate is the server's ([`Bound`]).
    pub(crate) bound: Bound,
    /// Server peak RSS in bytes.
    pub(crate) server_peak_rss: Option<u64>,
    /// Client CPU, percent of one core.
    pub(crate) client_cpu_pct: Option<f64>,
    /// Part of `client_cpu_pct` spent polling with nothing to read (the client's short spin
    /// before it sleeps): not counted as busy by [`Bound`].
    pub(crate) client_idle_polling_pct: Option<f64>,
    /// How steady the rate was: the median of the per-slice rates over the recorded window
    /// ([`rate_spread`]) with its 95 % interval, in requests per second. None when fewer than
    /// 6 whole slices were recorded.
    pub(crate) rps_spread: Option<Estimate>,
    /// Cores the client could use: its CPUs, or its threads if fewer.
    pub(crate) client_cores: usize,
    /// Responses read outside the recorded window (warm-up): served, not measured.
    #[serde(default)]
    pub(crate) unrecorded: u64,
    /// Requests of the oracle check before the load (the pipelining depth): served, not
    /// measured. A server's own count of a run is `requests + unrecorded + prechecked` when
    /// the run waits for every answer (`--requests`).
    #[serde(default)]
    pub(crate) prechecked: u64,
    /// The start of the recorded window, in seconds since the Unix epoch.
    #[serde(default)]
    pub(crate) recorded_from_unix: Option<f64>,
    /// The tag of this cell's histograms in the interval log (`load --hdr-log`).
    #[serde(default)]
    pub(crate) hdr_tag: Option<String>,
    /// With `--hdr-log`: the recorded latencies per interval of the window, in nanoseconds.
    #[serde(skip)]
    pub(crate) intervals: super::intervals::Intervals,
    /// The server's threads over the recorded window against its T and CPUs
    /// ([`super::threads`]); absent for a URL target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) thread_check: Option<super::threads::ThreadCheck>,
    /// With `--rounds N` above 1: every round's rate that measured, in the order they ran;
    /// the cell's other figures are its median round's ([`super::rounds::reduce`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) round_rps: Vec<f64>,
    /// Over TLS: the TLS handshakes the client completed in the recorded window, and how many
    /// of them resumed a session; absent over TCP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tls: Option<Handshakes>,
    /// Under WebSocket: the upgrades answered `101` in the recorded window (a churning load's
    /// handshakes); absent under HTTP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) upgrades: Option<u64>,
}

/// A TLS cell's handshakes in its recorded window, as the client saw them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Handshakes {
    /// Completed.
    pub(crate) done: u64,
    /// Of them, resumed (TLS 1.3 tickets or TLS 1.2 sessions; rustls's `handshake_kind`).
    pub(crate) resumed: u64,
    /// Whether the client offered to resume (`--tls-resumption`).
    pub(crate) resumption: crate::transport::tls::Resumption,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_keeps_the_results_files_form() {
        let cases = [
            (Status::Ok, r#"{"kind":"ok"}"#),
            (
                Status::Failing("wrong body".into()),
                r#"{"kind":"failing","reason":"wrong body"}"#,
            ),
            (
                NotRun::Skipped("install go".into()).into(),
                r#"{"kind":"skipped","reason":"install go"}"#,
            ),
            (
                NotRun::Unsupported("no h2c".into()).into(),
                r#"{"kind":"unsupported","reason":"no h2c"}"#,
            ),
        ];
        for (status, json) in cases {
            assert_eq!(serde_json::to_string(&status).unwrap(), json);
            assert_eq!(serde_json::from_str::<Status>(json).unwrap(), status);
        }
        let unsupported = Status::from(NotRun::Unsupported("no h2c".into()));
        assert_eq!((unsupported.short(), unsupported.reason()), ("–", "no h2c"));
        assert!(!unsupported.is_failure());
    }

    #[test]
    fn rate_spread_takes_whole_slices_only() {
        // 20 slices of a 2 s window, 100 ms each: 1,000 responses each is 10 k req/s.
        let steady = [1000u64; SLICES];
        let e = rate_spread(&steady, 2.0, 2.0).expect("20 slices bound a median");
        assert_eq!((e.lo, e.point, e.hi), (10_000.0, 10_000.0, 10_000.0));
        // Half the window recorded: the ten empty slices after it are not rates.
        let mut half = [0u64; SLICES];
        half[..10].fill(1000);
        let e = rate_spread(&half, 2.0, 1.0).expect("10 slices");
        assert_eq!(e.point, 10_000.0);
        // A rate that moves gives an interval around its median.
        let moving: Vec<u64> = (0..SLICES as u64).map(|i| 900 + 10 * i).collect();
        let e = rate_spread(&moving, 2.0, 2.0).expect("20 slices");
        assert!(e.lo < e.point && e.point < e.hi, "{e:?}");
        // Five slices cannot bound a median.
        assert_eq!(rate_spread(&steady, 2.0, 0.5), None);
    }

    #[test]
    fn starvation_counts_zero_and_far_below_mean() {
        let p = PerConnection::from_counts(&[1000, 1000, 50, 0]);
        assert_eq!((p.zero, p.starved, p.min, p.max), (1, 2, 0, 1000));
        let even = PerConnection::from_counts(&[10, 11, 9]);
        assert_eq!(even.starved, 0);
    }

    #[test]
    fn bound_names_the_saturated_side() {
        use Bound::*;
        let c = Bound::classify;
        // One server core: 90 % is the line.
        assert_eq!(c(Some(95.0), Some(1), Some(99.0), 1), Server);
        assert_eq!(c(Some(89.0), Some(1), Some(99.0), 1), Client);
        assert_eq!(c(Some(89.0), Some(1), Some(60.0), 1), Unsaturated);
        // Two server cores: 150 % of one core is 75 % of them.
        assert_eq!(c(Some(150.0), Some(2), Some(50.0), 1), Unsaturated);
        assert_eq!(c(Some(185.0), Some(2), Some(50.0), 1), Server);
        // Two client cores at 120 %: not at their limit.
        assert_eq!(c(Some(50.0), Some(1), Some(120.0), 2), Unsaturated);
        // A URL target has no server reading.
        assert_eq!(c(None, None, Some(99.0), 1), Client);
        assert_eq!(c(None, None, Some(40.0), 1), Unknown);
        assert_eq!(c(None, None, None, 1), Unknown);
        assert_eq!(Server.mark(), "");
        assert_eq!(Unsaturated.mark(), "unsat");
    }
}
