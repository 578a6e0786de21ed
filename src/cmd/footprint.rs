//! `framebench footprint BUILDS`: the footprint table, chart and results file from what
//! scripts/footprint.sh measured (`crate::footprint`). The script is the way to run it.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

use crate::results::Results;

/// `framebench footprint`.
#[derive(clap::Args)]
pub struct FootprintArgs {
    /// The builds file scripts/footprint.sh wrote (target/footprint/builds.json), with each
    /// feature's start-up file beside it.
    builds: PathBuf,
    /// Write the table as a stamped Markdown file (docs/generated/footprint.md).
    #[arg(long, value_name = "PATH")]
    markdown: Option<PathBuf>,
    /// Write a results file: each framework's start-up time, with the rows as its detail.
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Draw build time, binary size and start-up as a chart (`.svg` or `.png`).
    #[arg(long, value_name = "PATH")]
    chart: Option<PathBuf>,
}

/// Runs `framebench footprint`.
pub fn run(args: FootprintArgs) -> anyhow::Result<ExitCode> {
    let builds = crate::footprint::Builds::read(&args.builds)?;
    let dir = args.builds.parent().unwrap_or(std::path::Path::new("."));
    let (rows, sources) = crate::footprint::rows(&builds, dir)?;
    let markdown = crate::footprint::markdown(&builds, &rows, &sources);
    match &args.markdown {
        Some(path) => {
            std::fs::write(path, &markdown)
                .with_context(|| format!("writing {}", path.display()))?;
            eprintln!("wrote {}", path.display());
        }
        None => print!("{markdown}"),
    }
    if let Some(path) = &args.chart {
        crate::footprint::chart(&rows, path)?;
        eprintln!("wrote {}", path.display());
    }
    if let Some(path) = &args.json {
        let figures = rows
            .iter()
            .map(|r| crate::startup::figure(&r.framework, &r.startup))
            .collect();
        let results = Results {
            detail: Some(serde_json::to_value(&rows)?),
            ..Results::new(
                "footprint",
                figures,
                crate::provenance::Provenance::joined(&sources),
            )
        };
        results.write(path)?;
        eprintln!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
