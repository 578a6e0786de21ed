//! What one client thread measured in the recorded window, and the sum of the threads'.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::driver::intervals::{latency_histogram, Intervals};

use super::SLICES;

/// What one thread measured in the recorded window.
pub(crate) struct ThreadResult {
    /// Latency in nanoseconds.
    pub(crate) hist: Histogram<u64>,
    /// Responses completed per connection, in connection order.
    pub(crate) per_conn: Vec<u64>,
    /// Response bytes received.
    pub(crate) bytes: u64,
    /// Responses whose status was not 2xx.
    pub(crate) non_2xx: u64,
    /// Connect, read and write errors, closes with requests in flight, bad framing.
    pub(crate) socket_errors: u64,
    /// Requests unanswered after the timeout.
    pub(crate) timeouts: u64,
    /// Sampled responses that differed from the oracle.
    pub(crate) mismatches: u64,
    /// Responses checked against the oracle.
    pub(crate) sampled: u64,
    /// The first difference found.
    pub(crate) first_mismatch: Option<String>,
    /// First socket error, for the report.
    pub(crate) first_error: Option<String>,
    /// Time spent in the recorded window polling without sleeping and finding nothing
    /// (`Spin`, in the event loop): CPU time the thread used while it had nothing to do, which the saturation
    /// mark must not count as the client being busy.
    pub(crate) idle_polling: Duration,
    /// Responses completed in each of [`SLICES`] equal slices of the recorded window: the
    /// rate's spread over the cell ([`super::stats::rate_spread`]).
    pub(crate) slices: Vec<u64>,
    /// Connections completed in the recorded window.
    pub(crate) connects: u64,
    /// Their connect times (from `connect` to writable), summed, in nanoseconds: kept apart
    /// from the request latencies, which start when a connected socket sends.
    pub(crate) connect_ns: u64,
    /// TLS handshakes completed in the recorded window, and how many of them resumed a
    /// session (rustls's `handshake_kind` on the client's side).
    pub(crate) handshakes: u64,
    pub(crate) resumed: u64,
    /// WebSocket upgrades answered `101` in the recorded window (a churning WebSocket load's
    /// handshakes).
    pub(crate) upgrades: u64,
    /// Connections the server kept open after answering `Connection: close` (for the request
    /// timeout or 0.5 s, whichever is shorter), warm-up included.
    pub(crate) ignored_close: u64,
    /// Responses read outside the recorded window (the warm-up's, and those of requests sent
    /// in it): the server served them too, so a server's own count of a run includes them.
    pub(crate) unrecorded: u64,
    /// With [`ClientSpec::hdr_interval`]: the recorded latencies again, one histogram per
    /// interval of the recorded window (the last holds whatever came after the window too).
    pub(crate) intervals: Intervals,
    /// The wall-clock time the recorded window started, for the interval log's timestamps.
    pub(crate) recorded_from: Option<std::time::SystemTime>,
}

impl ThreadResult {
    /// Nothing recorded yet, for `connections` connections.
    pub(super) fn empty(connections: usize) -> Self {
        ThreadResult {
            hist: latency_histogram(),
            per_conn: vec![0; connections],
            bytes: 0,
            non_2xx: 0,
            socket_errors: 0,
            timeouts: 0,
            mismatches: 0,
            sampled: 0,
            first_mismatch: None,
            first_error: None,
            idle_polling: Duration::ZERO,
            slices: vec![0; SLICES],
            connects: 0,
            connect_ns: 0,
            handshakes: 0,
            resumed: 0,
            upgrades: 0,
            ignored_close: 0,
            unrecorded: 0,
            intervals: Intervals::default(),
            recorded_from: None,
        }
    }

    /// Nothing recorded for `connections` connections, and one error: a run that could not
    /// start.
    pub(super) fn failed(connections: usize, what: String) -> Self {
        let mut r = ThreadResult::empty(connections);
        r.error(what);
        r
    }

    /// Counts a socket error, keeping the first.
    pub(super) fn error(&mut self, what: String) {
        self.socket_errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(what);
        }
    }

    /// Counts one response checked against the oracle, and its difference if it has one,
    /// keeping the first.
    pub(super) fn sampled(&mut self, verdict: anyhow::Result<()>) {
        self.sampled += 1;
        if let Err(e) = verdict {
            self.mismatches += 1;
            if self.first_mismatch.is_none() {
                self.first_mismatch = Some(format!("{e:#}"));
            }
        }
    }

    /// Adds up the threads' results into one: the cell's counters, with every thread's
    /// connections in order and the first mismatch and error found.
    pub(crate) fn merge(results: Vec<ThreadResult>) -> Self {
        let mut m = ThreadResult::empty(0);
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
            m.idle_polling += r.idle_polling;
            m.connects += r.connects;
            m.connect_ns += r.connect_ns;
            m.handshakes += r.handshakes;
            m.resumed += r.resumed;
            m.upgrades += r.upgrades;
            m.ignored_close += r.ignored_close;
            m.unrecorded += r.unrecorded;
            m.recorded_from = m.recorded_from.or(r.recorded_from);
            for (sum, n) in m.slices.iter_mut().zip(&r.slices) {
                *sum += n;
            }
            m.intervals.add(r.intervals);
        }
        m
    }
}

/// The wall-clock time of `at`.
pub(super) fn wall_time(at: Instant) -> std::time::SystemTime {
    let (wall, now) = (std::time::SystemTime::now(), Instant::now());
    if at >= now {
        wall + (at - now)
    } else {
        wall - (now - at)
    }
}
