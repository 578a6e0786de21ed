//! `framebench ab OLD NEW`: two builds of framebench timed against each other in paired rounds,
//! the time counterpart of `framebench diff`'s exact count gate.
//!
//! Two criterion runs of one build differ by up to 31 % on this project's machine, so
//! sequential runs cannot compare two builds' times. Here both builds run at once, each as a
//! worker process (`framebench ab-worker`, hidden) that builds and checks one in-process cell
//! and then times batches of it when asked. The parent asks them in turn, A B, B A, A B …, each
//! batch a few milliseconds, both workers pinned to the same core and never running together, so
//! a slow spell of the machine slows both sides of a round (the design of tango-bench and of
//! [`crate::paired`]).
//!
//! One pair of processes is not enough: a process's heap and code layout moves its time by a
//! few percent for its whole life. One binary against itself with one pair of workers read
//! +0.7 %, +4.7 % and +2.3 % on three of six cells, each "separated" by 30 paired rounds. So each
//! cell starts `--restarts` fresh pairs of workers, takes the median of a few paired rounds from
//! each, and publishes the median over the pairs with its distribution-free 95 % interval: the
//! interval covers the layouts, not only the machine's drift. `≈` when it holds 1.00.
//!
//! `ab --patch CRATE=PATH` makes the two builds itself, from a framework author's checkout
//! ([`patch`]), and adds the exact counts and the loopback rate to the time.

mod build;
pub(crate) mod checkout;
pub(crate) mod measure;
pub(crate) mod patch;
mod report;

pub(crate) use checkout::parse_patch;
pub(crate) use report::{check_gates, crossed, functions, render, results, sides};

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use crate::interval::{self, Estimate};

/// One batch of each side takes about this long.
pub(crate) const BATCH: Duration = Duration::from_millis(2);

/// A worker process of one build.
pub(crate) struct Worker {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    name: String,
}

impl Worker {
    pub(crate) fn start(exe: &PathBuf, cpus: &[usize]) -> anyhow::Result<Worker> {
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
pub(crate) struct Row {
    pub(crate) framework: String,
    pub(crate) scenario: String,
    pub(crate) old_ns: Option<Estimate>,
    pub(crate) ratio: anyhow::Result<Estimate>,
}

/// Times one cell: `restarts` fresh pairs of workers, `rounds` paired rounds from each.
pub(crate) fn cell(
    (old_exe, new_exe, cpus): (&PathBuf, &PathBuf, &[usize]),
    fw: &str,
    scenario: &str,
    restarts: usize,
    rounds: usize,
) -> Row {
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
                crate::paired::paired(rounds, |side| if side { new.time(n) } else { old.time(n) })?;
            let pair: Vec<f64> = a.iter().zip(&b).map(|(a, b)| b / a).collect();
            ratios.extend(interval::median_interval(&pair).map(|e| e.point));
            olds.extend(interval::median_interval(&a).map(|e| e.point));
        }
        Ok((olds, ratios))
    })();
    let (old_ns, ratio) = match measured {
        Ok((olds, ratios)) => (
            interval::median_interval(&olds),
            interval::median_interval(&ratios).ok_or_else(|| anyhow::anyhow!("no rounds")),
        ),
        Err(e) => (None, Err(e)),
    };
    Row {
        framework: fw.to_owned(),
        scenario: scenario.to_owned(),
        old_ns,
        ratio,
    }
}

pub(crate) fn prepare(
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
