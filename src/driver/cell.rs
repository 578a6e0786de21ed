//! A cell's figures: the empty cell a load starts from (its names, environment and
//! parameters) and the figures and status a finished load fills in.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::stats::{self, rate_spread, Bound, CellResult, Latency, PerConnection, Status};
use super::{intervals, threads, LoadParams, Run, Target};
use crate::interrupt::interrupted;
use crate::options::Transport;
use crate::oracle::Scenario;

impl CellResult {
    /// For tests of what reads cells: an empty cell of `scenario` at `connections`, loaded from
    /// a URL with [`LoadParams::for_tests`], in the given `status` (the figures left to the
    /// test).
    #[cfg(test)]
    pub(crate) fn of_url(scenario: &str, connections: usize, status: Status) -> CellResult {
        let target = Target::Url("127.0.0.1:9".parse().unwrap());
        let scenario = crate::oracle::loopback_scenario(scenario).unwrap();
        let mut c = CellResult::empty(&target, scenario, connections, &LoadParams::for_tests());
        c.status = status;
        c
    }

    /// A cell that has not run yet: its names, environment and parameters, no figures.
    pub(crate) fn empty(
        target: &Target,
        scenario: &Scenario,
        connections: usize,
        params: &LoadParams,
    ) -> CellResult {
        let (version, mut variant, threads) = match target {
            Target::Framework(e, o) => {
                (format!("{} {}", e.krate, e.version()), o.label(), o.threads)
            }
            Target::Url(_) => ("-".to_owned(), String::new(), 0),
        };
        // A cell over streams names its protocol and streams in its variant, so that its row,
        // its figure in a results file and its interval-log tag are its own for each M.
        if params.protocol.multiplexed() {
            if !variant.contains("protocol=") {
                let sep = if variant.is_empty() { "" } else { "," };
                variant = format!("{variant}{sep}protocol={}", params.protocol);
            }
            variant = format!("{variant},streams={}", params.streams);
        }
        let server_cores = match target {
            Target::Framework(..) => Some(params.pinning.server_cores(threads)),
            Target::Url(_) => None,
        };
        CellResult {
            target: target.name(),
            version,
            scenario: scenario.name.to_owned(),
            variant,
            server_threads: threads,
            connections,
            pipeline: params.pipeline,
            protocol: params.protocol,
            streams: params.streams,
            rate: params.rate,
            status: Status::Ok,
            seconds: 0.0,
            requests: 0,
            rps: 0.0,
            bytes_per_sec: 0.0,
            latency: Latency::default(),
            non_2xx: 0,
            socket_errors: 0,
            timeouts: 0,
            first_error: None,
            connects: 0,
            connect_us_mean: None,
            sampled: 0,
            per_connection: PerConnection::default(),
            server_cpu_pct: None,
            server_cores,
            server_user_us_per_req: None,
            server_sys_us_per_req: None,
            bound: Bound::Unknown,
            server_peak_rss: None,
            client_cpu_pct: None,
            client_idle_polling_pct: None,
            rps_spread: None,
            client_cores: params.pinning.client_cores(),
            unrecorded: 0,
            prechecked: 0,
            recorded_from_unix: None,
            hdr_tag: None,
            intervals: intervals::Intervals::default(),
            thread_check: None,
            round_rps: Vec::new(),
            tls: None,
            upgrades: None,
        }
    }

    /// Fills in the figures of a load, and its status.
    pub(super) fn record(&mut self, run: Run, params: &LoadParams) {
        let m = run.merged;
        let seconds = if params.requests.is_some() {
            run.recorded
        } else {
            run.recorded.min(params.duration.as_secs_f64())
        };
        self.seconds = seconds;
        self.requests = m.hist.len();
        self.rps = self.requests as f64 / seconds.max(1e-9);
        self.bytes_per_sec = m.bytes as f64 / seconds.max(1e-9);
        self.latency = Latency::from_hist(&m.hist);
        self.rps_spread = rate_spread(&m.slices, params.duration.as_secs_f64(), seconds);
        self.non_2xx = m.non_2xx;
        self.socket_errors = m.socket_errors;
        self.timeouts = m.timeouts;
        self.sampled = m.sampled;
        self.per_connection = PerConnection::from_counts(&m.per_conn);
        self.connects = m.connects;
        self.tls = (params.transport == Transport::Tls).then_some(stats::Handshakes {
            done: m.handshakes,
            resumed: m.resumed,
            resumption: params.resumption,
        });
        self.upgrades = params.protocol.upgrade_counted().then_some(m.upgrades);
        self.unrecorded = m.unrecorded;
        self.prechecked = params.pipeline.max(1) as u64;
        self.recorded_from_unix = m
            .recorded_from
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_secs_f64());
        if !m.intervals.is_empty() {
            self.hdr_tag = Some(hdr_tag(self));
            self.intervals = m.intervals;
        }
        self.connect_us_mean =
            (m.connects > 0).then(|| m.connect_ns as f64 / 1e3 / m.connects as f64);
        self.server_cpu_pct = run.server_cpu.map(|u| u.percent());
        self.client_cpu_pct = run.client_cpu.map(|u| u.percent());
        // CPU seconds per wall second over requests per second: CPU time per request. The
        // meter's window (from the end of the warm-up until the client says it is done) and
        // the recorded window differ by well under a millisecond.
        if let Some(u) = run.server_cpu.filter(|_| self.rps > 0.0) {
            let per_req = |cpu_seconds: f64| 1e6 * cpu_seconds / u.wall / self.rps;
            if let Some((user, system)) = u.times.split() {
                self.server_user_us_per_req = Some(per_req(user));
                self.server_sys_us_per_req = Some(per_req(system));
            }
        }
        // The client's polling with nothing to read is CPU it spent waiting, not working.
        let idle_pct = 100.0 * m.idle_polling.as_secs_f64() / seconds.max(1e-9);
        self.client_idle_polling_pct = Some(idle_pct);
        let client_busy = self.client_cpu_pct.map(|c| (c - idle_pct).max(0.0));
        self.bound = Bound::classify(
            self.server_cpu_pct,
            self.server_cores,
            client_busy,
            self.client_cores,
        );
        self.server_peak_rss = run.server_peak_rss;
        self.thread_check = run.server_threads.map(|used| {
            threads::ThreadCheck::of(used, self.server_threads, &params.pinning.server_cpus)
        });
        self.status = if let Some(c) = run.crashed {
            Status::Crashed(c)
        } else if m.ignored_close > 0 {
            Status::IgnoredClose(format!(
                "the server kept {} connections open for {:.1} s each after {} (a churn load \
                 cannot measure it)",
                m.ignored_close,
                params.timeout.min(Duration::from_millis(500)).as_secs_f64(),
                params.protocol.closing_exchange()
            ))
        } else if let Some(e) = &m.first_mismatch {
            Status::Failing(format!(
                "{} of {} sampled responses differ from the oracle: {e}",
                m.mismatches, m.sampled
            ))
        } else if let Some(early) = answered_early(&self.scenario, &self.latency) {
            Status::Failing(early)
        } else if interrupted().load(Ordering::Relaxed) {
            Status::Interrupted
        } else if self.requests == 0 {
            Status::Failing(unanswered(m.first_error.as_deref(), seconds))
        } else {
            Status::Ok
        };
        self.first_error = m.first_error;
    }
}

/// Why a cell that recorded no answer at all fails: its first error, where one came. A server
/// that answers nothing is not measured at 0 req/s (ntex 3.12.3's WebSocket cells read so, `ok`,
/// while the driver could not read its `101`).
fn unanswered(first_error: Option<&str>, seconds: f64) -> String {
    match first_error {
        Some(e) => format!("no answer in the {seconds:.1} s recorded; the first error: {e}"),
        None => format!("no answer in the {seconds:.1} s recorded, and no error before its end"),
    }
}

/// Why a `delay` cell fails when half its answers came sooner than the wait they asked for:
/// the check before load times one answer, which a busy machine can delay past the wait; the
/// cell's own latencies, every one measured from its send, cannot all be delayed so. `None`
/// for every other scenario, and for a server that waited.
fn answered_early(scenario: &str, latency: &Latency) -> Option<String> {
    let wait_us = crate::oracle::DELAY_MS as f64 * 1e3;
    (scenario == crate::oracle::DELAY_SCENARIO && latency.p50_us < wait_us).then(|| {
        format!(
            "half its answers came sooner than the {} ms each asked the server to wait (p50 \
             {:.0} µs): the server did not wait",
            crate::oracle::DELAY_MS,
            latency.p50_us
        )
    })
}

/// The tag of a cell's histograms in an interval log: target, variant, scenario and
/// connections, without the commas and spaces a tag cannot hold.
fn hdr_tag(c: &CellResult) -> String {
    let variant = if c.variant.is_empty() {
        String::new()
    } else {
        format!("{}/", c.variant)
    };
    format!("{}/{variant}{}/c{}", c.target, c.scenario, c.connections)
        .replace([',', ' ', '\r', '\n'], "+")
}

#[cfg(test)]
mod tests {
    /// A cell with no answer in its window fails, with its first error where one came.
    #[test]
    fn a_cell_with_no_answer_fails() {
        use super::unanswered;
        let e = unanswered(Some("no answer to the WebSocket upgrade"), 2.0);
        assert_eq!(
            e,
            "no answer in the 2.0 s recorded; the first error: no answer to the WebSocket upgrade"
        );
        assert!(unanswered(None, 1.0).contains("no error before its end"));
    }

    /// A `delay` cell whose median answer came before the wait fails; one that waited, and
    /// every other scenario, do not.
    #[test]
    fn a_delay_cell_answered_before_its_wait_fails() {
        use super::answered_early;
        use crate::driver::stats::Latency;
        let at = |p50_us: f64| Latency {
            p50_us,
            ..Latency::default()
        };
        let early = answered_early("delay", &at(5.0)).unwrap();
        assert!(early.contains("sooner than the 10 ms"), "{early}");
        assert_eq!(answered_early("delay", &at(11_140.0)), None);
        assert_eq!(answered_early("hello", &at(5.0)), None);
    }
}
