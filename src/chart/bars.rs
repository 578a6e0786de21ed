//! Sorted horizontal bar charts, to SVG or PNG (by the file's extension), with plotters: the
//! charts of `framebench report` (docs/generated/results/) and the quick compare's summary. One bar per
//! framework, the best at the top; an interval, where the figure has one, drawn as a whisker;
//! the floors (`null`, `null-hyper010`) and the reference (`raw`) in colours of their own and
//! named as such, so that nobody reads them as a framework. Text is DejaVu Sans, embedded from
//! the `dejavu` crate ([`super::register_font`]), so no system font is needed.

use std::path::Path;

use anyhow::bail;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::{plot_error, to_file, Backend, Drawing, Plot, FONT};

/// What a bar stands for: a compared framework, a floor or the reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A compared framework.
    Framework,
    /// A floor: no routing, no handler, a canned response.
    Floor,
    /// The reference server (`raw`).
    Reference,
}

impl Kind {
    /// The kind of the registry entry called `name` (a framework when it is not in the
    /// registry).
    pub(crate) fn of(name: &str) -> Kind {
        match crate::frameworks::find(name) {
            Some(e) if e.baseline && e.in_process => Kind::Floor,
            Some(e) if e.baseline => Kind::Reference,
            _ => Kind::Framework,
        }
    }

    fn color(self) -> RGBColor {
        match self {
            Kind::Framework => RGBColor(0x4c, 0x72, 0xb0),
            Kind::Floor => RGBColor(0xa0, 0xa0, 0xa0),
            Kind::Reference => RGBColor(0xdd, 0x84, 0x52),
        }
    }

    /// What the bar's label says after the name.
    fn suffix(self) -> &'static str {
        match self {
            Kind::Framework => "",
            Kind::Floor => " (floor)",
            Kind::Reference => " (reference)",
        }
    }
}

/// One bar.
#[derive(Debug, Clone)]
pub(crate) struct Bar {
    /// The framework's name.
    pub(crate) name: String,
    /// The figure.
    pub(crate) value: f64,
    /// Its interval, drawn as a whisker, when the figure has one.
    pub(crate) interval: Option<(f64, f64)>,
    /// Framework, floor or reference.
    pub(crate) kind: Kind,
    /// Drawn pale: a figure that is not about the thing it names (a rate the server did not
    /// set), still shown so that the bar is not missing.
    pub(crate) faded: bool,
}

impl Bar {
    /// A bar for the registry entry `name`, its kind looked up.
    pub(crate) fn new(name: &str, value: f64, interval: Option<(f64, f64)>) -> Bar {
        Bar {
            name: name.to_owned(),
            value,
            interval: interval.filter(|(lo, hi)| lo.is_finite() && hi.is_finite()),
            kind: Kind::of(name),
            faded: false,
        }
    }
}

/// One chart: a title, the unit on the value axis, the bars.
#[derive(Debug, Clone)]
pub(crate) struct Panel {
    /// Above the chart: what, which scenario, which variant.
    pub(crate) title: String,
    /// The value axis's label, with its unit.
    pub(crate) axis: String,
    /// Higher is better (req/s) or lower is better (time, counts); the best bar goes on top.
    pub(crate) higher_is_better: bool,
    /// How a value is written at the end of its bar (and on the axis).
    pub(crate) format: fn(f64) -> String,
    /// The bars, in any order.
    pub(crate) bars: Vec<Bar>,
}

impl Panel {
    /// The bars, best first.
    pub(crate) fn sorted(&self) -> Vec<&Bar> {
        let mut bars: Vec<&Bar> = self.bars.iter().filter(|b| b.value.is_finite()).collect();
        bars.sort_by(|a, b| {
            let order = a.value.total_cmp(&b.value);
            if self.higher_is_better {
                order.reverse()
            } else {
                order
            }
        });
        bars
    }
}

/// Pixels per bar, and the panel's fixed margins around the bars.
const BAR_PX: u32 = 22;
const PANEL_EXTRA_PX: u32 = 95;
/// Width of one panel.
const PANEL_WIDTH: u32 = 760;

/// The height one panel of `bars` bars needs.
fn panel_height(bars: usize) -> u32 {
    PANEL_EXTRA_PX + BAR_PX * bars.max(1) as u32
}

/// Draws `panels` to `path` (`.svg` or `.png`) in a grid of `columns` columns, rows as tall as
/// their tallest panel.
pub(crate) fn draw(path: &Path, panels: &[Panel], columns: usize) -> anyhow::Result<()> {
    let panels: Vec<&Panel> = panels.iter().filter(|p| !p.sorted().is_empty()).collect();
    if panels.is_empty() {
        bail!("nothing to chart: no figure was measured");
    }
    let columns = columns.clamp(1, panels.len());
    let heights: Vec<u32> = panels
        .chunks(columns)
        .map(|row| {
            row.iter()
                .map(|p| panel_height(p.sorted().len()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let size = (PANEL_WIDTH * columns as u32, heights.iter().sum());
    to_file(
        path,
        size,
        &Grid {
            panels: &panels,
            columns,
            heights: &heights,
        },
    )
}

/// Panels in rows of `columns`, each row as tall as its tallest panel.
struct Grid<'a> {
    panels: &'a [&'a Panel],
    columns: usize,
    heights: &'a [u32],
}

impl Drawing for Grid<'_> {
    fn draw_on<DB: Backend>(&self, root: &DrawingArea<DB, Shift>) -> anyhow::Result<()> {
        draw_grid(root, self.panels, self.columns, self.heights)
    }
}

fn draw_grid<DB: Backend>(
    root: &DrawingArea<DB, Shift>,
    panels: &[&Panel],
    columns: usize,
    heights: &[u32],
) -> anyhow::Result<()> {
    root.fill(&WHITE).map_err(plot_error)?;
    let mut rest = root.clone();
    for (row, height) in panels.chunks(columns).zip(heights) {
        let (this, below) = rest.split_vertically(*height);
        let breaks: Vec<i32> = (1..columns as i32)
            .map(|k| k * PANEL_WIDTH as i32)
            .collect();
        for (area, panel) in this
            .split_by_breakpoints(breaks, [] as [i32; 0])
            .iter()
            .zip(row)
        {
            draw_panel(area, panel)?;
        }
        rest = below;
    }
    Ok(())
}

/// One chart: a bar per framework, best on top, value written at the bar's end.
fn draw_panel<DB: Backend>(area: &DrawingArea<DB, Shift>, panel: &Panel) -> anyhow::Result<()> {
    let bars = panel.sorted();
    let n = bars.len();
    let top = bars
        .iter()
        .map(|b| b.interval.map_or(b.value, |(_, hi)| hi.max(b.value)))
        .fold(0.0f64, f64::max)
        .max(f64::MIN_POSITIVE);
    // Room right of the longest bar for its value's text.
    let x_max = top * 1.28;
    // Row k (0 = best) is drawn at the top: y runs from n at the bottom to 0 at the top.
    let row_y = |k: usize| (n - k) as f64 - 0.5;
    let names: Vec<String> = bars
        .iter()
        .map(|b| format!("{}{}", b.name, b.kind.suffix()))
        .collect();
    let label_width = names
        .iter()
        .map(|s| s.chars().count() as u32 * 8 + 16)
        .max()
        .unwrap_or(60)
        .clamp(60, 230);
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, (FONT, 17))
        .margin(10)
        .margin_right(20)
        .x_label_area_size(40)
        .y_label_area_size(label_width)
        .build_cartesian_2d(0.0..x_max, 0.0..n as f64)
        .map_err(plot_error)?;
    let format = panel.format;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .x_desc(&panel.axis)
        .x_labels(6)
        .x_label_formatter(&|v| {
            if *v == 0.0 {
                "0".to_owned()
            } else {
                format(*v)
            }
        })
        .y_labels(n * 2 + 1)
        .y_label_formatter(&|v| {
            // Label only the rows' centres, each with its bar's name.
            let k = n as f64 - v - 0.5;
            let r = k.round();
            if (k - r).abs() < 1e-6 && r >= 0.0 && (r as usize) < n {
                names[r as usize].clone()
            } else {
                String::new()
            }
        })
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 14))
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(plot_error)?;
    for (k, bar) in bars.iter().enumerate() {
        draw_bar(&mut chart, row_y(k), bar, format)?;
    }
    Ok(())
}

/// One bar at height `y`: its rectangle, its interval's whisker if it has one, and its value
/// written past whichever ends further right.
fn draw_bar<DB: Backend>(
    chart: &mut Plot<'_, DB>,
    y: f64,
    bar: &Bar,
    format: fn(f64) -> String,
) -> anyhow::Result<()> {
    let color = bar.kind.color().mix(if bar.faded { 0.35 } else { 1.0 });
    chart
        .draw_series(std::iter::once(Rectangle::new(
            [(0.0, y - 0.36), (bar.value, y + 0.36)],
            color.filled(),
        )))
        .map_err(plot_error)?;
    let mut text_x = bar.value;
    if let Some((lo, hi)) = bar.interval {
        let whisker = BLACK.stroke_width(1);
        chart
            .draw_series([
                PathElement::new(vec![(lo, y), (hi, y)], whisker),
                PathElement::new(vec![(lo, y - 0.22), (lo, y + 0.22)], whisker),
                PathElement::new(vec![(hi, y - 0.22), (hi, y + 0.22)], whisker),
            ])
            .map_err(plot_error)?;
        text_x = text_x.max(hi);
    }
    chart
        .draw_series(std::iter::once(
            EmptyElement::at((text_x, y))
                + Text::new(
                    format(bar.value),
                    (5, -7),
                    (FONT, 12).into_font().color(&BLACK),
                ),
        ))
        .map_err(plot_error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn panel(higher_is_better: bool) -> Panel {
        Panel {
            title: "hello: time per request".into(),
            axis: "ns".into(),
            higher_is_better,
            format: |v| format!("{v:.0}"),
            bars: vec![
                Bar::new("b", 2.0, Some((1.5, 2.5))),
                Bar::new("a", 1.0, None),
                Bar::new("c", 3.0, Some((f64::NEG_INFINITY, f64::INFINITY))),
            ],
        }
    }

    #[test]
    fn best_first_and_unbounded_intervals_dropped() {
        let p = panel(false);
        let names: Vec<&str> = p.sorted().iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert!(p.bars[2].interval.is_none());
        let names: Vec<String> = panel(true)
            .sorted()
            .iter()
            .map(|b| b.name.clone())
            .collect();
        assert_eq!(names, ["c", "b", "a"]);
    }

    #[test]
    fn writes_svg_and_refuses_other_extensions() {
        let dir = std::env::temp_dir().join(format!("framebench-chart-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let svg = dir.join("c.svg");
        draw(&svg, &[panel(false), panel(true)], 2).unwrap();
        let text = std::fs::read_to_string(&svg).unwrap();
        // The stamp naming the command and commit comes first (crate::generated), then the chart.
        assert!(
            text.starts_with("<!-- generated by framebench at "),
            "{}",
            &text[..40.min(text.len())]
        );
        assert!(text.contains("\n<svg "));
        assert!(text.contains("hello: time per request"));
        assert!(text.trim_end().ends_with("</svg>"));
        assert!(draw(&dir.join("c.txt"), &[panel(false)], 1).is_err());
        let empty = Panel {
            bars: Vec::new(),
            ..panel(false)
        };
        assert!(draw(&svg, &[empty], 1).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
