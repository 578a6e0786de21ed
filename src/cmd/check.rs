//! `framebench check`: frameworks × scenarios × variants against the oracle, in-process and over
//! loopback (exit 1 on a mismatch); with `--conformance`, a report of each server against the
//! protocol rules (`crate::check`, `crate::oracle::conformance`).

use std::process::ExitCode;

use anyhow::Context as _;

use super::args::{OptArgs, RedisArg};
use crate::check::bind_local;
use crate::check::{check_framework, print_table};
use std::net::SocketAddr;

use crate::framework::{Config, Entry};
use crate::options::{Options, Protocol};
use crate::oracle::hostile::{cases, over_limit, said, still_serving, Case, Verdict};
use crate::outcome::Outcome;
use crate::table::{Align, Table};

/// `framebench check`.
#[derive(clap::Args)]
pub struct CheckArgs {
    /// Frameworks to check (default: all).
    frameworks: Vec<String>,
    /// Report each server against TechEmpower's header rules and HttpArena's protocol
    /// checks (Server, Date, framing, Connection: close, HEAD, HTTP/1.0, pipelining, split
    /// requests), then against hostile request bodies and a 16 MiB one: tables, not a gate.
    /// With `--protocol h2c`, against the h2c rules instead (preface, SETTINGS, streams,
    /// GOAWAY, and what an HTTP/1.1 request on the h2c port gets).
    #[arg(long)]
    conformance: bool,
    /// With --conformance: also write the report as Markdown to this file, stamped with the
    /// commit and window it ran in (docs/generated/conformance.md is one).
    #[arg(long, value_name = "PATH", requires = "conformance")]
    markdown: Option<std::path::PathBuf>,
    #[command(flatten)]
    opts: OptArgs,
    #[command(flatten)]
    redis: RedisArg,
}

/// `framebench check`, or `check --conformance`.
pub fn run(args: CheckArgs) -> anyhow::Result<ExitCode> {
    if args.conformance {
        let started = std::time::SystemTime::now();
        let report = match args.opts.protocol {
            Protocol::Http1 => conformance(&args.frameworks, &args.opts)?,
            Protocol::H2c => conformance_h2c(&args.frameworks, &args.opts)?,
        };
        print!("{}", report.terminal());
        if let Some(path) = &args.markdown {
            let window = crate::provenance::Window::since(started);
            std::fs::write(path, report.markdown(window))
                .with_context(|| format!("writing {}", path.display()))?;
            eprintln!("wrote {}", path.display());
        }
        Ok(ExitCode::SUCCESS)
    } else {
        check(&args.frameworks, &args.opts, &args.redis)
    }
}

/// `framebench check`: `names` (every framework when empty) × scenarios × variants against the
/// oracle; exit 1 on any mismatch, 130 when interrupted.
fn check(
    names: &[String],
    opts: &OptArgs,
    redis: &RedisArg,
) -> anyhow::Result<std::process::ExitCode> {
    let entries = crate::select::frameworks(names, |_| true, "")?;
    let entries = crate::select::for_runtime(names, entries, opts.runtime, &[opts.protocol])?;
    let variants: Vec<Options> = Options::variants(opts.threads.into())
        .into_iter()
        .map(|o| Options {
            runtime: opts.runtime,
            protocol: opts.protocol,
            ..o
        })
        .collect();
    let fixtures = crate::fixtures::Fixtures::load_default()?;
    crate::select::prepare_entries(entries.iter().copied());
    let redis = redis.provide()?;
    let base = crate::framework::Config::new(fixtures, redis.url());
    let mut rows = Vec::new();
    let stop = crate::tools::interrupted();
    for entry in entries {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            eprintln!("interrupted");
            return Ok(std::process::ExitCode::from(130));
        }
        rows.extend(check_framework(entry, &base, &variants));
    }
    if rows.is_empty() {
        // Every framework named was skipped (a missing tool, said above): nothing failed.
        println!("no rows checked: every framework named was skipped");
        return Ok(std::process::ExitCode::SUCCESS);
    }
    let failing = print_table(&rows);
    if failing > 0 {
        eprintln!(
            "error: {failing} of {} rows do not match the oracle",
            rows.len()
        );
        return Ok(std::process::ExitCode::from(1));
    }
    println!("all {} rows match the oracle", rows.len());
    Ok(std::process::ExitCode::SUCCESS)
}

/// `framebench check --conformance`: every serving framework named (all when none) against the
/// protocol rules ([`crate::oracle::conformance`]), as a table with a note per failure and the
/// rules' legend. A report: it exits 0 whatever the servers answer. Every server is started
/// first and asked for its `Date`, so that the one rule that needs two answers 3 s apart waits
/// for the gap once.
fn conformance(names: &[String], opts: &OptArgs) -> anyhow::Result<Conformance> {
    use crate::oracle::conformance::{Dates, DATE_MOVES, RULES};
    let entries = crate::select::frameworks(names, |_| true, "")?;
    let entries = crate::select::for_runtime(names, entries, opts.runtime, &[opts.protocol])?;
    let (threads, runtime) = (opts.threads.into(), opts.runtime);
    let fixtures = crate::fixtures::Fixtures::load_default()?;
    crate::select::prepare_entries(entries.iter().copied());
    let config = Config::new(std::sync::Arc::clone(&fixtures), None).with(Options {
        threads,
        runtime,
        ..Options::default()
    });
    let mut table = Table::new(
        [("framework", Align::Left)]
            .into_iter()
            .chain(RULES.iter().map(|r| (r.name, Align::Left)))
            .chain([(DATE_MOVES, Align::Left)]),
    );
    // The hostile bodies, built once for every server (the over-limit one is 16 MiB).
    let (cases, over) = (cases(), over_limit());
    let mut bodies = Table::new(
        [("framework", Align::Left)]
            .into_iter()
            .chain(cases.iter().chain([&over]).map(|c| (c.name, Align::Left)))
            .chain([("after", Align::Left)]),
    );
    let mut notes = Vec::new();
    // Every server up and asked for its first `Date`; a framework that cannot serve here says
    // why in its row.
    let mut started = Vec::new();
    for entry in entries.into_iter().filter(|e| e.loopback) {
        let served = || -> Outcome<_> {
            entry.available()?;
            let app = entry.build(&config).context("build")?;
            let server = app.serve(bind_local()?).context("serve")?;
            let dates = Dates::start(server.addr());
            Ok((app, server, dates))
        };
        match served() {
            Ok(s) => started.push((entry, s)),
            Err(e) => {
                table.row(
                    std::iter::once(entry.name.to_string())
                        .chain(std::iter::repeat_n(e.mark().to_string(), RULES.len() + 1)),
                );
                notes.push(e.note(entry.name));
            }
        }
    }
    for (entry, (_app, server, dates)) in started {
        let addr = server.addr();
        let mut cells = vec![entry.name.to_string()];
        let verdicts = RULES
            .iter()
            .map(|r| (r.name, r.check(addr, &fixtures)))
            .chain([(DATE_MOVES, dates.finish(addr))]);
        for (rule, verdict) in verdicts {
            cells.push(match verdict {
                Ok(()) => "ok".into(),
                Err(why) => {
                    notes.push(format!("FAIL {} {rule}: {why:#}", entry.name));
                    "FAIL".into()
                }
            });
        }
        table.row(cells);
        bodies.row(hostile_row(entry, addr, &cases, &over, &mut notes));
        if let Err(e) = server.shutdown() {
            notes.push(format!("{}: stopping its server: {e:#}", entry.name));
        }
    }
    Ok(Conformance {
        table,
        bodies,
        notes,
        protocol: Protocol::Http1,
    })
}

/// `framebench check --conformance --protocol h2c`: every framework named (all when none)
/// against the h2c rules ([`crate::oracle::h2c_rules`]); one that does not serve h2c gets `–`
/// and its reason. A report: it exits 0 whatever the servers answer.
fn conformance_h2c(names: &[String], opts: &OptArgs) -> anyhow::Result<Conformance> {
    use crate::framework::H2c;
    use crate::oracle::h2c_rules::{self, GOAWAY_RULE, HTTP1_RULE, RULES};
    let entries = crate::select::frameworks(names, |e| e.loopback, "has no server")?;
    let entries = crate::select::for_runtime(names, entries, opts.runtime, &[opts.protocol])?;
    let fixtures = crate::fixtures::Fixtures::load_default()?;
    crate::select::prepare_entries(entries.iter().copied());
    let config = Config::new(fixtures, None).with(Options {
        threads: opts.threads.into(),
        runtime: opts.runtime,
        protocol: Protocol::H2c,
        ..Options::default()
    });
    let columns = RULES
        .iter()
        .map(|r| r.name)
        .chain([GOAWAY_RULE.0, HTTP1_RULE.0, "advertised"]);
    let mut table = Table::new(
        [("framework", Align::Left)]
            .into_iter()
            .chain(columns.map(|c| (c, Align::Left))),
    );
    let width = RULES.len() + 3;
    let mut notes = Vec::new();
    for entry in entries {
        let mut row = |cell: &str, note: String, notes: &mut Vec<String>| {
            table.row(
                std::iter::once(entry.name.to_string())
                    .chain(std::iter::repeat_n(cell.to_string(), width)),
            );
            notes.push(note);
        };
        if let H2c::No(why) = entry.h2c {
            row("–", format!("– {}: no h2c: {why}", entry.name), &mut notes);
            continue;
        }
        let served = || -> Outcome<_> {
            entry.available()?;
            let app = entry.build(&config)?;
            let server = app.serve(bind_local()?)?;
            Ok((app, server))
        };
        let server = match served() {
            Ok(s) => s,
            Err(e) => {
                row(e.mark(), e.note(entry.name), &mut notes);
                continue;
            }
        };
        let (_app, server) = server;
        let addr = server.addr();
        let mut cells = vec![entry.name.to_string()];
        let mut verdict = |rule: &str, result: anyhow::Result<()>, notes: &mut Vec<String>| {
            cells.push(match result {
                Ok(()) => "ok".to_owned(),
                Err(why) => {
                    notes.push(format!("FAIL {} {rule}: {why:#}", entry.name));
                    "FAIL".to_owned()
                }
            })
        };
        for rule in RULES {
            verdict(rule.name, rule.check(addr), &mut notes);
        }
        let advertised = h2c_rules::handshake(addr).map_or("–".to_owned(), |h| h.advertised());
        let http1 = h2c_rules::http1(addr);
        let mut stopped = None;
        let goaway = h2c_rules::goaway(addr, || stopped = Some(server.shutdown()));
        verdict(GOAWAY_RULE.0, goaway, &mut notes);
        if let Some(Err(e)) = stopped {
            notes.push(format!("{}: stopping its server: {e:#}", entry.name));
        }
        cells.extend([http1.to_owned(), advertised]);
        table.row(cells);
    }
    Ok(Conformance {
        table,
        bodies: Table::new([("framework", Align::Left)]),
        notes,
        protocol: Protocol::H2c,
    })
}

/// One server's row of the hostile-bodies table: each case's verdict, what it did with the
/// body over every limit (`over`), and whether it still answered `GET /` as the oracle's hello
/// after each (`ok`, else `DOWN`). A server that cannot serve `upload` gets `–` throughout and
/// its reason as a note; each verdict that is not a refusal (or the right body) gets a note with
/// what came back.
fn hostile_row(
    entry: &Entry,
    addr: SocketAddr,
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
        if let Err(why) = still_serving(addr) {
            serving = false;
            notes.push(format!("FAIL {name} after {}: {why}", case.name));
        }
    };
    for case in cases {
        let outcome = case.send(addr);
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
    let outcome = over.send(addr);
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

/// What `check --conformance` found: a row per server against the rules, a row per server
/// against the hostile bodies, a note per failure or skip.
struct Conformance {
    table: Table,
    bodies: Table,
    notes: Vec<String>,
    /// HTTP/1.1's rules and hostile bodies, or h2c's rules alone.
    protocol: Protocol,
}

/// The line before the rules' legend.
const RULES_HEAD: &str = "rules (a report, not a gate: docs/methodology/conformance.md says which failures change a server's numbers):";

/// The line before the hostile-bodies table (its notes are with the rules' notes).
const BODIES_HEAD: &str = "hostile bodies, each `POST /upload` on a new connection \
    (docs/methodology/bodies.md): a 4xx (its status) or `closed` refuses it; `read all`: a 200 \
    whose answer is the digest of the body the client sent; `WRONG`: a 200 for another body, \
    one the framework handed its handler though the client did not send it; `HANG`: no answer \
    and no close within 8 s. A report, not a gate: tests/testsuite/bodies.rs gates them, with \
    the wrong bodies docs/methodology/bodies.md records.";

/// The line before the h2c rules' legend.
const H2C_RULES_HEAD: &str = "h2c rules (a report, not a gate: docs/methodology/http2.md):";

/// Each column of the h2c table and what it checks.
fn h2c_legend() -> Vec<(&'static str, &'static str)> {
    use crate::oracle::h2c_rules::{GOAWAY_RULE, HTTP1_RULE, RULES};
    let mut legend: Vec<_> = RULES.iter().map(|r| (r.name, r.what)).collect();
    legend.extend([
        GOAWAY_RULE,
        HTTP1_RULE,
        (
            "advertised",
            "the server's SETTINGS_MAX_CONCURRENT_STREAMS and SETTINGS_INITIAL_WINDOW_SIZE \
             (`–`: not sent, so unlimited streams and a 65,535-byte window)",
        ),
    ]);
    legend
}

/// Each column of the hostile-bodies table and what it sends.
fn bodies_legend() -> Vec<(&'static str, &'static str)> {
    use crate::oracle::hostile::{cases, OVER_NAME, OVER_WHAT};
    let mut legend: Vec<_> = cases().iter().map(|c| (c.name, c.what)).collect();
    legend.push((OVER_NAME, OVER_WHAT));
    legend.push((
        "after",
        "`GET /` answered as the oracle's hello after each of these (`DOWN`: not)",
    ));
    legend
}

impl Conformance {
    /// The report for the terminal: the table, the notes, the rules' legend.
    fn terminal(&self) -> String {
        use crate::oracle::conformance::{DATE_MOVES, DATE_MOVES_WHAT, RULES};
        let mut out = self.table.terminal("");
        for n in &self.notes {
            out.push_str(&format!("{n}\n"));
        }
        if self.protocol == Protocol::H2c {
            out.push_str(&format!("{H2C_RULES_HEAD}\n"));
            for (name, what) in h2c_legend() {
                out.push_str(&format!("  {name:<11} {what}\n"));
            }
            return out;
        }
        out.push_str(&format!("{RULES_HEAD}\n"));
        for r in RULES {
            out.push_str(&format!("  {:<11} {}\n", r.name, r.what));
        }
        out.push_str(&format!("  {DATE_MOVES:<11} {DATE_MOVES_WHAT}\n"));
        out.push_str(&format!("\n{BODIES_HEAD}\n"));
        out.push_str(&self.bodies.terminal(""));
        for (name, what) in bodies_legend() {
            out.push_str(&format!("  {name:<11} {what}\n"));
        }
        out
    }

    /// The report as a stamped Markdown file: the commit and window, the table, the notes as a
    /// list, the rules' legend.
    fn markdown(&self, window: crate::provenance::Window) -> String {
        use crate::oracle::conformance::{DATE_MOVES, DATE_MOVES_WHAT, RULES};
        let command = match self.protocol {
            Protocol::Http1 => "framebench check --conformance",
            Protocol::H2c => "framebench check --conformance --protocol h2c",
        };
        let mut out = format!(
            "# {command}\n\n{}\n\nMachine: {}\n\n",
            crate::provenance::Provenance::header(window),
            crate::env::Environment::current()
        );
        out.push_str(&self.table.markdown());
        out.push('\n');
        for n in &self.notes {
            out.push_str(&format!("- {n}\n"));
        }
        if self.protocol == Protocol::H2c {
            out.push_str(&format!("\n{H2C_RULES_HEAD}\n\n"));
            for (name, what) in h2c_legend() {
                out.push_str(&format!("- `{name}`: {what}\n"));
            }
            return crate::generated::markdown(&out);
        }
        out.push_str(&format!("\n{RULES_HEAD}\n\n"));
        for r in RULES {
            out.push_str(&format!("- `{}`: {}\n", r.name, r.what));
        }
        out.push_str(&format!("- `{DATE_MOVES}`: {DATE_MOVES_WHAT}\n"));
        out.push_str(&format!("\n## Hostile bodies\n\n{BODIES_HEAD}\n\n"));
        out.push_str(&self.bodies.markdown());
        out.push('\n');
        for (name, what) in bodies_legend() {
            out.push_str(&format!("- `{name}`: {what}\n"));
        }
        crate::generated::markdown(&out)
    }
}
