//! The quick compare's summary chart: per scenario, in-process time per request and loopback
//! requests per second, then the hello cells past saturation: churn rate and the bill.

use crate::chart::bars::{Bar, Panel};
use crate::driver::output::bound_mark;
use crate::driver::stats::Status;
use crate::quick::cells::Run;
use crate::quick::hello;
use crate::quick::QUICK_SCENARIOS;
use crate::units::kilo;

impl Run {
    /// The summary chart: per scenario, in-process time per request (left) and loopback
    /// requests per second (right), sorted, best on top; then the panels that have no
    /// in-process partner, two to a row: the wire-only scenarios' rates (`upload_chunked`),
    /// and the hello cells past saturation.
    pub(crate) fn chart(&self, path: &std::path::Path) -> anyhow::Result<()> {
        let mut panels = Vec::new();
        // Loopback panels with no in-process panel beside them; kept for the end, so that
        // every row above reads time | rate of one scenario.
        let mut alone = Vec::new();
        for (k, s) in QUICK_SCENARIOS.iter().enumerate() {
            let times = self
                .names()
                .filter_map(|n| Some(Bar::new(n, self.time_us(n, k)? * 1e3, None)))
                .collect();
            panels.push(Panel {
                title: format!("{}: in-process time per request", s.name),
                axis: format!(
                    "median of {} interleaved rounds, one thread (lower is better)",
                    crate::quick::ROUNDS
                ),
                higher_is_better: false,
                format: crate::units::fmt_ns,
                bars: times,
            });
            let rates = self
                .names()
                .filter_map(|n| {
                    let (rps, own) = self.rate(n, s.name)?;
                    Some(rate_bar(n, rps, own))
                })
                .collect();
            let rate_panel = Panel {
                title: format!("{}: requests per second over loopback", s.name),
                axis: format!(
                    "{} connections, server {} thread(s) (higher is better)",
                    self.setup.connections, self.setup.threads
                ),
                higher_is_better: true,
                format: |v| kilo(v),
                bars: rates,
            };
            if s.wire_only() {
                alone.push(rate_panel);
            } else {
                panels.push(rate_panel);
            }
        }
        panels.append(&mut alone);
        // The hello cells past saturation: the churn rate beside the bill.
        let churn = self
            .hello_names()
            .filter_map(|n| {
                let c = self.hello.churn(n).filter(|c| c.status == Status::Ok)?;
                Some(rate_bar(n, c.rps, bound_mark(c).is_empty()))
            })
            .collect();
        panels.push(Panel {
            title: format!(
                "hello: req/s with a new connection every {} requests",
                hello::CHURN_REQUESTS
            ),
            axis: format!(
                "{} connections, closed loop (higher is better)",
                self.hello.connections
            ),
            higher_is_better: true,
            format: |v| kilo(v),
            bars: churn,
        });
        let bill = self
            .hello_names()
            .filter_map(|n| {
                let us = hello::cpu_us_per_request(self.hello.bill(n)?).ok()?;
                Some(Bar::new(n, us * 1e3, None))
            })
            .collect();
        panels.push(Panel {
            title: format!(
                "hello: server CPU time per request at {:.0} k req/s",
                hello::BILL_RATE / 1e3
            ),
            axis: "user + system, open loop (lower is better)".into(),
            higher_is_better: false,
            format: crate::units::fmt_ns,
            bars: bill,
        });
        crate::chart::bars::draw(path, &panels, 2)
    }
}

/// A loopback rate's bar, faded and marked when the rate is not the server's own.
fn rate_bar(name: &str, rps: f64, own: bool) -> Bar {
    let mut bar = Bar::new(name, rps, None);
    if !own {
        bar.name.push_str(" ~not saturated");
        bar.faded = true;
    }
    bar
}
