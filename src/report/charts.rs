//! The charts of `framebench report`: for each scenario, one sorted bar chart per metric
//! (in-process time with its interval as whiskers, instructions per request,
//! allocations per request, loopback time per request with its interval), written as SVG
//! beside the report (`docs/generated/results/` for `docs/generated/results.md`) and embedded in it above the
//! tables.

use std::fmt::Write as _;
use std::path::Path;

use crate::chart::bars::{self, Bar, Panel};
use crate::oracle::SCENARIOS;
use crate::units::{fmt_count, fmt_ns};

use super::{Count, Timing};

/// One metric of the charts: its file-name part, its title, and how to find its bars.
struct Metric {
    slug: &'static str,
    title: &'static str,
    axis: &'static str,
    format: fn(f64) -> String,
    bars: fn(&Sources, &str) -> Vec<Bar>,
}

const TIME: Metric = Metric {
    slug: "time",
    bars: |sources, scenario| sources.in_process_time(scenario),
    title: "in-process time per request (criterion, 95 % interval)",
    axis: "time per request, log=off io=memory (lower is better)",
    format: fmt_ns,
};
const INSTRUCTIONS: Metric = Metric {
    slug: "instructions",
    bars: |sources, scenario| sources.instructions(scenario),
    title: "in-process instructions per request (callgrind)",
    axis: "instructions per request, log=off (lower is better)",
    format: fmt_count,
};
const ALLOCATIONS: Metric = Metric {
    slug: "allocations",
    bars: |sources, scenario| sources.allocations(scenario),
    title: "in-process allocations per request",
    axis: "alloc calls per request, log=off (lower is better)",
    format: fmt_count,
};
const LOOPBACK: Metric = Metric {
    slug: "loopback",
    bars: |sources, scenario| sources.loopback_time(scenario),
    title: "loopback time per request (criterion, 95 % interval)",
    axis: "round trip on one keep-alive connection, server --threads 1 (lower is better)",
    format: fmt_ns,
};

/// The figures the charts are drawn from.
pub(crate) struct Sources<'a> {
    pub(crate) timings: &'a [Timing],
    pub(crate) counts: &'a [Count],
    pub(crate) allocs: &'a [crate::allocs::Measured],
    /// The groups (`in_process`, `loopback`) whose times are `framebench time`'s interleaved
    /// rounds rather than criterion's.
    pub(crate) interleaved: &'a [&'static str],
}

impl Sources<'_> {
    /// Criterion's times of `group` × `value`, with their intervals.
    fn timed(&self, group: &str, value: &str) -> Vec<Bar> {
        self.timings
            .iter()
            .filter(|t| t.group == group && t.value == value)
            .map(|t| Bar::new(&t.function, t.ns.point, Some((t.ns.lo, t.ns.hi))))
            .collect()
    }

    fn in_process_time(&self, scenario: &str) -> Vec<Bar> {
        self.timed(&format!("in_process/{scenario}"), "log=off,io=memory")
    }

    fn loopback_time(&self, scenario: &str) -> Vec<Bar> {
        self.timed(&format!("loopback/{scenario}"), "raw-client")
    }

    fn instructions(&self, scenario: &str) -> Vec<Bar> {
        let key = format!("in_process/{scenario}/off");
        self.counts
            .iter()
            .filter(|c| c.key == key)
            .map(|c| Bar::new(&c.framework, c.instructions, None))
            .collect()
    }

    fn allocations(&self, scenario: &str) -> Vec<Bar> {
        self.allocs
            .iter()
            .filter(|c| c.scenario == scenario && c.logging == "off")
            .filter_map(|c| Some(Bar::new(&c.framework, c.counts?.allocs as f64, None)))
            .collect()
    }
}

/// Draws every chart that has figures into `dir` and writes the markdown that embeds them
/// (nothing when no chart has any), with links relative to the report (`link` is `dir` as the
/// report sees it).
pub(crate) fn write(
    out: &mut String,
    sources: &Sources,
    dir: &Path,
    link: &str,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    let mut sections = String::new();
    for s in SCENARIOS {
        let mut images = Vec::new();
        for metric in [&TIME, &INSTRUCTIONS, &ALLOCATIONS, &LOOPBACK] {
            let bars = (metric.bars)(sources, s.name);
            if bars.is_empty() {
                continue;
            }
            let file = format!("{}-{}.svg", s.name, metric.slug);
            // A time taken in interleaved rounds says so, in place of criterion's name.
            let group = if metric.slug == "loopback" {
                "loopback"
            } else {
                "in_process"
            };
            let title =
                if metric.title.contains("criterion") && sources.interleaved.contains(&group) {
                    metric.title.replace("criterion", "interleaved rounds")
                } else {
                    metric.title.to_owned()
                };
            let panel = Panel {
                title: format!("{}: {title}", s.name),
                axis: metric.axis.to_owned(),
                higher_is_better: false,
                format: metric.format,
                bars,
            };
            bars::draw(&dir.join(&file), &[panel], 1)?;
            images.push(format!("![{} {}]({link}/{file})", s.name, metric.slug));
        }
        if !images.is_empty() {
            let _ = writeln!(sections, "### {}\n\n{}\n", s.name, images.join("\n"));
        }
    }
    if !sections.is_empty() {
        let whiskers = if sources.interleaved.is_empty() {
            "criterion's, for one run: see above for what it does not cover"
        } else {
            "of the median of `framebench time`'s interleaved rounds"
        };
        let _ = writeln!(
            out,
            "## Charts\n\n\
             Per scenario: in-process time, instructions and allocations per request, and the \
             loopback round trip, each sorted with the cheapest on top. Blue: frameworks; grey: \
             the floors (no routing, no handler); orange: the reference server `raw`, which answers \
             with bytes encoded at startup (no routing, no handler work, so its bar is what HTTP \
             over the socket costs with nothing behind it). Whiskers: the time's 95 % interval \
             ({whiskers}). The tables below hold the same figures.\n\n{sections}"
        );
    }
    Ok(())
}
