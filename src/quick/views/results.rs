//! The quick compare as a results file (`framebench diff` reads it): every in-process time, the
//! allocation counts, every loopback rate and the hello cells past saturation.

use crate::driver::stats::{CellResult, Status};
use crate::provenance::{Provenance, Window};
use crate::quick::cells::{Cell, Run};
use crate::quick::hello;
use crate::quick::QUICK_SCENARIOS;
use crate::results::{Figure, Metric, Results};

impl Run {
    /// The quick compare as a results file (`framebench diff` reads it): every in-process time,
    /// the allocation counts, and every loopback rate. The times and rates carry no interval: the
    /// batches' and passes' range is one process's, and two processes of one build differ by more
    /// (docs/methodology/README.md, "Two builds' times"), so `diff` prints `≈` for them and compares the
    /// counts exactly. `framebench ab` is the comparison of times. Measured in `window`.
    pub(crate) fn results(&self, window: Window) -> Results {
        let variant = self.options.label();
        let mut figures = Vec::new();
        self.in_process_figures(&variant, &mut figures);
        if let Ok(a) = &self.allocs {
            figures.extend(a.figures());
        }
        self.loopback_figures(&variant, &mut figures);
        self.hello_figures(&variant, &mut figures);
        Results::new("quick", figures, Provenance::here(window))
    }

    /// Every in-process time, in ns per request.
    fn in_process_figures(&self, variant: &str, figures: &mut Vec<Figure>) {
        for (name, cells) in &self.rows {
            for (cell, s) in cells.iter().zip(QUICK_SCENARIOS) {
                if let Cell::Time(t) = cell {
                    let ns = t.median.as_secs_f64() * 1e9;
                    figures.push(Figure::count(
                        "quick/in_process",
                        name,
                        s.name,
                        variant,
                        Metric::Time,
                        ns,
                    ));
                }
            }
        }
    }

    /// Every loopback rate that was measured, in req/s.
    fn loopback_figures(&self, variant: &str, figures: &mut Vec<Figure>) {
        let loopback_variant = format!("{variant},c{}", self.setup.connections);
        for c in self
            .loopback
            .iter()
            .filter(|c| c.status == Status::Ok && c.rps > 0.0)
        {
            figures.push(Figure::count(
                "quick/loopback",
                &c.target,
                &c.scenario,
                &loopback_variant,
                Metric::Rps,
                c.rps,
            ));
        }
    }

    /// The hello cells past saturation: the churn rate, and the bill and the standing cost as
    /// CPU times (ns per request, ns per second).
    fn hello_figures(&self, variant: &str, figures: &mut Vec<Figure>) {
        let hello = &self.hello;
        let hello_variant = |what: String| format!("{variant},c{},{what}", hello.connections);
        for c in hello.churn.iter().filter(|c| c.status == Status::Ok) {
            figures.push(Figure::count(
                "quick/churn",
                &c.target,
                &c.scenario,
                &hello_variant(format!("rpc{}", hello::CHURN_REQUESTS)),
                Metric::Rps,
                c.rps,
            ));
        }
        for (bench, cells, value, rate) in [
            (
                "quick/bill",
                &hello.bill,
                hello::cpu_us_per_request as fn(&CellResult) -> anyhow::Result<f64>,
                hello::BILL_RATE,
            ),
            (
                "quick/standing",
                &hello.standing,
                hello::cpu_ms_per_second,
                hello::STANDING_RATE,
            ),
        ] {
            let scale = if bench == "quick/bill" { 1e3 } else { 1e6 };
            for c in cells {
                if let Ok(v) = value(c) {
                    figures.push(Figure::count(
                        bench,
                        &c.target,
                        &c.scenario,
                        &hello_variant(format!("r{rate:.0}")),
                        Metric::Time,
                        v * scale,
                    ));
                }
            }
        }
    }
}
