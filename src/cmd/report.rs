//! The command-line side of `framebench report`; `main.rs` only parses and calls in here.

use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;

/// `framebench report`.
#[derive(clap::Args)]
pub struct ReportArgs {
    /// The cargo target directory holding `criterion/` and `gungraun/`; give it once per shard
    /// to join the shards of a bench run split over several runners (docs/usage.md).
    #[arg(long, default_value = "target", num_args = 1)]
    pub(crate) target_dir: Vec<PathBuf>,
    /// Where to write the report.
    #[arg(long, default_value = "docs/generated/results.md")]
    pub(crate) out: PathBuf,
    /// Rewrite only the allocation section (and the how-to-reproduce lines) of the existing
    /// report, keeping every other section as it was generated: allocation counts take seconds,
    /// the timings a quiet hour.
    #[arg(long)]
    pub(crate) allocs_only: bool,
    /// Leave the charts out (they are drawn into a folder named after `--out`, beside it:
    /// `docs/generated/results/` for `docs/generated/results.md`).
    #[arg(long)]
    pub(crate) no_charts: bool,
    /// Report sources measured by different builds of framebench (each build is named, in the
    /// output and in the report); without it such a mix is refused.
    #[arg(long)]
    pub(crate) allow_mixed: bool,
    /// Also write the run's figures in Bencher Metric Format (for `bencher run --adapter json`).
    #[arg(long, value_name = "PATH")]
    pub(crate) bmf: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) baselines: crate::results::BaselineArgs,
}

/// Runs `framebench report`.
pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    args.baselines.check("report")?;
    let (text, results) = if args.allocs_only {
        let old = std::fs::read_to_string(&args.out)
            .with_context(|| format!("cannot read {}", args.out.display()))?;
        let [dir] = args.target_dir.as_slice() else {
            return Err(crate::error::usage("--allocs-only reads one --target-dir"));
        };
        let text = crate::report::update_allocs(&old, dir)?;
        println!("--allocs-only: the results file beside the report is left as it was");
        (text, None)
    } else {
        // The charts go in a folder named after the report, beside it: docs/generated/results.md →
        // docs/generated/results/.
        let stem = args
            .out
            .file_stem()
            .map_or("results".into(), |s| s.to_string_lossy().into_owned());
        let dir = args.out.with_file_name(&stem);
        let (text, results) = crate::report::generate(
            &args.target_dir,
            (!args.no_charts).then_some((dir.as_path(), stem.as_str())),
            args.allow_mixed,
        )?;
        print_builds(&results);
        if !args.no_charts {
            println!("wrote the charts into {}", dir.display());
        }
        (text, Some(results))
    };
    if let Some(dir) = args.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(&args.out, crate::generated::markdown(&text))
        .with_context(|| format!("cannot write {}", args.out.display()))?;
    println!("wrote {}", args.out.display());
    // Beside it, the same run as a results file: `framebench diff docs/generated/results.json NEW.json`.
    if let Some(results) = results {
        // results.md → results.json; an `--out` that already ends in .json keeps its name.
        let json = if args.out.extension().is_some_and(|e| e == "json") {
            args.out.with_extension("results.json")
        } else {
            args.out.with_extension("json")
        };
        results.write(&json)?;
        println!("wrote {}", json.display());
        if let Some(p) = &args.bmf {
            results.write_bmf(p)?;
            println!("wrote {}", p.display());
        }
        args.baselines.apply(&results)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// With sources of several builds (`--allow-mixed`) or of an unknown one, each build and what
/// it measured, as the report's environment section names them.
fn print_builds(results: &crate::results::Results) {
    let Some(p) = &results.provenance else {
        return;
    };
    if p.measured.len() > 1 {
        println!("sources of {} builds:", p.measured.len());
        for m in &p.measured {
            println!("  {}: {}", m.build, m.sources.join(", "));
        }
    }
}
