//! `load --bars` and `compare --bars`: one bar chart per scenario, protocol and stream count
//! (and connection count and variant, when a run has several), one bar per target with its rate and the
//! cell's interval as a whisker ([`crate::driver::output::rate_interval`]: its spread, or its rounds'
//! range; [`crate::chart::bars`]). This is how the h2c results read: each server's
//! h2c rates at M = 1, 10 and 100 beside its HTTP/1.1 rate of the same run, each panel sorted.
//! A run of two transports (`--transport tcp,tls`) reads as panels in pairs, each transport's
//! bars in a panel of its own, where one chart of both would name every target twice.
//! A rate the server did not set (a cell marked `unsat` or `client-bound`) is drawn pale, and
//! its panel says so.

use std::path::Path;

use super::bars::{Bar, Panel};
use crate::driver::output::bound_mark;
use crate::driver::stats::{CellResult, Status};
use crate::protocol::Shape;

/// The panels of `cells`, a scenario's together (so that a row of the chart is one scenario's
/// h2c and HTTP/1.1 panels when there are four), each in the order its group first appears.
fn panels(cells: &[CellResult]) -> Vec<Panel> {
    let several_conns = cells.iter().any(|c| c.connections != cells[0].connections);
    let several_variants = cells.iter().any(|c| c.variant != cells[0].variant);
    let mut scenarios: Vec<&str> = Vec::new();
    let mut out: Vec<(String, usize, Panel)> = Vec::new();
    for c in cells.iter().filter(|c| c.status == Status::Ok) {
        let key = group(c, several_conns, several_variants);
        let scenario = match scenarios.iter().position(|s| *s == c.scenario) {
            Some(i) => i,
            None => {
                scenarios.push(&c.scenario);
                scenarios.len() - 1
            }
        };
        let at = match out.iter().position(|(k, _, _)| *k == key) {
            Some(at) => at,
            None => {
                out.push((
                    key.clone(),
                    scenario,
                    Panel {
                        title: key,
                        axis: format!(
                            "{} per second (pale: the server did not set it)",
                            c.protocol.unit().plural
                        ),
                        higher_is_better: true,
                        format: |v| format!("{:.0}k", v / 1e3),
                        bars: Vec::new(),
                    },
                ));
                out.len() - 1
            }
        };
        let interval = crate::driver::output::rate_interval(c).map(|e| (e.lo, e.hi));
        let mut bar = Bar::new(&c.target, c.rps, interval);
        bar.faded = !bound_mark(c).is_empty();
        out[at].2.bars.push(bar);
    }
    // Stable: within a scenario, the order of first appearance stays.
    out.sort_by_key(|(_, scenario, _)| *scenario);
    out.into_iter().map(|(_, _, p)| p).collect()
}

/// A cell's panel: its scenario, its protocol (and streams), its connections and its variant
/// when the run has several.
fn group(c: &CellResult, several_conns: bool, several_variants: bool) -> String {
    let protocol = c.protocol.shape_label(Shape {
        pipeline: c.pipeline,
        streams: c.streams,
    });
    let conns = if several_conns {
        format!(", {} connections", c.connections)
    } else {
        String::new()
    };
    let variant = if several_variants {
        format!(", {}", c.variant)
    } else {
        String::new()
    };
    format!("{}: {protocol}{conns}{variant}", c.scenario)
}

/// Draws the panels of `cells` to `path` (`.svg` or `.png`), four to a row.
pub(crate) fn draw(cells: &[CellResult], path: &Path) -> anyhow::Result<()> {
    let panels = panels(cells);
    anyhow::ensure!(
        !panels.is_empty(),
        "no measured cell to draw in {}",
        path.display()
    );
    let columns = panels.len().min(4);
    super::bars::draw(path, &panels, columns)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(target: &str, variant: &str, connections: usize, rps: f64) -> CellResult {
        let mut c = CellResult::of_url("hello", connections, Status::Ok);
        c.target = target.into();
        c.variant = variant.into();
        c.rps = rps;
        c
    }

    #[test]
    fn two_transports_draw_in_panels_of_their_own_each_target_once() {
        let cells = [
            cell("hyper", "io=memory", 100, 3.0),
            cell("hyper", "io=memory,tls", 100, 2.0),
            cell("axum", "io=memory", 100, 2.5),
            cell("axum", "io=memory,tls", 100, 1.5),
        ];
        let got = panels(&cells);
        assert_eq!(got.len(), 2, "one panel per transport");
        assert!(got[0].title.ends_with(", io=memory"), "{}", got[0].title);
        assert!(
            got[1].title.ends_with(", io=memory,tls"),
            "{}",
            got[1].title
        );
        for p in &got {
            let mut names: Vec<_> = p.bars.iter().map(|b| b.name.clone()).collect();
            names.sort();
            assert_eq!(names, ["axum", "hyper"], "{}", p.title);
        }
        // One variant: the title names none.
        let one = panels(&cells[..1]);
        assert!(!one[0].title.contains("io=memory"), "{}", one[0].title);
    }
}
