//! `framebench ab`: two framebench builds timed against each other in paired rounds
//! (`crate::ab` drives the workers).

use std::path::PathBuf;
use std::process::ExitCode;

use crate::ab::{cell, Worker, BATCH};

/// `framebench ab` arguments.
#[derive(Debug, clap::Args)]
pub struct AbArgs {
    /// The old build's `framebench` binary (not with --patch, which builds both).
    // Not `conflicts_with = "patch"`: clap then stops enforcing the `requires = "patch"` of
    // the flags below when OLD is given; `run` refuses OLD with --patch itself.
    #[arg(required_unless_present = "patch")]
    pub(crate) old: Option<PathBuf>,
    /// The new build's `framebench` binary (the same path compares a build with itself).
    #[arg(required_unless_present = "patch")]
    pub(crate) new: Option<PathBuf>,
    /// In-process frameworks to compare (default: every one of this build; a framework the
    /// other build lacks is a FAIL row).
    pub(crate) frameworks: Vec<String>,
    /// Compare the pinned release of a framework's crate with your checkout of it: CRATE as in
    /// Cargo.lock (`axum`, `actix-web`), PATH the crate's folder or its workspace's. Builds
    /// both sides itself, with only the features of the frameworks measured.
    #[arg(long, value_name = "CRATE=PATH", value_parser = crate::ab::parse_patch)]
    pub(crate) patch: Option<crate::ab::checkout::Patch>,
    /// With --patch: compare two revisions of the checkout (base REV against the checkout as
    /// it is), through a git worktree of REV, instead of the pinned release against it.
    #[arg(long, value_name = "REV", requires = "patch")]
    pub(crate) base: Option<String>,
    /// With --patch: the frameworks to measure (default: the one whose crate is CRATE and whose
    /// pinned major.minor is the checkout's, else the newest such).
    #[arg(
        long = "frameworks",
        value_name = "NAMES",
        value_delimiter = ',',
        requires = "patch"
    )]
    pub(crate) patch_frameworks: Vec<String>,
    /// Scenarios, comma-separated (default: hello; with --patch every one the framework serves
    /// in-process without Redis).
    #[arg(long, value_delimiter = ',')]
    pub(crate) scenarios: Vec<String>,
    /// Fresh pairs of worker processes per cell (at least 6, which bounds a median at 95 %).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(6..=1000))]
    pub(crate) restarts: u16,
    /// Paired rounds per pair of workers.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub(crate) rounds: u16,
    /// With --patch: paired rounds of `framebench load` per cell for the loopback rate (0: no
    /// rate; else at least 6, which bounds a median at 95 %).
    #[arg(long, default_value_t = 6, requires = "patch", value_parser = loopback_rounds)]
    pub(crate) loopback_rounds: u16,
    /// With --patch: exit 1 when a change is worse than a limit, as `diff --fail-if` takes it
    /// (`allocs>+0,time>+5%`). Repeatable.
    #[arg(long = "fail-if", value_name = "GATES", requires = "patch")]
    pub(crate) fail_if: Vec<String>,
    /// With --patch: also write the report as Markdown there (a pull-request comment).
    #[arg(long, value_name = "FILE", requires = "patch")]
    pub(crate) markdown: Option<PathBuf>,
    /// With --patch: write the figures there as a results file (`framebench diff FILE` reads
    /// its two sides).
    #[arg(long, value_name = "FILE", requires = "patch")]
    pub(crate) json: Option<PathBuf>,
    /// With --patch: the scratch folder (manifests, the shared target folder, the worktree of
    /// --base) [default: target/ab-patch].
    #[arg(long, value_name = "DIR", requires = "patch")]
    pub(crate) scratch: Option<PathBuf>,
}

/// `--loopback-rounds`: 0, or at least 6.
fn loopback_rounds(text: &str) -> Result<u16, String> {
    match text.parse::<u16>() {
        Ok(n) if n == 0 || (6..=1000).contains(&n) => Ok(n),
        _ => Err(format!("'{text}': 0 (no rate) or 6 to 1000")),
    }
}

/// Runs `framebench ab`: two binaries given, or with `--patch` two builds made here.
pub fn run(args: AbArgs) -> anyhow::Result<ExitCode> {
    match (&args.patch, &args.old, &args.new) {
        (Some(_), Some(_), _) => Err(crate::error::usage(
            "--patch builds both sides itself: give it no OLD and NEW binaries",
        )),
        (Some(patch), None, _) => patched(&args, patch),
        (None, Some(old), Some(new)) => binaries(&args, old, new),
        _ => Err(crate::error::usage(
            "ab takes OLD and NEW binaries, or --patch CRATE=PATH",
        )),
    }
}

/// `framebench ab --patch CRATE=PATH`: 0 when no gate is crossed, 1 when one is, 2 for bad
/// input (a checkout that is not the crate or does not build included).
fn patched(args: &AbArgs, patch: &crate::ab::checkout::Patch) -> anyhow::Result<ExitCode> {
    let gates = super::diff::gates(&args.fail_if)?;
    let scenarios = if args.scenarios.is_empty() {
        crate::allocs::scenarios().collect()
    } else {
        args.scenarios
            .iter()
            .map(|s| crate::select::scenario(s))
            .collect::<anyhow::Result<Vec<_>>>()?
    };
    if !args.frameworks.is_empty() {
        return Err(crate::error::usage(
            "with --patch, name frameworks with --frameworks A,B",
        ));
    }
    let started = std::time::SystemTime::now();
    let plan = crate::ab::patch::prepare(
        patch,
        args.base.as_deref(),
        &args.patch_frameworks,
        args.scratch.as_deref(),
    )?;
    for line in &plan.lines {
        println!("{line}");
    }
    let builds = plan.build()?;
    let settings = crate::ab::patch::Settings {
        restarts: args.restarts.into(),
        rounds: args.rounds.into(),
        load: crate::ab::measure::Load {
            rounds: args.loopback_rounds.into(),
            connections: 8,
            duration: std::time::Duration::from_secs(1),
        },
    };
    println!("measuring {} scenario(s) …", scenarios.len());
    let measured = builds.measure(&plan.entries, &scenarios, &settings);
    crate::ab::check_gates(&measured, &gates)?;
    println!();
    print!(
        "{}",
        crate::ab::render(&plan, &builds, &measured, &gates, false)
    );
    if let Some(path) = &args.markdown {
        let text = crate::ab::render(&plan, &builds, &measured, &gates, true);
        std::fs::write(path, text)
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    }
    if let Some(path) = &args.json {
        let provenance =
            crate::provenance::Provenance::here(crate::provenance::Window::since(started));
        crate::ab::results(&measured, provenance).write(path)?;
        println!("wrote {}", path.display());
    }
    if !crate::ab::crossed(&measured, &gates).is_empty() {
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// `framebench ab OLD NEW`.
fn binaries(args: &AbArgs, old: &PathBuf, new: &PathBuf) -> anyhow::Result<ExitCode> {
    let scenarios = if args.scenarios.is_empty() {
        vec!["hello".to_owned()]
    } else {
        args.scenarios.clone()
    };
    let pinning = crate::pinning::Pinning::one_core_each();
    let cpus = pinning.server_cpus.clone();
    // Both binaries must answer before anything is timed.
    drop(Worker::start(old, &cpus)?);
    drop(Worker::start(new, &cpus)?);
    let frameworks: Vec<String> = if args.frameworks.is_empty() {
        crate::frameworks::REGISTRY
            .iter()
            .filter(|e| e.in_process && !e.baseline)
            .map(|e| e.name.to_owned())
            .collect()
    } else {
        args.frameworks.clone()
    };
    for s in &scenarios {
        crate::select::scenario(s)?;
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
    println!("old: {}\nnew: {}", old.display(), new.display());
    println!(
        "{:<14} {:<10} {:>12}  new / old",
        "framework", "scenario", "old"
    );
    let mut rows = Vec::new();
    for fw in &frameworks {
        for scenario in &scenarios {
            let binaries = (old, new, cpus.as_slice());
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
                Err(e) => format!("FAIL {e:#}"),
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
        return Err(anyhow::anyhow!(
            "{failed} cell(s) not compared (FAIL above)"
        ));
    }
    Ok(ExitCode::SUCCESS)
}
