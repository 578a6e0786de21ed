//! Choosing what a command runs: names to registry entries and scenarios (an unknown name is a
//! usage error, exit 2), the runtime filter, and the frameworks to prepare first. A waiting
//! scenario (`delay`, [`crate::oracle::WAITING`]) is found only by the commands that load
//! servers over loopback ([`loaded_scenarios`]); every other command refuses it by name
//! ([`scenario`]).

use crate::framework::Entry;
use crate::frameworks::REGISTRY;
use crate::options::{Protocol, Runtime};
use crate::oracle::{Scenario, SCENARIOS};

/// The oracle's scenario called `name` for a command that times or counts one request at a
/// time (in-process, or on one connection), or the usage error every command gives for an
/// unknown one. A waiting scenario is refused in one line: its sleep would be all it measured.
pub(crate) fn scenario(name: &str) -> anyhow::Result<&'static Scenario> {
    let s = loaded_scenario(name)?;
    if s.loopback_only() {
        let how = match s.is_message() {
            true => "`framebench load --protocol ws`".to_owned(),
            false => format!("`framebench load --scenario {name}`"),
        };
        return Err(crate::error::usage(format!(
            "{name} is {}; load it over loopback: {how}",
            s.loopback_reason()
        )));
    }
    Ok(s)
}

/// The oracle's scenario called `name` for a command that loads servers over loopback (`load`,
/// `compare`, `scale`), the waiting ones included, or the usage error for an unknown one.
pub(crate) fn loaded_scenario(name: &str) -> anyhow::Result<&'static Scenario> {
    crate::oracle::loopback_scenario(name).ok_or_else(|| {
        crate::error::usage(format!(
            "unknown scenario '{name}' (one of: {})",
            crate::oracle::names().join(", ")
        ))
    })
}

/// The registry entry called `name`, or the usage error every command gives for an unknown one.
pub(crate) fn framework(name: &str) -> anyhow::Result<&'static crate::framework::Entry> {
    crate::frameworks::find(name).ok_or_else(|| {
        crate::error::usage(format!(
            "unknown framework '{name}' (compiled in: {}; others need their Cargo feature)",
            crate::frameworks::names().join(", ")
        ))
    })
}

/// The registry entries called `names`, in that order, or every one `can` keeps when `names` is
/// empty. An unknown name is [`framework`]'s usage error; a named entry `can` refuses is the
/// usage error `<name> <cannot>`.
pub(crate) fn frameworks(
    names: &[String],
    can: impl Fn(&Entry) -> bool,
    cannot: &str,
) -> anyhow::Result<Vec<&'static Entry>> {
    if names.is_empty() {
        return Ok(REGISTRY.iter().filter(|e| can(e)).collect());
    }
    names
        .iter()
        .map(|n| {
            let e = framework(n)?;
            if can(e) {
                Ok(e)
            } else {
                Err(crate::error::usage(format!("{n} {cannot}")))
            }
        })
        .collect()
}

/// Refuses `entry` under `options` when it cannot serve their protocol over their transport:
/// the usage error `<name> does not serve h2c: <why>` (or `tls`).
pub(crate) fn speaks(entry: &Entry, options: &crate::options::Options) -> anyhow::Result<()> {
    options
        .protocol
        .over(options.transport)
        .map_err(crate::error::usage)?;
    match entry.lacks(options) {
        Some((what, why)) => Err(crate::error::usage(format!(
            "{} does not serve {what}: {why}",
            entry.name
        ))),
        None => Ok(()),
    }
}

/// The entries that serve `options`' protocol over its transport: a named one that does not is
/// refused with its reason ([`speaks`]); from the default list, the others are skipped with one
/// line.
pub(crate) fn serving(
    names: &[String],
    entries: Vec<&'static Entry>,
    options: &crate::options::Options,
) -> anyhow::Result<Vec<&'static Entry>> {
    if !names.is_empty() {
        for e in &entries {
            speaks(e, options)?;
        }
        return Ok(entries);
    }
    options
        .protocol
        .over(options.transport)
        .map_err(crate::error::usage)?;
    let (keep, left): (Vec<&Entry>, Vec<&Entry>) = entries
        .into_iter()
        .partition(|e| e.lacks(options).is_none());
    if let Some((what, _)) = left.first().and_then(|e| e.lacks(options)) {
        let names: Vec<&str> = left.iter().map(|e| e.name).collect();
        eprintln!(
            "skipping {} (no {what}: `framebench list` marks what each serves, and its framework \
             file says why)",
            names.join(", ")
        );
    }
    Ok(keep)
}

/// Why a framework has no `--runtime per-core`, in the one line that refuses or skips it.
const NO_PER_CORE: &str =
    "a thread model of its own, not a tokio runtime framebench builds; docs/methodology/many-cores.md, \
     \"Threads and runtimes\"";

/// Why a framework has no `--runtime per-core` under a protocol though it has one otherwise
/// (hyperlane under h2c, [`Entry::takes_per_core`]).
const NO_PER_CORE_UNDER: &str =
    "under --protocol h2c its own server binds one listener; docs/methodology/http2.md";

/// `entries` under `runtime` and each of `protocols`: all of them for `work-stealing`; for
/// `per-core`, those that take it under every protocol ([`Entry::takes_per_core`]). A framework
/// the user named that cannot is refused with one line (exit 2); from the default list, the
/// others are skipped with one line.
pub(crate) fn for_runtime(
    names: &[String],
    entries: Vec<&'static Entry>,
    runtime: Runtime,
    protocols: &[Protocol],
) -> anyhow::Result<Vec<&'static Entry>> {
    if runtime == Runtime::WorkStealing {
        return Ok(entries);
    }
    let (keep, left): (Vec<&Entry>, Vec<&Entry>) = entries
        .into_iter()
        .partition(|e| protocols.iter().all(|&p| e.takes_per_core(p)));
    // Two reasons, each with its own line: no per-core runtime at all, or none under one of
    // `protocols`.
    let (under, never): (Vec<&Entry>, Vec<&Entry>) = left.into_iter().partition(|e| e.per_core);
    for (left, why) in [(never, NO_PER_CORE), (under, NO_PER_CORE_UNDER)] {
        if left.is_empty() {
            continue;
        }
        let list = left.iter().map(|e| e.name).collect::<Vec<_>>().join(", ");
        if !names.is_empty() {
            return Err(crate::error::usage(format!(
                "--runtime {runtime}: {list} cannot take it ({why})"
            )));
        }
        eprintln!("--runtime {runtime}: skipping {list} ({why})");
    }
    Ok(keep)
}

/// Asks each of `entries` whether it can run here, before anything is timed: this builds the Go
/// peers (a progress line, a bound of its own) and says once why anything is skipped.
pub(crate) fn prepare_entries<'a>(entries: impl IntoIterator<Item = &'a Entry>) {
    for entry in entries {
        let _ = entry.available();
    }
}

/// The scenarios named (default: all of [`SCENARIOS`]) for a command that times one request at
/// a time (`time`): a waiting one is refused ([`scenario`]). For framework targets, whose
/// servers need a local redis-server for the redis scenario, that scenario is skipped with one
/// line without one; a URL target brings its own server.
pub(crate) fn served_scenarios(
    names: &[String],
    url_target: bool,
) -> anyhow::Result<Vec<&'static Scenario>> {
    chosen_scenarios(names, url_target, scenario)
}

/// [`served_scenarios`] for a command that loads servers over loopback (`load`, `compare`,
/// `scale`): a waiting scenario runs when named (the default is [`SCENARIOS`] still).
pub(crate) fn loaded_scenarios(
    names: &[String],
    url_target: bool,
    protocols: &[crate::options::Protocol],
) -> anyhow::Result<Vec<&'static Scenario>> {
    if names.is_empty() {
        // Each protocol's own: the HTTP scenarios, `echo` under WebSocket.
        let mut chosen: Vec<&'static Scenario> = Vec::new();
        for p in protocols {
            for s in p.default_scenarios() {
                if !chosen.iter().any(|c| c.name == s.name) {
                    chosen.push(s);
                }
            }
        }
        return Ok(chosen
            .into_iter()
            .filter(|s| url_target || crate::redis::children_can_serve(s))
            .collect());
    }
    let chosen = chosen_scenarios(names, url_target, loaded_scenario)?;
    for s in &chosen {
        if !protocols.iter().any(|p| p.carries(s)) {
            let asked: Vec<&str> = protocols.iter().map(|p| p.name()).collect();
            return Err(crate::error::usage(format!(
                "no protocol of the run ({}) carries {}: `echo` is WebSocket's (--protocol ws), \
                 and WebSocket carries nothing else",
                asked.join(", "),
                s.name
            )));
        }
    }
    Ok(chosen)
}

fn chosen_scenarios(
    names: &[String],
    url_target: bool,
    find: fn(&str) -> anyhow::Result<&'static Scenario>,
) -> anyhow::Result<Vec<&'static Scenario>> {
    let chosen: Vec<&'static Scenario> = if names.is_empty() {
        SCENARIOS.iter().collect()
    } else {
        names.iter().map(|n| find(n)).collect::<Result<_, _>>()?
    };
    // Without a Redis the redis scenario is skipped with one line, asked for or not.
    Ok(chosen
        .into_iter()
        .filter(|s| url_target || crate::redis::children_can_serve(s))
        .collect())
}
