//! The compact view, the quick compare's first screen: frameworks as rows, scenarios as
//! columns, the best of each column marked and named where its interval clears the others' (the
//! tied leaders where not, [`crate::quick::claims`]), a line when the floors show a noisy host,
//! the hello cells past saturation, the legend, where the files went and the long table's notes.

use std::fmt::Write as _;
use std::ops::Range;

use crate::chart::bars::Kind;
use crate::env::Environment;
use crate::quick::claims::{Lead, Noisy, NOISY_SPREAD_PCT};
use crate::quick::loopback::QuickLoopback;
use crate::quick::QUICK_SCENARIOS;
use crate::units::sig3;

use super::{scale_pointer, wrap, SCREEN_WIDTH};
use crate::quick::cells::{Cell, Run};

/// Width of the compact view's first column, and of each scenario's column.
const NAME_WIDTH: usize = 13;
const COLUMN_WIDTH: usize = 11;

/// Scenarios per block of the compact view: seven columns fit 100 (13 + 7 × 12 = 97), so the
/// eleven scenarios print as two blocks, the seven fixed `GET`s, then the query and bodies.
const BLOCK_COLUMNS: usize = 7;

/// Tied leaders named in words before the rest are counted (`a ≈ b ≈ c ≈ 4 more`).
const TIED_NAMED: usize = 3;

/// Who leads each scenario: in-process (the fastest), over loopback (the busiest saturated).
type Leads = (Lead, Lead);

impl Run {
    /// The first screen: frameworks as rows, scenarios as columns, each cell the in-process
    /// time per request in µs and the loopback rate in thousands of requests per second, `*`
    /// beside the best framework of the column when its interval clears every other's, `=`
    /// beside each tied leader when not, and `~` beside a rate that is not the server's own.
    /// The floors and the reference follow the frameworks, under a rule; a line follows the
    /// leaders in words when the floors' batches show a noisy host. `files` names where the
    /// long table, the results file and the chart went, and `notes` are the long table's
    /// ([`super::long::Long::notes`]). The table prints in blocks of [`BLOCK_COLUMNS`]
    /// scenarios, each with its head and every row, at most 97 columns wide; the text around
    /// it wraps at [`SCREEN_WIDTH`].
    pub(crate) fn compact(&self, files: &str, notes: &str) -> String {
        let mut out = String::new();
        out.push_str(&wrap(
            &format!("framebench quick · {}", Environment::current()),
            SCREEN_WIDTH,
        ));
        out.push('\n');
        let leads: Vec<Leads> = (0..QUICK_SCENARIOS.len())
            .map(|k| (self.fastest(k), self.busiest(k)))
            .collect();
        for (i, block) in blocks().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            compact_head(&mut out, block.clone());
            self.compact_rows(&mut out, &leads, block);
        }
        leads_in_words(&mut out, &leads);
        if let Some(noisy) = self.noisy_floor() {
            out.push_str(&wrap(&noisy_host(&noisy), SCREEN_WIDTH));
        }
        out.push('\n');
        out.push_str(&self.hello_compact());
        self.compact_legend(&mut out);
        out.push_str(&wrap(files, SCREEN_WIDTH));
        out.push_str(notes);
        out
    }

    /// The frameworks' rows of the scenarios in `block`, then the floors' and the reference's
    /// under a rule.
    fn compact_rows(&self, out: &mut String, leads: &[Leads], block: Range<usize>) {
        let (frameworks, others): (Vec<&str>, Vec<&str>) =
            self.names().partition(|n| Kind::of(n) == Kind::Framework);
        for name in &frameworks {
            self.compact_row(out, name, leads, block.clone());
        }
        if !others.is_empty() {
            let _ = writeln!(
                out,
                "{:-<width$}",
                "-- floors and reference, not frameworks ",
                width = NAME_WIDTH + block.len() * (COLUMN_WIDTH + 1)
            );
            for name in &others {
                self.compact_row(out, name, leads, block.clone());
            }
        }
    }

    /// One framework's row in `block`: per scenario, its time and rate, each with its mark.
    fn compact_row(&self, out: &mut String, name: &str, leads: &[Leads], block: Range<usize>) {
        let mut line = format!("{name:<NAME_WIDTH$}");
        for k in block {
            let s = &QUICK_SCENARIOS[k];
            let time = match self.in_process(name, k) {
                Some(Cell::Time(t)) => sig3(t.median.as_secs_f64() * 1e6),
                Some(Cell::Failed(e)) => e.mark().into(),
                None => "–".into(),
            };
            let time_mark = leads[k].0.mark(name).unwrap_or(" ");
            let (rate, rate_mark) = self.rate_short(name, s.name, &leads[k].1);
            let _ = write!(line, " {time:>4}{time_mark}{rate:>5}{rate_mark}");
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }

    /// The rate of `name` × `scenario` in a few characters and its mark: `~` when not the
    /// server's own, else its mark in the column's `busiest` (`*` or `=`).
    fn rate_short(&self, name: &str, scenario: &str, busiest: &Lead) -> (String, &'static str) {
        match (self.loopback(name, scenario), self.rate(name, scenario)) {
            (_, Some((rps, own))) => (
                sig3(rps / 1e3),
                if own {
                    busiest.mark(name).unwrap_or(" ")
                } else {
                    "~"
                },
            ),
            (Some(c), None) => (c.status.short().chars().take(5).collect(), " "),
            (None, None) => ("–".into(), " "),
        }
    }

    /// What the columns mean and how the loopback cells ran, and the pointer to `framebench
    /// scale` on a machine where it matters.
    fn compact_legend(&self, out: &mut String) {
        let setup = &self.setup;
        let legend = format!(
            "µs: in-process time per request, median of {} interleaved rounds (every cell once \
             per round), one thread, no socket. \
             k/s: thousands of requests per second over loopback, {} connections, server {}, \
             {}. *: the best framework in the column, its interval clear of every other \
             framework's (µs: the rounds' 95 % interval; k/s: ratio to raw over the passes; as in \
             the long table). =: tied leaders, no single best: the best figure and each \
             framework whose interval overlaps it (floors and raw are not frameworks; a ~ rate \
             never leads). ~: the server was not saturated, so the rate is not its own \
             (client-bound or unsat in the long table). Every cell was checked against the \
             oracle first. Allocations, CPU per request, p99, the ratio to raw and the marks \
             explained: the long table.",
            crate::quick::ROUNDS,
            setup.connections,
            server_threads(setup),
            setup.params.pinning.label(),
        );
        out.push_str(&wrap(&legend, SCREEN_WIDTH));
        if let Some(pointer) = scale_pointer(setup.threads, crate::pinning::allowed_cpus().len()) {
            out.push_str(&wrap(&pointer, SCREEN_WIDTH));
        }
    }
}

/// The scenarios of each block of the table, as index ranges into [`QUICK_SCENARIOS`].
fn blocks() -> impl Iterator<Item = Range<usize>> {
    let n = QUICK_SCENARIOS.len();
    (0..n)
        .step_by(BLOCK_COLUMNS)
        .map(move |start| start..(start + BLOCK_COLUMNS).min(n))
}

/// A block's two head lines: its scenarios, then each column's units.
fn compact_head(out: &mut String, block: Range<usize>) {
    let mut head = format!("{:<NAME_WIDTH$}", "");
    let mut units = format!("{:<NAME_WIDTH$}", "framework");
    for s in &QUICK_SCENARIOS[block] {
        let _ = write!(head, " {:^COLUMN_WIDTH$}", s.name);
        let _ = write!(units, " {:>4}  {:>4} ", "µs", "k/s");
    }
    let _ = writeln!(out, "{}\n{}", head.trim_end(), units.trim_end());
}

/// The loopback servers' threads in words: `1 thread`, and the thread-per-connection servers'
/// pool when there are any (`1 thread (iron, nickel: 16, one per connection)`).
fn server_threads(setup: &QuickLoopback) -> String {
    let threads = format!(
        "{} thread{}",
        setup.threads,
        if setup.threads == 1 { "" } else { "s" }
    );
    if setup.pooled.is_empty() {
        threads
    } else {
        format!(
            "{threads} ({}: {}, one per connection)",
            setup.pooled.join(", "),
            setup.connections
        )
    }
}

/// The leaders per column once more, in words (a name does not fit a column): the clear best
/// alone, tied leaders joined by `≈` and followed by `(intervals overlap)`.
fn leads_in_words(out: &mut String, leads: &[Leads]) {
    type Pick = fn(&Leads) -> &Lead;
    let picks: [(&str, Pick); 2] = [
        ("fastest in-process (µs)", |l| &l.0),
        ("most req/s (k/s)", |l| &l.1),
    ];
    for (title, pick) in picks {
        // Each leader, or set of tied leaders, in words, with the scenarios it leads.
        let mut by: Vec<((String, bool), Vec<&str>)> = Vec::new();
        for (l, s) in leads.iter().zip(QUICK_SCENARIOS) {
            let Some(words) = lead_words(pick(l)) else {
                continue;
            };
            match by.iter_mut().find(|(w, _)| *w == words) {
                Some((_, scenarios)) => scenarios.push(s.name),
                None => by.push((words, vec![s.name])),
            }
        }
        let list: Vec<String> = by
            .iter()
            .map(|((names, tied), scenarios)| {
                let overlap = if *tied { " (intervals overlap)" } else { "" };
                format!("{names} in {}{overlap}", scenarios.join(", "))
            })
            .collect();
        let list = if list.is_empty() {
            "–".to_owned()
        } else {
            list.join("; ")
        };
        out.push_str(&wrap(&format!("{title}: {list}"), SCREEN_WIDTH));
    }
}

/// One column's lead in words, and whether it is a tie: the clear best's name, or the tied
/// leaders joined by `≈` (the first [`TIED_NAMED`], then how many more).
fn lead_words(lead: &Lead) -> Option<(String, bool)> {
    match lead {
        Lead::None => None,
        Lead::Clear(name) => Some(((*name).to_owned(), false)),
        Lead::Tied(names) => {
            let mut words = names[..names.len().min(TIED_NAMED)].join(" ≈ ");
            if names.len() > TIED_NAMED {
                let _ = write!(words, " ≈ {} more", names.len() - TIED_NAMED);
            }
            Some((words, true))
        }
    }
}

/// The noisy-host line: which floor cell spread how far, the bound, and what to do instead.
fn noisy_host(noisy: &Noisy) -> String {
    format!(
        "noisy host: the batches of {} {} spread ±{:.0}%, past the ±{NOISY_SPREAD_PCT:.0}% a \
         canned answer keeps on a quiet host; rerun on a quiet machine, or use `framebench ab` \
         (two builds in one run) or `framebench scale --rounds`.",
        noisy.floor, noisy.scenario, noisy.spread_pct
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::stats::Bound;
    use crate::interval::Estimate;
    use crate::quick::fixture::{made_up, timed};
    use crate::quick::loopback::PassRatio;

    /// `name`'s rows of the first screen as they should read, one per block: each scenario's
    /// cell `cell`.
    fn expected_rows(name: &str, cell: &str) -> Vec<String> {
        blocks()
            .map(|b| {
                format!("{name:<NAME_WIDTH$}{}", cell.repeat(b.len()))
                    .trim_end()
                    .to_owned()
            })
            .collect()
    }

    /// The rows of `name` in the table of `text` (one per block), before the hello cells.
    fn table_rows<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
        let found: Vec<&str> = text
            .lines()
            .take_while(|l| !l.starts_with("hello "))
            .filter(|l| l.split_whitespace().next() == Some(name))
            .collect();
        assert!(!found.is_empty(), "no row for {name}:\n{text}");
        found
    }

    /// `text` with every run of white space one space, so that a phrase reads whole wherever
    /// the text wrapped.
    fn flat(text: &str) -> String {
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// The first screen of `run`, flattened ([`flat`]), once each of `rows` (a name, then each
    /// scenario's cell of its row) is checked.
    fn screen_with_rows(run: &Run, rows: [(&str, &str); 2]) -> String {
        let text = run.compact("", "");
        for (name, cell) in rows {
            assert_eq!(table_rows(&text, name), expected_rows(name, cell), "{text}");
        }
        flat(&text)
    }

    /// Checks that the flattened `text` holds `phrase`.
    fn assert_has(text: &str, phrase: &str) {
        assert!(text.contains(phrase), "no `{phrase}` in:\n{text}");
    }

    /// Every in-process cell of `name` in `run` at `us` µs, `spread_pct` % apart.
    fn set_times(run: &mut Run, name: &str, us: f64, spread_pct: f64) {
        let (_, cells) = run.rows.iter_mut().find(|(n, _)| *n == name).unwrap();
        cells.iter_mut().for_each(|c| *c = timed(us, spread_pct));
    }

    /// Saturated servers for `a` and `b` in every scenario, with their ratios to raw over the
    /// passes (point, low end, high end).
    fn saturated_with_ratios(run: &mut Run, ratios: [(&str, [f64; 3]); 2]) {
        for c in run.loopback.iter_mut() {
            c.bound = Bound::Server;
        }
        run.setup.passes = 8;
        run.setup.of_reference = ratios
            .iter()
            .flat_map(|(name, [point, lo, hi])| {
                QUICK_SCENARIOS.iter().map(move |s| PassRatio {
                    target: (*name).to_owned(),
                    scenario: s.name.to_owned(),
                    ratio: Estimate {
                        point: *point,
                        lo: *lo,
                        hi: *hi,
                    },
                })
            })
            .collect();
    }

    /// Every scenario's name, as the leaders in words list them.
    fn all_scenarios() -> String {
        QUICK_SCENARIOS
            .iter()
            .map(|s| s.name)
            .collect::<Vec<_>>()
            .join(", ")
    }

    #[test]
    fn overlapping_intervals_name_a_tie_and_crown_no_one() {
        let (mut run, [a, b]) = made_up();
        // 1.00 µs ±30 % (0.70–1.30) and 1.20 µs ±30 % (0.84–1.56) overlap.
        set_times(&mut run, a, 1.0, 30.0);
        set_times(&mut run, b, 1.2, 30.0);
        // Both saturated, b the busier (150 k against 100 k), their ratios to raw over the
        // passes overlapping (0.40–0.60 and 0.55–0.95).
        saturated_with_ratios(&mut run, [(a, [0.5, 0.4, 0.6]), (b, [0.75, 0.55, 0.95])]);
        let text = screen_with_rows(&run, [(a, " 1.00=  100="), (b, " 1.20=  150=")]);
        let all = all_scenarios();
        assert_has(
            &text,
            &format!(
                "fastest in-process (µs): {a} ≈ {b} in {all} (intervals overlap) most req/s \
                 (k/s): {b} ≈ {a} in {all} (intervals overlap)"
            ),
        );
    }

    #[test]
    fn a_cell_clear_of_the_others_gets_the_star() {
        let (mut run, [a, b]) = made_up();
        // 1.00 µs ±1 % and 2.00 µs ±1 %; over loopback b's ratio to raw (0.70–0.80) clears
        // a's (0.45–0.55).
        saturated_with_ratios(&mut run, [(a, [0.5, 0.45, 0.55]), (b, [0.75, 0.7, 0.8])]);
        run.setup.pooled = vec![b];
        let text = screen_with_rows(&run, [(a, " 1.00*  100 "), (b, " 2.00   150*")]);
        let all = all_scenarios();
        assert_has(
            &text,
            &format!("fastest in-process (µs): {a} in {all} most req/s (k/s): {b} in {all} hello"),
        );
        // The thread-per-connection server's pool, from the run's own list.
        assert_has(&text, "server 1 thread (fw-b: 4, one per connection),");
        // b's interval is unbounded without its ratio: nothing is claimed over loopback.
        run.setup.of_reference.retain(|r| r.target != b);
        screen_with_rows(&run, [(a, " 1.00*  100="), (b, " 2.00   150=")]);
    }

    #[test]
    fn the_noisy_host_line_shows_past_the_floors_bound() {
        let (mut run, _) = made_up();
        let floor = crate::frameworks::floor().unwrap().name;
        let static_ = QUICK_SCENARIOS
            .iter()
            .position(|s| s.name == "static")
            .unwrap();
        let with_static_spread = |run: &mut Run, spread_pct: f64| {
            let (_, cells) = run.rows.iter_mut().find(|(n, _)| *n == floor).unwrap();
            cells[static_] = timed(0.3, spread_pct);
            flat(&run.compact("", ""))
        };
        for under in [1.0, NOISY_SPREAD_PCT] {
            let text = with_static_spread(&mut run, under);
            assert!(!text.contains("noisy host"), "{text}");
        }
        let text = with_static_spread(&mut run, 12.0);
        assert_has(
            &text,
            &format!(
                "overlap) noisy host: the batches of {floor} static spread ±12%, past the ±10% a \
                 canned answer keeps on a quiet host; rerun on a quiet machine, or use \
                 `framebench ab` (two builds in one run) or `framebench scale --rounds`. hello"
            ),
        );
    }

    #[test]
    fn compact_view_fits_100_columns_and_marks_the_best_saturated_cell() {
        let (run, [a, b]) = made_up();
        let long = run.long();
        let text = run.compact("Files: long table: target/quick/long.md", &long.notes);
        for line in text.lines() {
            assert!(line.chars().count() <= SCREEN_WIDTH, "too wide: {line}");
        }
        let lines: Vec<&str> = text.lines().collect();
        // Each scenario heads one column of one block, in the oracle's order.
        let heads: Vec<&str> = lines
            .iter()
            .take_while(|l| !l.starts_with("hello "))
            .filter(|l| l.starts_with("  "))
            .flat_map(|l| l.split_whitespace())
            .collect();
        let names: Vec<&str> = QUICK_SCENARIOS.iter().map(|s| s.name).collect();
        assert_eq!(heads, names, "{text}");
        assert_eq!(blocks().count(), 2, "{text}");
        // A name's rows, one per block, as one string.
        let row = |name: &str| table_rows(&text, name).join(" ");
        // One cell per scenario: a's time is the best; its rate the only saturated one, but b's
        // is higher (not its server's own, so marked and never the leader) with no interval
        // to set it apart: a's is not the clear best.
        assert_eq!(
            row(a).matches("1.00*").count(),
            QUICK_SCENARIOS.len(),
            "{text}"
        );
        assert_eq!(
            row(a).matches(" 100=").count(),
            QUICK_SCENARIOS.len(),
            "{text}"
        );
        assert_eq!(
            row(b).matches(" 150~").count(),
            QUICK_SCENARIOS.len(),
            "{text}"
        );
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
        assert!(busiest.contains(&format!("{a} ≈ {b} in hello")), "{text}");
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
        assert!(text.contains("rank k/s: "), "{text}");
        assert!(
            !text.contains("rank bill") && !text.contains("rho"),
            "{text}"
        );
        assert_eq!(long.failed, 0, "{text}");
        assert!(long.notes.contains("kept open"), "{}", long.notes);
    }
}
