//! `framebench check`: every framework × variant × scenario against the oracle, in-process and
//! over loopback, plus every traversal attempt. The benches and the driver call the same
//! functions before they measure, so nothing wrong is ever timed: [`in_process`] for a dispatch,
//! [`precheck`] over a socket.

use crate::table::{Align, Table};
use std::fmt;
use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use anyhow::Context as _;

use crate::framework::{App, Config, Entry, H2c};
use crate::http1::{self, Connection};
use crate::options::{Options, Protocol};
use crate::oracle::{self, Expected, Instance, Observed, SCENARIOS, TRAVERSALS};
use crate::outcome::{NotOk, Outcome};

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
    /// Through a server on 127.0.0.1, over h2c (`--protocol h2c`).
    LoopbackH2c,
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::InProcess => "in-process",
            Mode::Loopback => "loopback",
            Mode::LoopbackH2c => "loopback h2c",
        })
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
    /// `(scenario, verdict)` in oracle order, then `("traversal", verdict)`.
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

/// Sends `GET target` byte for byte on a new connection (no client-side normalisation).
pub fn raw_get(addr: SocketAddr, target: &str) -> anyhow::Result<Observed> {
    send_bytes(addr, &http1::get_request(target, Connection::Close))
}

/// Sends `request` on a new connection and reads the one answer.
fn send_bytes(addr: SocketAddr, request: &[u8]) -> anyhow::Result<Observed> {
    Ok(Observed::from_response(&http1::exchange(
        addr, request, TIMEOUT,
    )?))
}

/// The size of one response that [`precheck`] read and found as the oracle expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Checked {
    /// Bytes of the whole response, head and body.
    pub(crate) len: usize,
    /// Bytes of its body.
    pub(crate) body_len: usize,
}

/// Connects to `addr`, sends `depth` requests of `expected`'s scenario in one write, taking
/// `requests` in turn, and checks every answer against the oracle: what every loopback
/// measurement does before it starts. With `depth > 1` this is the pipelining check (with
/// bodies, for a body scenario). Bounded by `timeout`.
pub(crate) fn precheck(
    addr: SocketAddr,
    expected: &Expected,
    requests: &[Instance],
    depth: usize,
    timeout: Duration,
) -> anyhow::Result<Vec<Checked>> {
    // Each error is flattened to one line (`{e:#}` of a chain): the callers print it with `{e}`.
    let mut stream = http1::connect(addr, timeout).map_err(|e| anyhow::anyhow!("{e:#}"))?;
    precheck_on(&mut stream, expected, requests, depth, timeout)
}

/// [`precheck`] on an open keep-alive connection, which stays in step for the next request:
/// exactly `depth` responses are read, and any byte after the last one is an error.
pub(crate) fn precheck_on(
    stream: &mut TcpStream,
    expected: &Expected,
    requests: &[Instance],
    depth: usize,
    timeout: Duration,
) -> anyhow::Result<Vec<Checked>> {
    anyhow::ensure!(!requests.is_empty(), "no request to send");
    let sent: Vec<&Instance> = requests.iter().cycle().take(depth.max(1)).collect();
    let mut bytes = Vec::new();
    for instance in &sent {
        http1::encode_instance(instance, Connection::KeepAlive, &mut bytes);
    }
    stream
        .write_all(&bytes)
        .map_err(|e| anyhow::anyhow!("writing: {e}"))?;
    read_checked(stream, expected, &sent, Instant::now() + timeout)
}

/// Reads one response per request of `sent` off `stream` and checks each against `expected`
/// and its own request.
fn read_checked(
    stream: &mut TcpStream,
    expected: &Expected,
    sent: &[&Instance],
    deadline: Instant,
) -> anyhow::Result<Vec<Checked>> {
    let depth = sent.len();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 64 * 1024];
    let mut checked = Vec::with_capacity(depth);
    while checked.len() < depth {
        match http1::parse_response(&buf, false).map_err(|e| anyhow::anyhow!("{e:#}"))? {
            Some((res, used)) => {
                expected
                    .check_instance(sent[checked.len()], &Observed::from_response(&res))
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

/// How many of a cell's requests the check before an h2c load sends, one stream each on one
/// connection: distinct operands or bodies for a computed scenario.
const H2C_PRECHECKED: usize = 4;

/// [`precheck`] over h2c: connects with prior knowledge and checks the answers to the first
/// [`H2C_PRECHECKED`] of `requests`, one stream each, against the oracle. Bounded by `timeout`
/// per exchange.
pub(crate) fn precheck_h2c(
    addr: SocketAddr,
    expected: &Expected,
    requests: &[Instance],
    timeout: Duration,
) -> anyhow::Result<()> {
    anyhow::ensure!(!requests.is_empty(), "no request to send");
    let mut client =
        crate::h2c::Client::connect(addr, timeout).map_err(|e| anyhow::anyhow!("{e:#}"))?;
    for (i, instance) in requests.iter().take(H2C_PRECHECKED).enumerate() {
        let got = client
            .observe(instance)
            .map_err(|e| anyhow::anyhow!("stream {}: {e:#}", 2 * i + 1))?;
        expected
            .check_instance(instance, &got)
            .map_err(|e| anyhow::anyhow!("stream {}: {e}", 2 * i + 1))?;
    }
    Ok(())
}

/// A reqwest client for loopback checks: no proxy, bounded by [`TIMEOUT`].
pub fn client() -> anyhow::Result<reqwest::blocking::Client> {
    Ok(reqwest::blocking::Client::builder()
        .timeout(TIMEOUT)
        .no_proxy()
        .build()?)
}

/// Sends `instance` with reqwest (keep-alive, as a typical client). reqwest decides how a body
/// goes out (always `Content-Length` for a body it holds whole), so a chunked instance is sent
/// by [`wire_send`] instead.
pub fn reqwest_send(
    client: &reqwest::blocking::Client,
    addr: SocketAddr,
    instance: &Instance,
) -> anyhow::Result<Observed> {
    anyhow::ensure!(
        !instance.chunked,
        "reqwest chooses its own framing: send a chunked body with wire_send"
    );
    let method = reqwest::Method::from_bytes(instance.method.as_str().as_bytes())?;
    let mut request = client.request(method, format!("http://{addr}{}", instance.target));
    if let Some(content_type) = instance.content_type {
        request = request.header(reqwest::header::CONTENT_TYPE, content_type);
    }
    if instance.method == oracle::Method::Post {
        request = request.body(instance.body.clone());
    }
    let res = request
        .send()
        .with_context(|| format!("{} {}", instance.method.as_str(), instance.target))?;
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

/// Sends `instance` byte for byte as [`http1::encode_instance`] writes it, on a new connection
/// that asks to close.
pub fn wire_send(addr: SocketAddr, instance: &Instance) -> anyhow::Result<Observed> {
    send_bytes(addr, &http1::instance_request(instance, Connection::Close))
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
/// own API (or one without a cell in `mode`) gets a `–` cell with the reason.
fn check_all(
    entry: &Entry,
    mode: Mode,
    config: &Config,
    send: impl Fn(&Instance) -> anyhow::Result<Observed>,
    get_exact: impl Fn(&str) -> anyhow::Result<Observed>,
) -> Vec<(&'static str, Outcome)> {
    let mut cells = Vec::new();
    for s in SCENARIOS {
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
        if entry.in_process {
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
                    protocol: Protocol::Http1,
                    ..options
                },
                cells,
            });
        }
        let mode = match options.protocol {
            Protocol::Http1 => Mode::Loopback,
            Protocol::H2c => Mode::LoopbackH2c,
        };
        if let (Mode::LoopbackH2c, H2c::No(why)) = (mode, entry.h2c) {
            // A framework that does not serve h2c: one `–` cell with the reason, not a failure.
            rows.push(Row {
                framework: entry.name,
                mode,
                options,
                cells: vec![("h2c", Err(NotOk::unsupported(why)))],
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
    let addr = server.addr();
    if config.options.protocol == Protocol::H2c {
        // One h2c connection for every check, each request a stream of its own.
        let h2 = std::cell::RefCell::new(crate::h2c::Client::connect(addr, TIMEOUT)?);
        let cells = check_all(
            entry,
            Mode::LoopbackH2c,
            config,
            |i| h2.borrow_mut().observe(i),
            |p| h2.borrow_mut().get(p),
        );
        drop(h2);
        server.shutdown()?;
        return Ok(cells);
    }
    let client = client()?;
    let cells = check_all(
        entry,
        Mode::Loopback,
        config,
        |i| match i.chunked {
            true => wire_send(addr, i),
            false => reqwest_send(&client, addr, i),
        },
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
