//! A load sweep's line chart (`load --plot`, `compare --plot`, `merge --plot`): one row per
//! scenario, requests per second against connections, one line per framework (and variant),
//! and each line's latency percentiles at its largest connection count, drawn through
//! [`super::lines`].

use std::path::Path;

use anyhow::bail;
use plotters::coord::Shift;

use plotters::prelude::*;

use super::lines::{draw_line, slot, Line};
use super::{plot_error, to_file, Backend, Drawing, FONT};
use crate::driver::stats::{CellResult, Status};
use crate::interval::Estimate;

/// One line of a load panel, both charts.
#[derive(Default)]
struct Series {
    label: String,
    /// (index into the panel's connection counts, req/s), sorted.
    rps: Vec<(f64, f64)>,
    /// Latency percentiles at the largest connection count, µs.
    latency: Vec<(f64, f64)>,
    top_conns: usize,
    /// Starved connections at `top_conns`: their requests are missing from the latencies.
    top_starved: usize,
}

impl Series {
    /// Its name in the latency legend: the connection count the latencies are from, and how
    /// many connections starved there.
    fn latency_label(&self) -> String {
        if self.top_starved > 0 {
            format!(
                "{} (c={}, {} starved)",
                self.label, self.top_conns, self.top_starved
            )
        } else {
            format!("{} (c={})", self.label, self.top_conns)
        }
    }
}

/// One row of the figure: a scenario, the connection counts, its series.
struct LoadPanel {
    scenario: String,
    /// What its rate counts: requests, or WebSocket messages.
    unit: crate::protocol::Unit,
    conns: Vec<usize>,
    series: Vec<Series>,
}

fn load_panels(cells: &[CellResult]) -> Vec<LoadPanel> {
    let multi_variant = cells.iter().any(|c| c.variant != cells[0].variant);
    let mut conns: Vec<usize> = cells.iter().map(|c| c.connections).collect();
    conns.sort_unstable();
    conns.dedup();
    let mut out: Vec<LoadPanel> = Vec::new();
    for c in cells
        .iter()
        .filter(|c| c.status == Status::Ok && c.requests > 0)
    {
        let panel = slot(
            &mut out,
            |p| p.scenario == c.scenario,
            || LoadPanel {
                scenario: c.scenario.clone(),
                unit: c.protocol.unit(),
                conns: conns.clone(),
                series: Vec::new(),
            },
        );
        let label = if multi_variant {
            format!("{} {}", c.target, c.variant)
        } else {
            c.target.clone()
        };
        let s = slot(
            &mut panel.series,
            |s| s.label == label,
            || Series {
                label: label.clone(),
                ..Series::default()
            },
        );
        let x = conns.iter().position(|&n| n == c.connections).unwrap_or(0);
        s.rps.push((x as f64, c.rps));
        if c.connections >= s.top_conns {
            s.top_conns = c.connections;
            s.top_starved = c.per_connection.starved;
            s.latency = c
                .latency
                .points()
                .iter()
                .enumerate()
                .map(|(k, (_, v))| (k as f64, v.max(1.0)))
                .collect();
        }
    }
    for p in &mut out {
        for s in &mut p.series {
            s.rps.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
    }
    out
}

/// Draws a load sweep's `cells` to `path` (`.svg` or `.png`), titled `title`.
pub(crate) fn draw_load(cells: &[CellResult], path: &Path, title: &str) -> anyhow::Result<()> {
    let panels = load_panels(cells);
    if panels.is_empty() {
        bail!("nothing to plot: no cell was measured successfully");
    }
    let most = panels.iter().map(|p| p.series.len()).max().unwrap_or(0);
    let size = if most > LEGEND_INSIDE {
        // A legend of its own beside the plots, each panel tall enough for its lines.
        let tall = (LEGEND_TOP + LEGEND_ROW * most as u32 + 20).max(PANEL_HEIGHT);
        (1400 + LEGEND_WIDTH, 50 + tall * panels.len() as u32)
    } else {
        (1400, 50 + PANEL_HEIGHT * panels.len() as u32)
    };
    to_file(path, size, &LoadFigure { panels, title })
}

/// A panel's height when its legends fit inside its charts.
const PANEL_HEIGHT: u32 = 460;
/// The most lines a chart's legend holds inside the chart; with more (`compare --transport
/// tcp,tls` over every framework draws 40), one legend goes beside both charts, where it covers
/// no line.
const LEGEND_INSIDE: usize = 20;
/// The width of the legend beside the charts, its top margin and its row height.
const LEGEND_WIDTH: u32 = 380;
const LEGEND_TOP: u32 = 40;
const LEGEND_ROW: u32 = 16;

/// The load sweep's figure: a title over one row per scenario.
struct LoadFigure<'a> {
    panels: Vec<LoadPanel>,
    title: &'a str,
}

impl Drawing for LoadFigure<'_> {
    fn draw_on<DB: Backend>(&self, root: &DrawingArea<DB, Shift>) -> anyhow::Result<()> {
        root.fill(&WHITE).map_err(plot_error)?;
        let root = root
            .titled(self.title, (FONT, 22).into_font())
            .map_err(plot_error)?;
        let areas = root.split_evenly((self.panels.len(), 1));
        for (area, panel) in areas.iter().zip(&self.panels) {
            draw_load_panel(area, panel)?;
        }
        Ok(())
    }
}

/// One panel: throughput on the left, latency on the right.
fn draw_load_panel<DB: Backend>(
    area: &DrawingArea<DB, Shift>,
    panel: &LoadPanel,
) -> anyhow::Result<()> {
    let inside = panel.series.len() <= LEGEND_INSIDE;
    let (plots, legend) = if inside {
        (area.clone(), None)
    } else {
        let (plots, legend) = area.split_horizontally(1400);
        (plots, Some(legend))
    };
    let (left, right) = plots.split_horizontally(760);
    draw_throughput(&left, panel, inside)?;
    draw_latency(&right, panel, inside)?;
    match legend {
        Some(legend) => draw_legend_beside(&legend, panel),
        None => Ok(()),
    }
}

/// One legend for both charts of `panel`, in its own column: each line's colour and label (the
/// latency chart's label, which adds the connection count its percentiles are from).
fn draw_legend_beside<DB: Backend>(
    area: &DrawingArea<DB, Shift>,
    panel: &LoadPanel,
) -> anyhow::Result<()> {
    for (i, s) in panel.series.iter().enumerate() {
        let y = (LEGEND_TOP + LEGEND_ROW * i as u32) as i32;
        let color = Palette99::pick(i).to_rgba();
        area.draw(&PathElement::new(
            vec![(8, y), (32, y)],
            color.stroke_width(2),
        ))
        .map_err(plot_error)?;
        area.draw(&Circle::new((20, y), 3, color.filled()))
            .map_err(plot_error)?;
        area.draw(&Text::new(
            s.latency_label(),
            (40, y - 7),
            (FONT, 12).into_font(),
        ))
        .map_err(plot_error)?;
    }
    Ok(())
}

/// Requests (or messages) per second against connections, one line per series.
fn draw_throughput<DB: Backend>(
    area: &DrawingArea<DB, Shift>,
    panel: &LoadPanel,
    legend: bool,
) -> anyhow::Result<()> {
    let conns = &panel.conns;
    let max_rps = panel
        .series
        .iter()
        .flat_map(|s| s.rps.iter().map(|p| p.1))
        .fold(1.0f64, f64::max);
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!(
                "{}: {} per second vs connections",
                panel.scenario, panel.unit.plural
            ),
            (FONT, 18),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(80)
        .build_cartesian_2d(-0.3f64..(conns.len() as f64 - 0.7), 0.0..max_rps * 1.1)
        .map_err(plot_error)?;
    // The x axis is the index into `conns`: label the whole indices with their count.
    let conn_label = |v: &f64| {
        let k = v.round();
        match conns.get(k as usize) {
            Some(n) if (v - k).abs() < 0.01 && k >= 0.0 => n.to_string(),
            _ => String::new(),
        }
    };
    chart
        .configure_mesh()
        .x_desc("connections")
        .y_desc(format!("{}/s", panel.unit.short))
        .x_labels(conns.len().max(2))
        .x_label_formatter(&conn_label)
        .y_label_formatter(&|v| format!("{v:.0}"))
        .label_style((FONT, 14))
        .draw()
        .map_err(plot_error)?;
    for (i, s) in panel.series.iter().enumerate() {
        draw_line(&mut chart, &load_line(i, &s.rps, s.label.clone()), legend)?;
    }
    if legend {
        draw_legend(&mut chart, SeriesLabelPosition::LowerLeft)?;
    }
    Ok(())
}

/// Each series' latency percentiles at its largest connection count, on a log scale.
fn draw_latency<DB: Backend>(
    area: &DrawingArea<DB, Shift>,
    panel: &LoadPanel,
    legend: bool,
) -> anyhow::Result<()> {
    let lat_values = || {
        panel
            .series
            .iter()
            .flat_map(|s| s.latency.iter().map(|p| p.1))
    };
    let max_lat = lat_values().fold(10.0f64, f64::max);
    let min_lat = lat_values().fold(f64::MAX, f64::min).max(1.0);
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!(
                "{}: latency at each line's largest connection count",
                panel.scenario
            ),
            (FONT, 16),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(80)
        .build_cartesian_2d(-0.3f64..4.3f64, (min_lat * 0.7..max_lat * 1.5).log_scale())
        .map_err(plot_error)?;
    chart
        .configure_mesh()
        .x_labels(5)
        .x_label_formatter(&percentile_label)
        .y_desc("latency, µs (log scale)")
        .y_label_formatter(&|v| format!("{v:.0}"))
        .label_style((FONT, 14))
        .draw()
        .map_err(plot_error)?;
    for (i, s) in panel.series.iter().enumerate() {
        draw_line(
            &mut chart,
            &load_line(i, &s.latency, s.latency_label()),
            legend,
        )?;
    }
    if legend {
        draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
    }
    Ok(())
}

/// The latency chart's x axis is the index into the percentiles: label the whole indices.
fn percentile_label(v: &f64) -> String {
    let labels = ["p50", "p90", "p99", "p99.9", "max"];
    let k = v.round();
    if (v - k).abs() < 0.01 && (0.0..5.0).contains(&k) {
        labels[k as usize].to_owned()
    } else {
        String::new()
    }
}

/// The `i`-th series of a load panel: a line through `points`, a dot on each, no whiskers.
fn load_line(i: usize, points: &[(f64, f64)], label: String) -> Line {
    Line {
        label,
        color: Palette99::pick(i).to_rgba(),
        width: 2,
        dot: 4,
        whiskers: false,
        points: points
            .iter()
            .map(|&(x, y)| {
                (
                    x,
                    Estimate {
                        point: y,
                        lo: y,
                        hi: y,
                    },
                )
            })
            .collect(),
    }
}

/// The legend box, at `position`.
fn draw_legend<'a, DB: Backend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    position: SeriesLabelPosition,
) -> anyhow::Result<()> {
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font((FONT, 12))
        .position(position)
        .draw()
        .map_err(plot_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of 40 lines (every framework over TCP and TLS): the legend goes beside the charts,
    /// which widens the figure, and every label is drawn. FRAMEBENCH_KEEP_CHART=PATH keeps the
    /// drawing to look at.
    #[test]
    fn forty_lines_get_a_legend_beside_the_charts() {
        let mut cells = Vec::new();
        for i in 0..40 {
            let mut c = CellResult::of_url("hello", 10, Status::Ok);
            c.target = format!("fw{i:02}");
            c.requests = 1000;
            c.rps = 1000.0 * (i + 1) as f64;
            cells.push(c);
        }
        let panels = load_panels(&cells);
        assert_eq!(panels[0].series.len(), 40);
        let path = std::env::var_os("FRAMEBENCH_KEEP_CHART")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| std::env::temp_dir().join("framebench-forty-lines.svg"));
        draw_load(&cells, &path, "forty lines").unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(
            svg.contains(&format!("width=\"{}\"", 1400 + LEGEND_WIDTH)),
            "wider"
        );
        for i in 0..40 {
            assert!(svg.contains(&format!("fw{i:02} (c=10)")), "label {i}");
        }
    }
}
