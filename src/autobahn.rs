//! WebSocket's conformance judge: Autobahn|Testsuite's fuzzing client (`wstest -m
//! fuzzingclient`) against every WebSocket echo named, under `check --conformance --protocol
//! ws`. Its some 500 cases cover framing, fragmentation, UTF-8, close codes, ping and pong, and
//! limits. It is the field's judge, so framebench runs it rather than rules of its own, and
//! reports per server how many cases passed, were non-strict or informational, were not
//! implemented (compression, which no echo here negotiates), or failed. Autobahn's own report
//! folder (HTML and JSON per case) is left under `target/autobahn/`; none of it is committed.
//!
//! Autobahn|Testsuite is Python 2 only (25.10.1 on PyPI); `scripts/autobahn.sh` installs it in a
//! virtual environment of its own. Without it the run is skipped with one line. `wstest` exits
//! 0 whatever happens, so a server whose cases are missing from its `index.json` (it stopped
//! answering) is marked so, not read as passing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context as _};
use serde::Deserialize;

use crate::framework::{App, Config, Entry, ServerHandle};
use crate::outcome::{NotOk, Outcome};
use crate::table::{Align, Table};
use crate::tools::Tool;

/// Which of Autobahn's cases run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Cases {
    /// Every case but 9.* (messages up to 16 MiB: minutes per server) and 12.* and 13.*
    /// (compression, which no echo here negotiates): what CI runs.
    Quick,
    /// Every case: what the publication runs.
    All,
}

impl Cases {
    /// The case patterns that no part runs.
    fn left_out(self) -> Vec<&'static str> {
        let parts = self.parts();
        parts
            .iter()
            .flat_map(|p| p.excluded.iter().copied())
            .filter(|x| !parts.iter().any(|q| q.cases.contains(x)))
            .collect()
    }

    /// The runs of `wstest` per server, one after the other against the same server. Under
    /// `All`, 9.* (the large messages) runs on its own. A server that cuts a large message short
    /// makes each such case wait out Autobahn's 100 s, and its 9.* runs past any bound: so ohkami,
    /// whose mews 0.5.2 writes a frame with one `write` (frame.rs), not `write_all`. Its other
    /// cases are then still counted, and the note names what ran over.
    ///
    /// Each run's bound is a bound against a hang, not a target. A server that leaves the TCP
    /// connection open after the closing handshake makes Autobahn wait about a second per case
    /// for it to drop (actix: the quick cases took four minutes), which is Autobahn's to judge,
    /// not a hang.
    fn parts(self) -> &'static [Part] {
        // Consts: a `Duration` made by a call is not promoted to 'static in place.
        const QUICK: &[Part] = &[Part {
            name: "quick",
            cases: &["*"],
            excluded: &["9.*", "12.*", "13.*"],
            bound: Duration::from_secs(480),
        }];
        const ALL: &[Part] = &[
            Part {
                name: "all-but-9",
                cases: &["*"],
                excluded: &["9.*"],
                bound: Duration::from_secs(900),
            },
            Part {
                name: "9",
                cases: &["9.*"],
                excluded: &[],
                bound: Duration::from_secs(1800),
            },
        ];
        match self {
            Cases::Quick => QUICK,
            Cases::All => ALL,
        }
    }
}

/// One run of `wstest` against a server: the case patterns it runs and leaves out, its report
/// folder's name, and how long it may take.
#[derive(Debug)]
struct Part {
    name: &'static str,
    cases: &'static [&'static str],
    excluded: &'static [&'static str],
    bound: Duration,
}

/// One case's verdict in Autobahn's `index.json`.
#[derive(Debug, Deserialize)]
struct CaseResult {
    behavior: Behavior,
    #[serde(rename = "behaviorClose")]
    behavior_close: Behavior,
}

/// Autobahn's verdicts, for a case and for its closing handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
enum Behavior {
    #[serde(rename = "OK")]
    Ok,
    #[serde(rename = "NON-STRICT")]
    NonStrict,
    #[serde(rename = "INFORMATIONAL")]
    Informational,
    #[serde(rename = "UNIMPLEMENTED")]
    Unimplemented,
    #[serde(rename = "FAILED")]
    Failed,
    #[serde(rename = "WRONG CODE")]
    WrongCode,
    #[serde(rename = "UNCLEAN")]
    Unclean,
    #[serde(rename = "FAILED BY CLIENT")]
    FailedByClient,
}

/// `index.json`: agent, then case id, then its result.
type Index = BTreeMap<String, BTreeMap<String, CaseResult>>;

/// One server's counts.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Counts {
    ok: usize,
    non_strict: usize,
    informational: usize,
    unimplemented: usize,
    failed: usize,
}

impl Counts {
    /// A case passes when Autobahn says OK, non-strict or informational for it and its close;
    /// unimplemented (compression) is its own column; everything else fails.
    fn of(cases: &BTreeMap<String, CaseResult>) -> Counts {
        let mut c = Counts::default();
        for r in cases.values() {
            let close_ok = matches!(
                r.behavior_close,
                Behavior::Ok | Behavior::Informational | Behavior::NonStrict
            );
            match r.behavior {
                Behavior::Unimplemented => c.unimplemented += 1,
                _ if !close_ok => c.failed += 1,
                Behavior::Ok => c.ok += 1,
                Behavior::NonStrict => c.non_strict += 1,
                Behavior::Informational => c.informational += 1,
                _ => c.failed += 1,
            }
        }
        c
    }

    fn total(&self) -> usize {
        self.ok + self.non_strict + self.informational + self.unimplemented + self.failed
    }

    fn add(self, other: Counts) -> Counts {
        Counts {
            ok: self.ok + other.ok,
            non_strict: self.non_strict + other.non_strict,
            informational: self.informational + other.informational,
            unimplemented: self.unimplemented + other.unimplemented,
            failed: self.failed + other.failed,
        }
    }
}

/// A server's verdict: its counts, and a note for each part of the run that did not finish
/// (its cases are not counted).
#[derive(Debug)]
struct Judged {
    counts: Counts,
    unfinished: Vec<String>,
}

/// What Autobahn found: a row per server, a note per server that did not run or did not finish.
pub(crate) struct Report {
    table: Table,
    notes: Vec<String>,
    cases: Cases,
    outdir: PathBuf,
}

/// Runs Autobahn's fuzzing client against each of `entries` that serves WebSocket, one server
/// at a time (each its own agent and report); `–` with the reason for one that does not.
pub(crate) fn run(entries: &[&'static Entry], config: &Config, cases: Cases) -> Report {
    let outdir = crate::results::target_dir().join("autobahn/reports");
    let mut table = Table::new([
        ("framework", Align::Left),
        ("ok", Align::Right),
        ("non-strict", Align::Right),
        ("informational", Align::Right),
        ("unimplemented", Align::Right),
        ("failed", Align::Right),
        ("cases", Align::Right),
    ]);
    let mut notes = Vec::new();
    let wstest = match Tool::Wstest.path() {
        Ok(p) => Some(p),
        Err(_) => {
            notes.push(format!("skip: {}", Tool::Wstest.skip()));
            None
        }
    };
    let mut most = 0;
    let mut rows = Vec::new();
    for &entry in entries {
        let outcome = wstest
            .ok_or_else(|| NotOk::skipped(Tool::Wstest.skip()))
            .and_then(|w| judge(entry, config, cases, w, &outdir));
        if let Ok(j) = &outcome {
            most = most.max(j.counts.total());
        }
        rows.push((entry.name, outcome));
    }
    for (name, outcome) in rows {
        match outcome {
            Ok(Judged {
                counts: c,
                unfinished,
            }) => {
                if !unfinished.is_empty() {
                    notes.extend(unfinished.iter().map(|u| format!("{name}: {u}")));
                } else if c.total() < most {
                    notes.push(format!(
                        "FAIL {name}: {} of {most} cases reported (the server stopped answering?)",
                        c.total()
                    ));
                }
                table.row([
                    name.to_string(),
                    c.ok.to_string(),
                    c.non_strict.to_string(),
                    c.informational.to_string(),
                    c.unimplemented.to_string(),
                    c.failed.to_string(),
                    c.total().to_string(),
                ]);
            }
            Err(e) => {
                table.row(
                    std::iter::once(name.to_string())
                        .chain(std::iter::repeat_n(e.mark().to_string(), 6)),
                );
                notes.push(e.note(name));
            }
        }
    }
    Report {
        table,
        notes,
        cases,
        outdir,
    }
}

/// One server under Autobahn: started, judged, stopped.
fn judge(
    entry: &Entry,
    config: &Config,
    cases: Cases,
    wstest: &Path,
    outdir: &Path,
) -> Outcome<Judged> {
    if let Some((what, why)) = entry.lacks(&config.options) {
        return Err(NotOk::unsupported(format!("no {what}: {why}")));
    }
    entry.available()?;
    let (_app, server): (Box<dyn App>, ServerHandle) = {
        let app = entry.build(config).context("build")?;
        let server = app.serve(crate::check::bind_local()?).context("serve")?;
        (app, server)
    };
    // A folder per server, emptied first: `wstest` exits 0 whatever happens, so an index.json
    // left from an earlier run must not be read as this one's.
    // Absolute: `wstest` runs in it and reads the spec and writes the reports by these paths.
    let server_dir = std::path::absolute(outdir.join(entry.name)).context("the report folder")?;
    if server_dir.exists() {
        std::fs::remove_dir_all(&server_dir).context("emptying the report folder")?;
    }
    let url = format!("ws://{}/ws", server.addr());
    let mut counts = Counts::default();
    let mut unfinished = Vec::new();
    let mut first_err = None;
    for part in cases.parts() {
        match judge_part(entry.name, &url, part, wstest, &server_dir.join(part.name)) {
            Ok(c) => counts = counts.add(c),
            Err(e) => {
                unfinished.push(format!(
                    "cases {} not counted: {e:#}",
                    part.cases.join(", ")
                ));
                first_err.get_or_insert(e);
            }
        }
    }
    let _ = server.shutdown();
    match first_err {
        // No part finished: the row is the first failure.
        Some(e) if unfinished.len() == cases.parts().len() => Err(e.into()),
        _ => Ok(Judged { counts, unfinished }),
    }
}

/// One part's run of `wstest` against the server at `url`, its spec and report in `dir`.
fn judge_part(
    agent: &str,
    url: &str,
    part: &Part,
    wstest: &Path,
    dir: &Path,
) -> anyhow::Result<Counts> {
    std::fs::create_dir_all(dir).context("the report folder")?;
    let spec = serde_json::json!({
        "outdir": dir,
        "servers": [{ "agent": agent, "url": url }],
        "cases": part.cases,
        "exclude-cases": part.excluded,
        "exclude-agent-cases": {},
    });
    let spec_path = dir.join("fuzzingclient.json");
    std::fs::write(
        &spec_path,
        serde_json::to_vec_pretty(&spec).context("spec")?,
    )
    .context("writing the spec")?;
    run_bounded(
        Command::new(wstest)
            .args(["-m", "fuzzingclient", "-s"])
            .arg(&spec_path)
            .current_dir(dir),
        part.bound,
    )?;
    let index: Index = serde_json::from_slice(
        &std::fs::read(dir.join("index.json")).context("Autobahn's index.json")?,
    )
    .context("Autobahn's index.json is not the report it writes")?;
    let mine = index
        .get(agent)
        .ok_or_else(|| anyhow!("Autobahn reported no case for {agent}"))?;
    Ok(Counts::of(mine))
}

/// Runs `cmd` with its output dropped, killed after `bound`: `Err` when it failed or ran over.
fn run_bounded(cmd: &mut Command, bound: Duration) -> anyhow::Result<()> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("starting wstest")?;
    let deadline = Instant::now() + bound;
    loop {
        if let Some(status) = child.try_wait()? {
            anyhow::ensure!(status.success(), "wstest failed ({status})");
            return Ok(());
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            anyhow::bail!("wstest ran over {} s and was stopped", bound.as_secs());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

impl Report {
    /// What the cases were.
    fn head(&self) -> String {
        let left_out = self.cases.left_out();
        let which = if left_out.is_empty() {
            "every case".to_owned()
        } else {
            format!("every case but {}", left_out.join(", "))
        };
        format!(
            "Autobahn|Testsuite's fuzzing client against each echo at /ws ({which}); a case \
             counts as failed when Autobahn fails it or its closing handshake. Autobahn's own \
             report: {}",
            self.outdir.display()
        )
    }

    /// The report for the terminal.
    pub(crate) fn terminal(&self) -> String {
        let mut out = format!("{}\n", self.head());
        out.push_str(&self.table.terminal(""));
        for n in &self.notes {
            out.push_str(&format!("{n}\n"));
        }
        out
    }

    /// The report as a stamped Markdown file.
    pub(crate) fn markdown(&self, window: crate::provenance::Window) -> String {
        let mut out = format!(
            "# framebench check --conformance --protocol ws\n\n{}\n\nMachine: {}\n\n{}\n\n",
            crate::provenance::Provenance::header(window),
            crate::env::Environment::current(),
            self.head()
        );
        out.push_str(&self.table.markdown());
        out.push('\n');
        for n in &self.notes {
            out.push_str(&format!("- {n}\n"));
        }
        crate::generated::markdown(&out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parts_run_each_case_once_and_leave_out_what_ci_skips() {
        assert_eq!(Cases::Quick.left_out(), ["9.*", "12.*", "13.*"]);
        assert!(Cases::All.left_out().is_empty());
        // Under All, 9.* runs in the second part only, and each part has a folder of its own.
        let all = Cases::All.parts();
        assert_eq!(all.len(), 2);
        assert_eq!((all[0].cases, all[0].excluded), (&["*"][..], &["9.*"][..]));
        assert_eq!((all[1].cases, all[1].excluded), (&["9.*"][..], &[][..]));
        assert_ne!(all[0].name, all[1].name);
    }

    #[test]
    fn an_index_reads_into_counts_and_a_failed_close_fails_its_case() {
        let index: Index = serde_json::from_str(
            r#"{"raw": {
                "1.1.1": {"behavior": "OK", "behaviorClose": "OK", "duration": 2, "remoteCloseCode": 1000, "reportfile": "raw_case_1_1_1.json"},
                "6.4.3": {"behavior": "NON-STRICT", "behaviorClose": "OK", "duration": 2001, "remoteCloseCode": 1007, "reportfile": "x.json"},
                "7.1.6": {"behavior": "INFORMATIONAL", "behaviorClose": "INFORMATIONAL", "duration": 1, "remoteCloseCode": null, "reportfile": "x.json"},
                "12.1.1": {"behavior": "UNIMPLEMENTED", "behaviorClose": "UNIMPLEMENTED", "duration": 1, "remoteCloseCode": null, "reportfile": "x.json"},
                "7.9.1": {"behavior": "OK", "behaviorClose": "WRONG CODE", "duration": 1, "remoteCloseCode": 1000, "reportfile": "x.json"},
                "5.1": {"behavior": "FAILED", "behaviorClose": "OK", "duration": 1, "remoteCloseCode": 1000, "reportfile": "x.json"}
            }}"#,
        )
        .unwrap();
        let c = Counts::of(&index["raw"]);
        assert_eq!(
            c,
            Counts {
                ok: 1,
                non_strict: 1,
                informational: 1,
                unimplemented: 1,
                failed: 2,
            }
        );
        assert_eq!(c.total(), 6);
        assert_eq!(c.add(c).total(), 12);
        // Another file is refused, not read as zero cases.
        assert!(
            serde_json::from_str::<Index>(r#"{"raw": {"1.1.1": {"behavior": "MAYBE"}}}"#).is_err()
        );
    }
}
