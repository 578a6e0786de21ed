//! What the quick compare's first screen may claim from its own data: the best framework of a
//! column only where its interval clears every other framework's, the tied leaders where the
//! intervals overlap, and whether the floors' batches show a noisy host.
//! docs/methodology/loopback.md ("What the first screen claims") states the rule and the bound.

use crate::chart::bars::Kind;
use crate::quick::QUICK_SCENARIOS;

use super::cells::{Cell, Run};

/// A floor's in-process batches farther than this from their median (in percent of it, the
/// long table's `±`) show a noisy host. A floor answers a canned response, the same work in
/// every batch: on this project's VM 12 of the 14 floor cells of the run of a32c117 kept within
/// ±1–8 %, the other two read ±18 % and ±51 %, and a fresh clone's run (issue 41) ±30 % and
/// ±36 %. Past ±10 % the host's noise alone is larger than many gaps between neighbouring
/// frameworks in a column.
pub(crate) const NOISY_SPREAD_PCT: f64 = 10.0;

/// Who leads one column on one figure.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum Lead {
    /// No framework has the figure.
    #[default]
    None,
    /// The best framework, its interval clear of every other framework's: marked `*`.
    Clear(&'static str),
    /// No single best: the best figure's framework, then every other whose interval overlaps
    /// its interval, in the order of their figures: each marked `=`.
    Tied(Vec<&'static str>),
}

impl Lead {
    /// The mark beside `name`'s figure: `*` for the clear best, `=` for a tied leader.
    pub(crate) fn mark(&self, name: &str) -> Option<&'static str> {
        match self {
            Lead::Clear(n) if *n == name => Some("*"),
            Lead::Tied(names) if names.contains(&name) => Some("="),
            _ => None,
        }
    }
}

/// A floor cell whose batches spread past [`NOISY_SPREAD_PCT`]: the widest one.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Noisy {
    /// The floor (`null`, `null-hyper010`).
    pub(crate) floor: &'static str,
    /// The scenario of its widest cell.
    pub(crate) scenario: &'static str,
    /// That cell's farthest batch from its median, in percent of it.
    pub(crate) spread_pct: f64,
}

/// One framework's figure in a column, the interval it is compared by (`lo`, `hi`; infinite
/// when it has none), and whether it may lead: a rate whose server was not saturated is not
/// the server's own; measured above the leader's, it stops the leader being the clear best,
/// but never leads itself.
struct Candidate {
    name: &'static str,
    figure: f64,
    interval: (f64, f64),
    may_lead: bool,
}

/// The lead among `candidates`: the best figure of those that may lead (the lowest when
/// `lowest`, else the highest), clear when every other candidate's interval lies wholly on the
/// worse side of its interval; otherwise tied with those whose interval does not.
fn lead(mut candidates: Vec<Candidate>, lowest: bool) -> Lead {
    candidates.sort_by(|a, b| {
        if lowest {
            a.figure.total_cmp(&b.figure)
        } else {
            b.figure.total_cmp(&a.figure)
        }
    });
    let Some(at) = candidates.iter().position(|c| c.may_lead) else {
        return Lead::None;
    };
    let best = &candidates[at];
    let tied: Vec<&'static str> = candidates
        .iter()
        .enumerate()
        .filter(|&(i, c)| i != at && !worse(best.interval, c.interval, lowest))
        .map(|(_, c)| c.name)
        .collect();
    if tied.is_empty() {
        Lead::Clear(best.name)
    } else {
        Lead::Tied(std::iter::once(best.name).chain(tied).collect())
    }
}

/// Whether `other` lies wholly on the worse side of `best` (above it when `lowest` is best,
/// else below it); an interval with a NaN end never does.
fn worse((best_lo, best_hi): (f64, f64), (other_lo, other_hi): (f64, f64), lowest: bool) -> bool {
    if lowest {
        other_lo > best_hi
    } else {
        other_hi < best_lo
    }
}

impl Run {
    /// The frameworks of the run (floors and the reference are not).
    fn frameworks(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.names().filter(|n| Kind::of(n) == Kind::Framework)
    }

    /// Scenario `k`'s fastest in-process framework: the lowest median, each compared by its
    /// median ± the farther end of its rounds' 95 % interval (the long table's `±`).
    pub(crate) fn fastest(&self, k: usize) -> Lead {
        let candidates = self
            .frameworks()
            .filter_map(|name| match self.in_process(name, k) {
                Some(Cell::Time(t)) => {
                    let us = t.median.as_secs_f64() * 1e6;
                    let off = us * t.spread_pct / 100.0;
                    Some(Candidate {
                        name,
                        figure: us,
                        interval: (us - off, us + off),
                        may_lead: true,
                    })
                }
                _ => None,
            })
            .collect();
        lead(candidates, true)
    }

    /// Scenario `k`'s busiest framework among those whose server was saturated: the highest
    /// rate (its best pass), each compared by its ratio to the reference over the passes (the
    /// long table's `of raw` interval, paired pass by pass), or by no interval at all when it
    /// has none (too few passes, no reference). Two cells whose ratios' intervals are apart
    /// are apart in every pass, so their best passes rank the same way. A cell whose server
    /// was not saturated never leads (its rate is not the server's own), but one whose
    /// interval reaches the leader's stops it from being the clear best: the leader did not
    /// serve the most requests of the column, as measured.
    pub(crate) fn busiest(&self, k: usize) -> Lead {
        let scenario = QUICK_SCENARIOS[k].name;
        let candidates = self
            .frameworks()
            .filter_map(|name| {
                let (rps, own) = self.rate(name, scenario)?;
                let (lo, hi) = self.reference_interval(name, scenario);
                Some(Candidate {
                    name,
                    figure: rps,
                    interval: (lo, hi),
                    may_lead: own,
                })
            })
            .collect();
        lead(candidates, false)
    }

    /// The floors' widest in-process cell when its batches spread past [`NOISY_SPREAD_PCT`]:
    /// the host was noisy while the floors were timed, and so, likely, while the others were.
    pub(crate) fn noisy_floor(&self) -> Option<Noisy> {
        self.names()
            .filter(|n| Kind::of(n) == Kind::Floor)
            .flat_map(|floor| {
                QUICK_SCENARIOS
                    .iter()
                    .enumerate()
                    .filter_map(move |(k, s)| match self.in_process(floor, k) {
                        Some(Cell::Time(t)) => Some(Noisy {
                            floor,
                            scenario: s.name,
                            spread_pct: t.spread_pct,
                        }),
                        _ => None,
                    })
            })
            .max_by(|a, b| a.spread_pct.total_cmp(&b.spread_pct))
            .filter(|n| n.spread_pct > NOISY_SPREAD_PCT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(name: &'static str, figure: f64, lo: f64, hi: f64) -> Candidate {
        Candidate {
            name,
            figure,
            interval: (lo, hi),
            may_lead: true,
        }
    }

    #[test]
    fn the_best_is_clear_only_of_every_other_interval() {
        let clear = lead(
            vec![candidate("b", 2.0, 1.9, 2.1), candidate("a", 1.0, 0.9, 1.1)],
            true,
        );
        assert_eq!(clear, Lead::Clear("a"));
        // The runner-up is clear of the best, the third's wide interval is not.
        let tied = lead(
            vec![
                candidate("a", 1.0, 0.9, 1.1),
                candidate("b", 2.0, 1.9, 2.1),
                candidate("c", 3.0, 1.0, 5.0),
            ],
            true,
        );
        assert_eq!(tied, Lead::Tied(vec!["a", "c"]));
        assert_eq!(tied.mark("c"), Some("="));
        assert_eq!(tied.mark("b"), None);
        let unbounded = lead(
            vec![
                candidate("a", 100.0, f64::NEG_INFINITY, f64::INFINITY),
                candidate("b", 50.0, 0.1, 0.2),
            ],
            false,
        );
        assert_eq!(unbounded, Lead::Tied(vec!["a", "b"]));
        assert_eq!(lead(Vec::new(), false), Lead::None);
        // A rate that is not its server's own never leads; above the leader's interval, or
        // overlapping it, it ties the leader; wholly below it, not.
        let unsaturated = |figure, lo, hi| Candidate {
            may_lead: false,
            ..candidate("u", figure, lo, hi)
        };
        let leader = || candidate("a", 100.0, 0.45, 0.55);
        assert_eq!(
            lead(vec![leader(), unsaturated(150.0, 0.7, 0.8)], false),
            Lead::Tied(vec!["a", "u"])
        );
        assert_eq!(
            lead(vec![leader(), unsaturated(90.0, 0.3, 0.5)], false),
            Lead::Tied(vec!["a", "u"])
        );
        assert_eq!(
            lead(vec![leader(), unsaturated(60.0, 0.2, 0.4)], false),
            Lead::Clear("a")
        );
        assert_eq!(lead(vec![unsaturated(150.0, 0.7, 0.8)], false), Lead::None);
    }
}
