//! `framebench check`: every framework × variant × scenario against the oracle, in-process and
//! over loopback, plus every traversal attempt. The benches and the driver call the same
//! functions before they measure, so nothing wrong is ever timed: [`in_process`] for a dispatch,
//! [`precheck`] over a socket.

use crate::cell::CellError;
use crate::table::{Align, Table};
use std::fmt;
use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use anyhow::Context as _;

use crate::framework::{App, Config, Entry};
use crate::http1::{self, Connection};
use crate::options::Options;
use crate::oracle::{self, Expected, Observed, SCENARIOS, TRAVERSALS};

/// How long any single loopback exchange may take before it counts as a failure: the bound on
/// connect, every read and every write of the checks and of the benches' client.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(5);

/// Where a request went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Through [`App::dispatch`], no socket.
    InProcess,
    /// Through a server on 127.0.0.1.
    Loopback,
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::InProcess => "in-process",
            Mode::Loopback => "loopback",
        })
    }
}

/// The result of one framework × mode × variant: one verdict per scenario, plus traversals.
#[derive(Debug, Clone)]
pub struct Row {
    /// Framework name.
    pub(crate) framework: &'static str,
    /// In-process or loopback.
    pub(crate) mode: Mode,
    /// The options used.
    pub(crate) options: Options,
    /// `(scenario, verdict)` in oracle order, then `("traversal", verdict)`.
    pub(crate) cells: Vec<(&'static str, Result<(), CellError>)>,
}

impl Row {
    /// True when every cell passed.
    pub(crate) fn passed(&self) -> bool {
        self.cells.iter().all(|(_, r)| r.is_ok())
    }
}

/// Dispatches `path` in-process.
pub fn in_process(app: &dyn App, path: &str) -> anyhow::Result<Observed> {
    let res = app.dispatch(oracle::request(path))?;
    Ok(Observed::from_response(&res))
}

/// Sends `GET target` byte for byte on a new connection (no client-side normalisation).
pub fn raw_get(addr: SocketAddr, target: &str) -> anyhow::Result<Observed> {
    let res = http1::exchange(
        addr,
        &http1::get_request(target, Connection::Close),
        TIMEOUT,
    )?;
    Ok(Observed::from_response(&res))
}

/// The size of one response that [`precheck`] read and found as the oracle expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Checked {
    /// Bytes of the whole response, head and body.
    pub(crate) len: usize,
    /// Bytes of its body.
    pub(crate) body_len: usize,
}

/// Connects to `addr`, sends `depth` requests for `expected`'s scenario in one write and checks
/// every answer against the oracle: what every loopback measurement does before it starts. With
/// `depth > 1` this is the pipelining check. Bounded by `timeout`.
pub(crate) fn precheck(
    addr: SocketAddr,
    expected: &Expected,
    depth: usize,
    timeout: Duration,
) -> anyhow::Result<Vec<Checked>> {
    // Each error is flattened to one line (`{e:#}` of a chain): the callers print it with `{e}`.
    let mut stream = http1::connect(addr, timeout).map_err(|e| anyhow::anyhow!("{e:#}"))?;
    precheck_on(&mut stream, expected, depth, timeout)
}

/// [`precheck`] on an open keep-alive connection, which stays in step for the next request:
/// exactly `depth` responses are read, and any byte after the last one is an error.
pub(crate) fn precheck_on(
    stream: &mut TcpStream,
    expected: &Expected,
    depth: usize,
    timeout: Duration,
) -> anyhow::Result<Vec<Checked>> {
    let depth = depth.max(1);
    let requests = http1::get_request(expected.scenario.path, Connection::KeepAlive).repeat(depth);
    stream
        .write_all(&requests)
        .map_err(|e| anyhow::anyhow!("writing: {e}"))?;
    read_checked(stream, expected, depth, Instant::now() + timeout)
}

/// Reads `depth` responses off `stream` and checks each against `expected`.
fn read_checked(
    stream: &mut TcpStream,
    expected: &Expected,
    depth: usize,
    deadline: Instant,
) -> anyhow::Result<Vec<Checked>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 64 * 1024];
    let mut checked = Vec::with_capacity(depth);
    while checked.len() < depth {
        match http1::parse_response(&buf, false).map_err(|e| anyhow::anyhow!("{e:#}"))? {
            Some((res, used)) => {
                expected
                    .check(&Observed::from_response(&res))
                    .map_err(|e| {
                        anyhow::anyhow!("response {} of {depth}: {e}", checked.len() + 1)
                    })?;
                checked.push(Checked {
                    len: used,
                    body_len: res.body().len(),
                });
                buf.drain(..used);
                continue;
            }
            None if Instant::now() > deadline => anyhow::bail!("timed out"),
            None => {}
        }
        let n = stream
            .read(&mut chunk)
            .map_err(|e| anyhow::anyhow!("reading: {e}"))?;
        if n == 0 {
            anyhow::bail!(
                "connection closed after {} of {depth} responses",
                checked.len()
            );
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    if !buf.is_empty() {
        anyhow::bail!("{} bytes after response {depth}", buf.len());
    }
    Ok(checked)
}

/// A reqwest client for loopback checks: no proxy, bounded by [`TIMEOUT`].
pub fn client() -> anyhow::Result<reqwest::blocking::Client> {
    Ok(reqwest::blocking::Client::builder()
        .timeout(TIMEOUT)
        .no_proxy()
        .build()?)
}

/// Sends `GET path` with reqwest (keep-alive, as a typical client).
pub fn reqwest_get(
    client: &reqwest::blocking::Client,
    addr: SocketAddr,
    path: &str,
) -> anyhow::Result<Observed> {
    let res = client
        .get(format!("http://{addr}{path}"))
        .send()
        .with_context(|| format!("GET {path}"))?;
    let status = res.status().as_u16();
    let content_type = res
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = res.bytes()?;
    Ok(Observed {
        status,
        content_type,
        body,
    })
}

/// Binds a listener on 127.0.0.1 with a free port.
pub fn bind_local() -> anyhow::Result<TcpListener> {
    crate::server::bind(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .context("cannot bind 127.0.0.1:0")
}

fn verdict(
    observed: anyhow::Result<Observed>,
    judge: impl Fn(&Observed) -> anyhow::Result<()>,
) -> Result<(), CellError> {
    match observed {
        Ok(got) => judge(&got).map_err(|e| CellError::Mismatch(format!("{e}"))),
        Err(e) => Err(CellError::io(&e)),
    }
}

/// Checks every scenario and traversal with `get`, which fetches one path.
fn check_all(
    config: &Config,
    get: impl Fn(&str) -> anyhow::Result<Observed>,
    get_exact: impl Fn(&str) -> anyhow::Result<Observed>,
) -> Vec<(&'static str, Result<(), CellError>)> {
    let mut cells = Vec::new();
    for s in SCENARIOS {
        // A scenario this config cannot serve (the redis one without a Redis) gets no cell:
        // the table shows "skip", and whoever set up the config said why.
        if s.skip_reason(config).is_some() {
            continue;
        }
        let r = match s.expected(&config.fixtures) {
            Ok(expected) => verdict(get(s.path), |got| expected.check(got)),
            Err(e) => Err(CellError::io(&e)),
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
        Err(CellError::Mismatch(failures.join("; ")))
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
            cells: vec![("build", Err(CellError::build(&e)))],
        };
        let app = match entry.build(&config) {
            Ok(app) => app,
            Err(e) => {
                rows.push(failed(Mode::InProcess, e));
                continue;
            }
        };
        if entry.in_process {
            let cells = check_all(&config, |p| in_process(&*app, p), |p| in_process(&*app, p));
            rows.push(Row {
                framework: entry.name,
                mode: Mode::InProcess,
                options,
                cells,
            });
        }
        if entry.loopback {
            match check_loopback(&*app, &config) {
                Ok(cells) => rows.push(Row {
                    framework: entry.name,
                    mode: Mode::Loopback,
                    options,
                    cells,
                }),
                Err(e) => rows.push(failed(Mode::Loopback, e)),
            }
        }
    }
    rows
}

fn check_loopback(
    app: &dyn App,
    config: &Config,
) -> anyhow::Result<Vec<(&'static str, Result<(), CellError>)>> {
    let server = app.serve(bind_local()?)?;
    let addr = server.addr();
    let client = client()?;
    let cells = check_all(
        config,
        |p| reqwest_get(&client, addr, p),
        |p| raw_get(addr, p),
    );
    drop(client);
    server.shutdown()?;
    Ok(cells)
}

/// Prints rows as a table, then every failure with its reason. Returns the number of failing
/// rows.
pub fn print_table(rows: &[Row]) -> usize {
    let header: Vec<&str> = SCENARIOS
        .iter()
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
    for row in rows {
        let mut cells = vec![
            row.framework.to_string(),
            row.mode.to_string(),
            row.options.label(),
        ];
        // A full row (it has the traversal cell) has one column per header entry, and "skip"
        // where a scenario has no cell; a failed build has its one cell.
        let full = row.cells.iter().any(|(n, _)| *n == "traversal");
        let columns: Vec<(&str, Option<&Result<(), CellError>>)> = if full {
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
                Some(Err(e)) => {
                    // A build failure names itself (`build: …`); a scenario's cell is named.
                    let cell = match e {
                        CellError::Build(_) => String::new(),
                        _ => format!(" {name}:"),
                    };
                    reasons.push(format!(
                        "{} {} {}{cell} {e}",
                        row.framework,
                        row.mode,
                        row.options.label()
                    ));
                    "FAIL".into()
                }
            });
        }
        table.row(cells);
        if !row.passed() {
            failing += 1;
        }
    }
    print!("{}", table.terminal(""));
    for r in &reasons {
        println!("FAIL {r}");
    }
    failing
}
