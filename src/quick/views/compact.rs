//! The compact view, the quick compare's first screen: frameworks as rows, scenarios as
//! columns, the best of each column marked and named, the hello cells past saturation, the
//! legend, where the files went and the long table's notes.

use std::fmt::Write as _;

use crate::cell::CellError;
use crate::chart::Kind;
use crate::driver::stats::Status;
use crate::env::Environment;
use crate::oracle::SCENARIOS;
use crate::units::sig3;

use super::{scale_pointer, wrap, SCREEN_WIDTH};
use crate::quick::cells::{Cell, Run};

/// Width of the compact view's first column, and of each scenario's column.
const NAME_WIDTH: usize = 13;
const COLUMN_WIDTH: usize = 11;

/// The best framework of each scenario: the fastest in-process, the busiest saturated.
type Best = (Option<&'static str>, Option<&'static str>);

impl Run {
    /// The first screen: frameworks as rows, scenarios as columns, each cell the in-process
    /// time per request in µs and the loopback rate in thousands of requests per second, `*`
    /// beside the best framework of the column and `~` beside a rate that is not the server's
    /// own. The floors and the reference follow the frameworks, under a rule. `files` names
    /// where the long table, the results file and the chart went, and `notes` are the long
    /// table's ([`super::long::Long::notes`]). The table is 97 columns wide; the text around it
    /// wraps at [`SCREEN_WIDTH`].
    pub(crate) fn compact(&self, files: &str, notes: &str) -> String {
        let mut out = String::new();
        out.push_str(&wrap(
            &format!("framebench quick · {}", Environment::current()),
            SCREEN_WIDTH,
        ));
        out.push('\n');
        compact_head(&mut out);
        let best: Vec<Best> = (0..SCENARIOS.len()).map(|k| self.best(k)).collect();
        self.compact_rows(&mut out, &best);
        best_in_words(&mut out, &best);
        out.push('\n');
        out.push_str(&self.hello_compact());
        self.compact_legend(&mut out);
        out.push_str(&wrap(files, SCREEN_WIDTH));
        out.push_str(notes);
        out
    }

    /// The frameworks' rows, then the floors' and the reference's under a rule.
    fn compact_rows(&self, out: &mut String, best: &[Best]) {
        let (frameworks, others): (Vec<&str>, Vec<&str>) =
            self.names().partition(|n| Kind::of(n) == Kind::Framework);
        for name in &frameworks {
            self.compact_row(out, name, best);
        }
        if !others.is_empty() {
            let _ = writeln!(
                out,
                "{:-<width$}",
                "-- floors and reference, not frameworks ",
                width = NAME_WIDTH + SCENARIOS.len() * (COLUMN_WIDTH + 1)
            );
            for name in &others {
                self.compact_row(out, name, best);
            }
        }
    }

    /// One framework's row: per scenario, its time and rate, each with its mark.
    fn compact_row(&self, out: &mut String, name: &str, best: &[Best]) {
        let mut line = format!("{name:<NAME_WIDTH$}");
        for (k, s) in SCENARIOS.iter().enumerate() {
            let time = match self.in_process(name, k) {
                Some(Cell::Time(t)) => sig3(t.median.as_secs_f64() * 1e6),
                Some(Cell::Failed(CellError::Skipped(_))) => "skip".into(),
                Some(Cell::Failed(_)) => "FAIL".into(),
                None => "–".into(),
            };
            let time_mark = if best[k].0 == Some(name) { "*" } else { " " };
            let (rate, rate_mark) = self.rate_short(name, s.name, best[k].1);
            let _ = write!(line, " {time:>4}{time_mark}{rate:>5}{rate_mark}");
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }

    /// The rate of `name` × `scenario` in a few characters and its mark: `~` when not the
    /// server's own, `*` when it is the column's `busiest`.
    fn rate_short(
        &self,
        name: &str,
        scenario: &str,
        busiest: Option<&str>,
    ) -> (String, &'static str) {
        match (self.loopback(name, scenario), self.rate(name, scenario)) {
            (_, Some((rps, own))) => (
                sig3(rps / 1e3),
                if !own {
                    "~"
                } else if busiest == Some(name) {
                    "*"
                } else {
                    " "
                },
            ),
            (Some(c), None) if matches!(c.status, Status::Skipped(_)) => ("skip".into(), " "),
            (Some(c), None) => (c.status.short().chars().take(5).collect(), " "),
            (None, None) => ("–".into(), " "),
        }
    }

    /// What the columns mean and how the loopback cells ran, and the pointer to `framebench
    /// scale` on a machine where it matters.
    fn compact_legend(&self, out: &mut String) {
        let setup = &self.setup;
        let legend = format!(
            "µs: in-process time per request, median of 5 batches, one thread, no socket. \
             k/s: thousands of requests per second over loopback, {} connections, server {} \
             thread{}, {}. *: the best framework in the column (floors and raw are not \
             frameworks). ~: the server was not saturated, so the rate is not its own \
             (client-bound or unsat in the long table). \
             Every cell was checked against the oracle first. Allocations, CPU per request, \
             p99, the ratio to raw and the marks explained: the long table.",
            setup.connections,
            setup.threads,
            if setup.threads == 1 { "" } else { "s" },
            setup.params.pinning.label(),
        );
        out.push_str(&wrap(&legend, SCREEN_WIDTH));
        if let Some(pointer) = scale_pointer(setup.threads, crate::pinning::allowed_cpus().len()) {
            out.push_str(&wrap(&pointer, SCREEN_WIDTH));
        }
    }
}

/// The table's two head lines: the scenarios, then each column's units.
fn compact_head(out: &mut String) {
    let mut head = format!("{:<NAME_WIDTH$}", "");
    let mut units = format!("{:<NAME_WIDTH$}", "framework");
    for s in SCENARIOS {
        let _ = write!(head, " {:^COLUMN_WIDTH$}", s.name);
        let _ = write!(units, " {:>4}  {:>4} ", "µs", "k/s");
    }
    let _ = writeln!(out, "{}\n{}", head.trim_end(), units.trim_end());
}

/// The best per column once more, in words: a name does not fit a column.
fn best_in_words(out: &mut String, best: &[Best]) {
    type Pick = fn(&Best) -> Option<&'static str>;
    let picks: [(&str, Pick); 2] = [
        ("fastest in-process (µs)", |b| b.0),
        ("most req/s (k/s)", |b| b.1),
    ];
    for (title, pick) in picks {
        let mut by: Vec<(&str, Vec<&str>)> = Vec::new();
        for (b, s) in best.iter().zip(SCENARIOS) {
            let Some(name) = pick(b) else {
                continue;
            };
            match by.iter_mut().find(|(n, _)| *n == name) {
                Some((_, scenarios)) => scenarios.push(s.name),
                None => by.push((name, vec![s.name])),
            }
        }
        let list: Vec<String> = by
            .iter()
            .map(|(n, scenarios)| format!("{n} in {}", scenarios.join(", ")))
            .collect();
        out.push_str(&wrap(
            &format!(
                "{title}: {}",
                if list.is_empty() {
                    "–".to_owned()
                } else {
                    list.join("; ")
                }
            ),
            SCREEN_WIDTH,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quick::fixture::made_up;

    #[test]
    fn compact_view_fits_100_columns_and_marks_the_best_saturated_cell() {
        let Some((run, [a, b])) = made_up() else {
            return; // fewer than two frameworks compiled in: nothing to compare
        };
        let long = run.long();
        let text = run.compact("Files: long table: target/quick/long.md", &long.notes);
        for line in text.lines() {
            assert!(line.chars().count() <= SCREEN_WIDTH, "too wide: {line}");
        }
        let lines: Vec<&str> = text.lines().collect();
        let header = lines.iter().find(|l| l.contains("not_found")).unwrap();
        for s in SCENARIOS {
            assert!(header.contains(s.name), "{header}");
        }
        let row = |name: &str| {
            *lines
                .iter()
                .find(|l| l.split_whitespace().next() == Some(name))
                .unwrap_or_else(|| panic!("no row for {name}:\n{text}"))
        };
        // One cell per scenario: a's time is the best, its rate the best saturated one; b's
        // rate is higher but not its server's own, so it is marked and never best.
        assert_eq!(row(a).matches("1.00*").count(), SCENARIOS.len(), "{text}");
        assert_eq!(row(a).matches(" 100*").count(), SCENARIOS.len(), "{text}");
        assert_eq!(row(b).matches(" 150~").count(), SCENARIOS.len(), "{text}");
        assert!(!row(b).contains('*'), "{text}");
        // The floor and the reference come after the rule, unmarked: they are not frameworks.
        let rule = lines
            .iter()
            .position(|l| l.starts_with("-- floors"))
            .unwrap();
        let floor = crate::frameworks::floor().unwrap().name;
        let reference = crate::frameworks::reference().unwrap().name;
        for name in [floor, reference] {
            let at = lines
                .iter()
                .position(|l| l.split_whitespace().next() == Some(name));
            assert!(at.unwrap() > rule, "{text}");
            assert!(!row(name).contains('*'), "{text}");
        }
        let best = lines
            .iter()
            .find(|l| l.starts_with("fastest in-process (µs): "))
            .unwrap();
        assert!(best.contains(&format!("{a} in hello")), "{text}");
        let busiest = lines
            .iter()
            .find(|l| l.starts_with("most req/s (k/s): "))
            .unwrap();
        assert!(busiest.contains(&format!("{a} in hello")), "{text}");
        assert!(!busiest.contains(b), "{text}");
        assert!(text.contains("target/quick/long.md"), "{text}");
        // Past saturation: a's churn rate, b's bill of 10 µs (10 % of a core at 10 k req/s),
        // the reference's ignored close marked and not a failure.
        let hello_row = |name: &str| {
            let head = lines.iter().position(|l| l.starts_with("hello ")).unwrap();
            *lines[head..]
                .iter()
                .find(|l| l.split_whitespace().next() == Some(name))
                .unwrap_or_else(|| panic!("no hello row for {name}:\n{text}"))
        };
        let cells = |name: &str| -> Vec<String> {
            hello_row(name)
                .split_whitespace()
                .map(str::to_owned)
                .collect()
        };
        // Standing: 20 % and 10 % of a core, 200 and 100 ms per second.
        assert_eq!(cells(a)[1..4], ["30.0", "20.0", "200"], "{text}");
        assert_eq!(cells(b)[1..4], ["20.0", "10.0", "100"], "{text}");
        assert_eq!(cells(reference)[1], "OPEN", "{text}");
        assert!(text.contains("rank: fewer than 3"), "{text}");
        assert_eq!(long.failed, 0, "{text}");
        assert!(long.notes.contains("kept open"), "{}", long.notes);
    }
}
