//! `framebench load`: one target (a framework served by a child process, or a URL) under the
//! driver; and the options, targets and output that `compare` shares with it.

use anyhow::Context;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::chart::load_lines;
use crate::driver::output::Report;
use crate::driver::{run_plan, LoadParams, Plan, Target};
use crate::error::usage;
use crate::fixtures::Fixtures;
use crate::interrupt::interrupted;
use crate::options::{Io, Logging, Options, Protocol, Transport};
use crate::pinning::{self, Pinning};
use crate::protocol::Shape;
use crate::units::parse_duration;

/// A parsed `--server-cpus` / `--client-cpus` list.
#[derive(Debug, Clone)]
pub(crate) struct CpuList(pub(crate) Vec<usize>);

fn parse_cpus(text: &str) -> Result<CpuList, String> {
    pinning::parse_cpus(text).map(CpuList)
}

fn parse_rate(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(r) if r > 0.0 && r.is_finite() => Ok(r),
        _ => Err(format!("bad rate {text:?} (want requests per second > 0)")),
    }
}

/// Options shared by `load` and `compare`.
#[derive(clap::Args, Debug)]
pub(crate) struct LoadOpts {
    /// Connection counts, comma-separated.
    #[arg(short = 'c', long = "connections", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub(crate) connections: Option<Vec<u32>>,
    /// Recorded time per cell (e.g. 10s, 500ms); with --requests, the bound on each cell.
    #[arg(short = 'd', long, value_parser = parse_duration)]
    pub(crate) duration: Option<Duration>,
    /// Unrecorded load before each cell.
    #[arg(long, value_parser = parse_duration, default_value = "1s")]
    pub(crate) warmup: Duration,
    /// A request unanswered this long is a timeout (its connection is reopened).
    #[arg(long, value_parser = parse_duration, default_value = "2s")]
    pub(crate) timeout: Duration,
    /// Server worker threads.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub(crate) threads: u16,
    /// How a tokio server arranges its workers (see `framebench serve --help`); a framework
    /// without the choice is skipped with one line under `per-core`.
    #[arg(long, value_enum, default_value = "work-stealing")]
    pub(crate) runtime: crate::options::Runtime,
    /// Request logging of the server; a comma-separated list runs each.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "off")]
    pub(crate) logging: Vec<Logging>,
    /// File I/O of the server; a comma-separated list runs each.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "memory")]
    pub(crate) io: Vec<Io>,
    /// What the client speaks and the servers are started with: HTTP/1.1, or HTTP/2 over
    /// cleartext with prior knowledge; `h2c,http1` runs both, each framework's HTTP/1.1 cells
    /// beside its h2c ones (a URL target takes one). A framework that does not serve h2c gets
    /// `–` cells with its reason (`framebench list --protocol h2c` says which do).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "http1")]
    pub(crate) protocol: Vec<Protocol>,
    #[command(flatten)]
    pub(crate) tls: super::args::TlsArg,
    /// What the protocol runs over, comma-separated: `tcp,tls` runs each framework's cells over
    /// both, its TLS cells beside its TCP ones in the same rounds (with --rounds, interleaved),
    /// so that the TLS share is their difference. `--tls` is `--transport tls`.
    #[arg(long, value_enum, value_delimiter = ',', conflicts_with = "tls")]
    pub(crate) transport: Vec<crate::options::Transport>,
    /// With --tls: whether a new connection resumes an earlier session (on) or makes a full
    /// handshake (off). It matters with --requests-per-connection, where every connection is a
    /// handshake; the cell counts which handshakes resumed.
    #[arg(long, value_enum)]
    pub(crate) tls_resumption: Option<crate::transport::tls::Resumption>,
    /// h2c: concurrent streams per connection (h2load's `-m`); a comma-separated list runs each
    /// as cells of their own.
    #[arg(short = 'm', long, value_delimiter = ',', default_value = "1",
          value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub(crate) streams: Vec<u16>,
    /// HTTP/1.1 pipelining depth: requests sent in one write per connection.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub(crate) pipeline: u16,
    /// Body size in bytes of the `upload` and `upload_chunked` requests (1 to 16 MiB). A body
    /// over a framework's limit fails its oracle check; docs/methodology lists the limits.
    #[arg(long, default_value_t = crate::oracle::BODY_SIZE as u64,
          value_parser = clap::value_parser!(u64).range(1..=16 * 1024 * 1024))]
    pub(crate) body_size: u64,
    /// Message size in bytes of `echo` under `--protocol ws` (1 byte to 16 MiB): printable
    /// ASCII in text frames, each echoed back.
    #[arg(long, default_value_t = crate::oracle::MESSAGE_SIZE as u64,
          value_parser = clap::value_parser!(u64).range(1..=16 * 1024 * 1024))]
    pub(crate) message_size: u64,
    /// Constant total request rate (req/s), latency from the intended send time (as wrk2);
    /// under h2c, at most `--streams` in flight per connection.
    #[arg(long, value_parser = parse_rate)]
    pub(crate) rate: Option<f64>,
    /// Connection churn: close and reopen each connection after this many requests, the last
    /// sent with `Connection: close` (1: a connection per request); connect time is reported
    /// apart from request latency. A server that keeps the connection open fails the cell.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) requests_per_connection: Option<u64>,
    /// Send exactly this many requests per cell, then stop (no warmup).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) requests: Option<u64>,
    /// CPUs for the server, taskset style (default: first half of the CPUs).
    #[arg(long, value_parser = parse_cpus)]
    pub(crate) server_cpus: Option<CpuList>,
    /// CPUs for the client (default: the other half).
    #[arg(long, value_parser = parse_cpus)]
    pub(crate) client_cpus: Option<CpuList>,
    /// Client threads (default: one per client CPU).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub(crate) client_threads: Option<u16>,
    /// Check one response in this many per connection against the oracle (plus the first).
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) sample_every: u64,
    /// Run every cell this many times, the targets interleaved with their order rotated each
    /// round; each cell reports its median round by rate, whole, with the rounds' range as its
    /// interval. One cell on a shared machine can fall in a slow spell that its own spread
    /// cannot show.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=20))]
    pub(crate) rounds: u16,
    /// Write the results as JSON, with the environment.
    #[arg(long)]
    pub(crate) json: Option<PathBuf>,
    /// Also write the rates in Bencher Metric Format (for `bencher run --adapter json`).
    #[arg(long, value_name = "PATH")]
    pub(crate) bmf: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) baselines: crate::results::BaselineArgs,
    /// Write the results as Markdown tables.
    #[arg(long)]
    pub(crate) markdown: Option<PathBuf>,
    /// Draw req/s vs connections and latency percentiles (.svg or .png).
    #[arg(long)]
    pub(crate) plot: Option<PathBuf>,
    /// Draw one bar chart per scenario and protocol (and stream count), one bar per target
    /// with its spread, pale where the server did not set the rate (.svg or .png).
    #[arg(long, value_name = "PATH")]
    pub(crate) bars: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    pub(crate) quiet: bool,
    /// Write the latencies as an HdrHistogram interval log (V2, deflate), one histogram per
    /// `--hdr-interval` of each cell's recorded window, tagged per cell; `--json` names it, and
    /// `framebench merge` adds such logs up.
    #[arg(long, value_name = "PATH")]
    pub(crate) hdr_log: Option<PathBuf>,
    /// The interval of `--hdr-log`.
    #[arg(long, value_parser = parse_duration, default_value = "1s")]
    pub(crate) hdr_interval: Duration,
    /// Start the recorded window at this wall-clock time (seconds since the Unix epoch, at most
    /// an hour ahead), the warm-up before it, so that several processes measure the same
    /// window. One cell only.
    #[arg(long, value_name = "UNIX_SECONDS")]
    pub(crate) start_at: Option<f64>,
    /// This process's share of a load run by several: I of N takes 1/N of the connections,
    /// the rate and the request count (the remainders to the first shards).
    #[arg(long, value_name = "I/N")]
    pub(crate) shard: Option<crate::driver::Shard>,
}

/// `framebench load`.
#[derive(clap::Args, Debug)]
pub struct LoadArgs {
    /// A framework name (served by a child process) or http://127.0.0.1:PORT.
    #[arg(long)]
    pub(crate) target: String,
    /// Allow a target URL that is not a loopback address (another host): every request goes
    /// over the network to it. Without it such a URL is refused.
    #[arg(long)]
    pub(crate) allow_remote: bool,
    /// Scenarios, comma-separated (default: hello, and echo under `--protocol ws`).
    #[arg(long, value_delimiter = ',')]
    pub(crate) scenario: Vec<String>,
    #[command(flatten)]
    pub(crate) opts: LoadOpts,
}

/// Accepts `http://127.0.0.1:PORT` (or `[::1]`, `localhost`), and with `allow_remote` any
/// `http://IP:PORT`; refuses anything else (a usage error).
pub(crate) fn parse_url(text: &str, allow_remote: bool) -> anyhow::Result<SocketAddr> {
    let rest = text.strip_prefix("http://").ok_or_else(|| {
        usage(format!(
            "bad target {text:?} (want a framework name or http://127.0.0.1:PORT)"
        ))
    })?;
    let hostport = rest.trim_end_matches('/');
    let hostport = hostport.replacen("localhost:", "127.0.0.1:", 1);
    let addr: SocketAddr = hostport
        .parse()
        .map_err(|_| usage(format!("bad target {text:?} (want http://127.0.0.1:PORT)")))?;
    if !addr.ip().is_loopback() && !allow_remote {
        return Err(usage(format!(
            "refusing to load {text}: the driver targets loopback addresses only \
             (--allow-remote loads another host)"
        )));
    }
    Ok(addr)
}

impl LoadOpts {
    /// The transports of the run's cells: `--transport`, or TLS alone with `--tls`, else TCP.
    pub(crate) fn transports(&self) -> Vec<crate::options::Transport> {
        match (self.tls.tls, self.transport.is_empty()) {
            (true, _) => vec![crate::options::Transport::Tls],
            (false, true) => vec![crate::options::Transport::Tcp],
            (false, false) => self.transport.clone(),
        }
    }
}

fn variants(opts: &LoadOpts) -> Vec<Options> {
    let mut out = Vec::new();
    for (protocol, transport) in opts
        .protocol
        .iter()
        .flat_map(|&p| opts.transports().into_iter().map(move |t| (p, t)))
    {
        for &logging in &opts.logging {
            for &io in &opts.io {
                out.push(Options {
                    logging,
                    io,
                    threads: opts.threads.into(),
                    runtime: opts.runtime,
                    protocol,
                    transport,
                });
            }
        }
    }
    out
}

pub(crate) fn framework_targets(names: &[String], opts: &LoadOpts) -> anyhow::Result<Vec<Target>> {
    let entries =
        crate::select::frameworks(names, |e| e.loopback, "has no server (in-process only)")?;
    let entries = crate::select::for_runtime(names, entries, opts.runtime, &opts.protocol)?;
    let mut out = Vec::new();
    for e in entries {
        for o in variants(opts) {
            out.push(Target::Framework(e, o));
        }
    }
    Ok(out)
}

pub(crate) fn params(opts: &LoadOpts, default_duration: Duration) -> anyhow::Result<LoadParams> {
    let all = pinning::allowed_cpus();
    for CpuList(cpus) in [&opts.server_cpus, &opts.client_cpus].into_iter().flatten() {
        if let Some(c) = cpus.iter().find(|c| !all.contains(c)) {
            return Err(crate::error::usage(format!(
                "cpu {c} is not available (this process may use {})",
                pinning::format_cpus(&all)
            )));
        }
    }
    if let Some(at) = opts.start_at {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        if !at.is_finite() || at < now - 1.0 || at > now + 3600.0 {
            return Err(crate::error::usage(format!(
                "--start-at {at}: want a time within the next hour (now is {now:.0})"
            )));
        }
    }
    if let Some(shard) = opts.shard {
        let connections = opts.connections.as_deref().unwrap_or(&[]);
        if connections.iter().any(|&c| shard.part(c.into()) == 0) {
            return Err(crate::error::usage(format!(
                "--shard {}/{}: every shard needs a connection; give -c at least {}",
                shard.index, shard.count, shard.count
            )));
        }
    }
    // The run's shaping protocol: its one protocol (a URL target's, `ws` included), else the
    // one with streams when the run has one (its cells take --streams, and no flag of
    // HTTP/1.1's connection shape), else the default.
    let shaping = match opts.protocol.as_slice() {
        [one] => *one,
        all => all
            .iter()
            .copied()
            .find(|p| p.multiplexed())
            .unwrap_or_default(),
    };
    let shape = Shape {
        pipeline: opts.pipeline.into(),
        streams: opts.streams.iter().copied().max().unwrap_or(1).into(),
    };
    shaping
        .check_shape(shape, opts.requests_per_connection.is_some())
        .map_err(crate::error::usage)?;
    let tls = opts.transports().contains(&crate::options::Transport::Tls);
    for &protocol in &opts.protocol {
        for transport in opts.transports() {
            protocol.over(transport).map_err(crate::error::usage)?;
        }
    }
    if opts.tls_resumption.is_some() && !tls {
        return Err(crate::error::usage("--tls-resumption is TLS's: add --tls"));
    }
    if opts.requests_per_connection.is_some() && opts.pipeline > 1 {
        return Err(crate::error::usage(
            "--requests-per-connection sends one request at a time: drop --pipeline",
        ));
    }
    Ok(LoadParams {
        duration: opts.duration.unwrap_or(default_duration),
        requests_per_connection: opts.requests_per_connection,
        warmup: opts.warmup,
        timeout: opts.timeout,
        pipeline: opts.pipeline.into(),
        // The run's protocol for a URL target; each framework cell's own comes from its target.
        protocol: shaping,
        // The run's TLS conditions when any cell is over TLS; each framework cell's own
        // transport comes from its target.
        transport: match tls {
            true => crate::options::Transport::Tls,
            false => crate::options::Transport::Tcp,
        },
        resumption: opts.tls_resumption.unwrap_or_default(),
        streams: 1,
        // A shard takes its part of the rate and of the request count.
        rate: opts
            .rate
            .map(|r| opts.shard.map_or(r, |s| r / s.count as f64)),
        requests: opts
            .requests
            .map(|n| opts.shard.map_or(n, |s| s.part(n).max(1))),
        sample_every: opts.sample_every,
        rounds: opts.rounds.into(),
        hdr_interval: opts
            .hdr_log
            .as_ref()
            .map(|_| opts.hdr_interval.as_secs_f64()),
        start_at: opts.start_at,
        shard: opts.shard,
        check_threads: true,
        body_size: opts.body_size as usize,
        message_size: opts.message_size as usize,
        pinning: Pinning::resolve(
            opts.server_cpus.clone().map(|c| c.0),
            opts.client_cpus.clone().map(|c| c.0),
            opts.client_threads.map(usize::from),
        ),
    })
}

/// `framebench load`.
pub fn run(args: LoadArgs) -> anyhow::Result<ExitCode> {
    let url_target = args.target.contains("://");
    let targets = if url_target {
        if args.opts.protocol.len() > 1 {
            return Err(crate::error::usage(
                "a URL target speaks one protocol: give --protocol http1, h2c, h2 or ws",
            ));
        }
        let target = url_transport(&args.target, &args.opts.transports())?;
        let addr = parse_url(&target, args.allow_remote)?;
        if !addr.ip().is_loopback() {
            eprintln!("warning: loading {addr}, another host, over the network (--allow-remote)");
        }
        vec![Target::Url(addr)]
    } else {
        framework_targets(std::slice::from_ref(&args.target), &args.opts)?
    };
    let plan = Plan {
        targets,
        scenarios: crate::select::loaded_scenarios(
            &scenario_names(&args.scenario, &args.opts.protocol),
            url_target,
            &args.opts.protocol,
        )?,
        connections: conns(&args.opts, &[10]),
        streams: streams(&args.opts),
        params: params(&args.opts, Duration::from_secs(10))?,
        server_per_target: false,
    };
    execute(plan, &args.opts, "load")
}

/// A URL target's transport, checked against the run's, as the `http://` URL [`parse_url`]
/// reads: `http://` over TCP, or `https://` with `--tls` when the server's certificate is in
/// the environment ([`crate::transport::tls::CERT_ENV`]), which is the only one the client
/// then trusts. `scripts/vs-tls.sh` hands one certificate to `serve --tls` and to the driver so.
fn url_transport(target: &str, transports: &[Transport]) -> anyhow::Result<String> {
    match (target.strip_prefix("https://"), transports) {
        (None, [Transport::Tcp]) => Ok(target.to_owned()),
        (None, _) => Err(crate::error::usage(
            "an http:// target is loaded over TCP: leave --tls and --transport out, or give \
             https:// with --tls",
        )),
        (Some(_), [Transport::Tls]) if !crate::transport::tls::from_env() => {
            Err(crate::error::usage(format!(
                "an https:// target needs the server's certificate: set ${} and ${} to the \
                 PEM the server serves (scripts/vs-tls.sh does)",
                crate::transport::tls::CERT_ENV,
                crate::transport::tls::KEY_ENV
            )))
        }
        (Some(rest), [Transport::Tls]) => Ok(format!("http://{rest}")),
        (Some(_), _) => Err(crate::error::usage("an https:// target needs --tls")),
    }
}

/// The scenarios named, or by default each protocol's first: hello, and echo under WebSocket.
fn scenario_names(named: &[String], protocols: &[crate::options::Protocol]) -> Vec<String> {
    if !named.is_empty() {
        return named.to_vec();
    }
    let mut names: Vec<String> = Vec::new();
    for p in protocols {
        if let Some(first) = p.default_scenarios().first() {
            if !names.iter().any(|n| n == first.name) {
                names.push(first.name.to_owned());
            }
        }
    }
    names
}

/// The stream counts of the run, each a cell of its own.
pub(crate) fn streams(opts: &LoadOpts) -> Vec<usize> {
    opts.streams.iter().map(|&m| usize::from(m)).collect()
}

/// The connection counts of the run, each this shard's part of it under `--shard`.
pub(crate) fn conns(opts: &LoadOpts, default: &[usize]) -> Vec<usize> {
    let all = opts.connections.as_ref().map_or_else(
        || default.to_vec(),
        |v| v.iter().map(|&c| c as usize).collect(),
    );
    match opts.shard {
        Some(s) => all
            .iter()
            .map(|&c| s.part(c as u64).max(1) as usize)
            .collect(),
        None => all,
    }
}

pub(crate) fn execute(plan: Plan, opts: &LoadOpts, command: &str) -> anyhow::Result<ExitCode> {
    let title = &format!("framebench {command}");
    opts.baselines.check(command)?;
    let fixtures = Fixtures::load_default()?;
    interrupted();
    if opts.rounds > 1 && (opts.start_at.is_some() || opts.shard.is_some()) {
        return Err(crate::error::usage(
            "--rounds runs each cell several times; --start-at and --shard align one run of \
             several processes: give one or the other",
        ));
    }
    if plan.params.start_at.is_some() && plan.cells() > 1 {
        return Err(crate::error::usage(format!(
            "--start-at aligns one cell; this run has {} (one scenario, one -c)",
            plan.cells()
        )));
    }
    crate::driver::make_room(plan.connections.iter().copied().max().unwrap_or(1))?;
    let started = std::time::SystemTime::now();
    let cells = run_plan(&plan, &fixtures, opts.quiet);
    let measured = crate::provenance::Provenance::here(crate::provenance::Window::since(started));
    let report = Report {
        environment: crate::env::Environment::current(),
        params: plan.params,
        cells,
        run: crate::driver::output::RunInfo {
            host: crate::driver::hdrlog::hostname(),
            hdr_log: opts.hdr_log.as_ref().map(|p| p.display().to_string()),
            merged_from: Vec::new(),
        },
    };
    if let Some(p) = &opts.hdr_log {
        crate::driver::hdrlog::write(p, &report.cells, opts.hdr_interval.as_secs_f64())
            .with_context(|| format!("cannot write {}", p.display()))?;
    }
    print!("{}", report.terminal());
    let write = |path: &PathBuf, text: String| {
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
    };
    let results = report.results(command, measured);
    if let Some(p) = &opts.json {
        let text = serde_json::to_string_pretty(&results).expect("results serialize");
        write(p, text)?;
    }
    if let Some(p) = &opts.bmf {
        results.write_bmf(p)?;
    }
    if let Some(p) = &opts.markdown {
        write(p, crate::generated::markdown(&report.markdown()))?;
    }
    if let Some(p) = &opts.plot {
        load_lines::draw_load(&report.cells, p, title)?;
    }
    if let Some(p) = &opts.bars {
        crate::chart::load_bars::draw(&report.cells, p)?;
    }
    // After every output is written: a baseline that cannot be read loses nothing measured.
    opts.baselines.apply(&results)?;
    if interrupted().load(Ordering::Relaxed) {
        eprintln!("interrupted: child servers stopped");
        return Ok(ExitCode::from(130));
    }
    let failures = report.failures();
    Ok(match failures.first() {
        None => ExitCode::SUCCESS,
        Some(first) => {
            // The table on stdout names every one; this line reaches a script that keeps only
            // stderr.
            let more = match failures.len() - 1 {
                0 => String::new(),
                n => format!(" (and {n} more)"),
            };
            eprintln!("a cell did not end ok: {first}{more}");
            ExitCode::from(1)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_loopback_only_unless_remote_is_allowed() {
        assert!(parse_url("http://127.0.0.1:8080", false).is_ok());
        assert!(parse_url("http://localhost:8080/", false).is_ok());
        assert!(parse_url("http://[::1]:80", false).is_ok());
        assert!(parse_url("http://10.0.0.1:80", false)
            .unwrap_err()
            .to_string()
            .contains("loopback"));
        assert!(parse_url("http://10.0.0.1:80", true).is_ok());
        assert!(parse_url("http://example.com:80", true).is_err());
        assert!(parse_url("127.0.0.1:80", false).is_err());
    }

    #[test]
    fn shards_split_counts_evenly_and_refuse_nonsense() {
        let s = |t: &str| t.parse::<crate::driver::Shard>();
        let (a, b, c) = (s("1/3").unwrap(), s("2/3").unwrap(), s("3/3").unwrap());
        assert_eq!([a.part(16), b.part(16), c.part(16)], [6, 5, 5]);
        assert_eq!(a.part(16) + b.part(16) + c.part(16), 16);
        for bad in ["0/2", "3/2", "1/0", "1", "a/b", "1/2/3"] {
            assert!(s(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert!(parse_duration("ten").is_err());
        assert!(parse_duration("5h").is_err());
        assert!(parse_duration("-1s").is_err());
    }
}
