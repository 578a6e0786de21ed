//! `framebench check`: frameworks × scenarios × variants against the oracle, in-process and over
//! loopback (exit 1 on a mismatch); with `--conformance`, a report of each server against the
//! protocol's rules (`crate::check`, `crate::conformance`).

use std::process::ExitCode;

use anyhow::Context as _;

use super::args::{OptArgs, RedisArg};
use crate::check::{check_framework, print_table};
use crate::framework::Config;
use crate::options::Options;

/// A conformance report: framebench's rules, or Autobahn's cases (WebSocket).
enum Judged {
    Rules(crate::conformance::Report),
    Autobahn(crate::autobahn::Report),
}

impl Judged {
    fn terminal(&self) -> String {
        match self {
            Judged::Rules(r) => r.terminal(),
            Judged::Autobahn(r) => r.terminal(),
        }
    }

    fn markdown(&self, window: crate::provenance::Window) -> String {
        match self {
            Judged::Rules(r) => r.markdown(window),
            Judged::Autobahn(r) => r.markdown(window),
        }
    }
}

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
    /// With --conformance --protocol ws: Autobahn's cases to run. `quick` leaves out 9.*
    /// (messages up to 16 MiB) and 12.* and 13.* (compression).
    #[arg(long, value_enum, default_value = "quick", requires = "conformance")]
    autobahn: crate::autobahn::Cases,
    #[command(flatten)]
    opts: OptArgs,
    #[command(flatten)]
    redis: RedisArg,
}

/// `framebench check`, or `check --conformance`.
pub fn run(args: CheckArgs) -> anyhow::Result<ExitCode> {
    if args.conformance {
        let started = std::time::SystemTime::now();
        let report = conformance(&args.frameworks, &args.opts, args.autobahn)?;
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
    // Refused before any framework is resolved: naming none means every one, Go peers built.
    opts.protocol
        .over(opts.tls.transport())
        .map_err(crate::error::usage)?;
    let entries = crate::select::frameworks(names, |_| true, "")?;
    let entries = crate::select::for_runtime(names, entries, opts.runtime, &[opts.protocol])?;
    let variants: Vec<Options> = Options::variants(opts.threads.into())
        .into_iter()
        .map(|o| Options {
            runtime: opts.runtime,
            protocol: opts.protocol,
            transport: opts.tls.transport(),
            ..o
        })
        .collect();
    let fixtures = crate::fixtures::Fixtures::load_default()?;
    crate::select::prepare_entries(entries.iter().copied());
    let redis = redis.provide()?;
    let base = crate::framework::Config::new(fixtures, redis.url());
    let mut rows = Vec::new();
    let stop = crate::interrupt::interrupted();
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

/// `framebench check --conformance [--protocol P] [--tls]`: every serving framework named (all
/// when none) against the protocol's rules, over TLS with `--tls` ([`crate::conformance`]). A
/// report: it exits 0 whatever the servers answer.
fn conformance(
    names: &[String],
    opts: &OptArgs,
    autobahn: crate::autobahn::Cases,
) -> anyhow::Result<Judged> {
    let transport = opts.tls.transport();
    opts.protocol.over(transport).map_err(crate::error::usage)?;
    if let crate::protocol::Judge::Unjudged(why) = opts.protocol.judge() {
        return Err(crate::error::usage(why));
    }
    // A framework without a server (a floor) has no row, named or not.
    let entries: Vec<_> = crate::select::frameworks(names, |_| true, "")?
        .into_iter()
        .filter(|e| e.loopback)
        .collect();
    let entries = crate::select::for_runtime(names, entries, opts.runtime, &[opts.protocol])?;
    let fixtures = crate::fixtures::Fixtures::load_default()?;
    crate::select::prepare_entries(entries.iter().copied());

    let config = Config::new(fixtures, None).with(Options {
        threads: opts.threads.into(),
        runtime: opts.runtime,
        protocol: opts.protocol,
        transport,
        ..Options::default()
    });
    Ok(match opts.protocol.judge() {
        crate::protocol::Judge::Rules(suite) => {
            Judged::Rules(crate::conformance::run(&entries, &config, suite))
        }
        crate::protocol::Judge::Autobahn => {
            Judged::Autobahn(crate::autobahn::run(&entries, &config, autobahn))
        }
        crate::protocol::Judge::Unjudged(why) => return Err(crate::error::usage(why)),
    })
}
