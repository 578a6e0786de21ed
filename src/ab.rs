//! `framebench ab OLD NEW`: two builds of framebench timed against each other in paired rounds,
//! the time counterpart of `framebench diff`'s exact count gate.
//!
//! Two criterion runs of one build differ by up to 31 % on this project's machine, so
//! sequential runs cannot compare two builds' times. Here both builds run at once, each as a
//! worker process (`framebench ab-worker`, hidden) that builds and checks one in-process cell
//! and then times batches of it when asked. The parent asks them in turn, A B, B A, A B …, each
//! batch a few milliseconds, both workers pinned to the same core and never running together, so
//! a slow spell of the machine slows both sides of a round (the design of tango-bench and of
//! [`crate::deltas`]).
//!
//! One pair of processes is not enough: a process's heap and code layout moves its time by a
//! few percent for its whole life. One binary against itself with one pair of workers read
//! +0.7 %, +4.7 % and +2.3 % on three of six cells, each "separated" by 30 paired rounds. So each
//! cell starts `--restarts` fresh pairs of workers, takes the median of a few paired rounds from
//! each, and publishes the median over the pairs with its distribution-free 95 % interval: the
//! interval covers the layouts, not only the machine's drift. `≈` when it holds 1.00.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitCode, Stdio};
use std::time::Duration;

use crate::interval::{self, Estimate};

/// `framebench ab` arguments.
#[derive(Debug, clap::Args)]
pub struct AbArgs {
    /// The old build's `framebench` binary.
    pub(crate) old: PathBuf,
    /// The new build's `framebench` binary (the same path compares a build with itself).
    pub(crate) new: PathBuf,
    /// In-process frameworks to compare (default: every one of this build; a framework the
    /// other build lacks is a FAIL row).
    pub(crate) frameworks: Vec<String>,
    /// Scenarios, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "hello")]
    pub(crate) scenarios: Vec<String>,
    /// Fresh pairs of worker processes per cell (at least 6, which bounds a median at 95 %).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(6..=1000))]
    pub(crate) restarts: u16,
    /// Paired rounds per pair of workers.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub(crate) rounds: u16,
}

/// One batch of each side takes about this long.
const BATCH: Duration = Duration::from_millis(2);

/// A worker process of one build.
struct Worker {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    name: String,
}

impl Worker {
    fn start(exe: &PathBuf, cpus: &[usize]) -> anyhow::Result<Worker> {
        let mut cmd = Command::new(exe);
        cmd.arg("ab-worker")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            // A worker that cannot start (no fixtures, say) says why on our stderr.
            .stderr(Stdio::inherit());
        if let Some(cpu) = cpus.first() {
            cmd.env("FRAMEBENCH_AB_CPU", cpu.to_string());
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| crate::error::usage(format!("cannot run {}: {e}", exe.display())))?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut w = Worker {
            child,
            stdin,
            stdout,
            name: exe.display().to_string(),
        };
        // A binary without the worker (not framebench, or one older than `ab`) says nothing.
        match w.ask("hello") {
            Ok(line) if line == "framebench-ab/1" => Ok(w),
            _ => Err(crate::error::usage(format!(
                "{} is not a framebench build with `ab-worker` (framebench-ab/1)",
                exe.display()
            ))),
        }
    }

    /// Sends one line and reads one line back.
    fn ask(&mut self, line: &str) -> anyhow::Result<String> {
        writeln!(self.stdin, "{line}")?;
        self.stdin.flush()?;
        let mut reply = String::new();
        if self.stdout.read_line(&mut reply)? == 0 {
            anyhow::bail!("{} exited", self.name);
        }
        Ok(reply.trim_end().to_owned())
    }

    /// Times `n` requests of the prepared cell: ns per request.
    fn time(&mut self, n: usize) -> anyhow::Result<f64> {
        let reply = self.ask(&format!("time {n}"))?;
        reply
            .parse()
            .map_err(|_| anyhow::anyhow!("{}: {reply}", self.name))
    }
}

impl Drop for Worker {
    /// Asks the worker to quit, and kills it if it has not within 2 s (a binary that is not a
    /// framebench worker may never read its input).
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "quit");
        let _ = self.stdin.flush();
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One compared cell.
struct Row {
    framework: String,
    scenario: String,
    old_ns: Option<Estimate>,
    ratio: Result<Estimate, String>,
}

/// Runs `framebench ab`.
pub fn run(args: AbArgs) -> anyhow::Result<ExitCode> {
    let pinning = crate::pinning::Pinning::one_core_each();
    let cpus = pinning.server_cpus.clone();
    // Both binaries must answer before anything is timed.
    drop(Worker::start(&args.old, &cpus)?);
    drop(Worker::start(&args.new, &cpus)?);
    let frameworks: Vec<String> = if args.frameworks.is_empty() {
        crate::frameworks::REGISTRY
            .iter()
            .filter(|e| e.in_process && !e.baseline)
            .map(|e| e.name.to_owned())
            .collect()
    } else {
        args.frameworks.clone()
    };
    for s in &args.scenarios {
        crate::cli::scenario(s)?;
    }
    println!(
        "framebench ab: {} fresh pairs of workers per cell, {} paired rounds each, batches of about \
         {} ms, both builds pinned to {}; NEW / OLD time per request, the median over the pairs \
         with its 95 % interval, `≈` when it holds 1.00",
        args.restarts,
        args.rounds,
        BATCH.as_millis(),
        pinning
            .server_cpus
            .first()
            .map_or("no core (pinning unavailable)".to_owned(), |c| format!("core {c}"))
    );
    println!("old: {}\nnew: {}", args.old.display(), args.new.display());
    println!(
        "{:<14} {:<10} {:>12}  new / old",
        "framework", "scenario", "old"
    );
    let mut rows = Vec::new();
    for fw in &frameworks {
        for scenario in &args.scenarios {
            let binaries = (&args.old, &args.new, cpus.as_slice());
            let row = cell(
                binaries,
                fw,
                scenario,
                args.restarts.into(),
                args.rounds.into(),
            );
            let text = match &row.ratio {
                Ok(r) if r.separated(1.0) => format!(
                    "{:.3} ±{:.3} ({:+.1} %)",
                    r.point,
                    r.half_width(),
                    100.0 * (r.point - 1.0)
                ),
                Ok(r) => format!("≈ (±{:.3})", r.half_width()),
                Err(e) => format!("FAIL {e}"),
            };
            let old_ns = row
                .old_ns
                .map_or("–".to_owned(), |e| crate::units::fmt_ns(e.point));
            println!(
                "{:<14} {:<10} {:>12}  {text}",
                row.framework, row.scenario, old_ns
            );
            rows.push(row);
        }
    }
    let failed = rows.iter().filter(|r| r.ratio.is_err()).count();
    if failed > 0 {
        return Err(anyhow::anyhow!(format!(
            "{failed} cell(s) not compared (FAIL above)"
        ),));
    }
    Ok(ExitCode::SUCCESS)
}

/// Times one cell: `restarts` fresh pairs of workers, `rounds` paired rounds from each.
fn cell(
    (old_exe, new_exe, cpus): (&PathBuf, &PathBuf, &[usize]),
    fw: &str,
    scenario: &str,
    restarts: usize,
    rounds: usize,
) -> Row {
    let mut row = Row {
        framework: fw.to_owned(),
        scenario: scenario.to_owned(),
        old_ns: None,
        ratio: Err(String::new()),
    };
    let mut batch = None;
    let measured = (|| -> anyhow::Result<(Vec<f64>, Vec<f64>)> {
        let (mut olds, mut ratios) = (Vec::new(), Vec::new());
        for k in 0..restarts {
            let start = |exe| Worker::start(exe, cpus);
            // Started in turn order, so neither build is always the first in memory.
            let (mut old, mut new) = if k % 2 == 0 {
                let o = start(old_exe)?;
                (o, start(new_exe)?)
            } else {
                let n = start(new_exe)?;
                (start(old_exe)?, n)
            };
            for w in [&mut old, &mut new] {
                let reply = w.ask(&format!("prepare {fw} {scenario}"))?;
                if reply != "ok" {
                    anyhow::bail!("{}: {reply}", w.name);
                }
            }
            // One batch size for every pair, from the first old worker: grow until a batch
            // takes a quarter of BATCH, then scale.
            let n = match batch {
                Some(n) => n,
                None => {
                    let n = crate::bench::calibrate(BATCH, |n| {
                        Ok(Duration::from_secs_f64(old.time(n)? * n as f64 / 1e9))
                    })?;
                    *batch.insert(n)
                }
            };
            // A warm-up round, then A B, B A, … as `framebench deltas` pairs its sides.
            let (a, b) =
                crate::deltas::paired(rounds, |side| if side { new.time(n) } else { old.time(n) })?;
            let pair: Vec<f64> = a.iter().zip(&b).map(|(a, b)| b / a).collect();
            ratios.extend(interval::median_interval(&pair).map(|e| e.point));
            olds.extend(interval::median_interval(&a).map(|e| e.point));
        }
        Ok((olds, ratios))
    })();
    match measured {
        Ok((olds, ratios)) => {
            row.old_ns = interval::median_interval(&olds);
            row.ratio = interval::median_interval(&ratios).ok_or_else(|| "no rounds".to_owned());
        }
        Err(e) => row.ratio = Err(format!("{e:#}")),
    }
    row
}

/// `framebench ab-worker`: answers the parent's lines on stdin, one line each, until `quit`
/// or end of input. `hello` → `framebench-ab/1`; `prepare FW SCENARIO` → `ok` or `error …`
/// (builds the cell, checked against the oracle); `time N` → ns per request of N dispatches
/// ([`crate::bench::timed_batch`]).
pub fn worker() -> anyhow::Result<ExitCode> {
    if let Some(cpu) = std::env::var("FRAMEBENCH_AB_CPU")
        .ok()
        .and_then(|c| c.parse::<usize>().ok())
    {
        crate::pinning::pin_current_thread(&[cpu]);
    }
    let fixtures = crate::fixtures::Fixtures::load_default()?;
    let config = crate::framework::Config::new(fixtures, None);
    let mut prepared: Option<crate::cell::Prepared> = None;
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let words: Vec<&str> = line.split_whitespace().collect();
        let reply = match words[..] {
            ["hello"] => "framebench-ab/1".to_owned(),
            ["quit"] => break,
            ["prepare", fw, scenario] => {
                prepared = None;
                match prepare(&config, fw, scenario) {
                    Ok(p) => {
                        prepared = Some(p);
                        "ok".to_owned()
                    }
                    Err(e) => format!("error {e:#}"),
                }
            }
            ["time", n] => match (&prepared, n.parse::<usize>()) {
                (Some(p), Ok(n)) if n > 0 => match crate::bench::timed_batch(&*p.app, p.path, n) {
                    Ok(t) => format!("{:.3}", t.as_secs_f64() * 1e9 / n as f64),
                    Err(e) => format!("error {e:#}"),
                },
                _ => "error no cell prepared, or a bad count".to_owned(),
            },
            _ => format!("error unknown request '{line}'"),
        };
        if writeln!(out, "{reply}").and_then(|()| out.flush()).is_err() {
            break;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn prepare(
    config: &crate::framework::Config,
    fw: &str,
    scenario: &str,
) -> anyhow::Result<crate::cell::Prepared> {
    let entry = crate::frameworks::find(fw)
        .ok_or_else(|| anyhow::anyhow!("framework '{fw}' is not in this build"))?;
    anyhow::ensure!(entry.in_process, "{fw} has no in-process path");
    let scenario = crate::oracle::scenario(scenario)
        .ok_or_else(|| anyhow::anyhow!("unknown scenario '{scenario}'"))?;
    Ok(crate::cell::prepare(entry, config, scenario)?)
}
