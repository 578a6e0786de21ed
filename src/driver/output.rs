//! The driver's outputs: a terminal table, Markdown tables shaped like the seed articles', and
//! JSON. Every one carries the environment: rustc, CPU, cores, kernel, pinning, threads and the
//! versions measured.

use crate::table::{Align, Table};
use crate::units::{kilo, mb, pct, per_req, us};
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::stats::{CellResult, Status};
use super::LoadParams;
use crate::env::Environment;

/// A run: its environment, its parameters and its cells.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Report {
    /// Where.
    pub(crate) environment: Environment,
    /// How.
    pub(crate) params: LoadParams,
    /// What.
    pub cells: Vec<CellResult>,
    /// The run as one of several (`load --shard`, `--hdr-log`, or a result of `merge`).
    #[serde(default)]
    pub(crate) run: RunInfo,
}

/// Where a load ran and what it wrote beside its results, so that `framebench merge` can
/// combine the results of several processes.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct RunInfo {
    /// The host's name (`/proc/sys/kernel/hostname`).
    #[serde(default)]
    pub(crate) host: String,
    /// The HdrHistogram interval log written beside the results (`--hdr-log`), as given.
    #[serde(default)]
    pub(crate) hdr_log: Option<String>,
    /// A merged result: one row per process it was merged from.
    #[serde(default)]
    pub(crate) merged_from: Vec<MergedFrom>,
}

/// One process of a merged result, as its own results file said.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct MergedFrom {
    /// Its results file.
    pub(crate) file: String,
    /// Its host.
    pub(crate) host: String,
    /// Its shard, when it had one.
    pub(crate) shard: Option<super::Shard>,
    /// Its cells, as it measured them.
    pub(crate) cells: Vec<CellResult>,
}

impl Report {
    /// One line: environment and pinning.
    pub(crate) fn header(&self) -> String {
        let p = &self.params;
        format!(
            "environment: {} | {} build | {} | {} cores | Linux {}\npinning: {}\nload: {}{}, {}, timeout {:?}, {}{}",
            self.environment.rustc,
            self.environment.profile,
            self.environment.cpu,
            self.environment.cores,
            self.environment.kernel,
            p.pinning.label(),
            match p.requests {
                Some(n) => format!("{n} requests per cell (bounded by {:?})", p.duration),
                None => format!("{:?} per cell", p.duration),
            },
            match p.rate {
                Some(r) => format!(
                    ", constant rate {r} {}/s (latency from intended send time)",
                    p.protocol.unit().short
                ),
                None => ", closed loop".into(),
            },
            p.protocol.conditions(p.pipeline),
            p.timeout,
            // A count-bounded cell sends its requests from the start (src/driver/mod.rs).
            if p.requests.is_some() {
                "no warmup".to_owned()
            } else {
                format!("warmup {:?}", p.warmup)
            },
            if p.sample_every > 0 {
                format!(", 1 in {} responses checked against the oracle", p.sample_every)
            } else {
                String::new()
            }
        ) + rounds_line(p.rounds).as_str()
            + match p.transport {
                crate::options::Transport::Tls => format!(
                    "\nTLS: rustls {} on ring, TLS 1.3 or 1.2 as negotiated, the run's ECDSA P-256 \
                     certificate; resumption {}; a connection's first request goes with its \
                     handshake, and its latency includes it",
                    crate::env::crate_version("rustls", "0.23.").unwrap_or("?"),
                    p.resumption.name()
                ),
                crate::options::Transport::Tcp => String::new(),
            }.as_str()
            + match p.requests_per_connection {
            Some(1) => format!(
                "\nchurn: a new connection for every {} ({}); connects and connect time are \
                 in the details, apart from the latency",
                p.protocol.unit().singular,
                p.protocol.churn_close(true)
            ),
            Some(n) => format!(
                "\nchurn: each connection closed after {n} {} ({}) and reopened; connects and \
                 connect time are in the details, apart from the latency",
                p.protocol.unit().plural,
                p.protocol.churn_close(false)
            ),
            None => String::new(),
        }
        .as_str()
    }

    /// This report as a results file of `command` (`load` or `compare`), of what `provenance`
    /// says: its figures are the measured cells' rates, each with its interval
    /// ([`rate_interval`]: the rounds' range, or the spread within the cell), and its detail is
    /// this whole report; `--json` writes it.
    pub(crate) fn results(
        &self,
        command: &str,
        provenance: crate::provenance::Provenance,
    ) -> crate::results::Results {
        use crate::results::{Figure, Metric, Results};
        let figures = self
            .cells
            .iter()
            .filter(|c| c.status == Status::Ok)
            .map(|c| {
                let variant = format!(
                    "{},c{},p{}{}",
                    c.variant,
                    c.connections,
                    c.pipeline,
                    c.rate.map_or(String::new(), |r| format!(",rate{r}"))
                );
                let interval = rate_interval(c).unwrap_or(crate::interval::Estimate {
                    point: c.rps,
                    lo: f64::NEG_INFINITY,
                    hi: f64::INFINITY,
                });
                let mut figure = Figure::timed(
                    "load",
                    &c.target,
                    &c.scenario,
                    &variant,
                    Metric::Rps,
                    interval,
                );
                if c.round_rps.len() > 1 {
                    figure.rounds = Some(c.round_rps.len());
                }
                figure
            })
            .collect();
        let mut results = Results::new(command, figures, provenance);
        results.detail = Some(serde_json::to_value(self).expect("report serializes"));
        results
    }

    /// Cells that did not end `ok`.
    pub(crate) fn failures(&self) -> Vec<String> {
        self.cells
            .iter()
            .filter(|c| c.status.is_failure())
            .map(|c| {
                let reason = c.status.reason();
                format!(
                    "{} {} {} {} c={}: {reason}",
                    c.status.short(),
                    c.target,
                    c.variant,
                    c.scenario,
                    c.connections
                )
            })
            .collect()
    }

    /// The terminal table.
    pub(crate) fn terminal(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "{}", self.header());
        let unit = self.params.protocol.unit();
        let mut table = Table::new(COLUMNS.map(|(h, a)| (unit.heading(h), a)));
        for c in &self.cells {
            // A skipped or unsupported cell measured nothing: dashes, not zeros.
            if let Status::NotRun(_) = c.status {
                let mut row = [(); 20].map(|()| "–".to_string());
                row[0] = c.target.clone();
                row[1] = c.scenario.clone();
                row[2] = c.variant.clone();
                row[3] = c.connections.to_string();
                row[5] = String::new();
                row[19] = c.status.short().into();
                table.row(row);
                continue;
            }
            let row = [
                c.target.clone(),
                c.scenario.clone(),
                c.variant.clone(),
                c.connections.to_string(),
                format!("{:.0}{}", c.rps, spread(c)),
                bound_mark(c).to_string(),
                format!("{:.2}", c.bytes_per_sec / 1e6),
                us(c.latency.mean_us),
                us(c.latency.p50_us),
                us(c.latency.p99_us),
                us(c.latency.p999_us),
                us(c.latency.max_us),
                format!("{}/{}/{}", c.non_2xx, c.socket_errors, c.timeouts),
                format!("{}/{}", c.per_connection.starved, c.connections),
                pct(c.server_cpu_pct),
                per_req(c.server_user_us_per_req),
                per_req(c.server_sys_us_per_req),
                mb(c.server_peak_rss),
                pct(c.client_cpu_pct),
                c.status.short().to_string(),
            ];
            table.row(row);
        }
        s.push_str(&table.terminal(""));
        let _ = writeln!(s, "{BOUND_LEGEND}\n{SPREAD_LEGEND}");
        for line in self
            .waits()
            .into_iter()
            .chain(self.handshakes())
            .chain(self.upgrades())
        {
            let _ = writeln!(s, "{line}");
        }
        for f in self.failures() {
            let _ = writeln!(s, "{f}");
        }
        s
    }

    /// For each measured cell of the waiting scenario (`delay`), its rate against the ideal
    /// (connections ÷ the wait: every connection always waiting, nothing else taking time), its
    /// p50 and p99 against the wait, and the server's CPU per request.
    pub(crate) fn waits(&self) -> Vec<String> {
        let wait_s = crate::oracle::DELAY_MS as f64 / 1e3;
        self.cells
            .iter()
            .filter(|c| c.scenario == crate::oracle::DELAY_SCENARIO)
            .filter(|c| !matches!(c.status, Status::NotRun(_)))
            .map(|c| {
                let ideal = c.connections as f64 / wait_s;
                let of_wait = |us: f64| us / 1e3 / crate::oracle::DELAY_MS as f64;
                let cpu = match (c.server_user_us_per_req, c.server_sys_us_per_req) {
                    (Some(u), Some(k)) => format!("{:.1} µs", u + k),
                    _ => "–".to_owned(),
                };
                format!(
                    "{} delay c{}: {:.0} req/s = {:.2} × the ideal {:.0} ({} connections ÷ {} ms); \
                     p50 {} = {:.2} × the wait, p99 {} = {:.2} ×; server CPU {cpu} per request",
                    c.target,
                    c.connections,
                    c.rps,
                    c.rps / ideal,
                    ideal,
                    c.connections,
                    crate::oracle::DELAY_MS,
                    us(c.latency.p50_us),
                    of_wait(c.latency.p50_us),
                    us(c.latency.p99_us),
                    of_wait(c.latency.p99_us),
                )
            })
            .collect()
    }

    /// For each measured TLS cell that made handshakes in its window: its handshakes per second in the recorded window, how many
    /// resumed against whether the client offered to, and the server's CPU per handshake where
    /// every request had a connection of its own (`--requests-per-connection 1`: the request's
    /// CPU is in it).
    pub(crate) fn handshakes(&self) -> Vec<String> {
        self.cells
            .iter()
            .filter(|c| matches!(c.status, Status::Ok))
            // A keep-alive cell made its handshakes before its window: nothing to say.
            .filter_map(|c| c.tls.filter(|h| h.done > 0).map(|h| (c, h)))
            .map(|(c, h)| {
                let per_second = h.done as f64 / c.seconds.max(1e-9);
                let resumed = format!(
                    "{} of {} resumed (resumption {})",
                    h.resumed,
                    h.done,
                    h.resumption.name()
                );
                let churn = self.params.requests_per_connection == Some(1);
                let cpu = match (c.server_user_us_per_req, c.server_sys_us_per_req) {
                    (Some(u), Some(k)) if churn => {
                        format!("; server CPU {:.1} µs per handshake and its request", u + k)
                    }
                    _ => String::new(),
                };
                format!(
                    "{} tls c{}: {per_second:.0} handshakes/s, {resumed}{cpu}",
                    c.target, c.connections
                )
            })
            .collect()
    }

    /// For each measured WebSocket cell whose connections upgraded in its window (a churning
    /// load): its upgrades per second, the handshakes of WebSocket.
    pub(crate) fn upgrades(&self) -> Vec<String> {
        self.cells
            .iter()
            .filter(|c| matches!(c.status, Status::Ok))
            .filter_map(|c| c.upgrades.filter(|&n| n > 0).map(|n| (c, n)))
            .map(|(c, n)| {
                format!(
                    "{} ws c{}: {:.0} upgrades/s ({n} in {:.1} s), {:.0} messages/s",
                    c.target,
                    c.connections,
                    n as f64 / c.seconds.max(1e-9),
                    c.seconds,
                    c.rps
                )
            })
            .collect()
    }

    /// Markdown: the environment, a rate table per scenario (rows: target and variant;
    /// columns: connections), as the seed articles lay theirs out, then every detail.
    pub(crate) fn markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "Environment: `{}`\n",
            self.header().replace('\n', "` · `")
        );
        let conns = self.connection_counts();
        for scenario in self.scenarios() {
            self.write_rps_table(&mut s, scenario, &conns);
        }
        for line in self
            .waits()
            .into_iter()
            .chain(self.handshakes())
            .chain(self.upgrades())
        {
            let _ = writeln!(s, "- {line}");
        }
        self.write_details(&mut s);
        s
    }

    /// Every connection count measured, ascending.
    fn connection_counts(&self) -> Vec<usize> {
        let mut conns: Vec<usize> = self.cells.iter().map(|c| c.connections).collect();
        conns.sort_unstable();
        conns.dedup();
        conns
    }

    /// Every scenario measured, in the order of the cells.
    fn scenarios(&self) -> Vec<&str> {
        let mut scenarios: Vec<&str> = Vec::new();
        for c in &self.cells {
            if !scenarios.contains(&c.scenario.as_str()) {
                scenarios.push(&c.scenario);
            }
        }
        scenarios
    }

    /// One scenario's requests (or WebSocket messages) per second: a row per target and
    /// variant, a column per connection count.
    fn write_rps_table(&self, s: &mut String, scenario: &str, conns: &[usize]) {
        let unit = self.params.protocol.unit();
        let _ = writeln!(s, "#### `{scenario}`: {} per second\n", unit.plural);
        let mut table = Table::new(
            [("target", Align::Left), ("variant", Align::Left)]
                .into_iter()
                .map(|(h, a)| (h.to_string(), a))
                .chain(conns.iter().map(|c| (format!("{c} conns"), Align::Right))),
        );
        let cells = || self.cells.iter().filter(|c| c.scenario == scenario);
        let mut rows: Vec<(&str, &str)> = Vec::new();
        for c in cells() {
            if !rows.contains(&(c.target.as_str(), c.variant.as_str())) {
                rows.push((&c.target, &c.variant));
            }
        }
        for (t, v) in rows {
            let figures = conns.iter().map(|n| {
                rps_cell(cells().find(|c| c.target == t && c.variant == v && c.connections == *n))
            });
            table.row([t.to_string(), v.to_string()].into_iter().chain(figures));
        }
        s.push_str(&table.markdown());
        let _ = writeln!(s);
    }

    /// Every figure of every cell, then the failures.
    fn write_details(&self, s: &mut String) {
        let _ = writeln!(s, "#### Details\n");
        let unit = self.params.protocol.unit();
        let mut table = Table::new(DETAILS.map(|(h, a)| (unit.heading(h), a)));
        for c in &self.cells {
            let p = &c.per_connection;
            table.row([
                c.target.clone(),
                c.version.clone(),
                c.scenario.clone(),
                c.variant.clone(),
                c.connections.to_string(),
                format!("{:.0}", c.rps),
                match (c.round_rps.len(), c.rps_spread) {
                    (n, _) if n > 1 => {
                        let e = rate_interval(c).expect("rounds give an interval");
                        format!("{:.0}–{:.0} over {n} rounds", e.lo, e.hi)
                    }
                    (_, Some(e)) => format!("{:.0}–{:.0} (median {:.0})", e.lo, e.hi, e.point),
                    (_, None) => "–".into(),
                },
                format!("{:.2}", c.bytes_per_sec / 1e6),
                us(c.latency.mean_us),
                us(c.latency.p50_us),
                us(c.latency.p90_us),
                us(c.latency.p99_us),
                us(c.latency.p999_us),
                us(c.latency.max_us),
                c.non_2xx.to_string(),
                c.socket_errors.to_string(),
                c.timeouts.to_string(),
                format!("{}/{:.0}/{}", p.min, p.mean, p.max),
                c.connects.to_string(),
                c.connect_us_mean
                    .map_or("–".into(), |v| format!("{v:.1} µs")),
                p.starved.to_string(),
                pct(c.server_cpu_pct),
                per_req(c.server_user_us_per_req),
                per_req(c.server_sys_us_per_req),
                bound_text(c).to_string(),
                mb(c.server_peak_rss),
                pct(c.client_cpu_pct),
                c.status.short().to_string(),
            ]);
        }
        s.push_str(&table.markdown());
        let _ = writeln!(s, "\n{BOUND_LEGEND}\n\n{SPREAD_LEGEND}");
        let failures = self.failures();
        if !failures.is_empty() {
            let _ = writeln!(s);
            for f in failures {
                let _ = writeln!(s, "- {f}");
            }
        }
    }
}

/// A cell of the req/s table: the rate with any starved connections, the status of a cell that
/// did not end `ok`, or a dash for one not measured.
fn rps_cell(cell: Option<&CellResult>) -> String {
    match cell {
        None => "–".to_owned(),
        Some(c) if c.status == Status::Ok => {
            let starved = if c.per_connection.starved > 0 {
                format!(" ({} starved)", c.per_connection.starved)
            } else {
                String::new()
            };
            let mark = match bound_mark(c) {
                "" => String::new(),
                m => format!(" {m}"),
            };
            format!("{}{}{starved}{mark}", kilo(c.rps), spread(c))
        }
        Some(c) => c.status.short().to_owned(),
    }
}

/// The terminal table's columns, for the heading, skipped and measured rows alike: the names
/// aligned left, the figures right, the status last.
const COLUMNS: [(&str, Align); 20] = [
    ("target", Align::Left),
    ("scenario", Align::Left),
    ("variant", Align::Left),
    ("conns", Align::Right),
    ("req/s", Align::Right),
    ("bound", Align::Left),
    ("MB/s", Align::Right),
    ("mean", Align::Right),
    ("p50", Align::Right),
    ("p99", Align::Right),
    ("p99.9", Align::Right),
    ("max", Align::Right),
    ("non2xx/err/to", Align::Right),
    ("starved", Align::Right),
    ("srv cpu", Align::Right),
    ("usr/req", Align::Right),
    ("sys/req", Align::Right),
    ("srv rss", Align::Right),
    ("cli cpu", Align::Right),
    ("status", Align::Left),
];

/// The markdown details table's columns.
const DETAILS: [(&str, Align); 28] = [
    ("target", Align::Left),
    ("version", Align::Left),
    ("scenario", Align::Left),
    ("variant", Align::Left),
    ("conns", Align::Right),
    ("req/s", Align::Right),
    ("spread", Align::Right),
    ("MB/s", Align::Right),
    ("mean", Align::Right),
    ("p50", Align::Right),
    ("p90", Align::Right),
    ("p99", Align::Right),
    ("p99.9", Align::Right),
    ("max", Align::Right),
    ("non-2xx", Align::Right),
    ("socket errors", Align::Right),
    ("timeouts", Align::Right),
    ("req/conn min/mean/max", Align::Right),
    ("connects", Align::Right),
    ("connect mean", Align::Right),
    ("starved", Align::Right),
    ("server CPU", Align::Right),
    ("server user/req", Align::Right),
    ("server sys/req", Align::Right),
    ("bound", Align::Left),
    ("server peak RSS", Align::Right),
    ("client CPU", Align::Right),
    ("status", Align::Left),
];

/// Under the load and compare tables: what `±` beside a rate means.
pub(crate) const SPREAD_LEGEND: &str =
    "±: how steady the rate was within the cell: the 95 % interval \
     of the median rate over 20 slices of the recorded window, as a share of the rate (not a \
     rerun's interval: a slow spell longer than the cell moves all of it). −a/+b: with \
     --rounds, the cell's figures are its median round's, and a and b how far its lowest and \
     highest rounds fell below and rose above it";

/// Under every table with rates: what the marks mean.
pub(crate) const BOUND_LEGEND: &str =
    "unsat: server below 90 % of its cores, client too (round trips \
     and wake-ups set the rate); client-bound: server below 90 %, client at its limit (the rate \
     is the client's); ?: no reading of the server's CPU (a URL target); no mark: the server \
     was saturated, the rate is its own";

/// The mark beside a measured rate ([`super::stats::Bound::mark`]); empty for a cell that did not measure.
pub(crate) fn bound_mark(c: &CellResult) -> &'static str {
    if c.status == Status::Ok {
        c.bound.mark()
    } else {
        ""
    }
}

/// The bound in words, for the details table.
fn bound_text(c: &CellResult) -> &'static str {
    match bound_mark(c) {
        "" if c.status == Status::Ok => "server",
        m => m,
    }
}

/// The header's line for `--rounds`, or nothing for one round.
fn rounds_line(rounds: usize) -> String {
    if rounds < 2 {
        return String::new();
    }
    format!(
        "\nrounds: every cell ran {rounds} times, the targets interleaved with their order \
         rotated each round; each cell's figures are its median round's (by rate), whole, and \
         its interval is the rounds' range"
    )
}

/// A cell's interval around its rate: the rounds' range when it ran several
/// ([`CellResult::round_rps`]), else its spread over the slices of its window
/// ([`CellResult::rps_spread`]) moved onto its rate (the mean over the window), keeping its
/// width; `None` when it has neither.
pub(crate) fn rate_interval(c: &CellResult) -> Option<crate::interval::Estimate> {
    if c.round_rps.len() > 1 {
        let lo = c.round_rps.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = c
            .round_rps
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        return Some(crate::interval::Estimate {
            point: c.rps,
            lo,
            hi,
        });
    }
    c.rps_spread.map(|e| crate::interval::Estimate {
        point: c.rps,
        lo: c.rps - (e.point - e.lo),
        hi: c.rps + (e.hi - e.point),
    })
}

/// After a rate: ` ±2 %`, the half-width of its spread ([`CellResult::rps_spread`]) as a share
/// of the rate; ` −8/+5 %`, the lowest and highest round against the median round, when it ran
/// in rounds; or nothing when the cell has neither.
pub(crate) fn spread(c: &CellResult) -> String {
    let share = |pct: f64| {
        if pct < 1.0 {
            format!("{pct:.1}")
        } else {
            format!("{pct:.0}")
        }
    };
    if c.round_rps.len() > 1 && c.rps > 0.0 {
        let e = rate_interval(c).expect("rounds give an interval");
        let below = 100.0 * (c.rps - e.lo) / c.rps;
        let above = 100.0 * (e.hi - c.rps) / c.rps;
        return format!(" −{}/+{} %", share(below), share(above));
    }
    match c.rps_spread {
        Some(e) if e.point > 0.0 => format!(" ±{} %", share(100.0 * e.half_width() / e.point)),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delay_cell_is_read_against_the_ideal_and_the_wait() {
        let mut c = CellResult::of_url("delay", 200, Status::Ok);
        c.rps = 17_000.0;
        c.latency.p50_us = 11_750.0;
        c.latency.p99_us = 13_430.0;
        c.server_user_us_per_req = Some(10.0);
        c.server_sys_us_per_req = Some(3.0);
        let other = CellResult::of_url("hello", 200, Status::Ok);
        let report = Report {
            environment: Environment::current(),
            params: LoadParams::for_tests(),
            cells: vec![c, other],
            run: RunInfo::default(),
        };
        let lines = report.waits();
        assert_eq!(lines.len(), 1, "{lines:?}");
        for want in [
            "delay c200: 17000 req/s = 0.85 × the ideal 20000 (200 connections ÷ 10 ms)",
            "p50 11.75 ms = 1.18 × the wait, p99 13.43 ms = 1.34 ×",
            "server CPU 13.0 µs per request",
        ] {
            assert!(lines[0].contains(want), "{} lacks {want}", lines[0]);
        }
    }

    /// A WebSocket load counts messages, and its churn ends with the close handshake: its
    /// tables, headings and header say so, and an HTTP load's keep their requests.
    #[test]
    fn a_websocket_report_counts_messages() {
        // By name, as the command line gives it: only the protocol module names a variant.
        let report = |name: &str| {
            let protocol = <crate::options::Protocol as clap::ValueEnum>::from_str(name, false)
                .expect("a protocol");
            let mut params = LoadParams::for_tests();
            params.protocol = protocol;
            params.requests_per_connection = Some(10);
            let mut c = CellResult::of_url("hello", 10, Status::Ok);
            c.protocol = protocol;
            c.rps = 1000.0;
            Report {
                environment: Environment::current(),
                params,
                cells: vec![c],
                run: RunInfo::default(),
            }
        };
        let ws = report("ws");
        let text = ws.markdown() + &ws.terminal();
        for want in [
            "`hello`: messages per second",
            "| msg/s |",
            "server user/msg",
            "msg/conn min/mean/max",
            "after 10 messages (then the WebSocket close handshake)",
        ] {
            assert!(text.contains(want), "lacks {want}:\n{text}");
        }
        assert!(
            !text.contains("req/s") && !text.contains("Connection: close"),
            "{text}"
        );
        let http = report("http1").markdown();
        for want in [
            "`hello`: requests per second",
            "| req/s |",
            "after 10 requests (the last with `Connection: close`)",
        ] {
            assert!(http.contains(want), "lacks {want}:\n{http}");
        }
    }
}
