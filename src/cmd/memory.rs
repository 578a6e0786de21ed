//! `framebench memory`: what each framework's server holds per idle keep-alive connection, and
//! per connection after a large body (`crate::memory`). Prints one table, and writes a
//! `framebench-results` file (`--json`) whose exact heap figures `framebench diff` gates on.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::framework::Entry;
use crate::memory::report::{self, Framework, Summary};
use crate::memory::{Load, Point, Settings};
use crate::options::Options;
use crate::outcome::{NotOk, Outcome};
use crate::results::Results;

/// `framebench memory`.
#[derive(clap::Args)]
pub struct MemoryArgs {
    /// Frameworks, comma-separated (default: every one with a server).
    #[arg(long, value_delimiter = ',')]
    frameworks: Vec<String>,
    /// Idle keep-alive connections, comma-separated: each count is a fresh server read at
    /// rest (0 connections) and then with that many open, each after one `hello`.
    #[arg(long, value_delimiter = ',', default_value = "1000", value_parser = clap::value_parser!(u32).range(1..=60_000))]
    connections: Vec<u32>,
    /// Body sizes, comma-separated (`1MiB`, `16MiB`, `65536`), each sent as one `upload` on
    /// each of --body-connections connections, which then idle; `none` for no body load.
    #[arg(long, value_delimiter = ',', default_value = "1MiB,16MiB", value_parser = body_size)]
    bodies: Vec<BodySize>,
    /// Connections that each carry one body of each size, at most 256 MiB of bodies in all
    /// (16 connections at 16 MiB), so that the first is still open when the server is read.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    body_connections: u32,
    /// Fresh servers per load: the heap figure is exact when they agree to the byte (one run
    /// cannot say).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=20))]
    runs: u16,
    /// Worker threads of each server (a server with a thread per connection gets one per
    /// connection). One by default: with two, which worker took each connection, and whose
    /// caches grew, moved the heap of one build by a block between runs.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=512))]
    threads: u16,
    /// Write the results to this file (`-`: stdout, instead of the table).
    #[command(flatten)]
    tls: super::args::TlsArg,
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Also write the table as a stamped Markdown file (docs/generated/memory.md).
    #[arg(long, value_name = "PATH")]
    markdown: Option<PathBuf>,
    /// Also draw heap and RSS per idle connection as a chart (`.svg` or `.png`).
    #[arg(long, value_name = "PATH")]
    chart: Option<PathBuf>,
}

/// A `--bodies` entry: a size in bytes, or `none`.
#[derive(Clone, Copy, Debug)]
struct BodySize(Option<usize>);

/// Parses `1MiB`, `64KiB`, `65536` or `none`.
fn body_size(text: &str) -> Result<BodySize, String> {
    let t = text.trim();
    if t == "none" {
        return Ok(BodySize(None));
    }
    let (number, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let scale = match unit {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        _ => {
            return Err(format!(
                "{t:?}: a size is bytes, KiB or MiB (1MiB, 65536) or none"
            ))
        }
    };
    let n: usize = number
        .parse()
        .map_err(|_| format!("{t:?}: a size is a whole number (1MiB, 65536)"))?;
    match n.checked_mul(scale) {
        Some(b) if (1..=256 << 20).contains(&b) => Ok(BodySize(Some(b))),
        _ => Err(format!("{t:?}: a body is 1 byte to 256 MiB")),
    }
}

/// Runs `framebench memory`.
pub fn run(args: MemoryArgs) -> anyhow::Result<ExitCode> {
    let entries = crate::select::frameworks(
        &args.frameworks,
        |e| e.loopback,
        "has no server: its memory per connection cannot be measured",
    )?;
    let loads = loads(&args);
    let pinning = crate::pinning::Pinning::one_core_each();
    if !pinning.client_cpus.is_empty() {
        crate::pinning::pin_current_thread(&pinning.client_cpus);
    }
    let scratch = crate::memory::scratch()?;
    let settings = Settings {
        exe: crate::child::framebench_exe()?,
        options: Options {
            threads: usize::from(args.threads),
            transport: args.tls.transport(),
            ..Options::default()
        },
        server_cpus: pinning.server_cpus.clone(),
        scratch: scratch.path().to_owned(),
    };
    // A named framework that does not serve the transport is refused; from the default list,
    // its cells are `–` with the reason.
    if !args.frameworks.is_empty() {
        for e in &entries {
            crate::select::speaks(e, &settings.options)?;
        }
    }
    // One Redis for every server, started here: a server that started its own would count
    // it among the processes that serve.
    let _redis = crate::redis::provide(None)?;
    crate::select::prepare_entries(entries.iter().copied());
    let announced = announce(&loads, &args, &pinning, settings.options.transport);
    eprintln!("{announced}");
    let started = std::time::SystemTime::now();
    let stop = crate::interrupt::interrupted();
    let mut frameworks = Vec::new();
    for entry in entries {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        frameworks.push(framework(entry, &loads, usize::from(args.runs), &settings));
    }
    let failed: Vec<String> = frameworks
        .iter()
        .flat_map(|f| {
            f.loads.iter().filter_map(|(load, s)| match s {
                Err(e) if e.is_failure() => Some(format!("{} {}", f.name, load.label())),
                _ => None,
            })
        })
        .collect();
    let total = frameworks.iter().map(|f| f.loads.len()).sum();
    let results = Results {
        detail: Some(serde_json::to_value(report::detail(&frameworks))?),
        ..Results::new(
            "memory",
            report::figures(&frameworks),
            crate::provenance::Provenance::here(crate::provenance::Window::since(started)),
        )
    };
    if let Some(path) = &args.markdown {
        let window = crate::provenance::Window::since(started);
        let text = report::markdown(&frameworks, window, &announced);
        std::fs::write(path, text)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    if let Some(path) = &args.chart {
        report::chart(&frameworks, path)?;
        eprintln!("wrote {}", path.display());
    }
    match args.json.as_deref() {
        Some(p) if p.as_os_str() == "-" => {
            println!("{}", serde_json::to_string_pretty(&results)?);
        }
        Some(p) => {
            print!("{}", report::render(&frameworks));
            results.write(p)?;
            eprintln!("wrote {}", p.display());
        }
        None => print!("{}", report::render(&frameworks)),
    }
    super::cells_failed(&failed, total, "measured")
}

/// The most body bytes one load sends: 16 connections at 16 MiB. Every connection must still
/// be open when the server is read, and every server closes one idle for 5 s
/// ([`crate::options::KEEP_ALIVE`]): 100 uploads of 16 MiB took 10 s on a 2-core machine
/// (hyper, one thread), and the first connections were gone.
const BODY_BUDGET: usize = 256 << 20;

/// The loads asked for, in order: the idle counts, then each body size.
fn loads(args: &MemoryArgs) -> Vec<Load> {
    let idle = args.connections.iter().map(|&n| Load::Idle {
        connections: n as usize,
    });
    let bodies = args
        .bodies
        .iter()
        .filter_map(|b| b.0)
        .map(|body| Load::Body {
            connections: (args.body_connections as usize).min((BODY_BUDGET / body).max(1)),
            body,
        });
    idle.chain(bodies).collect()
}

/// The line printed before the servers start.
fn announce(
    loads: &[Load],
    args: &MemoryArgs,
    pinning: &crate::pinning::Pinning,
    transport: crate::options::Transport,
) -> String {
    let loads: Vec<String> = loads.iter().map(|l| l.label()).collect();
    let pinned = pinning.servers_and_client();
    let over = match transport {
        crate::options::Transport::Tls => {
            " over TLS (a full handshake per connection, the run's certificate)"
        }
        crate::options::Transport::Tcp => "",
    };
    format!(
        "framebench memory: {} × {} fresh server(s) each{over}, {} thread(s); {pinned}. Heap: \
         the serve process's live bytes (exact where the runs agree); RSS and PSS: the \
         kernel's (/proc/PID/smaps_rollup)",
        loads.join(", "),
        args.runs,
        args.threads
    )
}

/// One framework under every load, `runs` fresh servers each.
fn framework(entry: &Entry, loads: &[Load], runs: usize, settings: &Settings) -> Framework {
    let loads = loads
        .iter()
        .map(|&load| (load, measure_load(entry, load, runs, settings)))
        .collect();
    Framework {
        name: entry.name.to_owned(),
        loads,
    }
}

/// `runs` fresh servers of `entry` under `load`; the first run that is not measured decides.
fn measure_load(entry: &Entry, load: Load, runs: usize, settings: &Settings) -> Outcome<Summary> {
    if let Some((what, why)) = entry.lacks(&settings.options) {
        return Err(NotOk::unsupported(format!("no {what}: {why}")));
    }
    entry.available().map_err(NotOk::NotRun)?;
    // Each side of a connection is a descriptor, in this process and in the server; the rest
    // is headroom for the server's own files and threads.
    let need = load.connections() as u64 + 512;
    crate::proc::raise_open_files(need).map_err(NotOk::skipped)?;
    let points: Vec<Point> = (0..runs)
        .map(|_| crate::memory::measure(entry, load, settings))
        .collect::<Outcome<_>>()?;
    Ok(report::summarize(entry.name, load, &points).expect("at least one run"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_sizes_parse_in_binary_units_or_refuse_in_one_line() {
        assert_eq!(body_size("1MiB").unwrap().0, Some(1 << 20));
        assert_eq!(body_size("64KiB").unwrap().0, Some(64 << 10));
        assert_eq!(body_size("65536").unwrap().0, Some(65536));
        assert_eq!(body_size("none").unwrap().0, None);
        for bad in ["1MB", "x", "0", "512MiB", "-1"] {
            assert!(body_size(bad).is_err(), "{bad}");
        }
    }
}
