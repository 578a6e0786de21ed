//! `framebench merge`: one load run's results from several processes or hosts combined into
//! one, latency histograms added exactly (`crate::driver::merge`).

use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::driver::merge::{merge_cell, read_part, same_run, Part};
use crate::driver::output::{MergedFrom, Report, RunInfo};

/// `framebench merge`.
#[derive(clap::Args, Debug)]
pub struct MergeArgs {
    /// The results of each process (`load --json`), two or more of one run.
    #[arg(required = true, num_args = 1..)]
    pub(crate) files: Vec<PathBuf>,
    /// Write the merged result here (the format `load --json` writes).
    #[arg(long)]
    pub(crate) json: Option<PathBuf>,
    /// Also write it as Markdown tables.
    #[arg(long)]
    pub(crate) markdown: Option<PathBuf>,
    /// Also draw it (.svg or .png), as `load --plot` does.
    #[arg(long)]
    pub(crate) plot: Option<PathBuf>,
    /// The server's own statistics (`serve --stats`): its request count and CPU time, for the
    /// server's CPU time per request of a run whose server the clients could not meter.
    #[arg(long, value_name = "PATH")]
    pub(crate) server_stats: Option<PathBuf>,
}

/// `framebench merge`.
pub fn run(args: MergeArgs) -> anyhow::Result<ExitCode> {
    let parts: Vec<Part> = args
        .files
        .iter()
        .map(|f| read_part(f))
        .collect::<anyhow::Result<_>>()?;
    same_run(&parts)?;
    let stats = args
        .server_stats
        .as_ref()
        .map(|p| crate::serve::ServerStats::read(p))
        .transpose()?;
    let mut cells = (0..parts[0].report.cells.len())
        .map(|k| merge_cell(&parts, k))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if let (Some(s), [cell]) = (&stats, cells.as_mut_slice()) {
        // The server's whole life, warm-up and checks included, over every request it served.
        if let Some(n) = s.requests.filter(|&n| n > 0) {
            cell.server_user_us_per_req = Some(s.user_s * 1e6 / n as f64);
            cell.server_sys_us_per_req = Some(s.system_s * 1e6 / n as f64);
            cell.server_peak_rss = s.peak_rss_bytes;
        }
    }
    let report = merged_report(&parts, cells);
    print_summary(&report, parts.len(), stats.as_ref());
    // Written here from the parts: each part's build names it where they differ.
    let sources: Vec<_> = parts.iter().flat_map(|p| p.sources.clone()).collect();
    let results = report.results("load", crate::provenance::Provenance::joined(&sources));
    if let Some(p) = &args.json {
        results
            .write(p)
            .with_context(|| format!("cannot write {}", p.display()))?;
    }
    if let Some(p) = &args.markdown {
        std::fs::write(p, crate::generated::markdown(&report.markdown()))
            .with_context(|| format!("cannot write {}", p.display()))?;
    }
    if let Some(p) = &args.plot {
        crate::chart::load_lines::draw_load(&report.cells, p, "framebench merge")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// One load report from the parts' cells, merged: the rate and request count are the parts'
/// sums, and every part is named with its own cells.
fn merged_report(parts: &[Part], cells: Vec<crate::driver::stats::CellResult>) -> Report {
    let first = &parts[0].report;
    let mut params = first.params.clone();
    params.rate = parts.iter().map(|p| p.report.params.rate).sum();
    params.requests = parts.iter().map(|p| p.report.params.requests).sum();
    params.shard = None;
    Report {
        environment: first.environment.clone(),
        params,
        cells,
        run: RunInfo {
            host: "merged".into(),
            hdr_log: None,
            merged_from: parts
                .iter()
                .map(|p| MergedFrom {
                    file: p.file.display().to_string(),
                    host: p.report.run.host.clone(),
                    shard: p.report.params.shard,
                    cells: p.report.cells.clone(),
                })
                .collect(),
        },
    }
}

/// The merged report on the terminal, the processes it came from and the server's own figures.
fn print_summary(report: &Report, processes: usize, stats: Option<&crate::serve::ServerStats>) {
    print!("{}", report.terminal());
    println!(
        "merged from {} processes: {}",
        processes,
        report
            .run
            .merged_from
            .iter()
            .map(|m| {
                let rps: f64 = m.cells.iter().map(|c| c.rps).sum();
                format!(
                    "{} ({}{:.0} req/s)",
                    m.host,
                    m.shard.map_or(String::new(), |s| format!(
                        "shard {}/{}, ",
                        s.index, s.count
                    )),
                    rps
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    );
    if let Some(s) = stats {
        println!(
            "server (serve --stats): {} requests served in all, CPU {:.3} s user + {:.3} s system",
            s.requests.map_or("uncounted".into(), |n| n.to_string()),
            s.user_s,
            s.system_s
        );
    }
}
