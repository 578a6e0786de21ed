//! Every chart of framebench: sorted bar charts ([`bars`]: the report's, the quick compare's,
//! the h2c results') and line charts ([`lines`]: the load sweep's, the scale sweep's). Here is
//! what they share: the embedded font, the backend picked by the file's extension (SVG, stamped
//! by [`crate::generated`], or PNG), and plotters' errors as `anyhow` ones.

pub(crate) mod bars;
pub(crate) mod lines;
pub(crate) mod load_bars;
pub(crate) mod load_lines;
pub(crate) mod scale_lines;

use std::path::Path;
use std::sync::Once;

use anyhow::{anyhow, bail};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

/// The font family every chart uses: DejaVu Sans, registered by [`register_font`].
pub(crate) const FONT: &str = "sans-serif";

/// A chart with `f64` on both axes, as every chart here is.
pub(crate) type Plot<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Registers DejaVu Sans (regular and bold) as [`FONT`], once per process.
pub(crate) fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular());
        let _ = plotters::style::register_font(FONT, FontStyle::Bold, dejavu::sans::bold());
    });
}

/// A plotters backend whose errors can be kept ([`plot_error`]): what every drawing function
/// of framebench takes.
pub(crate) trait Backend: DrawingBackend<ErrorType: 'static> {}

impl<T: DrawingBackend<ErrorType: 'static>> Backend for T {}

/// Something drawn onto any plotters backend: [`to_file`] picks SVG or PNG for it.
pub(crate) trait Drawing {
    /// Draws onto `root`.
    fn draw_on<DB: Backend>(&self, root: &DrawingArea<DB, Shift>) -> anyhow::Result<()>;
}

/// Draws `what` to `path`, `.svg` or `.png` by its extension, `size` pixels.
pub(crate) fn to_file(path: &Path, size: (u32, u32), what: &impl Drawing) -> anyhow::Result<()> {
    register_font();
    match path.extension().and_then(|e| e.to_str()) {
        Some("svg") => {
            // Drawn into memory, then written with the stamp that names the command and commit.
            let mut text = String::new();
            {
                let root = SVGBackend::with_string(&mut text, size).into_drawing_area();
                what.draw_on(&root)?;
                root.present().map_err(|e| anyhow!("{e}"))?;
            }
            std::fs::write(path, crate::generated::svg(&text))
                .map_err(|e| anyhow!("writing {}: {e}", path.display()))
        }
        Some("png") => {
            let root = BitMapBackend::new(path, size).into_drawing_area();
            what.draw_on(&root)?;
            root.present().map_err(|e| anyhow!("{e}"))
        }
        _ => bail!("chart file must end in .svg or .png: {}", path.display()),
    }
}

/// A plotters error as an `anyhow` one.
pub(crate) fn plot_error<E: std::error::Error + Send + Sync>(
    e: DrawingAreaErrorKind<E>,
) -> anyhow::Error {
    anyhow!("plot: {e:?}")
}
