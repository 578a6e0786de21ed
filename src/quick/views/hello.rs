//! The hello cells past saturation as a table, in both views: churn, the bill and the
//! standing cost per server, and how the bill ranks the frameworks against saturated req/s.

use std::fmt::Write as _;

use crate::driver::output::bound_mark;
use crate::driver::stats::{CellResult, Status};
use crate::outcome::NotRun;
use crate::quick::cells::Run;
use crate::quick::hello;
use crate::table::{Align, Table};
use crate::units::{kilo, per_req, sig3, us};

use super::notes::Notes;
use super::{wrap, SCREEN_WIDTH};

/// The long table's hello columns.
const HELLO_COLUMNS: [(&str, Align); 11] = [
    ("framework", Align::Left),
    ("churn/s", Align::Right),
    ("bound", Align::Left),
    ("connects/s", Align::Right),
    ("connect", Align::Right),
    ("bill/req", Align::Right),
    ("usr/req", Align::Right),
    ("sys/req", Align::Right),
    ("p99 at rate", Align::Right),
    ("standing/s", Align::Right),
    ("rank k/s", Align::Right),
];

impl Run {
    /// One sentence on what the rank column claims, and what is not ranked.
    fn hello_ranking_text(&self) -> String {
        let ranks = self.hello_ranks();
        if ranks.is_empty() {
            return "rank k/s: no framework has a saturated hello rate".into();
        }
        let mut distinct: Vec<usize> = ranks.iter().map(|(_, r)| *r).collect();
        distinct.sort_unstable();
        distinct.dedup();
        format!(
            "rank k/s: by saturated hello req/s, 1 = most; a rank is shared (=) where the \
             intervals (each rate's ratio to raw over the passes) overlap: the {} frameworks \
             ranked fall in {} group(s). The bill is one pass's figure with no interval, so it \
             is not ranked, nor is the order of the two compared.",
            ranks.len(),
            distinct.len()
        )
    }

    /// The hello cells past saturation for the first screen: churn rate, bill and standing
    /// cost per server, and the two ranks.
    pub(super) fn hello_compact(&self) -> String {
        let mut out = String::new();
        if self.hello.churn.is_empty() {
            return out;
        }
        let ranks = self.hello_ranks();
        let mut table = Table::new([
            ("hello", Align::Left),
            ("churn k/s", Align::Right),
            ("bill µs/req", Align::Right),
            ("standing ms/s", Align::Right),
            ("rank k/s", Align::Right),
        ]);
        for name in self.hello_names() {
            let by_rate = rank_text(&ranks, name);
            table.row([
                name.to_owned(),
                churn_short(self.hello.churn(name)),
                open_short(self.hello.bill(name), hello::cpu_us_per_request),
                open_short(self.hello.standing(name), hello::cpu_ms_per_second),
                by_rate,
            ]);
        }
        out.push_str(&table.terminal(""));
        out.push_str(&wrap(&self.hello_ranking_text(), SCREEN_WIDTH));
        out.push_str(&wrap(
            &format!(
                "churn: closed loop, {} connections, each closed after {} requests (~: not the \
                 server's own rate; OPEN: the server ignored Connection: close, see framebench \
                 check --conformance). bill: the server's CPU time per request (user + system) \
                 at {:.0} k req/s, a rate every server here sustains (behind: it did not). \
                 standing: its CPU time per second at {:.0} req/s. Best of {} passes each.",
                self.hello.connections,
                hello::CHURN_REQUESTS,
                hello::BILL_RATE / 1e3,
                hello::STANDING_RATE,
                hello::PASSES,
            ),
            SCREEN_WIDTH,
        ));
        out.push('\n');
        out
    }

    /// The hello cells past saturation for the long table, every figure and its notes.
    pub(super) fn hello_long(&self, notes: &mut Notes) -> String {
        let mut out = String::new();
        if self.hello.churn.is_empty() {
            return out;
        }
        let _ = writeln!(
            out,
            "\nhello past saturation, {} connections, best of {} passes each: churn (closed \
             loop, a new connection every {} requests: its rate, the connects per second and \
             their mean time), the bill (open loop at {:.0} req/s: the server's CPU time per \
             request in user and system mode, and p99 from the intended send time) and the \
             standing cost (open loop at {:.0} req/s: the server's CPU time per second)\n",
            self.hello.connections,
            hello::PASSES,
            hello::CHURN_REQUESTS,
            hello::BILL_RATE,
            hello::STANDING_RATE,
        );
        let ranks = self.hello_ranks();
        let mut table = Table::new(HELLO_COLUMNS);
        for name in self.hello_names() {
            table.row(self.hello_long_row(name, &ranks));
            for (kind, cell) in [
                ("churn", self.hello.churn(name)),
                ("bill", self.hello.bill(name)),
                ("standing", self.hello.standing(name)),
            ] {
                hello_note(cell, notes, || format!("{name} hello {kind}"));
            }
        }
        out.push_str(&table.markdown_aligned());
        out.push('\n');
        out.push_str(&self.hello_ranking_text());
        out.push('\n');
        out
    }

    /// One server's row of the long hello table ([`HELLO_COLUMNS`]).
    fn hello_long_row(&self, name: &str, ranks: &[(&'static str, usize)]) -> [String; 11] {
        let dash = || "–".to_owned();
        let churn = self.hello.churn(name);
        let (rate, bound, connects, connect) = match churn {
            Some(c) if c.status == Status::Ok => (
                kilo(c.rps),
                bound_mark(c).to_owned(),
                kilo(c.connects as f64 / c.seconds.max(1e-9)),
                c.connect_us_mean
                    .map_or_else(dash, |v| format!("{v:.0} µs")),
            ),
            other => (churn_short(other), dash(), dash(), dash()),
        };
        let bill = self.hello.bill(name);
        let (total, user, system, p99) = match bill.map(|c| (c, hello::cpu_us_per_request(c))) {
            Some((c, Ok(total))) => (
                per_req(Some(total)),
                per_req(c.server_user_us_per_req),
                per_req(c.server_sys_us_per_req),
                us(c.latency.p99_us),
            ),
            _ => (
                open_short(bill, hello::cpu_us_per_request),
                dash(),
                dash(),
                dash(),
            ),
        };
        let standing = match self.hello.standing(name).map(hello::cpu_ms_per_second) {
            Some(Ok(ms)) => format!("{ms:.2} ms"),
            _ => open_short(self.hello.standing(name), hello::cpu_ms_per_second),
        };
        let by_rate = rank_text(ranks, name);
        [
            name.to_owned(),
            rate,
            bound,
            connects,
            connect,
            total,
            user,
            system,
            p99,
            standing,
            by_rate,
        ]
    }
}

/// `name`'s rank by saturated req/s, `=` before a shared one, or a dash.
fn rank_text(ranks: &[(&'static str, usize)], name: &str) -> String {
    let Some(&(_, rank)) = ranks.iter().find(|(n, _)| *n == name) else {
        return "–".to_owned();
    };
    let shared = ranks.iter().filter(|(_, r)| *r == rank).count() > 1;
    format!("{}{rank}", if shared { "=" } else { "" })
}

/// A churn cell in a few characters: thousands of requests per second (`~` when the rate is
/// not the server's own), `OPEN` when the server ignored `Connection: close`, or the status.
fn churn_short(cell: Option<&CellResult>) -> String {
    match cell {
        None => "–".to_owned(),
        Some(c) if c.status == Status::Ok => {
            let own = bound_mark(c).is_empty();
            format!("{}{}", sig3(c.rps / 1e3), if own { "" } else { "~" })
        }
        Some(c) => c.status.short().to_owned(),
    }
}

/// An open-loop cell's figure (`value` of it) in a few characters: `behind` when the server
/// did not sustain the rate, else the status.
fn open_short(
    cell: Option<&CellResult>,
    value: impl Fn(&CellResult) -> anyhow::Result<f64>,
) -> String {
    match cell {
        None => "–".to_owned(),
        Some(c) if c.status == Status::Ok => match value(c) {
            Ok(v) => sig3(v),
            Err(_) if c.rps < hello::SUSTAINED * c.rate.unwrap_or(0.0) => "behind".to_owned(),
            Err(_) => "–".to_owned(),
        },
        Some(c) => c.status.short().to_owned(),
    }
}

/// Adds a hello cell's note: a skip once, a server that ignored `Connection: close` or fell
/// behind the rate as a finding (not a failure: the conformance report says the same), and any
/// other end as a failure.
fn hello_note(cell: Option<&CellResult>, notes: &mut Notes, what: impl Fn() -> String) {
    let Some(c) = cell else { return };
    match &c.status {
        Status::Ok => {
            if let Some(rate) = c.rate.filter(|r| c.rps < hello::SUSTAINED * r) {
                notes.findings.push(format!(
                    "{}: reached {:.0} of {rate:.0} req/s, so it has no figure at that rate",
                    what(),
                    c.rps
                ));
            }
        }
        Status::NotRun(NotRun::Skipped(why)) => notes.skip(why),
        Status::IgnoredClose(why) => notes.findings.push(format!("{}: {why}", what())),
        Status::Interrupted => {}
        other => notes.failed.push(format!("{}: {other:?}", what())),
    }
}
