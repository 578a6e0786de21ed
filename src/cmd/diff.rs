//! `framebench diff`: two results files compared, or two frameworks of one (`--pair`), with the
//! `--fail-if` gates (`crate::results::diff`).

use std::path::Path;
use std::process::ExitCode;

use crate::results::diff::{compare, parse_gates, table, Comparison, Filter, Gate};
use crate::results::{Figure, Metric, Results};

/// `framebench diff` arguments.
#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    /// The base results file (`--json` of allocs, load or compare, or docs/generated/results.json).
    pub(crate) base: std::path::PathBuf,
    /// The new results file (omit with --pair: both sides come from BASE).
    pub(crate) new: Option<std::path::PathBuf>,
    /// Two frameworks of one file, `OLD:NEW` (e.g. axum07:axum): NEW's figures against OLD's.
    #[arg(long, value_name = "OLD:NEW")]
    pub(crate) pair: Option<String>,
    /// Exit 1 when a change is worse than a limit: `instructions>+1%,allocs>+0` (metrics:
    /// instructions, allocs, bytes, time, rps; limits `+N` or `+N%`). Repeatable.
    #[arg(long = "fail-if", value_name = "GATES")]
    pub(crate) fail_if: Vec<String>,
    /// Markdown, for a pull-request comment.
    #[arg(long)]
    pub(crate) markdown: bool,
    /// Only these frameworks (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub(crate) frameworks: Vec<String>,
    /// Only these scenarios (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub(crate) scenarios: Vec<String>,
    /// Only variants containing one of these (comma-separated, e.g. `log=off`).
    #[arg(long, value_delimiter = ',')]
    pub(crate) variants: Vec<String>,
}

/// The kind of results a command writes: files of one kind compare, others are refused.
fn kind(command: &str) -> &str {
    match command {
        // The bench run's counts and allocs' counts share their `allocs` figures.
        "report" | "allocs" => "bench",
        "load" | "compare" => "load",
        other => other,
    }
}

/// The two sides of a diff, read and checked against each other.
struct Sides<'a> {
    base: Results,
    new: Results,
    new_path: &'a Path,
    pair: Option<(&'a str, &'a str)>,
}

/// Runs `framebench diff`: 0 when no gate fails, 1 when one does, 2 for bad input.
pub fn run(args: DiffArgs) -> anyhow::Result<ExitCode> {
    let gates = gates(&args.fail_if)?;
    let sides = read_sides(&args)?;
    check_filters(&args, &sides)?;
    let filter = Filter {
        frameworks: args.frameworks.clone(),
        scenarios: args.scenarios.clone(),
        variants: args.variants.clone(),
    };
    let c = compare(&sides.base.figures, &sides.new.figures, sides.pair, &filter);
    if let Some(g) = crate::results::diff::unchecked(&gates, &c.changes) {
        return Err(crate::error::usage(format!(
            "--fail-if {}: no {} figures compared (the files hold: {})",
            g.metric.name(),
            g.metric.name(),
            metrics(&sides.base.figures).join(", ")
        )));
    }
    let (base_name, new_name) = match sides.pair {
        Some((a, b)) => (a.to_owned(), b.to_owned()),
        None => (
            args.base.display().to_string(),
            sides.new_path.display().to_string(),
        ),
    };
    print_comparison(&sides, &c);
    print!(
        "{}",
        table(
            &c,
            args.markdown,
            sides.pair.is_some(),
            &base_name,
            &new_name
        )
    );
    let crossed = crossed(&c, &gates, &new_name);
    if crossed.is_empty() {
        if !gates.is_empty() {
            println!("\nno gate crossed");
        }
        return Ok(ExitCode::SUCCESS);
    }
    println!("\n{} cell(s) crossed a gate:", crossed.len());
    for c in &crossed {
        println!("  {c}");
    }
    Ok(ExitCode::from(1))
}

/// Every `--fail-if` gate, or the usage error of the first that does not parse.
pub(crate) fn gates(texts: &[String]) -> anyhow::Result<Vec<Gate>> {
    Ok(texts
        .iter()
        .map(|g| parse_gates(g))
        .collect::<anyhow::Result<Vec<_>>>()?
        .into_iter()
        .flatten()
        .collect())
}

/// The base and new results (the base twice under `--pair`), refused when they are of two kinds
/// or a side of the pair has no figures.
fn read_sides(args: &DiffArgs) -> anyhow::Result<Sides<'_>> {
    let read = |p: &Path| Results::read(p).map_err(|e| crate::error::usage(format!("{e:#}")));
    let base = read(&args.base)?;
    let pair = match &args.pair {
        None => None,
        Some(p) => Some(
            p.split_once(':')
                .filter(|(a, b)| !a.is_empty() && !b.is_empty())
                .ok_or_else(|| {
                    crate::error::usage(format!("--pair '{p}': expected OLD:NEW, e.g. axum07:axum"))
                })?,
        ),
    };
    let new = match (&args.new, pair) {
        (Some(path), _) => read(path)?,
        (None, Some(_)) => base.clone(),
        // `ab --patch --json` holds both sides of each cell: its `ab/base` and `ab/new`.
        (None, None) if base.command == "ab" => {
            let (b, n) = crate::ab::sides(&base);
            return Ok(Sides {
                base: b,
                new: n,
                new_path: &args.base,
                pair: None,
            });
        }
        (None, None) => {
            return Err(crate::error::usage(
                "diff needs two files, one file and --pair OLD:NEW, or one file of `ab --json`",
            ))
        }
    };
    let new_path = args.new.as_deref().unwrap_or(&args.base);
    if kind(&base.command) != kind(&new.command) {
        return Err(crate::error::usage(format!(
            "{} holds `{}` results and {} `{}` results: compare files of one kind",
            args.base.display(),
            base.command,
            new_path.display(),
            new.command
        )));
    }
    if let Some((a, b)) = pair {
        for (fw, file, path) in [(a, &base, args.base.as_path()), (b, &new, new_path)] {
            if !file.figures.iter().any(|f| f.framework == fw) {
                return Err(crate::error::usage(format!(
                    "--pair: no figures of '{fw}' in {}",
                    path.display()
                )));
            }
        }
    }
    Ok(Sides {
        base,
        new,
        new_path,
        pair,
    })
}

/// A filter that names nothing in either file is a typo, not an empty comparison.
fn check_filters(args: &DiffArgs, sides: &Sides<'_>) -> anyhow::Result<()> {
    let all = || sides.base.figures.iter().chain(&sides.new.figures);
    for (flag, names, of) in [
        (
            "--frameworks",
            &args.frameworks,
            (|f: &Figure| &f.framework) as fn(&Figure) -> &String,
        ),
        ("--scenarios", &args.scenarios, |f: &Figure| &f.scenario),
    ] {
        if let Some(n) = names.iter().find(|n| !all().any(|f| of(f) == *n)) {
            return Err(crate::error::usage(format!(
                "{flag}: no figures of '{n}' in either file"
            )));
        }
    }
    Ok(())
}

/// The lines above the table: how the environments differ, and how many figures changed.
fn print_comparison(sides: &Sides<'_>, c: &Comparison) {
    let env_diff = sides.base.environment.differences(&sides.new.environment);
    if !env_diff.is_empty() {
        println!("environments differ (compared anyway):");
        for d in &env_diff {
            println!("  {d}");
        }
        println!();
    }
    let changed = c.changes.iter().filter(|ch| ch.separated).count();
    println!(
        "{} figures in both, {} changed{}",
        c.changes.len(),
        changed,
        if c.changes.iter().any(|ch| !ch.base.metric.exact()) {
            " (a time or rate counts as changed only when the intervals separate and the change \
             exceeds the run-to-run spread; `≈` otherwise)"
        } else {
            ""
        }
    );
}

/// Each cell that crosses a gate, in one line; a gated figure the new run no longer has (its
/// cell failed) is not a pass.
fn crossed(c: &Comparison, gates: &[Gate], new_name: &str) -> Vec<String> {
    let mut crossed: Vec<String> = c
        .changes
        .iter()
        .flat_map(|ch| {
            gates.iter().filter(move |g| ch.crosses(g)).map(move |g| {
                format!(
                    "{} {}: {} crosses {}>+{}{}",
                    ch.new.name(),
                    ch.base.metric.name(),
                    ch.text(),
                    g.metric.name(),
                    g.limit,
                    if g.percent { "%" } else { "" }
                )
            })
        })
        .collect();
    for cell in &c.only_base {
        if gates
            .iter()
            .any(|g| cell.ends_with(&format!(" {}", g.metric.name())))
        {
            crossed.push(format!("{cell}: missing from {new_name}"));
        }
    }
    crossed
}

/// The metrics present in `figures`, by name.
fn metrics(figures: &[Figure]) -> Vec<&'static str> {
    let mut m: Vec<Metric> = figures.iter().map(|f| f.metric).collect();
    m.sort();
    m.dedup();
    m.into_iter().map(Metric::name).collect()
}
