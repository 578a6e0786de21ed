//! A sweep's charts: req/s against T on a log₂ axis, one line per target, each point's rounds'
//! range as a whisker and raw, the reference, in black; and the efficiency (speed-up over T)
//! the same way, in a file of its own beside it. A framework keeps one colour on both runtimes:
//! work-stealing is a solid line, per-core a dashed one, so the two read as a pair.

use std::path::{Path, PathBuf};

use anyhow::bail;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::plotting::{plot_error, to_file, Backend, Drawing, Plot, FONT};

use super::summary::{Range, Row};

/// Which figure of a row a chart draws.
#[derive(Clone, Copy)]
enum Measure {
    Rate,
    Efficiency,
}

impl Measure {
    fn of(self, r: &Row) -> Option<Range> {
        match self {
            Measure::Rate => r.rps,
            // The narrowest T, the base, is 100 % by definition.
            Measure::Efficiency => r.efficiency.or_else(|| {
                r.rps.map(|_| Range {
                    median: 1.0,
                    lo: 1.0,
                    hi: 1.0,
                })
            }),
        }
    }

    fn axis(self) -> &'static str {
        match self {
            Measure::Rate => "req/s (median; whisker: the rounds' range)",
            Measure::Efficiency => "efficiency, % (speed-up ÷ T; whisker: the rounds' range)",
        }
    }
}

/// One line: a target's points (log₂ T, range).
struct Line {
    label: String,
    reference: bool,
    /// Index of its framework among the panel's, for its colour.
    framework: usize,
    /// Per-core runtime: drawn dashed.
    dashed: bool,
    points: Vec<(f64, Range)>,
}

/// Kelly's colours of maximum contrast, less white, black (raw's) and the palest: 20 hues that
/// stay apart on white. Palette99 repeats near-identical pale hues within a sweep's 23
/// frameworks. Beyond 20 frameworks the colours repeat, offset by a darker shade.
const COLORS: &[(u8, u8, u8)] = &[
    (0x00, 0x67, 0xA5),
    (0xBE, 0x00, 0x32),
    (0x00, 0x88, 0x56),
    (0xF3, 0x84, 0x00),
    (0x87, 0x56, 0x92),
    (0x84, 0x84, 0x82),
    (0xE6, 0x8F, 0xAC),
    (0x88, 0x2D, 0x17),
    (0x8D, 0xB6, 0x00),
    (0x60, 0x4E, 0x97),
    (0xF6, 0xA6, 0x00),
    (0xB3, 0x44, 0x6C),
    (0x2B, 0x3D, 0x26),
    (0xA1, 0xCA, 0xF1),
    (0xE2, 0x58, 0x22),
    (0x65, 0x45, 0x22),
    (0xC2, 0xB2, 0x80),
    (0xF9, 0x93, 0x79),
    (0xDC, 0xD3, 0x00),
    (0x00, 0xA0, 0xA0),
];

/// The colour of the `i`-th framework of a panel.
fn color(i: usize) -> RGBAColor {
    let (r, g, b) = COLORS[i % COLORS.len()];
    let shade = |c: u8| if i < COLORS.len() { c } else { c / 2 };
    RGBColor(shade(r), shade(g), shade(b)).to_rgba()
}

/// One scenario × variant.
struct Panel {
    title: String,
    lines: Vec<Line>,
    /// Its frameworks but raw, in the order they first appear: a line's colour is its index.
    frameworks: Vec<String>,
}

fn panels(rows: &[Row], measure: Measure) -> Vec<Panel> {
    let mut out: Vec<Panel> = Vec::new();
    for r in rows {
        let Some(range) = measure.of(r) else { continue };
        let title = format!("{} ({})", r.scenario, r.variant);
        let p = match out.iter().position(|p| p.title == title) {
            Some(p) => p,
            None => {
                out.push(Panel {
                    title,
                    lines: Vec::new(),
                    frameworks: Vec::new(),
                });
                out.len() - 1
            }
        };
        let Panel {
            lines, frameworks, ..
        } = &mut out[p];
        let i = match lines.iter().position(|l| l.label == r.target) {
            Some(i) => i,
            None => {
                let reference = r.framework == "raw";
                let framework = match frameworks.iter().position(|f| *f == r.framework) {
                    Some(f) => f,
                    None if reference => 0,
                    None => {
                        frameworks.push(r.framework.clone());
                        frameworks.len() - 1
                    }
                };
                lines.push(Line {
                    label: r.target.clone(),
                    reference,
                    framework,
                    dashed: r.runtime == "per-core",
                    points: Vec::new(),
                });
                lines.len() - 1
            }
        };
        lines[i].points.push(((r.threads as f64).log2(), range));
    }
    out
}

/// Draws the rate chart to `path` and the efficiency chart beside it (`NAME-efficiency.EXT`).
pub(crate) fn draw(rows: &[Row], path: &Path) -> anyhow::Result<()> {
    let rate = panels(rows, Measure::Rate);
    if rate.is_empty() {
        bail!("nothing to plot: no cell was measured successfully");
    }
    let size = |n: usize| (1300, 60 + 560 * n as u32);
    to_file(
        path,
        size(rate.len()),
        &Figure {
            panels: rate,
            measure: Measure::Rate,
        },
    )?;
    let efficiency = panels(rows, Measure::Efficiency);
    to_file(
        &efficiency_path(path),
        size(efficiency.len()),
        &Figure {
            panels: efficiency,
            measure: Measure::Efficiency,
        },
    )
}

/// `scaling.svg` → `scaling-efficiency.svg`.
pub(crate) fn efficiency_path(path: &Path) -> PathBuf {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("scale");
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("svg");
    path.with_file_name(format!("{stem}-efficiency.{ext}"))
}

struct Figure {
    panels: Vec<Panel>,
    measure: Measure,
}

impl Drawing for Figure {
    fn draw_on<DB: Backend>(&self, root: &DrawingArea<DB, Shift>) -> anyhow::Result<()> {
        root.fill(&WHITE).map_err(plot_error)?;
        let title = match self.measure {
            Measure::Rate => "framebench scale: requests per second against server threads T",
            Measure::Efficiency => "framebench scale: efficiency against server threads T",
        };
        let root = root.titled(title, (FONT, 22)).map_err(plot_error)?;
        for (area, panel) in root
            .split_evenly((self.panels.len(), 1))
            .iter()
            .zip(&self.panels)
        {
            draw_panel(area, panel, self.measure)?;
        }
        Ok(())
    }
}

fn draw_panel<DB: Backend>(
    area: &DrawingArea<DB, Shift>,
    panel: &Panel,
    measure: Measure,
) -> anyhow::Result<()> {
    let (plot, legend) = area.split_horizontally(900);
    let xs = || {
        panel
            .lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.0))
    };
    let x_max = xs().fold(0.0f64, f64::max);
    let y_max = panel
        .lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1.hi))
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let y_top = match measure {
        Measure::Rate => y_max * 1.1,
        Measure::Efficiency => (y_max * 1.1).max(1.1),
    };
    let mut chart = ChartBuilder::on(&plot)
        .caption(&panel.title, (FONT, 18))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(90)
        .build_cartesian_2d(-0.4f64..(x_max + 0.4), 0.0..y_top)
        .map_err(plot_error)?;
    // The x axis is log₂ T: label the whole powers with T itself.
    let t_label = |v: &f64| {
        let k = v.round();
        if (v - k).abs() < 0.01 && k >= 0.0 {
            format!("{}", 2f64.powf(k) as u64)
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .x_desc("server threads T (log₂ scale)")
        .y_desc(measure.axis())
        .x_labels((x_max as usize + 2).max(2))
        .x_label_formatter(&t_label)
        .y_label_formatter(&|v| match measure {
            Measure::Rate => format!("{v:.0}"),
            Measure::Efficiency => format!("{:.0}", v * 100.0),
        })
        .label_style((FONT, 14))
        .draw()
        .map_err(plot_error)?;
    let mut legend_entries = Vec::new();
    for line in &panel.lines {
        legend_entries.push(draw_line(&mut chart, line)?);
    }
    draw_legend(&legend, &legend_entries)
}

/// One framework's line: its medians joined (dashed where `line.dashed`), a dot at each and
/// the rounds' range as a whisker; returns its legend entry.
fn draw_line<DB: Backend>(
    chart: &mut Plot<'_, DB>,
    line: &Line,
) -> anyhow::Result<(String, RGBAColor, u32, bool)> {
    let color = if line.reference {
        BLACK.to_rgba()
    } else {
        color(line.framework)
    };
    let width = if line.reference { 3 } else { 2 };
    let mut points = line.points.clone();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let medians = points.iter().map(|(x, r)| (*x, r.median));
    if line.dashed {
        chart
            .draw_series(DashedLineSeries::new(
                medians,
                8,
                5,
                color.stroke_width(width),
            ))
            .map_err(plot_error)?;
    } else {
        chart
            .draw_series(LineSeries::new(medians, color.stroke_width(width)))
            .map_err(plot_error)?;
    }
    chart
        .draw_series(
            points
                .iter()
                .map(|(x, r)| Circle::new((*x, r.median), 4, color.filled())),
        )
        .map_err(plot_error)?;
    // The rounds' range: a whisker from the lowest round to the highest.
    chart
        .draw_series(
            points.iter().map(|(x, r)| {
                PathElement::new(vec![(*x, r.lo), (*x, r.hi)], color.stroke_width(1))
            }),
        )
        .map_err(plot_error)?;
    Ok((line.label.clone(), color, width, line.dashed))
}

/// The legend as a column of its own beside the plot: a sweep has many lines.
fn draw_legend<DB: Backend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[(String, RGBAColor, u32, bool)],
) -> anyhow::Result<()> {
    let step = ((area.dim_in_pixel().1 as i32 - 40) / entries.len().max(1) as i32).clamp(8, 20);
    for (i, (label, color, width, dashed)) in entries.iter().enumerate() {
        let y = 40 + i as i32 * step;
        let segments: &[(i32, i32)] = if *dashed {
            &[(10, 18), (22, 30), (34, 40)]
        } else {
            &[(10, 40)]
        };
        for &(from, to) in segments {
            area.draw(&PathElement::new(
                vec![(from, y), (to, y)],
                color.stroke_width(*width),
            ))
            .map_err(plot_error)?;
        }
        area.draw(&Text::new(
            label.clone(),
            (48, y - 7),
            (FONT, 13).into_font(),
        ))
        .map_err(plot_error)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows of a sweep over T = 1, 2, 4, 8 for three targets, raw among them.
    pub(crate) fn sweep_rows() -> Vec<Row> {
        let mut rows = Vec::new();
        for (target, framework, runtime, scale) in [
            ("raw", "raw", "own", 0.95),
            ("hyper (work-stealing)", "hyper", "work-stealing", 0.6),
            ("hyper (per-core)", "hyper", "per-core", 0.9),
        ] {
            for t in [1usize, 2, 4, 8] {
                let median = 100_000.0 * (t as f64).powf(scale);
                let rps = Range {
                    median,
                    lo: median * 0.95,
                    hi: median * 1.04,
                };
                rows.push(Row {
                    target: target.into(),
                    framework: framework.into(),
                    runtime: runtime.into(),
                    variant: "log=off,io=memory".into(),
                    scenario: "hello".into(),
                    threads: t,
                    rounds: 3,
                    rps: Some(rps),
                    speedup: None,
                    efficiency: None,
                    cpu_us_per_req: Some(5.0),
                    p99_us: Some(900.0),
                    marks: Vec::new(),
                    failed: None,
                });
            }
        }
        super::super::summary::with_speedups(rows)
    }

    #[test]
    fn the_charts_parse_and_hold_a_line_per_target() {
        let dir =
            std::env::temp_dir().join(format!("framebench-scale-chart-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("scaling.svg");
        draw(&sweep_rows(), &path).unwrap();
        for file in [path.clone(), efficiency_path(&path)] {
            let text = std::fs::read_to_string(&file).unwrap();
            let doc = roxmltree::Document::parse(&text).unwrap();
            let texts: Vec<&str> = doc
                .descendants()
                .filter_map(|n| n.text())
                .map(str::trim)
                .collect();
            for label in [
                "raw",
                "hyper (work-stealing)",
                "hyper (per-core)",
                "server threads T (log₂ scale)",
            ] {
                assert!(
                    texts.contains(&label),
                    "{} lacks {label:?}: {texts:?}",
                    file.display()
                );
            }
            // The T axis is labelled with T itself.
            assert!(texts.contains(&"8"), "{texts:?}");
            // A line per target (polylines), and a whisker per point.
            let polylines = doc
                .descendants()
                .filter(|n| n.has_tag_name("polyline"))
                .count();
            assert!(
                polylines >= 3 + 12,
                "{polylines} polylines in {}",
                file.display()
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
