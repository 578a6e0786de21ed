//! `framebench check`: every framework × variant × scenario against the oracle, in-process and
//! over loopback, plus every traversal attempt. The benches and the driver call the same
//! functions before they measure, so nothing wrong is ever timed: [`in_process`] for a dispatch,
//! [`Protocol::precheck`] over a socket. The waiting scenarios ([`oracle::WAITING`]) are checked
//! over loopback only, where an answer that comes before the wait it was asked for fails.

use std::fmt;
use std::net::TcpListener;
use std::time::Instant;

use anyhow::Context as _;

use crate::framework::{App, Config, Entry};
use crate::options::{Options, Protocol};
use crate::oracle::{self, Instance, Observed, TRAVERSALS};
use crate::outcome::{NotOk, Outcome};
use crate::protocol::TIMEOUT;
use crate::table::{Align, Table};

/// Where a request went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Through [`App::dispatch`], no socket.
    InProcess,
    /// Through a server on 127.0.0.1, over the protocol named (`--protocol`).
    Loopback(Protocol),
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mode::InProcess => f.write_str("in-process"),
            Mode::Loopback(p) if p.is_default() => f.write_str("loopback"),
            Mode::Loopback(p) => write!(f, "loopback {p}"),
        }
    }
}

/// The result of one framework × mode × variant: one verdict per scenario, plus traversals.
#[derive(Debug)]
pub struct Row {
    /// Framework name.
    pub(crate) framework: &'static str,
    /// In-process or loopback.
    pub(crate) mode: Mode,
    /// The options used.
    pub(crate) options: Options,
    /// `(scenario, verdict)` in oracle order ([`oracle::all`]), then `("traversal", verdict)`.
    pub(crate) cells: Vec<(&'static str, Outcome)>,
}

impl Row {
    /// True when every cell passed, or says `–` (a scenario the framework cannot serve through
    /// its own API).
    pub(crate) fn passed(&self) -> bool {
        self.cells
            .iter()
            .all(|(_, r)| r.as_ref().err().is_none_or(|e| !e.is_failure()))
    }
}

/// Dispatches `path` in-process.
pub fn in_process(app: &dyn App, path: &str) -> anyhow::Result<Observed> {
    let res = app.dispatch(oracle::request(path))?;
    Ok(Observed::from_response(&res))
}

/// Binds a listener on 127.0.0.1 with a free port.
pub fn bind_local() -> anyhow::Result<TcpListener> {
    crate::server::bind(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .context("cannot bind 127.0.0.1:0")
}

fn verdict(
    observed: anyhow::Result<Observed>,
    judge: impl Fn(&Observed) -> anyhow::Result<()>,
) -> Outcome {
    Ok(judge(&observed?)?)
}

/// How many requests of a computed scenario `check` sends: distinct operands or bodies, so that
/// a fixed answer fails.
const CHECKED_INSTANCES: usize = 4;

/// Checks every scenario with `send`, which sends one request, and every traversal with
/// `get_exact`, which fetches one path byte for byte. A scenario `entry` cannot serve through its
/// own API (or one without a cell in `mode`: a waiting one in-process) gets a `–` cell with the
/// reason.
fn check_all(
    entry: &Entry,
    mode: Mode,
    config: &Config,
    send: impl Fn(&Instance) -> anyhow::Result<Observed>,
    get_exact: impl Fn(&str) -> anyhow::Result<Observed>,
) -> Vec<(&'static str, Outcome)> {
    let mut cells = Vec::new();
    for s in oracle::all().filter(|s| config.options.protocol.carries(s)) {
        // A scenario this config cannot serve (the redis one without a Redis) gets no cell:
        // the table shows "skip", and whoever set up the config said why.
        if s.skip_reason(config).is_some() {
            continue;
        }
        if let Err(e) = crate::cell::supported(entry, s, mode == Mode::InProcess) {
            cells.push((s.name, Err(e)));
            continue;
        }
        let r = match s.expected(&config.fixtures) {
            Ok(expected) => s
                .instances(CHECKED_INSTANCES)
                .iter()
                .try_for_each(|i| verdict(send(i), |got| expected.check_instance(i, got))),
            Err(e) => Err(e.into()),
        };
        cells.push((s.name, r));
    }
    let failures: Vec<String> = TRAVERSALS
        .iter()
        .filter_map(|path| {
            verdict(get_exact(path), oracle::check_denied)
                .err()
                .map(|e| format!("{path}: {e}"))
        })
        .collect();
    let traversal = if failures.is_empty() {
        Ok(())
    } else {
        Err(anyhow::anyhow!(failures.join("; ")).into())
    };
    cells.push(("traversal", traversal));
    cells
}

/// Checks one framework in every mode it supports, for each of `variants`.
/// `base` gives the fixtures and the Redis; each variant its options.
pub fn check_framework(entry: &Entry, base: &Config, variants: &[Options]) -> Vec<Row> {
    let mut rows = Vec::new();
    // A framework this machine cannot run (the Go peers without `go`) is skipped; `available`
    // says why, once per run.
    if entry.available().is_err() {
        return rows;
    }
    for &options in variants {
        let config = base.with(options);
        let failed = |mode, e: anyhow::Error| Row {
            framework: entry.name,
            mode,
            options,
            cells: vec![("build", Err(e.into()))],
        };
        let app = match entry.build(&config) {
            Ok(app) => app,
            Err(e) => {
                rows.push(failed(Mode::InProcess, e));
                continue;
            }
        };
        // In-process dispatch has no transport: under TLS only the loopback rows run; nor an
        // upgraded connection: under WebSocket too.
        if entry.in_process
            && options.transport.is_default()
            && options.protocol.checked_in_process()
        {
            let cells = check_all(
                entry,
                Mode::InProcess,
                &config,
                |i| Ok(Observed::from_response(&app.dispatch(i.request())?)),
                |p| in_process(&*app, p),
            );
            rows.push(Row {
                framework: entry.name,
                mode: Mode::InProcess,
                // In-process dispatch has no wire: its row is labelled without the protocol,
                // which the same check under `--protocol h2c` does not change.
                options: Options {
                    protocol: Protocol::default(),
                    ..options
                },
                cells,
            });
        }
        let mode = Mode::Loopback(options.protocol);
        if let Some((what, why)) = entry.lacks(&options) {
            // A framework that does not serve the protocol: one `–` cell with the reason, not a
            // failure.
            rows.push(Row {
                framework: entry.name,
                mode,
                options,
                cells: vec![(what, Err(NotOk::unsupported(why)))],
            });
        } else if entry.loopback {
            match check_loopback(entry, &*app, &config) {
                Ok(cells) => rows.push(Row {
                    framework: entry.name,
                    mode,
                    options,
                    cells,
                }),
                Err(e) => rows.push(failed(mode, e)),
            }
        }
    }
    rows
}

fn check_loopback(
    entry: &Entry,
    app: &dyn App,
    config: &Config,
) -> anyhow::Result<Vec<(&'static str, Outcome)>> {
    let server = app.serve(bind_local()?)?;
    let protocol = config.options.protocol;
    // One client for every check: each request a connection of its own over HTTP/1.1, a stream
    // of its own over h2c.
    let client = std::cell::RefCell::new(protocol.checker(
        config.options.transport,
        server.addr(),
        TIMEOUT,
    )?);
    let cells = check_all(
        entry,
        Mode::Loopback(protocol),
        config,
        |i| {
            // From the request's send to its whole answer: a `delay` answer that comes sooner
            // than the wait it asked for did not wait.
            let sent = Instant::now();
            let got = client.borrow_mut().observe(i)?;
            i.check_not_early(sent.elapsed())?;
            Ok(got)
        },
        |p| client.borrow_mut().get(p),
    );
    drop(client);
    server.shutdown()?;
    Ok(cells)
}

/// Prints rows as a table, then every failure with its reason. Returns the number of failing
/// rows.
pub fn print_table(rows: &[Row]) -> usize {
    // Every row of a run is under one protocol, which carries its own scenarios.
    let protocol = rows
        .iter()
        .find(|r| matches!(r.mode, Mode::Loopback(_)))
        .map_or_else(Protocol::default, |r| r.options.protocol);
    let header: Vec<&str> = oracle::all()
        .filter(|s| protocol.carries(s))
        .map(|s| s.name)
        .chain(["traversal"])
        .collect();
    let mut table = Table::new(
        [
            ("framework", Align::Left),
            ("mode", Align::Left),
            ("variant", Align::Left),
        ]
        .into_iter()
        .chain(header.iter().map(|h| (*h, Align::Left))),
    );
    let mut failing = 0;
    let mut reasons = Vec::new();
    let mut unsupported = Vec::new();
    for row in rows {
        let mut cells = vec![
            row.framework.to_string(),
            row.mode.to_string(),
            row.options.label(),
        ];
        // A full row (it has the traversal cell) has one column per header entry, and "skip"
        // where a scenario has no cell; a failed build has its one cell.
        let full = row.cells.iter().any(|(n, _)| *n == "traversal");
        let columns: Vec<(&str, Option<&Outcome>)> = if full {
            header
                .iter()
                .map(|h| (*h, row.cells.iter().find(|(n, _)| n == h).map(|(_, r)| r)))
                .collect()
        } else {
            row.cells.iter().map(|(n, r)| (*n, Some(r))).collect()
        };
        for (name, r) in columns {
            cells.push(match r {
                None => "skip".into(),
                Some(Ok(())) => "ok".into(),
                Some(Err(e)) if !e.is_failure() => {
                    let line = e.note(format_args!("{} {name}", row.framework));
                    if !unsupported.contains(&line) {
                        unsupported.push(line);
                    }
                    e.mark().into()
                }
                // A failed build has the one cell `build`.
                Some(Err(e)) => {
                    reasons.push(e.note(format_args!(
                        "{} {} {} {name}",
                        row.framework,
                        row.mode,
                        row.options.label()
                    )));
                    e.mark().into()
                }
            });
        }
        table.row(cells);
        if !row.passed() {
            failing += 1;
        }
    }
    print!("{}", table.terminal(""));
    for line in &unsupported {
        println!("{line}");
    }
    for r in &reasons {
        println!("{r}");
    }
    failing
}
