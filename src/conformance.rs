//! `framebench check --conformance`: every serving framework named against one protocol's rules
//! ([`crate::protocol::Suite`]), as a report, not a gate. Every server is started first and
//! contacted once, so that a rule that needs two answers apart (HTTP/1.1's `date moves`) waits
//! for its gap once; then each is judged, and under HTTP/1.1 sent the hostile bodies.

use crate::check::bind_local;
use crate::framework::{App, Config, Entry, ServerHandle};
use anyhow::Context as _;

use crate::oracle::hostile::{cases, over_limit, said, Case, Verdict, OVER_NAME, OVER_WHAT};
use crate::outcome::{NotOk, Outcome};
use crate::protocol::http1::hostile::{send_case, still_serving};
use crate::protocol::{Finding, Suite};
use crate::table::{Align, Table};
use crate::transport::Peer;

/// What `check --conformance` found: a row per server against the rules, a row per server
/// against the hostile bodies (HTTP/1.1 only), a note per failure or skip.
pub(crate) struct Report {
    suite: &'static Suite,
    /// `--tls`, or nothing: what the title adds to the suite's command.
    over: &'static str,
    table: Table,
    bodies: Option<Table>,
    notes: Vec<String>,
}

/// Judges every one of `entries` that serves `config`'s protocol over its transport against the
/// protocol's rules; one that does not serve them gets `–` and its reason, one that cannot run
/// here `skip`.
pub(crate) fn run(entries: &[&'static Entry], config: &Config, suite: &'static Suite) -> Report {
    let transport = config.options.transport;
    let mut table = Table::new(
        [("framework", Align::Left)]
            .into_iter()
            .chain(suite.rules.iter().map(|r| (r.name, Align::Left))),
    );
    // The hostile bodies, built once for every server (the over-limit one is 16 MiB).
    let hostile = suite.hostile_bodies.then(|| (cases(), over_limit()));
    let mut bodies = hostile.as_ref().map(|(cases, over)| {
        Table::new(
            [("framework", Align::Left)]
                .into_iter()
                .chain(cases.iter().chain([over]).map(|c| (c.name, Align::Left)))
                .chain([("after", Align::Left)]),
        )
    });
    let mut notes = Vec::new();
    let mut started = Vec::new();
    for &entry in entries {
        match start(entry, config) {
            Ok((app, server)) => {
                let judgment = (suite.begin)(Peer {
                    addr: server.addr(),
                    transport,
                });
                started.push((entry, app, server, judgment));
            }
            Err(e) => {
                table.row(
                    std::iter::once(entry.name.to_string())
                        .chain(std::iter::repeat_n(e.mark().to_string(), suite.rules.len())),
                );
                notes.push(e.note(entry.name));
            }
        }
    }
    for (entry, _app, server, judgment) in started {
        let peer = Peer {
            addr: server.addr(),
            transport,
        };
        let (mut server, mut stopped) = (Some(server), None);
        let findings = judgment(&config.fixtures, &mut || {
            stopped = server.take().map(|s| s.shutdown());
        });
        let mut cells = vec![entry.name.to_string()];
        for (rule, finding) in suite.rules.iter().zip(findings) {
            cells.push(match finding {
                Finding::Verdict(Ok(())) => "ok".into(),
                Finding::Verdict(Err(why)) => {
                    notes.push(format!("FAIL {} {}: {why:#}", entry.name, rule.name));
                    "FAIL".into()
                }
                Finding::Recorded(text) => text,
            });
        }
        table.row(cells);
        if let (Some(bodies), Some((cases, over))) = (bodies.as_mut(), hostile.as_ref()) {
            bodies.row(hostile_row(entry, peer, cases, over, &mut notes));
        }
        if let Some(Err(e)) = stopped.or_else(|| server.map(|s| s.shutdown())) {
            notes.push(format!("{}: stopping its server: {e:#}", entry.name));
        }
    }
    Report {
        suite,
        over: match transport {
            crate::options::Transport::Tls => " --tls",
            crate::options::Transport::Tcp => "",
        },
        table,
        bodies,
        notes,
    }
}

/// A server up: its app and its handle.
type Started = (Box<dyn App>, ServerHandle);

/// A running server for `entry`: not run when it does not serve `config`'s protocol over its
/// transport (`–`) or cannot run here (`skip`), failed when it did not build or serve.
fn start(entry: &Entry, config: &Config) -> Outcome<Started> {
    if let Some((what, why)) = entry.lacks(&config.options) {
        return Err(NotOk::unsupported(format!("no {what}: {why}")));
    }
    entry.available()?;
    let app = entry.build(config).context("build")?;
    let server = app.serve(bind_local()?).context("serve")?;
    Ok((app, server))
}

/// One server's row of the hostile-bodies table: each case's verdict, what it did with the
/// body over every limit (`over`), and whether it still answered `GET /` as the oracle's hello
/// after each (`ok`, else `DOWN`). A server that cannot serve `upload` gets `–` throughout and
/// its reason as a note; each verdict that is not a refusal (or the right body) gets a note with
/// what came back.
fn hostile_row(
    entry: &Entry,
    peer: Peer,
    cases: &[Case],
    over: &Case,
    notes: &mut Vec<String>,
) -> Vec<String> {
    let name = entry.name;
    if let Some(why) = entry.cannot("upload") {
        notes.push(format!("– {name} bodies: cannot serve upload: {why}"));
        return std::iter::once(name.to_string())
            .chain(std::iter::repeat_n("–".to_string(), cases.len() + 2))
            .collect();
    }
    let mut cells = vec![name.to_string()];
    let mut serving = true;
    let mut after = |case: &Case, notes: &mut Vec<String>| {
        if let Err(why) = still_serving(peer) {
            serving = false;
            notes.push(format!("FAIL {name} after {}: {why}", case.name));
        }
    };
    for case in cases {
        let outcome = send_case(peer, case);
        let verdict = Verdict::of(case, &outcome);
        if !verdict.passes() {
            let what = match &verdict {
                Verdict::Wrong(_) => "the handler was given a wrong body, its answer",
                _ => "neither a 4xx nor a close",
            };
            notes.push(format!(
                "FAIL {name} {}: {what}: {}",
                case.name,
                said(&outcome)
            ));
        }
        cells.push(verdict.cell());
        after(case, notes);
    }
    // Recorded, not judged: a note only for what is neither a refusal nor reading it all.
    let outcome = send_case(peer, over);
    let verdict = Verdict::of(over, &outcome);
    if matches!(
        verdict,
        Verdict::Wrong(_) | Verdict::Hang | Verdict::Other(_)
    ) {
        notes.push(format!("{name} {}: {}", over.name, said(&outcome)));
    }
    cells.push(verdict.cell());
    after(over, notes);
    cells.push(if serving { "ok" } else { "DOWN" }.to_string());
    cells
}

/// The line before the hostile-bodies table (its notes are with the rules' notes).
const BODIES_HEAD: &str = "hostile bodies, each `POST /upload` on a new connection \
    (docs/methodology/bodies.md): a 4xx (its status) or `closed` refuses it; `read all`: a 200 \
    whose answer is the digest of the body the client sent; `WRONG`: a 200 for another body, \
    one the framework handed its handler though the client did not send it; `HANG`: no answer \
    and no close within 8 s. A report, not a gate: tests/testsuite/bodies.rs gates them, with \
    the wrong bodies docs/methodology/bodies.md records.";

/// Each column of the hostile-bodies table and what it sends.
fn bodies_legend() -> Vec<(&'static str, &'static str)> {
    let mut legend: Vec<_> = cases().iter().map(|c| (c.name, c.what)).collect();
    legend.push((OVER_NAME, OVER_WHAT));
    legend.push((
        "after",
        "`GET /` answered as the oracle's hello after each of these (`DOWN`: not)",
    ));
    legend
}

impl Report {
    /// The report for the terminal: the table, the notes, the rules' legend, then the hostile
    /// bodies' table and legend.
    pub(crate) fn terminal(&self) -> String {
        let mut out = self.table.terminal("");
        for n in &self.notes {
            out.push_str(&format!("{n}\n"));
        }
        out.push_str(&format!("{}\n", self.suite.head));
        for r in self.suite.rules {
            out.push_str(&format!("  {:<11} {}\n", r.name, r.what));
        }
        if let Some(bodies) = &self.bodies {
            out.push_str(&format!("\n{BODIES_HEAD}\n"));
            out.push_str(&bodies.terminal(""));
            for (name, what) in bodies_legend() {
                out.push_str(&format!("  {name:<11} {what}\n"));
            }
        }
        out
    }

    /// The report as a stamped Markdown file: the commit and window, the table, the notes as a
    /// list, the rules' legend, then the hostile bodies.
    pub(crate) fn markdown(&self, window: crate::provenance::Window) -> String {
        let mut out = format!(
            "# {}{}\n\n{}\n\nMachine: {}\n\n",
            self.suite.command,
            self.over,
            crate::provenance::Provenance::header(window),
            crate::env::Environment::current()
        );
        out.push_str(&self.table.markdown());
        out.push('\n');
        for n in &self.notes {
            out.push_str(&format!("- {n}\n"));
        }
        out.push_str(&format!("\n{}\n\n", self.suite.head));
        for r in self.suite.rules {
            out.push_str(&format!("- `{}`: {}\n", r.name, r.what));
        }
        if let Some(bodies) = &self.bodies {
            out.push_str(&format!("\n## Hostile bodies\n\n{BODIES_HEAD}\n\n"));
            out.push_str(&bodies.markdown());
            out.push('\n');
            for (name, what) in bodies_legend() {
                out.push_str(&format!("- `{name}`: {what}\n"));
            }
        }
        crate::generated::markdown(&out)
    }
}
