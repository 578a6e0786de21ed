//! Line charts, to SVG or PNG (by the file's extension): one [`Line`] (a label, a colour, its
//! points each with its bounds, whiskers or not) drawn by one [`draw_line`], for two figures,
//! each in a file of its own:
//!
//! - A load sweep's ([`super::load_lines::draw_load`]: `load --plot`, `compare --plot`, `merge --plot`): one row
//!   per scenario, requests per second against connections, one line per framework (and
//!   variant), and each line's latency percentiles at its largest connection count.
//! - A scale sweep's ([`super::scale_lines::draw_scale`]), as small multiples: one row of panels per scenario ×
//!   variant, one panel per thread model (thread per core, one work-stealing runtime, per-core
//!   runtimes, the rest; docs/methodology/many-cores.md), so that a reader can follow one
//!   framework among a few. The rate chart draws req/s against T on log–log axes (labelled in k
//!   and M); the speed-up chart beside it (`NAME-speedup.svg`) draws the rate over the narrowest
//!   T's against T on log–log axes with the ideal line (speed-up = T ÷ the narrowest T), on
//!   which a framework that scales perfectly lies. Every point is the rounds' median with their
//!   range as a whisker; raw, the reference, is drawn in black in every panel.

use plotters::prelude::*;

use super::{plot_error, Backend};
use crate::interval::Estimate;

/// One line of a chart.
pub(crate) struct Line {
    /// Its legend label.
    pub(super) label: String,
    pub(super) color: RGBAColor,
    /// Its stroke width, px.
    pub(super) width: u32,
    /// The radius of the dot on each point, px.
    pub(super) dot: u32,
    /// Whether each point's bounds are drawn, as a vertical whisker.
    pub(super) whiskers: bool,
    /// (x, the figure with its bounds), in x order.
    pub(super) points: Vec<(f64, Estimate)>,
}

/// Draws `line` onto `chart`: its points' medians joined, a dot on each and, with
/// `line.whiskers`, each point's bounds; named in plotters' own legend when `legend`.
pub(super) fn draw_line<DB: Backend, CT: CoordTranslate<From = (f64, f64)>>(
    chart: &mut ChartContext<'_, DB, CT>,
    line: &Line,
    legend: bool,
) -> anyhow::Result<()> {
    let (color, width) = (line.color, line.width);
    let medians = line.points.iter().map(|(x, e)| (*x, e.point));
    let series = chart
        .draw_series(LineSeries::new(medians, color.stroke_width(width)))
        .map_err(plot_error)?;
    if legend {
        series.label(line.label.clone()).legend(move |(x, y)| {
            PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(width))
        });
    }
    chart
        .draw_series(
            line.points
                .iter()
                .map(|(x, e)| Circle::new((*x, e.point), line.dot, color.filled())),
        )
        .map_err(plot_error)?;
    if line.whiskers {
        chart
            .draw_series(line.points.iter().map(|(x, e)| {
                PathElement::new(vec![(*x, e.lo), (*x, e.hi)], color.stroke_width(1))
            }))
            .map_err(plot_error)?;
    }
    Ok(())
}

/// The item of `items` that `is` picks, pushed from `new` when there is none yet.
pub(super) fn slot<T>(
    items: &mut Vec<T>,
    is: impl Fn(&T) -> bool,
    new: impl FnOnce() -> T,
) -> &mut T {
    let i = match items.iter().position(is) {
        Some(i) => i,
        None => {
            items.push(new());
            items.len() - 1
        }
    };
    &mut items[i]
}
