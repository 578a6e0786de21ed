//! The charts of `framebench report`: for each scenario, one sorted bar chart per metric
//! (in-process time with criterion's interval as whiskers, instructions per request,
//! allocations per request, loopback time per request with its interval), written as SVG
//! beside the report (`docs/results/` for `docs/results.md`) and embedded in it above the
//! tables.

use std::fmt::Write as _;
use std::path::Path;

use crate::chart::{self, Bar, Panel};
use crate::oracle::SCENARIOS;
use crate::units::{fmt_count, fmt_ns};

use super::{Count, Timing};

/// One metric of the charts: its file-name part, its title, and how to find its bars.
struct Metric {
    slug: &'static str,
    title: &'static str,
    axis: &'static str,
    format: fn(f64) -> String,
}

const TIME: Metric = Metric {
    slug: "time",
    title: "in-process time per request (criterion, 95 % interval)",
    axis: "time per request, log=off io=memory (lower is better)",
    format: fmt_ns,
};
const INSTRUCTIONS: Metric = Metric {
    slug: "instructions",
    title: "in-process instructions per request (callgrind)",
    axis: "instructions per request, log=off (lower is better)",
    format: fmt_count,
};
const ALLOCATIONS: Metric = Metric {
    slug: "allocations",
    title: "in-process allocations per request",
    axis: "alloc calls per request, log=off (lower is better)",
    format: fmt_count,
};
const LOOPBACK: Metric = Metric {
    slug: "loopback",
    title: "loopback time per request (criterion, 95 % interval)",
    axis: "round trip on one keep-alive connection, server --threads 1 (lower is better)",
    format: fmt_ns,
};

/// The figures the charts are drawn from.
pub(crate) struct Sources<'a> {
    pub(crate) timings: &'a [Timing],
    pub(crate) counts: &'a [Count],
    pub(crate) allocs: &'a [crate::allocs::Measured],
}

impl Sources<'_> {
    /// The bars of `metric` × `scenario`.
    fn bars(&self, metric: &Metric, scenario: &str) -> Vec<Bar> {
        let timed = |group: String, value: &str| -> Vec<Bar> {
            self.timings
                .iter()
                .filter(|t| t.group == group && t.value == value)
                .map(|t| Bar::new(&t.function, t.ns.point, Some((t.ns.lo, t.ns.hi))))
                .collect()
        };
        match metric.slug {
            "time" => timed(format!("in_process/{scenario}"), "log=off,io=memory"),
            "loopback" => timed(format!("loopback/{scenario}"), "raw-client"),
            "instructions" => {
                let key = format!("in_process/{scenario}/off");
                self.counts
                    .iter()
                    .filter(|c| c.key == key)
                    .map(|c| Bar::new(&c.framework, c.instructions, None))
                    .collect()
            }
            _ => self
                .allocs
                .iter()
                .filter(|c| c.scenario == scenario && c.logging == "off")
                .filter_map(|c| Some(Bar::new(&c.framework, c.counts?.allocs as f64, None)))
                .collect(),
        }
    }
}

/// Draws every chart that has figures into `dir` and writes the markdown that embeds them,
/// with links relative to the report (`link` is `dir` as the report sees it).
pub(crate) fn write(
    out: &mut String,
    sources: &Sources,
    dir: &Path,
    link: &str,
) -> anyhow::Result<usize> {
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    let mut sections = String::new();
    let mut drawn = 0;
    for s in SCENARIOS {
        let mut images = Vec::new();
        for metric in [&TIME, &INSTRUCTIONS, &ALLOCATIONS, &LOOPBACK] {
            let bars = sources.bars(metric, s.name);
            if bars.is_empty() {
                continue;
            }
            let file = format!("{}-{}.svg", s.name, metric.slug);
            let panel = Panel {
                title: format!("{}: {}", s.name, metric.title),
                axis: metric.axis.to_owned(),
                higher_is_better: false,
                format: metric.format,
                bars,
            };
            chart::draw(&dir.join(&file), &[panel], 1)?;
            images.push(format!("![{} {}]({link}/{file})", s.name, metric.slug));
            drawn += 1;
        }
        if !images.is_empty() {
            let _ = writeln!(sections, "### {}\n\n{}\n", s.name, images.join("\n"));
        }
    }
    if drawn > 0 {
        let _ = writeln!(
            out,
            "## Charts\n\n\
             Per scenario: in-process time, instructions and allocations per request, and the \
             loopback round trip, each sorted with the cheapest on top. Blue: frameworks; grey: \
             the floors (no routing, no handler); orange: the reference server `raw`, which answers \
             with bytes encoded at startup (no routing, no handler work, so its bar is what HTTP \
             over the socket costs with nothing behind it). Whiskers: criterion's 95 % interval (one run; see above for what it does not cover). The \
             tables below hold the same figures.\n\n{sections}"
        );
    }
    Ok(drawn)
}
