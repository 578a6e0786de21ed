//! What a server holds while it waits: memory per idle keep-alive connection, and what a
//! connection still holds after a large body (`framebench memory`).
//!
//! Each [`Point`] is one fresh `framebench serve` process, read at rest and then under one
//! [`Load`]: N connections, each after one answer checked against the oracle, left open and
//! idle. A reading is the server's live heap, from the counting allocator of the serve process
//! (`serve --heap`: the client is this process, so nothing of it is counted), and its RSS and
//! PSS from `/proc/PID/smaps_rollup`. The difference over N is what one connection holds.
//!
//! The heap is read once it stops moving ([`settle`]) and only while every connection is still
//! open: every server closes a connection idle for [`crate::options::KEEP_ALIVE`], and a
//! reading after that would be of fewer connections than it names ([`still_open`]).

pub(crate) mod report;

use std::ffi::OsStr;
use std::io::Read as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context as _};
use serde::{Deserialize, Serialize};

use crate::child::ServerProcess;
use crate::framework::Entry;
use crate::options::{Options, Transport};
use crate::oracle::{Expected, Instance};
use crate::outcome::{NotOk, Outcome};
use crate::proc::Resident;
use crate::serve::Heap;
use crate::transport::{Conn, Peer};

/// What the connections of one [`Point`] carry before they idle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub(crate) enum Load {
    /// One `hello` answered on each.
    Idle {
        /// Connections.
        connections: usize,
    },
    /// One `upload` of `body` bytes answered on each: does the buffer that took it shrink?
    Body {
        /// Connections.
        connections: usize,
        /// Bytes of each body.
        body: usize,
    },
}

impl Load {
    /// How many connections it opens.
    pub(crate) fn connections(self) -> usize {
        match self {
            Load::Idle { connections } | Load::Body { connections, .. } => connections,
        }
    }

    /// `c1000`, `c100 body=16MiB`.
    pub(crate) fn label(self) -> String {
        match self {
            Load::Idle { connections } => format!("c{connections}"),
            Load::Body { connections, body } => format!("c{connections} body={}", size(body)),
        }
    }
}

/// `1MiB`, `64KiB`, `1000B`: a body size as `--bodies` takes it.
pub(crate) fn size(bytes: usize) -> String {
    if bytes.is_multiple_of(1 << 20) {
        format!("{}MiB", bytes >> 20)
    } else if bytes.is_multiple_of(1 << 10) {
        format!("{}KiB", bytes >> 10)
    } else {
        format!("{bytes}B")
    }
}

/// One reading of a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Reading {
    /// Its live heap, when the server runs in the serve process itself (not a Go peer or
    /// may-minihttp's child, whose allocators framebench does not see).
    pub(crate) heap: Option<Heap>,
    /// The kernel's figures for the processes that serve.
    pub(crate) resident: Resident,
}

/// One fresh server, read at rest and under a load.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Point {
    /// The load.
    pub(crate) load: Load,
    /// At rest, before the first connection.
    pub(crate) base: Reading,
    /// With every connection of the load open and idle.
    pub(crate) loaded: Reading,
    /// Seconds from the first connection to the loaded reading: below the servers' keep-alive
    /// timeout, or the reading would be refused.
    pub(crate) took_s: f64,
}

impl Point {
    /// Heap bytes per connection: exact for one build when the runs agree.
    pub(crate) fn heap_per_conn(&self) -> Option<f64> {
        let (b, l) = (self.base.heap?, self.loaded.heap?);
        Some((l.live_bytes - b.live_bytes) as f64 / self.load.connections() as f64)
    }

    /// RSS bytes per connection, the kernel's figure.
    pub(crate) fn rss_per_conn(&self) -> f64 {
        (self.loaded.resident.rss as f64 - self.base.resident.rss as f64)
            / self.load.connections() as f64
    }

    /// PSS bytes per connection, the kernel's figure.
    pub(crate) fn pss_per_conn(&self) -> f64 {
        (self.loaded.resident.pss as f64 - self.base.resident.pss as f64)
            / self.load.connections() as f64
    }
}

/// How every point is measured.
pub(crate) struct Settings {
    /// The framebench binary that serves.
    pub(crate) exe: PathBuf,
    /// The server's options (threads: see [`options_for`]).
    pub(crate) options: Options,
    /// The CPUs the server is pinned to (empty: anywhere).
    pub(crate) server_cpus: Vec<usize>,
    /// Where the servers write their heap readings.
    pub(crate) scratch: PathBuf,
}

/// How long a connect, a request or a reading may take.
const TIMEOUT: Duration = Duration::from_secs(10);
/// The pause between two heap readings that must agree before one is taken.
const SETTLE_STEP: Duration = Duration::from_millis(100);
/// How many readings [`settle`] takes at most.
const SETTLE_TRIES: usize = 30;

/// The most threads `serve --threads` starts.
const MAX_SERVER_THREADS: usize = 1024;

/// The options a framework's server runs with at `connections`: the given ones, except that a
/// server with a thread per connection (hyper 0.10's pool) gets as many threads as
/// connections, as the quick compare gives it; its threads then start before the base reading.
/// Not run when that is more threads than `serve` starts: its idle connections past the pool
/// would wait unserved, and the reading would be of fewer connections than it names.
pub(crate) fn options_for(entry: &Entry, options: Options, connections: usize) -> Outcome<Options> {
    if !entry.thread_per_connection {
        return Ok(options);
    }
    if connections > MAX_SERVER_THREADS {
        return Err(NotOk::unsupported(format!(
            "a thread per connection: {connections} idle connections need {connections} \
             threads, and `serve` starts at most {MAX_SERVER_THREADS}"
        )));
    }
    Ok(Options {
        threads: options.threads.max(connections),
        ..options
    })
}

/// Measures `load` on a fresh server of `entry`: not run when the framework cannot take the
/// load's request (a body over its limit), failed when anything else goes wrong.
pub(crate) fn measure(entry: &Entry, load: Load, settings: &Settings) -> Outcome<Point> {
    let options = options_for(entry, settings.options, load.connections())?;
    let heap_file =
        settings
            .scratch
            .join(format!("{}-{}.heap.json", entry.name, std::process::id()));
    let mut server = ServerProcess::start_with(
        &settings.exe,
        entry.name,
        options,
        &settings.server_cpus,
        &[OsStr::new("--heap"), heap_file.as_os_str()],
    )
    .map_err(NotOk::Failed)?;
    let reader = Reader::new(&server, heap_file);
    let base = reader.settled().map_err(NotOk::Failed)?;
    let start = Instant::now();
    let mut held =
        open(server.addr(), load, options.transport).map_err(|e| match server.exited() {
            Some(how) => NotOk::Failed(anyhow!(
                "the server exited ({how}): {}",
                server.stderr_text()
            )),
            None => e,
        })?;
    let loaded = reader.settled().map_err(NotOk::Failed)?;
    let took_s = start.elapsed().as_secs_f64();
    still_open(&mut held).map_err(|e| {
        NotOk::Failed(e.context(format!(
            "{:.1} s after the first connection (the servers close a connection idle for {} s)",
            took_s,
            crate::options::KEEP_ALIVE.as_secs()
        )))
    })?;
    if let Some(how) = server.exited() {
        return Err(NotOk::Failed(anyhow!(
            "the server exited ({how}): {}",
            server.stderr_text()
        )));
    }
    drop(held);
    server.stop();
    Ok(Point {
        load,
        base,
        loaded,
        took_s,
    })
}

/// Reads one server: its heap through `serve --heap`, and the kernel's figures for the
/// processes that serve.
struct Reader {
    pid: u32,
    heap_file: PathBuf,
}

impl Reader {
    fn new(server: &ServerProcess, heap_file: PathBuf) -> Reader {
        Reader {
            pid: server.pid(),
            heap_file,
        }
    }

    /// One reading.
    fn read(&self) -> anyhow::Result<Reading> {
        let (pids, in_serve) = crate::proc::serving(self.pid);
        let resident = crate::proc::resident(&pids)
            .ok_or_else(|| anyhow!("cannot read /proc/{}/smaps_rollup", pids[0]))?;
        let heap = in_serve.then(|| self.heap()).transpose()?;
        Ok(Reading { heap, resident })
    }

    /// The live heap now: SIGUSR1, then the file the server writes.
    fn heap(&self) -> anyhow::Result<Heap> {
        let _ = std::fs::remove_file(&self.heap_file);
        let pid = i32::try_from(self.pid).context("pid")?;
        // SAFETY: kill only sends a signal to our own child.
        if unsafe { libc::kill(pid, libc::SIGUSR1) } != 0 {
            anyhow::bail!("cannot signal the server (pid {pid})");
        }
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Ok(heap) = Heap::read(&self.heap_file) {
                return Ok(heap);
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "the server wrote no heap reading within {} s",
                TIMEOUT.as_secs()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// A reading once two in a row agree ([`settle`]).
    fn settled(&self) -> anyhow::Result<Reading> {
        settle(|| self.read())
    }
}

/// Reads until two readings [`SETTLE_STEP`] apart agree: the heap to the byte where there is
/// one, else RSS to the page. Gives the last one after [`SETTLE_TRIES`]; a server whose figure
/// keeps moving then shows it in the spread of its runs.
fn settle(mut read: impl FnMut() -> anyhow::Result<Reading>) -> anyhow::Result<Reading> {
    let mut last = read()?;
    for _ in 0..SETTLE_TRIES {
        std::thread::sleep(SETTLE_STEP);
        let now = read()?;
        let same = match (last.heap, now.heap) {
            (Some(a), Some(b)) => a == b,
            _ => last.resident.rss == now.resident.rss,
        };
        last = now;
        if same {
            break;
        }
    }
    Ok(last)
}

/// Opens the load's connections one after another over `transport`, each sending its request
/// and checking the answer against the oracle before the next opens: no connection waits for
/// its request longer than one exchange, whatever the body (a server closes a connection that
/// waits for its first request as long as one left idle). Over TLS each makes a full handshake.
fn open(addr: SocketAddr, load: Load, transport: Transport) -> Outcome<Vec<Conn>> {
    let (expected, instance) = request(load).map_err(NotOk::Failed)?;
    let mut held = Vec::with_capacity(load.connections());
    for i in 0..load.connections() {
        let mut stream = Conn::connect(Peer { addr, transport }, TIMEOUT)
            .map_err(|e| NotOk::Failed(e.context(format!("connection {}", i + 1))))?;
        crate::protocol::http1::precheck_on(
            &mut stream,
            &expected,
            std::slice::from_ref(&instance),
            1,
            TIMEOUT,
        )
        .map_err(|e| refused(load, i, e, answered(&mut stream)))?;
        held.push(stream);
    }
    Ok(held)
}

/// The status of what the server sent before it stopped reading, if it sent one (a 413 before
/// it closes the connection on a body over its limit).
fn answered(stream: &mut Conn) -> Option<u16> {
    stream
        .tcp()
        .set_read_timeout(Some(Duration::from_secs(1)))
        .ok()?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while let Ok(n @ 1..) = stream.read(&mut chunk) {
        buf.extend_from_slice(&chunk[..n]);
        if let Ok(Some((res, _))) = crate::protocol::http1::parse_response(&buf, false) {
            return Some(res.status().as_u16());
        }
    }
    let (res, _) = crate::protocol::http1::parse_response(&buf, true).ok()??;
    Some(res.status().as_u16())
}

/// The scenario and request a load sends on each connection.
fn request(load: Load) -> anyhow::Result<(Expected, Instance)> {
    let fixtures = crate::fixtures::Fixtures::load_default()?;
    let (name, body) = match load {
        Load::Idle { .. } => ("hello", 0),
        Load::Body { body, .. } => ("upload", body),
    };
    let scenario = crate::select::scenario(name)?;
    Ok((scenario.expected(&fixtures)?, scenario.instance(0, body)))
}

/// What a failed request on connection `i` means, `status` being what the server answered
/// before it closed, if anything. A large body the framework answers with a
/// 4xx, or stops reading and closes the connection on, is not run: it does not accept that
/// body (its limit). Anything else failed; so does a server that died ([`measure`] looks).
fn refused(load: Load, i: usize, e: anyhow::Error, status: Option<u16>) -> NotOk {
    let text = format!("{e:#}");
    match load {
        Load::Body { body, .. } if text.starts_with("response 1 of 1: status 4") => {
            NotOk::unsupported(format!(
                "refuses a {} body ({})",
                size(body),
                text.trim_start_matches("response 1 of 1: ")
            ))
        }
        Load::Body { body, .. } if text.starts_with("writing:") => NotOk::unsupported(format!(
            "closes the connection before taking a {} body ({}{})",
            size(body),
            status.map_or_else(String::new, |s| format!("status {s}, then ")),
            text.trim_start_matches("writing: ")
        )),
        _ => NotOk::Failed(e.context(format!("connection {} of {}", i + 1, load.connections()))),
    }
}

/// Fails when the server has closed any of `held`: a reading taken then is of fewer
/// connections than it names.
fn still_open(held: &mut [Conn]) -> anyhow::Result<()> {
    let mut closed = 0;
    for stream in held.iter_mut() {
        if stream.closed()? {
            closed += 1;
        }
    }
    anyhow::ensure!(
        closed == 0,
        "the server closed {closed} of {} idle connections before they were read",
        held.len()
    );
    Ok(())
}

/// Where a command's servers write their heap readings: a folder of its own under the system's
/// temporary folder, removed when dropped.
pub(crate) fn scratch() -> anyhow::Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix("framebench-memory-")
        .tempdir()
        .context("cannot make a temporary folder for the heap readings")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(heap: Option<i64>, rss: u64) -> Reading {
        Reading {
            heap: heap.map(|b| Heap {
                live_bytes: b,
                live_blocks: 0,
            }),
            resident: Resident { rss, pss: rss / 2 },
        }
    }

    #[test]
    fn per_connection_is_the_difference_over_the_connections() {
        let p = Point {
            load: Load::Idle { connections: 1000 },
            base: reading(Some(10_000), 4_096_000),
            loaded: reading(Some(4_106_000), 8_192_000),
            took_s: 0.1,
        };
        assert_eq!(p.heap_per_conn(), Some(4_096.0));
        assert_eq!(p.rss_per_conn(), 4_096.0);
        assert_eq!(p.pss_per_conn(), 2_048.0);
        let go = Point {
            base: reading(None, 0),
            ..p
        };
        assert_eq!(go.heap_per_conn(), None);
    }

    #[test]
    fn settle_waits_for_two_equal_readings() {
        let mut heaps = [100, 200, 300, 300, 400].into_iter();
        let got = settle(|| Ok(reading(heaps.next(), 0))).unwrap();
        assert_eq!(got.heap.unwrap().live_bytes, 300);
    }

    #[test]
    fn a_4xx_to_a_body_is_not_run_and_anything_else_fails() {
        let body = Load::Body {
            connections: 100,
            body: 16 << 20,
        };
        let e = anyhow!("response 1 of 1: status 413 (want 200)");
        assert!(matches!(refused(body, 0, e, None), NotOk::NotRun(_)));
        let e = anyhow!("writing: Broken pipe (os error 32)");
        assert!(matches!(refused(body, 0, e, None), NotOk::NotRun(_)));
        let e = anyhow!("reading: connection reset");
        assert!(refused(body, 3, e, None).is_failure());
        let e = anyhow!("response 1 of 1: status 413 (want 200)");
        assert!(refused(Load::Idle { connections: 1 }, 0, e, None).is_failure());
    }
}
