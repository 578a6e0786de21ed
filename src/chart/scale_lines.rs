//! A scale sweep's line charts ([`draw_scale`]), as small multiples: one row of panels per
//! scenario × variant, one panel per thread model (thread per core, one work-stealing runtime,
//! per-core runtimes, the rest; docs/methodology/many-cores.md), so that a reader can follow one
//! framework among a few. The rate chart draws req/s against T on log–log axes (labelled in k
//! and M); the speed-up chart beside it (`NAME-speedup.svg`) draws the rate over the narrowest
//! T's against T on log–log axes with the ideal line (speed-up = T ÷ the narrowest T), on which
//! a framework that scales perfectly lies. Every point is the rounds' median with their range as
//! a whisker; raw, the reference, is drawn in black in every panel. Drawn through
//! [`super::lines`].

use std::path::{Path, PathBuf};

use anyhow::bail;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::lines::{draw_line, slot, Line};
use super::{plot_error, to_file, Backend, Drawing, FONT};
use crate::interval::Estimate;
use crate::scale::summary::Row;

/// Which figure of a row a chart draws.
#[derive(Clone, Copy)]
enum Measure {
    Rate,
    Speedup,
}

impl Measure {
    /// The row's figure, as log₂ of it (the speed-up) or log₁₀ (the rate); `rows` are the
    /// sweep's, where the row's line finds its narrowest T.
    fn of(self, r: &Row, rows: &[Row]) -> Option<Estimate> {
        let range = match self {
            Measure::Rate => r.rps?,
            Measure::Speedup => match r.speedup {
                Some(s) => s,
                // The narrowest T, the base, is 1× by definition, where its rate is the
                // server's; any other row without a speed-up had it withheld (its rate, or its
                // base's, is not the server's), and is not drawn.
                None => {
                    let narrowest = rows
                        .iter()
                        .filter(|o| {
                            o.target == r.target
                                && o.variant == r.variant
                                && o.scenario == r.scenario
                        })
                        .map(|o| o.threads)
                        .min();
                    if narrowest != Some(r.threads)
                        || r.not_the_servers.is_some()
                        || r.rps.is_none()
                    {
                        return None;
                    }
                    Estimate::range_of(&[1.0])?
                }
            },
        };
        Some(range.map(|v| match self {
            Measure::Rate => v.max(1.0).log10(),
            Measure::Speedup => v.max(1e-3).log2(),
        }))
    }

    fn axis(self) -> &'static str {
        match self {
            Measure::Rate => "req/s (log; whisker: the rounds' range)",
            Measure::Speedup => "speed-up over the narrowest T (log₂)",
        }
    }

    /// A tick's label: the figure itself, in k and M for a rate.
    fn label(self, v: f64) -> String {
        match self {
            Measure::Rate => {
                let rps = 10f64.powf(v);
                if rps >= 1e6 {
                    format!("{:.1}M", rps / 1e6)
                } else if rps >= 1e3 {
                    format!("{:.0}k", rps / 1e3)
                } else {
                    format!("{rps:.0}")
                }
            }
            Measure::Speedup => {
                let x = 2f64.powf(v);
                if x >= 1.0 {
                    format!("{x:.0}×")
                } else {
                    format!("{x:.2}×")
                }
            }
        }
    }
}

/// The thread models the panels of a row show, in order (docs/methodology/many-cores.md).
const MODELS: [&str; 4] = [
    "thread per core",
    "one work-stealing runtime",
    "per-core runtimes",
    "the rest",
];

/// The servers with a thread per core of their own: each worker its own runtime and app
/// (actix, ntex, xitca), or its own event loop (raw, drawn in every panel as the reference).
const THREAD_PER_CORE: [&str; 4] = ["actix", "ntex", "xitca", "raw"];

/// Which of [`MODELS`] a target's runtime and framework belong to.
fn model(framework: &str, runtime: &str) -> usize {
    match runtime {
        "work-stealing" => 1,
        "per-core" => 2,
        _ if THREAD_PER_CORE.contains(&framework) => 0,
        _ => 3,
    }
}

/// One target's line: its points (log₂ T, range of the measure's log).
#[derive(Clone)]
struct TargetLine {
    /// The target (`hyper (per-core)`).
    target: String,
    /// Its legend label: the framework alone where the panel names its runtime.
    label: String,
    reference: bool,
    /// Index of its framework among the panel's, for its colour.
    framework: usize,
    points: Vec<(f64, Estimate)>,
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

/// One scenario × variant × thread model.
struct ScalePanel {
    title: String,
    lines: Vec<TargetLine>,
}

/// A row of panels: one scenario × variant, a panel per thread model that has a target.
struct PanelRow {
    title: String,
    panels: Vec<ScalePanel>,
    /// The narrowest and widest log₂ T of the row, and its lowest and highest figure.
    x: (f64, f64),
    y: (f64, f64),
}

fn rows_of(rows: &[Row], measure: Measure) -> Vec<PanelRow> {
    let mut out: Vec<PanelRow> = Vec::new();
    for r in rows {
        let Some(range) = measure.of(r, rows) else {
            continue;
        };
        let title = format!("{} ({})", r.scenario, r.variant);
        let row = slot(
            &mut out,
            |p| p.title == title,
            || PanelRow {
                title: title.clone(),
                panels: MODELS
                    .iter()
                    .map(|m| ScalePanel {
                        title: (*m).to_owned(),
                        lines: Vec::new(),
                    })
                    .collect(),
                x: (f64::INFINITY, f64::NEG_INFINITY),
                y: (f64::INFINITY, f64::NEG_INFINITY),
            },
        );
        let x = (r.threads as f64).log2();
        row.x = (row.x.0.min(x), row.x.1.max(x));
        row.y = (row.y.0.min(range.lo), row.y.1.max(range.hi));
        let panel = &mut row.panels[model(&r.framework, &r.runtime)];
        let framework = panel.lines.iter().filter(|l| !l.reference).count();
        let line = slot(
            &mut panel.lines,
            |l| l.target == r.target,
            || TargetLine {
                target: r.target.clone(),
                // The panel names the runtime: `hyper (per-core)` is `hyper` there.
                label: match r.target.split_once(" (") {
                    Some((name, _))
                        if matches!(r.runtime.as_str(), "work-stealing" | "per-core") =>
                    {
                        name.to_owned()
                    }
                    _ => r.target.clone(),
                },
                reference: r.framework == "raw",
                framework,
                points: Vec::new(),
            },
        );
        line.points.push((x, range));
    }
    // raw, the reference, in every panel of its row; a thread model without a target leaves.
    for row in &mut out {
        let raw: Vec<TargetLine> = row
            .panels
            .iter()
            .flat_map(|p| p.lines.iter().filter(|l| l.reference).cloned())
            .collect();
        row.panels.retain(|p| p.lines.iter().any(|l| !l.reference));
        for p in &mut row.panels {
            for line in &raw {
                if !p.lines.iter().any(|l| l.target == line.target) {
                    p.lines.insert(0, line.clone());
                }
            }
        }
    }
    out.retain(|r| !r.panels.is_empty());
    out
}

/// Draws a scale sweep's rate chart to `path` and its speed-up chart beside it
/// (`NAME-speedup.EXT`).
pub(crate) fn draw_scale(rows: &[Row], path: &Path) -> anyhow::Result<()> {
    let rate = rows_of(rows, Measure::Rate);
    if rate.is_empty() {
        bail!("nothing to plot: no cell was measured successfully");
    }
    let size = |r: &[PanelRow]| {
        let columns = r.iter().map(|r| r.panels.len()).max().unwrap_or(1) as u32;
        (470 * columns, 60 + 520 * r.len() as u32)
    };
    to_file(
        path,
        size(&rate),
        &ScaleFigure {
            rows: rate,
            measure: Measure::Rate,
        },
    )?;
    let speedup = rows_of(rows, Measure::Speedup);
    to_file(
        &speedup_path(path),
        size(&speedup),
        &ScaleFigure {
            rows: speedup,
            measure: Measure::Speedup,
        },
    )
}

/// `scaling.svg` → `scaling-speedup.svg`.
pub(crate) fn speedup_path(path: &Path) -> PathBuf {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("scale");
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("svg");
    path.with_file_name(format!("{stem}-speedup.{ext}"))
}

struct ScaleFigure {
    rows: Vec<PanelRow>,
    measure: Measure,
}

impl Drawing for ScaleFigure {
    fn draw_on<DB: Backend>(&self, root: &DrawingArea<DB, Shift>) -> anyhow::Result<()> {
        root.fill(&WHITE).map_err(plot_error)?;
        let title = match self.measure {
            Measure::Rate => "framebench scale: requests per second against server threads T",
            Measure::Speedup => {
                "framebench scale: speed-up against server threads T (dashed: ideal)"
            }
        };
        let root = root.titled(title, (FONT, 22)).map_err(plot_error)?;
        for (area, row) in root
            .split_evenly((self.rows.len(), 1))
            .iter()
            .zip(&self.rows)
        {
            let area = area.titled(&row.title, (FONT, 18)).map_err(plot_error)?;
            let columns = area.split_evenly((1, row.panels.len()));
            for (cell, panel) in columns.iter().zip(&row.panels) {
                draw_scale_panel(cell, panel, row, self.measure)?;
            }
        }
        Ok(())
    }
}

fn draw_scale_panel<DB: Backend>(
    area: &DrawingArea<DB, Shift>,
    panel: &ScalePanel,
    row: &PanelRow,
    measure: Measure,
) -> anyhow::Result<()> {
    let (x_min, x_max) = row.x;
    // One y range per row, so that its panels compare; the ideal line's top is in it.
    let (mut y_min, mut y_max) = row.y;
    if let Measure::Speedup = measure {
        y_min = y_min.min(0.0);
        y_max = y_max.max(x_max - x_min);
    }
    let pad = ((y_max - y_min) * 0.08).max(0.05);
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, (FONT, 15))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(55)
        .build_cartesian_2d((x_min - 0.3)..(x_max + 0.3), (y_min - pad)..(y_max + pad))
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
        .x_desc("server threads T (log₂)")
        .y_desc(measure.axis())
        .x_labels((x_max - x_min) as usize + 2)
        .y_labels(6)
        .x_label_formatter(&t_label)
        .y_label_formatter(&|v| measure.label(*v))
        .label_style((FONT, 12))
        .axis_desc_style((FONT, 12))
        .light_line_style(TRANSPARENT)
        .draw()
        .map_err(plot_error)?;
    if let Measure::Speedup = measure {
        chart
            .draw_series(DashedLineSeries::new(
                [(x_min, 0.0), (x_max, x_max - x_min)],
                6,
                4,
                RGBColor(0x99, 0x99, 0x99).stroke_width(2),
            ))
            .map_err(plot_error)?;
    }
    let lines: Vec<Line> = panel.lines.iter().map(TargetLine::line).collect();
    for line in &lines {
        draw_line(&mut chart, line, false)?;
    }
    draw_scale_legend(area, &lines)
}

impl TargetLine {
    /// How it is drawn: raw, the reference, in black and wider; each framework in its colour,
    /// its medians joined, a dot at each and the rounds' range as a whisker.
    fn line(&self) -> Line {
        let mut points = self.points.clone();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        Line {
            label: self.label.clone(),
            color: if self.reference {
                BLACK.to_rgba()
            } else {
                color(self.framework)
            },
            width: if self.reference { 3 } else { 2 },
            dot: 3,
            whiskers: true,
            points,
        }
    }
}

/// The legend in the panel's upper left, over the plot: a panel has a few lines.
fn draw_scale_legend<DB: Backend>(
    area: &DrawingArea<DB, Shift>,
    lines: &[Line],
) -> anyhow::Result<()> {
    for (
        i,
        Line {
            label,
            color,
            width,
            ..
        },
    ) in lines.iter().enumerate()
    {
        let y = 45 + i as i32 * 15;
        area.draw(&PathElement::new(
            vec![(75, y), (95, y)],
            color.stroke_width(*width),
        ))
        .map_err(plot_error)?;
        area.draw(&Text::new(
            label.clone(),
            (100, y - 6),
            (FONT, 11).into_font(),
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
                let point = 100_000.0 * (t as f64).powf(scale);
                let rps = Estimate {
                    point,
                    lo: point * 0.95,
                    hi: point * 1.04,
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
                    not_the_servers: None,
                    failed: None,
                });
            }
        }
        crate::scale::summary::with_speedups(rows)
    }

    #[test]
    fn the_charts_parse_and_hold_a_line_per_target() {
        let dir =
            std::env::temp_dir().join(format!("framebench-scale-chart-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("scaling.svg");
        draw_scale(&sweep_rows(), &path).unwrap();
        for file in [path.clone(), speedup_path(&path)] {
            let text = std::fs::read_to_string(&file).unwrap();
            let doc = roxmltree::Document::parse(&text).unwrap();
            let texts: Vec<&str> = doc
                .descendants()
                .filter_map(|n| n.text())
                .map(str::trim)
                .collect();
            // One panel per thread model with a framework in it, each naming its runtime, and
            // raw, the reference, in each; a framework is named alone where its panel says the
            // runtime.
            for label in [
                "raw",
                "hyper",
                "one work-stealing runtime",
                "per-core runtimes",
                "server threads T (log₂)",
            ] {
                assert!(
                    texts.contains(&label),
                    "{} lacks {label:?}: {texts:?}",
                    file.display()
                );
            }
            assert!(!texts.contains(&"thread per core"), "{texts:?}");
            let count = |label: &str| texts.iter().filter(|t| **t == label).count();
            assert_eq!(count("raw"), count("hyper"), "{texts:?}");
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
