//! Command-line surface of the driver: `framebench load`, `framebench compare`, and the loopback
//! half of the quick compare. `main.rs` only forwards to these.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::output::{EnvJson, Report};
use super::stats::{CellResult, Status};
use super::{interrupted, plot, run_plan, run_plan_on, LoadParams, Plan, Target};
use crate::cli::CliError;
use crate::fixtures::Fixtures;
use crate::frameworks::REGISTRY;
use crate::options::{Io, Logging, Options};
use crate::oracle::{Scenario, SCENARIOS};
use crate::pinning::{self, Pinning};

/// Parses `10s`, `500ms`, `2m`, `1.5s`.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (num, unit) = t
        .find(|c: char| c.is_ascii_alphabetic())
        .map_or((t, "s"), |i| t.split_at(i));
    let v: f64 = num
        .parse()
        .map_err(|_| format!("bad duration {text:?} (want e.g. 10s, 500ms, 2m)"))?;
    let secs = match unit {
        "ms" => v / 1000.0,
        "s" => v,
        "m" => v * 60.0,
        _ => return Err(format!("bad duration unit in {text:?} (ms, s or m)")),
    };
    if !(0.0..=86_400.0).contains(&secs) || !secs.is_finite() {
        return Err(format!("duration {text:?} out of range"));
    }
    Ok(Duration::from_secs_f64(secs))
}

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
    /// Request logging of the server; a comma-separated list runs each.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "off")]
    pub(crate) logging: Vec<Logging>,
    /// File I/O of the server; a comma-separated list runs each.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "memory")]
    pub(crate) io: Vec<Io>,
    /// HTTP/1.1 pipelining depth: requests sent in one write per connection.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub(crate) pipeline: u16,
    /// Constant total request rate (req/s), latency from the intended send time (as wrk2).
    #[arg(long, value_parser = parse_rate)]
    pub(crate) rate: Option<f64>,
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
    /// No progress bar.
    #[arg(long)]
    pub(crate) quiet: bool,
}

/// `framebench load`.
#[derive(clap::Args, Debug)]
pub struct LoadArgs {
    /// A framework name (served by a child process) or http://127.0.0.1:PORT.
    #[arg(long)]
    pub(crate) target: String,
    /// Scenarios, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "hello")]
    pub(crate) scenario: Vec<String>,
    #[command(flatten)]
    pub(crate) opts: LoadOpts,
}

/// `framebench compare`.
#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// Frameworks, comma-separated (default: every one that serves).
    #[arg(long, value_delimiter = ',')]
    pub(crate) frameworks: Vec<String>,
    /// Scenarios, comma-separated (default: all).
    #[arg(long, value_delimiter = ',')]
    pub(crate) scenarios: Vec<String>,
    #[command(flatten)]
    pub(crate) opts: LoadOpts,
}

/// Accepts `http://127.0.0.1:PORT` (or `[::1]`, `localhost`); refuses anything else.
pub(crate) fn parse_url(text: &str) -> Result<SocketAddr, String> {
    let rest = text.strip_prefix("http://").ok_or_else(|| {
        format!("bad target {text:?} (want a framework name or http://127.0.0.1:PORT)")
    })?;
    let hostport = rest.trim_end_matches('/');
    let hostport = hostport.replacen("localhost:", "127.0.0.1:", 1);
    let addr: SocketAddr = hostport
        .parse()
        .map_err(|_| format!("bad target {text:?} (want http://127.0.0.1:PORT)"))?;
    if !addr.ip().is_loopback() {
        return Err(format!(
            "refusing to load {text}: the driver targets loopback addresses only"
        ));
    }
    Ok(addr)
}

/// The scenarios named (default: all). For framework targets, whose servers need a local
/// redis-server for the redis scenario, that scenario is skipped with one line without one; a
/// URL target brings its own server.
fn scenarios(names: &[String], url_target: bool) -> Result<Vec<&'static Scenario>, CliError> {
    let chosen: Vec<&'static Scenario> = if names.is_empty() {
        SCENARIOS.iter().collect()
    } else {
        names
            .iter()
            .map(|n| crate::cli::scenario(n))
            .collect::<Result<_, _>>()?
    };
    // Without a Redis the redis scenario is skipped with one line, asked for or not.
    Ok(chosen
        .into_iter()
        .filter(|s| url_target || crate::redis::children_can_serve(s))
        .collect())
}

fn variants(opts: &LoadOpts) -> Vec<Options> {
    let mut out = Vec::new();
    for &logging in &opts.logging {
        for &io in &opts.io {
            out.push(Options {
                logging,
                io,
                threads: opts.threads.into(),
            });
        }
    }
    out
}

fn framework_targets(names: &[String], opts: &LoadOpts) -> Result<Vec<Target>, CliError> {
    let entries: Vec<&'static crate::framework::Entry> = if names.is_empty() {
        REGISTRY.iter().filter(|e| e.loopback).collect()
    } else {
        names
            .iter()
            .map(|n| {
                let e = crate::cli::framework(n)?;
                if !e.loopback {
                    return Err(CliError::usage(format!(
                        "{n} has no server (in-process only)"
                    )));
                }
                Ok(e)
            })
            .collect::<Result<_, _>>()?
    };
    let mut out = Vec::new();
    for e in entries {
        for o in variants(opts) {
            out.push(Target::Framework(e, o));
        }
    }
    Ok(out)
}

fn params(opts: &LoadOpts, default_duration: Duration) -> Result<LoadParams, CliError> {
    let all = pinning::allowed_cpus();
    for CpuList(cpus) in [&opts.server_cpus, &opts.client_cpus].into_iter().flatten() {
        if let Some(c) = cpus.iter().find(|c| !all.contains(c)) {
            return Err(CliError::usage(format!(
                "cpu {c} is not available (this process may use {})",
                pinning::format_cpus(&all)
            )));
        }
    }
    Ok(LoadParams {
        duration: opts.duration.unwrap_or(default_duration),
        warmup: opts.warmup,
        timeout: opts.timeout,
        pipeline: opts.pipeline.into(),
        rate: opts.rate,
        requests: opts.requests,
        sample_every: opts.sample_every,
        pinning: Pinning::resolve(
            opts.server_cpus.clone().map(|c| c.0),
            opts.client_cpus.clone().map(|c| c.0),
            opts.client_threads.map(usize::from),
        ),
    })
}

/// `framebench load`.
pub fn load(args: LoadArgs) -> Result<ExitCode, CliError> {
    let url_target = args.target.contains("://");
    let targets = if url_target {
        let addr = parse_url(&args.target).map_err(CliError::usage)?;
        vec![Target::Url(addr)]
    } else {
        framework_targets(std::slice::from_ref(&args.target), &args.opts)?
    };
    let plan = Plan {
        targets,
        scenarios: scenarios(&args.scenario, url_target)?,
        connections: conns(&args.opts, &[10]),
        params: params(&args.opts, Duration::from_secs(10))?,
        server_per_target: false,
    };
    execute(plan, &args.opts, "load")
}

/// `framebench compare`: frameworks × scenarios × connection counts.
pub fn compare(args: CompareArgs) -> Result<ExitCode, CliError> {
    let plan = Plan {
        targets: framework_targets(&args.frameworks, &args.opts)?,
        scenarios: scenarios(&args.scenarios, false)?,
        connections: conns(&args.opts, &[5, 10, 25, 50, 100, 500]),
        params: params(&args.opts, Duration::from_secs(5))?,
        server_per_target: false,
    };
    execute(plan, &args.opts, "compare")
}

fn conns(opts: &LoadOpts, default: &[usize]) -> Vec<usize> {
    opts.connections.as_ref().map_or_else(
        || default.to_vec(),
        |v| v.iter().map(|&c| c as usize).collect(),
    )
}

fn execute(plan: Plan, opts: &LoadOpts, command: &str) -> Result<ExitCode, CliError> {
    let title = &format!("framebench {command}");
    opts.baselines.check(command)?;
    let fixtures = Fixtures::load_default().map_err(CliError::fail)?;
    interrupted();
    let cells = run_plan(&plan, &fixtures, opts.quiet);
    let report = Report {
        environment: EnvJson::current(),
        params: plan.params,
        cells,
    };
    print!("{}", report.terminal());
    let write = |path: &PathBuf, text: String| {
        std::fs::write(path, text)
            .map_err(|e| CliError(1, format!("cannot write {}: {e}", path.display())))
    };
    let results = report.results(command);
    if let Some(p) = &opts.json {
        let text = serde_json::to_string_pretty(&results).expect("results serialize");
        write(p, text)?;
    }
    if let Some(p) = &opts.bmf {
        results.write_bmf(p).map_err(CliError::fail)?;
    }
    if let Some(p) = &opts.markdown {
        write(p, report.markdown())?;
    }
    if let Some(p) = &opts.plot {
        plot::draw(&report.cells, p, title).map_err(CliError::fail)?;
    }
    // After every output is written: a baseline that cannot be read loses nothing measured.
    opts.baselines.apply(&results)?;
    if interrupted().load(Ordering::Relaxed) {
        eprintln!("interrupted: child servers stopped");
        return Ok(ExitCode::from(130));
    }
    Ok(if report.failures().is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Time the whole quick compare aims for, from its start to its table: in-process cells,
/// allocation counts and loopback cells. The loopback cells get what the others left.
pub(crate) const QUICK_BUDGET: Duration = Duration::from_secs(165);

/// Connections per server thread in the quick compare's loopback cells. On this project's
/// 2-core machine, `load --threads 1` keeps event-driven servers at 93–98 % of their core from
/// 8 connections on, against 45–70 % at 2 (docs/driver.md); 16 leaves a margin. A cell whose
/// server still is not saturated is marked ([`super::stats::Bound`]).
pub(crate) const QUICK_CONNECTIONS_PER_THREAD: usize = 16;

/// Passes over every loopback cell in the quick compare; each cell reports its best pass. This
/// project's machine (a VM) changes speed by itself: a CPU-bound loop pinned to one idle core
/// ran at 0.5–1.0× its top speed in 0.2 s windows, in slow spells of 0.5–4 s that took 18–80 %
/// of a minute, a different share each minute. A slow spell slows a cell and never speeds it
/// up, so the best of passes spread over the whole column is the figure least moved by how
/// slow a given minute was; every pass is checked against the oracle, and a cell failing in any
/// pass fails. docs/methodology.md ("Repeatability of the quick compare") gives the trials
/// behind this choice: with best of 3 passes of 0.2 s, 61 % of cells stayed within 10 % across
/// two runs; with the median of 13 passes of 50 ms, 51 %.
pub(crate) const QUICK_PASSES: usize = 8;

/// Start-up of one server (once per framework: every pass reuses it), about 0.1 s.
const QUICK_SERVER_OVERHEAD: Duration = Duration::from_millis(150);
/// The oracle check, connecting and CPU meters of one cell in one pass (about 1 ms measured).
const QUICK_CELL_OVERHEAD: Duration = Duration::from_millis(4);
/// The shortest pass of one cell: a quarter warm-up (the server has served this cell in
/// earlier passes) and the rest recorded, about 6,000 requests at 100 k req/s. Shorter
/// windows read the server's CPU too low to tell a saturated server from an idle one.
const QUICK_MIN_SLICE: Duration = Duration::from_millis(80);

/// How the quick compare's loopback cells were run, for its header.
#[derive(Debug, Clone)]
pub(crate) struct QuickLoopback {
    /// Load parameters of every cell.
    pub(crate) params: LoadParams,
    /// Passes; each cell reports its best.
    pub(crate) passes: usize,
    /// Server worker threads (one per server CPU).
    pub(crate) threads: usize,
    /// Connections per cell.
    pub(crate) connections: usize,
    /// Frameworks given a pool of `connections` threads instead
    /// ([`crate::framework::Framework::THREAD_PER_CONNECTION`]).
    pub(crate) pooled: Vec<&'static str>,
    /// Each cell's req/s over the reference's (`raw`) in the same pass, as a median over the
    /// passes with its interval ([`ratios_to`]).
    pub(crate) of_reference: Vec<PassRatio>,
}

/// One cell's speed as a fraction of the reference's, from passes that measured both.
#[derive(Debug, Clone)]
pub(crate) struct PassRatio {
    /// Framework name.
    pub(crate) target: String,
    /// Scenario name.
    pub(crate) scenario: String,
    /// The median over passes of (this cell's req/s ÷ the reference's in the same pass).
    pub(crate) ratio: crate::interval::Estimate,
}

/// For every cell, the ratio of its req/s to `reference`'s req/s on the same scenario in the
/// same pass, over the passes where both ended `ok`. The passes run every framework one after
/// another, so the two cells of a pass are seconds apart rather than a whole column: pairing
/// them cancels most of the machine's drift, and the median's interval says what is left.
pub(crate) fn ratios_to(reference: &str, passes: &[Vec<CellResult>]) -> Vec<PassRatio> {
    let mut per_cell: Vec<(String, String, Vec<f64>)> = Vec::new();
    for pass in passes {
        for cell in pass
            .iter()
            .filter(|c| c.target != reference && c.status == Status::Ok && c.rps > 0.0)
        {
            let Some(r) = pass.iter().find(|r| {
                r.target == reference
                    && r.scenario == cell.scenario
                    && r.status == Status::Ok
                    && r.rps > 0.0
            }) else {
                continue;
            };
            let ratio = cell.rps / r.rps;
            match per_cell
                .iter_mut()
                .find(|(t, s, _)| *t == cell.target && *s == cell.scenario)
            {
                Some((_, _, v)) => v.push(ratio),
                None => per_cell.push((cell.target.clone(), cell.scenario.clone(), vec![ratio])),
            }
        }
    }
    per_cell
        .into_iter()
        .filter_map(|(target, scenario, v)| {
            Some(PassRatio {
                target,
                scenario,
                ratio: crate::interval::median_interval(&v)?,
            })
        })
        .collect()
}

/// The loopback half of the quick compare: every serving framework × every scenario, a short
/// closed-loop load checked against the oracle first, with enough connections to saturate the
/// server ([`QUICK_CONNECTIONS_PER_THREAD`] per server thread, one thread per server CPU).
/// Thread-per-connection servers get one thread per connection, so that the table compares
/// their cost per request and not their pool size. Each framework gets one server for all its
/// scenarios and passes; [`QUICK_PASSES`] passes share `budget`, each cell getting
/// 0.08–2 s per pass, and each cell reports its best pass ([`best_of`]).
pub(crate) fn quick_loopback(
    fixtures: &Fixtures,
    options: Options,
    budget: Duration,
) -> (Vec<CellResult>, QuickLoopback) {
    interrupted();
    let pinning = Pinning::resolve(None, None, None);
    let threads = pinning.server_cores(usize::MAX);
    let connections = QUICK_CONNECTIONS_PER_THREAD * threads;
    let entries: Vec<_> = REGISTRY.iter().filter(|e| e.loopback).collect();
    let targets: Vec<Target> = entries
        .iter()
        .map(|e| {
            let threads = if e.thread_per_connection {
                connections
            } else {
                threads
            };
            Target::Framework(e, Options { threads, ..options })
        })
        .collect();
    let scenarios: Vec<&'static Scenario> = SCENARIOS
        .iter()
        .filter(|s| crate::redis::children_can_serve(s))
        .collect();
    // Frameworks this machine cannot serve (the Go peers without `go`, already built or
    // refused by the caller) take no time.
    let runnable = entries
        .iter()
        .filter(|e| e.available().is_ok())
        .count()
        .max(1) as u32;
    let passes = QUICK_PASSES as u32;
    let cells = runnable * scenarios.len().max(1) as u32 * passes;
    let per_cell = (budget.saturating_sub(QUICK_SERVER_OVERHEAD * runnable) / cells)
        .saturating_sub(QUICK_CELL_OVERHEAD)
        .clamp(QUICK_MIN_SLICE, Duration::from_secs(2));
    // A quarter warm-up, three quarters recorded, in whole milliseconds.
    let ms = |d: Duration| Duration::from_millis(d.as_millis() as u64);
    let plan = Plan {
        targets,
        scenarios,
        connections: vec![connections],
        params: LoadParams {
            duration: ms(per_cell * 3 / 4),
            warmup: ms(per_cell / 4),
            timeout: Duration::from_secs(2),
            pipeline: 1,
            rate: None,
            requests: None,
            sample_every: 256,
            pinning,
        },
        server_per_target: true,
    };
    let mut runs = Vec::new();
    // One server per framework for the whole column; dropping them stops them.
    let mut servers = Vec::new();
    for _ in 0..QUICK_PASSES {
        if interrupted().load(Ordering::Relaxed) {
            break;
        }
        runs.push(run_plan_on(&plan, fixtures, false, &mut servers));
    }
    drop(servers);
    let reference = crate::frameworks::reference().map_or("raw", |e| e.name);
    let of_reference = ratios_to(reference, &runs);
    let pooled = entries
        .iter()
        .filter(|e| e.thread_per_connection)
        .map(|e| e.name)
        .collect();
    (
        best_of(runs),
        QuickLoopback {
            params: plan.params,
            passes: QUICK_PASSES,
            threads,
            connections,
            pooled,
            of_reference,
        },
    )
}

/// One result per cell from several passes over the same cells: a cell that did not end `ok`
/// in some pass (a wrong answer, a crash) reports that pass, so a failure is never hidden by a
/// good pass; otherwise the pass with the most requests per second, with its own CPU figures,
/// except that its CPU time per request is split into user and system time by the shares of
/// every `ok` pass, weighted by its CPU time: one pass of 60 ms holds six 10 ms clock ticks, all
/// eight about fifty. Its peak RSS is the highest of its passes: the quick compare's server
/// serves every pass, so that is the server's peak up to the cell's last pass.
pub(crate) fn best_of(passes: Vec<Vec<CellResult>>) -> Vec<CellResult> {
    // Per cell: the best pass so far, user and system µs summed over its `ok` passes, and the
    // highest peak RSS.
    let mut best: Vec<(CellResult, [f64; 2], Option<u64>)> = Vec::new();
    for cell in passes.into_iter().flatten() {
        let n = cell.requests as f64;
        let split = match (
            &cell.status,
            cell.server_user_us_per_req,
            cell.server_sys_us_per_req,
        ) {
            (Status::Ok, Some(user), Some(system)) => [user * n, system * n],
            _ => [0.0; 2],
        };
        let same = |(b, _, _): &&mut (CellResult, [f64; 2], Option<u64>)| {
            b.target == cell.target
                && b.scenario == cell.scenario
                && b.variant == cell.variant
                && b.connections == cell.connections
        };
        match best.iter_mut().find(same) {
            None => {
                let rss = cell.server_peak_rss;
                best.push((cell, split, rss));
            }
            Some((b, sum, rss)) => {
                sum[0] += split[0];
                sum[1] += split[1];
                *rss = (*rss).max(cell.server_peak_rss);
                // Only an `ok` pass can be replaced: by a failure, or by a faster `ok` pass.
                let failed = !matches!(
                    cell.status,
                    Status::Ok | Status::Interrupted | Status::Skipped(_)
                );
                if b.status == Status::Ok
                    && (failed || (cell.status == Status::Ok && cell.rps > b.rps))
                {
                    *b = cell;
                }
            }
        }
    }
    best.into_iter()
        .map(|(mut b, [user, system], rss)| {
            b.server_peak_rss = rss;
            // The best pass's CPU time per request (the scheduler's clock), split pooled.
            let total = b.server_cpu_pct.map(|pct| 1e4 * pct / b.rps);
            if let Some(total) = total.filter(|_| b.status == Status::Ok && user + system > 0.0) {
                b.server_user_us_per_req = Some(total * user / (user + system));
                b.server_sys_us_per_req = Some(total * system / (user + system));
            }
            b
        })
        .collect()
}

#[derive(clap::Parser)]
struct FullSweep {
    #[command(flatten)]
    args: CompareArgs,
}

/// `framebench --full`: `compare` with its defaults.
pub fn full_sweep() -> Result<ExitCode, CliError> {
    use clap::Parser as _;
    compare(FullSweep::parse_from(["framebench"]).args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_of_keeps_the_fastest_pass_and_every_failure() {
        let target = Target::Url(parse_url("http://127.0.0.1:9").unwrap());
        use clap::Parser as _;
        let opts = FullSweep::parse_from(["framebench"]).args.opts;
        let Ok(params) = params(&opts, Duration::from_secs(1)) else {
            panic!("default load options")
        };
        let cell = |scenario: &str, rps: f64, status: Status| {
            let mut c = CellResult::empty(
                &target,
                crate::oracle::scenario(scenario).unwrap(),
                16,
                &params,
            );
            c.rps = rps;
            c.requests = (rps / 10.0) as u64;
            c.server_cpu_pct = Some(96.0);
            // The fastest pass's ticks all fell in user mode, the others' 1 to 3.
            let user = if rps == 120.0 { 4.0 } else { 1.0 };
            c.server_user_us_per_req = Some(user);
            c.server_sys_us_per_req = Some(4.0 - user);
            // The last pass's server had grown most.
            c.server_peak_rss = Some(if rps == 100.0 { 7 } else { 5 });
            c.status = status;
            c
        };
        let failing = || Status::Failing("wrong body".into());
        let best = best_of(vec![
            vec![
                cell("hello", 90.0, Status::Ok),
                cell("json", 50.0, Status::Ok),
            ],
            vec![
                cell("hello", 120.0, Status::Ok),
                cell("json", 0.0, failing()),
            ],
            vec![
                cell("hello", 100.0, Status::Ok),
                cell("json", 70.0, Status::Ok),
            ],
        ]);
        assert_eq!(best.len(), 2);
        assert_eq!((best[0].rps, &best[0].status), (120.0, &Status::Ok));
        // Its CPU per request, 96 % of a second over 120 requests, split by every pass's
        // ticks: user 1 × 9 + 4 × 12 + 1 × 10 = 67 µs, system 3 × 9 + 3 × 10 = 57 µs.
        let total = 1e4 * 96.0 / 120.0;
        let user = best[0].server_user_us_per_req.unwrap();
        let system = best[0].server_sys_us_per_req.unwrap();
        assert!((user - total * 67.0 / 124.0).abs() < 1e-9, "{user}");
        assert!((system - total * 57.0 / 124.0).abs() < 1e-9, "{system}");
        assert_eq!(best[0].server_peak_rss, Some(7));
        // A fast later pass does not hide a wrong answer.
        assert_eq!(best[1].status, failing());
    }

    #[test]
    fn urls_are_loopback_only() {
        assert!(parse_url("http://127.0.0.1:8080").is_ok());
        assert!(parse_url("http://localhost:8080/").is_ok());
        assert!(parse_url("http://[::1]:80").is_ok());
        assert!(parse_url("http://10.0.0.1:80")
            .unwrap_err()
            .contains("loopback"));
        assert!(parse_url("http://example.com:80").is_err());
        assert!(parse_url("127.0.0.1:80").is_err());
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
