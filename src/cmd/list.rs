//! `framebench list`: every framework compiled in with its exact version, then the scenarios
//! (a loopback-only one says so in its request); with `--markdown`, the README's framework
//! table instead; with `--protocol P`, which frameworks serve P (docs/methodology/http2.md
//! holds h2c's).

use std::process::ExitCode;

use crate::frameworks::{markdown_table, protocol_table, REGISTRY};
use crate::options::Protocol;
use crate::oracle;
use crate::table::{Align, Table};

/// `framebench list`'s arguments.
#[derive(clap::Args)]
pub struct ListArgs {
    /// Print the README's framework table (markdown) instead: README.md holds this output
    /// between its `framebench list --markdown` markers.
    #[arg(long)]
    markdown: bool,
    /// Print which frameworks serve this protocol, through what, or why not (markdown):
    /// docs/methodology/http2.md holds h2c's between its `framebench list --protocol h2c`
    /// markers.
    #[arg(long, value_enum, conflicts_with = "markdown")]
    protocol: Option<Protocol>,
}

/// `framebench list`: every framework compiled in with its exact version, then the scenarios.
pub fn run(args: ListArgs) -> anyhow::Result<ExitCode> {
    if args.markdown {
        print!("{}", markdown_table());
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(protocol) = args.protocol {
        print!("{}", protocol_table(protocol));
        return Ok(ExitCode::SUCCESS);
    }
    println!("frameworks:");
    let mut frameworks = Table::new([
        ("name", Align::Left),
        ("crate", Align::Left),
        ("version", Align::Left),
        ("modes", Align::Left),
    ]);
    for e in REGISTRY {
        let modes = match (e.in_process, e.loopback) {
            (true, true) => "in-process, loopback",
            (true, false) => "in-process",
            (false, true) => "loopback",
            (false, false) => "-",
        };
        // Every protocol it serves beyond the default, which every server speaks.
        let modes = Protocol::ALL
            .into_iter()
            .filter(|&p| !p.is_default() && e.support(p).why_not().is_none())
            .fold(modes.to_owned(), |m, p| format!("{m}, {p}"));
        // And every transport beyond plain TCP.
        let modes = crate::options::Transport::ALL
            .into_iter()
            .filter(|&t| !t.is_default() && e.transport(t).why_not().is_none())
            .fold(modes, |m, t| format!("{m}, {t}"));
        let note = if e.note.is_empty() {
            String::new()
        } else {
            format!(" ({})", e.note)
        };
        frameworks.row([
            e.name.to_string(),
            e.krate.to_string(),
            e.version().to_string(),
            format!("{modes}{note}"),
        ]);
    }
    print!("{}", frameworks.terminal("  "));
    println!("scenarios:");
    let mut scenarios = Table::new([
        ("name", Align::Left),
        ("request", Align::Left),
        ("status", Align::Right),
    ]);
    for s in oracle::all() {
        scenarios.row([
            s.name.to_string(),
            format!("{} {}", s.method.as_str(), s.request_shape()),
            s.status.to_string(),
        ]);
    }
    print!("{}", scenarios.terminal("  "));
    Ok(ExitCode::SUCCESS)
}
